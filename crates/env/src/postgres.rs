//! What PostgreSQL's statistics say of a run, read by `--pg-stats` or
//! scraped from postgres_exporter: commits (less the probe's own), the
//! cache, rows and WAL per transaction, checkpoints, and where the run's
//! sessions spent their time (running, waiting on locks, on I/O, on their
//! client), with a verdict when they mostly waited on one kind of thing.
//!
//! The keys are the views' own columns (`pg/db/xact_commit`,
//! `pg/wal/wal_bytes`, `pg/bgwriter/checkpoints_req` …) and the activity
//! sample's cumulative counts (`pg/activity/sessions`,
//! `pg/activity/wait/Lock:transactionid` …). PostgreSQL publishes a
//! session's counters about once a second, so the counters lag the run by
//! up to a second; over a window of several seconds that is a small part.

use std::time::Instant;

use dyno_model::names::{label, telemetry};
use dyno_model::{Direction, Metric, Unit};

use crate::scrape::{ScrapeSeries, per_op};

/// The share of the sessions' sampled time, in percent, spent waiting on
/// one kind of thing (locks, I/O, PostgreSQL's own locks) at which that
/// kind is named as what limited the run.
pub(crate) const WAITING_SHARE: f64 = 30.0;

/// A wait event's share is kept as a metric from this share up (the
/// rest would be a long tail of labels).
const SHOWN_SHARE: f64 = 0.5;

impl ScrapeSeries {
    /// How much a count that a source starts only once it first sees it
    /// grew from `from` to `to` (absent before: 0).
    fn grown(&self, key: &str, from: Instant, to: Instant) -> f64 {
        let end = self.value_at(key, to).unwrap_or(0.0);
        let start = self.value_at(key, from).unwrap_or(0.0);
        (end - start).max(0.0)
    }

    /// The database's commits from `from` to `to`, less the probe's own
    /// (one per reading).
    fn commits(&self, from: Instant, to: Instant) -> Option<f64> {
        let all = self.delta("pg/db/xact_commit", from, to)?;
        Some((all - self.grown("pg/probe/xacts", from, to)).max(0.0))
    }

