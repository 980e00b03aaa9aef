//! `--replay`: a thread's open schedule read from a log. The reader thread
//! ([`crate::replay::Feed`]) hands this thread its requests in due order;
//! the thread's connections share them as a pool (whichever is free takes
//! the next), as a scenario's virtual users share their flows, so a slow
//! answer on one connection delays no request another could send. A
//! request is due at its offset in the log ÷ `--speed` from the run's
//! start, and its latency counts from then, so a replay that falls behind
//! shows it (late sends, and at a deadline, dropped requests) exactly as
//! `--rate` does.

use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::time::{Duration, Instant};

use tokio::sync::mpsc;

use super::schedule::Ticket;
use super::{Local, Shared};
use crate::replay::Item;

/// How often a connection waiting for the reader looks at the run's end.
const RECHECK: Duration = Duration::from_millis(50);

/// What [`ReplaySchedule::take`] found.
#[derive(Debug)]
pub(super) enum Next {
    Ticket(Ticket),
    /// The log (or the run) is over.
    Done,
    /// The reader has not handed the next request over yet.
    Later,
}

/// How long an HTTP/2 connection waits before looking again for a request
/// the reader has not handed over yet.
pub(super) const LOOK_AGAIN: Duration = Duration::from_millis(1);

/// One thread's share of the replayed log.
pub(super) struct ReplaySchedule {
    receiver: tokio::sync::Mutex<mpsc::Receiver<Vec<Item>>>,
    queue: RefCell<VecDeque<Item>>,
    /// The reader has handed over its last batch.
    closed: Cell<bool>,
}

impl std::fmt::Debug for ReplaySchedule {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ReplaySchedule")
            .field("queued", &self.queue.borrow().len())
            .field("closed", &self.closed.get())
            .finish()
    }
}

impl ReplaySchedule {
    pub(super) fn new(receiver: mpsc::Receiver<Vec<Item>>) -> ReplaySchedule {
        ReplaySchedule {
            receiver: tokio::sync::Mutex::new(receiver),
            queue: RefCell::new(VecDeque::new()),
            closed: Cell::new(false),
        }
    }

    /// The next request of this thread's share, once the reader has it;
    /// `None` when the log, the run's `-n` or its deadline is over.
    pub(super) async fn ticket(&self, shared: &Shared, local: &RefCell<Local>) -> Option<Ticket> {
        loop {
            match self.take(shared, local) {
                Next::Ticket(ticket) => return Some(ticket),
                Next::Done => return None,
                Next::Later => self.refill(shared).await,
            }
        }
    }

    /// The next request if the reader has handed it over, without
    /// waiting: [`Next::Later`] when it has not yet.
    pub(super) fn take(&self, shared: &Shared, local: &RefCell<Local>) -> Next {
        if shared.stopped() {
            return Next::Done;
        }
        let item = self.queue.borrow_mut().pop_front();
        let Some(item) = item else {
            if self.closed.get() {
                return Next::Done;
            }
            let Ok(mut receiver) = self.receiver.try_lock() else {
                return Next::Later;
            };
            return match receiver.try_recv() {
                Ok(batch) => {
                    self.queue.borrow_mut().extend(batch);
                    drop(receiver);
                    self.take(shared, local)
                }
                Err(mpsc::error::TryRecvError::Empty) => Next::Later,
                Err(mpsc::error::TryRecvError::Disconnected) => {
                    self.closed.set(true);
                    Next::Done
                }
            };
        };
        let due = shared.start() + Duration::from_nanos(item.due_ns);
        if let Some(end) = shared.end() {
            if due >= end {
                // Due after the run: neither sent nor dropped.
                self.queue.borrow_mut().clear();
                self.closed.set(true);
                return Next::Done;
            }
            if Instant::now() >= end {
                self.queue.borrow_mut().push_front(item);
                return Next::Done;
            }
        }
        let measured = due >= shared.measure_from();
        let mut l = local.borrow_mut();
        if measured && let Some(quota) = &mut l.quota {
            if *quota == 0 {
                return Next::Done;
            }
            *quota -= 1;
        }
        l.replay_due += 1;
        let threads = shared.settings.threads_used() as u64;
        let seq = l.take_seq(shared, threads);
        l.replayed.insert(seq, item.request);
        let ticket = Ticket {
            seq,
            due: Some(due),
            measured,
            retried: false,
            stage: 0,
            step: Some(item.endpoint),
        };
        l.hold(&ticket);
        Next::Ticket(ticket)
    }

    /// Waits for the reader's next batch (or its end), looking at the
    /// run's end meanwhile; one connection waits on the channel, the
    /// others on it.
    async fn refill(&self, shared: &Shared) {
        let mut receiver = self.receiver.lock().await;
        if !self.queue.borrow().is_empty() || self.closed.get() {
            return;
        }
        loop {
            if shared.stopped() || shared.end().is_some_and(|end| Instant::now() >= end) {
                return;
            }
            match tokio::time::timeout(RECHECK, receiver.recv()).await {
                Ok(Some(batch)) => {
                    self.queue.borrow_mut().extend(batch);
                    return;
                }
                Ok(None) => {
                    self.closed.set(true);
                    return;
                }
                Err(_) => {}
            }
        }
    }

    /// At a duration run's end: the requests that fell due before it and
    /// were never taken count as dropped.
    pub(super) fn drop_rest(&self, shared: &Shared, local: &mut Local) {
        let Some(end) = shared.end() else {
            return;
        };
        let measure_from = shared.measure_from();
        let mut queue = self.queue.borrow_mut();
        if let Ok(mut receiver) = self.receiver.try_lock() {
            while let Ok(batch) = receiver.try_recv() {
                queue.extend(batch);
            }
        }
        for item in queue.drain(..) {
            let due = shared.start() + Duration::from_nanos(item.due_ns);
            if due >= end {
                break;
            }
            local.replay_due += 1;
            if due >= measure_from {
                local.stats.dropped += 1;
            }
        }
    }
}
