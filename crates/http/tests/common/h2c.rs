//! An h2c server with a fault, for the engine's HTTP/2 tests
//! (`tests/h2.rs`) and the fault suite's HTTP/2 modes (`tests/suite.rs`).
//!
//! It is the `h2` crate's server side (hyper's HTTP/2, the conformance
//! reference of dyno's own client: a fault is exactly the frame it names),
//! on a tokio runtime of its own; dropping the [`H2Server`] stops it.

use std::net::{SocketAddr, TcpListener};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::Duration;

use bytes::Bytes;
use h2::Reason;

/// The body of every answer.
pub(crate) const BODY: &[u8] = b"hello";

/// What a server does wrong.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Fault {
    None,
    /// At most this many streams at once (SETTINGS_MAX_CONCURRENT_STREAMS).
    MaxStreams(u32),
    /// After this many requests on a connection, GOAWAY with no error and
    /// no more streams processed: those the client opened after the last
    /// one the server took are refused by it.
    GoAwayAfter(u64),
    /// After this many requests on a connection, a graceful GOAWAY: the
    /// streams already open are answered, then the connection closes.
    /// After 1, it is nginx's `keepalive_requests 1`: a connection per
    /// request.
    GracefulGoAwayAfter(u64),
    /// Every k-th request of the server is reset (RST_STREAM).
    ResetEvery(u64),
    /// The k-th request of the server is never answered.
    StallOne(u64),
    /// No request is ever answered; the streams are held open.
    StallAll,
    /// Every request is answered after this long.
    Slow(Duration),
    /// After this many answers (of all connections), the server is gone:
    /// every connection it has is reset (RST), and so is every one it is
    /// given.
    DiesAfter(u64),
}

type Seen = Arc<std::sync::Mutex<Vec<(String, String, Vec<u8>, Option<String>)>>>;

/// An h2c server with a fault, and what it saw.
pub(crate) struct H2Server {
    pub(crate) addr: SocketAddr,
    pub(crate) requests: Arc<AtomicU64>,
    /// The most streams it had open at once.
    pub(crate) peak: Arc<AtomicUsize>,
    /// Every answered request: method, path, body, its `x-test` header.
    pub(crate) seen: Seen,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl H2Server {
    pub(crate) fn addr(&self) -> SocketAddr {
        self.addr
    }
}

impl Drop for H2Server {
    fn drop(&mut self) {
        let _ = self.stop.take().map(|s| s.send(()));
        let _ = self.thread.take().map(|t| t.join());
    }
}

/// Starts an h2c server with `fault` on `127.0.0.1:0`.
pub(crate) fn h2_server(fault: Fault) -> H2Server {
    let std_listener = TcpListener::bind("127.0.0.1:0").unwrap();
    std_listener.set_nonblocking(true).unwrap();
    let addr = std_listener.local_addr().unwrap();
    let requests = Arc::new(AtomicU64::new(0));
    let peak = Arc::new(AtomicUsize::new(0));
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let seen = Seen::default();
    let (r, p, w) = (Arc::clone(&requests), Arc::clone(&peak), Arc::clone(&seen));
    let thread = std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(async move {
            let listener = tokio::net::TcpListener::from_std(std_listener).unwrap();
            let open = Arc::new(AtomicUsize::new(0));
            let accept = async {
                loop {
                    let Ok((socket, _)) = listener.accept().await else {
                        continue;
                    };
                    if let Fault::DiesAfter(k) = fault {
                        // Whenever this connection closes, it resets.
                        #[expect(deprecated, reason = "linger 0 never blocks: it resets at once")]
                        let _ = socket.set_linger(Some(Duration::ZERO));
                        if r.load(Ordering::SeqCst) >= k {
                            drop(socket);
                            continue;
                        }
                    }
                    let (r, p, open) = (Arc::clone(&r), Arc::clone(&p), Arc::clone(&open));
                    tokio::spawn(connection(socket, fault, r, p, open, Arc::clone(&w)));
                }
            };
            tokio::select! {
                () = accept => {}
                _ = stopped => {}
            }
        });
        runtime.shutdown_timeout(Duration::from_millis(100));
    });
    H2Server {
        addr,
        requests,
        peak,
        seen,
        stop: Some(stop),
        thread: Some(thread),
    }
}

