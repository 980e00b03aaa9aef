//! One timed pass of one test: worker threads that keep the queue depth
//! full until the pass's time is up, each with its own offsets, buffers,
//! counters and latency histogram, merged when the pass ends.
//!
//! - `uring`: one io_uring per worker thread, `queue_depth` I/Os in flight;
//! - `threads`: where io_uring is unavailable, `queue_depth` threads per
//!   worker doing `pread`/`pwrite`, one I/O each at a time.

mod threads;
mod uring;

use std::fs::File;
use std::io;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;

use crate::spec::{Op, Pattern, TestSpec};
use crate::target::IoMode;

/// Which engine moves the data.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EngineKind {
    /// io_uring with a real queue depth, one ring per thread.
    IoUring,
    /// A pool of threads doing pread/pwrite; `reason` says why.
    Threads { reason: String },
}

impl EngineKind {
    pub fn name(&self) -> &'static str {
        match self {
            EngineKind::IoUring => "io_uring",
            EngineKind::Threads { .. } => "threads",
        }
    }

    /// The threads that issue `spec`'s I/O: one per worker with io_uring,
    /// one per I/O in flight with the thread pool.
    pub fn io_threads(&self, spec: &TestSpec) -> u64 {
        let workers = u64::from(spec.threads);
        match self {
            EngineKind::IoUring => workers,
            EngineKind::Threads { .. } => workers * u64::from(spec.queue_depth),
        }
    }

    /// `--engine auto`: the engine that does well with what the file
    /// system offers, and why it was chosen.
    ///
    /// - buffered I/O (tmpfs, ramfs, file systems without O_DIRECT,
    ///   `--buffered`): the thread pool. io_uring hands buffered I/O that
    ///   could block to kernel worker threads, which on tmpfs made RND4K
    ///   Q1T1 about 50× slower than pread (67 MB/s against 3877 MB/s on
    ///   /dev/shm; fio's io_uring and psync engines show the same);
    /// - direct I/O: io_uring where a ring can be set up, else the pool.
    pub fn auto(mode: &IoMode) -> (EngineKind, String) {
        if let IoMode::Buffered { .. } = mode {
            let reason = "auto: buffered I/O, which the pread/pwrite thread pool does much faster than io_uring (io_uring queues it to kernel workers)".to_owned();
            return (
                EngineKind::Threads {
                    reason: reason.clone(),
                },
                reason,
            );
        }
        match EngineKind::detect() {
            EngineKind::IoUring => (
                EngineKind::IoUring,
                "auto: direct I/O, where io_uring keeps the queue depth with one thread".to_owned(),
            ),
            EngineKind::Threads { reason } => {
                let reason = format!("auto: {reason}");
                (
                    EngineKind::Threads {
                        reason: reason.clone(),
                    },
                    reason,
                )
            }
        }
    }

    /// io_uring when this kernel and sandbox allow it (a ring can be set
    /// up), else the thread pool with the reason.
    pub fn detect() -> EngineKind {
        match uring::probe() {
            Ok(()) => EngineKind::IoUring,
            Err(e) => EngineKind::Threads {
                reason: format!("io_uring is unavailable here ({e})"),
            },
        }
    }
}

/// One pass to run.
#[derive(Debug, Clone, Copy)]
pub struct Job {
    pub spec: TestSpec,
    pub op: Op,
    pub duration: Duration,
    /// The bytes the offsets may cover, from 0.
    pub span: u64,
    pub seed: u64,
}

/// What one pass measured (all threads merged).
#[derive(Debug, Clone)]
pub struct PassStats {
    pub bytes_read: u64,
    pub bytes_written: u64,
    pub reads: u64,
    pub writes: u64,
    /// I/Os that moved fewer bytes than asked (counted, not retried).
    pub short: u64,
    /// From the common start to the last completion.
    pub elapsed: Duration,
    /// Per I/O, from submission to completion, in nanoseconds.
    pub latency: Histogram<u64>,
    /// CPU time (user + system) of the worker threads.
    pub cpu: Duration,
    /// Ctrl-C ended the pass early.
    pub interrupted: bool,
}

