//! One HTTP/2 connection's driver: connect, then one loop that owns the
//! socket and dyno's own HTTP/2 session (`crate::http2`): it opens a stream
//! per ticket while the server's stream limit and `-m` allow, writes the
//! frames those make, reads into the thread's one buffer and hands the
//! bytes to the session, which says what each stream got. Tickets come
//! from the same schedule as HTTP/1.1 connections', so `-n`, `-d`,
//! `--rate` and the warm-up mean the same thing over both.
//!
//! One task per connection, whatever `-m` is: an answer wakes nothing but
//! the loop that read it, and the answers of one read are recorded
//! together, stamped with the time of that read.
//!
//! A connection the server ends (GOAWAY, a protocol error, a closed
//! socket) fails the requests it still held, by class, and a new one is
//! opened while tickets remain. Requests not yet sent go on the next
//! connection, and so do requests a GOAWAY says the server did not
//! process (streams above its last stream id, RFC 9113 §6.8): those count
//! as retried (`h2_goaway_retried`), not as errors. A stream with no
//! answer within the timeout is reset alone (`read_timeout`, or `write`
//! when the server's flow-control window never let its body out).
//!
//! A scenario's virtual users are tasks, one per stream, that outlive
//! each connection: each hands its step to the [`Mailbox`] of its
//! connections and waits for the answer there. A GOAWAY ends a connection,
//! not a flow: the steps it did not process go first on the next.

use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::future::Future;
use std::io::{self, Write as _};
use std::pin::Pin;
use std::rc::Rc;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

use tokio::io::{AsyncWrite, ReadBuf};

use super::exchange::{Answered, connect, io_class};
use super::replay::{LOOK_AGAIN, Next, ReplaySchedule};
use super::scenario::{Filling, Sent, User};
use super::schedule::{OpenSchedule, Ticket, until};
use super::{Local, Shared, Task};
use crate::conn::Stream;
use crate::http2::frame::{CANCEL, NO_ERROR};
use crate::http2::{self, Event, Failure, Session};
use crate::scenario::template::Refused;
use crate::settings::Settings;
use crate::stats::{ErrorClass, Timing};
use crate::tls::refused_alpn;
use dyno_load::Timer;

/// How much one read from the socket may bring. Not more: on loopback, a
/// client that drains its sockets in big gulps sleeps between them, and
/// the server pays for waking it (`bench/h2-vs-h2load.sh` prints the
/// sleeps): with 256 KiB nginx spent about a fifth more per 1 MiB answer,
/// and served 0.70–0.79× h2load's rate against 0.92× with 32 KiB.
const READ_AHEAD: usize = 32 * 1024;

/// How many more reads follow a full one at once, while each fills the
/// buffer (up to 2 MiB a wake-up, read by 32 KiB). Data left in the socket
/// keeps its receive window shut, so nginx's next writes wait in its
/// socket and go out, over loopback, on the client's CPU when a later read
/// opens the window (`bench/profile.sh h2`: "read's ACK", the server's send in it). Reading
/// on until the socket is empty, as h2load does, the client pays less of
/// it: 1 MiB answers went from 0.879× h2load's rate (rounds 0.699–1.128,
/// 4 of dyno's 10 in the slow mode) to 1.039× (rounds 0.969–1.064, none
/// slow), `H2_PATHS=1m.bin bench/h2-vs-h2load.sh 10 3 10 10`. Unbounded,
/// runs fell into the slow mode again in temporary builds.
const MORE_READS: usize = 64;

/// Where a connection's streams take their tickets: requests that a
/// connection ended before they were sent come first, then the schedule.
pub(super) struct Tickets {
    pub(super) carried: RefCell<Vec<Ticket>>,
    schedule: Schedule,
}

enum Schedule {
    Closed {
        threads: u64,
    },
    Open(Rc<RefCell<OpenSchedule>>),
    /// `--replay`: the thread's share of the log.
    Replay(Rc<ReplaySchedule>),
}

impl Tickets {
    /// A connection's tickets: its thread's replay share, its own share of
    /// the open model's timetable, or the closed model's.
    pub(super) fn new(
        shared: &Arc<Shared>,
        local: &Rc<RefCell<Local>>,
        global_index: usize,
    ) -> Tickets {
        let replay = local.borrow().replay.clone();
        Tickets {
            carried: RefCell::new(Vec::new()),
            schedule: match (shared.settings.schedule.rate_per_sec, replay) {
                (_, Some(replay)) => Schedule::Replay(replay),
                (Some(rate), None) => {
                    Schedule::Open(OpenSchedule::start(shared, global_index, rate, local))
                }
                (None, None) => Schedule::Closed {
                    threads: shared.settings.threads_used() as u64,
                },
            },
        }
    }

    /// The next ticket, or `None` when there are no more: a replay's
    /// request not handed over yet is waited for.
    pub(super) async fn next_waiting(
        &self,
        shared: &Shared,
        local: &RefCell<Local>,
    ) -> Option<Ticket> {
        loop {
            match self.poll_next(shared, local) {
                Next::Ticket(t) => return Some(t),
                Next::Done => return None,
                Next::Later => tokio::time::sleep(LOOK_AGAIN).await,
            }
        }
    }

    pub(super) fn next(&self, shared: &Shared, local: &RefCell<Local>) -> Option<Ticket> {
        match self.poll_next(shared, local) {
            Next::Ticket(t) => Some(t),
            Next::Done | Next::Later => None,
        }
    }

