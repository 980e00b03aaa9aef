//! One connection's driver loop and the exchange at its heart: connect if
//! needed, write a request (or a pipelined batch), read into the thread's
//! shared buffer, frame each response and record it. Failures are counted
//! by class and the loop goes on with a new connection.

use std::cell::{RefCell, RefMut};
use std::io;
use std::pin::Pin;
use std::task::Poll;
use std::time::{Duration, Instant};

use tokio::io::ReadBuf;
use tokio::time::Sleep;

use super::schedule::{OpenSchedule, Ticket, until_due};
use super::{Local, Shared, Task};
use crate::conn::{ConnectError, Stream};
use crate::parse::{ResponseParser, Step};
use crate::settings::Settings;
use crate::stats::{ErrorClass, Timing};

/// A connection's reusable state. It owns no read buffer: every connection
/// of a thread reads into the thread's one buffer ([`READ_BUF`]), and only
/// bytes left unconsumed (a partial head, or an answer that arrived early)
/// are kept here, so 10,000 idle connections cost next to nothing.
#[derive(Debug)]
pub(super) struct Conn {
    stream: Option<Stream>,
    /// Received bytes not yet consumed by the parser.
    pending: Vec<u8>,
    /// Requests with placeholders, or several pipelined, are written here;
    /// a single static request is written straight from its template.
    write_buf: Vec<u8>,
    parser: ResponseParser,
    /// The `--timeout` of its writes and reads, made at its first wait and
    /// kept for its life: each wait moves the deadline on, which tokio
    /// does in place while the timer is in its wheel (one compare and
    /// swap), where a timeout per wait put a timer into the wheel and took
    /// it out again for every request.
    timer: Option<Pin<Box<Sleep>>>,
}

impl Conn {
    pub(super) fn new(stream: Option<Stream>) -> Conn {
        Conn {
            stream,
            pending: Vec::new(),
            write_buf: Vec::new(),
            parser: ResponseParser::default(),
            timer: None,
        }
    }

    /// Drops the connection (after a failure: its framing is lost).
    pub(super) fn close(&mut self) {
        self.stream = None;
    }
}

/// Waits for `work` for at most `timeout` from now, on `timer` (the
/// connection's): `None` when the time ran out first. As
/// `tokio::time::timeout`, the work is polled before the clock.
async fn within<T>(
    timer: &mut Option<Pin<Box<Sleep>>>,
    timeout: Duration,
    work: impl Future<Output = T>,
) -> Option<T> {
    let now = tokio::time::Instant::now();
    // A timeout too long to add is none: a deadline 30 years on.
    let deadline = now
        .checked_add(timeout)
        .unwrap_or_else(|| now + Duration::from_secs(30 * 365 * 86_400));
    let timer = match timer {
        Some(timer) => {
            timer.as_mut().reset(deadline);
            timer
        }
        None => timer.insert(Box::pin(tokio::time::sleep_until(deadline))),
    };
    let mut work = std::pin::pin!(work);
    std::future::poll_fn(|cx| {
        if let Poll::Ready(done) = work.as_mut().poll(cx) {
            return Poll::Ready(Some(done));
        }
        timer.as_mut().poll(cx).map(|()| None)
    })
    .await
}

/// A scenario step's request, filled by the caller, and where to keep its
/// answer's bytes.
pub(super) struct Outgoing<'a> {
    pub(super) bytes: &'a [u8],
    pub(super) head: bool,
    /// The answer's bytes as they come (cleared first), for a step that
    /// checks or extracts.
    pub(super) capture: Option<&'a mut Vec<u8>>,
}

/// The answer to an [`Outgoing`] request, left to the caller to record.
#[derive(Debug, Clone, Copy)]
pub(super) struct Answered {
    pub(super) done: Instant,
    pub(super) status: u16,
    pub(super) body_bytes: u64,
    pub(super) timing: Timing,
}

/// The read buffer every connection of a thread shares. Bodies are counted
/// as they arrive and never kept, so one buffer per thread suffices.
pub(super) const READ_BUF: usize = 64 * 1024;