impl PassStats {
    fn new() -> PassStats {
        PassStats {
            bytes_read: 0,
            bytes_written: 0,
            reads: 0,
            writes: 0,
            short: 0,
            elapsed: Duration::ZERO,
            latency: new_histogram(),
            cpu: Duration::ZERO,
            interrupted: false,
        }
    }

    pub fn bytes(&self) -> u64 {
        self.bytes_read + self.bytes_written
    }

    pub fn ios(&self) -> u64 {
        self.reads + self.writes
    }

    /// Bytes per second over the pass.
    pub fn bytes_per_sec(&self) -> f64 {
        per_sec(self.bytes(), self.elapsed)
    }

    pub fn iops(&self) -> f64 {
        per_sec(self.ios(), self.elapsed)
    }

    /// The worker threads' CPU time as a percentage of what `usable` CPUs
    /// could give over the pass (the threads, or the CPUs where fewer):
    /// near 100 the engine, not the storage, may have set the pace.
    pub fn busy_percent(&self, usable: usize) -> Option<f64> {
        if self.elapsed.is_zero() {
            return None;
        }
        Some(100.0 * self.cpu.as_secs_f64() / (self.elapsed.as_secs_f64() * usable.max(1) as f64))
    }

    /// Records one completed I/O.
    fn record(&mut self, write: bool, asked: u64, done: u64, latency: Duration) {
        if write {
            self.writes += 1;
            self.bytes_written += done;
        } else {
            self.reads += 1;
            self.bytes_read += done;
        }
        self.short += u64::from(done < asked);
        let _ = self
            .latency
            .record(u64::try_from(latency.as_nanos()).unwrap_or(u64::MAX).max(1));
    }

    /// One pass from its threads' parts; the first failure if any failed.
    fn merged(
        parts: impl IntoIterator<Item = Result<PassStats, IoFailure>>,
    ) -> Result<PassStats, IoFailure> {
        let mut merged = PassStats::new();
        for part in parts {
            merged.merge(&part?);
        }
        Ok(merged)
    }

    fn merge(&mut self, other: &PassStats) {
        self.bytes_read += other.bytes_read;
        self.bytes_written += other.bytes_written;
        self.reads += other.reads;
        self.writes += other.writes;
        self.short += other.short;
        self.elapsed = self.elapsed.max(other.elapsed);
        let _ = self.latency.add(&other.latency);
        self.cpu += other.cpu;
        self.interrupted |= other.interrupted;
    }
}

/// An empty pass, for engines outside this module (sync, meta) to fill.
pub(crate) fn empty_pass() -> PassStats {
    PassStats::new()
}

fn per_sec(n: u64, elapsed: Duration) -> f64 {
    let secs = elapsed.as_secs_f64();
    if secs > 0.0 { n as f64 / secs } else { 0.0 }
}

/// 1 ns to 1 hour at 3 significant digits (methodology.md).
pub(crate) fn new_histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, 3_600_000_000_000, 3).expect("valid histogram bounds")
}

/// Why a pass failed.
#[derive(Debug, thiserror::Error)]
#[error("{op} at offset {offset}")]
pub struct IoFailure {
    pub op: &'static str,
    pub offset: u64,
    #[source]
    pub source: io::Error,
}

