//! A small HTTP/3 client for tests: quinn for QUIC, the h3 crate for the
//! framing, the certificate not checked (as `dyno http --insecure` does), so
//! that `dyno serve --h3` and its library can be tested without the load
//! generator's own HTTP/3 client.
//!
//! Blocking on purpose: it runs on its own current-thread runtime, so the
//! suites, which are synchronous, call it like their raw HTTP/1.1 clients.
//! Dropping the [`H3Client`] closes its connection and its runtime.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use bytes::{Buf, Bytes};

/// One answer.
#[derive(Debug, Clone)]
pub struct H3Reply {
    /// The status code.
    pub status: u16,
    /// The header fields, names in lower case as HTTP/3 carries them.
    pub headers: Vec<(String, String)>,
    /// The body, whole.
    pub body: Vec<u8>,
}

impl H3Reply {
    /// The first value of header `name` (lower case).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

/// One request.
#[derive(Debug, Clone)]
pub struct H3Request {
    /// GET, HEAD, POST, …
    pub method: String,
    /// The path, with any query string.
    pub path: String,
    /// The body; none is sent when empty.
    pub body: Vec<u8>,
}

impl H3Request {
    /// A GET of `path`.
    pub fn get(path: &str) -> H3Request {
        H3Request {
            method: "GET".into(),
            path: path.into(),
            body: Vec::new(),
        }
    }
}

type SendRequest = h3::client::SendRequest<h3_quinn::OpenStreams, Bytes>;

/// One HTTP/3 connection to a server.
pub struct H3Client {
    runtime: tokio::runtime::Runtime,
    endpoint: quinn::Endpoint,
    quic: quinn::Connection,
    send: SendRequest,
    authority: String,
}

impl std::fmt::Debug for H3Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("H3Client")
            .field("authority", &self.authority)
            .finish_non_exhaustive()
    }
}

/// How long a test waits for the handshake or one answer before it fails
/// (a server that never answers must not hang the suite).
const PATIENCE: Duration = Duration::from_secs(60);

impl H3Client {
    /// Connects to the server at `addr` over QUIC, ALPN `h3`, naming it
    /// `localhost`.
    pub fn connect(addr: SocketAddr) -> Result<H3Client, String> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| format!("a runtime: {e}"))?;
        let (endpoint, quic, send) = runtime.block_on(async {
            let bind: SocketAddr = if addr.is_ipv4() {
                "0.0.0.0:0".parse().expect("an address")
            } else {
                "[::]:0".parse().expect("an address")
            };
            let mut endpoint =
                quinn::Endpoint::client(bind).map_err(|e| format!("a UDP socket: {e}"))?;
            endpoint.set_default_client_config(client_config()?);
            let connecting = endpoint
                .connect(addr, "localhost")
                .map_err(|e| format!("connecting to {addr}: {e}"))?;
            let quic = tokio::time::timeout(PATIENCE, connecting)
                .await
                .map_err(|_| format!("no QUIC handshake with {addr} in {PATIENCE:?}"))?
                .map_err(|e| format!("the QUIC handshake with {addr}: {e}"))?;
            let (mut driver, send) = h3::client::new(h3_quinn::Connection::new(quic.clone()))
                .await
                .map_err(|e| format!("HTTP/3 over the connection to {addr}: {e}"))?;
            // The connection's control streams need polling for as long
            // as it is used; the task ends when the connection does.
            tokio::spawn(async move { std::future::poll_fn(|cx| driver.poll_close(cx)).await });
            Ok::<_, String>((endpoint, quic, send))
        })?;
        Ok(H3Client {
            runtime,
            endpoint,
            quic,
            send,
            authority: addr.to_string(),
        })
    }

    /// Sends `request` and reads its answer whole.
    pub fn request(&mut self, request: &H3Request) -> Result<H3Reply, String> {
        let mut send = self.send.clone();
        let authority = self.authority.clone();
        let request = request.clone();
        self.runtime
            .block_on(exchange(&mut send, &authority, request))
    }

    /// A GET of `path`.
    pub fn get(&mut self, path: &str) -> Result<H3Reply, String> {
        self.request(&H3Request::get(path))
    }

    /// Sends all of `requests` at once, each on its own stream of this one
    /// connection, and returns their answers in the same order.
    pub fn concurrent(&mut self, requests: &[H3Request]) -> Vec<Result<H3Reply, String>> {
        let authority = self.authority.clone();
        let send = self.send.clone();
        self.runtime.block_on(async {
            let tasks: Vec<_> = requests
                .iter()
                .map(|request| {
                    let mut send = send.clone();
                    let authority = authority.clone();
                    let request = request.clone();
                    tokio::spawn(async move { exchange(&mut send, &authority, request).await })
                })
                .collect();
            let mut replies = Vec::with_capacity(tasks.len());
            for task in tasks {
                replies.push(task.await.unwrap_or_else(|e| Err(format!("the task: {e}"))));
            }
            replies
        })
    }

    /// Waits at most `wait` for the server to close the connection, and
    /// returns the application error code it closed with (0x100 is
    /// `H3_NO_ERROR`); an error says what happened instead.
    pub fn close_code(&mut self, wait: Duration) -> Result<u64, String> {
        let quic = self.quic.clone();
        let closed = self
            .runtime
            .block_on(async { tokio::time::timeout(wait, quic.closed()).await })
            .map_err(|_| format!("the server kept the connection open for {wait:?}"))?;
        match closed {
            quinn::ConnectionError::ApplicationClosed(close) => Ok(close.error_code.into_inner()),
            other => Err(format!("the connection ended otherwise: {other}")),
        }
    }
}

