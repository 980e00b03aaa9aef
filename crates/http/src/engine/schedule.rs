//! Which request comes next: the closed model hands a thread's
//! connections tickets from one quota or deadline; the open model gives each
//! connection its own share of a fixed timetable (request k is due at
//! start + k / rate), so no connection waits on another to learn its due
//! times and a late answer never moves the timetable.

use std::cell::RefCell;
use std::time::{Duration, Instant};

use super::{Local, Shared};
use crate::settings::Stop;

/// One request to make.
#[derive(Debug, Clone, Copy)]
pub(super) struct Ticket {
    pub(super) seq: u64,
    /// Open model: when it is due.
    pub(super) due: Option<Instant>,
    /// False for warm-up requests.
    pub(super) measured: bool,
}

impl Local {
    /// The next request for a closed-model connection, or `None` when the
    /// run is over.
    pub(super) fn closed_ticket(&mut self, shared: &Shared, threads: u64) -> Option<Ticket> {
        if shared.stopped() {
            return None;
        }
        let now = Instant::now();
        let measured = now >= shared.measure_from();
        if measured {
            if let Some(end) = shared.end()
                && now >= end
            {
                return None;
            }
            if let Some(quota) = &mut self.quota {
                if *quota == 0 {
                    return None;
                }
                *quota -= 1;
            }
        }
        let seq = self.next_seq;
        self.next_seq += threads;
        Some(Ticket {
            seq,
            due: None,
            measured,
        })
    }
}

/// The open-model schedule of one connection: request k of the whole run
/// is due at start + k / rate and goes to connection k mod connections.
#[derive(Debug)]
pub(super) struct OpenSchedule {
    connection: u64,
    connections: u64,
    interval_ns: f64,
    next: u64,
    /// Index of the first measured request (after the warm-up).
    first_measured: u64,
    /// One past the last request index, when the run is a request count.
    limit: Option<u64>,
}

impl OpenSchedule {
    pub(super) fn new(shared: &Shared, connection: usize, rate: f64) -> Self {
        let interval_ns = 1e9 / rate;
        let warm = shared.settings.schedule.warmup.as_nanos() as f64;
        let first_measured = (warm / interval_ns).ceil() as u64;
        let limit = match shared.settings.schedule.stop {
            Stop::Requests(n) => Some(first_measured + n),
            Stop::Duration(_) => None,
        };
        OpenSchedule {
            connection: connection as u64,
            connections: shared.settings.connections as u64,
            interval_ns,
            next: connection as u64,
            first_measured,
            limit,
        }
    }

    fn due(&self, shared: &Shared, k: u64) -> Instant {
        shared.start() + Duration::from_nanos((k as f64 * self.interval_ns) as u64)
    }

    /// The next request of this connection, counting the ones that fell due
    /// before the end but could not be sent as dropped.
    pub(super) fn ticket(&mut self, shared: &Shared, local: &RefCell<Local>) -> Option<Ticket> {
        let k = self.next;
        if self.limit.is_some_and(|limit| k >= limit) {
            return None;
        }
        let due = self.due(shared, k);
        if let Some(end) = shared.end()
            && due >= end
        {
            return None;
        }
        if shared.stopped() {
            return None;
        }
        if let Some(end) = shared.end() {
            // Requests due while this connection was busy past the end are
            // never sent: count them instead of pretending they were not due.
            let now = Instant::now();
            if now >= end {
                let mut dropped = 0;
                let mut j = k;
                while self.due(shared, j) < end {
                    dropped += u64::from(j >= self.first_measured);
                    j += self.connections;
                }
                local.borrow_mut().stats.dropped += dropped;
                return None;
            }
        }
        self.next += self.connections;
        debug_assert_eq!(k % self.connections, self.connection);
        Some(Ticket {
            seq: k,
            due: Some(due),
            measured: k >= self.first_measured,
        })
    }
}