    fn poll_next(&self, shared: &Shared, local: &RefCell<Local>) -> Next {
        let mut carried = self.carried.borrow_mut();
        if !carried.is_empty() {
            // Past a duration's end (or Ctrl-C) what was handed back is
            // not sent again: the run is over. It was not counted as sent;
            // an open model's ticket stays held, so it counts as dropped.
            let over = shared.stopped() || shared.end().is_some_and(|end| Instant::now() >= end);
            if !over {
                return carried.pop().map_or(Next::Done, Next::Ticket);
            }
            carried.clear();
        }
        drop(carried);
        let ticket = match &self.schedule {
            Schedule::Closed { threads } => local.borrow_mut().closed_ticket(shared, *threads),
            Schedule::Open(schedule) => schedule.borrow_mut().ticket(shared, local),
            Schedule::Replay(replay) => return replay.take(shared, local),
        };
        ticket.map_or(Next::Done, Next::Ticket)
    }
}

/// The driver loop of one HTTP/2 connection (and its successors).
pub(super) async fn h2_connection(task: Task, mut stream: Option<Stream>) {
    let Task {
        shared,
        local,
        timer,
        read_buf,
        global: global_index,
    } = task;
    let settings = &shared.settings;
    let tickets = Rc::new(Tickets::new(&shared, &local, global_index));
    let converted = static_requests(settings);
    // A scenario's virtual users, one per stream, kept across this
    // driver's connections (a lost connection ends a flow, not a user).
    let users: Option<Rc<Vec<RefCell<Option<User>>>>> = settings.scenario.as_deref().map(|s| {
        Rc::new(
            (0..settings.streams)
                .map(|i| {
                    let vu = settings
                        .segment
                        .global((global_index * settings.streams + i) as u64);
                    RefCell::new(Some(User::new(s, vu, settings.seed)))
                })
                .collect(),
        )
    });
    // The users' tasks and mailbox outlive each connection: a GOAWAY ends
    // a connection, not a flow, and its users go on over the next.
    let mailbox = users.as_ref().map(|u| Rc::new(Mailbox::new(u.len())));
    let _loops = Loops(match (&users, &mailbox) {
        (Some(users), Some(mailbox)) => (0..users.len())
            .map(|i| {
                tokio::task::spawn_local(scenario_loop(
                    Arc::clone(&shared),
                    Rc::clone(&local),
                    Rc::clone(&tickets),
                    timer.clone(),
                    Rc::clone(mailbox),
                    Rc::clone(users),
                    i,
                ))
            })
            .collect(),
        _ => Vec::new(),
    });
    let mut backoff = Duration::ZERO;
    loop {
        if let (Some(mailbox), None) = (&mailbox, &stream) {
            // The next connection waits for a step to send.
            std::future::poll_fn(|cx| mailbox.poll_wanted(cx)).await;
            if mailbox.live.get() == 0 {
                return;
            }
        }
        let began = Instant::now();
        let connected = match stream.take() {
            Some(s) => Ok(s),
            None => connect(&shared).await.map_err(|e| {
                if e.handshake.as_ref().is_some_and(refused_alpn) {
                    let why = "it refused the handshake with a no_application_protocol alert";
                    return (ErrorClass::H2Protocol, Some(no_h2_by_alpn(why)));
                }
                e.remember(&local);
                (e.class, None)
            }),
        };
        let checked = connected.and_then(|s| alpn_h2(&local, s));
        let stream = match checked {
            Ok(s) => s,
            Err((class, why)) => {
                if class == ErrorClass::ConnectRefused {
                    shared.connect_refused();
                }
                if let Some(why) = why {
                    local
                        .borrow_mut()
                        .firsts
                        .protocol_failure
                        .get_or_insert(why);
                    shared.protocol_refused();
                }
                match &mailbox {
                    // The steps waiting for it fail unsent, and their
                    // users go on.
                    Some(mailbox) => mailbox.fail_queued(class),
                    // One ticket pays for the failed attempt, as a batch
                    // of one does over HTTP/1.1.
                    None => {
                        let Some(ticket) = tickets.next_waiting(&shared, &local).await else {
                            return;
                        };
                        local
                            .borrow_mut()
                            .record_error(&shared, &ticket, class, false);
                    }
                }
                backoff = (backoff * 2).clamp(Duration::from_millis(1), Duration::from_millis(100));
                if !settings.open_model() {
                    tokio::time::sleep(backoff).await;
                }
                continue;
            }
        };
        if Instant::now() >= shared.measure_from() {
            local.borrow_mut().stats.connects += 1;
        }
        let mut driver = Driver {
            shared: &shared,
            local: &local,
            tickets: &tickets,
            timer: timer.as_ref(),
            read_buf: &read_buf,
            stream,
            session: Session::new(mailbox.is_some()),
            scratch: Vec::new(),
            written: 0,
            connect_time: Some(began.elapsed()),
            answered: false,
            done: false,
            pending: None,
            due_now: false,
            goaway: None,
            next_check: None,
            low_water: 1,
            source: match &mailbox {
                Some(mailbox) => Source::Users(mailbox),
                None => Source::Requests(&converted),
            },
        };
        let ended = driver.drive().await;
        driver.finish();
        if ended == Ended::Done || shared.stopped() {
            return;
        }
    }
}