impl Drop for H3Client {
    fn drop(&mut self) {
        self.endpoint.close(quinn::VarInt::from_u32(0x100), b"done");
    }
}

async fn exchange(
    send: &mut SendRequest,
    authority: &str,
    request: H3Request,
) -> Result<H3Reply, String> {
    let H3Request { method, path, body } = request;
    let what = format!("{method} {path}");
    let work = async {
        let head = http::Request::builder()
            .method(method.as_str())
            .uri(format!("https://{authority}{path}"))
            .body(())
            .map_err(|e| format!("a request: {e}"))?;
        let mut stream = send
            .send_request(head)
            .await
            .map_err(|e| format!("sending the request: {e}"))?;
        if !body.is_empty() {
            stream
                .send_data(Bytes::from(body))
                .await
                .map_err(|e| format!("sending the body: {e}"))?;
        }
        stream
            .finish()
            .await
            .map_err(|e| format!("ending the request: {e}"))?;
        let response = stream
            .recv_response()
            .await
            .map_err(|e| format!("reading the answer's head: {e}"))?;
        let mut reply = H3Reply {
            status: response.status().as_u16(),
            headers: response
                .headers()
                .iter()
                .map(|(n, v)| {
                    (
                        n.as_str().to_owned(),
                        String::from_utf8_lossy(v.as_bytes()).into_owned(),
                    )
                })
                .collect(),
            body: Vec::new(),
        };
        while let Some(mut chunk) = stream
            .recv_data()
            .await
            .map_err(|e| format!("reading the body: {e}"))?
        {
            while chunk.has_remaining() {
                let piece = chunk.chunk();
                reply.body.extend_from_slice(piece);
                let len = piece.len();
                chunk.advance(len);
            }
        }
        Ok::<_, String>(reply)
    };
    tokio::time::timeout(PATIENCE, work)
        .await
        .map_err(|_| format!("{what}: no answer in {PATIENCE:?}"))?
        .map_err(|e| format!("{what}: {e}"))
}

/// TLS 1.3, ALPN `h3`, any certificate accepted.
fn client_config() -> Result<quinn::ClientConfig, String> {
    let tls = crate::tls::insecure_client_config(&[&rustls::version::TLS13], &[b"h3"]);
    let quic = quinn::crypto::rustls::QuicClientConfig::try_from(tls)
        .map_err(|e| format!("TLS for QUIC: {e}"))?;
    Ok(quinn::ClientConfig::new(Arc::new(quic)))
}
