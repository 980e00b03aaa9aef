//! The reference HTTP target that dyno's load tests and its own tests aim at.
//!
//! A small HTTP/1.1 and HTTP/2 server (hyper; keep-alive and pipelining on
//! for HTTP/1.1, h2c with prior knowledge for HTTP/2; over TLS, HTTP/2 or
//! HTTP/1.1 by ALPN, and HTTP/3 over QUIC beside it) with a few
//! fixed endpoints whose answers cost next to nothing to produce, so that a
//! load test measures the client and the network path rather than the server:
//!
//! - `/hello`: the 92-byte page [`HELLO`] (`text/html`).
//! - `/blob/<size>`: `<size>` bytes (`512`, `64k`, `1m`, powers of 1024, up to
//!   1 TiB), cut from one shared buffer without copying.
//! - `/status/<code>`: an answer with that status (200–599).
//! - `/delay/<ms>`: `/hello` after `<ms>` milliseconds (0–60000).
//! - `/cpu/<us>`: `/hello` after `<us>` microseconds of CPU, one such
//!   request at a time across the server: a target of known capacity
//!   (1,000,000/`<us>` requests per second) for `--find-max`.
//! - `/`: the list of endpoints; anything else is 404.
//!
//! Given a database ([`App::Bbs`]), it also serves the thesis's bulletin
//! board on it: the five functions `/showBoard`, `/createBoard`,
//! `/showBoardMessage`, `/createBoardMessage`, `/editMessage` (query
//! parameters `bname`, `author`, `msg`, `key`, `id`), a JSON API under
//! `/api/boards` and pages for a browser under `/bbs`; `/hello` on the same
//! server is then the HTTP-only ceiling of the BBS benchmark.
//!
//! [`serve`] runs on a listener the caller bound, until a shutdown future
//! completes; [`spawn`] runs it on its own threads for in-process use (the
//! default target of `dyno http`, and tests). [`serve_app`] and
//! [`spawn_app`] do the same for an [`App`]; [`serve_tls`] and
//! [`spawn_tls`] serve over TLS, [`serve_h3`] and [`spawn_h3`] over TLS
//! and HTTP/3 (QUIC on a UDP socket at the TCP listener's port, which
//! [`bind_tcp_udp`] binds).

use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::pin::{Pin, pin};
use std::sync::Arc;
use std::task::{Context, Poll, ready};
use std::thread;
use std::time::Duration;

use bytes::Bytes;
use dyno_tree::Database;
use hyper::body::Incoming;
use hyper::header::{ALT_SVC, HeaderValue};
use hyper::service::Service;
use hyper::{Request, Response};
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;
use tokio::net::TcpListener;
use tokio::sync::{oneshot, watch};
use tokio::task::JoinSet;
use tokio::time::Sleep;

mod bbs;
mod body;
mod h3;
mod routes;
mod tls;

pub use h3::{QUIC_SOCKET_BUFFER, UdpBuffers, bind_tcp_udp, grow_udp_buffers};
pub use tls::{Tls, self_signed_config};

use bbs::{Bbs, Handled};
use body::Body;
use routes::Answer;

/// The page served at `/hello` (and after `/delay/<ms>`): 92 bytes, the size
/// of the classic `hello.html` that web-server benchmarks fetch.
pub const HELLO: &[u8] = b"<html>\n<head><title>dyno hello</title></head>\n<body><h1>Hello from dyno</h1></body>\n</html>\n";

/// How long in-flight requests get to finish after shutdown is asked for;
/// connections still open after it are dropped.
const GRACE: Duration = Duration::from_secs(5);

/// How long a TLS client may take over its handshake before its connection
/// is dropped (a stalled client must not hold a task forever).
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// How long to wait before accepting again after an accept error that is not
/// about one connection (out of file descriptors, out of memory): the error
/// repeats until something is freed, so retrying at once would only spin.
const ACCEPT_BACKOFF: Duration = Duration::from_millis(10);

/// What a server serves besides its fixed endpoints.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub enum App {
    /// The fixed endpoints only.
    #[default]
    Plain,
    /// The fixed endpoints and the bulletin board, kept in this database
    /// (one tree per board, named `board/` and the board's name).
    Bbs(Arc<Database>),
}