/// The driver loop of one connection: take a ticket (or a batch of them
/// when pipelining), connect if needed, send, read, record, repeat.
pub(super) async fn connection(task: Task, stream: Option<Stream>) {
    let Task {
        shared,
        local,
        timer,
        read_buf,
        global: global_index,
    } = task;
    let settings = &shared.settings;
    let threads = settings.threads_used() as u64;
    let open = settings
        .schedule
        .rate_per_sec
        .map(|rate| OpenSchedule::start(&shared, global_index, rate, &local));
    let replay = local.borrow().replay.clone();
    let depth = if settings.open_model() {
        1
    } else {
        settings.pipeline
    };
    let mut conn = Conn::new(stream);
    let mut batch: Vec<Ticket> = Vec::with_capacity(depth);
    let mut backoff = Duration::ZERO;
    loop {
        batch.clear();
        {
            for _ in 0..depth {
                let ticket = match (&open, &replay) {
                    (Some(schedule), _) => schedule.borrow_mut().ticket(&shared, &local),
                    (None, Some(replay)) => replay.ticket(&shared, &local).await,
                    (None, None) => local.borrow_mut().closed_ticket(&shared, threads),
                };
                match ticket {
                    Some(t) => batch.push(t),
                    None => break,
                }
            }
        }
        if batch.is_empty() {
            break;
        }
        until_due(&batch[0], timer.as_ref()).await;
        match exchange(&shared, &local, &read_buf, &mut conn, &batch, None).await {
            Ok(_) => backoff = Duration::ZERO,
            Err(Failure::Connect(class)) => {
                if class == ErrorClass::ConnectRefused {
                    shared.connect_refused();
                }
                for t in &batch {
                    local.borrow_mut().record_error(&shared, t, class, false);
                }
                // Do not spin on a refusing server; the schedule goes on.
                backoff = (backoff * 2).clamp(Duration::from_millis(1), Duration::from_millis(100));
                if open.is_none() {
                    tokio::time::sleep(backoff).await;
                }
            }
            Err(Failure::Request { done, class }) => {
                let mut l = local.borrow_mut();
                for t in &batch[done..] {
                    l.record_error(&shared, t, class, true);
                }
                conn.stream = None;
            }
        }
    }
}

/// How an exchange failed.
#[derive(Debug)]
pub(super) enum Failure {
    /// No connection could be made; no request was sent.
    Connect(ErrorClass),
    /// The first `done` requests of the batch were answered; the rest failed.
    Request { done: usize, class: ErrorClass },
}

