//! The passes of a whole run: for every test and every operation, one
//! discarded warm-up pass, then `runs` timed passes with a pause between
//! them (CrystalDiskMark's "interval", which lets a drive's cache drain).
//! Every timed pass is kept; the best is what CrystalDiskMark reports.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use crate::engine::{EngineKind, IoFailure, Job, PassStats, run_pass};
use crate::spec::{Op, TestSpec};
use crate::target::{TargetError, TestFile};

/// How many passes, how long, and how far apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Passes {
    /// Timed passes per test and operation.
    pub runs: u32,
    /// Length of each pass.
    pub duration: Duration,
    /// Pause between passes (and between tests).
    pub interval: Duration,
    /// Length of the discarded warm-up pass; zero skips it.
    pub warmup: Duration,
}

/// All timed passes of one test and operation.
#[derive(Debug, Clone)]
pub struct Measurement {
    /// "SEQ1M Q8T1", "fdatasync 8K", "create".
    pub test: String,
    /// The block test it came from, for throughput tests.
    pub spec: Option<TestSpec>,
    /// "read", "write", "mix70", or for sync and meta tests the call timed.
    pub op: String,
    pub passes: Vec<PassStats>,
}

impl Measurement {
    /// The pass with the most I/Os per second (the most bytes per second
    /// for a fixed block size): the figure CrystalDiskMark reports.
    pub fn best(&self) -> Option<&PassStats> {
        self.passes
            .iter()
            .max_by(|a, b| a.iops().total_cmp(&b.iops()))
    }

    /// The median of the passes' bytes per second.
    pub fn median_bytes_per_sec(&self) -> f64 {
        median(self.passes.iter().map(PassStats::bytes_per_sec).collect())
    }

    /// The median of the passes' operations per second.
    pub fn median_iops(&self) -> f64 {
        median(self.passes.iter().map(PassStats::iops).collect())
    }
}

/// The median of `values` (0 when empty).
pub fn median(mut values: Vec<f64>) -> f64 {
    if values.is_empty() {
        return 0.0;
    }
    values.sort_by(f64::total_cmp);
    let mid = values.len() / 2;
    if values.len() % 2 == 1 {
        values[mid]
    } else {
        (values[mid - 1] + values[mid]) / 2.0
    }
}

/// Where the run is, for a progress line.
#[derive(Debug, Clone)]
pub struct Progress {
    pub test: String,
    pub op: String,
    /// 0 for the warm-up, then 1..=runs.
    pub pass: u32,
    pub runs: u32,
    /// The pass just finished, in bytes per second and I/Os per second.
    pub bytes_per_sec: f64,
    pub iops: f64,
}

impl Progress {
    /// Pass `pass` of `runs` of `test` as `op` has just measured `stats`.
    pub fn of(test: &str, op: &str, pass: u32, runs: u32, stats: &PassStats) -> Progress {
        Progress {
            test: test.to_owned(),
            op: op.to_owned(),
            pass,
            runs,
            bytes_per_sec: stats.bytes_per_sec(),
            iops: stats.iops(),
        }
    }
}

/// Why a run stopped with an error.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    #[error(transparent)]
    Target(#[from] TargetError),
    #[error("{test} {op} failed")]
    Io {
        test: String,
        op: String,
        #[source]
        source: IoFailure,
    },
}

impl RunError {
    fn io(test: String, op: String, source: IoFailure) -> RunError {
        if source.source.raw_os_error() == Some(libc::ENOSPC) {
            RunError::Target(TargetError::Full {
                what: format!("{test} {op} wrote at offset {}", source.offset),
            })
        } else {
            RunError::Io { test, op, source }
        }
    }
}

/// Sleeps `d`, waking early when `stop` is set.
pub(crate) fn pause(d: Duration, stop: &AtomicBool) {
    let until = Instant::now() + d;
    while !stop.load(Ordering::Relaxed) {
        let left = until.saturating_duration_since(Instant::now());
        if left.is_zero() {
            break;
        }
        std::thread::sleep(left.min(Duration::from_millis(50)));
    }
}

/// Runs warm-up plus `runs` passes of `one`, pausing between them;
/// returns the timed passes (fewer when `stop` is set).
pub(crate) fn passes<E>(
    passes: &Passes,
    stop: &AtomicBool,
    mut one: impl FnMut(Duration) -> Result<PassStats, E>,
    mut done: impl FnMut(u32, &PassStats),
) -> Result<Vec<PassStats>, E> {
    let mut kept = Vec::with_capacity(passes.runs as usize);
    if !passes.warmup.is_zero() {
        let warm = one(passes.warmup)?;
        done(0, &warm);
    }
    for i in 1..=passes.runs {
        if stop.load(Ordering::Relaxed) {
            break;
        }
        if i > 1 {
            pause(passes.interval, stop);
            if stop.load(Ordering::Relaxed) {
                break;
            }
        }
        let pass = one(passes.duration)?;
        done(i, &pass);
        // A pass cut short by Ctrl-C still counts what it moved.
        if pass.ios() > 0 {
            kept.push(pass);
        }
    }
    Ok(kept)
}