/// Why the server could not start.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ServeError {
    /// The listening socket could not be handed to the async runtime.
    #[error("could not use the listening socket (is it a bound, listening TCP socket?)")]
    Listener(#[source] std::io::Error),
    /// The async runtime could not be built.
    #[error("could not start the server's async runtime (out of threads or memory?)")]
    Runtime(#[source] std::io::Error),
    /// The server thread could not be started.
    #[error("could not start the server thread (out of threads or memory?)")]
    Thread(#[source] std::io::Error),
    /// The self-signed certificate could not be made or used.
    #[error("could not set up TLS: {0}")]
    Tls(String),
    /// The UDP socket could not be used for QUIC.
    #[error("could not serve HTTP/3 on the UDP socket (is it a bound UDP socket?)")]
    Quic(#[source] std::io::Error),
}

/// A request body the server reads: hyper's over TCP, a request stream's
/// over HTTP/3.
pub(crate) trait RequestBody:
    hyper::body::Body<Data = Bytes, Error: std::fmt::Display + Send> + Send + Unpin + 'static
{
}

impl<B> RequestBody for B where
    B: hyper::body::Body<Data = Bytes, Error: std::fmt::Display + Send> + Send + Unpin + 'static
{
}

/// Serves on `listener` until `shutdown` completes, then stops accepting and
/// lets in-flight requests finish (graceful shutdown): idle connections close
/// at once, busy ones after their current response. Connections still open
/// after a grace period of a few seconds are dropped.
///
/// Accept errors (such as running out of file descriptors) do not stop the
/// server: it pauses briefly and accepts again. Errors on one connection only
/// end that connection.
///
/// Must run inside a tokio runtime with I/O and time enabled; connections are
/// spawned onto it as tasks, so a multi-thread runtime serves them in parallel.
pub async fn serve(
    listener: TcpListener,
    shutdown: impl Future<Output = ()>,
) -> Result<(), ServeError> {
    serve_app(listener, shutdown, App::Plain).await
}

/// [`serve`] with `app` besides the fixed endpoints. The BBS's writes run
/// on the runtime's blocking pool (a durable commit waits for the disk).
pub async fn serve_app(
    listener: TcpListener,
    shutdown: impl Future<Output = ()>,
    app: App,
) -> Result<(), ServeError> {
    serve_with_grace(listener, shutdown, GRACE, Svc::new(app, None), None).await;
    Ok(())
}

/// [`serve_app`] over TLS: every connection's handshake first, then
/// HTTP/2 or HTTP/1.1 as ALPN settled.
pub async fn serve_tls(
    listener: TcpListener,
    shutdown: impl Future<Output = ()>,
    app: App,
    tls: &Tls,
) -> Result<(), ServeError> {
    serve_with_grace(
        listener,
        shutdown,
        GRACE,
        Svc::new(app, None),
        Some(tls.acceptor()),
    )
    .await;
    Ok(())
}

/// [`serve_tls`], and HTTP/3 on `udp`: a bound UDP socket, normally at the
/// listener's port ([`bind_tcp_udp`]), whose buffers it grows
/// ([`grow_udp_buffers`]). The TLS side announces HTTP/3 with an
/// `alt-svc: h3=":PORT"` header. Both stop on `shutdown`: QUIC connections
/// get a GOAWAY, the same grace period, then a close with `H3_NO_ERROR`.
pub async fn serve_h3(
    listener: TcpListener,
    udp: std::net::UdpSocket,
    shutdown: impl Future<Output = ()>,
    app: App,
    tls: &Tls,
) -> Result<(), ServeError> {
    let port = udp.local_addr().map_err(ServeError::Quic)?.port();
    let endpoint = h3::endpoint(udp, tls)?;
    let service = Svc::new(app, Some(alt_svc(port)));
    serve_tcp_and_quic(listener, endpoint, shutdown, GRACE, service, tls.acceptor()).await;
    Ok(())
}

/// The `alt-svc` value that sends clients to HTTP/3 on `port` of the same
/// host, for a day (RFC 7838; browsers and curl take it up from there).
fn alt_svc(port: u16) -> HeaderValue {
    HeaderValue::try_from(format!("h3=\":{port}\"; ma=86400"))
        .expect("a port number makes a valid header value")
}

/// Serves TLS on `listener` and HTTP/3 on `endpoint` with one `service`
/// (one BBS, one `/cpu` queue), both until `shutdown` completes.
async fn serve_tcp_and_quic(
    listener: TcpListener,
    endpoint: quinn::Endpoint,
    shutdown: impl Future<Output = ()>,
    grace: Duration,
    service: Svc,
    acceptor: tokio_rustls::TlsAcceptor,
) {
    let (stop_tx, stop_rx) = watch::channel(false);
    let stopped = |mut stop: watch::Receiver<bool>| async move {
        // An error means the sender is gone, which happens only after it
        // sent true.
        let _ = stop.wait_for(|stopped| *stopped).await;
    };
    tokio::join!(
        async {
            shutdown.await;
            stop_tx.send_replace(true);
        },
        serve_with_grace(
            listener,
            stopped(stop_rx.clone()),
            grace,
            service.clone(),
            Some(acceptor)
        ),
        h3::serve(endpoint, stopped(stop_rx), grace, service),
    );
}

async fn serve_with_grace(
    listener: TcpListener,
    shutdown: impl Future<Output = ()>,
    grace: Duration,
    service: Svc,
    tls: Option<tokio_rustls::TlsAcceptor>,
) {
    let mut shutdown = pin!(shutdown);
    // HTTP/1.1, or HTTP/2 when the client opens with its preface (h2c with
    // prior knowledge).
    let mut builder = auto::Builder::new(TokioExecutor::new());
    builder
        .http1()
        .keep_alive(true)
        // Answers to pipelined requests go out in one write.
        .pipeline_flush(true)
        // No timer is set, so no timeout could fire anyway; say so. A load
        // generator's idle keep-alive connection must not be cut.
        .header_read_timeout(None);
    let (stop_tx, stop_rx) = watch::channel(());
    let mut connections = JoinSet::new();

    loop {
        let accepted = tokio::select! {
            biased;
            () = &mut shutdown => break,
            accepted = listener.accept() => accepted,
        };
        match accepted {
            Ok((stream, _peer)) => {
                let service = service.clone();
                let stop = stop_rx.clone();
                // Small responses must not wait for Nagle's algorithm.
                // Failing to set it only costs latency, so it is not an error.
                let _ = stream.set_nodelay(true);
                match &tls {
                    None => {
                        connections.spawn(connection(&builder, stream, service, stop));
                    }
                    Some(acceptor) => {
                        let accept = acceptor.accept(stream);
                        let builder = builder.clone();
                        connections.spawn(async move {
                            // A client that gives up on the handshake (an
                            // untrusted certificate) only ends its own.
                            if let Ok(Ok(stream)) =
                                tokio::time::timeout(HANDSHAKE_TIMEOUT, accept).await
                            {
                                connection(&builder, stream, service, stop).await;
                            }
                        });
                    }
                }
            }
            Err(err) if is_connection_error(&err) => {}
            Err(_) => {
                tokio::select! {
                    biased;
                    () = &mut shutdown => break,
                    () = tokio::time::sleep(ACCEPT_BACKOFF) => {}
                }
            }
        }
        // Forget finished connections so the set stays as small as the open ones.
        while connections.try_join_next().is_some() {}
    }

    // Refuse new connections from now on, then ask the open ones to finish.
    drop(listener);
    stop_tx.send_replace(());
    let drained = tokio::time::timeout(grace, async {
        while connections.join_next().await.is_some() {}
    })
    .await;
    if drained.is_err() {
        connections.shutdown().await;
    }
}

/// Builds the connection future for one accepted socket: it serves until the
/// client closes, or until `stop` fires and the current response is done.
/// A request hyper cannot parse (a malformed request line, a target or
/// headers too large) ends the connection inside hyper without an answer;
/// the server then answers it itself ([`unparsed`]) before closing.
fn connection<S>(
    builder: &auto::Builder<TokioExecutor>,
    stream: S,
    service: Svc,
    mut stop: watch::Receiver<()>,
) -> impl Future<Output = ()> + Send + 'static
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let stream = Arc::new(std::sync::Mutex::new(stream));
    let connection = builder
        .serve_connection(TokioIo::new(Shared(stream.clone())), service)
        .into_owned();
    async move {
        let mut connection = Box::pin(connection);
        let failed = tokio::select! {
            // Per-connection errors (resets, malformed requests) only end this
            // connection.
            done = connection.as_mut() => done.err(),
            // Fires on shutdown (or if the server went away).
            _ = stop.changed() => {
                connection.as_mut().graceful_shutdown();
                let _ = connection.as_mut().await;
                None
            }
        };
        drop(connection);
        // Hyper's shutdown of the stream was held back (see `Shared`): the
        // answer to what it could not parse goes first.
        let Ok(stream) = Arc::try_unwrap(stream) else {
            return;
        };
        let stream = stream.into_inner().unwrap_or_else(|e| e.into_inner());
        let close = async {
            match failed.as_deref().and_then(unparsed) {
                Some(answer) => answer_and_close(stream, answer).await,
                None => {
                    let mut stream = stream;
                    let _ = tokio::io::AsyncWriteExt::shutdown(&mut stream).await;
                }
            }
        };
        let _ = tokio::time::timeout(HANDSHAKE_TIMEOUT, close).await;
    }
}

/// The answer to a request hyper could not parse, when `err` says so:
/// 414 for a target past hyper's 64 KiB, 431 for headers past its buffer or
/// count, 400 for the rest.
fn unparsed(err: &(dyn std::error::Error + Send + Sync + 'static)) -> Option<Vec<u8>> {
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(err);
    let hyper = loop {
        let e = source?;
        if let Some(hyper) = e.downcast_ref::<hyper::Error>() {
            break hyper;
        }
        source = e.source();
    };
    if !hyper.is_parse() || hyper.is_parse_version_h2() {
        return None;
    }
    let what = hyper.to_string();
    let (status, body) = if hyper.is_parse_too_large() && what.contains("URI") {
        (
            "414 URI Too Long",
            "the request target (path and query string) is too long: the limit is 65534 bytes\n"
                .to_owned(),
        )
    } else if hyper.is_parse_too_large() {
        (
            "431 Request Header Fields Too Large",
            "the request's headers are too large: the limit is 100 headers and about 400 KiB in all\n"
                .to_owned(),
        )
    } else {
        (
            "400 Bad Request",
            format!(
                "bad request: the request line or a header is not HTTP/1.1 ({what}); bytes outside printable ASCII must be percent-encoded\n"
            ),
        )
    };
    Some(
        format!(
            "HTTP/1.1 {status}\r\ncontent-type: text/plain; charset=utf-8\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
            body.len()
        )
        .into_bytes(),
    )
}

/// Writes `answer`, closes the sending side, then reads and drops what the
/// client still sends (up to 1 MiB), so that closing with unread bytes does
/// not reset the connection before the client has read the answer.
async fn answer_and_close<S>(mut stream: S, answer: Vec<u8>)
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin,
{
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    if stream.write_all(&answer).await.is_err() || stream.shutdown().await.is_err() {
        return;
    }
    let mut scratch = [0u8; 16 << 10];
    let mut drained = 0;
    while drained < 1 << 20 {
        match tokio::time::timeout(Duration::from_secs(1), stream.read(&mut scratch)).await {
            Ok(Ok(n)) if n > 0 => drained += n,
            _ => break,
        }
    }
}

/// A stream that hyper serves while the server keeps a handle on it, to
/// answer a request hyper gave up on (hyper shuts the stream down when it
/// gives up, so its shutdown is held back until then). The lock is only ever taken by one
/// side at a time (hyper while it serves, the server after), so it is
/// never contended.
struct Shared<S>(Arc<std::sync::Mutex<S>>);

impl<S> Shared<S> {
    fn lock(&self) -> std::sync::MutexGuard<'_, S> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl<S: tokio::io::AsyncRead + Unpin> tokio::io::AsyncRead for Shared<S> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        Pin::new(&mut *self.lock()).poll_read(cx, buf)
    }
}

impl<S: tokio::io::AsyncWrite + Unpin> tokio::io::AsyncWrite for Shared<S> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut *self.lock()).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut *self.lock()).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.lock().is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut *self.lock()).poll_flush(cx)
    }

    /// Only flushes: the server shuts the stream down once hyper is done
    /// with it, after answering a request hyper gave up on.
    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut *self.lock()).poll_flush(cx)
    }
}