/// Sends a batch of requests on the connection (connecting first if
/// needed) and reads their responses. With `outgoing` (a scenario step,
/// a batch of one), its bytes are sent and its answer is handed back
/// unrecorded.
pub(super) async fn exchange(
    shared: &Shared,
    local: &RefCell<Local>,
    read_buf: &RefCell<Vec<u8>>,
    conn: &mut Conn,
    batch: &[Ticket],
    mut outgoing: Option<Outgoing<'_>>,
) -> Result<Option<Answered>, Failure> {
    let settings = &shared.settings;
    let measured = batch.iter().any(|t| t.measured);
    // A replayed request (a batch of one) is the log's, not the run's.
    let replayed = match settings.replay {
        Some(_) => local.borrow_mut().replayed.remove(&batch[0].seq),
        None => None,
    };
    let mut connect_time = Duration::ZERO;
    if conn.stream.is_none() {
        let began = Instant::now();
        let stream = connect(shared).await.map_err(|e| {
            e.remember(local);
            Failure::Connect(e.class)
        })?;
        shared.connect_succeeded();
        connect_time = began.elapsed();
        if shared.tls.is_some() && local.borrow().firsts.tls_session.is_none() {
            local.borrow_mut().firsts.tls_session = stream.tls_session();
        }
        conn.stream = Some(stream);
        conn.pending.clear();
        if measured {
            local.borrow_mut().stats.connects += 1;
        }
    }

    let template_of = |t: &Ticket| match &replayed {
        Some(request) => request,
        None => &settings.requests[(t.seq % settings.requests.len() as u64) as usize],
    };
    let head = match &outgoing {
        Some(o) => o.head,
        None => template_of(&batch[0]).is_head(),
    };
    let request: &[u8] = match (batch, &outgoing) {
        (_, Some(o)) => o.bytes,
        ([_], None) if template_of(&batch[0]).is_static() => {
            template_of(&batch[0]).static_bytes().expect("static")
        }
        _ => {
            conn.write_buf.clear();
            let mut l = local.borrow_mut();
            let Local { rng, .. } = &mut *l;
            for t in batch {
                template_of(t).write(t.seq, rng, &mut conn.write_buf);
            }
            &conn.write_buf
        }
    };
    let stream = conn.stream.as_mut().expect("connected above");
    let sent = Instant::now();
    take_off(&mut local.borrow_mut(), batch, sent);
    let fail = |done: usize, class: ErrorClass| Failure::Request { done, class };
    match within(&mut conn.timer, settings.timeout, stream.write_all(request)).await {
        None => return Err(fail(0, ErrorClass::ReadTimeout)),
        Some(Err(e)) => return Err(fail(0, io_class(&e, ErrorClass::Write))),
        Some(Ok(())) => {}
    }
    if measured {
        local.borrow_mut().stats.bytes_written += request.len() as u64;
    }

    // Read until every response of the batch is framed. Bytes are parsed
    // straight from the thread's buffer; what the parser leaves (a partial
    // head, the start of the next answer) moves to `conn.pending`.
    let mut reader = Reader {
        local,
        shared,
        batch,
        settings,
        sent,
        connect_time,
        next: 0,
        first_byte: None,
        keep: settings.keep_alive,
        capture: outgoing.as_mut().and_then(|o| o.capture.take()),
        defer: outgoing.is_some(),
        answered: None,
    };
    if let Some(c) = reader.capture.as_mut() {
        c.clear();
    }
    if local.borrow().firsts.server.is_none() {
        // Until this thread has it: one copy, not one per request.
        conn.parser.capture_server();
    }
    conn.parser.start(head);
    if !conn.pending.is_empty() {
        let pending = std::mem::take(&mut conn.pending);
        reader.first_byte = Some(Instant::now());
        let used = reader.consume(&mut conn.parser, &pending)?;
        conn.pending = pending;
        conn.pending.drain(..used);
    }
    while reader.next < batch.len() {
        let stream = conn.stream.as_mut().expect("connected");
        let (buf, n) = match within(&mut conn.timer, settings.timeout, read(stream, read_buf)).await
        {
            None => return Err(fail(reader.next, ErrorClass::ReadTimeout)),
            Some(Err(e)) => return Err(fail(reader.next, io_class(&e, ErrorClass::ClosedEarly))),
            Some(Ok(read)) => read,
        };
        match n {
            0 => {
                // The peer closed: that ends a close-delimited body, or
                // cuts the answer short.
                let response = conn
                    .parser
                    .eof()
                    .map_err(|e| fail(reader.next, e.class()))?;
                reader.keep = false;
                reader.record(response);
                if reader.next < batch.len() {
                    return Err(fail(reader.next, ErrorClass::ClosedEarly));
                }
            }
            n => {
                reader.first_byte.get_or_insert_with(Instant::now);
                if batch[reader.next].measured {
                    local.borrow_mut().stats.bytes_read += n as u64;
                }
                if conn.pending.is_empty() {
                    let used = reader.consume(&mut conn.parser, &buf[..n])?;
                    conn.pending.extend_from_slice(&buf[used..n]);
                } else {
                    conn.pending.extend_from_slice(&buf[..n]);
                    let pending = std::mem::take(&mut conn.pending);
                    let used = reader.consume(&mut conn.parser, &pending);
                    conn.pending = pending;
                    conn.pending.drain(..*used.as_ref().unwrap_or(&0));
                    used?;
                }
            }
        }
    }
    if let Some(server) = conn.parser.take_server() {
        local.borrow_mut().firsts.server.get_or_insert(server);
    }
    if !reader.keep {
        conn.stream = None;
    }
    Ok(reader.answered)
}

