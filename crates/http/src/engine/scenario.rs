//! A scenario's virtual user: one connection of the engine that runs
//! flows instead of one request after another.
//!
//! Closed model: a user starts its next flow as soon as its last one
//! ended (and it thought); `-n` counts flows. Open model: flows start on
//! the timetable (`--rate` is flows per second), and a step's corrected
//! latency counts from when it would have been sent had its flow started
//! on time: the flow's start lag is added to each of its steps, so a
//! stalled server cannot hide behind a flow that started late.
//!
//! A step's answer is checked (status, then what the step looks for in
//! the body) and its extractions fill the user's variables; the first
//! failure counts as that step's error of its class and ends the flow,
//! and the user goes on with its next flow.

use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::exchange::{Answered, Conn, Failure, Outgoing, exchange};
use super::schedule::{OpenSchedule, Ticket, until_due};
use super::{Local, Shared, Task};
use crate::conn::Stream;
use crate::http2;
use crate::scenario::template::{Fill, Refused, Text, Unsendable, render};
use crate::scenario::{Answer, CookieJar, Scenario, Step};
use crate::stats::ErrorClass;

/// What became of a step's request on the wire.
pub(super) enum Sent {
    Answered(Answered),
    /// A value found earlier cannot go into the request: nothing was sent.
    Unsendable,
    /// It failed with `class`; `sent`: it was written (it was in flight),
    /// as opposed to never leaving (no connection).
    Failed {
        class: ErrorClass,
        sent: bool,
    },
}

/// A virtual user's own state, kept across its connections: its
/// variables, its cookies, its random numbers and its buffers.
pub(super) struct User {
    values: Vec<Option<Box<[u8]>>>,
    jar: CookieJar,
    vu: u64,
    iter: u64,
    rng: fastrand::Rng,
    /// The request being sent, when it is filled (over HTTP/2, each of
    /// its values in turn).
    request: Vec<u8>,
    /// A request body, filled before its length is written.
    scratch: Vec<u8>,
    /// The answer's bytes, for a step that reads them.
    answer: Vec<u8>,
    /// How long the user last paused after a request it could not make.
    pause: Duration,
    /// The think after its last flow's last step, owed before its next
    /// flow: a run whose schedule has no next flow for it (`-n` spent)
    /// does not wait it out.
    owed: Duration,
}

/// The first pause of a user whose request could not be made
/// ([`ErrorClass::Unsendable`]), doubling at each one in a row up to the
/// most: as a refused connect's back-off, so a value that can never go in
/// costs a few failures a second, not the thread.
const UNSENDABLE_PAUSE: Duration = Duration::from_millis(1);
const MAX_UNSENDABLE_PAUSE: Duration = Duration::from_millis(100);

impl User {
    /// Virtual user number `vu` of the whole run, with its data row.
    pub(super) fn new(scenario: &Scenario, vu: u64, seed: u64) -> User {
        let mut values = vec![None; scenario.variables.len()];
        if let Some(data) = &scenario.data
            && let Some(row) = data.rows.get(vu as usize)
        {
            for (&slot, value) in data.slots.iter().zip(row) {
                values[slot] = Some(value.clone());
            }
        }
        User {
            values,
            jar: CookieJar::default(),
            vu,
            iter: 0,
            rng: fastrand::Rng::with_seed(seed ^ vu.wrapping_mul(0x9E37_79B9_7F4A_7C15)),
            request: Vec::new(),
            scratch: Vec::new(),
            answer: Vec::new(),
            pause: Duration::ZERO,
            owed: Duration::ZERO,
        }
    }

