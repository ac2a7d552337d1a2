//! A token counter that learns each model's real characters-per-token ratio from
//! model-reported usage, so thresholds track the real tokenizer.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use memory_core::ports::TokenCounter;

/// Scales an inner estimate by a per-model correction learned from `add_usage`.
///
/// ```
/// use std::sync::Arc;
/// use memory_core::HeuristicTokenCounter;
/// use memory_core::ports::TokenCounter;
/// use memory_engine::compaction::CalibratingTokenCounter;
/// let counter = CalibratingTokenCounter::new(Arc::new(HeuristicTokenCounter), "m");
/// let text = "a".repeat(400); // the heuristic says 100
/// counter.add_usage("m", 100, 150); // the model reported 150
/// assert_eq!(counter.count(&text), 150);
/// ```
pub struct CalibratingTokenCounter {
    inner: Arc<dyn TokenCounter>,
    model: Mutex<String>,
    ratios: Mutex<HashMap<String, f64>>,
}

impl CalibratingTokenCounter {
    /// Starts uncalibrated (ratio 1) for `model`.
    pub fn new(inner: Arc<dyn TokenCounter>, model: impl Into<String>) -> Self {
        Self {
            inner,
            model: Mutex::new(model.into()),
            ratios: Mutex::new(HashMap::new()),
        }
    }

    /// Records that text estimated at `estimated` tokens cost `actual` tokens on `model`.
    /// The first observation sets the ratio; later ones move it by an exponential average
    /// (weight 0.3), so one odd call does not swing thresholds.
    pub fn add_usage(&self, model: &str, estimated: usize, actual: u64) {
        if estimated == 0 || actual == 0 {
            return;
        }
        let observed = actual as f64 / estimated as f64;
        let mut ratios = self.ratios.lock().unwrap_or_else(|p| p.into_inner());
        let ratio = ratios.entry(model.to_owned()).or_insert(observed);
        *ratio = 0.7 * *ratio + 0.3 * observed;
        *self.model.lock().unwrap_or_else(|p| p.into_inner()) = model.to_owned();
    }

    /// The current correction for `model` (1.0 until calibrated).
    pub fn ratio(&self, model: &str) -> f64 {
        self.ratios
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(model)
            .copied()
            .unwrap_or(1.0)
    }
}

impl TokenCounter for CalibratingTokenCounter {
    fn count(&self, text: &str) -> usize {
        let model = self.model.lock().unwrap_or_else(|p| p.into_inner()).clone();
        (self.inner.count(text) as f64 * self.ratio(&model)).ceil() as usize
    }
}
