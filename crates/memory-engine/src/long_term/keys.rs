//! Topic keys: the one normalisation every writer and reader of a key shares.

/// Normalises a topic key: lowercase words joined by `.` (`"User City"` → `user.city`).
pub fn normalize_key(key: &str) -> String {
    key.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect::<Vec<_>>()
        .join(".")
}
