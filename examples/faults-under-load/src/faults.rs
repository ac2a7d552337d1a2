//! The faults of a run, when each began and ended, and the time the clients took to see
//! every request succeed again.

use scale_out::load::Event;

/// One fault injected under load.
#[derive(Debug, Clone)]
pub struct Fault {
    /// What was done.
    pub name: &'static str,
    /// When it began (ms since the load started).
    pub began_ms: u64,
    /// When the backend was back (ms since the load started).
    pub restored_ms: u64,
}

/// What the clients saw of one fault.
#[derive(Debug, Clone, Copy, Default)]
pub struct Seen {
    /// Requests sent between the fault and the next one that failed.
    pub failed: usize,
    /// Requests sent in the same span that succeeded.
    pub succeeded: usize,
    /// From the backend being back to the answer of the last failed request (0 when none
    /// failed after it was back).
    pub recovery_ms: u64,
}

/// What `timeline` shows of `fault`, counting requests sent from its beginning until
/// `until_ms` (the next fault, or the end of the load).
pub fn seen(timeline: &[Event], fault: &Fault, until_ms: u64) -> Seen {
    let mut out = Seen::default();
    let mut last_failure = None;
    for event in timeline
        .iter()
        .filter(|e| e.sent_ms >= fault.began_ms && e.sent_ms < until_ms)
    {
        if event.ok {
            out.succeeded += 1;
        } else {
            out.failed += 1;
            last_failure = last_failure.max(Some(event.answered_ms));
        }
    }
    out.recovery_ms = last_failure.map_or(0, |at| at.saturating_sub(fault.restored_ms));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(sent_ms: u64, answered_ms: u64, ok: bool) -> Event {
        Event {
            sent_ms,
            answered_ms,
            ok,
        }
    }

    #[test]
    fn recovery_runs_from_the_restore_to_the_last_failure_in_the_fault_span() {
        let fault = Fault {
            name: "x",
            began_ms: 100,
            restored_ms: 200,
        };
        let timeline = [
            event(50, 60, false),   // before the fault: not counted
            event(110, 120, false), // during it
            event(150, 260, false), // sent during it, failed after the restore
            event(270, 280, true),
            event(400, 420, false), // after the span: not counted
        ];
        let seen = seen(&timeline, &fault, 300);
        assert_eq!((seen.failed, seen.succeeded, seen.recovery_ms), (2, 1, 60));
        let clean = seen_none();
        assert_eq!(clean.recovery_ms, 0);
    }

    fn seen_none() -> Seen {
        let fault = Fault {
            name: "y",
            began_ms: 0,
            restored_ms: 10,
        };
        seen(&[event(1, 2, true)], &fault, 100)
    }
}
