//! The incremental HTTP/1.x response parser: framing only.
//!
//! Data flow: each connection of the engine owns a read buffer and one
//! [`ResponseParser`]. For every request it sends, the engine calls
//! [`start`](ResponseParser::start), then [`feed`](ResponseParser::feed)s the
//! unconsumed bytes of its buffer after every read; the parser says how many
//! bytes it consumed and, once the response is complete, returns a
//! [`Response`]: status, byte counts and whether the connection stays open.
//! When a read returns 0 the engine calls [`eof`](ResponseParser::eof), which
//! completes a close-delimited body or says how the response was cut short.
//!
//! This runs once per response on the load generator's hot path, so it reads
//! only what framing needs (status, `Content-Length`, `Transfer-Encoding`,
//! `Connection`) and allocates nothing: the head is parsed by `httparse` into
//! a header array on the stack once it is complete in the buffer, and body
//! bytes are counted as they arrive, never stored. A head arriving in pieces
//! is not reparsed per piece: the parser remembers how far it has searched
//! for the empty line that ends it, so a server dripping one byte at a time
//! costs O(1) per byte.
//!
//! Framing follows RFC 9112 section 6: interim 1xx responses are skipped,
//! responses to HEAD and 204/304 responses have no body, chunked transfer
//! coding wins over `Content-Length`, any other final transfer coding (or no
//! length at all) means the body ends when the server closes the connection.

use std::fmt;
use std::mem::MaybeUninit;

use crate::stats::ErrorClass;

/// Headers `httparse` can hold per response; more is [`ParseError::Malformed`].
const MAX_HEADERS: usize = 64;

/// Frames one response after another on a connection.
///
/// Call [`start`](Self::start) before each response, then
/// [`feed`](Self::feed) until it returns [`Step::Done`]. After `Done`, after
/// [`eof`](Self::eof) and on a new parser, the parser is ready for a response
/// to a request other than HEAD; `start` is still the way to say which.
/// After an error the connection's framing is lost: drop the connection and
/// `start` again on a new one.
#[derive(Debug, Default)]
pub struct ResponseParser {
    state: State,
    /// The request was HEAD: the final response has no body.
    head_request: bool,
    /// A byte of the current response (other than stray empty lines) was seen.
    started: bool,
    /// Status of the final response, once its head is parsed.
    status: u16,
    /// Length of the final response's head, once parsed.
    head_bytes: usize,
    /// Body bytes (framing included) consumed so far.
    body_bytes: u64,
    /// What the final response's head says about the connection.
    keep_alive: bool,
    /// Copy the next final response's `Server` field into `server` (set by
    /// [`capture_server`](Self::capture_server); kept across responses).
    capture_server: bool,
    /// The captured `Server` field, until taken.
    server: Option<Box<str>>,
}

/// A response whose framing is complete.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Response {
    /// The final (non-1xx) status code.
    pub status: u16,
    /// Bytes of the final response's head: status line, header fields and
    /// the empty line. Interim 1xx heads and stray empty lines before a head
    /// are consumed but not counted here.
    pub head_bytes: usize,
    /// Bytes of the body as sent: for a chunked body the chunk-size lines,
    /// CRLFs and trailer section are included.
    pub body_bytes: u64,
    /// False when the server will close the connection after this response:
    /// `Connection: close`, HTTP/1.0 without `Connection: keep-alive`, or a
    /// body delimited by the close itself.
    pub keep_alive: bool,
}

/// What [`ResponseParser::feed`] did with the bytes it was given.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// Consumed this many bytes (possibly 0); the response is not finished.
    /// The engine drops the consumed bytes, keeps the rest, reads more and
    /// feeds the unconsumed bytes again.
    NeedMore(usize),
    /// Consumed this many bytes and the response is complete. Bytes after
    /// them belong to the next response (pipelining).
    Done(usize, Response),
}

/// Where the connection was when it closed too early.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Stage {
    /// Before any byte of the response.
    BeforeResponse,
    /// Inside a response head (including after interim 1xx responses).
    Head,
    /// Inside a chunked body.
    ChunkedBody,
}

impl fmt::Display for Stage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Stage::BeforeResponse => "before any byte of the response",
            Stage::Head => "inside the response head",
            Stage::ChunkedBody => "inside the chunked body",
        })
    }
}

/// Why a response could not be framed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum ParseError {
    /// The head or the chunked framing is not valid HTTP/1.x: httparse
    /// rejected the head, a bad or conflicting `Content-Length`, a bad
    /// chunk-size line, too many header fields, …
    #[error("malformed response: {0}")]
    Malformed(&'static str),
    /// The head did not end within [`ResponseParser::MAX_HEAD_BYTES`].
    #[error("response head larger than {} bytes", ResponseParser::MAX_HEAD_BYTES)]
    HeadTooLarge,
    /// The connection closed before the response was complete, where no
    /// length says how much was missing.
    #[error("connection closed {stage}")]
    ClosedEarly {
        /// Where the response was cut.
        stage: Stage,
    },
    /// The connection closed before `Content-Length` body bytes arrived.
    #[error("connection closed after {received} of {expected} body bytes")]
    BodyTooShort {
        /// The `Content-Length`.
        expected: u64,
        /// Body bytes received before the close.
        received: u64,
    },
    /// A `101 Switching Protocols` response: dyno never asks to upgrade, so
    /// the connection no longer speaks HTTP/1.x.
    #[error("unexpected 101 Switching Protocols: dyno does not upgrade connections")]
    Upgrade,
}

impl ParseError {
    /// The class this failure is counted under.
    pub fn class(&self) -> ErrorClass {
        match self {
            ParseError::Malformed(_) | ParseError::HeadTooLarge | ParseError::Upgrade => {
                ErrorClass::Malformed
            }
            ParseError::ClosedEarly { .. } => ErrorClass::ClosedEarly,
            ParseError::BodyTooShort { .. } => ErrorClass::BodyLengthMismatch,
        }
    }
}

#[derive(Debug, Clone, Copy)]
enum State {
    /// Waiting for a complete head.
    Head {
        /// Bytes at the start of the buffer already searched for the empty
        /// line that ends the head (the engine keeps unconsumed bytes, so
        /// the next buffer starts with the same bytes).
        scanned: usize,
        /// httparse already had one try at this head.
        probed: bool,
    },
    /// A body of known length (0 when there is none).
    Length { remaining: u64 },
    /// A chunked body.
    Chunked(Chunk),
    /// A body delimited by the connection's close.
    UntilClose,
}

impl Default for State {
    fn default() -> Self {
        State::Head {
            scanned: 0,
            probed: false,
        }
    }
}

