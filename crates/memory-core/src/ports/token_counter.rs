/// Counts tokens the way a model's tokenizer would (or estimates them).
///
/// # Contract
/// - Pure and deterministic for a given text; `count("")` is 0.
pub trait TokenCounter: Send + Sync {
    /// Tokens in `text`.
    fn count(&self, text: &str) -> usize;
}