/// Accept errors that concern only the connection being accepted.
fn is_connection_error(err: &std::io::Error) -> bool {
    use std::io::ErrorKind::*;
    matches!(
        err.kind(),
        ConnectionAborted | ConnectionReset | ConnectionRefused | Interrupted | WouldBlock
    )
}

/// The request handler of every connection, TCP or QUIC: routes each
/// request and holds the shared blob buffer, the index page and the BBS
/// (cloned once per connection, not per request).
#[derive(Debug, Clone)]
struct Svc {
    blob: Bytes,
    index: Bytes,
    bbs: Option<Arc<Bbs>>,
    /// The `alt-svc` header of every answer, when HTTP/3 is served too.
    alt_svc: Option<HeaderValue>,
}

impl Svc {
    fn new(app: App, alt_svc: Option<HeaderValue>) -> Svc {
        let bbs = match app {
            App::Plain => None,
            App::Bbs(db) => Some(Arc::new(Bbs::new(db))),
        };
        let index = match bbs {
            None => Bytes::from_static(routes::INDEX),
            Some(_) => Bytes::from([routes::INDEX, bbs::INDEX.as_bytes()].concat()),
        };
        Svc {
            blob: body::blob_buffer(),
            index,
            bbs,
            alt_svc,
        }
    }

