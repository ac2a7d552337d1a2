//! The structured transcript the extraction stages read: numbered lines with the speaker,
//! the date, and relative dates resolved against the message's own time.

use memory_core::ports::RawMessage;
use memory_core::{CivilDate, DAY_MILLIS, Timestamp};

use memory_core::TextLanguage;

use super::date_phrases::{Meaning, Phrases, Unit, phrases};
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

/// Lines for messages in conversation order (relative dates read in English).
pub fn build_transcript(messages: &[RawMessage]) -> Vec<TranscriptLine> {
    build_transcript_in(messages, &[])
}

/// Lines for messages in conversation order, relative dates read in English and in
/// `languages` ([`resolve_relative_dates_in`]).
pub fn build_transcript_in(
    messages: &[RawMessage],
    languages: &[TextLanguage],
) -> Vec<TranscriptLine> {
    messages
        .iter()
        .enumerate()
        .map(|(index, m)| TranscriptLine {
            index,
            message_id: m.id.clone(),
            role: m.role.clone(),
            at: m.created_at,
            text: resolve_relative_dates_in(&m.content, m.created_at, languages),
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
/// 2023-05-08 becomes "yesterday [2023-05-07]". English only; see
/// [`resolve_relative_dates_in`] for other languages.
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
    resolve_relative_dates_in(text, at, &[])
}

/// [`resolve_relative_dates`] in English and in `languages` (each from its phrase table:
/// fixed phrases, "N units ago", last / next weekday; CJK phrases found inside runs of
/// characters). At each word the longest match of any of them wins.
///
/// ```
/// use memory_core::{CivilDate, TextLanguage, Timestamp};
/// use memory_engine::long_term::resolve_relative_dates_in;
/// let at = CivilDate { year: 2023, month: 5, day: 8 }.to_timestamp(); // a Monday
/// assert_eq!(
///     resolve_relative_dates_in("Je l'ai vu la semaine dernière", at, &[TextLanguage::French]),
///     "Je l'ai vu la semaine dernière [week of 2023-05-01]"
/// );
/// assert_eq!(
///     resolve_relative_dates_in("Ik was er vorige week", at, &[TextLanguage::Dutch]),
///     "Ik was er vorige week [week of 2023-05-01]"
/// );
/// ```
pub fn resolve_relative_dates_in(text: &str, at: Timestamp, languages: &[TextLanguage]) -> String {
    let tables: Vec<&Phrases> = languages.iter().filter_map(|l| phrases(*l)).collect();
    let mut spans: Vec<(usize, usize)> = Vec::new();
    let mut start = None;
    for (i, c) in text.char_indices() {
        match (is_word_char(c), start) {
            (true, None) => start = Some(i),
            (false, Some(s)) => {
                spans.push((s, i));
                start = None;
            }
            _ => {}
        }
    }
    if let Some(s) = start {
        spans.push((s, text.len()));
    }
    let words: Vec<String> = spans
        .iter()
        .map(|(s, e)| text[*s..*e].to_lowercase())
        .collect();
    let words: Vec<&str> = words.iter().map(String::as_str).collect();
    let today = at.date();
    let mut out = String::with_capacity(text.len() + 16);
    let mut copied = 0;
    let mut i = 0;
    while i < words.len() {
        let english = match_at(&words, i, at).map(|(len, date)| (len, Some(date)));
        let best = tables
            .iter()
            .filter(|t| !t.inside_words)
            .filter_map(|t| match_table(t, &words, i))
            .map(|(len, meaning)| (len, describe(meaning, today)))
            .chain(english)
            .max_by_key(|(len, _)| *len);
        match best {
            Some((len, date)) => {
                let end = spans[i + len - 1].1;
                out.push_str(&text[copied..end]);
                if let Some(date) = date {
                    out.push_str(&format!(" [{date}]"));
                }
                copied = end;
                i += len;
            }
            None => i += 1,
        }
    }
    out.push_str(&text[copied..]);
    match tables.iter().find(|t| t.inside_words) {
        Some(table) => annotate_inside(&out, table, today),
        None => out,
    }
}

/// Letters, digits and the combining marks of scripts that write vowels as marks (Indic
/// scripts such as Tamil): a word is a run of these.
fn is_word_char(c: char) -> bool {
    c.is_alphanumeric() || ('\u{0900}'..='\u{0DFF}').contains(&c)
}

/// The absolute form of a meaning on `today` (`None` for [`Meaning::Skip`]).
fn describe(meaning: Meaning, today: CivilDate) -> Option<String> {
    let days = today.days_since_epoch();
    Some(match meaning {
        Meaning::Day(offset) => CivilDate::from_days_since_epoch(days + offset).to_string(),
        Meaning::Week(weeks) => {
            let monday = days - i64::from(today.weekday()) + 7 * weeks;
            format!("week of {}", CivilDate::from_days_since_epoch(monday))
        }
        Meaning::Month(months) => {
            let d = shift_months(today, months);
            format!("{:04}-{:02}", d.year, d.month)
        }
        Meaning::Year(years) => format!("{:04}", i64::from(today.year) + years),
        Meaning::Weekday { sign, day } => {
            let now = i64::from(today.weekday());
            let offset = if sign < 0 {
                -((now - day - 1).rem_euclid(7) + 1)
            } else {
                (day - now - 1).rem_euclid(7) + 1
            };
            CivilDate::from_days_since_epoch(days + offset).to_string()
        }
        Meaning::Skip => return None,
    })
}

/// Whether `word` is the pattern word `part`, with its `%` (if any) read as `name`.
fn part_matches(part: &str, word: &str, name: &str) -> bool {
    match part.split_once('%') {
        None => part == word,
        Some((before, after)) => {
            word.len() == before.len() + name.len() + after.len()
                && word.starts_with(before)
                && word.ends_with(after)
                && &word[before.len()..word.len() - after.len()] == name
        }
    }
}

/// The longest phrase of `table` at word `i`: its length in words and meaning.
fn match_table(table: &Phrases, words: &[&str], i: usize) -> Option<(usize, Meaning)> {
    let rest = &words[i..];
    // Word by word, without allocating: `%` in a pattern stands for `name`.
    let fits_named = |pattern: &str, name: &str| -> Option<usize> {
        let mut len = 0;
        for part in pattern.split(' ') {
            if !part_matches(part, rest.get(len)?, name) {
                return None;
            }
            len += 1;
        }
        Some(len)
    };
    let fits = |pattern: &str| fits_named(pattern, "");
    let mut best: Option<(usize, Meaning)> = None;
    let mut offer = |len: usize, meaning: Meaning| {
        if best.is_none_or(|(l, _)| len > l) {
            best = Some((len, meaning));
        }
    };
    for (phrase, meaning) in table.fixed {
        if let Some(len) = fits(phrase) {
            offer(len, *meaning);
        }
    }
    for pattern in table.ago {
        if let Some((len, meaning)) = match_ago(table, pattern, rest) {
            offer(len, meaning);
        }
    }
    for (sign, patterns) in [(-1, table.last_weekday), (1, table.next_weekday)] {
        for pattern in patterns {
            for (day, names) in table.weekdays.iter().enumerate() {
                for name in names.split('|').filter(|n| !n.is_empty()) {
                    if let Some(len) = fits_named(pattern, name) {
                        offer(
                            len,
                            Meaning::Weekday {
                                sign,
                                day: day as i64,
                            },
                        );
                    }
                }
            }
        }
    }
    best
}

/// "N units ago" at the start of `rest` for one pattern (`#` the number, `@` the unit).
fn match_ago(table: &Phrases, pattern: &str, rest: &[&str]) -> Option<(usize, Meaning)> {
    let parts: Vec<&str> = pattern.split(' ').collect();
    if rest.len() < parts.len() {
        return None;
    }
    let (mut n, mut unit) = (None, None);
    for (part, word) in parts.iter().zip(rest) {
        match *part {
            "#" => {
                n = word.parse::<i64>().ok().or_else(|| {
                    table
                        .numbers
                        .iter()
                        .find(|(w, _)| w == word)
                        .map(|(_, v)| *v)
                });
                n?;
            }
            "@" => {
                unit = table.units.iter().find(|(w, _)| w == word).map(|(_, u)| *u);
                unit?;
            }
            literal if literal == *word => {}
            _ => return None,
        }
    }
    let n = n.filter(|n| (0..=100_000).contains(n))?;
    let meaning = match unit? {
        Unit::Day => Meaning::Day(-n),
        Unit::Week => Meaning::Day(-7 * n),
        Unit::Month => Meaning::Month(-n),
        Unit::Year => Meaning::Year(-n),
    };
    Some((parts.len(), meaning))
}

/// Annotates the phrases of a table written without spaces (CJK), found anywhere in
/// `text`, longest first at each position.
fn annotate_inside(text: &str, table: &Phrases, today: CivilDate) -> String {
    let mut out = String::with_capacity(text.len() + 16);
    let mut i = 0;
    while i < text.len() {
        let rest = &text[i..];
        let found = table
            .fixed
            .iter()
            .filter(|(phrase, _)| rest.starts_with(phrase))
            .max_by_key(|(phrase, _)| phrase.len());
        match found {
            Some((phrase, meaning)) => {
                out.push_str(phrase);
                if let Some(date) = describe(*meaning, today) {
                    out.push_str(&format!(" [{date}]"));
                }
                i += phrase.len();
            }
            None => {
                let Some(c) = rest.chars().next() else { break };
                out.push(c);
                i += c.len_utf8();
            }
        }
    }
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
    fn relative_dates_resolve_in_the_profiles_language_only() {
        use memory_core::TextLanguage as L;
        let at = monday(); // 2023-05-08
        let cases: &[(L, &str, &str)] = &[
            (
                L::French,
                "Je l'ai vu la semaine dernière.",
                "Je l'ai vu la semaine dernière [week of 2023-05-01].",
            ),
            (
                L::French,
                "Avant-hier, et aujourd'hui",
                "Avant-hier [2023-05-06], et aujourd'hui [2023-05-08]",
            ),
            (L::French, "il y a 3 jours", "il y a 3 jours [2023-05-05]"),
            (L::French, "Lundi dernier", "Lundi dernier [2023-05-01]"),
            (L::French, "l'année prochaine", "l'année prochaine [2024]"),
            (
                L::German,
                "Guten Morgen! Wir fahren morgen.",
                "Guten Morgen! Wir fahren morgen [2023-05-09].",
            ),
            (
                L::German,
                "heute Morgen, vor zwei Wochen",
                "heute Morgen [2023-05-08], vor zwei Wochen [2023-04-24]",
            ),
            (
                L::German,
                "Nächsten Freitag",
                "Nächsten Freitag [2023-05-12]",
            ),
            (L::German, "Übermorgen", "Übermorgen [2023-05-10]"),
            (
                L::Dutch,
                "vorige week en volgende maand",
                "vorige week [week of 2023-05-01] en volgende maand [2023-06]",
            ),
            (L::Dutch, "2 dagen geleden", "2 dagen geleden [2023-05-06]"),
            (
                L::Spanish,
                "hace 3 días, por la mañana",
                "hace 3 días [2023-05-05], por la mañana",
            ),
            (
                L::Spanish,
                "Mañana por la mañana",
                "Mañana [2023-05-09] por la mañana",
            ),
            (L::Spanish, "el año que viene", "el año que viene [2024]"),
            (L::Italian, "lunedì scorso", "lunedì scorso [2023-05-01]"),
            (
                L::Italian,
                "due settimane fa",
                "due settimane fa [2023-04-24]",
            ),
            (
                L::Portuguese,
                "há 2 semanas, e semana que vem",
                "há 2 semanas [2023-04-24], e semana que vem [week of 2023-05-15]",
            ),
            (
                L::Swedish,
                "i går och förra veckan",
                "i går [2023-05-07] och förra veckan [week of 2023-05-01]",
            ),
            (
                L::Danish,
                "for 2 dage siden",
                "for 2 dage siden [2023-05-06]",
            ),
            (L::Norwegian, "i fjor", "i fjor [2022]"),
            (L::Finnish, "eilen", "eilen [2023-05-07]"),
            (L::Hungarian, "tegnap", "tegnap [2023-05-07]"),
            (
                L::Romanian,
                "săptămâna trecută",
                "săptămâna trecută [week of 2023-05-01]",
            ),
            (
                L::Russian,
                "Вчера и на прошлой неделе, 3 дня назад",
                "Вчера [2023-05-07] и на прошлой неделе [week of 2023-05-01], 3 дня назад [2023-05-05]",
            ),
            (L::Greek, "χθες", "χθες [2023-05-07]"),
            (
                L::Turkish,
                "geçen hafta",
                "geçen hafta [week of 2023-05-01]",
            ),
            (
                L::Arabic,
                "الأسبوع الماضي",
                "الأسبوع الماضي [week of 2023-05-01]",
            ),
            (L::Tamil, "நேற்று", "நேற்று [2023-05-07]"),
            (L::Cjk, "我昨天去了北京", "我昨天 [2023-05-07]去了北京"),
            (L::Cjk, "来週の月曜日", "来週 [week of 2023-05-15]の月曜日"),
            (
                L::Cjk,
                "다음 주에 만나요",
                "다음 주 [week of 2023-05-15]에 만나요",
            ),
        ];
        for (language, text, expected) in cases {
            assert_eq!(
                resolve_relative_dates_in(text, at, &[*language]),
                *expected,
                "{language:?}"
            );
        }
        assert_eq!(
            resolve_relative_dates_in("la semaine dernière, yesterday", at, &[]),
            "la semaine dernière, yesterday [2023-05-07]",
            "English always; another language only when the profile's"
        );
        assert_eq!(
            resolve_relative_dates_in("ma", at, &[L::Italian]),
            "ma",
            "Hungarian's \"ma\" (today) is Italian's \"but\""
        );
    }

    #[test]
    fn every_phrase_table_is_written_as_the_tokenizer_reads_text() {
        use memory_core::TextLanguage;
        for language in TextLanguage::ALL {
            let Some(table) = phrases(language) else {
                continue;
            };
            for (phrase, _) in table.fixed {
                if table.inside_words {
                    continue;
                }
                let at = monday();
                let resolved = resolve_relative_dates_in(phrase, at, &[language]);
                assert!(
                    resolved.starts_with(phrase),
                    "{language:?}: {phrase:?} became {resolved:?}"
                );
                assert_eq!(phrase.to_lowercase(), *phrase, "{language:?}: {phrase:?}");
                let words: Vec<&str> = phrase.split(' ').collect();
                assert!(
                    words
                        .iter()
                        .all(|w| !w.is_empty() && w.chars().all(is_word_char)),
                    "{language:?}: {phrase:?} has a character that splits words"
                );
            }
        }
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