/// The static templates as HTTP/2 requests, converted once (keyed by the
/// template's index); `None` for a template converted per request.
pub(super) fn static_requests(settings: &Settings) -> Vec<Option<http2::Request>> {
    let scheme = settings.target.scheme.as_str();
    let mut scratch = Vec::new();
    settings
        .requests
        .iter()
        .enumerate()
        .map(|(i, t)| {
            t.is_static().then(|| {
                let mut rng = fastrand::Rng::with_seed(0);
                let mut r = t.http2(scheme, 0, &mut rng, &mut scratch).ok()?;
                r.key = Some(i);
                Some(r)
            })?
        })
        .collect()
}

/// A TLS connection's ALPN must have chosen h2.
fn alpn_h2(local: &RefCell<Local>, stream: Stream) -> Result<Stream, (ErrorClass, Option<String>)> {
    if let Some(session) = stream.tls_session() {
        let alpn = session.alpn.clone();
        if local.borrow().firsts.tls_session.is_none() {
            local.borrow_mut().firsts.tls_session = Some(session);
        }
        if alpn.as_deref() != Some("h2") {
            return Err((
                ErrorClass::H2Protocol,
                Some(no_h2_by_alpn(&format!(
                    "it chose {}",
                    alpn.as_deref().unwrap_or("nothing")
                ))),
            ));
        }
    }
    Ok(stream)
}

/// `--h2` (or `--alpn h2`) against a TLS server that does not offer h2:
/// `how` says what it did instead. Every connection would fail the same
/// way, so the run stops at the first.
fn no_h2_by_alpn(how: &str) -> String {
    format!(
        "--h2: the server does not offer h2 by ALPN ({how}); drop --h2 or use --alpn h2,http/1.1"
    )
}

fn not_h2(e: &dyn std::fmt::Display) -> String {
    format!(
        "--h2: the HTTP/2 handshake failed ({e}): does the server speak HTTP/2 there (h2c with prior knowledge for http://)?"
    )
}

/// A request's stream, as the driver keeps it.
struct InFlight {
    ticket: Ticket,
    sent: Instant,
    first_byte: Option<Instant>,
    status: u16,
    body_bytes: u64,
    /// Nothing came for it since its timeout before this: it times out.
    deadline: Instant,
    /// Its head has come, announcing this many body bytes.
    length: Option<u64>,
    /// A scenario's user whose step it is.
    user: Option<usize>,
    /// The step reads its answer: its bytes are kept for it.
    capture: bool,
    /// A scenario step's request, kept to go again on the next connection
    /// if a GOAWAY says the server did not process it (boxed: a plain
    /// run's streams stay small).
    again: Option<Box<http2::Request>>,
}

/// Where a connection's requests come from.
#[derive(Clone, Copy)]
enum Source<'a> {
    /// The run's request templates, one per ticket.
    Requests(&'a [Option<http2::Request>]),
    /// A scenario's users' steps.
    Users(&'a Mailbox),
}

/// The wait for an open-model ticket's due time.
type DueSleep = Pin<Box<dyn Future<Output = ()>>>;

/// Why a connection's loop ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Ended {
    /// No ticket is left and every stream is done.
    Done,
    /// The connection is over (closed, failed, or drained after a
    /// GOAWAY); tickets may remain for the next.
    Over,
}

/// What the socket and the timers said.
enum Io {
    Read(usize),
    Closed(ErrorClass, Option<io::Error>),
    /// A stream's deadline may have passed.
    Timer,
    /// The pending ticket is due.
    Due,
    Woken,
}

struct Driver<'a> {
    shared: &'a Shared,
    local: &'a RefCell<Local>,
    tickets: &'a Tickets,
    timer: Option<&'a Timer>,
    read_buf: &'a RefCell<Vec<u8>>,
    stream: Stream,
    session: Session<InFlight>,
    /// How much of the session's output is written.
    written: usize,
    /// The time it took to connect, charged to its first answer.
    connect_time: Option<Duration>,
    /// Some answer came on this connection.
    answered: bool,
    /// The tickets are all taken.
    done: bool,
    /// A request template's path, filled per request.
    scratch: Vec<u8>,
    /// An open-model ticket not yet due (or, with `due_now`, whose due
    /// time has come while no stream was free).
    pending: Option<Ticket>,
    due_now: bool,
    /// The server's GOAWAY, with its error code.
    goaway: Option<u32>,
    /// No stream's deadline comes before this.
    next_check: Option<Instant>,
    /// The socket's receive low-water mark as set.
    low_water: usize,
    source: Source<'a>,
}