/// Position inside a chunked body (RFC 9112 section 7.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Chunk {
    /// Reading the hex digits of a chunk size.
    Size { size: u64, digits: bool },
    /// Whitespace after the chunk size.
    SizeSpace { size: u64 },
    /// Inside a chunk extension (`;name=value`), skipped up to the line end.
    Extension { size: u64 },
    /// Saw CR at the end of the chunk-size line.
    SizeLf { size: u64 },
    /// Inside chunk data.
    Data { remaining: u64 },
    /// Expecting the CRLF after chunk data.
    DataCr,
    /// Saw CR after chunk data.
    DataLf,
    /// At the start of a trailer line, after the last chunk.
    TrailerStart,
    /// Inside a trailer field line.
    Trailer,
    /// Saw CR at the start of a trailer line: the final CRLF.
    TrailerLf,
}

const CHUNK_START: Chunk = Chunk::Size {
    size: 0,
    digits: false,
};

/// How the final response's body is delimited.
#[derive(Debug, Clone, Copy)]
enum Framing {
    Length(u64),
    Chunked,
    UntilClose,
}

/// A complete head, parsed.
#[derive(Debug, Clone, Copy)]
struct Head {
    len: usize,
    status: u16,
    keep_alive: bool,
    framing: Framing,
    /// Where the `Server` field's value lies in the head, when asked for.
    server: Option<(usize, usize)>,
}

/// What one look at the buffer in the head state gave.
enum HeadProgress {
    /// No complete head yet; this many stray bytes were consumed.
    Incomplete(usize),
    /// A complete head (interim or final) and the stray bytes before it were
    /// consumed; the state moved on.
    Consumed(usize),
}

impl ResponseParser {
    /// The largest head (status line, header fields and empty line) accepted.
    pub const MAX_HEAD_BYTES: usize = 64 * 1024;

    /// Starts a new response; `head_request`: the request was HEAD, so the
    /// response has no body whatever its `Content-Length` says.
    pub fn start(&mut self, head_request: bool) {
        self.reset(head_request);
    }

    /// Ready for a new response; the `Server` capture survives.
    fn reset(&mut self, head_request: bool) {
        *self = ResponseParser {
            head_request,
            capture_server: self.capture_server,
            server: self.server.take(),
            ..ResponseParser::default()
        };
    }

    /// Copies the `Server` field of the next final response that has one
    /// (ab's "Server Software"), for [`take_server`](Self::take_server).
    /// One allocation, once: the engine asks only until it has the value.
    pub fn capture_server(&mut self) {
        self.capture_server = self.server.is_none();
    }

    /// The `Server` field captured since [`capture_server`](Self::capture_server).
    pub fn take_server(&mut self) -> Option<Box<str>> {
        self.server.take()
    }

    /// Whether any byte of the current response has been seen (for
    /// time-to-first-byte and to tell an idle close from a cut response).
    /// Stray empty lines before a head do not count.
    pub fn started(&self) -> bool {
        self.started
    }

    /// Feeds the unconsumed bytes of the read buffer: what was left after the
    /// previous call's consumed bytes, followed by any newly read bytes.
    ///
    /// Consumes nothing of a head until it is complete; consumes body bytes
    /// as they come.
    pub fn feed(&mut self, buf: &[u8]) -> Result<Step, ParseError> {
        let mut pos = 0;
        loop {
            match self.state {
                State::Head { scanned, probed } => {
                    match self.feed_head(&buf[pos..], scanned, probed)? {
                        HeadProgress::Incomplete(n) => return Ok(Step::NeedMore(pos + n)),
                        HeadProgress::Consumed(n) => pos += n,
                    }
                }
                State::Length { remaining } => {
                    let take = remaining.min((buf.len() - pos) as u64);
                    // `take` is at most `buf.len() - pos`, so it fits a usize.
                    pos += take as usize;
                    self.body_bytes += take;
                    if take == remaining {
                        return Ok(Step::Done(pos, self.finish()));
                    }
                    self.state = State::Length {
                        remaining: remaining - take,
                    };
                    return Ok(Step::NeedMore(pos));
                }
                State::Chunked(mut chunk) => {
                    let (n, done) = chunk.advance(&buf[pos..])?;
                    pos += n;
                    self.body_bytes += n as u64;
                    if done {
                        return Ok(Step::Done(pos, self.finish()));
                    }
                    self.state = State::Chunked(chunk);
                    return Ok(Step::NeedMore(pos));
                }
                State::UntilClose => {
                    self.body_bytes += (buf.len() - pos) as u64;
                    return Ok(Step::NeedMore(buf.len()));
                }
            }
        }
    }

    /// The peer closed the connection (a read returned 0): completes a
    /// close-delimited body, else says how the response was cut short.
    /// Either way the parser is then ready for a new connection.
    pub fn eof(&mut self) -> Result<Response, ParseError> {
        let result = match self.state {
            State::Head { .. } if self.started => {
                Err(ParseError::ClosedEarly { stage: Stage::Head })
            }
            State::Head { .. } => Err(ParseError::ClosedEarly {
                stage: Stage::BeforeResponse,
            }),
            State::Length { remaining } => Err(ParseError::BodyTooShort {
                expected: self.body_bytes + remaining,
                received: self.body_bytes,
            }),
            State::Chunked(_) => Err(ParseError::ClosedEarly {
                stage: Stage::ChunkedBody,
            }),
            State::UntilClose => Ok(self.response()),
        };
        self.reset(false);
        result
    }

    fn response(&self) -> Response {
        Response {
            status: self.status,
            head_bytes: self.head_bytes,
            body_bytes: self.body_bytes,
            keep_alive: self.keep_alive,
        }
    }

    /// The response is complete: returns it and gets ready for the next.
    fn finish(&mut self) -> Response {
        let response = self.response();
        self.reset(false);
        response
    }