/// From `sent` on, each measured request of the batch is in flight until
/// it is answered or fails (or the run is cut); the first one's lateness
/// against its due time is counted.
fn take_off(l: &mut Local, batch: &[Ticket], sent: Instant) {
    l.in_flight += batch.iter().filter(|t| t.measured).count() as u64;
    for t in batch.iter().filter(|t| t.measured) {
        l.step_flight(t, true);
        l.release(t);
        if let Some(stage) = l.stages.get_mut(t.stage) {
            stage.took_off();
        }
    }
    if let Some(due) = batch[0].due
        && batch[0].measured
        && !batch[0].retried
    {
        l.lateness(&batch[0], sent.saturating_duration_since(due));
    }
}

/// Why a connection attempt failed: its error class, and the handshake's
/// error when the socket connected but TLS did not.
pub(super) struct NotConnected {
    pub(super) class: ErrorClass,
    pub(super) handshake: Option<io::Error>,
}

impl NotConnected {
    /// Keeps the thread's first TLS failure, to be named in the report.
    pub(super) fn remember(&self, local: &RefCell<Local>) {
        if let Some(e) = &self.handshake {
            local
                .borrow_mut()
                .firsts
                .tls_failure
                .get_or_insert_with(|| e.to_string());
        }
    }
}

/// Opens a connection to the target within `--connect-timeout`, the TLS
/// handshake included: the one way every driver connects.
pub(super) async fn connect(shared: &Shared) -> Result<Stream, NotConnected> {
    let connect = Stream::connect(&shared.endpoint, shared.tls.as_ref());
    let (class, handshake) =
        match tokio::time::timeout(shared.settings.connect_timeout, connect).await {
            Ok(Ok(stream)) => return Ok(stream),
            Err(_) => (ErrorClass::ConnectTimeout, None),
            Ok(Err(ConnectError::Transport(e))) => (connect_class(&e), None),
            Ok(Err(ConnectError::Handshake(e))) => (ErrorClass::Tls, Some(e)),
        };
    Err(NotConnected { class, handshake })
}

/// The read step: waits until the stream has bytes (or has ended), reads
/// them into the thread's shared buffer, and returns that buffer borrowed,
/// with how many bytes came (0: the peer closed).
///
/// The buffer is borrowed inside each poll only, never across an await: a
/// connection waiting here leaves it to the thread's other connections.
/// The borrow handed back is taken in the poll that read the bytes, so no
/// other connection can run between reading them and parsing them; the
/// caller drops it before its next await.
async fn read<'b>(
    stream: &mut Stream,
    shared: &'b RefCell<Vec<u8>>,
) -> io::Result<(RefMut<'b, Vec<u8>>, usize)> {
    std::future::poll_fn(|cx| {
        let mut buf = shared.borrow_mut();
        let mut read = ReadBuf::new(&mut buf);
        match stream.poll_read(cx, &mut read) {
            Poll::Ready(Ok(())) => {
                let n = read.filled().len();
                Poll::Ready(Ok((buf, n)))
            }
            Poll::Ready(Err(e)) => Poll::Ready(Err(e)),
            Poll::Pending => Poll::Pending,
        }
    })
    .await
}

/// The read side of one exchange: which response of the batch comes next,
/// and the timings that go with it.
struct Reader<'a> {
    local: &'a RefCell<Local>,
    shared: &'a Shared,
    batch: &'a [Ticket],
    settings: &'a Settings,
    sent: Instant,
    connect_time: Duration,
    /// Index in the batch of the response being read.
    next: usize,
    first_byte: Option<Instant>,
    keep: bool,
    /// Where the answer's bytes go, when a scenario step reads it.
    capture: Option<&'a mut Vec<u8>>,
    /// Hand the answer back instead of recording it.
    defer: bool,
    answered: Option<Answered>,
}

