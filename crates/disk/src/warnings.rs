//! What makes a disk run's figures less trustworthy: the I/O path the
//! file ended up on, the engine, the fill, the CPUs against the I/O
//! threads, and what the passes saw ([`judge`]); and a file small enough
//! for caches to hold ([`small_file`]).
//!
//! Each warning is a [`DiskWarning`] with a stable code ([`dyno_model::Judgement`])
//! and a message for people (its `Display`); the binary turns them into
//! the run's [`dyno_model::Warning`]s. Nothing here prints.

use std::fmt;

use crate::engine::EngineKind;
use crate::run::Measurement;
use crate::target::{Fill, IoMode, format_bytes};

/// Below this a test file fits in the caches of SSDs, RAID controllers and
/// hypervisors (hundreds of MiB are common), so reads may never reach the
/// medium: the rule behind the `small_file` warning.
pub(crate) const CACHE_SIZE: u64 = 1 << 30;

/// One warning about a disk run.
#[derive(Debug, Clone, PartialEq)]
pub enum DiskWarning {
    /// The file could not be opened for direct I/O; `reason` says why.
    BufferedIo { reason: String },
    /// The pread/pwrite thread pool moved the data; `reason` says why.
    ThreadEngine { reason: String },
    /// io_uring moved buffered I/O.
    UringBuffered,
    /// The file holds zeros (`--fill zero`).
    ZeroFill,
    /// Tests (named) that ran more I/O threads than the process's `cpus`.
    Oversubscribed { tests: Vec<String>, cpus: usize },
    /// Tests whose I/O threads were busy at least 90% of the time: each
    /// test and operation ("SEQ1M Q8T1 read") with its busiest pass's
    /// percentage.
    EngineSaturated { tests: Vec<(String, f64)> },
    /// I/Os that moved fewer bytes than asked.
    ShortIo { count: u64 },
    /// An interrupt stopped the run early.
    Interrupted,
    /// A block-test file under [`CACHE_SIZE`].
    SmallFile { size_bytes: u64 },
}

impl dyno_model::Judgement for DiskWarning {
    /// The stable, machine-readable code.
    fn code(&self) -> &'static str {
        match self {
            DiskWarning::BufferedIo { .. } => "buffered_io",
            DiskWarning::ThreadEngine { .. } => "thread_engine",
            DiskWarning::UringBuffered => "uring_buffered",
            DiskWarning::ZeroFill => "zero_fill",
            DiskWarning::Oversubscribed { .. } => "oversubscribed",
            DiskWarning::EngineSaturated { .. } => "engine_saturated",
            DiskWarning::ShortIo { .. } => "short_io",
            DiskWarning::Interrupted => "interrupted",
            DiskWarning::SmallFile { .. } => "small_file",
        }
    }
}

impl fmt::Display for DiskWarning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DiskWarning::BufferedIo { reason: why } => write!(
                f,
                "buffered I/O, not direct: {why}. The figures include the page cache and may be far above the device's"
            ),
            DiskWarning::ThreadEngine { reason } => write!(
                f,
                "the pread/pwrite thread pool moved the data ({reason}); its CPU cost per I/O is higher than io_uring's"
            ),
            DiskWarning::UringBuffered => f.write_str(
                "io_uring moved buffered I/O: the kernel queues it to worker threads, which can make it many times slower than the thread pool (50x on tmpfs); --engine auto or threads measures the file system instead of that path",
            ),
            DiskWarning::ZeroFill => f.write_str(
                "the test file holds zeros (--fill zero): compressing or deduplicating storage may report speeds it cannot reach with real data",
            ),
            DiskWarning::Oversubscribed { tests: over, cpus } => write!(
                f,
                "{} {} more I/O threads than the {cpus} CPU{} this process may use: the threads take turns, so the figures may be bounded by this machine's CPUs rather than the storage",
                over.join(", "),
                if over.len() == 1 { "runs" } else { "run" },
                if *cpus == 1 { "" } else { "s" },
            ),
            DiskWarning::EngineSaturated { tests } => {
                let saturated: Vec<String> = tests
                    .iter()
                    .map(|(test, busy)| format!("{test} ({busy:.0}%)"))
                    .collect();
                write!(
                    f,
                    "dyno's I/O threads were busy at least 90% of the time in {}: the CPU, not the storage, may have set {} figures, so they are a lower bound for the storage",
                    saturated.join(", "),
                    if saturated.len() == 1 {
                        "that test's"
                    } else {
                        "those tests'"
                    },
                )
            }
            DiskWarning::ShortIo { count: short } => {
                write!(f, "{short} I/Os moved fewer bytes than asked")
            }
            DiskWarning::Interrupted => f.write_str(
                "interrupted (Ctrl-C, SIGTERM or SIGHUP): some tests or passes are missing",
            ),
            DiskWarning::SmallFile { size_bytes } => write!(
                f,
                "the {} test file is under 1 GiB: device, controller and host caches can hold it, so the figures may be the cache's rather than the storage's; use --size 1g or more (several GiB for devices with large caches or on a virtual machine)",
                format_bytes(*size_bytes)
            ),
        }
    }
}