impl Driver<'_> {
    async fn drive(&mut self) -> Ended {
        let far = Instant::now() + Duration::from_secs(86_400 * 365);
        let mut deadline_sleep = Box::pin(tokio::time::sleep_until(far.into()));
        let mut armed = far;
        let mut due_sleep: Option<(Instant, DueSleep)> = None;
        loop {
            let due = self.open();
            if self.finished() {
                return Ended::Done;
            }
            if self.session.closing() && self.session.open_streams() == 0 {
                return Ended::Over;
            }
            let check = self.next_check.unwrap_or(far);
            if check != armed {
                deadline_sleep.as_mut().reset(check.into());
                armed = check;
            }
            match due {
                Some(due) if due_sleep.as_ref().is_none_or(|(at, _)| *at != due) => {
                    let timer = self.timer.cloned();
                    due_sleep = Some((
                        due,
                        Box::pin(async move { until(due, timer.as_ref()).await }),
                    ));
                }
                Some(_) => {}
                None => due_sleep = None,
            }
            self.low_water();
            let io = std::future::poll_fn(|cx| {
                self.poll_io(
                    cx,
                    deadline_sleep.as_mut(),
                    due_sleep.as_mut().map(|(_, s)| s.as_mut()),
                )
            })
            .await;
            match io {
                Io::Read(mut n) => {
                    let Some(mut ended) = self.take_in(n) else {
                        return Ended::Over;
                    };
                    // A full read: more may wait in the socket (see
                    // MORE_READS).
                    for _ in 0..MORE_READS {
                        if n < READ_AHEAD {
                            break;
                        }
                        let more = std::future::poll_fn(|cx| Poll::Ready(self.read_now(cx)));
                        let Some(m) = more.await else { break };
                        n = m;
                        let Some(more) = self.take_in(n) else {
                            return Ended::Over;
                        };
                        ended += more;
                    }
                    if ended == 0 {
                        continue;
                    }
                    // Answers ended, so requests follow. Before they go,
                    // the thread's other connections take their turn and
                    // the I/O driver looks again, so what the server was
                    // still writing when this read woke the loop goes into
                    // the same batch. On loopback a server answers a batch
                    // of requests with one write, and a client that wakes on
                    // a batch's first bytes and answers at once splits it
                    // for good: nginx then took two writes where one would
                    // do, spent 11% more per request and served 0.94×
                    // h2load's rate (`bench/h2-vs-h2load.sh`). h2load's
                    // event loop waits the same way, its writes coming one
                    // turn after its reads.
                    tokio::task::yield_now().await;
                    let more = std::future::poll_fn(|cx| Poll::Ready(self.read_now(cx))).await;
                    if let Some(n) = more
                        && self.take_in(n).is_none()
                    {
                        return Ended::Over;
                    }
                }
                Io::Closed(class, e) => {
                    let class = match self.goaway {
                        Some(code) if code != NO_ERROR => ErrorClass::GoAway,
                        _ => class,
                    };
                    let why = (!self.session.ready()).then(|| {
                        http2::Error::NotHttp2(match &e {
                            Some(e) => e.to_string(),
                            None => "it closed the connection before its SETTINGS".into(),
                        })
                    });
                    self.lost(class, why);
                    return Ended::Over;
                }
                Io::Timer => {
                    self.time_out();
                    // Re-armed even where nothing was overdue yet.
                    armed = far;
                }
                Io::Due => {
                    due_sleep = None;
                    // A replay's look for a request not handed over yet
                    // is no ticket's due time.
                    self.due_now = self.pending.is_some();
                }
                Io::Woken => {}
            }
        }
    }

    /// Writes what the session has to send, then reads; or a timer fires,
    /// or a scenario's user hands in a step.
    fn poll_io(
        &mut self,
        cx: &mut Context<'_>,
        deadline: Pin<&mut tokio::time::Sleep>,
        due: Option<Pin<&mut (dyn Future<Output = ()> + '_)>>,
    ) -> Poll<Io> {
        let out = &self.session.out;
        while self.written < out.len() {
            match Pin::new(&mut self.stream).poll_write(cx, &out[self.written..]) {
                Poll::Ready(Ok(0)) => {
                    return Poll::Ready(Io::Closed(ErrorClass::ClosedEarly, None));
                }
                Poll::Ready(Ok(n)) => {
                    if Instant::now() >= self.shared.measure_from() {
                        self.local.borrow_mut().stats.bytes_written += n as u64;
                    }
                    self.written += n;
                }
                Poll::Ready(Err(e)) => {
                    return Poll::Ready(Io::Closed(io_class(&e, ErrorClass::ClosedEarly), Some(e)));
                }
                Poll::Pending => break,
            }
        }
        if self.written == out.len() && self.written > 0 {
            self.session.out.clear();
            self.written = 0;
            if let Poll::Ready(Err(e)) = Pin::new(&mut self.stream).poll_flush(cx) {
                return Poll::Ready(Io::Closed(io_class(&e, ErrorClass::ClosedEarly), Some(e)));
            }
        }
        match self.poll_read(cx) {
            Poll::Ready(Ok(0)) => return Poll::Ready(Io::Closed(ErrorClass::ClosedEarly, None)),
            Poll::Ready(Ok(n)) => return Poll::Ready(Io::Read(n)),
            Poll::Ready(Err(e)) => {
                return Poll::Ready(Io::Closed(io_class(&e, ErrorClass::ClosedEarly), Some(e)));
            }
            Poll::Pending => {}
        }
        if deadline.poll(cx).is_ready() {
            return Poll::Ready(Io::Timer);
        }
        if let Some(due) = due
            && due.poll(cx).is_ready()
        {
            return Poll::Ready(Io::Due);
        }
        if let Source::Users(mailbox) = self.source {
            // A step that can go now, or the last user gone from an idle
            // connection; otherwise woken when that changes.
            let can_open = self.may_open();
            let idle = self.session.open_streams() == 0;
            if (can_open && !mailbox.queue.borrow().is_empty()) || (idle && mailbox.live.get() == 0)
            {
                return Poll::Ready(Io::Woken);
            }
            mailbox.driver.set(Some(cx.waker().clone()));
        }
        Poll::Pending
    }

    /// What is there to read now, without waiting; the end of the
    /// connection and errors are left to the next [`Driver::poll_io`].
    fn read_now(&mut self, cx: &mut Context<'_>) -> Option<usize> {
        match self.poll_read(cx) {
            Poll::Ready(Ok(n)) if n > 0 => Some(n),
            _ => None,
        }
    }

    /// One read of at most [`READ_AHEAD`] bytes into the thread's buffer:
    /// how many (0 at the end of the connection).
    fn poll_read(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<usize>> {
        let mut buf = self.read_buf.borrow_mut();
        let len = buf.len().min(READ_AHEAD);
        let mut read = ReadBuf::new(&mut buf[..len]);
        let polled = self.stream.poll_read(cx, &mut read);
        polled.map_ok(|()| read.filled().len())
    }

    /// The session takes in `n` bytes read (see [`Driver::received`]): how
    /// many streams ended, or `None` where they broke the protocol and the
    /// connection is lost.
    fn take_in(&mut self, n: usize) -> Option<usize> {
        match self.received(n) {
            Ok(ended) => Some(ended),
            Err(e) => {
                self.lost(ErrorClass::H2Protocol, Some(e));
                None
            }
        }
    }

    /// Every ticket is taken and answered (or failed).
    fn finished(&self) -> bool {
        let idle = self.session.open_streams() == 0 && self.pending.is_none();
        match &self.source {
            // A GOAWAY may hand back requests after the schedule ran dry:
            // they go on the next connection.
            Source::Requests(_) => self.done && idle && self.tickets.carried.borrow().is_empty(),
            Source::Users(mailbox) => idle && mailbox.live.get() == 0,
        }
    }

    /// A new stream may open now: the session allows it, `-m` is not
    /// reached, and the connection's first answer has come or nothing is
    /// under way. The others wait for that first answer (its SETTINGS came
    /// before it), then open together: on loopback a client and a server
    /// fall into step, each answering the other's batch with one write,
    /// and a first batch split in two (one stream, then the rest once the
    /// SETTINGS are in) stayed split for the whole run, two writes where
    /// one would do: nginx spent 11% more per request, and served 0.94×
    /// h2load's rate (`bench/h2-vs-h2load.sh`; h2load opens all its
    /// streams at once, risking a lower limit's refusals).
    fn may_open(&self) -> bool {
        self.session.can_open()
            && self.session.open_streams() < self.shared.settings.streams
            && (self.answered || self.session.open_streams() == 0)
    }

    /// Opens streams while the session allows and requests are ready;
    /// when an open-model ticket waits for its due time, that time.
    fn open(&mut self) -> Option<Instant> {
        while self.may_open() {
            match self.source {
                Source::Requests(converted) => {
                    if self.done && self.tickets.carried.borrow().is_empty() {
                        return None;
                    }
                    let ticket = match self.pending.take() {
                        Some(t) => t,
                        None => match self.tickets.poll_next(self.shared, self.local) {
                            Next::Ticket(t) => t,
                            Next::Done => {
                                self.done = true;
                                return None;
                            }
                            Next::Later => return Some(Instant::now() + LOOK_AGAIN),
                        },
                    };
                    if let Some(due) = ticket.due
                        && !self.due_now
                        && due > Instant::now()
                    {
                        self.pending = Some(ticket);
                        return Some(due);
                    }
                    self.due_now = false;
                    self.open_request(converted, ticket);
                }
                Source::Users(mailbox) => {
                    let step = mailbox.queue.borrow_mut().pop_front()?;
                    let id = self.send(&step.request, step.ticket, Some(step.user), step.capture);
                    if let Some(stream) = self.session.data_mut(id) {
                        stream.again = Some(Box::new(step.request));
                    }
                }
            }
        }
        None
    }

    /// Opens ticket's request from the run's templates.
    fn open_request(&mut self, converted: &[Option<http2::Request>], ticket: Ticket) {
        let settings = &self.shared.settings;
        if settings.replay.is_some() {
            // Kept until the ticket ends: a GOAWAY may send it again.
            let made = self
                .local
                .borrow()
                .replayed
                .get(&ticket.seq)
                .map(|template| {
                    template.http2(
                        settings.target.scheme.as_str(),
                        ticket.seq,
                        &mut fastrand::Rng::with_seed(0),
                        &mut self.scratch,
                    )
                });
            match made {
                Some(Ok(request)) => {
                    self.send(&request, ticket, None, false);
                }
                _ => self.local.borrow_mut().record_error(
                    self.shared,
                    &ticket,
                    ErrorClass::Write,
                    false,
                ),
            }
            return;
        }
        let which = (ticket.seq % settings.requests.len() as u64) as usize;
        if let Some(request) = &converted[which] {
            self.send(request, ticket, None, false);
            return;
        }
        let made = settings.requests[which].http2(
            settings.target.scheme.as_str(),
            ticket.seq,
            &mut self.local.borrow_mut().rng,
            &mut self.scratch,
        );
        match made {
            Ok(request) => {
                self.send(&request, ticket, None, false);
            }
            Err(_) => {
                self.local
                    .borrow_mut()
                    .record_error(self.shared, &ticket, ErrorClass::Write, false)
            }
        }
    }

    /// Opens a stream for `request`; from here it is in flight until
    /// answered or failed. Its stream's id.
    fn send(
        &mut self,
        request: &http2::Request,
        ticket: Ticket,
        user: Option<usize>,
        capture: bool,
    ) -> u32 {
        let sent = Instant::now();
        let deadline = sent + self.shared.settings.timeout;
        let id = self.session.open(
            request,
            InFlight {
                ticket,
                sent,
                first_byte: None,
                status: 0,
                body_bytes: 0,
                deadline,
                length: None,
                user,
                capture,
                again: None,
            },
        );
        if self.next_check.is_none() {
            self.next_check = Some(deadline);
        }
        let block = std::mem::take(&mut self.session.header_block_written);
        if ticket.measured {
            let mut l = self.local.borrow_mut();
            l.stats.h2.header_block_written += block;
            l.in_flight += 1;
            l.step_flight(&ticket, true);
            l.release(&ticket);
            if let Some(stage) = l.stages.get_mut(ticket.stage) {
                stage.took_off();
            }
            if let Some(due) = ticket.due
                && !ticket.retried
            {
                l.lateness(&ticket, sent.saturating_duration_since(due));
            }
            l.stats.h2.plain_header_written += request.plain;
        }
        id
    }

    /// `n` bytes were read into the thread's buffer: the session takes
    /// them in, and each stream's news is recorded, stamped with now. How
    /// many streams ended (answered or not).
    fn received(&mut self, n: usize) -> Result<usize, http2::Error> {
        let now = Instant::now();
        let measuring = now >= self.shared.measure_from();
        let read_buf = self.read_buf;
        let buf = read_buf.borrow();
        let (shared, local, tickets, source) = (self.shared, self.local, self.tickets, self.source);
        let session = &mut self.session;
        let connect_time = &mut self.connect_time;
        let answered = &mut self.answered;
        let goaway = &mut self.goaway;
        let timeout = shared.settings.timeout;
        let mut ended = 0;
        let result = session.receive(&buf[..n], &mut |event| match event {
            Event::Ready => shared.connect_succeeded(),
            Event::Head {
                stream,
                status,
                plain,
                length,
                fields,
            } => {
                stream.first_byte = Some(now);
                stream.status = status;
                stream.length = Some(length.unwrap_or(0));
                stream.deadline = now + timeout;
                if stream.ticket.measured {
                    local.borrow_mut().stats.h2.plain_header_read += plain;
                }
                if let (Some(user), Source::Users(mailbox), true) =
                    (stream.user, source, stream.capture)
                {
                    mailbox.head(user, status, fields);
                }
            }
            Event::Data { stream, data } => {
                stream.body_bytes += data.len() as u64;
                stream.deadline = now + timeout;
                if let (Some(user), Source::Users(mailbox), true) =
                    (stream.user, source, stream.capture)
                {
                    mailbox.body(user, data);
                }
            }
            Event::End { stream } => {
                ended += 1;
                *answered = true;
                let timing = Timing {
                    connect: connect_time.take().unwrap_or(Duration::ZERO),
                    waiting: stream
                        .first_byte
                        .unwrap_or(now)
                        .saturating_duration_since(stream.sent),
                    processing: now.saturating_duration_since(stream.sent),
                    corrected: stream
                        .ticket
                        .due
                        .map(|due| now.saturating_duration_since(due)),
                };
                let answer = Answered {
                    done: now,
                    status: stream.status,
                    body_bytes: stream.body_bytes,
                    timing,
                };
                match (stream.user, source) {
                    (Some(user), Source::Users(mailbox)) => mailbox.answer(user, Ok(answer)),
                    _ => {
                        let error = (!shared.settings.expect_status.contains(stream.status))
                            .then_some(ErrorClass::Status);
                        local.borrow_mut().record_response(
                            shared,
                            &stream.ticket,
                            now,
                            stream.status,
                            stream.body_bytes,
                            timing,
                            error,
                        );
                    }
                }
            }
            Event::Failed { stream, why } => {
                ended += 1;
                let class = match why {
                    Failure::Reset(_) => ErrorClass::StreamReset,
                    Failure::Malformed => ErrorClass::H2Protocol,
                    Failure::Unprocessed => ErrorClass::GoAway,
                };
                let unprocessed = why == Failure::Unprocessed && *answered;
                if let (Some(user), Source::Users(mailbox)) = (stream.user, source) {
                    match stream.again {
                        // The user's step waits for the next connection,
                        // first in line.
                        Some(request) if unprocessed => {
                            let ticket = given_back(local, stream.ticket);
                            local.borrow_mut().stats.h2.goaway_retried +=
                                u64::from(ticket.measured);
                            mailbox.queue.borrow_mut().push_front(Step {
                                user,
                                request: *request,
                                ticket,
                                capture: stream.capture,
                            });
                        }
                        _ => mailbox.answer(user, Err((class, true))),
                    }
                } else if unprocessed {
                    let ticket = given_back(local, stream.ticket);
                    local.borrow_mut().stats.h2.goaway_retried += u64::from(ticket.measured);
                    tickets.carried.borrow_mut().push(ticket);
                } else {
                    local
                        .borrow_mut()
                        .record_error(shared, &stream.ticket, class, true);
                }
            }
            Event::GoAway { code } => *goaway = Some(code),
        });
        drop(buf);
        let block = std::mem::take(&mut self.session.header_block_read);
        if measuring {
            let mut l = self.local.borrow_mut();
            l.stats.bytes_read += n as u64;
            l.stats.h2.header_block_read += block;
        }
        result.map(|()| ended)
    }

    /// Sets how much must be in before the kernel wakes the loop. While
    /// every open stream's head is in and announced its body's length, no
    /// answer can end before the least any of them still lacks has come:
    /// the loop waits for that much (up to a read's worth) rather than
    /// being woken for every DATA frame, which on loopback the server pays
    /// for (with 1 MiB answers nginx spent 28% more per answer, and served
    /// 0.85× h2load's rate: `bench/h2-vs-h2load.sh`). No answer's end is
    /// read later for it. Otherwise (a head to come, a length unknown, a
    /// body to send) any byte wakes it. A server that sends less than it
    /// announced is cut by the streams' timeouts, and the end of the
    /// connection wakes the loop whatever the mark.
    fn low_water(&mut self) {
        let mut left = u64::MAX;
        for (_, s, sending) in self.session.streams() {
            match s.length {
                Some(length) if !sending => {
                    left = left.min(length.saturating_sub(s.body_bytes));
                }
                _ => {
                    left = 0;
                    break;
                }
            }
        }
        if self.session.open_streams() == 0 {
            left = 0;
        }
        let want = (left as usize).clamp(1, READ_AHEAD);
        if want != self.low_water {
            self.stream.set_receive_low_water(want);
            self.low_water = want;
        }
    }

    /// Resets the streams whose answers are overdue, each failed alone.
    fn time_out(&mut self) {
        let now = Instant::now();
        let overdue: Vec<(u32, bool)> = self
            .session
            .streams()
            .filter(|(_, s, _)| s.deadline <= now)
            .map(|(id, _, sending)| (id, sending))
            .collect();
        for (id, sending) in overdue {
            // The server's window never let the body out: the request
            // could not be written. Otherwise no answer came in time.
            let class = if sending {
                ErrorClass::Write
            } else {
                ErrorClass::ReadTimeout
            };
            if let Some(stream) = self.session.reset(id, CANCEL) {
                self.fail(stream, class);
            }
        }
        self.next_check = self.session.streams().map(|(_, s, _)| s.deadline).min();
    }

    /// A stream failed with `class` after it was sent.
    fn fail(&mut self, stream: InFlight, class: ErrorClass) {
        match (stream.user, &self.source) {
            (Some(user), Source::Users(mailbox)) => mailbox.answer(user, Err((class, true))),
            _ => self
                .local
                .borrow_mut()
                .record_error(self.shared, &stream.ticket, class, true),
        }
    }

    /// The connection is gone: every stream it held fails with `class`
    /// (or with the protocol error that ended it), and what was not sent
    /// goes on the next connection.
    fn lost(&mut self, class: ErrorClass, why: Option<http2::Error>) {
        let class = match &why {
            Some(http2::Error::NotHttp2(why)) => {
                self.local
                    .borrow_mut()
                    .firsts
                    .protocol_failure
                    .get_or_insert_with(|| not_h2(why));
                self.shared.protocol_refused();
                ErrorClass::H2Protocol
            }
            Some(http2::Error::Protocol(_)) => ErrorClass::H2Protocol,
            None => class,
        };
        for stream in self.session.take_all() {
            self.fail(stream, class);
        }
        if let Some(ticket) = self.pending.take() {
            self.tickets.carried.borrow_mut().push(ticket);
        }
        if let Source::Users(mailbox) = &self.source {
            mailbox.fail_queued(class);
        }
    }

    /// The connection's figures go to the thread's.
    fn finish(&mut self) {
        if self.session.ready()
            && let Some(max) = self.session.max_streams()
        {
            let mut l = self.local.borrow_mut();
            l.stats.h2.max_concurrent_streams = Some(
                l.stats
                    .h2
                    .max_concurrent_streams
                    .map_or(max, |m| m.min(max)),
            );
        }
        if let Some(ticket) = self.pending.take() {
            self.tickets.carried.borrow_mut().push(ticket);
        }
        // A polite end, written if the socket takes it at once.
        self.session.close(NO_ERROR);
        let waker = Waker::noop();
        let mut cx = Context::from_waker(waker);
        let _ = Pin::new(&mut self.stream).poll_write(&mut cx, &self.session.out[self.written..]);
    }
}

/// Sent, but above the last stream the server's GOAWAY says it processed
/// (RFC 9113 §6.8): it goes again on the next connection, counted apart,
/// not as an error, so `-n` stays exact. Only from a connection that
/// answered something: one that answers nothing would be retried without
/// end. The ticket to send it with.
pub(super) fn given_back(local: &RefCell<Local>, ticket: Ticket) -> Ticket {
    let mut l = local.borrow_mut();
    if ticket.measured {
        l.in_flight -= 1;
        l.step_flight(&ticket, false);
        if let Some(stage) = l.stages.get_mut(ticket.stage) {
            stage.landed();
        }
    }
    l.hold(&ticket);
    Ticket {
        retried: true,
        ..ticket
    }
}

/// A scenario step handed to the connection.
struct Step {
    user: usize,
    request: http2::Request,
    ticket: Ticket,
    capture: bool,
}

type Outcome = Result<Answered, (ErrorClass, bool)>;

/// Where a connection's scenario users hand in their steps and find their
/// answers.
struct Mailbox {
    queue: RefCell<VecDeque<Step>>,
    /// Per user: its step's outcome, its waker, and its answer's bytes
    /// (as HTTP/1.1, for a step that reads them).
    outcomes: Vec<Cell<Option<Outcome>>>,
    wakers: Vec<Cell<Option<Waker>>>,
    answers: Vec<RefCell<Vec<u8>>>,
    /// The connection's loop, waiting for a step (or for users to end).
    driver: Cell<Option<Waker>>,
    /// Users still running.
    live: Cell<usize>,
}

impl Mailbox {
    fn new(users: usize) -> Mailbox {
        Mailbox {
            queue: RefCell::new(VecDeque::new()),
            outcomes: (0..users).map(|_| Cell::new(None)).collect(),
            wakers: (0..users).map(|_| Cell::new(None)).collect(),
            answers: (0..users).map(|_| RefCell::new(Vec::new())).collect(),
            driver: Cell::new(None),
            live: Cell::new(users),
        }
    }

    fn wake_driver(&self) {
        if let Some(w) = self.driver.take() {
            w.wake();
        }
    }

    /// Ready when a step waits to be sent, or every user is done.
    fn poll_wanted(&self, cx: &mut Context<'_>) -> Poll<()> {
        if self.live.get() == 0 || !self.queue.borrow().is_empty() {
            return Poll::Ready(());
        }
        self.driver.set(Some(cx.waker().clone()));
        Poll::Pending
    }

    fn head(&self, user: usize, status: u16, fields: &[u8]) {
        let mut answer = self.answers[user].borrow_mut();
        answer.clear();
        let _ = write!(answer, "HTTP/1.1 {status} -\r\n");
        answer.extend_from_slice(fields);
        answer.extend_from_slice(b"\r\n");
    }

    fn body(&self, user: usize, data: &[u8]) {
        self.answers[user].borrow_mut().extend_from_slice(data);
    }

    fn answer(&self, user: usize, outcome: Outcome) {
        self.outcomes[user].set(Some(outcome));
        if let Some(w) = self.wakers[user].take() {
            w.wake();
        }
    }

    /// The connection is lost, or the next could not be made: the steps
    /// waiting for it fail unsent.
    fn fail_queued(&self, class: ErrorClass) {
        let queued: Vec<Step> = self.queue.borrow_mut().drain(..).collect();
        for step in queued {
            self.answer(step.user, Err((class, false)));
        }
    }

    /// A user's side: hands in a step and waits for its outcome.
    async fn exchange(&self, step: Step) -> Outcome {
        let user = step.user;
        self.queue.borrow_mut().push_back(step);
        self.wake_driver();
        std::future::poll_fn(|cx| match self.outcomes[user].take() {
            Some(outcome) => Poll::Ready(outcome),
            None => {
                self.wakers[user].set(Some(cx.waker().clone()));
                Poll::Pending
            }
        })
        .await
    }
}

/// A user's end on this connection, however it ends (its task may be
/// stopped with the run).
struct Live<'a>(&'a Mailbox);

