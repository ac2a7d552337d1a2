//! The structured transcript the extraction stages read: numbered lines with the speaker,
//! the date, and relative dates resolved against the message's own time.

use memory_core::ports::RawMessage;
use memory_core::{CivilDate, DAY_MILLIS, Timestamp};

use crate::long_term::query_dates::WEEKDAYS;

/// One transcript line.
#[derive(Debug, Clone, PartialEq)]
pub struct TranscriptLine {
    /// 0-based line index (what the model cites).
    pub index: usize,
    /// The raw message it renders.
    pub message_id: String,
    /// Speaker.
    pub role: String,
    /// When it was said.
    pub at: Timestamp,
    /// Text with relative dates resolved.
    pub text: String,
}

impl TranscriptLine {
    /// `[3] 2023-05-08 user: text`.
    pub fn render(&self) -> String {
        format!(
            "[{}] {} {}: {}",
            self.index,
            self.at.date(),
            self.role,
            self.text
        )
    }
}

/// Lines for messages in conversation order.
pub fn build_transcript(messages: &[RawMessage]) -> Vec<TranscriptLine> {
    messages
        .iter()
        .enumerate()
        .map(|(index, m)| TranscriptLine {
            index,
            message_id: m.id.clone(),
            role: m.role.clone(),
            at: m.created_at,
            text: resolve_relative_dates(&m.content, m.created_at),
        })
        .collect()
}

/// Renders a slice of lines, one per line.
pub fn render_lines(lines: &[TranscriptLine]) -> String {
    lines
        .iter()
        .map(TranscriptLine::render)
        .collect::<Vec<_>>()
        .join("\n")
}

fn number(word: &str) -> Option<i64> {
    const WORDS: [&str; 12] = [
        "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven",
        "twelve",
    ];
    match word {
        "a" | "an" => Some(1),
        w => w
            .parse()
            .ok()
            .or_else(|| WORDS.iter().position(|x| *x == w).map(|i| i as i64 + 1)),
    }
}

fn shift_months(date: CivilDate, months: i64) -> CivilDate {
    let total = i64::from(date.year) * 12 + i64::from(date.month) - 1 + months;
    let (year, month) = (total.div_euclid(12) as i32, total.rem_euclid(12) as u32 + 1);
    let mut day = date.day;
    while day > 28 {
        let candidate = CivilDate { year, month, day };
        let back = CivilDate::from_days_since_epoch(candidate.days_since_epoch());
        if back == candidate {
            break;
        }
        day -= 1;
    }
    CivilDate { year, month, day }
}

/// What the words starting at `i` mean as a date, and how many words they span.
fn match_at(words: &[&str], i: usize, at: Timestamp) -> Option<(usize, String)> {
    let w = |k: usize| words.get(i + k).copied();
    let today = at.date();
    let day = |offset: i64| {
        CivilDate::from_days_since_epoch(today.days_since_epoch() + offset).to_string()
    };
    let monday = |weeks: i64| {
        let d = today.days_since_epoch() - i64::from(today.weekday()) + 7 * weeks;
        format!("week of {}", CivilDate::from_days_since_epoch(d))
    };
    let month = |months: i64| {
        let d = shift_months(today, months);
        format!("{:04}-{:02}", d.year, d.month)
    };
    match (w(0)?, w(1), w(2), w(3)) {
        ("the", Some("day"), Some("before"), Some("yesterday")) => Some((4, day(-2))),
        ("the", Some("day"), Some("after"), Some("tomorrow")) => Some((4, day(2))),
        ("yesterday", ..) => Some((1, day(-1))),
        ("today" | "tonight", ..) => Some((1, day(0))),
        ("tomorrow", ..) => Some((1, day(1))),
        ("last" | "next" | "this", Some(unit), ..) => {
            let sign = match w(0)? {
                "last" => -1,
                "next" => 1,
                _ => 0,
            };
            match unit {
                "week" => Some((2, monday(sign))),
                "month" => Some((2, month(sign))),
                "year" => Some((2, format!("{:04}", i64::from(today.year) + sign))),
                "weekend" => {
                    let saturday = today.days_since_epoch() - i64::from(today.weekday()) + 5;
                    Some((
                        2,
                        format!(
                            "weekend of {}",
                            CivilDate::from_days_since_epoch(saturday + 7 * sign)
                        ),
                    ))
                }
                wd => {
                    let target = WEEKDAYS.iter().position(|d| *d == wd)? as i64;
                    let now = i64::from(today.weekday());
                    let offset = match sign {
                        -1 => -((now - target - 1).rem_euclid(7) + 1),
                        1 => (target - now - 1).rem_euclid(7) + 1,
                        _ => target - now,
                    };
                    Some((2, day(offset)))
                }
            }
        }
        (n, Some(unit), Some("ago"), _) => {
            // Anything beyond a few thousand years is not a date worth resolving (and would
            // overflow the arithmetic).
            let n = number(n).filter(|n| (0..=100_000).contains(n))?;
            let text = match unit.trim_end_matches('s') {
                "day" => day(-n),
                "week" => day(-7 * n),
                "month" => month(-n),
                "year" => format!("{:04}", i64::from(today.year) - n),
                _ => return None,
            };
            Some((3, text))
        }
        _ => None,
    }
}

