//! pgbench's transaction logs (`-l`): one line per transaction, or with
//! `--aggregate-interval` one line per interval, in pgbench's own format,
//! so that the scripts people keep for pgbench's logs read dyno's.
//!
//! Each thread writes its own file, as pgbench's threads do:
//! `PREFIX.PID` for the first, `PREFIX.PID.N` for thread N. A line is
//! written when its transaction ends; an interval when a later
//! transaction ends past it, and the last one at the end of the run.
//!
//! Per transaction: `client tx latency_us script epoch_s epoch_us [lag_us]
//! [retries]`, the client's transactions numbered from 1, where a failed
//! transaction has `failed` (with `--failures-detailed`, `serialization`
//! or `deadlock`) in place of its latency, and a skipped one `skipped`.
//! Per interval, the fifteen columns PostgreSQL 15's pgbench writes:
//! `start_s count sum sum² min max lag_sum lag_sum² lag_min lag_max
//! skipped retried retries serialization_failures deadlock_failures`,
//! latencies in microseconds, the lag's columns 0 without a rate.

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// What the user asked of the logs.
#[derive(Debug, Clone, PartialEq)]
pub struct LogSettings {
    /// The files' names start with this (pgbench's `--log-prefix`,
    /// `pgbench_log` by default), in the current directory unless it says
    /// otherwise.
    pub prefix: String,
    /// `--aggregate-interval`: one line per interval instead of one per
    /// transaction.
    pub aggregate: Option<Duration>,
    /// `--sampling-rate`: the share of transactions logged (per-transaction
    /// logs only).
    pub sampling: Option<f64>,
    /// `--failures-detailed`: failures by kind.
    pub failures_detailed: bool,
}

/// How a logged transaction ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ended {
    Committed,
    /// Failed after its tries: a serialization failure (40001), a
    /// deadlock (40P01), or anything else a retry could not mend.
    Serialization,
    Deadlock,
    /// Skipped, already later than `-L` when its turn came.
    Skipped,
}

impl Ended {
    /// The failure kind of a SQLSTATE.
    pub fn failure(code: &str) -> Ended {
        match code {
            "40P01" => Ended::Deadlock,
            _ => Ended::Serialization,
        }
    }
}

/// One transaction's line.
#[derive(Debug, Clone, Copy)]
pub struct Entry {
    /// The whole run's client number.
    pub client: u64,
    /// The client's transaction number, from 0.
    pub tx: u64,
    pub script: usize,
    pub ended: Ended,
    /// When it ended.
    pub at: Instant,
    /// From its start (its due time in the open model) to its end.
    pub latency: Duration,
    /// Open model: from its due time to its start.
    pub lag: Option<Duration>,
    /// Tries after the first.
    pub retries: u32,
}

/// The columns a run's per-transaction lines have, which its flags
/// decide.
#[derive(Debug, Clone, Copy)]
pub struct Columns {
    /// `-R` or `--rate-plan`: the schedule lag.
    pub lag: bool,
    /// `--max-tries` other than 1: the retries.
    pub retries: bool,
}

/// One interval's sums, in microseconds.
#[derive(Debug, Clone, Copy, Default)]
struct Sums {
    count: u64,
    sum: f64,
    sum2: f64,
    min: f64,
    max: f64,
}

impl Sums {
    fn add(&mut self, v: f64) {
        if self.count == 0 || v < self.min {
            self.min = v;
        }
        if self.count == 0 || v > self.max {
            self.max = v;
        }
        self.count += 1;
        self.sum += v;
        self.sum2 += v * v;
    }
}

#[derive(Debug, Clone, Copy, Default)]
struct Interval {
    /// Its start, in microseconds since the epoch.
    start_us: u64,
    latency: Sums,
    lag: Sums,
    serialization: u64,
    deadlocks: u64,
    skipped: u64,
    retried: u64,
    retries: u64,
}

/// A thread's log file.
#[derive(Debug)]
pub struct TxLog {
    path: PathBuf,
    out: BufWriter<File>,
    settings: LogSettings,
    columns: Columns,
    /// The wall clock at an instant: where `Instant`s are put on the epoch.
    base: (SystemTime, Instant),
    interval: Option<Interval>,
    rng: fastrand::Rng,
    /// The first write that failed: the rest are not tried.
    failed: Option<io::Error>,
}

impl TxLog {
    /// Creates thread `thread`'s file (see the module's names); `start`
    /// is when the run started, the first interval's start.
    pub fn create(
        settings: &LogSettings,
        columns: Columns,
        thread: usize,
        start: Instant,
        seed: u64,
    ) -> Result<TxLog, String> {
        let path = path(&settings.prefix, std::process::id(), thread);
        let file = File::create(&path).map_err(|e| {
            format!(
                "could not create the transaction log {}: {e}; give a writable place with --log-prefix DIR/NAME",
                path.display()
            )
        })?;
        let now = (SystemTime::now(), Instant::now());
        let start_us = micros(wall(now, start));
        Ok(TxLog {
            path,
            out: BufWriter::with_capacity(64 * 1024, file),
            settings: settings.clone(),
            columns,
            base: now,
            interval: settings.aggregate.map(|_| Interval {
                start_us,
                ..Interval::default()
            }),
            rng: fastrand::Rng::with_seed(seed),
            failed: None,
        })
    }

