//! Dates in a question, resolved in Rust against when it is asked: "two weeks ago",
//! "last month", "yesterday", "last Saturday", "in May", "on March 3rd" and "in the past 10
//! days" become a window of time that recall searches as a channel of its own (`dated`).
//!
//! English only, and deliberately conservative: a month name counts only beside a day, a
//! year or a leading word such as "in" or "early" ("I may go" is not May), and a phrase that names no time gives no
//! window rather than a guess.

use memory_core::{CivilDate, DAY_MILLIS, Timestamp};
use serde::Serialize;

/// A span of time a question points at.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DateWindow {
    /// At or after.
    pub from: Timestamp,
    /// Before.
    pub to: Timestamp,
    /// The words that named it (lowercase), so the full-text query can leave them out.
    pub words: Vec<String>,
}

const MONTHS: [&str; 12] = [
    "january",
    "february",
    "march",
    "april",
    "may",
    "june",
    "july",
    "august",
    "september",
    "october",
    "november",
    "december",
];

/// Lowercase weekday names, Monday first (as [`CivilDate::weekday`] counts).
pub(super) const WEEKDAYS: [&str; 7] = [
    "monday",
    "tuesday",
    "wednesday",
    "thursday",
    "friday",
    "saturday",
    "sunday",
];

/// Words that make a following month name a month ("in May", "early March").
const MONTH_LEADS: [&str; 9] = [
    "in",
    "during",
    "of",
    "since",
    "until",
    "early",
    "late",
    "mid",
    "throughout",
];

#[derive(Debug, Clone, Copy, PartialEq)]
enum Unit {
    Day,
    Week,
    Month,
    Year,
}

impl Unit {
    fn parse(word: &str) -> Option<Self> {
        match word.trim_end_matches('s') {
            "day" => Some(Self::Day),
            "week" => Some(Self::Week),
            "month" => Some(Self::Month),
            "year" => Some(Self::Year),
            _ => None,
        }
    }

    fn days(self) -> f64 {
        match self {
            Self::Day => 1.0,
            Self::Week => 7.0,
            Self::Month => 30.44,
            Self::Year => 365.25,
        }
    }

    /// How far off a speaker's "N units ago" usually is, at least.
    fn slack_days(self) -> f64 {
        match self {
            Self::Day => 1.0,
            Self::Week => 3.0,
            Self::Month => 10.0,
            Self::Year => 45.0,
        }
    }
}

fn number(word: &str) -> Option<f64> {
    // Beyond a thousand units a window means nothing (and the arithmetic would overflow).
    if let Ok(n) = word.parse::<u32>() {
        return (n <= 1_000).then_some(f64::from(n));
    }
    let n = match word {
        "a" | "an" | "one" => 1,
        "two" | "couple" => 2,
        "three" | "few" => 3,
        "four" => 4,
        "five" => 5,
        "six" => 6,
        "seven" => 7,
        "eight" => 8,
        "nine" => 9,
        "ten" => 10,
        "eleven" => 11,
        "twelve" => 12,
        _ => return None,
    };
    Some(f64::from(n))
}

fn day_of_month(word: &str) -> Option<u32> {
    let digits = word
        .strip_suffix("st")
        .or_else(|| word.strip_suffix("nd"))
        .or_else(|| word.strip_suffix("rd"))
        .or_else(|| word.strip_suffix("th"))
        .unwrap_or(word);
    digits.parse::<u32>().ok().filter(|d| (1..=31).contains(d))
}

fn year(word: &str) -> Option<i32> {
    word.parse::<i32>()
        .ok()
        .filter(|y| (1900..=2200).contains(y))
}

/// A month's name or its three-letter abbreviation ("Sept" too).
fn month(word: &str) -> Option<u32> {
    let word = if word == "sept" { "sep" } else { word };
    MONTHS
        .iter()
        .position(|m| *m == word || m.get(..3) == Some(word))
        .and_then(|i| u32::try_from(i + 1).ok())
}