    /// The answer to `request`, over any protocol: hyper's service calls
    /// it over TCP, the HTTP/3 side with a request stream's body.
    fn respond<B: RequestBody>(&self, request: Request<B>) -> Respond<B> {
        let path = request.uri().path();
        let alt_svc = self.alt_svc.clone();
        // A plain server pays one test of None here.
        if let Some(bbs) = &self.bbs
            && bbs::owns(path)
        {
            return match bbs.call(request) {
                Handled::Now(response, body) => Respond::new(body, None, response, alt_svc),
                Handled::Later(later) => Respond::later(later, alt_svc),
            };
        }
        let (delay, response) = match routes::route(path, &self.blob, &self.index) {
            Answer::Now(response) => (None, response),
            Answer::After(delay, response) => (Some(Box::pin(tokio::time::sleep(delay))), response),
            Answer::Serial(work, response) => {
                return Respond::later(Box::pin(serial(work, response)), alt_svc);
            }
        };
        Respond::new(request.into_body(), delay, response, alt_svc)
    }
}

impl Service<Request<Incoming>> for Svc {
    type Response = Response<Body>;
    type Error = Infallible;
    type Future = Respond<Incoming>;

    fn call(&self, request: Request<Incoming>) -> Respond<Incoming> {
        self.respond(request)
    }
}

