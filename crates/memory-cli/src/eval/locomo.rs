//! The LoCoMo data set (read from its path, never copied): conversations, session dates and
//! questions with their evidence, normalised as `../shared/reference/retrieval-eval.md` says.

use std::collections::{BTreeSet, HashMap};
use std::path::Path;

use memory_core::{CivilDate, Timestamp};
use serde_json::Value;

use crate::commands::CliError;

/// One turn.
#[derive(Debug, Clone, PartialEq)]
pub struct Turn {
    /// `D<session>:<turn>`.
    pub dia_id: String,
    /// Speaker name.
    pub speaker: String,
    /// `"{speaker}: {text}"` plus `" [image: {caption}]"` when present.
    pub text: String,
}

/// One session of a conversation.
#[derive(Debug, Clone, PartialEq)]
pub struct Session {
    /// Session number.
    pub number: u32,
    /// When it took place.
    pub at: Timestamp,
    /// Turns in order.
    pub turns: Vec<Turn>,
}

/// A question with normalised gold evidence.
#[derive(Debug, Clone, PartialEq)]
pub struct Question {
    /// The question text.
    pub text: String,
    /// Category 1-5.
    pub category: u8,
    /// Gold `dia_id`s that exist in the conversation.
    pub gold: BTreeSet<String>,
    /// The gold answer (empty when the data set gives none, as for most of category 5).
    pub answer: String,
}

/// A gold answer as text: the data sets give strings, and sometimes numbers.
pub fn answer_text(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

/// One of the data set's observations: a fact about a speaker its authors extracted from a
/// session, with the turns it comes from.
#[derive(Debug, Clone, PartialEq)]
pub struct Observation {
    /// The statement.
    pub text: String,
    /// Normalised `dia_id`s of the turns it draws on.
    pub dia_ids: Vec<String>,
    /// The session's number.
    pub session: u32,
}

/// One conversation with its questions.
#[derive(Debug, Clone, PartialEq)]
pub struct Sample {
    /// `conv-26`, ...
    pub id: String,
    /// Sessions in order.
    pub sessions: Vec<Session>,
    /// The observations, session by session.
    pub observations: Vec<Observation>,
    /// Questions (those with empty gold after normalisation are dropped).
    pub questions: Vec<Question>,
    /// Questions dropped for empty gold.
    pub skipped: usize,
}

fn bad(message: impl Into<String>) -> CliError {
    CliError::Input(format!("locomo: {}", message.into()))
}

/// Parses `"1:56 pm on 8 May, 2023"`.
pub fn parse_date(text: &str) -> Option<Timestamp> {
    let (clock, date) = text.split_once(" on ")?;
    let (hm, half) = clock.trim().split_once(' ')?;
    let (h, m) = hm.split_once(':')?;
    let (mut h, m): (i64, i64) = (h.parse().ok()?, m.parse().ok()?);
    match half.to_ascii_lowercase().as_str() {
        "am" if h == 12 => h = 0,
        "pm" if h != 12 => h += 12,
        "am" | "pm" => {}
        _ => return None,
    }
    let mut parts = date.split([' ', ',']).filter(|p| !p.is_empty());
    let day: u32 = parts.next()?.parse().ok()?;
    let month = match parts.next()?.to_ascii_lowercase().as_str() {
        "january" => 1,
        "february" => 2,
        "march" => 3,
        "april" => 4,
        "may" => 5,
        "june" => 6,
        "july" => 7,
        "august" => 8,
        "september" => 9,
        "october" => 10,
        "november" => 11,
        "december" => 12,
        _ => return None,
    };
    let year: i32 = parts.next()?.parse().ok()?;
    let midnight = CivilDate { year, month, day }.to_timestamp();
    Some(Timestamp(midnight.0 + (h * 60 + m) * 60_000))
}

/// Splits an evidence string on `;` and whitespace and normalises `D:?(\d+):0*(\d+)`.
pub fn normalise_evidence(raw: &str) -> Vec<String> {
    raw.split(|c: char| c == ';' || c.is_whitespace())
        .filter_map(|part| {
            let rest = part.strip_prefix('D')?;
            let rest = rest.strip_prefix(':').unwrap_or(rest);
            let (s, t) = rest.split_once(':')?;
            let s: u32 = s.parse().ok()?;
            let digits: String = t.chars().take_while(char::is_ascii_digit).collect();
            let t: u32 = digits.parse().ok()?;
            Some(format!("D{s}:{t}"))
        })
        .collect()
}

/// Loads every sample of `path`.
pub fn load(path: &Path) -> Result<Vec<Sample>, CliError> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| CliError::io(format!("reading {}", path.display()), e))?;
    let root: Value = serde_json::from_str(&text).map_err(|e| bad(e.to_string()))?;
    let samples = root
        .as_array()
        .ok_or_else(|| bad("expected a list of samples"))?;
    samples.iter().map(sample).collect()
}

