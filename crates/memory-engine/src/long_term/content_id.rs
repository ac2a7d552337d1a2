use sha2::{Digest, Sha256};

/// The content address of a raw message: SHA-256 over a length-prefixed encoding of session
/// id, role and content (so no two different triples encode alike), truncated to 128 bits,
/// lowercase hex.
///
/// ```
/// use memory_engine::long_term::content_id;
/// let a = content_id("s1", "user", "hello");
/// assert_eq!(a.len(), 32);
/// assert_eq!(a, content_id("s1", "user", "hello"));
/// assert_ne!(content_id("s1", "user", "hello"), content_id("s1u", "ser", "hello"));
/// ```
pub fn content_id(session_id: &str, role: &str, content: &str) -> String {
    let mut hasher = Sha256::new();
    for field in [session_id, role, content] {
        hasher.update((field.len() as u64).to_be_bytes());
        hasher.update(field.as_bytes());
    }
    let digest = hasher.finalize();
    digest[..16].iter().map(|b| format!("{b:02x}")).collect()
}