/// Appends the absolute date after each relative expression: "yesterday" said on
/// 2023-05-08 becomes "yesterday [2023-05-07]".
///
/// ```
/// use memory_core::{CivilDate, Timestamp};
/// use memory_engine::long_term::resolve_relative_dates;
/// let at = CivilDate { year: 2023, month: 5, day: 8 }.to_timestamp(); // a Monday
/// assert_eq!(resolve_relative_dates("I went yesterday", at), "I went yesterday [2023-05-07]");
/// assert_eq!(resolve_relative_dates("Two weeks ago, last Friday", at), "Two weeks ago [2023-04-24], last Friday [2023-05-05]");
/// assert_eq!(resolve_relative_dates("next month", at), "next month [2023-06]");
/// ```
pub fn resolve_relative_dates(text: &str, at: Timestamp) -> String {
    let lower = text.to_ascii_lowercase();
    let mut spans: Vec<(usize, usize)> = Vec::new();
    let mut start = None;
    for (i, c) in lower.char_indices() {
        match (c.is_alphanumeric(), start) {
            (true, None) => start = Some(i),
            (false, Some(s)) => {
                spans.push((s, i));
                start = None;
            }
            _ => {}
        }
    }
    if let Some(s) = start {
        spans.push((s, lower.len()));
    }
    let words: Vec<&str> = spans.iter().map(|(s, e)| &lower[*s..*e]).collect();
    let mut out = String::with_capacity(text.len() + 16);
    let mut copied = 0;
    let mut i = 0;
    while i < words.len() {
        match match_at(&words, i, at) {
            Some((len, date)) => {
                let end = spans[i + len - 1].1;
                out.push_str(&text[copied..end]);
                out.push_str(&format!(" [{date}]"));
                copied = end;
                i += len;
            }
            None => i += 1,
        }
    }
    out.push_str(&text[copied..]);
    out
}

/// Milliseconds since the epoch of a `YYYY-MM-DD` date, if it is one.
pub fn parse_iso_date(text: &str) -> Option<Timestamp> {
    let mut parts = text.trim().splitn(3, '-');
    let year: i32 = parts.next()?.parse().ok()?;
    let month: u32 = parts.next()?.parse().ok()?;
    let day: u32 = parts.next()?.get(..2)?.parse().ok()?;
    let date = CivilDate { year, month, day };
    (CivilDate::from_days_since_epoch(date.days_since_epoch()) == date && (1..=12).contains(&month))
        .then(|| Timestamp(date.days_since_epoch() * DAY_MILLIS))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn monday() -> Timestamp {
        CivilDate {
            year: 2023,
            month: 5,
            day: 8,
        }
        .to_timestamp()
    }

    #[test]
    fn relative_expressions_resolve_against_the_message_time() {
        let at = monday();
        assert_eq!(resolve_relative_dates("today", at), "today [2023-05-08]");
        assert_eq!(
            resolve_relative_dates("the day before yesterday", at),
            "the day before yesterday [2023-05-06]"
        );
        assert_eq!(
            resolve_relative_dates("last week", at),
            "last week [week of 2023-05-01]"
        );
        assert_eq!(
            resolve_relative_dates("next Monday", at),
            "next Monday [2023-05-15]"
        );
        assert_eq!(
            resolve_relative_dates("last Monday", at),
            "last Monday [2023-05-01]"
        );
        assert_eq!(
            resolve_relative_dates("3 months ago", at),
            "3 months ago [2023-02]"
        );
        assert_eq!(
            resolve_relative_dates("a year ago", at),
            "a year ago [2022]"
        );
        assert_eq!(resolve_relative_dates("last year", at), "last year [2022]");
        assert_eq!(
            resolve_relative_dates("nothing relative here", at),
            "nothing relative here"
        );
        assert_eq!(
            resolve_relative_dates("Café yesterday!", at),
            "Café yesterday [2023-05-07]!"
        );
    }

    #[test]
    fn iso_dates_are_validated() {
        assert_eq!(
            parse_iso_date("2023-05-07"),
            Some(
                CivilDate {
                    year: 2023,
                    month: 5,
                    day: 7
                }
                .to_timestamp()
            )
        );
        assert_eq!(parse_iso_date("2023-02-30"), None);
        assert_eq!(parse_iso_date("May 7"), None);
    }

    #[test]
    fn month_shifts_clamp_the_day() {
        let d = shift_months(
            CivilDate {
                year: 2023,
                month: 3,
                day: 31,
            },
            -1,
        );
        assert_eq!(
            d,
            CivilDate {
                year: 2023,
                month: 2,
                day: 28
            }
        );
    }
}
