use std::sync::atomic::{AtomicI64, Ordering};

use memory_core::Timestamp;
use memory_core::ports::Clock;

/// A [`Clock`] that only moves when told to.
///
/// ```
/// use memory_core::ports::Clock;
/// use memory_testkit::in_memory::ManualClock;
/// let clock = ManualClock::new(1_000);
/// clock.advance(500);
/// assert_eq!(clock.now().millis(), 1_500);
/// ```
#[derive(Debug, Default)]
pub struct ManualClock {
    millis: AtomicI64,
}

impl ManualClock {
    /// A clock showing `millis`.
    pub fn new(millis: i64) -> Self {
        Self {
            millis: AtomicI64::new(millis),
        }
    }

    /// Moves the clock forward.
    pub fn advance(&self, millis: i64) {
        self.millis.fetch_add(millis, Ordering::SeqCst);
    }

    /// Sets the time.
    pub fn set(&self, millis: i64) {
        self.millis.store(millis, Ordering::SeqCst);
    }
}

impl Clock for ManualClock {
    fn now(&self) -> Timestamp {
        Timestamp(self.millis.load(Ordering::SeqCst))
    }
}