/// The one lock `/cpu/<us>` requests take in turn (tokio's is fair: first
/// come, first served).
static SERIAL: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// `/cpu/<us>`: waits its turn, burns `work` of CPU holding the lock, then
/// answers. The spin keeps one worker thread busy for `work`, as a server
/// whose request handler does that much computing would.
async fn serial(work: Duration, response: Response<Body>) -> Response<Body> {
    let _turn = SERIAL.lock().await;
    let start = std::time::Instant::now();
    while start.elapsed() < work {
        std::hint::spin_loop();
    }
    response
}

/// The future of one answer: reads and discards the request body (so the
/// connection can be kept alive after it), waits out any delay, then yields
/// the response; or awaits the BBS's answer, which reads the body itself.
/// Hand-written because `Service::Future` must be a nameable type: an
/// `async` block would have to be boxed, one allocation per request (the
/// BBS pays it only for writes and bodies).
#[derive(Debug)]
struct Respond<B> {
    body: Option<B>,
    delay: Option<Pin<Box<Sleep>>>,
    response: Option<Response<Body>>,
    later: Option<Later>,
    alt_svc: Option<HeaderValue>,
}

/// An answer still being made (a BBS write).
struct Later(Pin<Box<dyn Future<Output = Response<Body>> + Send>>);

impl std::fmt::Debug for Later {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Later(..)")
    }
}

impl<B: RequestBody> Respond<B> {
    fn new(
        body: B,
        delay: Option<Pin<Box<Sleep>>>,
        response: Response<Body>,
        alt_svc: Option<HeaderValue>,
    ) -> Respond<B> {
        Respond {
            body: (!body.is_end_stream()).then_some(body),
            delay,
            response: Some(response),
            later: None,
            alt_svc,
        }
    }

