//! One HTTP/3 client connection in dyno's own framing over a quinn
//! connection: the control stream (SETTINGS, nothing set), the server's
//! streams read for its GOAWAY (its QPACK streams drained: it may not use
//! a dynamic table), and requests as bidirectional streams carrying one
//! pre-encoded HEADERS frame, a DATA frame for a body, and FIN.

use std::cell::Cell;
use std::rc::Rc;
use std::time::{Duration, Instant};

use bytes::Bytes;

use super::frame::{
    self, CONTROL_STREAM, DATA, GOAWAY, HEADERS, QPACK_DECODER_STREAM, QPACK_ENCODER_STREAM,
};
use super::qpack;

/// HTTP/3 error codes (RFC 9114 §8.1) the client uses or reads.
pub(crate) const H3_NO_ERROR: u32 = 0x100;
pub(crate) const H3_STREAM_CREATION_ERROR: u32 = 0x103;
pub(crate) const H3_REQUEST_REJECTED: u64 = 0x10b;
pub(crate) const H3_REQUEST_CANCELLED: u32 = 0x10c;

/// A connection as its requests share it.
#[derive(Clone)]
pub(crate) struct Session {
    pub(crate) conn: quinn::Connection,
    /// The first request stream id the server's GOAWAY says it will not
    /// process, once one came.
    goaway: Rc<Cell<Option<u64>>>,
    /// The control stream, open as long as the session: closing it is a
    /// connection error.
    _control: Rc<quinn::SendStream>,
}

/// Why a request got no answer.
#[derive(Debug)]
pub(crate) enum Failed {
    /// Not sent: the server's GOAWAY came, or the connection is gone.
    Unsent,
    /// The server reset the request's stream with `code`.
    Reset(u64),
    /// The connection ended under the request.
    Lost(quinn::ConnectionError),
    /// No answer within the timeout; the stream was given up.
    Timeout,
    /// The answer broke HTTP/3's or QPACK's rules.
    Malformed(String),
}

/// An answer's head and how much body came.
#[derive(Debug)]
pub(crate) struct Answer {
    pub(crate) status: u16,
    pub(crate) content_length: Option<u64>,
    pub(crate) body_bytes: u64,
    /// When its HEADERS frame was read whole.
    pub(crate) head_at: Instant,
}

impl Session {
    /// Opens the client's control stream on `conn` and starts reading
    /// the server's streams.
    pub(crate) async fn open(conn: quinn::Connection) -> Result<Session, String> {
        let mut control = conn.open_uni().await.map_err(|e| e.to_string())?;
        control
            .write_all(&frame::control_stream_opening())
            .await
            .map_err(|e| e.to_string())?;
        let goaway = Rc::new(Cell::new(None));
        tokio::task::spawn_local(server_streams(conn.clone(), Rc::clone(&goaway)));
        Ok(Session {
            conn,
            goaway,
            _control: Rc::new(control),
        })
    }

    /// The server's GOAWAY came: no new request goes on this connection.
    pub(crate) fn going_away(&self) -> bool {
        self.goaway.get().is_some()
    }

    /// Sends `headers` (a whole HEADERS frame) and `body` as one request
    /// and reads its answer within `timeout`; with `capture`, the answer's
    /// fields go there as HTTP/1.1 text, its body after them. `fields`
    /// sees each field of the answer's head.
    /// `opened` is called once the request's stream is open (the server's
    /// stream limit let it go).
    #[allow(clippy::too_many_arguments)]
    pub(crate) async fn exchange(
        &self,
        headers: &Bytes,
        body: Option<&Bytes>,
        timeout: Duration,
        mut capture: Option<&mut Vec<u8>>,
        mut fields: impl FnMut(&[u8], &[u8]),
        opened: impl FnOnce(),
    ) -> Result<Answer, Failed> {
        if self.going_away() {
            return Err(Failed::Unsent);
        }
        let (mut send, mut recv) = match self.conn.open_bi().await {
            Ok(s) => s,
            Err(_) => return Err(Failed::Unsent),
        };
        opened();
        let deadline = tokio::time::Instant::now() + timeout;
        let answered = tokio::time::timeout_at(deadline, async {
            write_request(&mut send, headers, body).await?;
            read_answer(&mut recv, capture.as_deref_mut(), &mut fields).await
        })
        .await;
        match answered {
            Ok(result) => result,
            Err(_) => {
                let _ = recv.stop(H3_REQUEST_CANCELLED.into());
                let _ = send.reset(H3_REQUEST_CANCELLED.into());
                Err(Failed::Timeout)
            }
        }
    }
}

