//! The reference HTTP target that dyno's load tests and its own tests aim at.
//!
//! A small HTTP/1.1 and HTTP/2 server (hyper; keep-alive and pipelining on
//! for HTTP/1.1, h2c with prior knowledge for HTTP/2) with a few
//! fixed endpoints whose answers cost next to nothing to produce, so that a
//! load test measures the client and the network path rather than the server:
//!
//! - `/hello`: the 92-byte page [`HELLO`] (`text/html`).
//! - `/blob/<size>`: `<size>` bytes (`512`, `64k`, `1m`, powers of 1024, up to
//!   1 TiB), cut from one shared buffer without copying.
//! - `/status/<code>`: an answer with that status (200–599).
//! - `/delay/<ms>`: `/hello` after `<ms>` milliseconds (0–60000).
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
//! [`spawn_app`] do the same for an [`App`].

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
use hyper::body::{Body as _, Incoming};
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
mod routes;
mod tls;

pub use tls::Tls;

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
    serve_with_grace(listener, shutdown, GRACE, app, None).await;
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
    serve_with_grace(listener, shutdown, GRACE, app, Some(tls.acceptor())).await;
    Ok(())
}

async fn serve_with_grace(
    listener: TcpListener,
    shutdown: impl Future<Output = ()>,
    grace: Duration,
    app: App,
    tls: Option<tokio_rustls::TlsAcceptor>,
) {
    let mut shutdown = pin!(shutdown);
    let blob = body::blob_buffer();
    let bbs = match app {
        App::Plain => None,
        App::Bbs(db) => Some(Arc::new(Bbs::new(db))),
    };
    let index = match bbs {
        None => Bytes::from_static(routes::INDEX),
        Some(_) => Bytes::from([routes::INDEX, bbs::INDEX.as_bytes()].concat()),
    };
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
                let service = Svc {
                    blob: blob.clone(),
                    index: index.clone(),
                    bbs: bbs.clone(),
                };
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
fn connection<S>(
    builder: &auto::Builder<TokioExecutor>,
    stream: S,
    service: Svc,
    mut stop: watch::Receiver<()>,
) -> impl Future<Output = ()> + Send + 'static
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let connection = builder
        .serve_connection(TokioIo::new(stream), service)
        .into_owned();
    async move {
        let mut connection = pin!(connection);
        tokio::select! {
            // Per-connection errors (resets, malformed requests) only end this
            // connection; there is no one to report them to.
            _ = connection.as_mut() => return,
            // Fires on shutdown (or if the server went away).
            _ = stop.changed() => {}
        }
        connection.as_mut().graceful_shutdown();
        let _ = connection.await;
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

/// The per-connection request handler: routes each request and holds the
/// shared blob buffer, the index page and the BBS (cloned once per
/// connection, not per request).
#[derive(Debug, Clone)]
struct Svc {
    blob: Bytes,
    index: Bytes,
    bbs: Option<Arc<Bbs>>,
}

impl Service<Request<Incoming>> for Svc {
    type Response = Response<Body>;
    type Error = Infallible;
    type Future = Respond;

    fn call(&self, request: Request<Incoming>) -> Respond {
        let path = request.uri().path();
        // A plain server pays one test of None here.
        if let Some(bbs) = &self.bbs
            && bbs::owns(path)
        {
            return match bbs.call(request) {
                Handled::Now(response, body) => Respond::new(body, None, response),
                Handled::Later(later) => Respond {
                    body: None,
                    delay: None,
                    response: None,
                    later: Some(Later(later)),
                },
            };
        }
        let (delay, response) = match routes::route(path, &self.blob, &self.index) {
            Answer::Now(response) => (None, response),
            Answer::After(delay, response) => (Some(Box::pin(tokio::time::sleep(delay))), response),
        };
        Respond::new(request.into_body(), delay, response)
    }
}

/// The future of one answer: reads and discards the request body (so the
/// connection can be kept alive after it), waits out any delay, then yields
/// the response; or awaits the BBS's answer, which reads the body itself.
/// Hand-written because `Service::Future` must be a nameable type: an
/// `async` block would have to be boxed, one allocation per request (the
/// BBS pays it only for writes and bodies).
#[derive(Debug)]
struct Respond {
    body: Option<Incoming>,
    delay: Option<Pin<Box<Sleep>>>,
    response: Option<Response<Body>>,
    later: Option<Later>,
}

/// An answer still being made (a BBS write).
struct Later(Pin<Box<dyn Future<Output = Response<Body>> + Send>>);

impl std::fmt::Debug for Later {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Later(..)")
    }
}

impl Respond {
    fn new(body: Incoming, delay: Option<Pin<Box<Sleep>>>, response: Response<Body>) -> Respond {
        Respond {
            body: (!body.is_end_stream()).then_some(body),
            delay,
            response: Some(response),
            later: None,
        }
    }
}

impl Future for Respond {
    type Output = Result<Response<Body>, Infallible>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.get_mut();
        if let Some(later) = &mut this.later {
            return later.0.as_mut().poll(cx).map(Ok);
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
        Poll::Ready(Ok(response))
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
    spawn_with(listener, threads, app, None)
}

/// [`spawn`] over TLS (HTTP/2 or HTTP/1.1, as ALPN settles).
pub fn spawn_tls(
    listener: std::net::TcpListener,
    threads: usize,
    tls: Tls,
) -> Result<ServerHandle, ServeError> {
    spawn_with(listener, threads, App::Plain, Some(tls))
}

fn spawn_with(
    listener: std::net::TcpListener,
    threads: usize,
    app: App,
    tls: Option<Tls>,
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
    let listener = {
        let _guard = runtime.enter();
        TcpListener::from_std(listener).map_err(ServeError::Listener)?
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
            runtime.block_on(serve_with_grace(
                listener,
                shutdown,
                GRACE,
                app,
                tls.map(|t| t.acceptor()),
            ));
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

#[cfg(test)]
mod tests;
