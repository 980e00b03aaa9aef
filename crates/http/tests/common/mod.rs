//! Fault-injecting HTTP/1.x servers on loopback, for the engine's
//! integration tests (`tests/faults.rs`).
//!
//! Plain `std::net` and threads, so each fault is deterministic and easy to
//! read: one thread accepts, one thread per connection runs the fault's
//! handler. A handler sees a [`Conn`], which reads whole request heads (the
//! engine's requests are GETs without a body, so a head ends the request)
//! and keeps any bytes after them, so keep-alive and pipelining work.
//!
//! Nothing here can hang a test: every read waits at most [`POLL`] before
//! looking at the stop flag, every write gives up after [`WRITE_TIMEOUT`],
//! and dropping a [`Server`] stops it and joins all its threads.
//!
//! The HTTPS server of the TLS tests is `dyno_testutil::tls`, shared with the
//! CLI tests.

pub(crate) mod h2c;

use std::io::{self, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

/// Closed-model engine settings for `url`: one thread, keep-alive, no
/// warm-up, every status expected; each test sets what it varies.
pub(crate) fn settings(
    url: &str,
    stop: dyno_http::Stop,
    connections: usize,
    timeout: Duration,
) -> dyno_http::Settings {
    use dyno_http::request::{RequestSpec, RequestTemplate, parse_url};
    let (target, path) = parse_url(url).expect("a valid URL");
    let spec = RequestSpec {
        method: "GET".into(),
        path,
        headers: vec![],
        body: None,
        keep_alive: true,
    };
    dyno_http::Settings {
        requests: vec![RequestTemplate::new(&target, &spec).expect("a valid request")],
        target,
        schedule: dyno_http::Schedule {
            stop,
            rate_per_sec: None,
            warmup: Duration::ZERO,
            plan: None,
            grace: Duration::ZERO,
        },
        connections,
        threads: 1,
        pipeline: 1,
        keep_alive: true,
        timeout,
        connect_timeout: timeout,
        expect_status: dyno_http::StatusSet::any(),
        seed: 1,
        unix_socket: None,
        http2: false,
        http3: false,
        zero_rtt: false,
        streams: 1,
        alpn: Vec::new(),
        tls: dyno_http::TlsSettings::default(),
        source_addr: None,
        segment: dyno_http::Segment::WHOLE,
        scenario: None,
        replay: None,
    }
}

/// How long a blocking read waits before the handler looks at the stop flag.
const POLL: Duration = Duration::from_millis(20);
/// A write that cannot finish in this time fails (the client stopped reading).
const WRITE_TIMEOUT: Duration = Duration::from_secs(2);
/// A request head larger than this ends the connection (no test sends one).
const MAX_REQUEST: usize = 1 << 20;

/// A small valid answer: 200 with a 5-byte body, keep-alive.
pub(crate) const OK: &[u8] = b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello";
/// The body of [`OK`].
pub(crate) const OK_BODY: &[u8] = b"hello";

/// A running server. Dropping it stops accepting, ends every connection's
/// handler at its next read or write, and joins all threads.
#[derive(Debug)]
pub(crate) struct Server {
    addr: SocketAddr,
    stop: Arc<AtomicBool>,
    accepted: Arc<AtomicU64>,
    acceptor: Option<JoinHandle<()>>,
    handlers: Arc<Mutex<Vec<JoinHandle<()>>>>,
}

impl Server {
    pub(crate) fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Connections accepted so far.
    pub(crate) fn accepted(&self) -> u64 {
        self.accepted.load(Ordering::SeqCst)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // Wake the blocking accept; the connection it makes sees the flag.
        let _ = TcpStream::connect_timeout(&self.addr, Duration::from_secs(1));
        if let Some(acceptor) = self.acceptor.take() {
            let _ = acceptor.join();
        }
        let handlers = std::mem::take(&mut *self.handlers.lock().expect("not poisoned"));
        for h in handlers {
            let _ = h.join();
        }
    }
}

/// One accepted connection, as a handler sees it.
#[derive(Debug)]
pub(crate) struct Conn {
    stream: TcpStream,
    /// Bytes read but not yet taken as a request.
    pending: Vec<u8>,
    stop: Arc<AtomicBool>,
}

impl Conn {
    /// Waits for the next complete request head and consumes it. False when
    /// the client closed the connection, the server is stopping, or reading
    /// failed: the handler should then return.
    pub(crate) fn next_request(&mut self) -> bool {
        loop {
            if let Some(at) = find(&self.pending, b"\r\n\r\n") {
                self.pending.drain(..at + 4);
                return true;
            }
            if self.pending.len() > MAX_REQUEST || !self.read_some() {
                return false;
            }
        }
    }

    /// One read into `pending`, waiting at most [`POLL`]. False at the end
    /// of the stream, on an error, or when the server is stopping.
    fn read_some(&mut self) -> bool {
        let mut buf = [0u8; 4096];
        loop {
            if self.stop.load(Ordering::SeqCst) {
                return false;
            }
            match self.stream.read(&mut buf) {
                Ok(0) => return false,
                Ok(n) => {
                    self.pending.extend_from_slice(&buf[..n]);
                    return true;
                }
                Err(e) if is_timeout(&e) => continue,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(_) => return false,
            }
        }
    }

    /// Reads and discards until the client closes (or the server stops):
    /// a server that took the request and never answers.
    pub(crate) fn hold(&mut self) {
        while self.read_some() {
            self.pending.clear();
        }
    }

    /// Writes all of `bytes`; false if the client is gone.
    pub(crate) fn send(&mut self, bytes: &[u8]) -> bool {
        !self.stop.load(Ordering::SeqCst) && self.stream.write_all(bytes).is_ok()
    }

    /// Writes `pieces` one at a time with `pause` between them (each its
    /// own TCP segment: the socket has `TCP_NODELAY`).
    pub(crate) fn send_pieces(&mut self, pieces: &[&[u8]], pause: Duration) -> bool {
        for (i, piece) in pieces.iter().enumerate() {
            if i > 0 {
                thread::sleep(pause);
            }
            if !self.send(piece) {
                return false;
            }
        }
        true
    }

    /// Writes `bytes` one byte at a time with `pause` between bytes.
    pub(crate) fn drip(&mut self, bytes: &[u8], pause: Duration) -> bool {
        let pieces: Vec<&[u8]> = bytes.chunks(1).collect();
        self.send_pieces(&pieces, pause)
    }

    /// Sends FIN: the client reads end-of-stream, we can still read.
    pub(crate) fn shutdown_write(&self) {
        let _ = self.stream.shutdown(Shutdown::Write);
    }

    /// Closes the way a server that is done does: FIN at once, then reads
    /// and discards until the client closes too (at most a second). Closing
    /// with unread bytes would send RST instead, which the client may see
    /// before the last bytes of the answer.
    pub(crate) fn finish(mut self) {
        self.shutdown_write();
        let deadline = Instant::now() + Duration::from_secs(1);
        while Instant::now() < deadline && self.read_some() {
            self.pending.clear();
        }
    }

    /// Closes with `SO_LINGER` 0, so the kernel sends RST instead of FIN.
    /// (`TcpStream::set_linger` is unstable, hence libc.)
    pub(crate) fn reset(self) {
        let linger = libc::linger {
            l_onoff: 1,
            l_linger: 0,
        };
        // SAFETY: a valid socket descriptor and a correctly sized
        // `struct linger` that outlives the call.
        let rc = unsafe {
            libc::setsockopt(
                self.stream.as_raw_fd(),
                libc::SOL_SOCKET,
                libc::SO_LINGER,
                std::ptr::from_ref(&linger).cast(),
                size_of::<libc::linger>() as libc::socklen_t,
            )
        };
        assert_eq!(
            rc,
            0,
            "setsockopt(SO_LINGER): {}",
            io::Error::last_os_error()
        );
        drop(self);
    }
}

/// Where `needle` starts in `haystack`.
fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

fn is_timeout(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
    )
}

