//! The line a run shows while it goes on: one interval's figures, as
//! pgbench's `-P`.

use std::fmt::Write as _;
use std::time::Duration;

use super::Progress;

impl Progress {
    /// The figures of the interval from `last` to this report:
    /// `12.0 s: 1234.5 tps, latency 0.810 ms, 0 failed`. A `last` that is
    /// ahead of this one (the next step of `--find-max` starts from zero)
    /// counts as none.
    pub fn line_since(&self, last: Option<Progress>) -> String {
        let p = self;
        let last = last
            .filter(|l| {
                l.elapsed <= p.elapsed
                    && l.transactions <= p.transactions
                    && l.failed <= p.failed
                    && l.started <= p.started
                    && l.skipped <= p.skipped
                    && l.latency_sum <= p.latency_sum
                    && l.lag_sum <= p.lag_sum
            })
            .unwrap_or_default();
        let done = p.transactions - last.transactions;
        let secs = (p.elapsed - last.elapsed).as_secs_f64().max(1e-9);
        let mut line = format!(
            "{:.1} s: {:.1} tps",
            p.elapsed.as_secs_f64(),
            done as f64 / secs
        );
        if done > 0 {
            let _ = write!(
                line,
                ", latency {:.3} ms",
                (p.latency_sum - last.latency_sum).as_secs_f64() * 1e3 / done as f64
            );
        }
        let started = p.started - last.started;
        if started > 0 && p.lag_sum > Duration::ZERO {
            let _ = write!(
                line,
                ", lag {:.3} ms",
                (p.lag_sum - last.lag_sum).as_secs_f64() * 1e3 / started as f64
            );
        }
        if p.skipped > 0 {
            let _ = write!(line, ", {} skipped", p.skipped - last.skipped);
        }
        let _ = write!(line, ", {} failed", p.failed - last.failed);
        line
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_shows_the_interval_and_a_restart_counts_from_zero() {
        let at = |s: u64, tx: u64, failed: u64| Progress {
            elapsed: Duration::from_secs(s),
            transactions: tx,
            failed,
            latency_sum: Duration::from_millis(tx),
            ..Progress::default()
        };
        assert_eq!(
            at(2, 300, 1).line_since(Some(at(1, 100, 0))),
            "2.0 s: 200.0 tps, latency 1.000 ms, 1 failed"
        );
        // The next step of a search: its first report is below the last.
        assert_eq!(
            at(1, 50, 0).line_since(Some(at(9, 900, 3))),
            "1.0 s: 50.0 tps, latency 1.000 ms, 0 failed"
        );
        assert_eq!(at(1, 0, 0).line_since(None), "1.0 s: 0.0 tps, 0 failed");
    }
}
