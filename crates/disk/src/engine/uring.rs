//! The io_uring engine: one ring per worker thread, `queue_depth` reads or
//! writes in flight, each resubmitted as soon as it completes until the
//! pass's time is up; then the ring is drained so no buffer is freed while
//! the kernel may still use it.

use std::io;
use std::os::fd::AsRawFd;
use std::time::Instant;

use io_uring::{IoUring, opcode, types};

use super::{IoFailure, PassStats, Worker};
use crate::buffer::AlignedBuf;

/// Sets up a ring and completes one no-op: fails where the kernel lacks
/// io_uring or a sandbox (seccomp, `kernel.io_uring_disabled`) forbids it.
pub(super) fn probe() -> io::Result<()> {
    let mut ring = IoUring::new(2)?;
    let nop = opcode::Nop::new().build().user_data(7);
    // SAFETY: a no-op references no memory.
    unsafe { ring.submission().push(&nop) }
        .map_err(|_| io::Error::other("the submission queue is full"))?;
    ring.submit_and_wait(1)?;
    let cqe = ring
        .completion()
        .next()
        .ok_or_else(|| io::Error::other("no completion came back"))?;
    if cqe.result() < 0 {
        return Err(io::Error::from_raw_os_error(-cqe.result()));
    }
    Ok(())
}

/// A ring that only this thread uses: single issuer, with completions
/// task work run when this thread next enters the kernel rather than by
/// interrupting it (as fio sets up its rings where the kernel allows;
/// measured here it costs less CPU per I/O). Kernels before 6.0 refuse the
/// flags: a plain ring stands in.
fn new_ring(entries: u32) -> io::Result<IoUring> {
    IoUring::builder()
        .setup_single_issuer()
        .setup_coop_taskrun()
        .build(entries)
        .or_else(|_| IoUring::new(entries))
}

/// One I/O slot: its buffer and what is in flight in it.
struct Slot {
    buf: AlignedBuf,
    offset: u64,
    write: bool,
    started: Instant,
}

pub(super) fn run(mut w: Worker<'_>) -> Result<PassStats, IoFailure> {
    let depth = w.queue_depth as usize;
    let setup = |source| IoFailure {
        op: "io_uring setup",
        offset: 0,
        source,
    };
    let mut ring = new_ring(depth.next_power_of_two() as u32).map_err(setup)?;
    let fd = types::Fd(w.file.as_raw_fd());
    let block = w.block;
    let mut slots: Vec<Slot> = (0..depth)
        .map(|_| {
            let mut buf = AlignedBuf::new(block as usize, w.align);
            buf.fill_random(&mut w.rng);
            Slot {
                buf,
                offset: 0,
                write: false,
                started: w.start,
            }
        })
        .collect();
    let mut stats = PassStats::new();
    let mut failure: Option<IoFailure> = None;
    let mut in_flight = 0usize;
    let mut last = w.start;
    let mut completed: Vec<(usize, i32)> = Vec::with_capacity(depth);

    // Fills slot `i` with the next I/O and queues it.
    let queue = |w: &mut Worker<'_>, ring: &mut IoUring, slot: &mut Slot, i: usize, now| {
        let (offset, write) = w.next_io();
        slot.offset = offset;
        slot.write = write;
        slot.started = now;
        let entry = if write {
            slot.buf.stamp(w.stamp);
            w.stamp = w.stamp.wrapping_add(1);
            opcode::Write::new(fd, slot.buf.as_mut_ptr(), block as u32)
                .offset(offset)
                .build()
        } else {
            opcode::Read::new(fd, slot.buf.as_mut_ptr(), block as u32)
                .offset(offset)
                .build()
        };
        // SAFETY: the buffer lives in `slots`, which outlives the ring's
        // use of it: the loop below drains every I/O before returning.
        unsafe { ring.submission().push(&entry.user_data(i as u64)) }
            .expect("the ring has a slot for every I/O in flight");
    };

    let now = Instant::now();
    if w.may_start(now) {
        for (i, slot) in slots.iter_mut().enumerate() {
            queue(&mut w, &mut ring, slot, i, now);
            in_flight += 1;
        }
    }
    while in_flight > 0 {
        match ring.submit_and_wait(1) {
            Ok(_) => {}
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(source) => {
                // The kernel may still own buffers: never free them.
                std::mem::forget(slots);
                return Err(IoFailure {
                    op: "io_uring submit",
                    offset: 0,
                    source,
                });
            }
        }
        let now = Instant::now();
        completed.extend(
            ring.completion()
                .map(|cqe| (cqe.user_data() as usize, cqe.result())),
        );
        let batch = completed.len();
        for (k, (i, result)) in completed.drain(..).enumerate() {
            in_flight -= 1;
            let slot = &mut slots[i];
            if result < 0 {
                failure.get_or_insert(IoFailure {
                    op: if slot.write { "write" } else { "read" },
                    offset: slot.offset,
                    source: io::Error::from_raw_os_error(-result),
                });
                continue;
            }
            stats.record(
                slot.write,
                block,
                result as u64,
                now.saturating_duration_since(slot.started),
            );
            last = now;
            if failure.is_none() && w.may_start(now) {
                queue(&mut w, &mut ring, slot, i, now);
                in_flight += 1;
                // Hand each I/O to the kernel at once rather than after the
                // whole batch of completions (fio's iodepth_batch=1): on the
                // virtio disk here, batching resubmissions cost 10-20% of
                // RND4K Q32T1's throughput for ~20% less CPU per I/O
                // (bench/disk-vs-fio.sh). The batch's last one goes with the
                // wait below, in the same system call: at queue depth 1
                // that is one call per I/O, not two.
                if k + 1 < batch
                    && let Err(source) = ring.submit()
                {
                    failure.get_or_insert(IoFailure {
                        op: "io_uring submit",
                        offset: slot.offset,
                        source,
                    });
                }
            }
        }
    }
    if let Some(f) = failure {
        return Err(f);
    }
    stats.elapsed = last.saturating_duration_since(w.start);
    stats.interrupted = w.stop.load(std::sync::atomic::Ordering::Relaxed);
    Ok(stats)
}