/// Starts a server on `127.0.0.1:0` that runs `handler` on every accepted
/// connection, each on its own thread; the connection closes when the
/// handler returns (or drops the [`Conn`]).
pub(crate) fn serve(handler: impl Fn(Conn) + Send + Sync + 'static) -> Server {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0");
    serve_on(listener, handler)
}

fn serve_on(listener: TcpListener, handler: impl Fn(Conn) + Send + Sync + 'static) -> Server {
    let addr = listener
        .local_addr()
        .expect("a bound listener has an address");
    let stop = Arc::new(AtomicBool::new(false));
    let accepted = Arc::new(AtomicU64::new(0));
    let handlers: Arc<Mutex<Vec<JoinHandle<()>>>> = Arc::default();
    let handler = Arc::new(handler);
    let acceptor = {
        let (stop, accepted, handlers) = (
            Arc::clone(&stop),
            Arc::clone(&accepted),
            Arc::clone(&handlers),
        );
        thread::Builder::new()
            .name("fault-accept".into())
            .spawn(move || {
                for stream in listener.incoming() {
                    if stop.load(Ordering::SeqCst) {
                        break;
                    }
                    let Ok(stream) = stream else {
                        // Out of descriptors or similar: do not spin.
                        thread::sleep(Duration::from_millis(1));
                        continue;
                    };
                    accepted.fetch_add(1, Ordering::SeqCst);
                    let _ = stream.set_nodelay(true);
                    let _ = stream.set_read_timeout(Some(POLL));
                    let _ = stream.set_write_timeout(Some(WRITE_TIMEOUT));
                    let conn = Conn {
                        stream,
                        pending: Vec::new(),
                        stop: Arc::clone(&stop),
                    };
                    let handler = Arc::clone(&handler);
                    let h = thread::Builder::new()
                        .name("fault-conn".into())
                        .spawn(move || handler(conn))
                        .expect("spawn a connection thread");
                    let mut hs = handlers.lock().expect("not poisoned");
                    // Reap finished threads so a long run does not pile them up.
                    let (done, running): (Vec<_>, Vec<_>) =
                        hs.drain(..).partition(JoinHandle::is_finished);
                    *hs = running;
                    hs.push(h);
                    drop(hs);
                    for d in done {
                        let _ = d.join();
                    }
                }
            })
            .expect("spawn the accept thread")
    };
    Server {
        addr,
        stop,
        accepted,
        acceptor: Some(acceptor),
        handlers,
    }
}

