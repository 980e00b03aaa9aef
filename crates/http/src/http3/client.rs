//! One HTTP/3 client connection in dyno's own framing over a quinn
//! connection: the control stream (SETTINGS, nothing set), the server's
//! streams read for its GOAWAY (its QPACK streams drained: it may not use
//! a dynamic table), and requests as bidirectional streams carrying one
//! pre-encoded HEADERS frame, a DATA frame for a body, and FIN.

use std::cell::{Cell, RefCell};
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
    /// The last answer head decoded.
    known: Rc<RefCell<Known>>,
    /// The control stream, open as long as the session: closing it is a
    /// connection error.
    control: Rc<RefCell<quinn::SendStream>>,
}

/// Opens the client's control stream and writes its opening (SETTINGS).
async fn open_control(conn: &quinn::Connection) -> Result<quinn::SendStream, String> {
    let mut control = conn.open_uni().await.map_err(|e| e.to_string())?;
    control
        .write_all(&frame::control_stream_opening())
        .await
        .map_err(|e| e.to_string())?;
    Ok(control)
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
    /// Sent as 0-RTT early data, which the server rejected: it never saw
    /// the request, which may go again on the same connection.
    EarlyRejected,
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
    /// Its field section's bytes on the wire (QPACK-coded), and the plain
    /// size of its fields (names and values, pseudo-fields included).
    pub(crate) block: u64,
    pub(crate) plain: u64,
}

/// A request as it goes on the wire: its HEADERS frame, encoded once, and
/// its body; with the field section's size coded and plain, for QPACK's
/// savings.
#[derive(Debug, Clone)]
pub(crate) struct Request {
    pub(crate) headers: Bytes,
    pub(crate) body: Option<Bytes>,
    pub(crate) block: u64,
    pub(crate) plain: u64,
}

impl Request {
    /// A request of `fields` (pseudo-fields first, names in lower case)
    /// and `body`.
    pub(crate) fn new(fields: &[(&[u8], &[u8])], body: Option<Bytes>) -> Request {
        let mut block = Vec::new();
        qpack::encode(fields, &mut block);
        let mut headers = Vec::with_capacity(block.len() + 8);
        frame::put_head(&mut headers, HEADERS, block.len() as u64);
        headers.extend_from_slice(&block);
        Request {
            headers: Bytes::from(headers),
            body,
            block: block.len() as u64,
            plain: fields.iter().map(|(n, v)| (n.len() + v.len()) as u64).sum(),
        }
    }
}

/// The last answer heads a connection decoded, interim (1xx) and final
/// apart, so a server sending 103 Early Hints before each answer does not
/// push the final head out. Without a dynamic table a QPACK field section
/// is a function of its fields alone, and a server answering the same
/// resource sends the same section (until its `date` changes, once a
/// second), so a section the same as the last one is not decoded again:
/// Huffman decoding was a fifth of the client's instructions a request
/// (callgrind, the page against `dyno serve --h3`).
#[derive(Debug, Default)]
pub(crate) struct Known {
    last: [Head; 2],
}

/// One decoded head: its section as it came, and what it said.
#[derive(Debug, Default)]
struct Head {
    block: Vec<u8>,
    decoded: Option<Decoded>,
    fields: Vec<Field>,
}

/// A decoded field: its name and value.
type Field = (Box<[u8]>, Box<[u8]>);

/// What the client needs of a decoded head.
#[derive(Debug, Clone, Copy)]
struct Decoded {
    status: u16,
    length: Option<u64>,
    plain: u64,
}

impl Decoded {
    /// Where it is kept in [`Known`]: final heads first.
    fn slot(&self) -> usize {
        usize::from(self.status < 200)
    }
}

