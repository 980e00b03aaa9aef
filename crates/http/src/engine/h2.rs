//! One HTTP/2 connection's driver: connect, hand the stream to the `h2`
//! codec (framing, HPACK, flow control), then run `-m` request loops on
//! it at once, each taking tickets from the same schedule as HTTP/1.1
//! connections do, so `-n`, `-d`, `--rate` and the warm-up mean the same
//! thing over both. A connection the server ends (GOAWAY, a reset, a
//! protocol error) fails the requests it still held, by class, and a new
//! one is opened while tickets remain. Requests not yet sent go on the
//! next connection, and so do requests a GOAWAY says the server did not
//! process (streams above its last stream id, RFC 9113 §6.8): those count
//! as retried (`h2_goaway_retried`), not as errors.
//!
//! A frame counter sits between the codec and the socket: it counts the
//! bytes each way and, from the frames' own 9-byte headers, the bytes of
//! HEADERS and CONTINUATION payloads, which against the header fields'
//! plain size give HPACK's savings (as h2load reports them).

use std::cell::{Cell, RefCell};
use std::io;
use std::pin::Pin;
use std::rc::Rc;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use bytes::Bytes;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

use super::exchange::{Answered, connect_class, io_class};
use super::scenario::{Sent, User};
use super::schedule::{OpenSchedule, Ticket, until_due};
use super::{Local, Shared};
use crate::conn::{ConnectError, Stream};
use crate::request::RequestTemplate;
use crate::stats::{ErrorClass, Timing};
use crate::tls::refused_alpn;
use dyno_load::Timer;

/// The connection preface a client sends before its first frame.
const PREFACE_LEN: usize = 24;
/// Frame types whose payload is a header block.
const HEADERS: u8 = 0x1;
const CONTINUATION: u8 = 0x9;
/// Flow-control windows: the connection's large enough never to stall; a
/// stream's 1 MiB, which `bench/h2-vs-h2load.sh` found better for 1 MiB
/// bodies than 16 MiB (0.71–0.81× h2load's req/s against 0.67×) or 256
/// KiB (0.65×), at the same speed for small pages.
const STREAM_WINDOW: u32 = 1 << 20;
const CONNECTION_WINDOW: u32 = 1 << 30;

/// A request converted once for HTTP/2: what `h2` sends for it.
#[derive(Debug, Clone)]
struct H2Request {
    method: http::Method,
    uri: http::Uri,
    headers: http::HeaderMap,
    body: Option<Bytes>,
    /// The header fields' plain size, pseudo-fields included: name and
    /// value bytes, as h2load adds them up.
    plain_header_bytes: u64,
}

/// Header fields HTTP/2 forbids (RFC 9113 §8.2.2): the connection's
/// business, which HTTP/2 does itself. `Host` becomes `:authority`.
fn connection_specific(name: &str) -> bool {
    [
        "host",
        "connection",
        "keep-alive",
        "proxy-connection",
        "transfer-encoding",
        "upgrade",
    ]
    .iter()
    .any(|n| name.eq_ignore_ascii_case(n))
}

impl H2Request {
    /// Request `seq` of `template`, from the HTTP/1.1 bytes the template
    /// writes (so `{seq}` and `{rand}` fill in exactly as they do there).
    fn new(
        template: &RequestTemplate,
        scheme: &str,
        seq: u64,
        rng: &mut fastrand::Rng,
        scratch: &mut Vec<u8>,
    ) -> Result<H2Request, String> {
        scratch.clear();
        template.write(seq, rng, scratch);
        H2Request::from_http1(scratch, scheme)
    }

