//! Deterministic synthetic text for benchmarks: a seeded generator, a vocabulary of made-up
//! words drawn Zipf-like (a few very common, most rare), and messages built from it. The
//! same seed gives the same corpus on every machine and in every backend's bench.

use memory_core::{Role, UiMessage};

/// A tiny deterministic PRNG (xorshift64*).
pub struct Rng(u64);

impl Rng {
    /// A generator from a seed.
    pub fn new(seed: u64) -> Self {
        Self(seed.max(1))
    }

    /// The next value.
    pub fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545F4914F6CDD1D)
    }

    /// Zipf-like pick in `0..n`: small indexes are much more frequent.
    pub fn zipf(&mut self, n: usize) -> usize {
        let u = (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64;
        ((n as f64).powf(u) - 1.0) as usize % n
    }
}

/// A vocabulary of `n` pronounceable words ending in a digit (no stemmer changes them).
///
/// ```
/// let words = memory_testkit::corpus::vocabulary(3);
/// assert_eq!(words.len(), 3);
/// assert!(words.iter().all(|w| w.ends_with(|c: char| c.is_ascii_digit())));
/// ```
pub fn vocabulary(n: usize) -> Vec<String> {
    let syllables = [
        "ka", "lo", "mi", "ne", "ru", "sa", "ti", "vo", "pe", "da", "gu", "zo", "ri", "be", "fa",
        "ho",
    ];
    (0..n)
        .map(|i| {
            let mut w = String::new();
            let mut x = i + 17;
            for _ in 0..3 {
                w.push_str(syllables[x % syllables.len()]);
                x /= syllables.len();
            }
            w.push_str(&format!("{}", i % 7));
            w
        })
        .collect()
}

/// A sentence of `words` words drawn Zipf-like from the vocabulary.
pub fn sentence(rng: &mut Rng, vocab: &[String], words: usize) -> String {
    (0..words)
        .map(|_| vocab[rng.zipf(vocab.len())].as_str())
        .collect::<Vec<_>>()
        .join(" ")
}

/// A message of 12 to 35 words (about 200-400 bytes of JSON), user or assistant.
pub fn message(id: String, rng: &mut Rng, vocab: &[String]) -> UiMessage {
    let role = if rng.next_u64().is_multiple_of(2) {
        Role::User
    } else {
        Role::Assistant
    };
    let words = 12 + (rng.next_u64() % 24) as usize;
    UiMessage::text_message(id, role, sentence(rng, vocab, words))
}