impl Drop for Live<'_> {
    fn drop(&mut self) {
        self.0.live.set(self.0.live.get() - 1);
        self.0.wake_driver();
    }
}

/// A scenario's virtual user `index` of a connection (and its
/// successors): takes a flow's start, makes the flow's steps as streams
/// one after another, repeats; ends when the tickets do. A step lost with
/// its connection fails its flow, and the user goes on over the next; a
/// step a GOAWAY left unprocessed waits for the next connection, and the
/// flow goes on there with its variables and cookies.
async fn scenario_loop(
    shared: Arc<Shared>,
    local: Rc<RefCell<Local>>,
    tickets: Rc<Tickets>,
    timer: Option<Timer>,
    mailbox: Rc<Mailbox>,
    users: Rc<Vec<RefCell<Option<User>>>>,
    index: usize,
) {
    let (shared, local, tickets, mailbox) = (&*shared, &*local, &*tickets, &*mailbox);
    let _live = Live(mailbox);
    let scheme = shared.settings.target.scheme.as_str();
    let mut lent = Lent {
        slot: &users[index],
        user: users[index].borrow_mut().take(),
    };
    let Some(user) = lent.user.as_mut() else {
        return;
    };
    let mut send = async |filling: Filling<'_>,
                          _head: bool,
                          capture: Option<&mut Vec<u8>>,
                          ticket: &Ticket| {
        let request = match filling.http2(scheme) {
            Ok(request) => request,
            Err(Refused::Unsendable(_)) => return Sent::Unsendable,
            Err(Refused::Http2(_)) => {
                return Sent::Failed {
                    class: ErrorClass::Write,
                    sent: false,
                };
            }
        };
        let step = Step {
            user: index,
            request,
            ticket: *ticket,
            capture: capture.is_some(),
        };
        match mailbox.exchange(step).await {
            Ok(answered) => {
                if let Some(capture) = capture {
                    std::mem::swap(capture, &mut mailbox.answers[index].borrow_mut());
                }
                Sent::Answered(answered)
            }
            Err((class, sent)) => Sent::Failed { class, sent },
        }
    };
    let next = || tickets.next(shared, local);
    user.live(shared, local, timer.as_ref(), next, &mut send, || {
        Duration::ZERO
    })
    .await;
}

/// A virtual user taken from its slot for a loop's life, and put back when
/// the loop ends or is stopped with its connection.
struct Lent<'a> {
    slot: &'a RefCell<Option<User>>,
    user: Option<User>,
}

impl Drop for Lent<'_> {
    fn drop(&mut self) {
        *self.slot.borrow_mut() = self.user.take();
    }
}

/// A connection's user tasks, stopped when it is dropped (the run's end
/// cuts the connection's task, and its users with it).
struct Loops(Vec<tokio::task::JoinHandle<()>>);

impl Drop for Loops {
    fn drop(&mut self) {
        for handle in &self.0 {
            handle.abort();
        }
    }
}
