//! Scanning files for text that must be gone (erasure tests).

use std::path::Path;

/// The files under `dir` (recursively) whose bytes contain `needle`, as display paths.
///
/// ```
/// let dir = tempfile::tempdir().unwrap();
/// std::fs::write(dir.path().join("a"), b"xx secret yy").unwrap();
/// assert_eq!(memory_testkit::files::files_containing(dir.path(), b"secret").len(), 1);
/// assert!(memory_testkit::files::files_containing(dir.path(), b"absent").is_empty());
/// ```
pub fn files_containing(dir: &Path, needle: &[u8]) -> Vec<String> {
    let mut found = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return found;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            found.extend(files_containing(&path, needle));
        } else if std::fs::read(&path)
            .is_ok_and(|bytes| bytes.windows(needle.len()).any(|w| w == needle))
        {
            found.push(path.display().to_string());
        }
    }
    found
}