    /// One look at `buf` (which starts where a head starts) in the head
    /// state `State::Head { scanned, probed }`.
    fn feed_head(
        &mut self,
        buf: &[u8],
        scanned: usize,
        probed: bool,
    ) -> Result<HeadProgress, ParseError> {
        // Empty lines before a head (a server's stray CRLF after a body) are
        // skipped, as RFC 9112 section 2.2 suggests and httparse would.
        let skip = if probed {
            0
        } else {
            buf.iter()
                .take_while(|&&b| b == b'\r' || b == b'\n')
                .count()
        };
        let data = &buf[skip..];
        if data.is_empty() {
            return Ok(HeadProgress::Incomplete(skip));
        }
        self.started = true;
        check_version_prefix(data)?;
        let window = &data[..data.len().min(Self::MAX_HEAD_BYTES)];

        let head = if probed {
            // Resume the search where the last one stopped; httparse runs
            // only once the head is complete.
            match find_head_end(window, scanned.min(window.len())) {
                Some(end) => {
                    match parse_head(&window[..end], self.head_request, self.capture_server)? {
                        Some(head) => Some(head),
                        None => return Err(ParseError::Malformed("incomplete response head")),
                    }
                }
                None => None,
            }
        } else {
            // First look: usually the whole head arrived in one read, and one
            // httparse pass both finds its end and parses it.
            parse_head(window, self.head_request, self.capture_server)?
        };

        let Some(head) = head else {
            if data.len() >= Self::MAX_HEAD_BYTES {
                return Err(ParseError::HeadTooLarge);
            }
            // The last two bytes may start the empty line: search them again.
            let scanned = if probed {
                window.len().saturating_sub(2)
            } else {
                0
            };
            self.state = State::Head {
                scanned,
                probed: true,
            };
            return Ok(HeadProgress::Incomplete(skip));
        };

        match head.status {
            101 => return Err(ParseError::Upgrade),
            100..=199 => {
                // Interim response (100 Continue, 103 Early Hints…): the
                // final response follows.
                self.state = State::default();
            }
            _ => {
                self.status = head.status;
                self.head_bytes = head.len;
                self.keep_alive = head.keep_alive;
                if let Some((from, to)) = head.server {
                    let value = String::from_utf8_lossy(&window[from..to]);
                    self.server = Some(value.trim().into());
                    self.capture_server = false;
                }
                self.state = match head.framing {
                    Framing::Length(n) => State::Length { remaining: n },
                    Framing::Chunked => State::Chunked(CHUNK_START),
                    Framing::UntilClose => State::UntilClose,
                };
            }
        }
        Ok(HeadProgress::Consumed(skip + head.len))
    }
}

/// Rejects early what cannot become `HTTP/1.0` or `HTTP/1.1`, so that junk
/// is reported at once rather than after 64 KiB. O(1): it looks at no more
/// than the first 8 bytes.
fn check_version_prefix(data: &[u8]) -> Result<(), ParseError> {
    const PREFIX: &[u8] = b"HTTP/1.";
    let n = data.len().min(PREFIX.len());
    let bad_prefix = data[..n] != PREFIX[..n];
    let bad_minor = data.len() > PREFIX.len() && !matches!(data[PREFIX.len()], b'0' | b'1');
    if bad_prefix || bad_minor {
        return Err(ParseError::Malformed(httparse_message(
            httparse::Error::Version,
        )));
    }
    Ok(())
}

/// The end of the head (just past its empty line) in `buf`, searching for
/// line feeds from `from`. A line may end in CRLF or a bare LF.
fn find_head_end(buf: &[u8], from: usize) -> Option<usize> {
    let mut i = from;
    while let Some(p) = buf[i..].iter().position(|&b| b == b'\n') {
        let lf = i + p;
        match buf.get(lf + 1..lf + 3) {
            Some([b'\n', _]) => return Some(lf + 2),
            Some([b'\r', b'\n']) => return Some(lf + 3),
            None if buf.get(lf + 1) == Some(&b'\n') => return Some(lf + 2),
            _ => i = lf + 1,
        }
    }
    None
}

/// Parses a head with httparse: `None` if `buf` holds no complete head.
/// A head of more fields than [`MAX_HEADERS`] (a web app's, 71 of them) is
/// parsed again with room for as many as it has lines, as wrk, ab and curl
/// take any number: the head's size is what is bounded.
fn parse_head(
    buf: &[u8],
    head_request: bool,
    capture_server: bool,
) -> Result<Option<Head>, ParseError> {
    let mut headers = [MaybeUninit::<httparse::Header<'_>>::uninit(); MAX_HEADERS];
    match parse_head_in(buf, head_request, capture_server, &mut headers) {
        Err(ParseError::Malformed(why))
            if why == httparse_message(httparse::Error::TooManyHeaders) =>
        {
            let end = find_head_end(buf, 0).unwrap_or(buf.len());
            let lines = buf[..end].iter().filter(|&&b| b == b'\n').count();
            let mut many = vec![MaybeUninit::<httparse::Header<'_>>::uninit(); lines];
            parse_head_in(buf, head_request, capture_server, &mut many)
        }
        parsed => parsed,
    }
}

/// [`parse_head`] with room for `headers.len()` fields.
fn parse_head_in<'b>(
    buf: &'b [u8],
    head_request: bool,
    capture_server: bool,
    headers: &mut [MaybeUninit<httparse::Header<'b>>],
) -> Result<Option<Head>, ParseError> {
    let mut response = httparse::Response::new(&mut []);
    let len = match httparse::ParserConfig::default().parse_response_with_uninit_headers(
        &mut response,
        buf,
        headers,
    ) {
        Ok(httparse::Status::Complete(len)) => len,
        Ok(httparse::Status::Partial) => return Ok(None),
        Err(e) => return Err(ParseError::Malformed(httparse_message(e))),
    };
    // Both are set once the parse is complete.
    let status = response.code.unwrap_or(0);
    let http10 = response.version == Some(0);
    if status < 100 {
        return Err(ParseError::Malformed("status code below 100"));
    }
    if status < 200 {
        // Interim: no body, and its header fields say nothing about framing.
        return Ok(Some(Head {
            len,
            status,
            keep_alive: true,
            framing: Framing::Length(0),
            server: None,
        }));
    }

    let mut content_length: Result<Option<u64>, &'static str> = Ok(None);
    let mut transfer_encoding = false;
    let mut chunked = false;
    let mut close = false;
    let mut keep_alive_token = false;
    let mut server = None;
    for header in response.headers.iter() {
        let name = header.name.as_bytes();
        if name.eq_ignore_ascii_case(b"content-length") {
            content_length =
                content_length.and_then(|known| merge_content_length(known, header.value));
        } else if name.eq_ignore_ascii_case(b"transfer-encoding") {
            transfer_encoding = true;
            // The final coding decides; codings may carry `;parameters`.
            for coding in list(header.value) {
                let name = coding.split(|&b| b == b';').next().unwrap_or_default();
                chunked = trim(name).eq_ignore_ascii_case(b"chunked");
            }
        } else if name.eq_ignore_ascii_case(b"connection") {
            for token in list(header.value) {
                close |= token.eq_ignore_ascii_case(b"close");
                keep_alive_token |= token.eq_ignore_ascii_case(b"keep-alive");
            }
        } else if capture_server && name.eq_ignore_ascii_case(b"server") {
            // The value is a slice of `buf`: keep its place, not a copy.
            let from = header.value.as_ptr() as usize - buf.as_ptr() as usize;
            server = Some((from, from + header.value.len()));
        }
    }

    let mut keep_alive = !close && (!http10 || keep_alive_token);
    let framing = if head_request || status == 204 || status == 304 {
        Framing::Length(0)
    } else if transfer_encoding {
        // RFC 9112 section 6.1: Transfer-Encoding in HTTP/1.0 means faulty
        // framing; close after this response.
        keep_alive &= !http10;
        if chunked {
            Framing::Chunked
        } else {
            Framing::UntilClose
        }
    } else {
        match content_length {
            Ok(Some(n)) => Framing::Length(n),
            Ok(None) => Framing::UntilClose,
            Err(message) => return Err(ParseError::Malformed(message)),
        }
    };
    if matches!(framing, Framing::UntilClose) {
        keep_alive = false;
    }
    Ok(Some(Head {
        len,
        status,
        keep_alive,
        framing,
        server,
    }))
}

/// Folds one `Content-Length` field into what earlier ones said: repeated
/// identical values (also as a list, `42, 42`) are one length, different
/// ones are an error (RFC 9110 section 8.6).
fn merge_content_length(known: Option<u64>, value: &[u8]) -> Result<Option<u64>, &'static str> {
    let mut known = known;
    for item in value.split(|&b| b == b',') {
        let n = parse_decimal(trim(item)).ok_or("invalid Content-Length")?;
        match known {
            Some(k) if k != n => return Err("conflicting Content-Length values"),
            _ => known = Some(n),
        }
    }
    Ok(known)
}

/// A non-empty run of ASCII digits, as a u64 without overflow.
fn parse_decimal(digits: &[u8]) -> Option<u64> {
    if digits.is_empty() {
        return None;
    }
    digits.iter().try_fold(0u64, |n, &b| {
        let digit = (b as char).to_digit(10)?;
        n.checked_mul(10)?.checked_add(u64::from(digit))
    })
}

/// The non-empty elements of a comma-separated field value, trimmed.
fn list(value: &[u8]) -> impl Iterator<Item = &[u8]> {
    value
        .split(|&b| b == b',')
        .map(trim)
        .filter(|item| !item.is_empty())
}

fn trim(mut s: &[u8]) -> &[u8] {
    while let [b' ' | b'\t', rest @ ..] = s {
        s = rest;
    }
    while let [rest @ .., b' ' | b'\t'] = s {
        s = rest;
    }
    s
}

fn httparse_message(e: httparse::Error) -> &'static str {
    match e {
        httparse::Error::HeaderName => "invalid header name",
        httparse::Error::HeaderValue => "invalid header value",
        httparse::Error::NewLine => "invalid line ending",
        httparse::Error::Status => "invalid status line",
        httparse::Error::Token => "invalid token",
        httparse::Error::TooManyHeaders => "too many headers",
        httparse::Error::Version => "invalid HTTP version",
    }
}