async fn connection(
    socket: tokio::net::TcpStream,
    fault: Fault,
    requests: Arc<AtomicU64>,
    peak: Arc<AtomicUsize>,
    open: Arc<AtomicUsize>,
    seen: Seen,
) {
    let mut builder = h2::server::Builder::new();
    if let Fault::MaxStreams(n) = fault {
        builder.max_concurrent_streams(n);
    }
    let Ok(mut conn) = builder.handshake::<_, Bytes>(socket).await else {
        return;
    };
    let mut on_this = 0u64;
    let mut delay = Duration::from_micros(200);
    while let Some(Ok((request, mut respond))) = conn.accept().await {
        on_this += 1;
        let n = requests.fetch_add(1, Ordering::SeqCst) + 1;
        match fault {
            Fault::GoAwayAfter(k) if on_this > k => {
                // An error GOAWAY: the connection is over for every
                // stream. The loop goes on reading, so the socket is not
                // reset with the client's frames unread.
                if on_this == k + 1 {
                    conn.abrupt_shutdown(Reason::INTERNAL_ERROR);
                }
                continue;
            }
            Fault::GracefulGoAwayAfter(k) if on_this == k => conn.graceful_shutdown(),
            Fault::ResetEvery(k) if n.is_multiple_of(k) => {
                respond.send_reset(Reason::REFUSED_STREAM);
                continue;
            }
            Fault::StallAll => {
                hold(respond);
                continue;
            }
            Fault::StallOne(k) if n == k => {
                hold(respond);
                continue;
            }
            // Gone: the connection is dropped unread, with RST.
            Fault::DiesAfter(k) if n > k => return,
            Fault::Slow(by) => delay = by,
            _ => {}
        }
        let now = open.fetch_add(1, Ordering::SeqCst) + 1;
        peak.fetch_max(now, Ordering::SeqCst);
        let open = Arc::clone(&open);
        let seen = Arc::clone(&seen);
        tokio::spawn(async move {
            let (head, mut body) = request.into_parts();
            let mut bytes = Vec::new();
            while let Some(Ok(chunk)) = body.data().await {
                let _ = body.flow_control().release_capacity(chunk.len());
                bytes.extend_from_slice(&chunk);
            }
            let header = head
                .headers
                .get("x-test")
                .map(|v| v.to_str().unwrap().to_owned());
            seen.lock().unwrap().push((
                head.method.to_string(),
                head.uri.path().to_owned(),
                bytes,
                header,
            ));
            // A little time per answer, so streams overlap (or the slow
            // server's time).
            tokio::time::sleep(delay).await;
            open.fetch_sub(1, Ordering::SeqCst);
            let response = http::Response::builder()
                .status(200)
                .header("content-type", "text/plain")
                .body(())
                .unwrap();
            if let Ok(mut body) = respond.send_response(response, false) {
                let _ = body.send_data(Bytes::from_static(BODY), true);
            }
        });
    }
    // Let what was sent go out before the socket closes.
    let _ = std::future::poll_fn(|cx| conn.poll_closed(cx)).await;
    // Held open a moment: closing with the client's late requests unread
    // would reset the socket, and the client could lose the GOAWAY.
    tokio::time::sleep(Duration::from_millis(200)).await;
}

/// Holds a stream, never answered, until the connection ends (or 30 s).
fn hold(respond: h2::server::SendResponse<Bytes>) {
    tokio::spawn(async move {
        let _respond = respond;
        tokio::time::sleep(Duration::from_secs(30)).await;
    });
}