fn date(year: i32, month: u32, day: u32) -> Timestamp {
    CivilDate { year, month, day }.to_timestamp()
}

fn midnight(at: Timestamp) -> Timestamp {
    at.date().to_timestamp()
}

fn plus_days(at: Timestamp, days: f64) -> Timestamp {
    Timestamp(at.0 + (days * DAY_MILLIS as f64) as i64)
}

/// The window of a whole calendar month.
fn month_window(year: i32, month: u32) -> (Timestamp, Timestamp) {
    let (next_year, next_month) = if month == 12 {
        (year + 1, 1)
    } else {
        (year, month + 1)
    };
    (date(year, month, 1), date(next_year, next_month, 1))
}

/// A day and the days either side of it.
fn around(day: Timestamp, slack_days: f64) -> (Timestamp, Timestamp) {
    let day = midnight(day);
    (
        plus_days(day, -slack_days),
        plus_days(day, 1.0 + slack_days),
    )
}

/// The date window `query` names, asked at `asked_at`: the first phrase with a year, or
/// else the first phrase.
///
/// ```
/// use memory_core::CivilDate;
/// use memory_engine::long_term::query_window;
/// let asked = CivilDate { year: 2023, month: 5, day: 20 }.to_timestamp();
/// let w = query_window("What did I plant two weeks ago?", asked).unwrap();
/// assert_eq!((w.from.date().to_string(), w.to.date().to_string()), ("2023-05-02".into(), "2023-05-11".into()));
/// assert_eq!(w.words, ["two", "weeks", "ago"]);
/// assert!(query_window("I may bring the cake", asked).is_none());
/// ```
pub fn query_window(query: &str, asked_at: Timestamp) -> Option<DateWindow> {
    let words: Vec<String> = query
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect();
    // A date with its year ("last weekend before April 10, 2023") is the most exact.
    let mut first = None;
    for i in 0..words.len() {
        if let Some(window) = window_at(&words, i, asked_at) {
            if window.words.iter().any(|w| year(w).is_some()) {
                return Some(window);
            }
            first.get_or_insert(window);
        }
    }
    first
}

