//! The fallback engine where io_uring is unavailable: `queue_depth`
//! threads per worker, each with one `pread`/`pwrite` at a time, so the
//! device still sees that many I/Os in flight. A sequential stream is
//! split into interleaved lanes (thread j takes blocks j, j + depth, …).

use std::os::unix::fs::FileExt;
use std::time::Instant;

use super::{IoFailure, PassStats, Worker};
use crate::buffer::AlignedBuf;

pub(super) fn run(w: Worker<'_>) -> Result<PassStats, IoFailure> {
    let depth = u64::from(w.queue_depth);
    let results: Vec<Result<PassStats, IoFailure>> = std::thread::scope(|scope| {
        let lanes: Vec<_> = (0..depth)
            .map(|lane| {
                let mut lane_worker = Worker {
                    file: w.file,
                    align: w.align,
                    block: w.block,
                    queue_depth: 1,
                    offsets: w.offsets.lane(lane, depth),
                    write_share: w.write_share,
                    rng: fastrand::Rng::with_seed(
                        w.stamp ^ lane.wrapping_mul(0xA076_1D64_78BD_642F),
                    ),
                    start: w.start,
                    deadline: w.deadline,
                    stop: w.stop,
                    stamp: w.stamp ^ (lane << 48),
                };
                scope.spawn(move || {
                    let cpu = dyno_env::thread_cpu_time();
                    let mut stats = one_at_a_time(&mut lane_worker)?;
                    stats.cpu += dyno_env::thread_cpu_time().saturating_sub(cpu);
                    Ok(stats)
                })
            })
            .collect();
        lanes
            .into_iter()
            .map(|l| l.join().expect("a disk I/O thread panicked"))
            .collect()
    });
    PassStats::merged(results)
}

fn one_at_a_time(w: &mut Worker<'_>) -> Result<PassStats, IoFailure> {
    let mut buf = AlignedBuf::new(w.block as usize, w.align);
    buf.fill_random(&mut w.rng);
    let mut stats = PassStats::new();
    let mut last = w.start;
    loop {
        let started = Instant::now();
        if !w.may_start(started) {
            break;
        }
        let (offset, write) = w.next_io();
        let result = if write {
            buf.stamp(w.stamp);
            w.stamp = w.stamp.wrapping_add(1);
            w.file.write_at(buf.as_slice(), offset)
        } else {
            w.file.read_at(buf.as_mut_slice(), offset)
        };
        let done = Instant::now();
        let n = result.map_err(|source| IoFailure {
            op: if write { "write" } else { "read" },
            offset,
            source,
        })?;
        stats.record(write, w.block, n as u64, done - started);
        last = done;
    }
    stats.elapsed = last.saturating_duration_since(w.start);
    Ok(stats)
}
