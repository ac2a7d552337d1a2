//! The stated rule for texts longer than the model's window: split into consecutive windows,
//! never cut.
//!
//! A text's word pieces are split into runs of at most `max_tokens - 2` pieces; each run is
//! wrapped in `[CLS] … [SEP]` and embedded on its own. The text's vector is the mean of its
//! windows' mean-pooled vectors weighted by their token counts (which is mean pooling over every
//! token of the text, each window attending only to itself), normalised to unit length.

/// One model input: a window of one text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Window {
    /// Which text (its position in the request).
    pub text: usize,
    /// Token ids, `[CLS]` and `[SEP]` included.
    pub ids: Vec<u32>,
}

/// The windows of `texts` (word-piece ids without special tokens), in text order.
pub(crate) fn split(texts: &[Vec<u32>], cls: u32, sep: u32, max_tokens: usize) -> Vec<Window> {
    let width = max_tokens.saturating_sub(2).max(1);
    let mut windows = Vec::with_capacity(texts.len());
    for (text, pieces) in texts.iter().enumerate() {
        if pieces.is_empty() {
            windows.push(Window {
                text,
                ids: vec![cls, sep],
            });
            continue;
        }
        for run in pieces.chunks(width) {
            let mut ids = Vec::with_capacity(run.len() + 2);
            ids.push(cls);
            ids.extend_from_slice(run);
            ids.push(sep);
            windows.push(Window { text, ids });
        }
    }
    windows
}

/// One unit vector per text from its windows' mean-pooled vectors (`means[i]` belongs to
/// `windows[i]`).
pub(crate) fn combine(texts: usize, windows: &[Window], means: &[Vec<f32>]) -> Vec<Vec<f32>> {
    let dimensions = means.first().map_or(0, Vec::len);
    let mut sums = vec![vec![0.0_f32; dimensions]; texts];
    for (window, mean) in windows.iter().zip(means) {
        let weight = window.ids.len() as f32;
        for (sum, value) in sums[window.text].iter_mut().zip(mean) {
            *sum += weight * value;
        }
    }
    for sum in &mut sums {
        let norm = sum.iter().map(|x| x * x).sum::<f32>().sqrt().max(1e-12);
        sum.iter_mut().for_each(|x| *x /= norm);
    }
    sums
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_short_text_is_one_window_and_a_long_one_is_split_without_loss() {
        let texts = vec![vec![5, 6], (10..17).collect(), vec![]];
        let windows = split(&texts, 1, 2, 5);
        let ids: Vec<(usize, Vec<u32>)> = windows.into_iter().map(|w| (w.text, w.ids)).collect();
        assert_eq!(
            ids,
            vec![
                (0, vec![1, 5, 6, 2]),
                (1, vec![1, 10, 11, 12, 2]),
                (1, vec![1, 13, 14, 15, 2]),
                (1, vec![1, 16, 2]),
                (2, vec![1, 2]),
            ]
        );
    }

    #[test]
    fn windows_are_weighted_by_their_tokens_and_the_result_is_unit_length() {
        let windows = vec![
            Window {
                text: 0,
                ids: vec![0; 3],
            },
            Window {
                text: 0,
                ids: vec![0; 1],
            },
            Window {
                text: 1,
                ids: vec![0; 2],
            },
        ];
        let means = vec![vec![1.0, 0.0], vec![0.0, 3.0], vec![0.0, -2.0]];
        let vectors = combine(2, &windows, &means);
        // 3 * (1, 0) + 1 * (0, 3) = (3, 3): the diagonal.
        let half = 0.5_f32.sqrt();
        assert!((vectors[0][0] - half).abs() < 1e-6 && (vectors[0][1] - half).abs() < 1e-6);
        assert_eq!(vectors[1], vec![0.0, -1.0]);
    }
}