/// Runs one pass with `engine` on `file`. `stop` ends it early.
pub fn run_pass(
    engine: &EngineKind,
    file: &File,
    align: usize,
    job: &Job,
    stop: &AtomicBool,
) -> Result<PassStats, IoFailure> {
    let start = Instant::now();
    let deadline = start + job.duration;
    let results: Vec<Result<PassStats, IoFailure>> = std::thread::scope(|scope| {
        let workers: Vec<_> = (0..job.spec.threads)
            .map(|t| {
                let offsets = Offsets::new(job, t);
                let write_share = write_share(job.op);
                let seed = job.seed ^ u64::from(t).wrapping_mul(0x9E37_79B9_7F4A_7C15);
                scope.spawn(move || {
                    let cpu_before = dyno_env::thread_cpu_time();
                    let worker = Worker {
                        file,
                        align,
                        block: job.spec.block_bytes,
                        queue_depth: job.spec.queue_depth,
                        offsets,
                        write_share,
                        rng: fastrand::Rng::with_seed(seed),
                        start,
                        deadline,
                        stop,
                        stamp: seed,
                    };
                    let result = match engine {
                        EngineKind::IoUring => uring::run(worker),
                        EngineKind::Threads { .. } => threads::run(worker),
                    };
                    result.map(|mut s| {
                        s.cpu += dyno_env::thread_cpu_time().saturating_sub(cpu_before);
                        s
                    })
                })
            })
            .collect();
        workers
            .into_iter()
            .map(|w| w.join().expect("a disk worker thread panicked"))
            .collect()
    });
    let mut merged = PassStats::merged(results)?;
    merged.interrupted |= stop.load(Ordering::Relaxed);
    Ok(merged)
}

/// Percent of I/Os that are writes.
fn write_share(op: Op) -> u8 {
    match op {
        Op::Read => 0,
        Op::Write => 100,
        Op::Mix { read_percent } => 100 - read_percent.min(100),
    }
}

/// Everything a worker thread needs.
struct Worker<'a> {
    file: &'a File,
    /// Buffer alignment (direct I/O).
    align: usize,
    block: u64,
    queue_depth: u32,
    offsets: Offsets,
    /// Percent of I/Os that are writes.
    write_share: u8,
    rng: fastrand::Rng,
    start: Instant,
    deadline: Instant,
    stop: &'a AtomicBool,
    /// Written into every write buffer, then incremented.
    stamp: u64,
}

impl Worker<'_> {
    /// Whether a new I/O may start now.
    fn may_start(&self, now: Instant) -> bool {
        now < self.deadline && !self.stop.load(Ordering::Relaxed)
    }

    /// The next I/O: its offset and whether it writes.
    fn next_io(&mut self) -> (u64, bool) {
        let write = match self.write_share {
            0 => false,
            100 => true,
            share => self.rng.u8(0..100) < share,
        };
        (self.offsets.next(&mut self.rng), write)
    }
}

/// Where a worker's I/Os go. Sequential: thread t walks its own region
/// [t·span/threads, (t+1)·span/threads) block by block and wraps around;
/// random: uniform block-aligned offsets over the whole span.
#[derive(Debug, Clone)]
pub(crate) struct Offsets {
    pattern: Pattern,
    block: u64,
    /// First byte of the region and its length in blocks.
    base: u64,
    blocks: u64,
    cursor: u64,
    /// Blocks a sequential walk advances per I/O (the thread engine splits
    /// one sequential stream over several threads: each takes every
    /// `step`-th block).
    step: u64,
}

impl Offsets {
    pub(crate) fn new(job: &Job, thread: u32) -> Offsets {
        let block = job.spec.block_bytes;
        let total_blocks = (job.span / block).max(1);
        match job.spec.pattern {
            Pattern::Sequential => {
                let threads = u64::from(job.spec.threads);
                let per = (total_blocks / threads).max(1);
                let first = (u64::from(thread) * per).min(total_blocks - 1);
                Offsets {
                    pattern: Pattern::Sequential,
                    block,
                    base: first * block,
                    blocks: per.min(total_blocks - first),
                    cursor: 0,
                    step: 1,
                }
            }
            Pattern::Random => Offsets {
                pattern: Pattern::Random,
                block,
                base: 0,
                blocks: total_blocks,
                cursor: 0,
                step: 1,
            },
        }
    }