    /// `step`'s request number `seq`, to be filled by the connection's
    /// side as its protocol wants it; and the buffer for its answer.
    fn filling<'a>(
        &'a mut self,
        scenario: &Scenario,
        step: &'a Step,
        seq: u64,
    ) -> (Filling<'a>, &'a mut Vec<u8>) {
        let cookie = if scenario.cookies {
            self.jar.header()
        } else {
            None
        };
        let filling = Filling {
            text: &step.request,
            fill: Fill {
                values: &self.values,
                vu: self.vu,
                iter: self.iter,
                seq,
                rng: &mut self.rng,
                cookie,
            },
            out: &mut self.request,
            scratch: &mut self.scratch,
        };
        (filling, &mut self.answer)
    }

    /// Makes one step: fills it, has `send` put it on the wire, checks
    /// and extracts, records.
    async fn make(
        &mut self,
        shared: &Shared,
        local: &RefCell<Local>,
        scenario: &Scenario,
        step: &Step,
        ticket: &Ticket,
        send: &mut impl AsyncFnMut(Filling<'_>, bool, Option<&mut Vec<u8>>, &Ticket) -> Sent,
    ) -> Made {
        let reads = step.reads_answer() || scenario.cookies;
        let (filling, answer) = self.filling(scenario, step, ticket.seq);
        let capture = reads.then_some(answer);
        let Answered {
            done,
            status,
            body_bytes,
            timing,
        } = match send(filling, step.is_head(), capture, ticket).await {
            Sent::Answered(a) => a,
            Sent::Unsendable => {
                // A value found earlier cannot go into this request, and
                // nothing was sent: the user pauses, a growing while, so
                // that it neither spins nor starves the thread's others.
                local
                    .borrow_mut()
                    .record_error(shared, ticket, ErrorClass::Unsendable, false);
                self.pause = (self.pause * 2).clamp(UNSENDABLE_PAUSE, MAX_UNSENDABLE_PAUSE);
                tokio::time::sleep(self.pause).await;
                return Made::Failed;
            }
            Sent::Failed { class, sent } => {
                local.borrow_mut().record_error(shared, ticket, class, sent);
                return Made::Failed;
            }
        };
        let statuses = step.statuses.unwrap_or(shared.settings.expect_status);
        let mut error = (!statuses.contains(status)).then_some(ErrorClass::Status);
        if error.is_none() && reads {
            error = self.read_answer(scenario, step);
        }
        local
            .borrow_mut()
            .record_response(shared, ticket, done, status, body_bytes, timing, error);
        match error {
            None => Made::Passed(done),
            Some(_) => Made::Failed,
        }
    }

    /// Takes the answer's cookies, checks its body, and extracts; the class
    /// of the first failure.
    fn read_answer(&mut self, scenario: &Scenario, step: &Step) -> Option<ErrorClass> {
        let Some(answer) = Answer::read(&self.answer) else {
            return Some(ErrorClass::Check);
        };
        if scenario.cookies {
            self.jar.take(&answer);
        }
        if let Some(needle) = &step.contains {
            let mut fill = Fill {
                values: &self.values,
                vu: self.vu,
                iter: self.iter,
                seq: 0,
                rng: &mut self.rng,
                cookie: None,
            };
            render(needle, &mut fill, &mut self.scratch);
            if !answer.contains(&self.scratch) {
                return Some(ErrorClass::Check);
            }
        }
        for e in &step.extract {
            match answer.extract(e) {
                Some(value) => self.values[e.slot] = Some(value),
                None => return Some(ErrorClass::Extract),
            }
        }
        None
    }

    /// Runs one flow, which starts with the ticket `start` (already due):
    /// picks it by weight, makes its steps with `send`, records how it
    /// ended, and thinks.
    pub(super) async fn flow(
        &mut self,
        shared: &Shared,
        local: &RefCell<Local>,
        start: Ticket,
        send: &mut impl AsyncFnMut(Filling<'_>, bool, Option<&mut Vec<u8>>, &Ticket) -> Sent,
    ) {
        let settings = &shared.settings;
        let scenario = settings.scenario.as_deref().expect("a scenario run");
        let threads = settings.threads_used() as u64;
        let open = start.due.is_some();
        let flow_index = scenario.pick(self.rng.u64(0..scenario.total_weight));
        let flow = &scenario.flows[flow_index];
        let began = start.due.unwrap_or_else(Instant::now);
        // The open model: how late the flow started, added to each step.
        let lag = Instant::now().saturating_duration_since(began);
        // `--rate-plan`: a stage counts flows, not requests. The flow's
        // due time has come and the flow is under way until it ends; its
        // steps carry no stage of their own.
        let stage = start.stage;
        if start.measured {
            let mut l = local.borrow_mut();
            l.scenario.flows[flow_index].started += 1;
            if let Some(s) = l.stages.get_mut(stage) {
                s.came();
                s.took_off();
                s.sent(u64::try_from(lag.as_nanos()).unwrap_or(u64::MAX));
            }
        }
        let start = Ticket {
            stage: NO_STAGE,
            ..start
        };
        // How the flow ended, for its stage: `Some(took)` completed,
        // `None` failed; cut by the end, it is unfinished.
        let mut outcome: Option<Option<Duration>> = None;
        for (i, step) in flow.steps.iter().enumerate() {
            let ticket = if i == 0 {
                Ticket {
                    step: step.index.map(|i| i as u32),
                    ..start
                }
            } else {
                if shared.stopped() || shared.end().is_some_and(|end| Instant::now() >= end) {
                    // Cut by the end: the flow is unfinished.
                    break;
                }
                let now = Instant::now();
                let ticket = Ticket {
                    seq: local.borrow_mut().take_seq(shared, threads),
                    due: start.due.map(|_| now.checked_sub(lag).unwrap_or(now)),
                    measured: start.measured,
                    // The flow's send lag was counted at its first step.
                    retried: true,
                    stage: start.stage,
                    step: step.index.map(|i| i as u32),
                };
                local.borrow_mut().hold(&ticket);
                ticket
            };
            let done = match self
                .make(shared, local, scenario, step, &ticket, send)
                .await
            {
                Made::Passed(done) => done,
                Made::Failed => {
                    if start.measured && within(shared, Instant::now()) {
                        local.borrow_mut().scenario.flow_ended(flow_index, None);
                        outcome = Some(None);
                    }
                    break;
                }
            };
            let final_step = i + 1 == flow.steps.len();
            if final_step {
                // A flow made whole: its user's requests go in again.
                self.pause = Duration::ZERO;
            }
            // The flow is done at its last answer: a think after it is the
            // user's pause before the next flow, not the flow's work, and
            // a run that ends in it does not leave the flow unfinished.
            if final_step && start.measured && within(shared, done) {
                let took = done.saturating_duration_since(began);
                local
                    .borrow_mut()
                    .scenario
                    .flow_ended(flow_index, Some(took));
                outcome = Some(Some(took));
            }
            // Think: between steps, and in the closed model before the
            // user's next flow too (in the open model flows arrive on
            // their own timetable).
            if !(final_step && open) {
                let pause = step.think.draw(&mut self.rng);
                if !pause.is_zero() {
                    if final_step {
                        // Owed before the next flow, if there is one
                        // ([`User::think_owed`]).
                        self.owed = pause;
                        break;
                    }
                    tokio::time::sleep(pause).await;
                }
            }
        }
        self.close_stage(local, &start, stage, outcome);
        self.iter += 1;
    }

    /// A virtual user's life: takes a flow's start from `next` (the
    /// closed model's quota or the open model's timetable), waits out the
    /// think it owes and the start's due time, makes the flow with
    /// `send`, then waits `pause()` (a closed model's back-off after a
    /// failed connect); until no start is left or the run ends.
    pub(super) async fn live(
        &mut self,
        shared: &Shared,
        local: &RefCell<Local>,
        timer: Option<&dyno_load::Timer>,
        mut next: impl FnMut() -> Option<Ticket>,
        send: &mut impl AsyncFnMut(Filling<'_>, bool, Option<&mut Vec<u8>>, &Ticket) -> Sent,
        pause: impl Fn() -> Duration,
    ) {
        while let Some(start) = next() {
            if !self.think_owed(shared).await {
                return;
            }
            until_due(&start, timer).await;
            self.flow(shared, local, start, send).await;
            let pause = pause();
            if !pause.is_zero() {
                tokio::time::sleep(pause).await;
            }
        }
    }

    /// Waits out the think owed from the last flow, once the next flow's
    /// ticket is in hand: whether the run still goes on after it (a
    /// duration's end may come while the user thinks).
    pub(super) async fn think_owed(&mut self, shared: &Shared) -> bool {
        let owed = std::mem::take(&mut self.owed);
        if owed.is_zero() {
            return true;
        }
        tokio::time::sleep(owed).await;
        !(shared.stopped() || shared.end().is_some_and(|end| Instant::now() >= end))
    }

    /// Closes a measured flow's `--rate-plan` stage: `outcome` is how it
    /// ended (`Some(Some(took))` completed, `Some(None)` failed, `None`
    /// cut by the end).
    fn close_stage(
        &self,
        local: &RefCell<Local>,
        start: &Ticket,
        stage: usize,
        outcome: Option<Option<Duration>>,
    ) {
        if start.measured {
            let mut l = local.borrow_mut();
            if let Some(s) = l.stages.get_mut(stage) {
                s.landed();
                match outcome {
                    Some(Some(took)) => {
                        s.ended(
                            Some(u64::try_from(took.as_nanos()).unwrap_or(u64::MAX)),
                            false,
                        );
                    }
                    Some(None) => s.ended(None, true),
                    None => s.cut(),
                }
            }
        }
    }
}

/// A step's request with what fills it, handed to the connection's side,
/// which fills it as its protocol sends it.
pub(super) struct Filling<'a> {
    text: &'a Text,
    fill: Fill<'a>,
    /// The user's buffers: the request (or its values), and its body.
    out: &'a mut Vec<u8>,
    scratch: &'a mut Vec<u8>,
}

impl<'a> Filling<'a> {
    /// The request as HTTP/1.1 bytes: as compiled when nothing fills it
    /// (no copy), else written into the user's buffer.
    pub(super) fn http1(mut self) -> Result<&'a [u8], Unsendable> {
        if let (Some(whole), None) = (self.text.whole(), self.fill.cookie) {
            return Ok(whole);
        }
        self.text.write(&mut self.fill, self.out, self.scratch)?;
        Ok(self.out)
    }

    /// The request as HTTP/2 fields, for `scheme`.
    pub(super) fn http2(mut self, scheme: &str) -> Result<http2::Request, Refused> {
        self.text
            .http2(&mut self.fill, scheme, self.out, self.scratch)
    }
}