impl Known {
    /// Decodes `block` unless it is one of the last decoded; what it said
    /// and its fields.
    fn decode(&mut self, block: &[u8]) -> Result<(Decoded, &[Field]), Failed> {
        if let Some(i) = self
            .last
            .iter()
            .position(|h| h.decoded.is_some() && h.block == block)
        {
            let head = &self.last[i];
            return Ok((head.decoded.expect("checked"), &head.fields));
        }
        let mut fields = Vec::new();
        let mut d = Decoded {
            status: 0,
            length: None,
            plain: 0,
        };
        qpack::decode(block, |name, value| {
            d.plain += (name.len() + value.len()) as u64;
            match name {
                b":status" => {
                    d.status = std::str::from_utf8(value)
                        .ok()
                        .and_then(|s| s.parse().ok())
                        .filter(|s| (100..1000).contains(s))
                        .unwrap_or(0);
                }
                b"content-length" => {
                    d.length = std::str::from_utf8(value).ok().and_then(|s| s.parse().ok());
                }
                _ => {}
            }
            fields.push((name.into(), value.into()));
        })
        .map_err(|e| Failed::Malformed(format!("a field section QPACK cannot read ({e:?})")))?;
        if d.status == 0 {
            return Err(Failed::Malformed(
                "an answer without a valid :status".into(),
            ));
        }
        let head = &mut self.last[d.slot()];
        head.block.clear();
        head.block.extend_from_slice(block);
        head.decoded = Some(d);
        head.fields = fields;
        Ok((d, &head.fields))
    }
}

impl Session {
    /// Opens the client's control stream on `conn` and starts reading
    /// the server's streams.
    pub(crate) async fn open(conn: quinn::Connection) -> Result<Session, String> {
        let control = open_control(&conn).await?;
        let goaway = Rc::new(Cell::new(None));
        tokio::task::spawn_local(server_streams(conn.clone(), Rc::clone(&goaway)));
        Ok(Session {
            conn,
            goaway,
            known: Rc::default(),
            control: Rc::new(RefCell::new(control)),
        })
    }

    /// Opens the control stream again, after the server rejected the
    /// early data it was opened in: the server never saw that one (RFC
    /// 9114 §6.2.1 asks for one control stream, and it has none).
    pub(crate) async fn reopen_control(&self) -> Result<(), String> {
        let control = open_control(&self.conn).await?;
        *self.control.borrow_mut() = control;
        Ok(())
    }

    /// The server's GOAWAY came: no new request goes on this connection.
    pub(crate) fn going_away(&self) -> bool {
        self.goaway.get().is_some()
    }

    /// Sends `request` and reads its answer within `timeout`; with
    /// `capture`, the answer's fields go there as HTTP/1.1 text, its body
    /// after them. `fields` sees each field of the answer's head.
    /// `opened` is called once the request's stream is open (the server's
    /// stream limit let it go).
    pub(crate) async fn exchange(
        &self,
        request: &Request,
        timeout: Duration,
        capture: Option<&mut Vec<u8>>,
        fields: impl FnMut(&[u8], &[u8]),
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
        let mut reader = Reader::new(&self.known, capture, fields);
        let answered = tokio::time::timeout_at(deadline, async {
            write_request(&mut send, request).await?;
            loop {
                match recv.read_chunk(usize::MAX, true).await {
                    Ok(Some(chunk)) => reader.feed(&chunk.bytes)?,
                    Ok(None) => return Ok(()),
                    Err(quinn::ReadError::Reset(code)) => {
                        return Err(Failed::Reset(code.into_inner()));
                    }
                    Err(quinn::ReadError::ConnectionLost(e)) => return Err(Failed::Lost(e)),
                    Err(quinn::ReadError::ZeroRttRejected) => return Err(Failed::EarlyRejected),
                    Err(e) => return Err(Failed::Malformed(e.to_string())),
                }
            }
        })
        .await;
        match answered {
            Ok(Ok(())) => reader.end(),
            Ok(Err(failed)) => Err(failed),
            Err(_) => {
                let _ = recv.stop(H3_REQUEST_CANCELLED.into());
                let _ = send.reset(H3_REQUEST_CANCELLED.into());
                Err(Failed::Timeout)
            }
        }
    }
}