/// Writes the request's frames and FIN.
async fn write_request(
    send: &mut quinn::SendStream,
    headers: &Bytes,
    body: Option<&Bytes>,
) -> Result<(), Failed> {
    let written = async {
        send.write_chunk(headers.clone()).await?;
        if let Some(body) = body {
            let mut head = Vec::with_capacity(16);
            frame::put_head(&mut head, DATA, body.len() as u64);
            send.write_chunk(Bytes::from(head)).await?;
            send.write_chunk(body.clone()).await?;
        }
        Ok::<_, quinn::WriteError>(())
    }
    .await;
    match written {
        Ok(()) => {}
        Err(quinn::WriteError::Stopped(code)) => return Err(Failed::Reset(code.into_inner())),
        Err(quinn::WriteError::ConnectionLost(e)) => return Err(Failed::Lost(e)),
        Err(e) => return Err(Failed::Malformed(e.to_string())),
    }
    send.finish().map_err(|e| Failed::Malformed(e.to_string()))
}

/// Reads an answer's frames to the stream's end: the first HEADERS frame
/// is its head (interim 1xx heads are skipped), DATA frames its body,
/// counted without being kept unless captured; unknown frames are
/// skipped, as RFC 9114 §9 asks.
async fn read_answer(
    recv: &mut quinn::RecvStream,
    mut capture: Option<&mut Vec<u8>>,
    fields: &mut impl FnMut(&[u8], &[u8]),
) -> Result<Answer, Failed> {
    // Bytes of a frame head or a HEADERS payload not yet whole.
    let mut pending: Vec<u8> = Vec::new();
    // What is left of the frame being read, and whether it is DATA.
    let mut left = 0u64;
    let mut in_data = false;
    let mut head: Option<(u16, Option<u64>, Instant)> = None;
    let mut body_bytes = 0u64;
    loop {
        let chunk = match recv.read_chunk(usize::MAX, true).await {
            Ok(Some(chunk)) => chunk.bytes,
            Ok(None) => break,
            Err(quinn::ReadError::Reset(code)) => return Err(Failed::Reset(code.into_inner())),
            Err(quinn::ReadError::ConnectionLost(e)) => return Err(Failed::Lost(e)),
            Err(e) => return Err(Failed::Malformed(e.to_string())),
        };
        let mut data: &[u8] = &chunk;
        while !data.is_empty() {
            if left > 0 && in_data {
                let n = (left.min(data.len() as u64)) as usize;
                body_bytes += n as u64;
                if let Some(capture) = capture.as_deref_mut() {
                    capture.extend_from_slice(&data[..n]);
                }
                left -= n as u64;
                data = &data[n..];
                continue;
            }
            if left > 0 {
                // A frame other than DATA: gather its payload.
                let n = (left.min(data.len() as u64)) as usize;
                pending.extend_from_slice(&data[..n]);
                left -= n as u64;
                data = &data[n..];
                if left == 0 {
                    finish_frame(&pending, &mut head, capture.as_deref_mut(), fields)?;
                    pending.clear();
                }
                continue;
            }
            // A frame head, maybe split across chunks.
            pending.push(data[0]);
            data = &data[1..];
            if let Some(h) = frame::head(&pending) {
                pending.clear();
                left = h.len;
                in_data = h.kind == DATA;
                if in_data && head.is_none() {
                    return Err(Failed::Malformed("DATA before the answer's HEADERS".into()));
                }
                // Remember the kind of a non-DATA frame in `pending`'s
                // first byte slot: HEADERS is decoded, others skipped.
                if !in_data {
                    pending.push(u8::from(h.kind == HEADERS));
                    if left == 0 {
                        finish_frame(&pending, &mut head, capture.as_deref_mut(), fields)?;
                        pending.clear();
                    }
                }
            } else if pending.len() > 16 {
                return Err(Failed::Malformed("a frame head that does not end".into()));
            }
        }
    }
    let Some((status, content_length, head_at)) = head else {
        return Err(Failed::Malformed(
            "the stream ended without an answer".into(),
        ));
    };
    Ok(Answer {
        status,
        content_length,
        body_bytes,
        head_at,
    })
}