    /// The run started at `start`: the first interval starts there.
    pub fn begin(&mut self, start: Instant) {
        let start_us = micros(wall(self.base, start));
        if let Some(i) = self.interval.as_mut() {
            i.start_us = start_us;
        }
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Logs a transaction that ended.
    pub fn log(&mut self, e: &Entry) {
        if self.failed.is_some() {
            return;
        }
        let result = match self.settings.aggregate {
            Some(every) => self.aggregate(e, every),
            None => {
                if self
                    .settings
                    .sampling
                    .is_some_and(|rate| self.rng.f64() >= rate)
                {
                    return;
                }
                self.line(e)
            }
        };
        if let Err(err) = result {
            self.failed = Some(err);
        }
    }

    fn line(&mut self, e: &Entry) -> io::Result<()> {
        let at = micros(wall(self.base, e.at));
        let what = match e.ended {
            Ended::Committed => format!("{}", micros(e.latency)),
            Ended::Skipped => "skipped".to_owned(),
            Ended::Serialization if self.settings.failures_detailed => "serialization".to_owned(),
            Ended::Deadlock if self.settings.failures_detailed => "deadlock".to_owned(),
            Ended::Serialization | Ended::Deadlock => "failed".to_owned(),
        };
        write!(
            self.out,
            "{} {} {what} {} {} {}",
            e.client,
            e.tx,
            e.script,
            at / 1_000_000,
            at % 1_000_000
        )?;
        if self.columns.lag {
            write!(self.out, " {}", e.lag.map_or(0, micros))?;
        }
        if self.columns.retries {
            write!(self.out, " {}", e.retries)?;
        }
        writeln!(self.out)
    }

    fn aggregate(&mut self, e: &Entry, every: Duration) -> io::Result<()> {
        let at = micros(wall(self.base, e.at));
        let every = micros(every).max(1);
        let Some(mut interval) = self.interval else {
            return Ok(());
        };
        // Closes the intervals before this one, empty ones included.
        while interval.start_us + every <= at {
            self.write_interval(&interval)?;
            interval = Interval {
                start_us: interval.start_us + every,
                ..Interval::default()
            };
        }
        if e.ended == Ended::Skipped {
            interval.skipped += 1;
        } else {
            if e.retries > 0 {
                interval.retried += 1;
                interval.retries += u64::from(e.retries);
            }
            match e.ended {
                Ended::Committed => {
                    interval.latency.add(micros(e.latency) as f64);
                    if let Some(lag) = e.lag {
                        interval.lag.add(micros(lag) as f64);
                    }
                }
                Ended::Serialization => interval.serialization += 1,
                Ended::Deadlock => interval.deadlocks += 1,
                Ended::Skipped => {}
            }
        }
        self.interval = Some(interval);
        Ok(())
    }

    fn write_interval(&mut self, i: &Interval) -> io::Result<()> {
        let (l, g) = (&i.latency, &i.lag);
        writeln!(
            self.out,
            "{} {} {:.0} {:.0} {:.0} {:.0} {:.0} {:.0} {:.0} {:.0} {} {} {} {} {}",
            i.start_us / 1_000_000,
            l.count,
            l.sum,
            l.sum2,
            l.min,
            l.max,
            g.sum,
            g.sum2,
            g.min,
            g.max,
            i.skipped,
            i.retried,
            i.retries,
            i.serialization,
            i.deadlocks
        )
    }

    /// Writes what is left (the last interval, if anything ended in it)
    /// and flushes the file; the first error of the run, if any.
    pub fn finish(mut self) -> Result<PathBuf, String> {
        if self.failed.is_none()
            && let Some(i) = self.interval.take()
            && (i.latency.count + i.serialization + i.deadlocks + i.skipped) > 0
            && let Err(e) = self.write_interval(&i)
        {
            self.failed = Some(e);
        }
        if self.failed.is_none()
            && let Err(e) = self.out.flush()
        {
            self.failed = Some(e);
        }
        match self.failed {
            None => Ok(self.path),
            Some(e) => Err(format!(
                "the transaction log {} could not be written: {e}; it is incomplete",
                self.path.display()
            )),
        }
    }
}

/// pgbench's name of thread `thread`'s log.
fn path(prefix: &str, pid: u32, thread: usize) -> PathBuf {
    if thread == 0 {
        PathBuf::from(format!("{prefix}.{pid}"))
    } else {
        PathBuf::from(format!("{prefix}.{pid}.{thread}"))
    }
}

/// The wall-clock time of `at`, given the wall clock at one instant.
fn wall(base: (SystemTime, Instant), at: Instant) -> Duration {
    let (now, then) = base;
    let time = if at >= then {
        now + (at - then)
    } else {
        now - (then - at)
    };
    time.duration_since(UNIX_EPOCH).unwrap_or_default()
}

fn micros(d: Duration) -> u64 {
    u64::try_from(d.as_micros()).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings(dir: &Path, aggregate: Option<Duration>, detailed: bool) -> LogSettings {
        LogSettings {
            prefix: dir.join("log").to_str().unwrap().to_owned(),
            aggregate,
            sampling: None,
            failures_detailed: detailed,
        }
    }

    fn entry(at: Instant, ended: Ended, latency_ms: u64, retries: u32) -> Entry {
        Entry {
            client: 3,
            tx: 7,
            script: 1,
            ended,
            at,
            latency: Duration::from_millis(latency_ms),
            lag: Some(Duration::from_micros(250)),
            retries,
        }
    }

    const ALL: Columns = Columns {
        lag: true,
        retries: true,
    };

    #[test]
    fn a_transaction_line_has_pgbenchs_columns() {
        let dir = tempfile::tempdir().unwrap();
        let start = Instant::now();
        let mut log = TxLog::create(&settings(dir.path(), None, true), ALL, 2, start, 1).unwrap();
        log.log(&entry(start, Ended::Committed, 12, 0));
        log.log(&entry(start, Ended::Deadlock, 5, 2));
        log.log(&entry(start, Ended::Skipped, 0, 0));
        let path = log.finish().unwrap();
        assert!(
            path.to_str()
                .unwrap()
                .ends_with(&format!("log.{}.2", std::process::id()))
        );
        let text = std::fs::read_to_string(path).unwrap();
        let lines: Vec<Vec<&str>> = text.lines().map(|l| l.split(' ').collect()).collect();
        assert_eq!(lines.len(), 3, "{text}");
        assert_eq!(lines[0][..4], ["3", "7", "12000", "1"]);
        assert_eq!(lines[0][6..], ["250", "0"]);
        assert_eq!(lines[1][2], "deadlock");
        assert_eq!(lines[1][7], "2");
        assert_eq!(lines[2][2], "skipped");
        // Epoch seconds and microseconds of now.
        let secs: u64 = lines[0][4].parse().unwrap();
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_secs();
        assert!(now - secs < 60, "{secs} against {now}");
        assert!(lines[0][5].parse::<u64>().unwrap() < 1_000_000);
    }

    #[test]
    fn intervals_sum_latencies_and_count_failures_and_empty_intervals() {
        let dir = tempfile::tempdir().unwrap();
        let start = Instant::now();
        let every = Duration::from_secs(1);
        let mut log =
            TxLog::create(&settings(dir.path(), Some(every), false), ALL, 0, start, 1).unwrap();
        let at = |ms: u64| start + Duration::from_millis(ms);
        log.log(&entry(at(100), Ended::Committed, 2, 0));
        log.log(&entry(at(200), Ended::Committed, 4, 1));
        log.log(&entry(at(300), Ended::Serialization, 9, 3));
        // Nothing in the second interval; one skipped in the third.
        log.log(&entry(at(2500), Ended::Skipped, 0, 0));
        let text = std::fs::read_to_string(log.finish().unwrap()).unwrap();
        let lines: Vec<Vec<u64>> = text
            .lines()
            .map(|l| l.split(' ').map(|v| v.parse().unwrap()).collect())
            .collect();
        assert_eq!(lines.len(), 3, "{text}");
        let first = &lines[0];
        // count, sum, sum², min, max, lag ×4, skipped, retried, retries,
        // serialization and deadlock failures
        assert_eq!(
            first[1..],
            [
                2, 6000, 20_000_000, 2000, 4000, 500, 125_000, 250, 250, 0, 2, 4, 1, 0
            ]
        );
        assert_eq!(lines[1][0], first[0] + 1);
        assert_eq!(lines[1][1..], [0; 14]);
        assert_eq!(lines[2][0], first[0] + 2);
        assert_eq!(lines[2][10], 1, "skipped");
    }

    #[test]
    fn sampling_keeps_about_its_share() {
        let dir = tempfile::tempdir().unwrap();
        let start = Instant::now();
        let mut s = settings(dir.path(), None, false);
        s.sampling = Some(0.1);
        let none = Columns {
            lag: false,
            retries: false,
        };
        let mut log = TxLog::create(&s, none, 0, start, 7).unwrap();
        for _ in 0..10_000 {
            log.log(&entry(start, Ended::Committed, 1, 0));
        }
        let text = std::fs::read_to_string(log.finish().unwrap()).unwrap();
        let n = text.lines().count();
        // Binomial(10000, 0.1): sd 30.
        assert!((850..=1150).contains(&n), "{n}");
        assert_eq!(text.lines().next().unwrap().split(' ').count(), 6);
    }

    #[test]
    fn a_log_that_cannot_be_created_says_where_and_what_to_do() {
        let s = LogSettings {
            prefix: "/nonexistent-dir/log".into(),
            aggregate: None,
            sampling: None,
            failures_detailed: false,
        };
        let none = Columns {
            lag: false,
            retries: false,
        };
        let err = TxLog::create(&s, none, 0, Instant::now(), 1).unwrap_err();
        assert!(
            err.contains("/nonexistent-dir/log.") && err.contains("--log-prefix"),
            "{err}"
        );
    }
}