/// Writes the request's frames and FIN.
async fn write_request(send: &mut quinn::SendStream, request: &Request) -> Result<(), Failed> {
    let written = async {
        send.write_chunk(request.headers.clone()).await?;
        if let Some(body) = &request.body {
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
        Err(quinn::WriteError::ZeroRttRejected) => return Err(Failed::EarlyRejected),
        Err(e) => return Err(Failed::Malformed(e.to_string())),
    }
    send.finish().map_err(|e| Failed::Malformed(e.to_string()))
}

/// The most bytes of a field section the client gathers: a larger one is
/// a broken answer, not a head.
const MAX_SECTION: u64 = 1 << 20;

/// Where a [`Reader`] is in the answer's frames.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum At {
    /// Between frames (`pending` may hold part of a frame head).
    Head,
    /// In a DATA frame's payload, with this much left.
    Data(u64),
    /// In a HEADERS frame's payload, with this much left (gathered in
    /// `pending`).
    Headers(u64),
    /// In a frame that is not read (unknown types, trailers), with this
    /// much left.
    Skip(u64),
}

/// An answer's frames read as they arrive, in pieces of any size: the
/// first final HEADERS frame is its head (interim 1xx heads are read
/// and passed over), DATA frames its body, counted without being kept
/// unless captured; trailers and unknown frames are skipped, as RFC 9114
/// §9 asks.
pub(crate) struct Reader<'a, F> {
    known: &'a RefCell<Known>,
    capture: Option<&'a mut Vec<u8>>,
    fields: F,
    at: At,
    /// Part of a frame head, or a HEADERS payload not yet whole.
    pending: Vec<u8>,
    head: Option<(Decoded, u64, Instant)>,
    body_bytes: u64,
}

impl<'a, F: FnMut(&[u8], &[u8])> Reader<'a, F> {
    pub(crate) fn new(
        known: &'a RefCell<Known>,
        capture: Option<&'a mut Vec<u8>>,
        fields: F,
    ) -> Self {
        Reader {
            known,
            capture,
            fields,
            at: At::Head,
            pending: Vec::new(),
            head: None,
            body_bytes: 0,
        }
    }

    /// Reads the next bytes of the stream.
    pub(crate) fn feed(&mut self, mut data: &[u8]) -> Result<(), Failed> {
        while !data.is_empty() {
            match self.at {
                At::Data(left) => {
                    let n = left.min(data.len() as u64) as usize;
                    self.body_bytes += n as u64;
                    if let Some(capture) = self.capture.as_deref_mut() {
                        capture.extend_from_slice(&data[..n]);
                    }
                    self.at = next(At::Data, left - n as u64);
                    data = &data[n..];
                }
                At::Skip(left) => {
                    let n = left.min(data.len() as u64) as usize;
                    self.at = next(At::Skip, left - n as u64);
                    data = &data[n..];
                }
                At::Headers(left) => {
                    let n = left.min(data.len() as u64) as usize;
                    if self.pending.is_empty() && n as u64 == left {
                        // Whole in this piece: read in place.
                        self.at = At::Head;
                        self.headers(&data[..n])?;
                    } else {
                        self.pending.extend_from_slice(&data[..n]);
                        if n as u64 == left {
                            self.at = At::Head;
                            let block = std::mem::take(&mut self.pending);
                            let read = self.headers(&block);
                            self.pending = block;
                            self.pending.clear();
                            read?;
                        } else {
                            self.at = At::Headers(left - n as u64);
                        }
                    }
                    data = &data[n..];
                }
                At::Head => {
                    let parsed = if self.pending.is_empty() {
                        frame::head(data).map(|h| (h, h.size))
                    } else {
                        // A head split across pieces: one byte at a time,
                        // it is a few bytes long.
                        self.pending.push(data[0]);
                        frame::head(&self.pending).map(|h| (h, 1))
                    };
                    let Some((h, used)) = parsed else {
                        if self.pending.is_empty() {
                            self.pending.extend_from_slice(data);
                            data = &[];
                        } else {
                            data = &data[1..];
                        }
                        if self.pending.len() > 16 {
                            return Err(Failed::Malformed("a frame head that does not end".into()));
                        }
                        continue;
                    };
                    self.pending.clear();
                    data = &data[used..];
                    self.start(h)?;
                }
            }
        }
        Ok(())
    }