impl Chunk {
    /// Advances over `buf`: returns the bytes consumed and whether the body
    /// ended (then the bytes after it belong to the next response).
    fn advance(&mut self, buf: &[u8]) -> Result<(usize, bool), ParseError> {
        let mut i = 0;
        while i < buf.len() {
            // The two states that can span many bytes are consumed in bulk.
            match *self {
                Chunk::Data { remaining } => {
                    let take = remaining.min((buf.len() - i) as u64);
                    i += take as usize;
                    *self = if take == remaining {
                        Chunk::DataCr
                    } else {
                        Chunk::Data {
                            remaining: remaining - take,
                        }
                    };
                    continue;
                }
                Chunk::Trailer => {
                    match buf[i..].iter().position(|&b| b == b'\n') {
                        Some(p) => {
                            i += p + 1;
                            *self = Chunk::TrailerStart;
                        }
                        None => i = buf.len(),
                    }
                    continue;
                }
                _ => {}
            }
            let b = buf[i];
            i += 1;
            *self = match (*self, b) {
                (Chunk::Size { size, .. }, b) if b.is_ascii_hexdigit() => {
                    let digit = u64::from((b as char).to_digit(16).unwrap_or_default());
                    let size = size
                        .checked_mul(16)
                        .and_then(|s| s.checked_add(digit))
                        .ok_or(ParseError::Malformed("chunk size too large"))?;
                    Chunk::Size { size, digits: true }
                }
                (Chunk::Size { digits: false, .. }, _) => {
                    return Err(ParseError::Malformed("invalid chunk size"));
                }
                (Chunk::Size { size, .. } | Chunk::SizeSpace { size }, b' ' | b'\t') => {
                    Chunk::SizeSpace { size }
                }
                (
                    Chunk::Size { size, .. }
                    | Chunk::SizeSpace { size }
                    | Chunk::Extension { size },
                    b'\r',
                ) => Chunk::SizeLf { size },
                (
                    Chunk::Size { size, .. }
                    | Chunk::SizeSpace { size }
                    | Chunk::Extension { size }
                    | Chunk::SizeLf { size },
                    b'\n',
                ) => {
                    if size == 0 {
                        Chunk::TrailerStart
                    } else {
                        Chunk::Data { remaining: size }
                    }
                }
                (
                    Chunk::Size { size, .. }
                    | Chunk::SizeSpace { size }
                    | Chunk::Extension { size },
                    b';',
                ) => Chunk::Extension { size },
                (Chunk::Extension { size }, _) => Chunk::Extension { size },
                (Chunk::Size { .. } | Chunk::SizeSpace { .. }, _) => {
                    return Err(ParseError::Malformed("invalid chunk size"));
                }
                (Chunk::SizeLf { .. }, _) => {
                    return Err(ParseError::Malformed(
                        "invalid line ending after chunk size",
                    ));
                }
                (Chunk::DataCr, b'\r') => Chunk::DataLf,
                (Chunk::DataCr | Chunk::DataLf, b'\n') => CHUNK_START,
                (Chunk::DataCr | Chunk::DataLf, _) => {
                    return Err(ParseError::Malformed("missing CRLF after chunk data"));
                }
                (Chunk::TrailerStart, b'\r') => Chunk::TrailerLf,
                (Chunk::TrailerStart | Chunk::TrailerLf, b'\n') => {
                    *self = CHUNK_START;
                    return Ok((i, true));
                }
                (Chunk::TrailerStart, _) => Chunk::Trailer,
                (Chunk::TrailerLf, _) => {
                    return Err(ParseError::Malformed(
                        "invalid line ending after trailer section",
                    ));
                }
                // Normally consumed in bulk above.
                (Chunk::Data { remaining: 0 | 1 }, _) => Chunk::DataCr,
                (Chunk::Data { remaining }, _) => Chunk::Data {
                    remaining: remaining - 1,
                },
                (Chunk::Trailer, b'\n') => Chunk::TrailerStart,
                (Chunk::Trailer, _) => Chunk::Trailer,
            };
        }
        Ok((i, false))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// What one response on the connection came to: a `Done` from `feed`,
    /// the result of `eof`, or the error that ended the connection.
    type Outcome = Result<Response, ParseError>;

    const CLOSED_BEFORE: Outcome = Err(ParseError::ClosedEarly {
        stage: Stage::BeforeResponse,
    });

    fn ok(status: u16, head_bytes: usize, body_bytes: u64, keep_alive: bool) -> Outcome {
        Ok(Response {
            status,
            head_bytes,
            body_bytes,
            keep_alive,
        })
    }

    /// Plays the engine: appends each piece to a buffer, feeds the
    /// unconsumed bytes until the parser needs more, and drops what it
    /// consumed. `heads[i]`: the i-th request was HEAD. Stops at the first
    /// error; calls `eof` after the last piece when `eof` is set.
    fn drive<'a>(
        pieces: impl IntoIterator<Item = &'a [u8]>,
        heads: &[bool],
        eof: bool,
    ) -> Vec<Outcome> {
        let mut parser = ResponseParser::default();
        let mut outcomes = Vec::new();
        parser.start(heads.first().copied().unwrap_or(false));
        let mut buf = Vec::new();
        for piece in pieces {
            buf.extend_from_slice(piece);
            loop {
                match parser.feed(&buf) {
                    Ok(Step::NeedMore(n)) => {
                        assert!(n <= buf.len(), "consumed {n} of {}", buf.len());
                        buf.drain(..n);
                        break;
                    }
                    Ok(Step::Done(n, response)) => {
                        assert!(n <= buf.len(), "consumed {n} of {}", buf.len());
                        buf.drain(..n);
                        outcomes.push(Ok(response));
                        assert!(!parser.started());
                        parser.start(heads.get(outcomes.len()).copied().unwrap_or(false));
                        if buf.is_empty() {
                            break;
                        }
                    }
                    Err(e) => {
                        outcomes.push(Err(e));
                        return outcomes;
                    }
                }
            }
        }
        if eof {
            outcomes.push(parser.eof());
        }
        outcomes
    }