/// The stage of a scenario step's ticket: none (its flow is its stage's).
const NO_STAGE: usize = usize::MAX;

/// How a step went.
enum Made {
    /// Answered and passed.
    Passed(Instant),
    /// Failed; the flow ends.
    Failed,
}

/// One HTTP/1.1 virtual user: takes a flow's start (closed quota or open
/// timetable), makes the flow on its connection, repeats.
pub(super) async fn virtual_user(task: Task, stream: Option<Stream>) {
    let Task {
        shared,
        local,
        timer,
        read_buf,
        global,
    } = task;
    let settings = &shared.settings;
    let scenario = settings.scenario.as_deref().expect("a scenario run");
    let threads = settings.threads_used() as u64;
    let open = settings.schedule.rate_per_sec.map(|rate| {
        OpenSchedule::for_thread(
            &shared,
            global % threads as usize,
            threads as usize,
            rate,
            &local,
        )
    });
    let vu = settings.segment.global(global as u64);
    let mut user = User::new(scenario, vu, settings.seed);
    let mut conn = Conn::new(stream);
    // Do not spin on a refusing server: the closed model waits a growing
    // pause after a failed connect before its next flow.
    let backoff = Cell::new(Duration::ZERO);
    let (shared, local) = (&*shared, &*local);
    let mut send =
        async |filling: Filling<'_>, head: bool, capture: Option<&mut Vec<u8>>, ticket: &Ticket| {
            let sent = send_http1(
                shared, local, &read_buf, &mut conn, filling, head, capture, ticket,
            )
            .await;
            match &sent {
                Sent::Answered(_) => backoff.set(Duration::ZERO),
                Sent::Failed { class, sent: false } => {
                    if *class == ErrorClass::ConnectRefused {
                        shared.connect_refused();
                    }
                    backoff.set(
                        (backoff.get() * 2)
                            .clamp(Duration::from_millis(1), Duration::from_millis(100)),
                    );
                }
                Sent::Failed { .. } | Sent::Unsendable => {}
            }
            sent
        };
    let next = || match &open {
        Some(schedule) => schedule.borrow_mut().ticket(shared, local),
        None => local.borrow_mut().closed_ticket(shared, threads),
    };
    let pause = || match open {
        None => backoff.get(),
        Some(_) => Duration::ZERO,
    };
    user.live(shared, local, timer.as_ref(), next, &mut send, pause)
        .await;
}

