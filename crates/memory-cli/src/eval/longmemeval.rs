//! The LongMemEval data set (read in place from its path, gzip or plain JSON, never copied):
//! per question a haystack of dated sessions, the question with its date, and the evidence
//! (`answer_session_ids`, turns marked `has_answer`).
//!
//! What the evaluation may see is split from what only scores it: [`Question::haystack`]
//! holds dates, roles and text, never a session id (evidence ids start with `answer_`, which
//! leaks the label) and never `has_answer`; [`Question::evidence`] is for scoring.

use std::io::Read;
use std::path::Path;

use memory_core::{CivilDate, Timestamp};
use serde::Deserialize;

use crate::commands::CliError;

/// One turn of a haystack session.
#[derive(Debug, Clone, PartialEq)]
pub struct Turn {
    /// `user` or `assistant`.
    pub role: String,
    /// What was said.
    pub content: String,
}

/// One haystack session: when it took place and its turns.
#[derive(Debug, Clone, PartialEq)]
pub struct HaystackSession {
    /// The session's date.
    pub at: Timestamp,
    /// Turns in order.
    pub turns: Vec<Turn>,
}

/// The labels a run is scored against (never shown to the system under test).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Evidence {
    /// Positions (in [`Question::haystack`]) of the evidence sessions.
    pub sessions: Vec<usize>,
    /// `(session position, turn position)` of the turns marked `has_answer`.
    pub turns: Vec<(usize, usize)>,
}

/// One question with its haystack.
#[derive(Debug, Clone, PartialEq)]
pub struct Question {
    /// `question_id` (ends in `_abs` for an abstention question).
    pub id: String,
    /// `question_type`, for example `temporal-reasoning`.
    pub kind: String,
    /// The question.
    pub text: String,
    /// When it is asked.
    pub asked_at: Timestamp,
    /// The sessions, in the data set's order.
    pub haystack: Vec<HaystackSession>,
    /// What scores the answer.
    pub evidence: Evidence,
    /// The gold answer (for an abstention question, why it cannot be answered; for a
    /// preference question, a rubric).
    pub answer: String,
}

impl Question {
    /// True for an abstention question (evidence sessions but no answerable fact).
    pub fn is_abstention(&self) -> bool {
        self.id.ends_with("_abs")
    }
}

#[derive(Deserialize)]
struct RawQuestion {
    question_id: String,
    question_type: String,
    question: String,
    question_date: String,
    #[serde(default)]
    answer: serde_json::Value,
    answer_session_ids: Vec<String>,
    haystack_dates: Vec<String>,
    haystack_session_ids: Vec<String>,
    haystack_sessions: Vec<Vec<RawTurn>>,
}

#[derive(Deserialize)]
struct RawTurn {
    role: String,
    content: String,
    #[serde(default)]
    has_answer: Option<bool>,
}

fn bad(message: impl Into<String>) -> CliError {
    CliError::Input(format!("longmemeval: {}", message.into()))
}

/// Parses `"2023/03/27 (Mon) 23:35"` as that minute in UTC.
pub fn parse_date(text: &str) -> Option<Timestamp> {
    let mut parts = text.split_whitespace();
    let date = parts.next()?;
    let mut clock = parts.next()?;
    if clock.starts_with('(') {
        clock = parts.next()?;
    }
    let mut ymd = date.split('/');
    let year: i32 = ymd.next()?.parse().ok()?;
    let month: u32 = ymd.next()?.parse().ok()?;
    let day: u32 = ymd.next()?.parse().ok()?;
    let (h, m) = clock.split_once(':')?;
    let (h, m): (i64, i64) = (h.parse().ok()?, m.parse().ok()?);
    if !(1..=12).contains(&month) || !(1..=31).contains(&day) || h > 23 || m > 59 {
        return None;
    }
    let midnight = CivilDate { year, month, day }.to_timestamp();
    Some(Timestamp(midnight.0 + (h * 60 + m) * 60_000))
}

/// Loads every question of `path` (`.json.gz` or `.json`).
pub fn load(path: &Path) -> Result<Vec<Question>, CliError> {
    let file = std::fs::File::open(path)
        .map_err(|e| CliError::io(format!("reading {}", path.display()), e))?;
    let mut text = String::new();
    let read = if path.extension().is_some_and(|e| e == "gz") {
        flate2::read::GzDecoder::new(file).read_to_string(&mut text)
    } else {
        std::io::BufReader::new(file).read_to_string(&mut text)
    };
    read.map_err(|e| CliError::io(format!("reading {}", path.display()), e))?;
    let raw: Vec<RawQuestion> = serde_json::from_str(&text).map_err(|e| bad(e.to_string()))?;
    raw.into_iter().map(question).collect()
}