    /// Feeds `stream` whole, one byte at a time and split in two at every
    /// position (every 1/256th of it for long streams): all must agree.
    /// Returns the outcomes.
    fn check(stream: &[u8], heads: &[bool], eof: bool) -> Vec<Outcome> {
        let whole = drive([stream], heads, eof);
        assert_eq!(
            drive(stream.chunks(1), heads, eof),
            whole,
            "fed one byte at a time"
        );
        let step = if stream.len() <= 2048 {
            1
        } else {
            stream.len() / 256
        };
        for at in (0..=stream.len()).step_by(step) {
            let (a, b) = stream.split_at(at);
            assert_eq!(drive([a, b], heads, eof), whole, "split at {at}");
        }
        whole
    }

    fn cat(parts: &[&[u8]]) -> Vec<u8> {
        parts.concat()
    }

    const OK5: &[u8] = b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello";

    #[test]
    fn parse_content_length() {
        assert_eq!(check(OK5, &[], true), [ok(200, 38, 5, true), CLOSED_BEFORE]);
        let empty = b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n";
        assert_eq!(check(empty, &[], false), [ok(404, 45, 0, true)]);
    }

    #[test]
    fn parse_pipelined_offsets_chain() {
        let stream = cat(&[
            OK5,
            b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n",
            b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\nConnection: close\r\n\r\nabc",
        ]);
        let mut parser = ResponseParser::default();
        assert_eq!(
            parser.feed(&stream),
            Ok(Step::Done(
                43,
                Response {
                    status: 200,
                    head_bytes: 38,
                    body_bytes: 5,
                    keep_alive: true
                }
            ))
        );
        parser.start(false);
        assert_eq!(
            parser.feed(&stream[43..]),
            Ok(Step::Done(
                45,
                Response {
                    status: 404,
                    head_bytes: 45,
                    body_bytes: 0,
                    keep_alive: true
                }
            ))
        );
        parser.start(false);
        assert_eq!(
            parser.feed(&stream[88..]),
            Ok(Step::Done(
                60,
                Response {
                    status: 200,
                    head_bytes: 57,
                    body_bytes: 3,
                    keep_alive: false
                }
            ))
        );
        assert_eq!(stream.len(), 148);
        assert_eq!(
            check(&stream, &[], true),
            [
                ok(200, 38, 5, true),
                ok(404, 45, 0, true),
                ok(200, 57, 3, false),
                CLOSED_BEFORE
            ]
        );
    }

    const CHUNKED_HEAD: &[u8] = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n";

    #[test]
    fn parse_chunked_with_extensions_uppercase_hex_and_trailers() {
        let stream = cat(&[
            CHUNKED_HEAD,
            b"5;name=value\r\nhello\r\n",
            b"A ; quoted=\"a;b\"\r\n0123456789\r\n",
            b"1a\r\nabcdefghijklmnopqrstuvwxyz\r\n",
            b"0\r\nExpires: never\r\nX-Checksum: 1\r\n\r\n",
            OK5,
        ]);
        assert_eq!(
            check(&stream, &[], true),
            [ok(200, 47, 119, true), ok(200, 38, 5, true), CLOSED_BEFORE]
        );
    }

    #[test]
    fn parse_chunked_zero_length_body() {
        let stream = cat(&[CHUNKED_HEAD, b"0\r\n\r\n", OK5]);
        assert_eq!(
            check(&stream, &[], true),
            [ok(200, 47, 5, true), ok(200, 38, 5, true), CLOSED_BEFORE]
        );
        // A last chunk with an extension, leading zeros and bare LFs.
        let stream = cat(&[CHUNKED_HEAD, b"000;end\n\n"]);
        assert_eq!(check(&stream, &[], false), [ok(200, 47, 9, true)]);
    }

    #[test]
    fn parse_chunked_large_chunks() {
        let mut stream = cat(&[CHUNKED_HEAD, b"10000\r\n"]);
        stream.extend(std::iter::repeat_n(b'x', 0x10000));
        stream.extend_from_slice(b"\r\n1FFFF\r\n");
        stream.extend(std::iter::repeat_n(b'y', 0x1FFFF));
        stream.extend_from_slice(b"\r\n0\r\n\r\n");
        // 7 + 65536 + 2 + 7 + 131071 + 2 + 5
        assert_eq!(check(&stream, &[], false), [ok(200, 47, 196_630, true)]);
    }

    #[test]
    fn parse_skips_interim_responses() {
        let stream = cat(&[
            b"HTTP/1.1 100 Continue\r\n\r\n",
            b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok",
        ]);
        assert_eq!(
            check(&stream, &[], true),
            [ok(200, 38, 2, true), CLOSED_BEFORE]
        );

        let hints = b"HTTP/1.1 103 Early Hints\r\nLink: </style.css>; rel=preload\r\n\r\n";
        let stream = cat(&[
            hints,
            hints,
            b"HTTP/1.1 201 Created\r\nContent-Length: 2\r\n\r\nok",
            OK5,
        ]);
        assert_eq!(
            check(&stream, &[], true),
            [ok(201, 43, 2, true), ok(200, 38, 5, true), CLOSED_BEFORE]
        );

        // Closed after an interim response: the final head never came.
        let stream = b"HTTP/1.1 100 Continue\r\n\r\n";
        assert_eq!(
            check(stream, &[], true),
            [Err(ParseError::ClosedEarly { stage: Stage::Head })]
        );
    }