    /// The request an HTTP/1.1 request's bytes describe (a template's, or
    /// a scenario step's as filled).
    fn from_http1(scratch: &[u8], scheme: &str) -> Result<H2Request, String> {
        let head_end = scratch
            .windows(4)
            .position(|w| w == b"\r\n\r\n")
            .ok_or("the request has no end of head")?;
        let head = std::str::from_utf8(&scratch[..head_end]).map_err(|e| e.to_string())?;
        let mut lines = head.split("\r\n");
        let request_line = lines.next().unwrap_or_default();
        let mut parts = request_line.split(' ');
        let method = parts.next().unwrap_or_default();
        let path = parts.next().unwrap_or("/");
        let mut authority = "";
        let mut headers = http::HeaderMap::new();
        let mut plain = (":method".len()
            + method.len()
            + ":path".len()
            + path.len()
            + ":scheme".len()
            + scheme.len()) as u64;
        for line in lines {
            let Some((name, value)) = line.split_once(':') else {
                continue;
            };
            let value = value.trim();
            if name.eq_ignore_ascii_case("host") {
                authority = value;
                continue;
            }
            if connection_specific(name) {
                continue;
            }
            let name = http::HeaderName::from_bytes(name.to_ascii_lowercase().as_bytes())
                .map_err(|e| e.to_string())?;
            plain += (name.as_str().len() + value.len()) as u64;
            headers.append(
                name,
                http::HeaderValue::from_str(value).map_err(|e| e.to_string())?,
            );
        }
        plain += (":authority".len() + authority.len()) as u64;
        let uri = http::Uri::builder()
            .scheme(scheme)
            .authority(authority)
            .path_and_query(path)
            .build()
            .map_err(|e| e.to_string())?;
        let body = &scratch[head_end + 4..];
        Ok(H2Request {
            method: http::Method::from_bytes(method.as_bytes()).map_err(|e| e.to_string())?,
            uri,
            headers,
            body: (!body.is_empty()).then(|| Bytes::copy_from_slice(body)),
            plain_header_bytes: plain,
        })
    }

    fn to_request(&self) -> http::Request<()> {
        let mut request = http::Request::new(());
        *request.method_mut() = self.method.clone();
        *request.uri_mut() = self.uri.clone();
        *request.headers_mut() = self.headers.clone();
        request
    }
}

/// Bytes and header-block bytes one connection moved, for the thread's
/// stats; counted only once the measured part of the run has begun.
#[derive(Debug, Default)]
struct Counts {
    read: Cell<u64>,
    written: Cell<u64>,
    header_block_read: Cell<u64>,
    header_block_written: Cell<u64>,
}

/// Where a byte stream is in its frames: how much of a preface to skip,
/// the frame header being read, and what is left of the payload.
#[derive(Debug, Default)]
struct FrameScan {
    skip: usize,
    header: [u8; 9],
    have: usize,
    payload_left: usize,
    counting: bool,
}

impl FrameScan {
    /// Walks `data`, returning the header-block bytes in it.
    fn scan(&mut self, mut data: &[u8]) -> u64 {
        let mut block = 0;
        while !data.is_empty() {
            if self.skip > 0 {
                let n = self.skip.min(data.len());
                self.skip -= n;
                data = &data[n..];
            } else if self.payload_left > 0 {
                let n = self.payload_left.min(data.len());
                if self.counting {
                    block += n as u64;
                }
                self.payload_left -= n;
                data = &data[n..];
            } else {
                let n = (9 - self.have).min(data.len());
                self.header[self.have..self.have + n].copy_from_slice(&data[..n]);
                self.have += n;
                data = &data[n..];
                if self.have == 9 {
                    self.have = 0;
                    let h = self.header;
                    self.payload_left =
                        (usize::from(h[0]) << 16) | (usize::from(h[1]) << 8) | usize::from(h[2]);
                    self.counting = matches!(h[3], HEADERS | CONTINUATION);
                }
            }
        }
        block
    }
}

/// How much one read from the socket may bring. The codec asks for a few
/// KiB at a time; a large body would cost a `recv` each, so reads go
/// through a buffer this large. Not larger: on loopback, a client that
/// drains its sockets in big gulps sleeps between them, and the server
/// pays for waking it (`bench/h2-vs-h2load.sh` prints the sleeps): with
/// 256 KiB nginx spent about a fifth more per 1 MiB answer, and served
/// 0.70–0.79× h2load's rate against 0.92× with 32 KiB.
const READ_AHEAD: usize = 32 * 1024;

/// The socket as the codec sees it, read through a buffer, with its
/// frames counted.
struct Counted {
    stream: tokio::io::BufReader<Stream>,
    counts: Rc<Counts>,
    reading: FrameScan,
    writing: FrameScan,
    shared: Arc<Shared>,
}

impl Counted {
    fn measuring(&self) -> bool {
        Instant::now() >= self.shared.measure_from()
    }
}