    /// A frame head was read.
    fn start(&mut self, h: frame::Head) -> Result<(), Failed> {
        self.at = match h.kind {
            DATA if self.head.is_none() => {
                return Err(Failed::Malformed("DATA before the answer's HEADERS".into()));
            }
            DATA => next(At::Data, h.len),
            HEADERS if self.head.is_none() => {
                if h.len > MAX_SECTION {
                    return Err(Failed::Malformed(format!(
                        "a field section of {} bytes (dyno reads up to {MAX_SECTION})",
                        h.len
                    )));
                }
                if h.len == 0 {
                    return Err(Failed::Malformed("an empty HEADERS frame".into()));
                }
                At::Headers(h.len)
            }
            // Trailers, and frames of types this client does not read.
            _ => next(At::Skip, h.len),
        };
        Ok(())
    }

    /// A whole HEADERS frame before the answer's head: decoded (or known
    /// from the last answer), handed to `fields`, and the head unless it
    /// is an interim one.
    fn headers(&mut self, block: &[u8]) -> Result<(), Failed> {
        let known = &mut *self.known.borrow_mut();
        let (d, fields) = known.decode(block)?;
        for (name, value) in fields {
            (self.fields)(name, value);
        }
        if d.status < 200 {
            // An interim answer: the final one follows.
            return Ok(());
        }
        if let Some(capture) = self.capture.as_deref_mut() {
            capture.clear();
            capture.extend_from_slice(format!("HTTP/1.1 {} -\r\n", d.status).as_bytes());
            for (name, value) in fields.iter().filter(|(n, _)| !n.starts_with(b":")) {
                capture.extend_from_slice(name);
                capture.extend_from_slice(b": ");
                capture.extend_from_slice(value);
                capture.extend_from_slice(b"\r\n");
            }
            capture.extend_from_slice(b"\r\n");
        }
        self.head = Some((d, block.len() as u64, Instant::now()));
        Ok(())
    }

    /// The stream ended: the answer, if it came whole.
    pub(crate) fn end(self) -> Result<Answer, Failed> {
        if self.at != At::Head || !self.pending.is_empty() {
            return Err(Failed::Malformed("the stream ended inside a frame".into()));
        }
        let Some((d, block, head_at)) = self.head else {
            return Err(Failed::Malformed(
                "the stream ended without an answer".into(),
            ));
        };
        Ok(Answer {
            status: d.status,
            content_length: d.length,
            body_bytes: self.body_bytes,
            head_at,
            block,
            plain: d.plain,
        })
    }
}