/// The window named by the phrase starting at word `i`.
fn window_at(words: &[String], i: usize, asked_at: Timestamp) -> Option<DateWindow> {
    let today = midnight(asked_at);
    let this_year = asked_at.date().year;
    let found = |start: usize, end: usize, (from, to): (Timestamp, Timestamp)| {
        Some(DateWindow {
            from,
            to,
            words: words[start..end].to_vec(),
        })
    };
    let w = words[i].as_str();
    let next = words.get(i + 1).map(String::as_str).unwrap_or("");
    let after = words.get(i + 2).map(String::as_str).unwrap_or("");
    // "two weeks ago", "a couple of months ago", "10 days ago".
    if let Some(n) = number(w) {
        let (unit_at, n) = if next == "couple" || next == "few" {
            (if after == "of" { i + 3 } else { i + 2 }, number(next)?)
        } else {
            (i + 1, n)
        };
        if let Some(unit) = words.get(unit_at).and_then(|u| Unit::parse(u))
            && words.get(unit_at + 1).map(String::as_str) == Some("ago")
        {
            let back = (n * unit.days()).round();
            let slack = unit.slack_days().max(back * 0.25).round();
            return found(i, unit_at + 2, around(plus_days(today, -back), slack));
        }
    }
    match w {
        // A day either side: the dates are UTC, the speaker's day may not be.
        "yesterday" => return found(i, i + 1, around(plus_days(today, -1.0), 1.0)),
        "today" | "tonight" => return found(i, i + 1, around(today, 1.0)),
        "last" | "past" | "previous" => {
            let followed_by_of = |end: usize| words.get(end).is_some_and(|w| w == "of");
            // "the past 10 days", "last three weeks": up to now ("the last two weeks of the
            // trip" is not).
            if let Some(n) = number(next)
                && let Some(unit) = Unit::parse(after)
                && !followed_by_of(i + 3)
            {
                let from = plus_days(today, -(n * unit.days()));
                return found(i, i + 3, (from, plus_days(today, 1.0)));
            }
            // "last week", "last month", "last year": the calendar period before this one;
            // "the past year": the year up to today ("the last day of the trip" and "the
            // last year of college" are neither).
            if let Some(unit) = Unit::parse(next)
                .filter(|u| *u != Unit::Day && !next.ends_with('s') && !followed_by_of(i + 2))
            {
                if w == "past" {
                    let from = plus_days(today, -unit.days().round());
                    return found(i, i + 2, (from, plus_days(today, 1.0)));
                }
                let window = match unit {
                    Unit::Year => (date(this_year - 1, 1, 1), date(this_year, 1, 1)),
                    Unit::Month => {
                        let d = asked_at.date();
                        let (y, m) = if d.month == 1 {
                            (d.year - 1, 12)
                        } else {
                            (d.year, d.month - 1)
                        };
                        month_window(y, m)
                    }
                    Unit::Week | Unit::Day => {
                        // Monday to Sunday of the week before this one, a day either side.
                        let monday = plus_days(today, -f64::from(asked_at.date().weekday()));
                        (plus_days(monday, -8.0), plus_days(monday, 1.0))
                    }
                };
                return found(i, i + 2, window);
            }
            if next == "weekend" {
                let weekday = f64::from(asked_at.date().weekday());
                // The Saturday before today (today's weekday 0 = Monday).
                // On a weekend day, the weekend before this one.
                let back = (weekday + 2.0).rem_euclid(7.0);
                let back = if weekday >= 5.0 { back + 7.0 } else { back };
                let saturday = plus_days(today, -back);
                return found(i, i + 2, (saturday, plus_days(saturday, 2.0)));
            }
            if let Some(day) = WEEKDAYS.iter().position(|d| *d == next) {
                let weekday = asked_at.date().weekday() as usize;
                let back = (weekday + 7 - day) % 7;
                let back = if back == 0 { 7 } else { back };
                return found(i, i + 2, around(plus_days(today, -(back as f64)), 1.0));
            }
        }
        _ => {}
    }
    // "March 3rd", "March 3, 2023", "in May", "May 2023", "3 March".
    if let Some(m) = month(w) {
        let lead = i
            .checked_sub(1)
            .and_then(|p| words.get(p))
            .map(String::as_str);
        if let Some(day) = day_of_month(next) {
            let (y, end) = match year(after) {
                Some(y) => (y, i + 3),
                None => (latest_year(this_year, m, day, asked_at), i + 2),
            };
            return found(i, end, around(date(y, m, day), 1.0));
        }
        if let Some(y) = year(next) {
            return found(i, i + 2, month_window(y, m));
        }
        if lead.is_some_and(|l| MONTH_LEADS.contains(&l)) {
            let y = latest_year(this_year, m, 1, asked_at);
            return found(i, i + 1, month_window(y, m));
        }
    }
    // "3 March" ("Which of the 3 may help?" is not May: "may" here needs its year).
    if let Some(day) = day_of_month(w)
        && let Some(m) = month(next)
        && (next != "may" || year(after).is_some())
    {
        let (y, end) = match year(after) {
            Some(y) => (y, i + 3),
            None => (latest_year(this_year, m, day, asked_at), i + 2),
        };
        return found(i, end, around(date(y, m, day), 1.0));
    }
    None
}

