//! Files on disk in tests and benchmarks: scanning for text that must be gone (erasure tests)
//! and measuring size.

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

/// The bytes of the file at `path`, or of every file under the directory at `path` (0 for
/// what cannot be read): what a benchmark reports as size on disk.
pub fn size_on_disk(path: &Path) -> u64 {
    if path.is_file() {
        return path.metadata().map(|m| m.len()).unwrap_or(0);
    }
    std::fs::read_dir(path)
        .map(|entries| entries.flatten().map(|e| size_on_disk(&e.path())).sum())
        .unwrap_or(0)
}
