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

    /// A uniform value in `[0, 1)`.
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// Zipf-like pick in `0..n`: small indexes are much more frequent.
    pub fn zipf(&mut self, n: usize) -> usize {
        ((n as f64).powf(self.unit()) - 1.0) as usize % n
    }
}

/// `n` vectors of `dims` dimensions near a random 24-dimension subspace (the same subspace
/// for every call), plus a little noise: like real embeddings, they have far fewer degrees of
/// freedom than coordinates, so nearest neighbours are well separated (uniform or tightly
/// clustered random vectors are all nearly equidistant, and "the true top 10" is then a coin
/// toss for any index).
///
/// ```
/// use memory_testkit::corpus::{Rng, embedding_like_vectors};
/// let vectors = embedding_like_vectors(3, 16, &mut Rng::new(5));
/// assert_eq!((vectors.len(), vectors[0].len()), (3, 16));
/// assert_eq!(vectors, embedding_like_vectors(3, 16, &mut Rng::new(5)));
/// ```
pub fn embedding_like_vectors(n: usize, dims: usize, rng: &mut Rng) -> Vec<Vec<f32>> {
    let latent = 24;
    let mut basis_rng = Rng::new(1234);
    let basis: Vec<Vec<f32>> = (0..latent)
        .map(|_| (0..dims).map(|_| basis_rng.unit() as f32 - 0.5).collect())
        .collect();
    (0..n)
        .map(|_| {
            let z: Vec<f32> = (0..latent).map(|_| rng.unit() as f32 - 0.5).collect();
            (0..dims)
                .map(|d| {
                    let signal: f32 = (0..latent).map(|l| z[l] * basis[l][d]).sum();
                    signal + 0.02 * (rng.unit() as f32 - 0.5)
                })
                .collect()
        })
        .collect()
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