fn sample(value: &Value) -> Result<Sample, CliError> {
    let id = value["sample_id"].as_str().unwrap_or("sample").to_owned();
    let conversation = value["conversation"]
        .as_object()
        .ok_or_else(|| bad(format!("{id}: no conversation")))?;
    let mut sessions = Vec::new();
    for (key, turns) in conversation {
        let Some(number) = key
            .strip_prefix("session_")
            .and_then(|n| n.parse::<u32>().ok())
        else {
            continue;
        };
        let date_key = format!("session_{number}_date_time");
        let at = conversation
            .get(&date_key)
            .and_then(Value::as_str)
            .and_then(parse_date)
            .ok_or_else(|| bad(format!("{id}: {date_key} missing or unreadable")))?;
        let turns = turns
            .as_array()
            .ok_or_else(|| bad(format!("{id}: {key} is not a list")))?
            .iter()
            .map(|t| {
                let speaker = t["speaker"].as_str().unwrap_or_default().to_owned();
                let mut text = format!("{speaker}: {}", t["text"].as_str().unwrap_or_default());
                if let Some(caption) = t.get("blip_caption").and_then(Value::as_str) {
                    text.push_str(&format!(" [image: {caption}]"));
                }
                Turn {
                    dia_id: t["dia_id"].as_str().unwrap_or_default().to_owned(),
                    speaker,
                    text,
                }
            })
            .collect();
        sessions.push(Session { number, at, turns });
    }
    sessions.sort_by_key(|s| s.number);
    let known: HashMap<&str, ()> = sessions
        .iter()
        .flat_map(|s| s.turns.iter().map(|t| (t.dia_id.as_str(), ())))
        .collect();
    let mut questions = Vec::new();
    let mut skipped = 0;
    for qa in value["qa"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default()
    {
        let gold: BTreeSet<String> = qa["evidence"]
            .as_array()
            .map(Vec::as_slice)
            .unwrap_or_default()
            .iter()
            .filter_map(Value::as_str)
            .flat_map(normalise_evidence)
            .filter(|d| known.contains_key(d.as_str()))
            .collect();
        if gold.is_empty() {
            skipped += 1;
            continue;
        }
        questions.push(Question {
            text: qa["question"].as_str().unwrap_or_default().to_owned(),
            category: qa["category"].as_u64().unwrap_or(0) as u8,
            gold,
            answer: answer_text(&qa["answer"]),
        });
    }
    Ok(Sample {
        id,
        sessions,
        observations: observations(value),
        questions,
        skipped,
    })
}

/// The sample's `observation` map (`session_<n>_observation` → speaker → `[text, dia_id or
/// list of them]`), session by session.
fn observations(value: &Value) -> Vec<Observation> {
    let mut out = Vec::new();
    let Some(sessions) = value["observation"].as_object() else {
        return out;
    };
    for (key, speakers) in sessions {
        let Some(session) = key
            .strip_prefix("session_")
            .and_then(|k| k.strip_suffix("_observation"))
            .and_then(|n| n.parse::<u32>().ok())
        else {
            continue;
        };
        for said in speakers.as_object().into_iter().flat_map(|m| m.values()) {
            for item in said.as_array().map(Vec::as_slice).unwrap_or_default() {
                let Some(text) = item[0].as_str() else {
                    continue;
                };
                let evidence: Vec<&str> = match &item[1] {
                    Value::String(d) => vec![d.as_str()],
                    Value::Array(ds) => ds.iter().filter_map(Value::as_str).collect(),
                    _ => Vec::new(),
                };
                out.push(Observation {
                    text: text.to_owned(),
                    dia_ids: evidence.into_iter().flat_map(normalise_evidence).collect(),
                    session,
                });
            }
        }
    }
    out.sort_by_key(|o| o.session);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_parse_to_utc_instants() {
        let t = parse_date("1:56 pm on 8 May, 2023").unwrap();
        assert_eq!(t.date().to_string(), "2023-05-08");
        assert_eq!((t.0 / 60_000) % (24 * 60), 13 * 60 + 56);
        let midnight = parse_date("12:10 am on 11 August, 2023").unwrap();
        assert_eq!((midnight.0 / 60_000) % (24 * 60), 10);
        assert!(parse_date("tomorrow").is_none());
    }

    #[test]
    fn evidence_is_normalised() {
        assert_eq!(normalise_evidence("D1:3"), ["D1:3"]);
        assert_eq!(normalise_evidence("D:11:05; D2:7"), ["D11:5", "D2:7"]);
        assert_eq!(normalise_evidence("D8:6 D9:17"), ["D8:6", "D9:17"]);
        assert!(normalise_evidence("none").is_empty());
    }

    #[test]
    fn observations_are_read_session_by_session_with_their_turns() {
        let sample: Value = serde_json::json!({
            "observation": {
                "session_2_observation": {
                    "Ann": [["Ann moved to Lisbon.", "D2:4"]]
                },
                "session_1_observation": {
                    "Ann": [["Ann likes tea.", "D1:3"], ["Ann has a dog.", ["D1:5", "D:1:06"]]],
                    "Bo": [[null, "D1:1"]]
                },
                "not_a_session": {}
            }
        });
        let read = observations(&sample);
        let texts: Vec<(&str, u32, Vec<&str>)> = read
            .iter()
            .map(|o| {
                (
                    o.text.as_str(),
                    o.session,
                    o.dia_ids.iter().map(String::as_str).collect(),
                )
            })
            .collect();
        assert_eq!(
            texts,
            [
                ("Ann likes tea.", 1, vec!["D1:3"]),
                ("Ann has a dog.", 1, vec!["D1:5", "D1:6"]),
                ("Ann moved to Lisbon.", 2, vec!["D2:4"]),
            ]
        );
        assert!(observations(&serde_json::json!({})).is_empty());
    }
}