impl AsyncRead for Counted {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let before = buf.filled().len();
        let polled = Pin::new(&mut this.stream).poll_read(cx, buf);
        let new = &buf.filled()[before..];
        if !new.is_empty() {
            let block = this.reading.scan(new);
            if this.measuring() {
                let c = &this.counts;
                c.read.set(c.read.get() + new.len() as u64);
                c.header_block_read.set(c.header_block_read.get() + block);
            }
        }
        polled
    }
}

impl AsyncWrite for Counted {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let polled = Pin::new(&mut this.stream).poll_write(cx, buf);
        if let Poll::Ready(Ok(n)) = polled {
            let block = this.writing.scan(&buf[..n]);
            if this.measuring() {
                let c = &this.counts;
                c.written.set(c.written.get() + n as u64);
                c.header_block_written
                    .set(c.header_block_written.get() + block);
            }
        }
        polled
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().stream).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().stream).poll_shutdown(cx)
    }
}

/// Where a connection's request loops take their tickets: requests that
/// a connection ended before they were sent come first, then the schedule.
struct Tickets {
    carried: RefCell<Vec<Ticket>>,
    schedule: Schedule,
}

enum Schedule {
    Closed { threads: u64 },
    Open(Rc<RefCell<OpenSchedule>>),
}

impl Tickets {
    fn next(&self, shared: &Shared, local: &RefCell<Local>) -> Option<Ticket> {
        if let Some(t) = self.carried.borrow_mut().pop() {
            return Some(t);
        }
        match &self.schedule {
            Schedule::Closed { threads } => local.borrow_mut().closed_ticket(shared, *threads),
            Schedule::Open(schedule) => schedule.borrow_mut().ticket(shared, local),
        }
    }
}

/// One HTTP/2 connection's shared state, for its request loops.
struct Connection {
    /// Its first answer has come: the server speaks HTTP/2 and its
    /// SETTINGS (the stream limit) have been taken in.
    answered: Cell<bool>,
    /// Wakes the other loops, which wait for that before their first
    /// request: opening `-m` streams before the server's SETTINGS are in
    /// would exceed a lower limit and have streams refused.
    opened: tokio::sync::Notify,
    /// The tickets are all taken.
    done: Cell<bool>,
    /// The time it took to connect, charged to its first request.
    connect_time: Cell<Option<Duration>>,
    /// Why the connection ended, once it has failed.
    ended_by: Rc<Cell<Option<ErrorClass>>>,
}

impl Connection {
    fn open_to_all(&self) {
        self.answered.set(true);
        self.opened.notify_waiters();
    }

    /// A loop's start: the `first` goes at once, the others once the
    /// connection has answered; false when it failed before that.
    async fn opened(&self, first: bool) -> bool {
        if !first {
            let opened = self.opened.notified();
            if !self.answered.get() {
                opened.await;
            }
        }
        first || self.answered.get()
    }

    /// The next ticket of a loop; `None` when they are all taken, which
    /// marks the connection done (and lets the waiting loops see it).
    fn next(
        &self,
        tickets: &Tickets,
        shared: &Shared,
        local: &RefCell<Local>,
        first: bool,
    ) -> Option<Ticket> {
        let ticket = tickets.next(shared, local);
        if ticket.is_none() {
            self.done.set(true);
            if first {
                self.opened.notify_waiters();
            }
        }
        ticket
    }

    /// An answer came: the first opens the connection to every loop.
    fn answered_once(&self, shared: &Shared) {
        if !self.answered.get() {
            shared.connect_succeeded();
            self.open_to_all();
        }
    }

    /// A request failed: a stream cut because its connection ended takes
    /// the connection's reason, and a connection lost before any answer
    /// says the server does not speak HTTP/2 there (or not as asked).
    /// Whether it was the latter.
    fn failed(&self, f: &mut Failed, shared: &Shared, local: &RefCell<Local>) -> bool {
        if let Some(class) = self.ended_by.get()
            && f.lost
            && matches!(f.class, ErrorClass::Reset | ErrorClass::ClosedEarly)
        {
            f.class = class;
        }
        let not_http2 = !self.answered.get() && f.lost;
        if not_http2 {
            local
                .borrow_mut()
                .protocol_failure
                .get_or_insert_with(|| not_h2(&f.why));
            shared.protocol_refused();
        }
        not_http2
    }
}