/// A whole non-DATA frame: `frame[0]` says whether it is HEADERS, the
/// rest is its payload. The first final head is the answer's.
fn finish_frame(
    frame: &[u8],
    head: &mut Option<(u16, Option<u64>, Instant)>,
    capture: Option<&mut Vec<u8>>,
    fields: &mut impl FnMut(&[u8], &[u8]),
) -> Result<(), Failed> {
    if frame.first() != Some(&1) || head.is_some() {
        // Unknown frames, and trailers, are not read.
        return Ok(());
    }
    let (mut status, mut length) = (0u16, None);
    let mut lines = Vec::new();
    qpack::decode(&frame[1..], |name, value| {
        match name {
            b":status" => {
                status = std::str::from_utf8(value)
                    .ok()
                    .and_then(|s| s.parse().ok())
                    .unwrap_or(0);
            }
            b"content-length" => {
                length = std::str::from_utf8(value).ok().and_then(|s| s.parse().ok());
            }
            _ => {}
        }
        if !name.starts_with(b":") {
            lines.push((name.to_vec(), value.to_vec()));
        }
        fields(name, value);
    })
    .map_err(|e| Failed::Malformed(e.to_string()))?;
    if (100..200).contains(&status) {
        // An interim answer: the final one follows.
        return Ok(());
    }
    if status == 0 {
        return Err(Failed::Malformed("an answer without :status".into()));
    }
    if let Some(capture) = capture {
        capture.clear();
        capture.extend_from_slice(format!("HTTP/1.1 {status} -\r\n").as_bytes());
        for (name, value) in &lines {
            capture.extend_from_slice(name);
            capture.extend_from_slice(b": ");
            capture.extend_from_slice(value);
            capture.extend_from_slice(b"\r\n");
        }
        capture.extend_from_slice(b"\r\n");
    }
    *head = Some((status, length, Instant::now()));
    Ok(())
}

/// Reads the server's unidirectional streams while the connection lasts:
/// its control stream for GOAWAY; its QPACK streams drained; anything
/// else (push streams, which this client never allowed) stopped.
async fn server_streams(conn: quinn::Connection, goaway: Rc<Cell<Option<u64>>>) {
    while let Ok(mut recv) = conn.accept_uni().await {
        let goaway = Rc::clone(&goaway);
        tokio::task::spawn_local(async move {
            let mut buf: Vec<u8> = Vec::new();
            let kind = loop {
                match recv.read_chunk(usize::MAX, true).await {
                    Ok(Some(chunk)) => buf.extend_from_slice(&chunk.bytes),
                    _ => return,
                }
                if let Some((kind, n)) = frame::get_varint(&buf) {
                    buf.drain(..n);
                    break kind;
                }
            };
            match kind {
                CONTROL_STREAM => loop {
                    while let Some(h) = frame::head(&buf) {
                        let end = h.size + h.len as usize;
                        if buf.len() < end {
                            break;
                        }
                        if h.kind == GOAWAY
                            && let Some(id) = frame::goaway_id(&buf[h.size..end])
                        {
                            goaway.set(Some(id));
                        }
                        buf.drain(..end);
                    }
                    match recv.read_chunk(usize::MAX, true).await {
                        Ok(Some(chunk)) => buf.extend_from_slice(&chunk.bytes),
                        _ => return,
                    }
                },
                QPACK_ENCODER_STREAM | QPACK_DECODER_STREAM => {
                    while let Ok(Some(_)) = recv.read_chunk(usize::MAX, true).await {}
                }
                _ => {
                    let _ = recv.stop(H3_STREAM_CREATION_ERROR.into());
                }
            }
        });
    }
}

