//! Retrieval metrics over ranked ids against a gold set (binary relevance).

use std::collections::HashSet;

/// Scores of one question.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct QuestionScores {
    /// |gold ∩ top-5| / |gold|.
    pub recall_at_5: f64,
    /// |gold ∩ top-10| / |gold|.
    pub recall_at_10: f64,
    /// 1 when every gold id is in the top 10.
    pub recall_all_at_10: f64,
    /// nDCG@10 with binary gains.
    pub ndcg_at_10: f64,
}

/// Scores a ranking (best first, duplicates already removed) against `gold`.
pub fn score(ranked: &[String], gold: &HashSet<String>) -> QuestionScores {
    if gold.is_empty() {
        return QuestionScores::default();
    }
    let hits_in = |k: usize| {
        ranked
            .iter()
            .take(k)
            .filter(|id| gold.contains(*id))
            .count()
    };
    let n = gold.len() as f64;
    let dcg: f64 = ranked
        .iter()
        .take(10)
        .enumerate()
        .filter(|(_, id)| gold.contains(*id))
        .map(|(i, _)| 1.0 / ((i + 2) as f64).log2())
        .sum();
    let ideal: f64 = (0..gold.len().min(10))
        .map(|i| 1.0 / ((i + 2) as f64).log2())
        .sum();
    QuestionScores {
        recall_at_5: hits_in(5) as f64 / n,
        recall_at_10: hits_in(10) as f64 / n,
        recall_all_at_10: if hits_in(10) == gold.len() { 1.0 } else { 0.0 },
        ndcg_at_10: if ideal > 0.0 { dcg / ideal } else { 0.0 },
    }
}

/// Session-level scores of one question (LongMemEval's retrieval metrics, binary relevance).
#[derive(Debug, Clone, Copy, PartialEq, Default, serde::Serialize, serde::Deserialize)]
pub struct SessionScores {
    /// 1 when any gold id is in the top 5.
    pub recall_any_at_5: f64,
    /// 1 when any gold id is in the top 10.
    pub recall_any_at_10: f64,
    /// 1 when every gold id is in the top 5.
    pub recall_all_at_5: f64,
    /// 1 when every gold id is in the top 10.
    pub recall_all_at_10: f64,
    /// nDCG@10.
    pub ndcg_at_10: f64,
}

/// Scores a ranking of sessions (best first, duplicates removed) against `gold`.
pub fn score_sessions(ranked: &[String], gold: &HashSet<String>) -> SessionScores {
    let found = |k: usize| {
        ranked
            .iter()
            .take(k)
            .filter(|id| gold.contains(*id))
            .count()
    };
    let flag = |b: bool| if b { 1.0 } else { 0.0 };
    let all = |k: usize| flag(!gold.is_empty() && found(k) == gold.len());
    SessionScores {
        recall_any_at_5: flag(found(5) > 0),
        recall_any_at_10: flag(found(10) > 0),
        recall_all_at_5: all(5),
        recall_all_at_10: all(10),
        ndcg_at_10: score(ranked, gold).ndcg_at_10,
    }
}

/// Macro averages of a group of questions.
#[derive(Debug, Clone, Copy, PartialEq, Default, serde::Serialize)]
pub struct GroupScores {
    /// Questions.
    pub n: usize,
    /// Mean recall@5.
    pub recall_at_5: f64,
    /// Mean recall@10.
    pub recall_at_10: f64,
    /// Mean recall_all@10.
    pub recall_all_at_10: f64,
    /// Mean nDCG@10.
    pub ndcg_at_10: f64,
}

/// The mean of `scores`.
pub fn average(scores: &[QuestionScores]) -> GroupScores {
    let n = scores.len();
    if n == 0 {
        return GroupScores::default();
    }
    let mean = |f: fn(&QuestionScores) -> f64| scores.iter().map(f).sum::<f64>() / n as f64;
    GroupScores {
        n,
        recall_at_5: mean(|s| s.recall_at_5),
        recall_at_10: mean(|s| s.recall_at_10),
        recall_all_at_10: mean(|s| s.recall_all_at_10),
        ndcg_at_10: mean(|s| s.ndcg_at_10),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ids(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn perfect_and_partial_rankings() {
        let gold: HashSet<String> = ids(&["a", "b"]).into_iter().collect();
        let perfect = score(&ids(&["a", "b", "c"]), &gold);
        assert_eq!(perfect.recall_at_5, 1.0);
        assert_eq!(perfect.recall_all_at_10, 1.0);
        assert!((perfect.ndcg_at_10 - 1.0).abs() < 1e-12);
        let late = score(&ids(&["x", "y", "z", "w", "v", "a"]), &gold);
        assert_eq!(late.recall_at_5, 0.0);
        assert_eq!(late.recall_at_10, 0.5);
        assert_eq!(late.recall_all_at_10, 0.0);
        let expected = (1.0 / 7f64.log2()) / (1.0 + 1.0 / 3f64.log2());
        assert!((late.ndcg_at_10 - expected).abs() < 1e-12);
        let sessions = score_sessions(&ids(&["x", "a", "y", "z", "w", "b"]), &gold);
        assert_eq!(
            (sessions.recall_any_at_5, sessions.recall_all_at_5),
            (1.0, 0.0)
        );
        assert_eq!(
            (sessions.recall_any_at_10, sessions.recall_all_at_10),
            (1.0, 1.0)
        );
        let none = score_sessions(&ids(&["x"]), &gold);
        assert_eq!((none.recall_any_at_10, none.ndcg_at_10), (0.0, 0.0));
        let mean = average(&[perfect, late]);
        assert_eq!(mean.n, 2);
        assert!((mean.recall_at_10 - 0.75).abs() < 1e-12);
    }
}