/// The block tests of a run: each test runs as each operation.
#[derive(Debug, Clone)]
pub struct BlockPlan {
    pub tests: Vec<TestSpec>,
    pub ops: Vec<Op>,
    pub passes: Passes,
    /// Seeds the random offsets and mixes (recorded with the run).
    pub seed: u64,
}

/// Runs every block test of `plan` as every operation on `file`.
pub fn run_block_tests(
    file: &TestFile,
    engine: &EngineKind,
    plan: &BlockPlan,
    stop: &AtomicBool,
    mut progress: impl FnMut(&Progress),
) -> Result<Vec<Measurement>, RunError> {
    let BlockPlan {
        tests,
        ops,
        passes: settings,
        seed,
    } = plan;
    let seed = *seed;
    let mut out = Vec::new();
    let align = file.mode().memory_align();
    let mut first = true;
    'tests: for (t, spec) in tests.iter().enumerate() {
        for (o, op) in ops.iter().enumerate() {
            if stop.load(Ordering::Relaxed) {
                break 'tests;
            }
            if !first {
                pause(settings.interval, stop);
            }
            first = false;
            let (test, op_name) = (spec.to_string(), op.name());
            let mut pass_seed = seed ^ ((t as u64) << 32 | o as u64);
            let kept = passes(
                settings,
                stop,
                |duration| {
                    file.drop_cache();
                    pass_seed = pass_seed.wrapping_add(0x9E37_79B9);
                    let job = Job {
                        spec: *spec,
                        op: *op,
                        duration,
                        span: file.size(),
                        seed: pass_seed,
                    };
                    run_pass(engine, file.file(), align, &job, stop)
                        .map_err(|e| RunError::io(test.clone(), op_name.clone(), e))
                },
                |pass, stats| progress(&Progress::of(&test, &op_name, pass, settings.runs, stats)),
            )?;
            out.push(Measurement {
                test,
                spec: Some(*spec),
                op: op_name,
                passes: kept,
            });
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pass(ios: u64, millis: u64) -> PassStats {
        let mut p = crate::engine::empty_pass();
        p.reads = ios;
        p.bytes_read = ios * 4096;
        p.elapsed = Duration::from_millis(millis);
        p
    }

    #[test]
    fn the_best_pass_is_the_fastest_and_the_median_is_the_middle() {
        let m = Measurement {
            test: "RND4K Q1T1".into(),
            spec: None,
            op: "read".into(),
            passes: vec![pass(100, 1000), pass(300, 1000), pass(200, 1000)],
        };
        assert_eq!(m.best().unwrap().reads, 300);
        assert_eq!(m.median_iops(), 200.0);
        assert_eq!(m.median_bytes_per_sec(), 200.0 * 4096.0);
        assert_eq!(median(vec![4.0, 1.0, 3.0, 2.0]), 2.5);
        assert_eq!(median(Vec::new()), 0.0);
    }

    #[test]
    fn warmup_is_discarded_and_passes_are_spaced() {
        let stop = AtomicBool::new(false);
        let settings = Passes {
            runs: 3,
            duration: Duration::from_millis(5),
            interval: Duration::from_millis(30),
            warmup: Duration::from_millis(1),
        };
        let mut asked = Vec::new();
        let mut seen = Vec::new();
        let started = Instant::now();
        let kept = passes::<()>(
            &settings,
            &stop,
            |d| {
                asked.push(d);
                Ok(pass(asked.len() as u64, 5))
            },
            |i, _| seen.push(i),
        )
        .unwrap();
        assert_eq!(asked, [1, 5, 5, 5].map(Duration::from_millis));
        assert_eq!(seen, [0, 1, 2, 3]);
        assert_eq!(
            kept.iter().map(|p| p.reads).collect::<Vec<_>>(),
            [2, 3, 4],
            "the warm-up pass (1) is not kept"
        );
        assert!(started.elapsed() >= Duration::from_millis(60), "two pauses");
    }

    #[test]
    fn stop_ends_the_passes_and_keeps_what_was_measured() {
        let stop = AtomicBool::new(false);
        let settings = Passes {
            runs: 5,
            duration: Duration::from_millis(1),
            interval: Duration::from_secs(60),
            warmup: Duration::ZERO,
        };
        let started = Instant::now();
        let kept = passes::<()>(
            &settings,
            &stop,
            |_| Ok(pass(1, 1)),
            |_, _| stop.store(true, Ordering::Relaxed),
        )
        .unwrap();
        assert_eq!(kept.len(), 1);
        assert!(started.elapsed() < Duration::from_secs(30), "no 60 s pause");
    }
}