    fn later(
        later: Pin<Box<dyn Future<Output = Response<Body>> + Send>>,
        alt_svc: Option<HeaderValue>,
    ) -> Respond<B> {
        Respond {
            body: None,
            delay: None,
            response: None,
            later: Some(Later(later)),
            alt_svc,
        }
    }

    fn announce(&mut self, mut response: Response<Body>) -> Response<Body> {
        if let Some(alt_svc) = self.alt_svc.take() {
            response.headers_mut().insert(ALT_SVC, alt_svc);
        }
        response
    }
}

impl<B: RequestBody> Future for Respond<B> {
    type Output = Result<Response<Body>, Infallible>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.get_mut();
        if let Some(later) = &mut this.later {
            let response = ready!(later.0.as_mut().poll(cx));
            return Poll::Ready(Ok(this.announce(response)));
        }
        if let Some(body) = &mut this.body {
            // Stops at the end, or at an error: a broken body means a broken
            // connection, so answer anyway and let hyper find out when it writes.
            while let Some(Ok(_frame)) = ready!(Pin::new(&mut *body).poll_frame(cx)) {}
            this.body = None;
        }
        if let Some(delay) = &mut this.delay {
            ready!(delay.as_mut().poll(cx));
            this.delay = None;
        }
        let response = this
            .response
            .take()
            .expect("Respond polled after completion");
        Poll::Ready(Ok(this.announce(response)))
    }
}

/// Starts a server on `listener` on its own threads: a multi-thread tokio
/// runtime with `threads` workers (at least one) serves the connections, and
/// one more thread accepts them. For in-process use: the default target of
/// `dyno http`, and tests.
///
/// Returns once the server is accepting (the listener is already listening, so
/// connections made from now on are queued and served). Stop it with
/// [`ServerHandle::shutdown`], or by dropping the handle.
pub fn spawn(listener: std::net::TcpListener, threads: usize) -> Result<ServerHandle, ServeError> {
    spawn_app(listener, threads, App::Plain)
}

/// [`spawn`] with `app` besides the fixed endpoints.
pub fn spawn_app(
    listener: std::net::TcpListener,
    threads: usize,
    app: App,
) -> Result<ServerHandle, ServeError> {
    spawn_with(listener, threads, app, None, None)
}

/// [`spawn`] over TLS (HTTP/2 or HTTP/1.1, as ALPN settles).
pub fn spawn_tls(
    listener: std::net::TcpListener,
    threads: usize,
    tls: Tls,
) -> Result<ServerHandle, ServeError> {
    spawn_with(listener, threads, App::Plain, Some(tls), None)
}

/// [`spawn_tls`], and HTTP/3 on `udp` as [`serve_h3`] serves it: a bound
/// UDP socket, normally at the listener's port ([`bind_tcp_udp`]).
pub fn spawn_h3(
    listener: std::net::TcpListener,
    udp: std::net::UdpSocket,
    threads: usize,
    tls: Tls,
) -> Result<ServerHandle, ServeError> {
    spawn_with(listener, threads, App::Plain, Some(tls), Some(udp))
}

fn spawn_with(
    listener: std::net::TcpListener,
    threads: usize,
    app: App,
    tls: Option<Tls>,
    udp: Option<std::net::UdpSocket>,
) -> Result<ServerHandle, ServeError> {
    let local_addr = listener.local_addr().map_err(ServeError::Listener)?;
    listener
        .set_nonblocking(true)
        .map_err(ServeError::Listener)?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(threads.max(1))
        .thread_name("dyno-serve-worker")
        .enable_io()
        .enable_time()
        .build()
        .map_err(ServeError::Runtime)?;
    let (listener, quic) = {
        let _guard = runtime.enter();
        let listener = TcpListener::from_std(listener).map_err(ServeError::Listener)?;
        // The endpoint starts its socket's driver on the runtime.
        let quic = match (udp, &tls) {
            (Some(udp), Some(tls)) => {
                let port = udp.local_addr().map_err(ServeError::Quic)?.port();
                Some((h3::endpoint(udp, tls)?, alt_svc(port)))
            }
            _ => None,
        };
        (listener, quic)
    };
    let (stop_tx, stop_rx) = oneshot::channel::<()>();
    let thread = thread::Builder::new()
        .name("dyno-serve".to_owned())
        .spawn(move || {
            // A dropped sender stops the server too.
            let shutdown = async move {
                let _ = stop_rx.await;
            };
            // serve cannot fail once started; the runtime is dropped here, on
            // its own thread, never inside the caller's async context.
            let acceptor = tls.map(|t| t.acceptor());
            match (quic, acceptor) {
                (Some((endpoint, alt_svc)), Some(acceptor)) => {
                    let service = Svc::new(app, Some(alt_svc));
                    runtime.block_on(serve_tcp_and_quic(
                        listener, endpoint, shutdown, GRACE, service, acceptor,
                    ));
                }
                (_, acceptor) => runtime.block_on(serve_with_grace(
                    listener,
                    shutdown,
                    GRACE,
                    Svc::new(app, None),
                    acceptor,
                )),
            }
        })
        .map_err(ServeError::Thread)?;
    Ok(ServerHandle {
        local_addr,
        stop: Some(stop_tx),
        thread: Some(thread),
    })
}

