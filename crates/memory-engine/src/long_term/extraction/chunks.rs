//! Where the extraction passes look: chunks of about N characters that repeat the last
//! messages of the previous chunk, and small overlapping windows for the detail pass.

use std::ops::Range;

/// Line ranges of about `target_chars` each (a long line is a chunk of its own), each
/// starting `overlap` lines before the previous one ended.
///
/// ```
/// use memory_engine::long_term::chunk_lines;
/// let chunks = chunk_lines(&[40, 40, 40, 40, 40], 100, 1);
/// assert_eq!(chunks, vec![0..2, 1..3, 2..4, 3..5]);
/// ```
pub fn chunk_lines(line_chars: &[usize], target_chars: usize, overlap: usize) -> Vec<Range<usize>> {
    let n = line_chars.len();
    let mut chunks = Vec::new();
    let mut start = 0;
    while start < n {
        let mut end = start;
        let mut size = 0;
        while end < n && (end == start || size + line_chars[end] <= target_chars) {
            size += line_chars[end];
            end += 1;
        }
        chunks.push(start..end);
        if end >= n {
            break;
        }
        start = end.saturating_sub(overlap).max(start + 1);
    }
    chunks
}

/// Windows of `window` lines stepping by `window - overlap` (at least 1) that cover `n` lines.
///
/// ```
/// use memory_engine::long_term::detail_windows;
/// assert_eq!(detail_windows(10, 4, 2), vec![0..4, 2..6, 4..8, 6..10]);
/// assert_eq!(detail_windows(3, 8, 2), vec![0..3]);
/// ```
pub fn detail_windows(n: usize, window: usize, overlap: usize) -> Vec<Range<usize>> {
    let window = window.max(1);
    let step = window.saturating_sub(overlap).max(1);
    let mut out = Vec::new();
    let mut start = 0;
    loop {
        let end = (start + window).min(n);
        out.push(start..end);
        if end >= n {
            break;
        }
        start += step;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunks_cover_every_line_and_overlap_by_two_messages() {
        let lines = vec![3_000; 12];
        let chunks = chunk_lines(&lines, 10_000, 2);
        assert_eq!(chunks[0], 0..3);
        assert_eq!(
            chunks[1].start, 1,
            "the next chunk repeats the last two messages"
        );
        for pair in chunks.windows(2) {
            assert_eq!(pair[0].end - pair[1].start, 2);
        }
        assert_eq!(chunks.last().unwrap().end, 12);
    }

    #[test]
    fn an_oversized_line_still_progresses() {
        assert_eq!(chunk_lines(&[50_000, 10, 10], 10_000, 2), vec![0..1, 1..3]);
        assert_eq!(chunk_lines(&[], 10_000, 2), Vec::<Range<usize>>::new());
        assert_eq!(chunk_lines(&[5, 5], 10_000, 2), vec![0..2]);
    }
}
