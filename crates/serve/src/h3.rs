//! `dyno serve --h3`: the same endpoints over HTTP/3, on a UDP socket at the
//! TCP listener's port, with the certificate of `--tls`.
//!
//! quinn runs QUIC (its endpoint drives the socket, each connection's
//! driver is a task of its own), the h3 crate the HTTP/3 framing on top.
//! Each connection is a task that accepts request streams, and each request
//! stream a task that hands the request to the same [`Svc`] the TCP side
//! uses, so the routes, the BBS and the `/cpu` lock are shared code; this
//! module only turns the answer into HTTP/3 frames. On shutdown every
//! connection gets a GOAWAY, its requests in flight get the server's grace
//! period, and it is then closed with `H3_NO_ERROR`.

use std::future::{Future, poll_fn};
use std::pin::{Pin, pin};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::{Buf, Bytes};
use hyper::body::{Body as _, Frame, SizeHint};
use hyper::header::{CONNECTION, CONTENT_LENGTH, HeaderValue};
use hyper::{Method, Response, StatusCode};
use tokio::sync::watch;
use tokio::task::JoinSet;

use crate::body::Body;
use crate::{HANDSHAKE_TIMEOUT, ServeError, Svc};

/// The socket buffer size (receive and send) dyno asks the kernel for on a
/// QUIC socket: 8 MiB. A UDP datagram that arrives while the receive buffer
/// is full is dropped, and QUIC takes the loss for congestion and slows
/// down; the kernel default (`net.core.rmem_default`, 208 KiB on Linux)
/// holds about a hundred full-size packets (each counted with the kernel's
/// overhead), a small part of one 1 MiB body. quic-go asks
/// for 7 MiB for the same reason (its advice: `net.core.rmem_max` and
/// `wmem_max` of 7.5 MB). Linux grants no more than those ceilings, so
/// `dyno doctor http` checks them.
pub const QUIC_SOCKET_BUFFER: usize = 8 << 20;

/// The error code of a connection closed without error (RFC 9114 8.1).
const H3_NO_ERROR: u32 = 0x100;

/// How many requests a client may have open at once on one connection.
/// quinn's default of 100 would cap a load generator's streams per
/// connection at 100 and hold the rest back in the client, where they count
/// as latency; 1024 leaves the client's own setting (`-m`) as the limit in
/// any test this server is meant for. A stream not opened costs nothing.
const MAX_STREAMS: u32 = 1024;

/// How long a connection may be silent before it is dropped. A QUIC server
/// must forget clients that vanished (there is no TCP reset to tell it); a
/// client that keeps its connection idle longer sends keep-alives (quinn's
/// `keep_alive_interval`). quinn's default, stated.
const IDLE_TIMEOUT: Duration = Duration::from_secs(30);

/// How long a stopping connection waits, after its last answer, before it
/// is closed (or four round trips, if longer): on a LAN, time for the
/// last packets to be acknowledged (a round trip and the client's 25 ms
/// acknowledgement delay) with room for a retransmission. The h3 crate
/// gives no way to wait for the acknowledgement itself.
const LINGER: Duration = Duration::from_millis(250);

/// How long the endpoint waits, after closing its connections, for the
/// close to reach the clients (a lost CONNECTION_CLOSE is resent for three
/// probe timeouts, milliseconds on a LAN) before it is dropped.
const CLOSE_WAIT: Duration = Duration::from_secs(1);

/// The UDP socket buffers the kernel granted, in bytes (as the kernel
/// reports them: Linux doubles what it grants for its bookkeeping).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UdpBuffers {
    /// The receive buffer (`SO_RCVBUF`).
    pub recv: usize,
    /// The send buffer (`SO_SNDBUF`).
    pub send: usize,
}

/// Asks for [`QUIC_SOCKET_BUFFER`] bytes of receive and send buffer on
/// `socket` and returns what the kernel granted: no more than
/// `net.core.rmem_max` and `wmem_max` on Linux. [`serve_h3`](crate::serve_h3)
/// and [`spawn_h3`](crate::spawn_h3) ask for them themselves; call this first
/// to learn what was granted.
pub fn grow_udp_buffers(socket: &std::net::UdpSocket) -> std::io::Result<UdpBuffers> {
    let state = quinn::udp::UdpSocketState::new(socket.into())?;
    // Refused sizes are capped, not errors, on Linux; elsewhere an error
    // leaves the default, which the returned sizes then show.
    let _ = state.set_recv_buffer_size(socket.into(), QUIC_SOCKET_BUFFER);
    let _ = state.set_send_buffer_size(socket.into(), QUIC_SOCKET_BUFFER);
    Ok(UdpBuffers {
        recv: state.recv_buffer_size(socket.into())?,
        send: state.send_buffer_size(socket.into())?,
    })
}