/// A server started by [`spawn`]. Dropping it shuts the server down like
/// [`ServerHandle::shutdown`].
#[derive(Debug)]
pub struct ServerHandle {
    local_addr: SocketAddr,
    stop: Option<oneshot::Sender<()>>,
    thread: Option<thread::JoinHandle<()>>,
}

impl ServerHandle {
    /// The address the server listens on (for a listener bound to port 0, the
    /// port the system picked).
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// Stops the server gracefully and waits for its threads to finish: new
    /// connections are refused at once, in-flight requests get a few seconds
    /// to complete. Blocks the calling thread until then.
    pub fn shutdown(mut self) {
        if let Err(panic) = self.stop_and_join() {
            std::panic::resume_unwind(panic);
        }
    }

    fn stop_and_join(&mut self) -> thread::Result<()> {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        match self.thread.take() {
            Some(thread) => thread.join(),
            None => Ok(()),
        }
    }
}

impl Drop for ServerHandle {
    fn drop(&mut self) {
        // A panic on the server thread is reported by `shutdown`; a drop
        // (possibly during unwinding) must not panic again.
        let _ = self.stop_and_join();
    }
}

/// Entry points for the fuzz targets under `fuzz/` (not an API: they may
/// change with the server).
#[doc(hidden)]
pub mod fuzz {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    /// Decodes a query string and a form body as the BBS does: the pairs,
    /// or the message of the 400.
    pub fn fields(body: Option<&str>, query: &str) -> Result<Vec<(String, String)>, String> {
        bbs::fuzz_fields(body, query)
    }

    /// Routes a path as the BBS does: `Ok` or the message of the error.
    pub fn route(path: &str) -> Result<(), String> {
        bbs::fuzz_route(path)
    }

    /// A server with the BBS on an in-memory database, its state kept
    /// between exchanges.
    #[derive(Debug, Clone)]
    pub struct Server(Svc);

    impl Server {
        pub fn new() -> Server {
            Server(Svc::new(App::Bbs(Arc::new(Database::new())), None))
        }

        /// Serves `raw`, the bytes a client sent on one connection before
        /// closing its side, as `dyno serve` would, and returns what the
        /// server wrote back. Must run in a tokio runtime with time (a
        /// paused clock keeps `/delay` from waiting).
        pub async fn exchange(&self, raw: &[u8]) -> Vec<u8> {
            let (mut client, server) = tokio::io::duplex(64 << 10);
            let mut builder = auto::Builder::new(TokioExecutor::new());
            builder
                .http1()
                .keep_alive(true)
                .pipeline_flush(true)
                .header_read_timeout(None)
                // Answer what was asked before the client closed its side.
                .half_close(true);
            let (_stop, stop) = watch::channel(());
            let served = tokio::spawn(connection(&builder, server, self.0.clone(), stop));
            let raw = raw.to_vec();
            let sent = tokio::spawn(async move {
                let (mut read, mut write) = tokio::io::split(&mut client);
                let writing = async {
                    // The server may close before reading it all.
                    let _ = write.write_all(&raw).await;
                    let _ = write.shutdown().await;
                };
                let mut back = Vec::new();
                let reading = read.read_to_end(&mut back);
                let (_, _) = tokio::join!(writing, reading);
                back
            });
            let back = sent.await.unwrap_or_default();
            let _ = served.await;
            back
        }
    }

    impl Default for Server {
        fn default() -> Server {
            Server::new()
        }
    }
}

#[cfg(test)]
mod tests;
