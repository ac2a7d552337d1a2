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
    address(session_id, role, content, None)
}

/// SHA-256 over the length-prefixed fields (and the occurrence, when there is one),
/// truncated to 128 bits, lowercase hex.
fn address(session_id: &str, role: &str, content: &str, occurrence: Option<u64>) -> String {
    let mut hasher = Sha256::new();
    for field in [session_id, role, content] {
        hasher.update((field.len() as u64).to_be_bytes());
        hasher.update(field.as_bytes());
    }
    if let Some(n) = occurrence {
        hasher.update(n.to_be_bytes());
    }
    let digest = hasher.finalize();
    digest[..16].iter().map(|b| format!("{b:02x}")).collect()
}

/// The address of the `occurrence`-th identical utterance (same session, role and content)
/// of a conversation: the first is [`content_id`] itself, so addresses made before
/// occurrences were counted stay valid; later ones add the number. A user who says "yes"
/// twice keeps both, and ingesting the same conversation again still finds each one.
///
/// ```
/// use memory_engine::long_term::{content_id, occurrence_id};
/// assert_eq!(occurrence_id("s1", "user", "yes", 0), content_id("s1", "user", "yes"));
/// assert_ne!(occurrence_id("s1", "user", "yes", 1), occurrence_id("s1", "user", "yes", 0));
/// ```
pub fn occurrence_id(session_id: &str, role: &str, content: &str, occurrence: u64) -> String {
    address(
        session_id,
        role,
        content,
        (occurrence > 0).then_some(occurrence),
    )
}