/// A step's request over the user's HTTP/1.1 connection (made first if
/// there is none), and its answer; a request that failed ends the
/// connection, whose framing is lost.
#[allow(clippy::too_many_arguments)]
async fn send_http1(
    shared: &Shared,
    local: &RefCell<Local>,
    read_buf: &RefCell<Vec<u8>>,
    conn: &mut Conn,
    filling: Filling<'_>,
    head: bool,
    capture: Option<&mut Vec<u8>>,
    ticket: &Ticket,
) -> Sent {
    let Ok(bytes) = filling.http1() else {
        return Sent::Unsendable;
    };
    let outgoing = Outgoing {
        bytes,
        head,
        capture,
    };
    let batch = std::slice::from_ref(ticket);
    match exchange(shared, local, read_buf, conn, batch, Some(outgoing)).await {
        Ok(Some(answered)) => Sent::Answered(answered),
        Ok(None) => Sent::Failed {
            class: ErrorClass::ClosedEarly,
            sent: true,
        },
        Err(Failure::Connect(class)) => Sent::Failed { class, sent: false },
        Err(Failure::Request { class, .. }) => {
            conn.close();
            Sent::Failed { class, sent: true }
        }
    }
}

/// Whether work that ended at `t` is inside the run (before its
/// deadline and the grace after it, if it has one).
fn within(shared: &Shared, t: Instant) -> bool {
    !shared.clock().over(t)
}

