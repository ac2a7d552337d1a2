//! Date arithmetic done in Rust, never by the model: how long ago each recalled item was,
//! their chronological order and the gaps between them, handed to synthesis as facts.

use memory_core::Timestamp;

const WEEKDAYS: [&str; 7] = [
    "Monday",
    "Tuesday",
    "Wednesday",
    "Thursday",
    "Friday",
    "Saturday",
    "Sunday",
];

/// "3 days", "5 weeks (35 days)", "about 7 months (212 days)", "about 2 years (800 days)".
pub fn describe_days(days: i64) -> String {
    let d = days.abs();
    let unit = |n: i64, word: &str| format!("{n} {word}{}", if n == 1 { "" } else { "s" });
    match d {
        0..=13 => unit(d, "day"),
        14..=59 => format!("{} ({})", unit(d / 7, "week"), unit(d, "day")),
        60..=729 => format!(
            "about {} ({})",
            unit((d as f64 / 30.44).round() as i64, "month"),
            unit(d, "day")
        ),
        _ => format!(
            "about {} ({})",
            unit((d as f64 / 365.25).round() as i64, "year"),
            unit(d, "day")
        ),
    }
}

fn day(t: Timestamp) -> String {
    let date = t.date();
    format!("{date} ({})", WEEKDAYS[date.weekday() as usize])
}

/// Facts about `items` (a label such as `[2]` and a date) relative to `now`.
///
/// ```
/// use memory_core::{CivilDate, Timestamp};
/// use memory_engine::long_term::temporal_facts;
/// let d = |y, m, day| CivilDate { year: y, month: m, day }.to_timestamp();
/// let facts = temporal_facts(d(2023, 6, 1), &[("[1]".into(), d(2023, 5, 8)), ("[2]".into(), d(2023, 5, 1))]);
/// assert!(facts.iter().any(|f| f == "[1] is dated 2023-05-08 (Monday): 3 weeks (24 days) before today."));
/// assert!(facts.iter().any(|f| f == "Chronological order: [2] (2023-05-01), [1] (2023-05-08)."));
/// assert!(facts.iter().any(|f| f == "[1] is 7 days after [2]."));
/// ```
pub fn temporal_facts(now: Timestamp, items: &[(String, Timestamp)]) -> Vec<String> {
    let mut facts = vec![format!("Today is {}.", day(now))];
    if items.is_empty() {
        return facts;
    }
    for (label, at) in items {
        let days = at.days_until(now);
        let relation = match days {
            0 => "today".to_owned(),
            d if d > 0 => format!("{} before today", describe_days(d)),
            d => format!("{} after today", describe_days(d)),
        };
        facts.push(format!("{label} is dated {}: {relation}.", day(*at)));
    }
    let mut ordered: Vec<&(String, Timestamp)> = items.iter().collect();
    ordered.sort_by_key(|(_, at)| *at);
    if ordered.len() > 1 {
        let order: Vec<String> = ordered
            .iter()
            .map(|(label, at)| format!("{label} ({})", at.date()))
            .collect();
        facts.push(format!("Chronological order: {}.", order.join(", ")));
        for pair in ordered.windows(2) {
            let (earlier, later) = (pair[0], pair[1]);
            let days = earlier.1.days_until(later.1);
            if days == 0 {
                facts.push(format!(
                    "{} and {} are on the same day.",
                    later.0, earlier.0
                ));
            } else {
                facts.push(format!(
                    "{} is {} after {}.",
                    later.0,
                    describe_days(days),
                    earlier.0
                ));
            }
        }
    }
    facts
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spans_are_described_in_sensible_units() {
        assert_eq!(describe_days(1), "1 day");
        assert_eq!(describe_days(-3), "3 days");
        assert_eq!(describe_days(21), "3 weeks (21 days)");
        assert_eq!(describe_days(91), "about 3 months (91 days)");
        assert_eq!(describe_days(800), "about 2 years (800 days)");
    }

    #[test]
    fn future_dates_and_same_day_items_are_stated() {
        let now = Timestamp(1_700_000_000_000);
        let later = Timestamp(now.0 + 2 * memory_core::DAY_MILLIS);
        let facts = temporal_facts(now, &[("[a]".into(), later), ("[b]".into(), later)]);
        assert!(
            facts.iter().any(|f| f.ends_with("2 days after today.")),
            "{facts:?}"
        );
        assert!(
            facts.iter().any(|f| f.contains("are on the same day")),
            "{facts:?}"
        );
    }
}
