//! Which request comes next: the closed model hands a thread's
//! connections tickets from one quota or deadline; the open model gives each
//! connection its own share of a fixed timetable (request k is due at
//! start + k / rate), so no connection waits on another to learn its due
//! times and a late answer never moves the timetable.

use std::cell::RefCell;
use std::rc::Rc;
use std::time::{Duration, Instant};

use super::{Local, Shared};
use crate::settings::{RatePlan, Segment, Stop};
use dyno_load::Timer;

/// Sleeps until a ticket's due time (the open model); at once without one.
pub(super) async fn until_due(ticket: &Ticket, timer: Option<&Timer>) {
    if let Some(due) = ticket.due {
        until(due, timer).await;
    }
}

/// Sleeps until `due`, on the open model's timer when there is one.
pub(super) async fn until(due: Instant, timer: Option<&Timer>) {
    match timer {
        Some(timer) => timer.sleep_until(due).await,
        None => tokio::time::sleep_until(due.into()).await,
    }
}

/// One request to make.
#[derive(Debug, Clone, Copy)]
pub(super) struct Ticket {
    pub(super) seq: u64,
    /// Open model: when it is due.
    pub(super) due: Option<Instant>,
    /// False for warm-up requests.
    pub(super) measured: bool,
    /// Its send lag was counted already: HTTP/2, it was sent once, on a
    /// connection whose GOAWAY said it was not processed, and goes again
    /// on a new one; a scenario, it is a step after its flow's first,
    /// whose lag is the flow's.
    pub(super) retried: bool,
    /// `--rate-plan`: the stage it is due in (0 without a plan).
    pub(super) stage: usize,
    /// `--scenario`: the step it makes (its index among all steps), whose
    /// own figures count it too.
    pub(super) step: Option<u32>,
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
        let seq = self.take_seq(shared, threads);
        Some(Ticket {
            seq,
            due: None,
            measured,
            retried: false,
            stage: 0,
            step: None,
        })
    }
}

impl Local {
    /// The next number of this thread's requests (`{seq}`): thread index
    /// + k × threads, in the whole run's numbering.
    pub(super) fn take_seq(&mut self, shared: &Shared, threads: u64) -> u64 {
        let seq = shared.settings.segment.global(self.next_seq);
        self.next_seq += threads;
        seq
    }
}

/// The open-model schedule of one connection: request k of the whole run
/// is due at start + k / rate, or, under a load plan, when the plan's
/// expected arrivals reach k. A segment (`--segment I/N`) makes the
/// requests k = I + N·j, and its connection c the ones with j mod
/// connections = c, so the segments together keep the one timetable.
#[derive(Debug)]
pub(super) struct OpenSchedule {
    connection: u64,
    connections: u64,
    segment: Segment,
    interval_ns: f64,
    /// The segment's number j of this connection's next request.
    next: u64,
    /// Number k of the whole run's first measured request (after the
    /// warm-up).
    first_measured: u64,
    /// One past the whole run's last request number, when the run is a
    /// request count.
    limit: Option<u64>,
    plan: Option<RatePlan>,
}

impl OpenSchedule {
    /// Connection `connection`'s schedule, kept in its thread's `local`
    /// too so that when the run's end cuts the connection mid-request, the
    /// due times it never reached are still counted ([`Local`]'s finish).
    pub(super) fn start(
        shared: &Shared,
        connection: usize,
        rate: f64,
        local: &RefCell<Local>,
    ) -> Rc<RefCell<OpenSchedule>> {
        let schedule = Rc::new(RefCell::new(OpenSchedule::new(shared, connection, rate)));
        local.borrow_mut().schedules.push(Rc::clone(&schedule));
        schedule
    }

    /// A scenario's flows in the open model: one timetable for all of a
    /// thread's virtual users, the flows `k ≡ thread (mod threads)`, the
    /// next of which any idle user takes (a pool, as k6's arrival rate),
    /// so that a user thinking in a long flow delays no flow while another
    /// is free. Made by the thread's first user, shared by the others.
    pub(super) fn for_thread(
        shared: &Shared,
        thread: usize,
        threads: usize,
        rate: f64,
        local: &RefCell<Local>,
    ) -> Rc<RefCell<OpenSchedule>> {
        if let Some(s) = &local.borrow().flow_schedule {
            return Rc::clone(s);
        }
        let mut schedule = OpenSchedule::new(shared, thread, rate);
        schedule.connections = threads as u64;
        let schedule = Rc::new(RefCell::new(schedule));
        let mut l = local.borrow_mut();
        l.schedules.push(Rc::clone(&schedule));
        l.flow_schedule = Some(Rc::clone(&schedule));
        schedule
    }

    fn new(shared: &Shared, connection: usize, rate: f64) -> Self {
        let interval_ns = 1e9 / rate;
        let warm = shared.settings.schedule.warmup.as_nanos() as f64;
        let first_measured = (warm / interval_ns).ceil() as u64;
        let limit = match shared.settings.schedule.stop {
            Stop::Requests(n) => Some(first_measured + n),
            Stop::Duration(_) | Stop::LogEnds => None,
        };
        OpenSchedule {
            connection: connection as u64,
            connections: shared.settings.connections as u64,
            segment: shared.settings.segment,
            interval_ns,
            next: connection as u64,
            first_measured,
            limit,
            plan: shared.settings.schedule.plan.clone(),
        }
    }

    /// When the segment's request j is due, and in which stage of a plan;
    /// `None` past a plan's last.
    fn due(&self, shared: &Shared, j: u64) -> Option<(Instant, usize)> {
        let k = self.segment.global(j);
        let (offset, stage) = match &self.plan {
            None => (k as f64 * self.interval_ns / 1e9, 0),
            Some(plan) => {
                let t = plan.due(k)?;
                (t, plan.stage_at(t))
            }
        };
        Some((shared.start() + Duration::from_secs_f64(offset), stage))
    }

    /// Counts this connection's requests due before the end and never
    /// taken as dropped (it was busy past the end, or cut there), instead
    /// of pretending they were not due; none are left after.
    pub(super) fn drop_rest(&mut self, shared: &Shared, local: &mut Local) {
        let Some(end) = shared.end() else {
            return;
        };
        while self
            .limit
            .is_none_or(|limit| self.segment.global(self.next) < limit)
            && let Some((due, stage)) = self.due(shared, self.next)
            && due < end
        {
            if self.segment.global(self.next) >= self.first_measured {
                local.stats.dropped += 1;
                if let Some(s) = local.stages.get_mut(stage) {
                    s.dropped += 1;
                }
            }
            self.next += self.connections;
        }
    }

    /// The next request of this connection, counting the ones that fell due
    /// before the end but could not be sent as dropped.
    pub(super) fn ticket(&mut self, shared: &Shared, local: &RefCell<Local>) -> Option<Ticket> {
        let j = self.next;
        let k = self.segment.global(j);
        if self.limit.is_some_and(|limit| k >= limit) {
            return None;
        }
        let (due, stage) = self.due(shared, j)?;
        if let Some(end) = shared.end()
            && due >= end
        {
            return None;
        }
        if shared.stopped() {
            return None;
        }
        if shared.end().is_some_and(|end| Instant::now() >= end) {
            self.drop_rest(shared, &mut local.borrow_mut());
            return None;
        }
        self.next += self.connections;
        debug_assert_eq!(j % self.connections, self.connection);
        let ticket = Ticket {
            seq: k,
            due: Some(due),
            measured: k >= self.first_measured,
            retried: false,
            stage,
            step: None,
        };
        local.borrow_mut().hold(&ticket);
        Some(ticket)
    }
}
