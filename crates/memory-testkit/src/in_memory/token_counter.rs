use memory_core::ports::TokenCounter;

/// Counts one token per `chars_per_token` characters, rounded up.
#[derive(Debug, Clone, Copy)]
pub struct CharRatioTokenCounter {
    /// Characters per token.
    pub chars_per_token: usize,
}

impl Default for CharRatioTokenCounter {
    fn default() -> Self {
        Self { chars_per_token: 4 }
    }
}

impl TokenCounter for CharRatioTokenCounter {
    fn count(&self, text: &str) -> usize {
        text.chars().count().div_ceil(self.chars_per_token.max(1))
    }
}