/// Binds a TCP listener and a UDP socket at the same port of `addr`, as
/// HTTP/3 announced by `alt-svc` wants. For port 0 the TCP listener picks a
/// free port and the UDP socket takes the same one; should that port be
/// taken for UDP, another pair is tried (a few times). The listener is
/// bound as tokio binds one (`SO_REUSEADDR`, a backlog of 1024, not std's
/// 128: a load test opens hundreds of connections at once).
pub fn bind_tcp_udp(
    addr: std::net::SocketAddr,
) -> std::io::Result<(std::net::TcpListener, std::net::UdpSocket)> {
    let tries = if addr.port() == 0 { 16 } else { 1 };
    let mut last = None;
    for _ in 0..tries {
        let tcp = listen(addr)?;
        let bound = tcp.local_addr()?;
        match std::net::UdpSocket::bind(bound) {
            Ok(udp) => return Ok((tcp, udp)),
            Err(err) => last = Some(err),
        }
    }
    let err = last.expect("at least one try");
    Err(std::io::Error::new(
        err.kind(),
        format!("could not bind UDP at the TCP port of {addr} for HTTP/3: {err}"),
    ))
}

fn listen(addr: std::net::SocketAddr) -> std::io::Result<std::net::TcpListener> {
    use socket2::{Domain, Socket, Type};
    let socket = Socket::new(Domain::for_address(addr), Type::STREAM, None)?;
    // As tokio does on Unix: a restarted server can take its port back
    // while the old connections are in TIME_WAIT.
    #[cfg(unix)]
    socket.set_reuse_address(true)?;
    socket.bind(&addr.into())?;
    socket.listen(1024)?;
    Ok(socket.into())
}

/// The QUIC endpoint on `socket`: TLS 1.3 from `tls`, transport settings
/// for a benchmark target. Must be called inside the tokio runtime that
/// will drive it.
pub(crate) fn endpoint(
    socket: std::net::UdpSocket,
    tls: &crate::Tls,
) -> Result<quinn::Endpoint, ServeError> {
    let _ = grow_udp_buffers(&socket);
    let mut transport = quinn::TransportConfig::default();
    transport
        .max_concurrent_bidi_streams(quinn::VarInt::from_u32(MAX_STREAMS))
        .max_idle_timeout(Some(
            IDLE_TIMEOUT
                .try_into()
                .expect("30 s fits QUIC's idle timeout"),
        ));
    let mut config = quinn::ServerConfig::with_crypto(tls.quic());
    config.transport_config(Arc::new(transport));
    quinn::Endpoint::new(
        quinn::EndpointConfig::default(),
        Some(config),
        socket,
        Arc::new(quinn::TokioRuntime),
    )
    .map_err(ServeError::Quic)
}

/// Accepts QUIC connections on `endpoint` until `shutdown` completes, then
/// stops accepting, sends every connection a GOAWAY and gives the requests
/// in flight `grace` to finish before closing what is left with
/// `H3_NO_ERROR`.
pub(crate) async fn serve(
    endpoint: quinn::Endpoint,
    shutdown: impl Future<Output = ()>,
    grace: Duration,
    service: Svc,
) {
    let mut shutdown = pin!(shutdown);
    let (stop_tx, stop_rx) = watch::channel(());
    let mut connections = JoinSet::new();
    loop {
        let incoming = tokio::select! {
            biased;
            () = &mut shutdown => break,
            incoming = endpoint.accept() => incoming,
        };
        // None: the endpoint was closed, which only this function does.
        let Some(incoming) = incoming else { break };
        connections.spawn(connection(incoming, service.clone(), stop_rx.clone()));
        // Forget finished connections so the set stays as small as the open ones.
        while connections.try_join_next().is_some() {}
    }
    // New connection attempts are refused from now on.
    endpoint.set_server_config(None);
    stop_tx.send_replace(());
    let drained = tokio::time::timeout(grace, async {
        while connections.join_next().await.is_some() {}
    })
    .await;
    if drained.is_err() {
        connections.shutdown().await;
    }
    endpoint.close(quinn::VarInt::from_u32(H3_NO_ERROR), b"server stopped");
    let _ = tokio::time::timeout(CLOSE_WAIT, endpoint.wait_idle()).await;
}