/// A request's HEADERS frame from its fields (pseudo-fields first).
pub(crate) fn headers_frame(fields: &[(&[u8], &[u8])]) -> Bytes {
    let mut block = Vec::new();
    qpack::encode(fields, &mut block);
    let mut out = Vec::with_capacity(block.len() + 8);
    frame::put_head(&mut out, HEADERS, block.len() as u64);
    out.extend_from_slice(&block);
    Bytes::from(out)
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;

    async fn connect(addr: std::net::SocketAddr) -> (quinn::Endpoint, Session) {
        let settings = crate::settings::TlsSettings { insecure: true };
        let tls =
            crate::tls::client_config(&settings, &[b"h3".to_vec()], &[&rustls::version::TLS13])
                .unwrap();
        let crypto = quinn::crypto::rustls::QuicClientConfig::try_from(tls).unwrap();
        let mut endpoint = quinn::Endpoint::client("127.0.0.1:0".parse().unwrap()).unwrap();
        endpoint.set_default_client_config(quinn::ClientConfig::new(Arc::new(crypto)));
        let conn = endpoint.connect(addr, "127.0.0.1").unwrap().await.unwrap();
        (endpoint, Session::open(conn).await.unwrap())
    }

    fn get(addr: std::net::SocketAddr, method: &str, path: &str) -> Bytes {
        let authority = addr.to_string();
        headers_frame(&[
            (b":method", method.as_bytes()),
            (b":scheme", b"https"),
            (b":authority", authority.as_bytes()),
            (b":path", path.as_bytes()),
        ])
    }

    /// Against `dyno serve --h3` (the h3 crate's server): bodies counted
    /// exactly, a status, a request body, a capture, a timeout.
    #[test]
    fn requests_in_this_framing_are_answered_whole() {
        let (tcp, udp) = dyno_serve::bind_tcp_udp("127.0.0.1:0".parse().unwrap()).unwrap();
        let tls = dyno_serve::Tls::self_signed(&["127.0.0.1".into()]).unwrap();
        let server = dyno_serve::spawn_h3(tcp, udp, 1, tls).unwrap();
        let addr = server.local_addr();
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let local = tokio::task::LocalSet::new();
        local.block_on(&runtime, async move {
            let (endpoint, session) = connect(addr).await;
            let second = Duration::from_secs(5);
            let hello = session
                .exchange(
                    &get(addr, "GET", "/hello"),
                    None,
                    second,
                    None,
                    |_, _| {},
                    || {},
                )
                .await
                .unwrap();
            assert_eq!(hello.status, 200);
            assert_eq!(hello.body_bytes, dyno_serve::HELLO.len() as u64);
            assert_eq!(hello.content_length, Some(hello.body_bytes));
            let big = session
                .exchange(
                    &get(addr, "GET", "/blob/1048576"),
                    None,
                    second,
                    None,
                    |_, _| {},
                    || {},
                )
                .await
                .unwrap();
            assert_eq!((big.status, big.body_bytes), (200, 1 << 20));
            let missing = session
                .exchange(
                    &get(addr, "GET", "/status/404"),
                    None,
                    second,
                    None,
                    |_, _| {},
                    || {},
                )
                .await
                .unwrap();
            assert_eq!(missing.status, 404);
            let body = Bytes::from(vec![b'x'; 100 * 1024]);
            let posted = session
                .exchange(
                    &get(addr, "POST", "/hello"),
                    Some(&body),
                    second,
                    None,
                    |_, _| {},
                    || {},
                )
                .await
                .unwrap();
            assert_eq!(posted.status, 200);
            let mut capture = Vec::new();
            session
                .exchange(
                    &get(addr, "GET", "/hello"),
                    None,
                    second,
                    Some(&mut capture),
                    |_, _| {},
                    || {},
                )
                .await
                .unwrap();
            let text = String::from_utf8(capture).unwrap();
            assert!(text.starts_with("HTTP/1.1 200 -\r\n"), "{text}");
            assert!(
                text.ends_with(std::str::from_utf8(dyno_serve::HELLO).unwrap()),
                "{text}"
            );
            let slow = session
                .exchange(
                    &get(addr, "GET", "/delay/2000"),
                    None,
                    Duration::from_millis(200),
                    None,
                    |_, _| {},
                    || {},
                )
                .await;
            assert!(matches!(slow, Err(Failed::Timeout)), "{slow:?}");
            // The connection goes on after a stream given up.
            let again = session
                .exchange(
                    &get(addr, "GET", "/hello"),
                    None,
                    second,
                    None,
                    |_, _| {},
                    || {},
                )
                .await
                .unwrap();
            assert_eq!(again.status, 200);
            session.conn.close(H3_NO_ERROR.into(), b"");
            endpoint.wait_idle().await;
        });
        drop(server);
    }
}
