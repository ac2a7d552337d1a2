//! Known token counts of the OpenAI encodings.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use memory_core::ports::TokenCounter;
use memory_tiktoken::TiktokenCounter;

#[test]
fn counts_match_the_published_encodings() {
    let o200k = TiktokenCounter::for_model("gpt-4o").unwrap();
    assert_eq!(o200k.encoding(), "o200k_base");
    let cl100k = TiktokenCounter::for_model("gpt-4").unwrap();
    assert_eq!(cl100k.encoding(), "cl100k_base");
    assert_eq!(o200k.count(""), 0);
    assert_eq!(cl100k.count("hello world"), 2);
    assert_eq!(cl100k.count("tiktoken is great!"), 6);
    // Non-Latin text costs more tokens per character than the heuristic's 4 chars/token.
    assert!(o200k.count("日本語のテキストです") >= 3);
    assert!(TiktokenCounter::for_model("definitely-not-a-model").is_err());
}