    #[test]
    fn parse_head_request_has_no_body() {
        let stream = cat(&[b"HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n", OK5]);
        assert_eq!(
            check(&stream, &[true, false], true),
            [ok(200, 41, 0, true), ok(200, 38, 5, true), CLOSED_BEFORE]
        );
        // Chunked or close-delimited framing says nothing for HEAD either.
        let stream = cat(&[CHUNKED_HEAD, b"HTTP/1.1 200 OK\r\n\r\n", OK5]);
        assert_eq!(
            check(&stream, &[true, true, false], false),
            [
                ok(200, 47, 0, true),
                ok(200, 19, 0, true),
                ok(200, 38, 5, true)
            ]
        );
    }

    #[test]
    fn parse_204_and_304_have_no_body() {
        let stream = cat(&[
            b"HTTP/1.1 204 No Content\r\n\r\n",
            b"HTTP/1.1 304 Not Modified\r\nContent-Length: 1234\r\nETag: \"x\"\r\n\r\n",
            OK5,
        ]);
        assert_eq!(
            check(&stream, &[], true),
            [
                ok(204, 27, 0, true),
                ok(304, 62, 0, true),
                ok(200, 38, 5, true),
                CLOSED_BEFORE
            ]
        );
    }

    #[test]
    fn parse_close_delimited_body_ends_at_eof() {
        let stream = b"HTTP/1.0 200 OK\r\nServer: x\r\n\r\nhello world";
        assert_eq!(check(stream, &[], true), [ok(200, 30, 11, false)]);
        // HTTP/1.1 without a length, and with an empty body.
        assert_eq!(
            check(b"HTTP/1.1 200 OK\r\n\r\n", &[], true),
            [ok(200, 19, 0, false)]
        );
        // A final coding other than chunked.
        let stream = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: gzip\r\n\r\n0\r\n\r\n";
        assert_eq!(check(stream, &[], true), [ok(200, 72, 5, false)]);
    }

    #[test]
    fn parse_keep_alive_rules() {
        let stream = b"HTTP/1.0 200 OK\r\nConnection: Keep-Alive\r\nContent-Length: 2\r\n\r\nhi";
        assert_eq!(check(stream, &[], false), [ok(200, 62, 2, true)]);
        let stream = b"HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\nhi";
        assert_eq!(check(stream, &[], false), [ok(200, 38, 2, false)]);
        let stream = b"HTTP/1.1 200 OK\r\nConnection: upgrade, Close\r\nContent-Length: 0\r\n\r\n";
        assert_eq!(check(stream, &[], false), [ok(200, 66, 0, false)]);
        let stream = b"HTTP/1.1 200 OK\r\nConnection: keep-alive\r\nConnection: close\r\nContent-Length: 0\r\n\r\n";
        assert_eq!(check(stream, &[], false), [ok(200, 81, 0, false)]);
        // Transfer-Encoding in HTTP/1.0: framing is suspect, close after.
        let stream =
            b"HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n";
        assert_eq!(check(stream, &[], false), [ok(200, 71, 5, false)]);
    }

    #[test]
    fn parse_transfer_encoding_framing() {
        // Chunked wins over Content-Length, even a broken one.
        let stream = b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\nContent-Length: x\r\nTransfer-Encoding: gzip, chunked\r\n\r\n2\r\nok\r\n0\r\n\r\n";
        assert_eq!(check(stream, &[], false), [ok(200, 93, 12, true)]);
    }

    #[test]
    fn parse_duplicate_content_length() {
        let stream = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\ncontent-length: 2, 2\r\n\r\nok";
        assert_eq!(check(stream, &[], false), [ok(200, 60, 2, true)]);
        let conflicting = Err(ParseError::Malformed("conflicting Content-Length values"));
        let stream = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\nok";
        assert_eq!(check(stream, &[], false), [conflicting]);
        let stream = b"HTTP/1.1 200 OK\r\nContent-Length: 2, 3\r\n\r\nok";
        assert_eq!(check(stream, &[], false), [conflicting]);
        for bad in ["abc", "-1", "+5", "", "5 5", "1,", "18446744073709551616"] {
            let stream = format!("HTTP/1.1 200 OK\r\nContent-Length: {bad}\r\n\r\n");
            assert_eq!(
                check(stream.as_bytes(), &[], false),
                [Err(ParseError::Malformed("invalid Content-Length"))],
                "{bad:?}"
            );
        }
        let stream = b"HTTP/1.1 200 OK\r\nContent-Length: 18446744073709551615\r\n\r\nok";
        assert_eq!(
            check(stream, &[], true),
            [Err(ParseError::BodyTooShort {
                expected: u64::MAX,
                received: 2
            })]
        );
    }

    #[test]
    fn parse_bare_lf_and_stray_empty_lines() {
        let stream = b"HTTP/1.1 200 OK\nContent-Length: 2\n\nok";
        assert_eq!(check(stream, &[], false), [ok(200, 35, 2, true)]);
        // A server's stray CRLF after a body is skipped and not counted.
        let stream = cat(&[OK5, b"\r\n", OK5, b"\n"]);
        assert_eq!(
            check(&stream, &[], true),
            [ok(200, 38, 5, true), ok(200, 38, 5, true), CLOSED_BEFORE]
        );
    }

    #[test]
    fn parse_eof_before_the_response_is_complete() {
        assert_eq!(check(b"", &[], true), [CLOSED_BEFORE]);
        assert_eq!(check(b"\r\n", &[], true), [CLOSED_BEFORE]);
        let head = Err(ParseError::ClosedEarly { stage: Stage::Head });
        assert_eq!(check(b"H", &[], true), [head]);
        assert_eq!(check(b"HTTP/1.1 200 OK\r\nContent-Le", &[], true), [head]);
        assert_eq!(
            check(b"HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r", &[], true),
            [head]
        );
        let stream = b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc";
        assert_eq!(
            check(stream, &[], true),
            [Err(ParseError::BodyTooShort {
                expected: 10,
                received: 3
            })]
        );
        let in_chunk = Err(ParseError::ClosedEarly {
            stage: Stage::ChunkedBody,
        });
        for tail in [
            &b""[..],
            b"5",
            b"5;a=b\r",
            b"5\r\nhe",
            b"5\r\nhello\r",
            b"0\r\n",
            b"0\r\nX: y\r\n\r",
        ] {
            let stream = cat(&[CHUNKED_HEAD, tail]);
            assert_eq!(
                check(&stream, &[], true),
                [in_chunk],
                "{:?}",
                String::from_utf8_lossy(tail)
            );
        }
    }