/// Warnings that make the figures less trustworthy. `mode` is how the
/// test file's data moved (`None` for the meta tests, which have no test
/// file); `cpus`, the CPUs this process may use.
pub fn judge(
    mode: Option<&IoMode>,
    engine: &EngineKind,
    fill: Fill,
    measured: &[Measurement],
    interrupted: bool,
    cpus: usize,
) -> Vec<DiskWarning> {
    let mut warnings = Vec::new();
    if let Some(IoMode::Buffered { reason }) = mode {
        warnings.push(DiskWarning::BufferedIo {
            reason: reason.clone(),
        });
    }
    let buffered = matches!(mode, Some(IoMode::Buffered { .. }));
    match engine {
        // For buffered I/O the pool is the better engine, not a fallback.
        EngineKind::Threads { reason } if !(buffered && reason.starts_with("auto")) => {
            warnings.push(DiskWarning::ThreadEngine {
                reason: reason.clone(),
            });
        }
        EngineKind::IoUring if buffered => warnings.push(DiskWarning::UringBuffered),
        _ => {}
    }
    if fill == Fill::Zero {
        warnings.push(DiskWarning::ZeroFill);
    }
    let mut over: Vec<String> = measured
        .iter()
        .filter_map(|m| m.spec.as_ref())
        .filter(|t| engine.io_threads(t) > cpus as u64)
        .map(ToString::to_string)
        .collect();
    over.dedup();
    if !over.is_empty() {
        warnings.push(DiskWarning::Oversubscribed { tests: over, cpus });
    }
    let saturated: Vec<(String, f64)> = measured
        .iter()
        .filter_map(|m| {
            let threads = engine.io_threads(m.spec.as_ref()?) as usize;
            let busy = m
                .passes
                .iter()
                .filter_map(|p| p.busy_percent(threads.min(cpus)))
                .max_by(f64::total_cmp)?;
            (busy >= 90.0).then(|| (format!("{} {}", m.test, m.op), busy))
        })
        .collect();
    if !saturated.is_empty() {
        warnings.push(DiskWarning::EngineSaturated { tests: saturated });
    }
    let short: u64 = measured
        .iter()
        .flat_map(|m| &m.passes)
        .map(|p| p.short)
        .sum();
    if short > 0 {
        warnings.push(DiskWarning::ShortIo { count: short });
    }
    if interrupted {
        warnings.push(DiskWarning::Interrupted);
    }
    warnings
}

/// A block-test file caches can hold.
pub fn small_file(size_bytes: u64) -> Option<DiskWarning> {
    (size_bytes < CACHE_SIZE).then_some(DiskWarning::SmallFile { size_bytes })
}

#[cfg(test)]
mod tests {
    use dyno_model::Judgement as _;
    use std::time::Duration;

    use super::*;
    use crate::engine::{PassStats, new_histogram};
    use crate::spec::{Pattern, TestSpec};