/// Makes the scenario's setup steps, once, before the clock starts; why
/// one failed, if one did. Over HTTP/3 with `--h3`, else over an
/// HTTP/1.1 connection of its own.
pub(super) async fn setup(shared: &Arc<Shared>, local: &Rc<RefCell<Local>>) -> Result<(), String> {
    let Some(scenario) = shared.settings.scenario.as_deref() else {
        return Ok(());
    };
    if scenario.setup.is_empty() {
        return Ok(());
    }
    if shared.settings.http3 {
        let link = super::h3::Link::new(shared, local, None)?;
        return setup_steps(
            shared,
            scenario,
            &mut async |filling, _head, capture, ticket| {
                link.send_filling(filling, capture, ticket).await
            },
        )
        .await;
    }
    let read_buf = RefCell::new(vec![0u8; super::READ_BUF]);
    let mut conn = Conn::new(None);
    let (shared, local) = (&**shared, &**local);
    setup_steps(
        shared,
        scenario,
        &mut async |filling: Filling<'_>,
                    head: bool,
                    capture: Option<&mut Vec<u8>>,
                    ticket: &Ticket| {
            send_http1(
                shared, local, &read_buf, &mut conn, filling, head, capture, ticket,
            )
            .await
        },
    )
    .await
}

/// The setup steps, each sent with `send`: each must be answered with a
/// status it expects and hold what it checks for.
async fn setup_steps(
    shared: &Shared,
    scenario: &Scenario,
    send: &mut impl AsyncFnMut(Filling<'_>, bool, Option<&mut Vec<u8>>, &Ticket) -> Sent,
) -> Result<(), String> {
    let mut user = User::new(scenario, 0, shared.settings.seed);
    for (i, step) in scenario.setup.iter().enumerate() {
        let ticket = Ticket {
            seq: i as u64,
            due: None,
            measured: false,
            retried: false,
            stage: 0,
            step: None,
        };
        let what = format!("setup step {:?} ({} {})", step.name, step.method, step.url);
        let (filling, answer) = user.filling(scenario, step, ticket.seq);
        let answered = match send(filling, step.is_head(), Some(answer), &ticket).await {
            Sent::Answered(answered) => answered,
            Sent::Unsendable => return Err(format!("{what}: a value cannot be sent")),
            Sent::Failed {
                class: ErrorClass::ClosedEarly,
                sent: true,
            } => return Err(format!("{what}: no answer")),
            Sent::Failed { class, .. } => return Err(format!("{what}: {}", class.label())),
        };
        let statuses = step.statuses.unwrap_or(shared.settings.expect_status);
        if !statuses.contains(answered.status) {
            let body = Answer::read(&user.answer)
                .map(|a| String::from_utf8_lossy(&a.body()[..a.body().len().min(200)]).into_owned())
                .unwrap_or_default();
            return Err(format!(
                "{what} was answered {}: {}",
                answered.status,
                body.trim()
            ));
        }
        if user.read_answer(scenario, step).is_some() {
            return Err(format!(
                "{what}: its answer does not contain what the step checks for"
            ));
        }
    }
    Ok(())
}