/// One QUIC connection: the handshake, then one task per request stream,
/// until the client closes it or `stop` fires.
async fn connection(incoming: quinn::Incoming, service: Svc, mut stop: watch::Receiver<()>) {
    // A client that gives up on the handshake (an untrusted certificate)
    // only ends its own.
    let Ok(connecting) = incoming.accept() else {
        return;
    };
    // A resuming client's early data (0-RTT) is read at once; quinn
    // gives a server its connection before the handshake ends.
    let quic = match connecting.into_0rtt() {
        Ok((quic, _)) => quic,
        Err(connecting) => match tokio::time::timeout(HANDSHAKE_TIMEOUT, connecting).await {
            Ok(Ok(quic)) => quic,
            _ => return,
        },
    };
    let builder = ::h3::server::builder();
    let built = builder.build::<_, Bytes>(h3_quinn::Connection::new(quic.clone()));
    let Ok(Ok(mut h3)) = tokio::time::timeout(HANDSHAKE_TIMEOUT, built).await else {
        return;
    };
    let mut requests = JoinSet::new();
    let stopping = loop {
        tokio::select! {
            accepted = h3.accept() => match accepted {
                Ok(Some(resolver)) => {
                    requests.spawn(request(resolver, service.clone()));
                }
                // The client closed the connection (or broke it): its
                // requests in flight can no longer be answered, and end
                // with the set.
                Ok(None) | Err(_) => break false,
            },
            // Fires on shutdown (or if the server went away).
            _ = stop.changed() => break true,
        }
        while requests.try_join_next().is_some() {}
    };
    if stopping {
        // GOAWAY: no request past those accepted will be answered, so the
        // client retries them elsewhere; those accepted finish (within the
        // server's grace period).
        let _ = h3.shutdown(0).await;
        while requests.join_next().await.is_some() {}
        // A request's task ends when its answer is handed to quinn, not
        // when the client has it, and closing a QUIC connection drops what
        // is still unacknowledged: give the tail time to arrive (or the
        // client time to close first, as it may after the GOAWAY).
        let linger = LINGER.max(quic.rtt() * 4);
        let _ = tokio::time::timeout(linger, quic.closed()).await;
        quic.close(quinn::VarInt::from_u32(H3_NO_ERROR), b"server stopped");
    }
}

type Resolver = ::h3::server::RequestResolver<h3_quinn::Connection, Bytes>;

/// One request stream: reads the request, lets the service answer it (the
/// body is read and discarded there, as over TCP), and sends the answer.
/// A stream the client resets, or a malformed request (the h3 crate answers
/// it), only ends this task.
async fn request(resolver: Resolver, service: Svc) {
    let Ok((request, stream)) = resolver.resolve_request().await else {
        return;
    };
    let (mut send, recv) = stream.split();
    let head = request.method() == Method::HEAD;
    let request = request.map(|()| H3Body(recv));
    let Ok(response) = service.respond(request).await;
    let _ = answer(&mut send, response, head).await;
}

/// Sends `response` on `send`: its head, then (unless it answers a HEAD)
/// its body frame by frame, then the end of the stream.
async fn answer(
    send: &mut ::h3::server::RequestStream<h3_quinn::SendStream<Bytes>, Bytes>,
    response: Response<Body>,
    head: bool,
) -> Result<(), ::h3::error::StreamError> {
    let (mut parts, mut body) = response.into_parts();
    // HTTP/3 forbids connection-specific fields (RFC 9114 4.2); the BBS
    // sets `connection: close` when it left a body unread, which over
    // HTTP/3 costs nothing (the stream ends on its own).
    parts.headers.remove(CONNECTION);
    // hyper writes the length over TCP from the body's exact size; so does
    // this, HEAD included. 204 and 304 carry none (RFC 9110 8.6).
    if !matches!(
        parts.status,
        StatusCode::NO_CONTENT | StatusCode::NOT_MODIFIED
    ) && let Some(len) = body.size_hint().exact()
    {
        parts.headers.insert(CONTENT_LENGTH, HeaderValue::from(len));
    }
    send.send_response(Response::from_parts(parts, ())).await?;
    if !head {
        while let Some(Ok(frame)) = poll_fn(|cx| Pin::new(&mut body).poll_frame(cx)).await {
            if let Ok(data) = frame.into_data() {
                send.send_data(data).await?;
            }
        }
    }
    send.finish().await
}

/// The receiving half of a request stream as a hyper body, so that the
/// service reads it as it reads a TCP request's.
pub(crate) struct H3Body(::h3::server::RequestStream<h3_quinn::RecvStream, Bytes>);

impl hyper::body::Body for H3Body {
    type Data = Bytes;
    type Error = ::h3::error::StreamError;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        let this = self.get_mut();
        match std::task::ready!(this.0.poll_recv_data(cx)) {
            Ok(Some(mut data)) => {
                // The h3 crate hands out its own buffer type; a Bytes of it
                // is what the service reads (and drops, unless the BBS
                // keeps the body).
                let bytes = data.copy_to_bytes(data.remaining());
                Poll::Ready(Some(Ok(Frame::data(bytes))))
            }
            Ok(None) => Poll::Ready(None),
            Err(err) => Poll::Ready(Some(Err(err))),
        }
    }

    fn size_hint(&self) -> SizeHint {
        SizeHint::default()
    }
}

/// The answer future's `Debug` shows its body; the stream has nothing to show.
impl std::fmt::Debug for H3Body {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("H3Body(..)")
    }
}

#[cfg(test)]
mod tests;