// ---------------------------------------------------------------------------
// The faults.

/// An address where nothing listens: bound, then closed, so connecting is
/// refused (RST to the SYN).
pub(crate) fn refused() -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0");
    listener
        .local_addr()
        .expect("a bound listener has an address")
}

/// A listener that never accepts and whose accept queue is full (backlog 0
/// and one connection already queued), so Linux drops further SYNs and
/// connecting times out. The returned stream holds the queue's one slot.
pub(crate) fn full_backlog() -> (TcpListener, TcpStream) {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0");
    // SAFETY: listen(2) on a socket we own; calling it again only changes
    // the backlog.
    let rc = unsafe { libc::listen(listener.as_raw_fd(), 0) };
    assert_eq!(rc, 0, "listen(fd, 0): {}", io::Error::last_os_error());
    let filler = TcpStream::connect(listener.local_addr().expect("bound"))
        .expect("the first connection fits the queue");
    (listener, filler)
}

/// Answers every request with [`OK`] at once, keep-alive: a well-behaved
/// server.
pub(crate) fn ok() -> Server {
    serve(|mut c| {
        while c.next_request() {
            if !c.send(OK) {
                return;
            }
        }
    })
}

/// Accepts, then closes at once (FIN before any byte of an answer). It
/// still reads what the client sends before letting go, so the close stays
/// a clean FIN and never becomes an RST for unread data: the client must
/// see end-of-stream.
pub(crate) fn accept_then_close() -> Server {
    serve(|c| c.finish())
}

/// The first line and half a header name, then close.
pub(crate) const MID_HEADERS: &[u8] = b"HTTP/1.1 200 OK\r\nContent-Le";

/// Reads the request, sends [`MID_HEADERS`], closes.
pub(crate) fn close_mid_headers() -> Server {
    send_once_then_close(MID_HEADERS)
}