fn question(raw: RawQuestion) -> Result<Question, CliError> {
    let id = raw.question_id;
    let sessions = raw.haystack_sessions.len();
    if raw.haystack_dates.len() != sessions || raw.haystack_session_ids.len() != sessions {
        return Err(bad(format!(
            "{id}: {sessions} sessions but {} dates and {} ids",
            raw.haystack_dates.len(),
            raw.haystack_session_ids.len()
        )));
    }
    let asked_at = parse_date(&raw.question_date).ok_or_else(|| {
        bad(format!(
            "{id}: unreadable question_date {:?}",
            raw.question_date
        ))
    })?;
    let mut evidence = Evidence::default();
    let mut haystack = Vec::with_capacity(sessions);
    for (position, (turns, date)) in raw
        .haystack_sessions
        .into_iter()
        .zip(&raw.haystack_dates)
        .enumerate()
    {
        let at = parse_date(date)
            .ok_or_else(|| bad(format!("{id}: unreadable haystack date {date:?}")))?;
        if raw
            .answer_session_ids
            .contains(&raw.haystack_session_ids[position])
        {
            evidence.sessions.push(position);
        }
        let turns = turns
            .into_iter()
            .enumerate()
            .map(|(turn, t)| {
                if t.has_answer == Some(true) {
                    evidence.turns.push((position, turn));
                }
                Turn {
                    role: t.role,
                    content: t.content,
                }
            })
            .collect();
        haystack.push(HaystackSession { at, turns });
    }
    Ok(Question {
        id,
        kind: raw.question_type,
        text: raw.question,
        asked_at,
        haystack,
        evidence,
        answer: super::locomo::answer_text(&raw.answer),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_parse_to_utc_minutes() {
        let t = parse_date("2023/03/27 (Mon) 23:35").unwrap();
        assert_eq!(t.date().to_string(), "2023-03-27");
        assert_eq!((t.0 / 60_000) % (24 * 60), 23 * 60 + 35);
        assert_eq!(
            parse_date("2023/03/27 00:00").unwrap().0,
            t.0 - (23 * 60 + 35) * 60_000
        );
        assert!(parse_date("2023/13/01 (Mon) 10:00").is_none());
        assert!(parse_date("yesterday").is_none());
    }

    #[test]
    fn evidence_is_kept_apart_from_the_haystack() {
        let raw = serde_json::json!([{
            "question_id": "q1_abs", "question_type": "multi-session", "question": "Where?",
            "question_date": "2023/05/02 (Tue) 10:00", "answer": "Paris",
            "answer_session_ids": ["answer_x_1"],
            "haystack_dates": ["2023/05/01 (Mon) 09:00", "2023/05/01 (Mon) 12:00"],
            "haystack_session_ids": ["s_other", "answer_x_1"],
            "haystack_sessions": [
                [{"role": "user", "content": "hello"}],
                [{"role": "user", "content": "I moved", "has_answer": false},
                 {"role": "assistant", "content": "to Paris", "has_answer": true}]
            ]
        }]);
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("q.json");
        std::fs::write(&path, raw.to_string()).unwrap();
        let questions = load(&path).unwrap();
        let q = &questions[0];
        assert!(q.is_abstention());
        assert_eq!(q.evidence.sessions, vec![1]);
        assert_eq!(q.evidence.turns, vec![(1, 1)]);
        assert_eq!(q.haystack[1].turns[1].content, "to Paris");
        assert!(q.haystack[0].at < q.haystack[1].at && q.haystack[1].at < q.asked_at);

        let gz = dir.path().join("q.json.gz");
        let mut encoder =
            flate2::write::GzEncoder::new(std::fs::File::create(&gz).unwrap(), Default::default());
        std::io::Write::write_all(&mut encoder, raw.to_string().as_bytes()).unwrap();
        encoder.finish().unwrap();
        assert_eq!(load(&gz).unwrap(), questions);

        std::fs::write(&path, "[{\"question_id\": 1}]").unwrap();
        assert!(matches!(load(&path), Err(CliError::Input(_))));
    }
}
