//! Timestamps as milliseconds since the Unix epoch (UTC).

use serde::{Deserialize, Serialize};

/// A point in time, in milliseconds since 1970-01-01T00:00:00Z.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Timestamp(pub i64);

impl Timestamp {
    /// Milliseconds since the epoch.
    pub fn millis(self) -> i64 {
        self.0
    }
}

/// Milliseconds in a day.
pub const DAY_MILLIS: i64 = 86_400_000;

/// A calendar date (proleptic Gregorian, UTC).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct CivilDate {
    /// Year.
    pub year: i32,
    /// Month, 1-12.
    pub month: u32,
    /// Day of the month, 1-31.
    pub day: u32,
}

impl CivilDate {
    /// Days since 1970-01-01 (Howard Hinnant's `days_from_civil`).
    pub fn days_since_epoch(self) -> i64 {
        let y = i64::from(self.year) - i64::from(self.month <= 2);
        let era = y.div_euclid(400);
        let yoe = y - era * 400;
        let m = i64::from(self.month);
        let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + i64::from(self.day) - 1;
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
        era * 146_097 + doe - 719_468
    }

    /// The date `days` after 1970-01-01 (`civil_from_days`).
    pub fn from_days_since_epoch(days: i64) -> Self {
        let z = days + 719_468;
        let era = z.div_euclid(146_097);
        let doe = z - era * 146_097;
        let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
        let mp = (5 * doy + 2) / 153;
        let day = (doy - (153 * mp + 2) / 5 + 1) as u32;
        let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
        let year = (yoe + era * 400 + i64::from(month <= 2)) as i32;
        Self { year, month, day }
    }

    /// Day of the week, 0 = Monday .. 6 = Sunday.
    pub fn weekday(self) -> u32 {
        // 1970-01-01 was a Thursday (3).
        (self.days_since_epoch() + 3).rem_euclid(7) as u32
    }

    /// Midnight UTC of this date.
    pub fn to_timestamp(self) -> Timestamp {
        Timestamp(self.days_since_epoch() * DAY_MILLIS)
    }
}

impl std::fmt::Display for CivilDate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:04}-{:02}-{:02}", self.year, self.month, self.day)
    }
}

impl Timestamp {
    /// The UTC calendar date of this instant.
    ///
    /// ```
    /// use memory_core::{CivilDate, Timestamp};
    /// let date = Timestamp(1_683_504_000_000).date();
    /// assert_eq!(date.to_string(), "2023-05-08");
    /// assert_eq!(date.weekday(), 0); // a Monday
    /// assert_eq!(CivilDate { year: 2023, month: 5, day: 8 }.to_timestamp(), Timestamp(1_683_504_000_000));
    /// ```
    pub fn date(self) -> CivilDate {
        CivilDate::from_days_since_epoch(self.0.div_euclid(DAY_MILLIS))
    }

    /// Whole days from `self` to `later` (negative if `later` is earlier), by calendar date.
    pub fn days_until(self, later: Timestamp) -> i64 {
        later.date().days_since_epoch() - self.date().days_since_epoch()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn civil_dates_round_trip_across_leap_years_and_eras() {
        for days in (-800_000..800_000).step_by(997) {
            let date = CivilDate::from_days_since_epoch(days);
            assert_eq!(date.days_since_epoch(), days, "{date}");
        }
        let leap = CivilDate {
            year: 2024,
            month: 2,
            day: 29,
        };
        assert_eq!(
            CivilDate::from_days_since_epoch(leap.days_since_epoch()),
            leap
        );
        assert_eq!(
            CivilDate {
                year: 1970,
                month: 1,
                day: 1
            }
            .days_since_epoch(),
            0
        );
    }
}