/// Reads a request, sends `answer`, closes; each connection alike.
fn send_once_then_close(answer: &'static [u8]) -> Server {
    serve(move |mut c| {
        if c.next_request() {
            c.send(answer);
            c.finish();
        }
    })
}

/// A head promising 100 body bytes and only 10 of them.
pub(crate) const MID_BODY: &[u8] = b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n0123456789";

/// Reads the request, sends [`MID_BODY`], closes.
pub(crate) fn close_mid_body() -> Server {
    send_once_then_close(MID_BODY)
}

/// Reads the request, then closes with RST (no answer).
pub(crate) fn reset() -> Server {
    serve(|mut c| {
        if c.next_request() {
            c.reset();
        }
    })
}

/// Reads the request and never answers; lets go when the client does.
pub(crate) fn stall() -> Server {
    serve(|mut c| {
        if c.next_request() {
            c.hold();
        }
    })
}

/// Answers the first `answered` requests (of all connections) with [`OK`],
/// then reads every later one and never answers it.
pub(crate) fn stall_after(answered: u64) -> Server {
    let count = Arc::new(AtomicU64::new(0));
    serve(move |mut c| {
        while c.next_request() {
            if count.fetch_add(1, Ordering::SeqCst) >= answered {
                c.hold();
                return;
            }
            if !c.send(OK) {
                return;
            }
        }
    })
}

/// Not HTTP at all.
pub(crate) const GARBAGE: &[u8] = b"HELLO WORLD\r\n\r\n";

/// Answers every request with [`GARBAGE`] (and keeps the connection until
/// the client drops it).
pub(crate) fn garbage() -> Server {
    serve(|mut c| {
        while c.next_request() {
            if !c.send(GARBAGE) {
                return;
            }
        }
    })
}

/// An answer whose head holds a 100 KiB header field.
pub(crate) fn oversized_head() -> Vec<u8> {
    let mut r = b"HTTP/1.1 200 OK\r\nX-Big: ".to_vec();
    r.resize(r.len() + 100 * 1024, b'a');
    r.extend_from_slice(b"\r\nContent-Length: 5\r\n\r\nhello");
    r
}

/// Answers every request with [`oversized_head`].
pub(crate) fn oversized_headers() -> Server {
    let answer = oversized_head();
    serve(move |mut c| {
        while c.next_request() {
            if !c.send(&answer) {
                return;
            }
        }
    })
}

/// A chunked answer with the awkward parts of RFC 9112 section 7.1: chunk
/// extensions (with and without a value), uppercase and zero-padded hex
/// sizes, an extension on the last chunk, and a trailer section. Cut into
/// pieces at the places a parser is most likely to get wrong: inside the
/// size, between CR and LF, inside the data, inside the trailers, before the
/// final LF.
pub(crate) const CHUNKED_PIECES: &[&[u8]] = &[
    b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r",
    b"\n1",
    b"A;name=value;flag\r",
    b"\nabcdefghijklm",
    b"nopqrstuvwxyz",
    b"\r\n00a\r\n0123456789\r",
    b"\n0;last=\"yes\"\r\nX-Check",
    b"sum: 42\r\nX-Other: yes\r\n\r",
    b"\n",
];

/// Bytes of the chunked answer after its head (what the engine counts as
/// body bytes: chunk framing and trailers included).
pub(crate) fn chunked_body_len() -> usize {
    let total: usize = CHUNKED_PIECES.iter().map(|p| p.len()).sum();
    let head = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n".len();
    total - head
}

/// Answers every request with [`CHUNKED_PIECES`], 2 ms apart, keep-alive.
pub(crate) fn chunked() -> Server {
    serve(|mut c| {
        while c.next_request() {
            if !c.send_pieces(CHUNKED_PIECES, Duration::from_millis(2)) {
                return;
            }
        }
    })
}

/// A valid answer that says it closes the connection.
pub(crate) const CLOSE_ANSWER: &[u8] =
    b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nConnection: close\r\n\r\nhello";

