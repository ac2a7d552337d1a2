//! The stated rule for texts longer than the model's window: split into consecutive windows,
//! never cut.
//!
//! A text's tokens are split into runs that fit the window beside the lead (`[CLS]` and the
//! model's prefix, if any) and the closing `[SEP]`; each run is wrapped in them and embedded on
//! its own. The text's vector is the mean of its windows' pooled vectors weighted by their token
//! counts (for mean pooling, the mean over every token of the text, each window attending only
//! to itself), normalised to unit length when the model's vectors are.

/// One model input: a window of one text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Window {
    /// Which text (its position in the request).
    pub text: usize,
    /// Token ids, the lead and `[SEP]` included.
    pub ids: Vec<u32>,
}

/// The windows of `texts` (token ids without special tokens), in text order: each opens with
/// `lead` (the start token, then any prefix) and closes with `sep`.
pub(crate) fn split(texts: &[Vec<u32>], lead: &[u32], sep: u32, max_tokens: usize) -> Vec<Window> {
    let width = max_tokens.saturating_sub(lead.len() + 1).max(1);
    let wrap = |run: &[u32]| {
        let mut ids = Vec::with_capacity(lead.len() + run.len() + 1);
        ids.extend_from_slice(lead);
        ids.extend_from_slice(run);
        ids.push(sep);
        ids
    };
    let mut windows = Vec::with_capacity(texts.len());
    for (text, pieces) in texts.iter().enumerate() {
        if pieces.is_empty() {
            windows.push(Window {
                text,
                ids: wrap(&[]),
            });
            continue;
        }
        for run in pieces.chunks(width) {
            windows.push(Window {
                text,
                ids: wrap(run),
            });
        }
    }
    windows
}

/// One vector per text from its windows' pooled vectors (`pooled[i]` belongs to
/// `windows[i]`), scaled to unit length when `normalize`.
pub(crate) fn combine(
    texts: usize,
    windows: &[Window],
    pooled: &[Vec<f32>],
    normalize: bool,
) -> Vec<Vec<f32>> {
    let dimensions = pooled.first().map_or(0, Vec::len);
    let mut sums = vec![vec![0.0_f32; dimensions]; texts];
    let mut weights = vec![0.0_f32; texts];
    for (window, vector) in windows.iter().zip(pooled) {
        let weight = window.ids.len() as f32;
        weights[window.text] += weight;
        for (sum, value) in sums[window.text].iter_mut().zip(vector) {
            *sum += weight * value;
        }
    }
    for (sum, weight) in sums.iter_mut().zip(weights) {
        let scale = if normalize {
            sum.iter().map(|x| x * x).sum::<f32>().sqrt()
        } else {
            weight
        };
        let scale = scale.max(1e-12);
        sum.iter_mut().for_each(|x| *x /= scale);
    }
    sums
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_short_text_is_one_window_and_a_long_one_is_split_without_loss() {
        let texts = vec![vec![5, 6], (10..17).collect(), vec![]];
        let windows = split(&texts, &[1], 2, 5);
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
    fn every_window_carries_the_prefix_and_still_fits() {
        let windows = split(&[(10..15).collect()], &[1, 7, 8], 2, 6);
        let ids: Vec<Vec<u32>> = windows.into_iter().map(|w| w.ids).collect();
        assert_eq!(
            ids,
            vec![
                vec![1, 7, 8, 10, 11, 2],
                vec![1, 7, 8, 12, 13, 2],
                vec![1, 7, 8, 14, 2],
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
        let vectors = combine(2, &windows, &means, true);
        // 3 * (1, 0) + 1 * (0, 3) = (3, 3): the diagonal.
        let half = 0.5_f32.sqrt();
        assert!((vectors[0][0] - half).abs() < 1e-6 && (vectors[0][1] - half).abs() < 1e-6);
        assert_eq!(vectors[1], vec![0.0, -1.0]);
        // Without normalisation: the weighted mean, (3, 3) / 4.
        let raw = combine(2, &windows, &means, false);
        assert_eq!(raw[0], vec![0.75, 0.75]);
        assert_eq!(raw[1], vec![0.0, -2.0]);
    }
}