    /// PostgreSQL's findings over `covered` (the part of the run's
    /// `window` the readings cover), with `operations` requests or
    /// transactions ended in it.
    pub(crate) fn postgres(
        &self,
        window: (Instant, Instant),
        covered: (Instant, Instant),
        operations: u64,
        push: &mut impl FnMut(Metric),
        saturated: &mut Vec<(&'static str, String)>,
    ) {
        let (from, to) = covered;
        let name = self.name();
        self.commit_rate(window, covered, push);
        self.pg_counts(covered, push);
        self.written_per_op(covered, operations, push);
        self.checkpoints(covered, push);
        self.waits(from, to, &name, push, saturated);
    }

    /// The commits per second over `covered`, and in each second of the
    /// run's own `window`.
    fn commit_rate(
        &self,
        window: (Instant, Instant),
        covered: (Instant, Instant),
        push: &mut impl FnMut(Metric),
    ) {
        let (from, to) = covered;
        let secs = (to - from).as_secs_f64();
        let Some(commits) = self.commits(from, to) else {
            return;
        };
        push(
            Metric::new(
                telemetry::TARGET_PG_COMMITS_PER_SEC,
                Unit::OpsPerSec,
                Direction::HigherIsBetter,
                commits / secs,
            )
            .context(),
        );
        let seconds = crate::watch::per_second(window.0, window.1, |a, b| {
            let (a, b) = self.covered(a, b)?;
            Some(self.commits(a, b)? / (b - a).as_secs_f64())
        });
        if !seconds.is_empty() {
            let mut m = Metric::new(
                telemetry::TIMELINE_TARGET_PG_COMMITS_PER_SEC,
                Unit::OpsPerSec,
                Direction::HigherIsBetter,
                commits / secs,
            )
            .context();
            m.samples = seconds;
            push(m);
        }
    }

    /// What the counters that only ever should stay low counted over
    /// `covered` (rollbacks, deadlocks, temporary bytes, WAL trouble,
    /// backends writing buffers), and the cache's hit share.
    fn pg_counts(&self, covered: (Instant, Instant), push: &mut impl FnMut(Metric)) {
        let (from, to) = covered;
        for (key, metric, unit) in [
            (
                "pg/db/xact_rollback",
                telemetry::TARGET_PG_ROLLBACKS,
                Unit::Count,
            ),
            (
                "pg/db/deadlocks",
                telemetry::TARGET_PG_DEADLOCKS,
                Unit::Count,
            ),
            (
                "pg/db/temp_bytes",
                telemetry::TARGET_PG_TEMP_BYTES,
                Unit::Bytes,
            ),
            (
                "pg/wal/wal_fpi",
                telemetry::TARGET_PG_WAL_FULL_PAGE_IMAGES,
                Unit::Count,
            ),
            (
                "pg/wal/wal_buffers_full",
                telemetry::TARGET_PG_WAL_BUFFERS_FULL,
                Unit::Count,
            ),
            (
                "pg/bgwriter/buffers_backend",
                telemetry::TARGET_PG_BACKEND_BUFFER_WRITES,
                Unit::Count,
            ),
        ] {
            if let Some(d) = self.delta(key, from, to) {
                push(Metric::new(metric, unit, Direction::LowerIsBetter, d).context());
            }
        }
        let hit = self.delta("pg/db/blks_hit", from, to).unwrap_or(0.0);
        let read = self.delta("pg/db/blks_read", from, to).unwrap_or(0.0);
        if hit + read > 0.0 {
            push(
                Metric::new(
                    telemetry::TARGET_PG_CACHE_HIT_PERCENT,
                    Unit::Percent,
                    Direction::HigherIsBetter,
                    100.0 * hit / (hit + read),
                )
                .context(),
            );
        }
    }

    /// Rows written and WAL over `covered`, per transaction (or request)
    /// when any of the `operations` ended.
    fn written_per_op(
        &self,
        covered: (Instant, Instant),
        operations: u64,
        push: &mut impl FnMut(Metric),
    ) {
        let (from, to) = covered;
        let secs = (to - from).as_secs_f64();
        let written: Option<f64> = ["tup_inserted", "tup_updated", "tup_deleted"]
            .iter()
            .map(|c| self.delta(&format!("pg/db/{c}"), from, to))
            .sum();
        if let Some(m) = written.and_then(|rows| {
            per_op(
                telemetry::TARGET_PG_ROWS_WRITTEN_PER_OP,
                Unit::Count,
                rows,
                operations,
                telemetry::TARGET_PG_COMMITS_PER_SEC,
            )
        }) {
            push(m);
        }
        if let Some(wal) = self.delta("pg/wal/wal_bytes", from, to) {
            push(
                Metric::new(
                    telemetry::TARGET_PG_WAL_BYTES_PER_SEC,
                    Unit::Bytes,
                    Direction::LowerIsBetter,
                    wal / secs,
                )
                .context(),
            );
            if let Some(m) = per_op(
                telemetry::TARGET_PG_WAL_BYTES_PER_OP,
                Unit::Bytes,
                wal,
                operations,
                telemetry::TARGET_PG_WAL_BYTES_PER_SEC,
            ) {
                push(m);
            }
        }
    }

    /// The checkpoints over `covered`, and how many were requested:
    /// pg_stat_bgwriter's columns up to PostgreSQL 16,
    /// pg_stat_checkpointer's from 17.
    fn checkpoints(&self, covered: (Instant, Instant), push: &mut impl FnMut(Metric)) {
        let (from, to) = covered;
        let checkpoints = [
            (
                "pg/bgwriter/checkpoints_timed",
                "pg/bgwriter/checkpoints_req",
            ),
            ("pg/checkpointer/num_timed", "pg/checkpointer/num_requested"),
        ]
        .iter()
        .find_map(|(timed, requested)| {
            Some((
                self.delta(timed, from, to)?,
                self.delta(requested, from, to)?,
            ))
        });
        if let Some((timed, requested)) = checkpoints {
            push(
                Metric::new(
                    telemetry::TARGET_PG_CHECKPOINTS,
                    Unit::Count,
                    Direction::LowerIsBetter,
                    timed + requested,
                )
                .context(),
            );
            push(
                Metric::new(
                    telemetry::TARGET_PG_CHECKPOINTS_REQUESTED,
                    Unit::Count,
                    Direction::LowerIsBetter,
                    requested,
                )
                .context(),
            );
        }
    }

    /// Where the sampled sessions spent their time: each wait event's
    /// share, the mean number of sessions, and the verdict when one kind
    /// of wait took [`WAITING_SHARE`] of it.
    fn waits(
        &self,
        from: Instant,
        to: Instant,
        name: &str,
        push: &mut impl FnMut(Metric),
        saturated: &mut Vec<(&'static str, String)>,
    ) {
        let sessions = self.grown("pg/activity/sessions", from, to);
        let samples = self.grown("pg/activity/samples", from, to);
        if samples <= 0.0 {
            return;
        }
        push(
            Metric::new(
                telemetry::TARGET_PG_SESSIONS_MEAN,
                Unit::Count,
                Direction::LowerIsBetter,
                sessions / samples,
            )
            .context(),
        );
        if sessions <= 0.0 {
            return;
        }
        let mut shares: Vec<(String, f64)> = self
            .names("pg/activity/wait/", "")
            .into_iter()
            .map(|event| {
                let n = self.grown(&format!("pg/activity/wait/{event}"), from, to);
                (event, 100.0 * n / sessions)
            })
            .filter(|(_, share)| *share > 0.0)
            .collect();
        shares.sort_by(|a, b| b.1.total_cmp(&a.1));
        for (event, share) in shares.iter().filter(|(_, s)| *s >= SHOWN_SHARE) {
            let mut m = Metric::new(
                telemetry::TARGET_PG_WAIT_PERCENT,
                Unit::Percent,
                Direction::LowerIsBetter,
                *share,
            )
            .diagnostic();
            m.labels.insert(label::EVENT.into(), event.clone());
            push(m);
        }
        let kinds = [
            (
                "Lock:",
                "lock_waits",
                "waited on locks",
                "transactions queue for the same rows (fewer clients, more rows to spread them over, or shorter transactions)",
            ),
            (
                "IO:",
                "io_waits",
                "waited on I/O",
                "the disk under the data or the WAL limits (its flush latency, synchronous_commit, shared_buffers)",
            ),
            (
                "LWLock:",
                "lwlock_waits",
                "waited on PostgreSQL's internal locks",
                "sessions contend inside the server (for the WAL, for buffers)",
            ),
        ];
        let mut found: Vec<(f64, &'static str, String)> = kinds
            .iter()
            .filter_map(|(prefix, code, what, why)| {
                let of: Vec<&(String, f64)> =
                    shares.iter().filter(|(e, _)| e.starts_with(prefix)).collect();
                let total: f64 = of.iter().map(|(_, s)| s).sum();
                (total >= WAITING_SHARE).then(|| {
                    let top: Vec<String> = of
                        .iter()
                        .take(3)
                        .map(|(e, s)| format!("{e} {s:.0}%"))
                        .collect();
                    (
                        total,
                        *code,
                        format!(
                            "PostgreSQL {name}'s sessions {what} {total:.0}% of their sampled time ({}): {why}",
                            top.join(", ")
                        ),
                    )
                })
            })
            .collect();
        found.sort_by(|a, b| b.0.total_cmp(&a.0));
        saturated.extend(found.into_iter().map(|(_, code, line)| (code, line)));
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;
    use std::time::Duration;

    use super::*;
    use crate::scrape::Scrape;

    /// Readings 200 ms apart of cumulative values.
    fn series(readings: &[&[(&str, f64)]]) -> (ScrapeSeries, Instant) {
        let t0 = Instant::now();
        let scrapes = readings
            .iter()
            .enumerate()
            .map(|(i, values)| Scrape {
                at: t0 + Duration::from_millis(200 * i as u64),
                values: values
                    .iter()
                    .map(|(k, v)| ((*k).to_owned(), *v))
                    .collect::<BTreeMap<_, _>>(),
                skipped_lines: 0,
                clock: None,
            })
            .collect();
        (
            ScrapeSeries {
                url: "postgresql://127.0.0.1:5432/bench".into(),
                scrapes,
                ..ScrapeSeries::default()
            },
            t0,
        )
    }

    fn value(metrics: &[Metric], name: &str, event: Option<&str>) -> Option<f64> {
        metrics
            .iter()
            .find(|m| m.name == name && m.label("event") == event)
            .map(|m| m.value)
    }

    #[test]
    fn the_probes_own_commits_are_left_out_and_figures_are_per_transaction() {
        let (s, t0) = series(&[
            &[
                ("pg/db/xact_commit", 1000.0),
                ("pg/probe/xacts", 1.0),
                ("pg/wal/wal_bytes", 0.0),
                ("pg/db/tup_updated", 0.0),
                ("pg/db/tup_inserted", 0.0),
                ("pg/db/tup_deleted", 0.0),
            ],
            &[
                // 5 readings later: 400 of the run's commits and the
                // probe's 5.
                ("pg/db/xact_commit", 1405.0),
                ("pg/probe/xacts", 6.0),
                ("pg/wal/wal_bytes", 40_000.0),
                ("pg/db/tup_updated", 1200.0),
                ("pg/db/tup_inserted", 400.0),
                ("pg/db/tup_deleted", 0.0),
            ],
        ]);
        let f = s.findings(t0, t0 + Duration::from_millis(200), 400);
        let m = &f.metrics;
        assert_eq!(value(m, "target_pg_commits_per_sec", None), Some(2000.0));
        assert_eq!(value(m, "target_pg_wal_bytes_per_op", None), Some(100.0));
        assert_eq!(value(m, "target_pg_rows_written_per_op", None), Some(4.0));
        assert!(
            m.iter()
                .all(|m| m.label("watched") == Some("127.0.0.1:5432/bench"))
        );
        assert!(f.saturated.is_empty());
    }

    #[test]
    fn sessions_mostly_waiting_on_locks_are_the_verdict_and_events_first_seen_late_count() {
        let (s, t0) = series(&[
            &[
                ("pg/activity/samples", 1.0),
                ("pg/activity/sessions", 4.0),
                ("pg/activity/wait/CPU", 4.0),
            ],
            &[
                // Nine more samples of four sessions: three waiting on a
                // row lock in each, first seen after the window opened.
                ("pg/activity/samples", 10.0),
                ("pg/activity/sessions", 40.0),
                ("pg/activity/wait/CPU", 13.0),
                ("pg/activity/wait/Lock:transactionid", 27.0),
            ],
        ]);
        let f = s.findings(t0, t0 + Duration::from_millis(200), 0);
        let m = &f.metrics;
        assert_eq!(value(m, "target_pg_sessions_mean", None), Some(4.0));
        assert_eq!(
            value(m, "target_pg_wait_percent", Some("Lock:transactionid")),
            Some(75.0)
        );
        assert_eq!(value(m, "target_pg_wait_percent", Some("CPU")), Some(25.0));
        let codes: Vec<&str> = f.saturated.iter().map(|(c, _)| *c).collect();
        assert_eq!(codes, ["lock_waits"]);
        assert!(
            f.saturated[0].1.contains("Lock:transactionid 75%"),
            "{:?}",
            f.saturated
        );
    }

    #[test]
    fn sessions_busy_on_their_own_cpu_or_idle_are_no_wait_verdict() {
        let (s, t0) = series(&[
            &[("pg/activity/samples", 0.0), ("pg/activity/sessions", 0.0)],
            &[
                ("pg/activity/samples", 10.0),
                ("pg/activity/sessions", 20.0),
                ("pg/activity/wait/CPU", 10.0),
                ("pg/activity/wait/idle", 6.0),
                ("pg/activity/wait/IO:WALSync", 4.0),
            ],
        ]);
        let f = s.findings(t0, t0 + Duration::from_millis(200), 0);
        assert!(f.saturated.is_empty(), "{:?}", f.saturated);
        assert_eq!(
            value(&f.metrics, "target_pg_wait_percent", Some("IO:WALSync")),
            Some(20.0)
        );
    }
}