/// Answers one request with [`CLOSE_ANSWER`], then closes.
pub(crate) fn connection_close() -> Server {
    serve(|mut c| {
        if c.next_request() {
            c.send(CLOSE_ANSWER);
            c.finish();
        }
    })
}

/// The body of the close-delimited answer.
pub(crate) const HTTP10_BODY_LEN: usize = 1000;

/// Answers one request the HTTP/1.0 way: no `Content-Length`, the body in
/// two writes, then close (which is what ends the body).
pub(crate) fn http10_close_delimited() -> Server {
    serve(|mut c| {
        if c.next_request() {
            let body = [b'x'; HTTP10_BODY_LEN];
            c.send_pieces(
                &[
                    b"HTTP/1.0 200 OK\r\nContent-Type: text/plain\r\n\r\n",
                    &body[..400],
                    &body[400..],
                ],
                Duration::from_millis(2),
            );
            c.finish();
        }
    })
}

/// Interim answers before the real one: `100 Continue`, then `103 Early
/// Hints` with a header, then [`OK`], each its own write; keep-alive.
pub(crate) fn interim_1xx() -> Server {
    serve(|mut c| {
        while c.next_request() {
            let pieces: &[&[u8]] = &[
                b"HTTP/1.1 100 Continue\r\n\r\n",
                b"HTTP/1.1 103 Early Hints\r\nLink: </style.css>; rel=preload\r\n\r\n",
                OK,
            ];
            if !c.send_pieces(pieces, Duration::from_millis(2)) {
                return;
            }
        }
    })
}

/// Answers every request with [`OK`] written one byte at a time, `pause`
/// between bytes; keep-alive.
pub(crate) fn drip(pause: Duration) -> Server {
    serve(move |mut c| {
        while c.next_request() {
            if !c.drip(OK, pause) {
                return;
            }
        }
    })
}

/// Answers at once, except that every answer due between `t0 + from` and
/// `t0 + until` (t0: the first request the server saw) waits until
/// `t0 + until`: the server stalls for `until - from` once.
pub(crate) fn stall_window(from: Duration, until: Duration) -> Server {
    let t0: Arc<OnceLock<Instant>> = Arc::default();
    serve(move |mut c| {
        while c.next_request() {
            let now = Instant::now();
            let t0 = *t0.get_or_init(|| now);
            if now >= t0 + from && now < t0 + until {
                thread::sleep(t0 + until - now);
            }
            if !c.send(OK) {
                return;
            }
        }
    })
}

/// A connection a test's own hand-written server accepted: TCP or Unix.
pub(crate) trait Socket: Read + Write {
    /// Makes reads block, each for at most `wait`.
    fn block_reads_for(&self, wait: Duration);
}

impl Socket for TcpStream {
    fn block_reads_for(&self, wait: Duration) {
        self.set_nonblocking(false).unwrap();
        self.set_read_timeout(Some(wait)).unwrap();
    }
}

impl Socket for std::os::unix::net::UnixStream {
    fn block_reads_for(&self, wait: Duration) {
        self.set_nonblocking(false).unwrap();
        self.set_read_timeout(Some(wait)).unwrap();
    }
}

/// Serves one connection of a test's own hand-written server: sends
/// `greeting`, then reads what comes, waiting 50 ms at most each time so
/// that `stop` is seen, and after each read hands all the bytes read so far
/// to `answer`, which writes what they call for and says whether to go on
/// (false: a write failed). Ends when the peer closes, `stop` is set or
/// `answer` gives up.
pub(crate) fn answer_reads<S: Socket>(
    socket: &mut S,
    stop: &AtomicBool,
    greeting: &[u8],
    mut answer: impl FnMut(&mut S, &mut Vec<u8>) -> bool,
) {
    socket.block_reads_for(Duration::from_millis(50));
    let _ = socket.write_all(greeting);
    let mut seen = Vec::new();
    let mut buf = [0u8; 4096];
    while !stop.load(Ordering::SeqCst) {
        match socket.read(&mut buf) {
            Ok(0) => return,
            Ok(n) => seen.extend_from_slice(&buf[..n]),
            Err(_) => continue,
        }
        if !answer(socket, &mut seen) {
            return;
        }
    }
}