    /// A pass of one second whose threads used `cpu` of CPU time.
    fn pass(cpu: Duration, short: u64) -> PassStats {
        PassStats {
            bytes_read: 1 << 20,
            bytes_written: 0,
            reads: 256,
            writes: 0,
            short,
            elapsed: Duration::from_secs(1),
            latency: new_histogram(),
            cpu,
            interrupted: false,
        }
    }

    fn measured(spec: TestSpec, cpu: Duration, short: u64) -> Measurement {
        Measurement {
            test: spec.to_string(),
            spec: Some(spec),
            op: "read".into(),
            passes: vec![pass(cpu, short)],
        }
    }

    fn codes(warnings: &[DiskWarning]) -> Vec<&'static str> {
        warnings.iter().map(DiskWarning::code).collect()
    }

    const DIRECT: IoMode = IoMode::Direct {
        offset_align: 4096,
        memory_align: 4096,
    };

    #[test]
    fn direct_io_on_io_uring_with_idle_threads_has_no_warnings() {
        let m = measured(
            TestSpec::new(Pattern::Random, 4096, 1, 1),
            Duration::from_millis(100),
            0,
        );
        let warnings = judge(
            Some(&DIRECT),
            &EngineKind::IoUring,
            Fill::Random,
            &[m],
            false,
            4,
        );
        assert_eq!(warnings, vec![]);
    }

    #[test]
    fn buffered_io_is_said_with_its_reason_and_its_engine() {
        let buffered = IoMode::Buffered {
            reason: "tmpfs has no O_DIRECT".into(),
        };
        let warnings = judge(
            Some(&buffered),
            &EngineKind::IoUring,
            Fill::Random,
            &[],
            false,
            4,
        );
        assert_eq!(codes(&warnings), ["buffered_io", "uring_buffered"]);
        assert_eq!(
            dyno_model::Warning::from(warnings[0].clone()).message,
            "buffered I/O, not direct: tmpfs has no O_DIRECT. The figures include the page cache and may be far above the device's"
        );
        // For buffered I/O the pool chosen by auto is no fallback.
        let auto = EngineKind::Threads {
            reason: "auto: buffered I/O".into(),
        };
        let warnings = judge(Some(&buffered), &auto, Fill::Random, &[], false, 4);
        assert_eq!(codes(&warnings), ["buffered_io"]);
        let asked = EngineKind::Threads {
            reason: "--engine threads was asked for".into(),
        };
        let warnings = judge(None, &asked, Fill::Zero, &[], true, 4);
        assert_eq!(
            codes(&warnings),
            ["thread_engine", "zero_fill", "interrupted"]
        );
    }

    #[test]
    fn more_io_threads_than_cpus_and_busy_threads_are_said() {
        let big = measured(
            TestSpec::new(Pattern::Sequential, 1 << 20, 8, 4),
            Duration::from_millis(1960),
            2,
        );
        let warnings = judge(
            Some(&DIRECT),
            &EngineKind::IoUring,
            Fill::Random,
            &[big],
            false,
            2,
        );
        assert_eq!(
            codes(&warnings),
            ["oversubscribed", "engine_saturated", "short_io"]
        );
        assert_eq!(
            warnings[0].to_string(),
            "SEQ1M Q8T4 runs more I/O threads than the 2 CPUs this process may use: the threads take turns, so the figures may be bounded by this machine's CPUs rather than the storage"
        );
        assert_eq!(
            warnings[1].to_string(),
            "dyno's I/O threads were busy at least 90% of the time in SEQ1M Q8T4 read (98%): the CPU, not the storage, may have set that test's figures, so they are a lower bound for the storage"
        );
        assert_eq!(
            warnings[2].to_string(),
            "2 I/Os moved fewer bytes than asked"
        );
    }

    #[test]
    fn a_file_under_a_gib_is_small() {
        assert_eq!(small_file(64 << 20).map(|w| w.code()), Some("small_file"));
        assert_eq!(small_file(CACHE_SIZE), None);
    }
}
