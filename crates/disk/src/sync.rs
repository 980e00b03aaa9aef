//! `--preset sync`: how long a durable write takes, like pg_test_fsync.
//! 8 KiB writes (a PostgreSQL WAL block) cycle over the first 16 MiB of
//! the test file through the page cache, each made durable by one of the
//! three ways a database can: `write` + `fdatasync`, `write` + `fsync`, or
//! a file opened with `O_DSYNC`. One operation is the write and its sync.

use std::fs::{File, OpenOptions};
use std::os::fd::AsRawFd;
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use crate::engine::{IoFailure, PassStats};
use crate::run::{Measurement, Passes, Progress, RunError, passes};
use crate::target::{TargetError, TestFile};

/// The size of one durable write.
pub const SYNC_BLOCK: u64 = 8192;
/// The span the writes cycle over.
pub const SYNC_SPAN: u64 = 16 << 20;

/// The three ways to make a write durable.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SyncMethod {
    Fdatasync,
    Fsync,
    ODsync,
}

impl SyncMethod {
    pub const ALL: [SyncMethod; 3] = [SyncMethod::Fdatasync, SyncMethod::Fsync, SyncMethod::ODsync];

    /// The row name: "fdatasync 8K", "fsync 8K", "O_DSYNC 8K".
    pub fn test_name(self) -> &'static str {
        match self {
            SyncMethod::Fdatasync => "fdatasync 8K",
            SyncMethod::Fsync => "fsync 8K",
            SyncMethod::ODsync => "O_DSYNC 8K",
        }
    }
}

/// Runs the three sync tests on the test file.
pub fn run_sync_tests(
    file: &TestFile,
    settings: &Passes,
    stop: &AtomicBool,
    mut progress: impl FnMut(&Progress),
) -> Result<Vec<Measurement>, RunError> {
    let span = SYNC_SPAN.min(file.size()) / SYNC_BLOCK * SYNC_BLOCK;
    if span == 0 {
        return Err(TargetError::TooSmall(file.size(), SYNC_BLOCK).into());
    }
    let mut out = Vec::new();
    for (m, method) in SyncMethod::ALL.into_iter().enumerate() {
        if stop.load(Ordering::Relaxed) {
            break;
        }
        if m > 0 {
            crate::run::pause(settings.interval, stop);
        }
        let reopen = |flags| {
            OpenOptions::new()
                .write(true)
                .custom_flags(flags)
                .open(file.path())
                .map_err(|e| TargetError::io("reopening the test file for the sync tests", e))
        };
        let target = match method {
            SyncMethod::ODsync => reopen(libc::O_DSYNC)?,
            SyncMethod::Fdatasync | SyncMethod::Fsync => reopen(0)?,
        };
        let test = method.test_name().to_owned();
        let kept = passes(
            settings,
            stop,
            |d| {
                sync_pass(&target, method, span, d, stop).map_err(|e| {
                    if e.source.raw_os_error() == Some(libc::ENOSPC) {
                        RunError::Target(TargetError::Full {
                            what: format!("{test} wrote"),
                        })
                    } else {
                        RunError::Io {
                            test: test.clone(),
                            op: "write".into(),
                            source: e,
                        }
                    }
                })
            },
            |pass, stats| progress(&Progress::of(&test, "write", pass, settings.runs, stats)),
        )?;
        out.push(Measurement {
            test,
            spec: None,
            op: "write".into(),
            passes: kept,
        });
    }
    Ok(out)
}

/// Durable writes for `duration`, one after another.
fn sync_pass(
    file: &File,
    method: SyncMethod,
    span: u64,
    duration: Duration,
    stop: &AtomicBool,
) -> Result<PassStats, IoFailure> {
    let mut stats = crate::engine::empty_pass();
    let block = vec![0xA5u8; SYNC_BLOCK as usize];
    let start = Instant::now();
    let deadline = start + duration;
    let mut offset = 0;
    let mut last = start;
    let fd = file.as_raw_fd();
    loop {
        let began = Instant::now();
        if began >= deadline || stop.load(Ordering::Relaxed) {
            break;
        }
        let fail = |op, source| IoFailure { op, offset, source };
        file.write_all_at(&block, offset)
            .map_err(|e| fail("write", e))?;
        // SAFETY: plain syscalls on a descriptor we own.
        let rc = match method {
            SyncMethod::Fdatasync => unsafe { libc::fdatasync(fd) },
            SyncMethod::Fsync => unsafe { libc::fsync(fd) },
            SyncMethod::ODsync => 0,
        };
        if rc != 0 {
            return Err(fail("sync", std::io::Error::last_os_error()));
        }
        let done = Instant::now();
        stats.writes += 1;
        stats.bytes_written += SYNC_BLOCK;
        let _ = stats.latency.record(
            u64::try_from((done - began).as_nanos())
                .unwrap_or(u64::MAX)
                .max(1),
        );
        last = done;
        offset = (offset + SYNC_BLOCK) % span;
    }
    stats.elapsed = last - start;
    stats.interrupted = stop.load(Ordering::Relaxed);
    Ok(stats)
}