/// The driver loop of one HTTP/2 connection (and its successors).
pub(super) async fn h2_connection(
    shared: Arc<Shared>,
    local: Rc<RefCell<Local>>,
    timer: Option<Timer>,
    global_index: usize,
    mut stream: Option<Stream>,
) {
    let settings = &shared.settings;
    let threads = settings.threads.min(settings.connections).max(1) as u64;
    let tickets = Rc::new(Tickets {
        carried: RefCell::new(Vec::new()),
        schedule: match settings.schedule.rate_per_sec {
            Some(rate) => Schedule::Open(OpenSchedule::start(&shared, global_index, rate, &local)),
            None => Schedule::Closed { threads },
        },
    });
    let scheme = settings.target.scheme.as_str();
    let mut scratch = Vec::new();
    // Static templates are converted once; the others per request.
    let converted: Vec<Option<H2Request>> = settings
        .requests
        .iter()
        .map(|t| {
            t.is_static().then(|| {
                let mut rng = fastrand::Rng::with_seed(0);
                H2Request::new(t, scheme, 0, &mut rng, &mut scratch).ok()
            })?
        })
        .collect();
    let converted = Rc::new(converted);
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
    let mut backoff = Duration::ZERO;
    loop {
        let began = Instant::now();
        let connected = match stream.take() {
            Some(s) => Ok(s),
            None => {
                let connect = Stream::connect(&shared.endpoint, shared.tls.as_ref());
                match tokio::time::timeout(settings.connect_timeout, connect).await {
                    Err(_) => Err((ErrorClass::ConnectTimeout, None)),
                    Ok(Err(ConnectError::Transport(e))) => Err((connect_class(&e), None)),
                    Ok(Err(ConnectError::Handshake(e))) if refused_alpn(&e) => Err((
                        ErrorClass::H2Protocol,
                        Some(no_h2_by_alpn(
                            "it refused the handshake with a no_application_protocol alert",
                        )),
                    )),
                    Ok(Err(ConnectError::Handshake(e))) => {
                        local
                            .borrow_mut()
                            .tls_failure
                            .get_or_insert_with(|| e.to_string());
                        Err((ErrorClass::Tls, None))
                    }
                    Ok(Ok(s)) => Ok(s),
                }
            }
        };
        let handshake = match connected {
            Ok(s) => open_h2(&shared, &local, s).await,
            Err(failed) => Err(failed),
        };
        let (sender, counts, ended, ended_by) = match handshake {
            Ok(h) => h,
            Err((class, why)) => {
                if class == ErrorClass::ConnectRefused {
                    shared.connect_refused();
                }
                if let Some(why) = why {
                    local.borrow_mut().protocol_failure.get_or_insert(why);
                    shared.protocol_refused();
                }
                // One ticket pays for the failed attempt, as a batch of
                // one does over HTTP/1.1.
                let Some(ticket) = tickets.next(&shared, &local) else {
                    return;
                };
                local
                    .borrow_mut()
                    .record_error(&shared, &ticket, class, false);
                backoff = (backoff * 2).clamp(Duration::from_millis(1), Duration::from_millis(100));
                if settings.schedule.rate_per_sec.is_none() {
                    tokio::time::sleep(backoff).await;
                }
                continue;
            }
        };
        if Instant::now() >= shared.measure_from() {
            local.borrow_mut().stats.connects += 1;
        }
        let connection = Connection {
            answered: Cell::new(false),
            opened: tokio::sync::Notify::new(),
            done: Cell::new(false),
            connect_time: Cell::new(Some(began.elapsed())),
            ended_by,
        };
        let connection = Rc::new(connection);
        // One task per stream, so an answer wakes only its own loop.
        let mut loops = Loops(
            (0..settings.streams)
                .map(|i| match &users {
                    Some(users) => tokio::task::spawn_local(scenario_loop(
                        Arc::clone(&shared),
                        Rc::clone(&local),
                        Rc::clone(&tickets),
                        timer.clone(),
                        sender.clone(),
                        Rc::clone(&connection),
                        Rc::clone(users),
                        i,
                    )),
                    None => tokio::task::spawn_local(request_loop(
                        Arc::clone(&shared),
                        Rc::clone(&local),
                        Rc::clone(&tickets),
                        timer.clone(),
                        sender.clone(),
                        Rc::clone(&converted),
                        Rc::clone(&connection),
                        i == 0,
                    )),
                })
                .collect(),
        );
        for handle in &mut loops.0 {
            let _ = handle.await;
        }
        // The server's SETTINGS have been taken in by now; usize::MAX is
        // what h2 holds when the server set no limit.
        let max = sender.current_max_send_streams();
        drop(sender);
        ended.abort();
        {
            let mut l = local.borrow_mut();
            l.stats.bytes_read += counts.read.get();
            l.stats.bytes_written += counts.written.get();
            l.stats.h2.header_block_read += counts.header_block_read.get();
            l.stats.h2.header_block_written += counts.header_block_written.get();
            if max < usize::MAX && connection.answered.get() {
                l.stats.h2.max_concurrent_streams = Some(
                    l.stats
                        .h2
                        .max_concurrent_streams
                        .map_or(max, |m| m.min(max)),
                );
            }
        }
        if connection.done.get() && tickets.carried.borrow().is_empty() {
            return;
        }
        if shared.stopped() {
            return;
        }
    }
}