    #[test]
    fn parse_garbage_is_malformed() {
        let version = Err(ParseError::Malformed("invalid HTTP version"));
        assert_eq!(check(b"HELLO\r\n\r\n", &[], true), [version]);
        assert_eq!(
            check(b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03", &[], true),
            [version]
        );
        assert_eq!(check(b"HTTP/2 200\r\n\r\n", &[], true), [version]);
        assert_eq!(check(b"HTTP/1.2 200 OK\r\n\r\n", &[], true), [version]);
        assert_eq!(
            check(b"HTTP/1.1 2x0 OK\r\n\r\n", &[], true),
            [Err(ParseError::Malformed("invalid status line"))]
        );
        assert_eq!(
            check(b"HTTP/1.1 200 OK\r\nBad Header\r\n\r\n", &[], true),
            [Err(ParseError::Malformed("invalid header name"))]
        );
        assert_eq!(
            check(b"HTTP/1.1 099 Weird\r\n\r\n", &[], true),
            [Err(ParseError::Malformed("status code below 100"))]
        );
        // After a good response, garbage is the next response's problem.
        let stream = cat(&[OK5, b"!!"]);
        assert_eq!(check(&stream, &[], true), [ok(200, 38, 5, true), version]);
    }

    #[test]
    fn a_head_of_any_number_of_fields_parses() {
        // 63 fit the stack's room; 64, 71 (a web app's) and 500 are parsed
        // again with room for them, their framing read as any other's.
        for fields in [63, 64, 71, 500] {
            let head = format!(
                "HTTP/1.1 200 OK\r\n{}Content-Length: 3\r\n\r\nabc",
                "X: y\r\n".repeat(fields)
            );
            assert_eq!(
                drive([head.as_bytes()], &[], false),
                [ok(200, 17 + fields * 6 + 19 + 2, 3, true)],
                "{fields} fields"
            );
        }
        // Past the largest head, refused as before.
        let huge = format!(
            "HTTP/1.1 200 OK\r\n{}\r\n",
            "X: y\r\n".repeat(ResponseParser::MAX_HEAD_BYTES / 6 + 1)
        );
        assert!(check(huge.as_bytes(), &[], false)[0].is_err());
    }

    /// A head of exactly `len` bytes.
    fn head_of_len(len: usize) -> Vec<u8> {
        let fixed = "HTTP/1.1 200 OK\r\nX: \r\nContent-Length: 0\r\n\r\n".len();
        format!(
            "HTTP/1.1 200 OK\r\nX: {}\r\nContent-Length: 0\r\n\r\n",
            "a".repeat(len - fixed)
        )
        .into_bytes()
    }

    #[test]
    fn parse_head_too_large() {
        const MAX: usize = ResponseParser::MAX_HEAD_BYTES;
        let largest = head_of_len(MAX);
        assert_eq!(largest.len(), MAX);
        assert_eq!(check(&largest, &[], false), [ok(200, MAX, 0, true)]);
        assert_eq!(
            check(&head_of_len(MAX + 1), &[], false),
            [Err(ParseError::HeadTooLarge)]
        );

        // Without an end in sight, the error comes as soon as the buffer
        // holds MAX_HEAD_BYTES: the engine never buffers more.
        let endless = cat(&[b"HTTP/1.1 200 OK\r\nX: ", &[b'a'; 2 * MAX]]);
        let mut parser = ResponseParser::default();
        assert_eq!(parser.feed(&endless[..MAX - 1]), Ok(Step::NeedMore(0)));
        assert_eq!(parser.feed(&endless[..MAX]), Err(ParseError::HeadTooLarge));
        assert_eq!(check(&endless, &[], true), [Err(ParseError::HeadTooLarge)]);
    }

    #[test]
    fn parse_bad_chunk_framing_is_malformed() {
        let cases: [(&[u8], &str); 9] = [
            (b"zz\r\n", "invalid chunk size"),
            (b"\r\n", "invalid chunk size"),
            (b" 5\r\n", "invalid chunk size"),
            (b"5x\r\nhello\r\n", "invalid chunk size"),
            (b"5 5\r\nhello\r\n", "invalid chunk size"),
            (b"5\rx", "invalid line ending after chunk size"),
            (b"11111111111111111\r\n", "chunk size too large"),
            (b"5\r\nhelloXX", "missing CRLF after chunk data"),
            (b"0\r\n\rX", "invalid line ending after trailer section"),
        ];
        for (body, message) in cases {
            let stream = cat(&[CHUNKED_HEAD, body]);
            assert_eq!(
                check(&stream, &[], true),
                [Err(ParseError::Malformed(message))],
                "{:?}",
                String::from_utf8_lossy(body)
            );
        }
        // The largest size that fits is fine (and then cut short).
        let stream = cat(&[CHUNKED_HEAD, b"0FFFFFFFFFFFFFFFF\r\nabc"]);
        assert_eq!(
            check(&stream, &[], true),
            [Err(ParseError::ClosedEarly {
                stage: Stage::ChunkedBody
            })]
        );
    }

    #[test]
    fn parse_switching_protocols_is_an_error() {
        let stream = b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n";
        assert_eq!(check(stream, &[], true), [Err(ParseError::Upgrade)]);
    }

    #[test]
    fn parse_started_tracks_the_first_byte() {
        let mut parser = ResponseParser::default();
        assert!(!parser.started());
        assert_eq!(parser.feed(b"\r\n"), Ok(Step::NeedMore(2)));
        assert!(!parser.started(), "stray empty lines are not a response");
        assert_eq!(parser.feed(b"HT"), Ok(Step::NeedMore(0)));
        assert!(parser.started());
        assert!(matches!(parser.feed(OK5), Ok(Step::Done(43, _))));
        assert!(!parser.started());
        parser.start(false);
        assert_eq!(parser.feed(&OK5[..40]), Ok(Step::NeedMore(40)));
        assert!(parser.started());
        parser.start(false);
        assert!(!parser.started());
    }

    #[test]
    fn parse_error_classes() {
        use crate::stats::ErrorClass;
        let cases = [
            (ParseError::Malformed("x"), ErrorClass::Malformed),
            (ParseError::HeadTooLarge, ErrorClass::Malformed),
            (ParseError::Upgrade, ErrorClass::Malformed),
            (
                ParseError::ClosedEarly { stage: Stage::Head },
                ErrorClass::ClosedEarly,
            ),
            (
                ParseError::BodyTooShort {
                    expected: 2,
                    received: 1,
                },
                ErrorClass::BodyLengthMismatch,
            ),
        ];
        for (error, class) in cases {
            assert_eq!(error.class(), class, "{error}");
        }
        assert_eq!(
            ParseError::BodyTooShort {
                expected: 10,
                received: 3
            }
            .to_string(),
            "connection closed after 3 of 10 body bytes"
        );
        assert_eq!(
            ParseError::ClosedEarly {
                stage: Stage::ChunkedBody
            }
            .to_string(),
            "connection closed inside the chunked body"
        );
        assert_eq!(
            ParseError::HeadTooLarge.to_string(),
            "response head larger than 65536 bytes"
        );
    }

    /// A response body as the generator below frames it.
    #[derive(Debug, Clone)]
    enum Body {
        Length(usize),
        /// Chunk sizes (the last `0` chunk is added), with or without an
        /// extension on each size line, with or without a trailer.
        Chunked {
            sizes: Vec<usize>,
            extensions: bool,
            trailer: bool,
        },
    }

    /// Encodes a response, after a `100 Continue` when `interim`; returns
    /// the bytes and the expected outcome.
    fn encode(status: u16, body: &Body, interim: bool) -> (Vec<u8>, Response) {
        let mut head = format!("HTTP/1.1 {status} Whatever\r\nServer: proptest\r\n");
        let mut out = Vec::new();
        match body {
            Body::Length(n) => {
                head += &format!("Content-Length: {n}\r\n\r\n");
                out.extend(std::iter::repeat_n(b'b', *n));
            }
            Body::Chunked {
                sizes,
                extensions,
                trailer,
            } => {
                head += "Transfer-Encoding: chunked\r\n\r\n";
                for &size in sizes.iter().chain([&0]) {
                    let ext = if *extensions { ";ext=\"v\"" } else { "" };
                    out.extend_from_slice(format!("{size:X}{ext}\r\n").as_bytes());
                    if size > 0 {
                        out.extend(std::iter::repeat_n(b'c', size));
                        out.extend_from_slice(b"\r\n");
                    }
                }
                if *trailer {
                    out.extend_from_slice(b"X-Trailer: yes\r\n");
                }
                out.extend_from_slice(b"\r\n");
            }
        }
        let response = Response {
            status,
            head_bytes: head.len(),
            body_bytes: out.len() as u64,
            keep_alive: true,
        };
        let interim: &[u8] = if interim {
            b"HTTP/1.1 100 Continue\r\n\r\n"
        } else {
            b""
        };
        ([interim, head.as_bytes(), &out].concat(), response)
    }

    fn body() -> impl Strategy<Value = Body> {
        prop_oneof![
            (0usize..3000).prop_map(Body::Length),
            (
                prop::collection::vec(1usize..700, 0..6),
                any::<bool>(),
                any::<bool>()
            )
                .prop_map(|(sizes, extensions, trailer)| Body::Chunked {
                    sizes,
                    extensions,
                    trailer
                }),
        ]
    }

    fn status() -> impl Strategy<Value = u16> {
        (200u16..600).prop_filter("no body by definition", |s| *s != 204 && *s != 304)
    }

    /// Splits `stream` at the given positions (taken modulo its length).
    fn pieces(stream: &[u8], cuts: &[usize]) -> Vec<Vec<u8>> {
        let mut cuts: Vec<usize> = cuts.iter().map(|c| c % (stream.len() + 1)).collect();
        cuts.sort_unstable();
        let mut pieces = Vec::new();
        let mut from = 0;
        for cut in cuts.into_iter().chain([stream.len()]) {
            pieces.push(stream[from..cut].to_vec());
            from = cut;
        }
        pieces
    }

    proptest! {
        #[test]
        fn parse_random_valid_responses(
            responses in prop::collection::vec((status(), body(), any::<bool>()), 1..4),
            cuts in prop::collection::vec(any::<usize>(), 0..8),
        ) {
            let mut stream = Vec::new();
            let mut expected = Vec::new();
            for (status, body, interim) in &responses {
                let (bytes, response) = encode(*status, body, *interim);
                stream.extend(bytes);
                expected.push(Ok(response));
            }
            expected.push(CLOSED_BEFORE);
            let pieces = pieces(&stream, &cuts);
            prop_assert_eq!(drive(pieces.iter().map(Vec::as_slice), &[], true), expected);
        }

        #[test]
        fn parse_arbitrary_bytes_never_panic(
            prefix in prop::sample::select(vec![&b""[..], b"HTTP/1.1 ", b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"]),
            bytes in prop::collection::vec(any::<u8>(), 0..512),
            cuts in prop::collection::vec(any::<usize>(), 0..8),
            head_request in any::<bool>(),
        ) {
            let stream = [prefix, &bytes].concat();
            let pieces = pieces(&stream, &cuts);
            // `drive` asserts that no call consumes more than it was given.
            drive(pieces.iter().map(Vec::as_slice), &[head_request], true);
        }

        #[test]
        fn parse_mutated_responses_never_panic(
            (status, body) in (status(), body()),
            flips in prop::collection::vec((any::<usize>(), any::<u8>()), 1..4),
            cuts in prop::collection::vec(any::<usize>(), 0..8),
        ) {
            let (mut stream, _) = encode(status, &body, false);
            let len = stream.len();
            for (at, byte) in flips {
                stream[at % len] = byte;
            }
            let pieces = pieces(&stream, &cuts);
            drive(pieces.iter().map(Vec::as_slice), &[], true);
        }
    }

    #[test]
    fn the_server_field_is_captured_once_when_asked() {
        let two = b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\nserver:  nginx/1.25 \r\n\r\n\
HTTP/1.1 200 OK\r\nServer: other\r\nContent-Length: 0\r\n\r\n";
        let mut parser = ResponseParser::default();
        // Not asked: nothing is kept.
        assert!(matches!(parser.feed(two), Ok(Step::Done(..))));
        assert_eq!(parser.take_server(), None);
        let mut parser = ResponseParser::default();
        parser.capture_server();
        parser.start(false);
        let Ok(Step::Done(n, _)) = parser.feed(two) else {
            panic!("one response")
        };
        parser.start(false);
        assert!(matches!(parser.feed(&two[n..]), Ok(Step::Done(..))));
        // The first response's value, trimmed; the second is not copied.
        assert_eq!(parser.take_server().as_deref(), Some("nginx/1.25"));
        assert_eq!(parser.take_server(), None);
        // A head without the field leaves the request standing.
        let mut parser = ResponseParser::default();
        parser.capture_server();
        assert!(matches!(
            parser.feed(b"HTTP/1.1 204 No Content\r\n\r\n"),
            Ok(Step::Done(..))
        ));
        assert!(matches!(
            parser.feed(b"HTTP/1.1 204 No Content\r\nServer: late\r\n\r\n"),
            Ok(Step::Done(..))
        ));
        assert_eq!(parser.take_server().as_deref(), Some("late"));
    }
}