impl Reader<'_> {
    /// Feeds `data` to the parser, recording every response it completes;
    /// returns how many bytes were consumed (the rest must be kept).
    fn consume(&mut self, parser: &mut ResponseParser, data: &[u8]) -> Result<usize, Failure> {
        let mut used = 0;
        while self.next < self.batch.len() && used < data.len() {
            let step = parser.feed(&data[used..]);
            if let (Some(capture), Ok(Step::NeedMore(n) | Step::Done(n, _))) =
                (self.capture.as_mut(), &step)
            {
                capture.extend_from_slice(&data[used..used + n]);
            }
            match step {
                Ok(Step::NeedMore(n)) => {
                    used += n;
                    break;
                }
                Ok(Step::Done(n, response)) => {
                    used += n;
                    self.record(response);
                    if let Some(t) = self.batch.get(self.next) {
                        let template = &self.settings.requests
                            [(t.seq % self.settings.requests.len() as u64) as usize];
                        parser.start(template.is_head());
                        // Its bytes, if any, are already here.
                        self.first_byte = (used < data.len()).then(Instant::now);
                    }
                }
                Err(e) => {
                    return Err(Failure::Request {
                        done: self.next,
                        class: e.class(),
                    });
                }
            }
        }
        Ok(used)
    }

    /// Records the response to `batch[next]` and moves on.
    fn record(&mut self, response: crate::parse::Response) {
        let ticket = self.batch[self.next];
        let done = Instant::now();
        self.keep &= response.keep_alive;
        let timing = Timing {
            connect: if self.next == 0 {
                self.connect_time
            } else {
                Duration::ZERO
            },
            waiting: self
                .first_byte
                .unwrap_or(done)
                .saturating_duration_since(self.sent),
            processing: done.saturating_duration_since(self.sent),
            corrected: ticket.due.map(|due| done.saturating_duration_since(due)),
        };
        if self.defer {
            self.answered = Some(Answered {
                done,
                status: response.status,
                body_bytes: response.body_bytes,
                timing,
            });
        } else {
            let status = response.status;
            let error =
                (!self.settings.expect_status.contains(status)).then_some(ErrorClass::Status);
            self.local.borrow_mut().record_response(
                self.shared,
                &ticket,
                done,
                status,
                response.body_bytes,
                timing,
                error,
            );
        }
        self.next += 1;
    }
}

/// The class of a failed connect, named by its errno where one says what
/// to fix (a "connect failed" with no reason helps nobody).
pub(super) fn connect_class(e: &io::Error) -> ErrorClass {
    match e.raw_os_error() {
        Some(libc::EMFILE | libc::ENFILE) => return ErrorClass::ConnectTooManyFiles,
        Some(libc::ENOENT | libc::ENOTSOCK) => return ErrorClass::ConnectNoSocket,
        Some(libc::EADDRNOTAVAIL) => return ErrorClass::ConnectNoLocalPort,
        Some(libc::ENETUNREACH | libc::EHOSTUNREACH) => return ErrorClass::ConnectUnreachable,
        Some(libc::EACCES | libc::EPERM) => return ErrorClass::ConnectDenied,
        _ => {}
    }
    match e.kind() {
        io::ErrorKind::ConnectionRefused => ErrorClass::ConnectRefused,
        io::ErrorKind::TimedOut => ErrorClass::ConnectTimeout,
        _ => ErrorClass::ConnectOther,
    }
}

pub(super) fn io_class(e: &io::Error, otherwise: ErrorClass) -> ErrorClass {
    match e.kind() {
        io::ErrorKind::ConnectionReset
        | io::ErrorKind::BrokenPipe
        | io::ErrorKind::ConnectionAborted => ErrorClass::Reset,
        io::ErrorKind::TimedOut => ErrorClass::ReadTimeout,
        _ => otherwise,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn connect_failures_are_named_by_their_errno() {
        let class = |errno| connect_class(&io::Error::from_raw_os_error(errno));
        assert_eq!(class(libc::EMFILE), ErrorClass::ConnectTooManyFiles);
        assert_eq!(class(libc::ENFILE), ErrorClass::ConnectTooManyFiles);
        assert_eq!(class(libc::ENOENT), ErrorClass::ConnectNoSocket);
        assert_eq!(class(libc::EADDRNOTAVAIL), ErrorClass::ConnectNoLocalPort);
        assert_eq!(class(libc::EHOSTUNREACH), ErrorClass::ConnectUnreachable);
        assert_eq!(class(libc::EACCES), ErrorClass::ConnectDenied);
        assert_eq!(class(libc::ECONNREFUSED), ErrorClass::ConnectRefused);
        assert_eq!(class(libc::ETIMEDOUT), ErrorClass::ConnectTimeout);
        assert_eq!(class(libc::EPROTO), ErrorClass::ConnectOther);
    }
}