type Handshake = (
    h2::client::SendRequest<Bytes>,
    Rc<Counts>,
    tokio::task::JoinHandle<()>,
    Rc<Cell<Option<ErrorClass>>>,
);

/// The HTTP/2 handshake on `stream`; the connection's codec then runs as
/// its own task. On failure, the class and, for a server that does not
/// speak HTTP/2, why.
async fn open_h2(
    shared: &Arc<Shared>,
    local: &RefCell<Local>,
    stream: Stream,
) -> Result<Handshake, (ErrorClass, Option<String>)> {
    if let Some(session) = stream.tls_session() {
        let alpn = session.alpn.clone();
        if local.borrow().tls_session.is_none() {
            local.borrow_mut().tls_session = Some(session);
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
    let counts = Rc::new(Counts::default());
    let io = Counted {
        stream: tokio::io::BufReader::with_capacity(READ_AHEAD, stream),
        counts: Rc::clone(&counts),
        reading: FrameScan::default(),
        writing: FrameScan {
            skip: PREFACE_LEN,
            ..FrameScan::default()
        },
        shared: Arc::clone(shared),
    };
    let handshake = h2::client::Builder::new()
        .enable_push(false)
        .initial_window_size(STREAM_WINDOW)
        .initial_connection_window_size(CONNECTION_WINDOW)
        .handshake::<_, Bytes>(io);
    let (sender, connection) =
        match tokio::time::timeout(shared.settings.connect_timeout, handshake).await {
            Err(_) => return Err((ErrorClass::ConnectTimeout, None)),
            Ok(Err(e)) => return Err((h2_class(&e), Some(not_h2(&e)))),
            Ok(Ok(pair)) => pair,
        };
    // How the connection ended, when it failed: h2 tells the streams it
    // cut only that their connection is gone, and the connection why
    // (a GOAWAY with an error, a protocol error).
    let ended_by = Rc::new(Cell::new(None));
    let end = Rc::clone(&ended_by);
    let ended = tokio::task::spawn_local(async move {
        if let Err(e) = connection.await {
            end.set(Some(h2_class(&e)));
        }
    });
    Ok((sender, counts, ended, ended_by))
}

/// `--h2` (or `--alpn h2`) against a TLS server that does not offer h2:
/// `how` says what it did instead. Every connection would fail the same
/// way, so the run stops at the first.
fn no_h2_by_alpn(how: &str) -> String {
    format!("the server does not offer h2 by ALPN ({how}); drop --h2 or use --alpn h2,http/1.1")
}

fn not_h2(e: &dyn std::fmt::Display) -> String {
    format!(
        "the HTTP/2 handshake failed ({e}): does the server speak HTTP/2 there (h2c with prior knowledge for http://)?"
    )
}

/// One of a connection's `-m` request loops: takes a ticket, sends it as a
/// stream, reads the answer, records it; ends when the tickets do or when
/// the connection fails. Only the `first` loop starts at once; the others
/// wait for the connection's first answer.
#[allow(clippy::too_many_arguments)]
async fn request_loop(
    shared: Arc<Shared>,
    local: Rc<RefCell<Local>>,
    tickets: Rc<Tickets>,
    timer: Option<Timer>,
    mut sender: h2::client::SendRequest<Bytes>,
    converted: Rc<Vec<Option<H2Request>>>,
    connection: Rc<Connection>,
    first: bool,
) {
    let (shared, local, tickets, connection) = (&*shared, &*local, &*tickets, &*connection);
    let timer = timer.as_ref();
    let settings = &shared.settings;
    let scheme = settings.target.scheme.as_str();
    let mut scratch = Vec::new();
    if !connection.opened(first).await {
        return;
    }
    loop {
        let Some(ticket) = connection.next(tickets, shared, local, first) else {
            return;
        };
        until_due(&ticket, timer).await;
        let which = (ticket.seq % settings.requests.len() as u64) as usize;
        let built;
        let request = match &converted[which] {
            Some(r) => r,
            None => {
                let made = {
                    let mut l = local.borrow_mut();
                    H2Request::new(
                        &settings.requests[which],
                        scheme,
                        ticket.seq,
                        &mut l.rng,
                        &mut scratch,
                    )
                };
                match made {
                    Ok(r) => {
                        built = r;
                        &built
                    }
                    Err(_) => {
                        local
                            .borrow_mut()
                            .record_error(shared, &ticket, ErrorClass::Write, false);
                        continue;
                    }
                }
            }
        };
        let result = exchange(
            shared,
            local,
            &mut sender,
            request,
            &ticket,
            connection,
            None,
        )
        .await;
        let mut failed = match result {
            Ok(_) => {
                connection.answered_once(shared);
                continue;
            }
            Err(f) => f,
        };
        let not_http2 = connection.failed(&mut failed, shared, local);
        if failed.unprocessed && connection.answered.get() {
            // Sent, but above the last stream the server's GOAWAY says it
            // processed (RFC 9113 §6.8): it goes again on the next
            // connection, counted apart, not as an error, so `-n` stays
            // exact. Only on a connection that answered something: one
            // that answers nothing would be retried without end.
            {
                let mut l = local.borrow_mut();
                if ticket.measured {
                    l.in_flight -= 1;
                    if let Some(stage) = l.stages.get_mut(ticket.stage) {
                        stage.landed();
                    }
                    l.stats.h2.goaway_retried += 1;
                }
                l.hold(&ticket);
            }
            tickets.carried.borrow_mut().push(Ticket {
                retried: true,
                ..ticket
            });
        } else if failed.sent || not_http2 {
            // Counted once, here: a request that never left because the
            // server is not HTTP/2 would fail the same way everywhere.
            local
                .borrow_mut()
                .record_error(shared, &ticket, failed.class, failed.sent);
        } else {
            // Never left: it goes on the next connection.
            tickets.carried.borrow_mut().push(ticket);
        }
        if failed.lost {
            if first {
                // Lets the waiting loops see that it failed.
                connection.opened.notify_waiters();
            }
            return;
        }
    }
}

/// A scenario's virtual user `index` of a connection: takes a flow's
/// start, makes the flow's steps as streams one after another, repeats;
/// ends when the tickets do or when the connection fails (the flow under
/// way then fails, and the user goes on over the next connection). A step
/// a GOAWAY left unprocessed fails too: its flow cannot wait for a new
/// connection.
#[allow(clippy::too_many_arguments)]
async fn scenario_loop(
    shared: Arc<Shared>,
    local: Rc<RefCell<Local>>,
    tickets: Rc<Tickets>,
    timer: Option<Timer>,
    mut sender: h2::client::SendRequest<Bytes>,
    connection: Rc<Connection>,
    users: Rc<Vec<RefCell<Option<User>>>>,
    index: usize,
) {
    let (shared, local, tickets, connection) = (&*shared, &*local, &*tickets, &*connection);
    let first = index == 0;
    let scheme = shared.settings.target.scheme.as_str();
    if !connection.opened(first).await {
        return;
    }
    let mut lent = Lent {
        slot: &users[index],
        user: users[index].borrow_mut().take(),
    };
    let Some(user) = lent.user.as_mut() else {
        return;
    };
    let lost = Cell::new(false);
    let mut send =
        async |bytes: &[u8], _head: bool, capture: Option<&mut Vec<u8>>, ticket: &Ticket| {
            let Ok(request) = H2Request::from_http1(bytes, scheme) else {
                return Sent::Failed {
                    class: ErrorClass::Write,
                    sent: false,
                };
            };
            match exchange(
                shared,
                local,
                &mut sender,
                &request,
                ticket,
                connection,
                Some(capture),
            )
            .await
            {
                Ok(Some(answered)) => {
                    connection.answered_once(shared);
                    Sent::Answered(answered)
                }
                Ok(None) => Sent::Failed {
                    class: ErrorClass::ClosedEarly,
                    sent: true,
                },
                Err(mut f) => {
                    connection.failed(&mut f, shared, local);
                    lost.set(lost.get() || f.lost);
                    Sent::Failed {
                        class: f.class,
                        sent: f.sent,
                    }
                }
            }
        };
    loop {
        let Some(start) = connection.next(tickets, shared, local, first) else {
            return;
        };
        until_due(&start, timer.as_ref()).await;
        user.flow(shared, local, start, &mut send).await;
        if lost.get() {
            if first {
                connection.opened.notify_waiters();
            }
            return;
        }
    }
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

/// A connection's request loops, stopped when it is dropped (the run's
/// end cuts the connection's task, and its loops with it).
struct Loops(Vec<tokio::task::JoinHandle<()>>);

impl Drop for Loops {
    fn drop(&mut self) {
        for handle in &self.0 {
            handle.abort();
        }
    }
}

/// How one request failed.
struct Failed {
    class: ErrorClass,
    /// The connection is gone with it.
    lost: bool,
    /// It was sent (so it counts as failed); otherwise it never left and
    /// can go on another connection.
    sent: bool,
    /// Sent, but the server's GOAWAY named a last stream below it: the
    /// server did not process it, and it can go on another connection.
    unprocessed: bool,
    why: String,
}

/// Sends one request and reads its answer. With `scenario` (a scenario
/// step's), the answer is written into it as HTTP/1.1 bytes when the step
/// reads it, and handed back unrecorded.
async fn exchange(
    shared: &Shared,
    local: &RefCell<Local>,
    sender: &mut h2::client::SendRequest<Bytes>,
    request: &H2Request,
    ticket: &Ticket,
    connection: &Connection,
    mut scenario: Option<Option<&mut Vec<u8>>>,
) -> Result<Option<Answered>, Failed> {
    let settings = &shared.settings;
    let fail = |e: &h2::Error, sent: bool| {
        let class = h2_class(e);
        Failed {
            class,
            lost: class != ErrorClass::StreamReset,
            sent,
            // h2 fails the streams above a received GOAWAY's last stream
            // with that GOAWAY (from the remote); the streams it did
            // process end otherwise (answered, or cut with the socket).
            unprocessed: sent && e.is_go_away() && e.is_remote(),
            why: e.to_string(),
        }
    };
    let timed_out = |lost: bool, sent: bool| Failed {
        class: ErrorClass::ReadTimeout,
        lost,
        sent,
        unprocessed: false,
        why: "no answer in time".into(),
    };
    // Waits for a free stream when the server's limit is reached.
    let ready = tokio::time::timeout(settings.timeout, sender.clone().ready()).await;
    *sender = match ready {
        Err(_) => return Err(timed_out(true, false)),
        Ok(Err(e)) => return Err(fail(&e, false)),
        Ok(Ok(s)) => s,
    };
    let sent = Instant::now();
    let (response, mut body) =
        match sender.send_request(request.to_request(), request.body.is_none()) {
            Err(e) => return Err(fail(&e, false)),
            Ok(pair) => pair,
        };
    {
        let mut l = local.borrow_mut();
        if ticket.measured {
            // From here it is in flight until answered or failed.
            l.in_flight += 1;
            l.release(ticket);
            if let Some(stage) = l.stages.get_mut(ticket.stage) {
                stage.took_off();
            }
            if let Some(due) = ticket.due
                && !ticket.retried
            {
                l.lateness(ticket, sent.saturating_duration_since(due));
            }
            l.stats.h2.plain_header_written += request.plain_header_bytes;
        }
    }
    if let Some(data) = &request.body
        && let Err(e) = body.send_data(data.clone(), true)
    {
        return Err(fail(&e, true));
    }
    let response = match tokio::time::timeout(settings.timeout, response).await {
        Err(_) => return Err(timed_out(false, true)),
        Ok(Err(e)) => return Err(fail(&e, true)),
        Ok(Ok(r)) => r,
    };
    let first_byte = Instant::now();
    let status = response.status().as_u16();
    let plain: u64 = ":status".len() as u64
        + 3
        + response
            .headers()
            .iter()
            .map(|(n, v)| (n.as_str().len() + v.len()) as u64)
            .sum::<u64>();
    if let Some(Some(capture)) = scenario.as_mut() {
        // The answer as an HTTP/1.1 head, for the step's checks.
        capture.clear();
        capture.extend_from_slice(format!("HTTP/1.1 {status} -\r\n").as_bytes());
        for (name, value) in response.headers() {
            capture.extend_from_slice(name.as_str().as_bytes());
            capture.extend_from_slice(b": ");
            capture.extend_from_slice(value.as_bytes());
            capture.extend_from_slice(b"\r\n");
        }
        capture.extend_from_slice(b"\r\n");
    }
    let mut recv = response.into_body();
    let mut body_bytes = 0u64;
    loop {
        let next = std::future::poll_fn(|cx| recv.poll_data(cx));
        match tokio::time::timeout(settings.timeout, next).await {
            Err(_) => return Err(timed_out(false, true)),
            Ok(None) => break,
            Ok(Some(Err(e))) => return Err(fail(&e, true)),
            Ok(Some(Ok(chunk))) => {
                body_bytes += chunk.len() as u64;
                if let Some(Some(capture)) = scenario.as_mut() {
                    capture.extend_from_slice(&chunk);
                }
                let _ = recv.flow_control().release_capacity(chunk.len());
            }
        }
    }
    let done = Instant::now();
    let timing = Timing {
        connect: connection.connect_time.take().unwrap_or(Duration::ZERO),
        waiting: first_byte.saturating_duration_since(sent),
        processing: done.saturating_duration_since(sent),
        corrected: ticket.due.map(|due| done.saturating_duration_since(due)),
    };
    let mut l = local.borrow_mut();
    if ticket.measured {
        l.stats.h2.plain_header_read += plain;
    }
    let answered = Answered {
        done,
        status,
        body_bytes,
        timing,
    };
    if scenario.is_some() {
        return Ok(Some(answered));
    }
    let error = (!shared.settings.expect_status.contains(status)).then_some(ErrorClass::Status);
    l.record_response(shared, ticket, done, status, body_bytes, timing, error);
    Ok(None)
}

/// The class of an HTTP/2 failure.
fn h2_class(e: &h2::Error) -> ErrorClass {
    if e.is_go_away() {
        ErrorClass::GoAway
    } else if e.is_reset() {
        ErrorClass::StreamReset
    } else if let Some(io) = e.get_io() {
        io_class(io, ErrorClass::ClosedEarly)
    } else {
        ErrorClass::H2Protocol
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_frame_scan_counts_header_blocks_across_any_split() {
        // SETTINGS (6 bytes), HEADERS (5), DATA (3), CONTINUATION (2).
        let mut frames = Vec::new();
        for (kind, len) in [(0x4u8, 6usize), (HEADERS, 5), (0x0, 3), (CONTINUATION, 2)] {
            frames.extend_from_slice(&[0, 0, len as u8, kind, 0, 0, 0, 0, 1]);
            frames.extend(std::iter::repeat_n(0xAA, len));
        }
        let mut with_preface = vec![b'P'; PREFACE_LEN];
        with_preface.extend_from_slice(&frames);
        for split in 1..with_preface.len() {
            let mut scan = FrameScan {
                skip: PREFACE_LEN,
                ..FrameScan::default()
            };
            let (a, b) = with_preface.split_at(split);
            assert_eq!(scan.scan(a) + scan.scan(b), 7, "split at {split}");
        }
        let mut one_by_one = FrameScan::default();
        let total: u64 = frames.iter().map(|b| one_by_one.scan(&[*b])).sum();
        assert_eq!(total, 7);
    }
}