/// `at(left)`, or between frames when nothing is left.
fn next(at: fn(u64) -> At, left: u64) -> At {
    if left == 0 { At::Head } else { at(left) }
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

#[cfg(test)]
pub(crate) mod tests {
    use std::sync::Arc;

    use super::*;

    fn section(fields: &[(&[u8], &[u8])]) -> Vec<u8> {
        let mut block = Vec::new();
        qpack::encode(fields, &mut block);
        block
    }

    fn put_frame(out: &mut Vec<u8>, kind: u64, payload: &[u8]) {
        frame::put_head(out, kind, payload.len() as u64);
        out.extend_from_slice(payload);
    }

    /// An answer's stream: an interim 103, the head, DATA, a frame of a
    /// reserved type, DATA, trailers.
    fn answer_stream() -> Vec<u8> {
        let mut out = Vec::new();
        put_frame(
            &mut out,
            HEADERS,
            &section(&[(b":status", b"103"), (b"link", b"</a.css>")]),
        );
        put_frame(
            &mut out,
            HEADERS,
            &section(&[
                (b":status", b"200"),
                (b"content-length", b"11"),
                (b"server", b"test"),
            ]),
        );
        put_frame(&mut out, DATA, b"hello ");
        put_frame(&mut out, 0x21, b"abc");
        put_frame(&mut out, DATA, b"world");
        put_frame(&mut out, HEADERS, &section(&[(b"x-checksum", b"1")]));
        out
    }

    /// Reads `pieces` as one stream: the answer, the capture, and the
    /// `server` fields seen.
    fn read(known: &RefCell<Known>, pieces: &[&[u8]]) -> (Result<Answer, Failed>, Vec<u8>, u32) {
        let mut capture = Vec::new();
        let mut servers = 0;
        let mut reader = Reader::new(known, Some(&mut capture), |name, _| {
            servers += u32::from(name == b"server");
        });
        let mut fed = Ok(());
        for piece in pieces {
            fed = fed.and_then(|()| reader.feed(piece));
        }
        let answer = fed.and_then(|()| reader.end());
        (answer, capture, servers)
    }

    const CAPTURED: &str =
        "HTTP/1.1 200 -\r\ncontent-length: 11\r\nserver: test\r\n\r\nhello world";

    /// However the stream is cut into pieces (two cuts anywhere, or byte
    /// by byte), the answer reads the same: the final head, the body's
    /// bytes whole, trailers and unknown frames passed over.
    #[test]
    fn an_answer_reads_the_same_however_its_stream_is_cut() {
        let stream = answer_stream();
        let check = |pieces: &[&[u8]]| {
            let known = RefCell::default();
            let (answer, capture, servers) = read(&known, pieces);
            let answer = answer.unwrap_or_else(|e| panic!("{pieces:?}: {e:?}"));
            assert_eq!(answer.status, 200);
            assert_eq!(answer.content_length, Some(11));
            assert_eq!(answer.body_bytes, 11);
            assert_eq!(String::from_utf8(capture).unwrap(), CAPTURED);
            assert_eq!(servers, 1);
            assert_eq!(answer.plain, (7 + 3 + 14 + 2 + 6 + 4) as u64);
        };
        for i in 0..=stream.len() {
            for j in i..=stream.len() {
                check(&[&stream[..i], &stream[i..j], &stream[j..]]);
            }
        }
        let bytes: Vec<&[u8]> = stream.chunks(1).collect();
        check(&bytes);
    }

    /// The same section as the last is not decoded again, an interim
    /// head between them notwithstanding: what the last decode kept is
    /// what the reader hands on.
    #[test]
    fn a_section_the_same_as_the_last_is_taken_from_the_last_decode() {
        // The interim 103 comes before each final head.
        let stream = answer_stream();
        let known = RefCell::default();
        let (first, _, _) = read(&known, &[&stream]);
        assert_eq!(first.unwrap().status, 200);
        // Mark what the last decode of the final head kept: a second read
        // hands it on (decoding the block again would give `test`).
        let mark = |known: &RefCell<Known>| {
            for (name, value) in &mut known.borrow_mut().last[0].fields {
                if &**name == b"server" {
                    *value = (*b"kept").into();
                }
            }
        };
        mark(&known);
        let (second, capture, _) = read(&known, &[&stream]);
        assert_eq!(second.unwrap().body_bytes, 11);
        assert!(
            String::from_utf8(capture).unwrap().contains("server: kept"),
            "decoded again"
        );
        // Another section is decoded, and then is the one kept.
        let mut other = Vec::new();
        put_frame(
            &mut other,
            HEADERS,
            &section(&[(b":status", b"404"), (b"server", b"other")]),
        );
        let (third, capture, _) = read(&known, &[&other]);
        assert_eq!(third.unwrap().status, 404);
        assert!(
            String::from_utf8(capture)
                .unwrap()
                .contains("server: other")
        );
        mark(&known);
        let (_, capture, _) = read(&known, &[&other]);
        assert!(String::from_utf8(capture).unwrap().contains("server: kept"));
    }

    /// Streams that break HTTP/3's rules fail as malformed, never as an
    /// answer.
    #[test]
    fn broken_answers_are_malformed() {
        let malformed = |stream: &[u8], why: &str| {
            let known = RefCell::default();
            match read(&known, &[stream]).0 {
                Err(Failed::Malformed(e)) => assert!(e.contains(why), "{e}"),
                other => panic!("{why}: {other:?}"),
            }
        };
        let mut data_first = Vec::new();
        put_frame(&mut data_first, DATA, b"x");
        malformed(&data_first, "DATA before");
        let stream = answer_stream();
        malformed(&stream[..stream.len() - 2], "inside a frame");
        malformed(&[], "without an answer");
        let mut no_status = Vec::new();
        put_frame(&mut no_status, HEADERS, &section(&[(b"server", b"x")]));
        malformed(&no_status, ":status");
        let mut dynamic = Vec::new();
        put_frame(&mut dynamic, HEADERS, &[0x01, 0x00, 0x80]);
        malformed(&dynamic, "QPACK");
        let mut huge = Vec::new();
        frame::put_head(&mut huge, HEADERS, MAX_SECTION + 1);
        malformed(&huge, "field section of");
        // Only the interim head came.
        let mut interim = Vec::new();
        put_frame(&mut interim, HEADERS, &section(&[(b":status", b"100")]));
        malformed(&interim, "without an answer");
    }

    /// A QUIC connection to `addr` that trusts any certificate, and the
    /// HTTP/3 session over it: for the tests and the probe.
    pub(crate) async fn connect(addr: std::net::SocketAddr) -> (quinn::Endpoint, Session) {
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

    pub(crate) fn get(addr: std::net::SocketAddr, method: &str, path: &str) -> Request {
        request(addr, method, path, None)
    }

    pub(crate) fn request(
        addr: std::net::SocketAddr,
        method: &str,
        path: &str,
        body: Option<Bytes>,
    ) -> Request {
        let authority = addr.to_string();
        Request::new(
            &[
                (b":method", method.as_bytes()),
                (b":scheme", b"https"),
                (b":authority", authority.as_bytes()),
                (b":path", path.as_bytes()),
            ],
            body,
        )
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
            let exchange = |request: Request, timeout| {
                let session = &session;
                async move {
                    session
                        .exchange(&request, timeout, None, |_, _| {}, || {})
                        .await
                }
            };
            let hello = exchange(get(addr, "GET", "/hello"), second).await.unwrap();
            assert_eq!(hello.status, 200);
            assert_eq!(hello.body_bytes, dyno_serve::HELLO.len() as u64);
            assert_eq!(hello.content_length, Some(hello.body_bytes));
            let big = exchange(get(addr, "GET", "/blob/1048576"), second)
                .await
                .unwrap();
            assert_eq!((big.status, big.body_bytes), (200, 1 << 20));
            let missing = exchange(get(addr, "GET", "/status/404"), second)
                .await
                .unwrap();
            assert_eq!(missing.status, 404);
            let body = Bytes::from(vec![b'x'; 100 * 1024]);
            let posted = exchange(request(addr, "POST", "/hello", Some(body)), second)
                .await
                .unwrap();
            assert_eq!(posted.status, 200);
            let (mut capture, mut fields) = (Vec::new(), Vec::new());
            session
                .exchange(
                    &get(addr, "GET", "/hello"),
                    second,
                    Some(&mut capture),
                    |name, value| fields.push((name.to_vec(), value.to_vec())),
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
            // The server's QPACK encoder (the h3 crate's) read back.
            let length = dyno_serve::HELLO.len().to_string();
            assert!(
                fields.contains(&(b"content-length".to_vec(), length.into_bytes())),
                "{fields:?}"
            );
            let slow = exchange(get(addr, "GET", "/delay/2000"), Duration::from_millis(200)).await;
            assert!(matches!(slow, Err(Failed::Timeout)), "{slow:?}");
            // The connection goes on after a stream given up.
            let again = exchange(get(addr, "GET", "/hello"), second).await.unwrap();
            assert_eq!(again.status, 200);
            session.conn.close(H3_NO_ERROR.into(), b"");
            endpoint.wait_idle().await;
        });
        drop(server);
    }
}
