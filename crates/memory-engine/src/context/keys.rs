//! Keys of keyed entries (skills, searchable entries), as the reference derives them.

/// Lowercased first 60 characters with runs outside `[a-z0-9]` replaced by `-`, trimmed.
///
/// ```
/// use memory_engine::context::slugify;
/// assert_eq!(slugify("Pirate style!"), "pirate-style");
/// assert_eq!(slugify("日本語"), "");
/// ```
pub fn slugify(text: &str) -> String {
    let lowered: String = text.chars().take(60).collect::<String>().to_lowercase();
    let mut out = String::with_capacity(lowered.len());
    let mut dash = false;
    for c in lowered.chars() {
        if c.is_ascii_lowercase() || c.is_ascii_digit() {
            if dash && !out.is_empty() {
                out.push('-');
            }
            dash = false;
            out.push(c);
        } else {
            dash = true;
        }
    }
    out
}

/// 32-bit FNV-1a over UTF-16 code units, in base 36 (the reference's stable hash).
///
/// ```
/// use memory_engine::context::fnv1a_base36;
/// assert_eq!(fnv1a_base36(""), "ztntfp"); // 0x811c9dc5, the FNV offset basis
/// ```
pub fn fnv1a_base36(text: &str) -> String {
    let mut hash: u32 = 0x811c_9dc5;
    for unit in text.encode_utf16() {
        hash ^= u32::from(unit);
        hash = hash.wrapping_mul(0x0100_0193);
    }
    base36(hash)
}

fn base36(mut n: u32) -> String {
    const DIGITS: &[u8; 36] = b"0123456789abcdefghijklmnopqrstuvwxyz";
    if n == 0 {
        return "0".into();
    }
    let mut out = Vec::new();
    while n > 0 {
        out.push(DIGITS[(n % 36) as usize]);
        n /= 36;
    }
    out.reverse();
    String::from_utf8(out).unwrap_or_default()
}

/// The key of a keyed entry: the slug of a non-blank title (or `entry-<hash(title)>` when the
/// slug is empty); without a title, `<slug(content) or "entry">-<hash(content)>`.
///
/// ```
/// use memory_engine::context::entry_key;
/// assert_eq!(entry_key(Some("Pirate style"), "Arr"), "pirate-style");
/// assert!(entry_key(Some("日本語"), "x").starts_with("entry-"));
/// assert!(entry_key(None, "just content").starts_with("just-content-"));
/// ```
pub fn entry_key(title: Option<&str>, content: &str) -> String {
    match title.map(str::trim).filter(|t| !t.is_empty()) {
        Some(title) => {
            let slug = slugify(title);
            if slug.is_empty() {
                format!("entry-{}", fnv1a_base36(title))
            } else {
                slug
            }
        }
        None => {
            let slug = slugify(content);
            let slug = if slug.is_empty() {
                "entry".to_owned()
            } else {
                slug
            };
            format!("{slug}-{}", fnv1a_base36(content))
        }
    }
}