    /// The `lane`-th of `lanes` interleaved parts of this walk: lane j
    /// takes blocks j, j + lanes, j + 2·lanes … of the region, so the lanes
    /// together read it in order.
    pub(crate) fn lane(&self, lane: u64, lanes: u64) -> Offsets {
        let mut o = self.clone();
        o.cursor = lane % self.blocks;
        o.step = lanes.max(1);
        o
    }

    pub(crate) fn next(&mut self, rng: &mut fastrand::Rng) -> u64 {
        let index = match self.pattern {
            Pattern::Sequential => {
                let i = self.cursor;
                self.cursor = (self.cursor + self.step) % self.blocks;
                i
            }
            Pattern::Random => rng.u64(0..self.blocks),
        };
        self.base + index * self.block
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn job(pattern: Pattern, block: u64, threads: u32, span: u64) -> Job {
        Job {
            spec: TestSpec::new(pattern, block, 1, threads),
            op: Op::Read,
            duration: Duration::from_millis(1),
            span,
            seed: 1,
        }
    }

    #[test]
    fn the_thread_pool_issues_from_a_thread_per_io_in_flight() {
        let spec = TestSpec::new(Pattern::Random, 4096, 32, 2);
        assert_eq!(EngineKind::IoUring.io_threads(&spec), 2);
        let pool = EngineKind::Threads {
            reason: String::new(),
        };
        assert_eq!(pool.io_threads(&spec), 64);
    }

    #[test]
    fn busy_percent_divides_cpu_by_the_usable_cpus_time() {
        let mut p = PassStats::new();
        assert_eq!(p.busy_percent(1), None, "an empty pass says nothing");
        p.elapsed = Duration::from_secs(2);
        p.cpu = Duration::from_secs(3);
        assert_eq!(p.busy_percent(2), Some(75.0));
        assert_eq!(p.busy_percent(4), Some(37.5));
        assert_eq!(p.busy_percent(0), Some(150.0), "zero counts as one");
    }

    #[test]
    fn sequential_threads_walk_disjoint_regions_and_wrap() {
        let j = job(Pattern::Sequential, 4096, 2, 4 * 4096);
        let mut rng = fastrand::Rng::with_seed(1);
        let mut a = Offsets::new(&j, 0);
        let mut b = Offsets::new(&j, 1);
        let a: Vec<u64> = (0..3).map(|_| a.next(&mut rng)).collect();
        let b: Vec<u64> = (0..3).map(|_| b.next(&mut rng)).collect();
        assert_eq!(a, [0, 4096, 0]);
        assert_eq!(b, [8192, 12288, 8192]);
    }

    #[test]
    fn random_offsets_are_aligned_uniform_and_seeded() {
        let j = job(Pattern::Random, 4096, 1, 100 * 4096);
        let draw = |seed| {
            let mut rng = fastrand::Rng::with_seed(seed);
            let mut o = Offsets::new(&j, 0);
            (0..10_000).map(|_| o.next(&mut rng)).collect::<Vec<_>>()
        };
        let offsets = draw(5);
        assert_eq!(offsets, draw(5), "the seed replays the offsets");
        assert_ne!(offsets, draw(6));
        assert!(offsets.iter().all(|o| o % 4096 == 0 && *o < 100 * 4096));
        // Uniform: each of the 100 blocks is hit about 100 times.
        let mut hits = [0u32; 100];
        for o in &offsets {
            hits[(o / 4096) as usize] += 1;
        }
        assert!(hits.iter().all(|&h| (50..=160).contains(&h)), "{hits:?}");
    }

    #[test]
    fn mixes_split_reads_and_writes() {
        assert_eq!(write_share(Op::Read), 0);
        assert_eq!(write_share(Op::Write), 100);
        assert_eq!(write_share(Op::Mix { read_percent: 70 }), 30);
    }
}