/// The year that puts `month`/`day` most recently at or before `asked_at`.
fn latest_year(this_year: i32, month: u32, day: u32, asked_at: Timestamp) -> i32 {
    if date(this_year, month, day) <= asked_at {
        this_year
    } else {
        this_year - 1
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn asked() -> Timestamp {
        // Saturday, 2023-05-20, 17:00.
        Timestamp(date(2023, 5, 20).0 + 17 * 3_600_000)
    }

    fn span(query: &str) -> Option<(String, String)> {
        query_window(query, asked()).map(|w| (w.from.date().to_string(), w.to.date().to_string()))
    }

    fn is(from: &str, to: &str) -> Option<(String, String)> {
        Some((from.to_owned(), to.to_owned()))
    }

    #[test]
    fn amounts_ago_widen_with_distance() {
        assert_eq!(
            span("what did I do 3 days ago"),
            is("2023-05-16", "2023-05-19")
        );
        assert_eq!(span("two weeks ago"), is("2023-05-02", "2023-05-11"));
        assert_eq!(span("a month ago"), is("2023-04-10", "2023-05-01"));
        assert_eq!(
            span("a couple of months ago"),
            is("2023-03-05", "2023-04-05")
        );
        assert_eq!(span("about a year ago"), is("2022-02-18", "2022-08-20"));
    }

    #[test]
    fn named_days_weeks_months_and_years() {
        // Asked on a Saturday.
        assert_eq!(span("yesterday"), is("2023-05-18", "2023-05-21"));
        assert_eq!(span("last Saturday"), is("2023-05-12", "2023-05-15"));
        assert_eq!(span("last friday"), is("2023-05-18", "2023-05-21"));
        assert_eq!(span("last weekend"), is("2023-05-13", "2023-05-15"));
        assert_eq!(span("last week"), is("2023-05-07", "2023-05-16"));
        assert_eq!(span("last month"), is("2023-04-01", "2023-05-01"));
        assert_eq!(span("last year"), is("2022-01-01", "2023-01-01"));
        assert_eq!(span("in the past year"), is("2022-05-20", "2023-05-21"));
        assert_eq!(span("in the past 10 days"), is("2023-05-10", "2023-05-21"));
        // Asked on a Sunday, last weekend is the one before this one; asked in January,
        // last month is December.
        let sunday = date(2023, 5, 21);
        let w = query_window("last weekend", sunday).unwrap();
        assert_eq!((w.from, w.to), (date(2023, 5, 13), date(2023, 5, 15)));
        let w = query_window("last month", date(2024, 1, 10)).unwrap();
        assert_eq!((w.from, w.to), (date(2023, 12, 1), date(2024, 1, 1)));
    }

    #[test]
    fn calendar_dates_take_the_latest_year_not_after_the_question() {
        assert_eq!(span("on March 3rd"), is("2023-03-02", "2023-03-05"));
        assert_eq!(span("on 3 March"), is("2023-03-02", "2023-03-05"));
        assert_eq!(span("in June"), is("2022-06-01", "2022-07-01"));
        assert_eq!(span("in May"), is("2023-05-01", "2023-06-01"));
        assert_eq!(span("December 2021"), is("2021-12-01", "2022-01-01"));
        assert_eq!(span("Sept 9, 2022"), is("2022-09-08", "2022-09-11"));
    }

    #[test]
    fn words_that_only_look_like_dates_give_no_window() {
        for query in [
            "I may bring the cake",
            "the march for climate",
            "How many days passed between the two trips?",
            "the last time I saw a doctor",
            "which came first",
            "the last year of college",
            "the last two weeks of the trip",
            "Which of the 3 may help?",
        ] {
            assert_eq!(span(query), None, "{query}");
        }
    }

    #[test]
    fn a_date_with_its_year_wins_over_a_relative_phrase() {
        assert_eq!(
            span("What did Maria do last weekend before April 10, 2023?"),
            is("2023-04-09", "2023-04-12")
        );
    }

    #[test]
    fn the_phrase_is_reported() {
        let w = query_window("What charity event did I join a month ago?", asked()).unwrap();
        assert_eq!(w.words, ["a", "month", "ago"]);
    }
}
