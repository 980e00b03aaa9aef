//! Request templates: a request encoded once, filled per request.
//!
//! [`RequestTemplate::new`] validates a [`RequestSpec`] and lays the whole
//! request out as one byte string with slots at the placeholders of the
//! path. Only the path can hold placeholders, and the body's length does not
//! depend on it, so filling a slot never changes any other byte: `write` is
//! a handful of `memcpy`s and integer formats.
//!
//! The same request for HTTP/2 is made once too, by [`super::h2`]'s rules,
//! all but its path: [`RequestTemplate::http2`] fills the path alone (the
//! same values `write` puts in) and copies the rest.

use std::fmt;
use std::ops::Range;

use bytes::Bytes;

use super::h2::{self, Header};
use super::{RequestError, Target};
use crate::http2;

/// The `User-Agent` sent unless the user gives one.
const USER_AGENT: &str = concat!("dyno/", env!("CARGO_PKG_VERSION"));

/// What to send, as the user asked for it (method, path, headers, body).
///
/// Encoded into a [`RequestTemplate`] once per run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestSpec {
    /// The method, e.g. `GET`; sent exactly as given.
    pub method: String,
    /// The path and query (origin form, starting with `/`), which may hold
    /// the placeholders `{seq}` and `{rand:MIN-MAX}`; `{{` and `}}` stand
    /// for literal braces.
    pub path: String,
    /// Extra headers, sent in this order after `Host`. A `Host` or
    /// `User-Agent` given here replaces dyno's default.
    pub headers: Vec<(String, String)>,
    /// The body; when present, `Content-Length` is added unless given.
    pub body: Option<Vec<u8>>,
    /// Whether to reuse connections. HTTP/1.1 keeps them alive by default,
    /// so `false` adds `Connection: close`.
    pub keep_alive: bool,
}

impl Default for RequestSpec {
    /// `GET /`, no extra headers, no body, keep-alive.
    fn default() -> Self {
        RequestSpec {
            method: "GET".into(),
            path: "/".into(),
            headers: Vec::new(),
            body: None,
            keep_alive: true,
        }
    }
}

/// A value filled in per request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Slot {
    /// `{seq}`: the request's sequence number.
    Seq,
    /// `{rand:MIN-MAX}`: a uniform integer in `min..=max`.
    Rand { min: u64, max: u64 },
}

/// A slot and the offset in the template's bytes where its value goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct SlotAt {
    offset: usize,
    slot: Slot,
}

/// An HTTP/1.1 request encoded once, ready to be written per request.
///
/// Layout: `METHOD path HTTP/1.1`, `Host`, the user's headers in order,
/// `Content-Length` (when there is a body and the user gave none),
/// `Connection: close` (without keep-alive), a default `User-Agent` (unless
/// the user gave one), a blank line, the body.
///
/// Its `Debug` shows the head as text and only the length of the body.
#[derive(Clone)]
pub struct RequestTemplate {
    method: String,
    /// Every literal byte of the request, with the slots' values left out.
    bytes: Vec<u8>,
    /// Where the body starts in `bytes`.
    body_start: usize,
    /// Where the path ends in `bytes` (it starts after the method's space).
    path_end: usize,
    /// Where values go, in increasing offset order (all in the path).
    slots: Vec<SlotAt>,
    keep_alive: bool,
    /// The request's HTTP/2 fields but its path, or why HTTP/2 cannot
    /// carry it.
    h2: Result<Http2, String>,
}

/// What HTTP/2 sends of a template, but its path: made once.
#[derive(Clone)]
struct Http2 {
    authority: Box<[u8]>,
    /// The fields after the pseudo-fields, in order.
    headers: Vec<http2::Field>,
    /// Copied into each request, as it was when requests were parsed from
    /// HTTP/1.1 bytes: one `Bytes` shared by every thread's requests would
    /// have them all count its references on one cache line.
    body: Option<Box<[u8]>>,
}

/// Whether `method` gives content a meaning, so that a request of it
/// without a body still says `Content-Length: 0` (RFC 9110 §8.6: some
/// servers and proxies answer 411 without it).
pub(crate) fn sends_content(method: &str) -> bool {
    ["POST", "PUT", "PATCH"]
        .iter()
        .any(|m| m.eq_ignore_ascii_case(method))
}

impl RequestTemplate {
    /// Validates `spec` and encodes it for `target`.
    ///
    /// Refuses a method or header name that is not an HTTP token, a header
    /// value with a line break or control character, a path that is not
    /// printable ASCII starting with `/`, unknown or malformed placeholders,
    /// two `Host` or `Content-Length` headers, and a user `Content-Length`
    /// that disagrees with the body.
    pub fn new(target: &Target, spec: &RequestSpec) -> Result<Self, RequestError> {
        let RequestSpec {
            method,
            path,
            headers,
            body,
            keep_alive,
        } = spec;

        if !is_token(method) {
            return Err(RequestError::InvalidMethod {
                method: method.clone(),
            });
        }
        let mut host = None;
        let mut content_length = None;
        let mut has_user_agent = false;
        let mut has_transfer_encoding = false;
        let mut says_close = false;
        for (name, value) in headers {
            check_header(name, value)?;
            if name.eq_ignore_ascii_case("host") {
                if host.replace(value).is_some() {
                    return Err(RequestError::DuplicateHeader {
                        name: "Host".into(),
                    });
                }
            } else if name.eq_ignore_ascii_case("content-length") {
                if content_length.replace(value).is_some() {
                    return Err(RequestError::DuplicateHeader {
                        name: "Content-Length".into(),
                    });
                }
            } else if name.eq_ignore_ascii_case("user-agent") {
                has_user_agent = true;
            } else if name.eq_ignore_ascii_case("transfer-encoding") {
                has_transfer_encoding = true;
            } else if name.eq_ignore_ascii_case("connection") {
                says_close |= value
                    .split(',')
                    .any(|option| option.trim().eq_ignore_ascii_case("close"));
            }
        }
        let body_len = body.as_ref().map_or(0, Vec::len);
        // A Content-Length that disagrees with the body desynchronises the
        // connection (the server waits for bytes that never come, or reads
        // the rest as the next request), which would measure nonsense.
        // With Transfer-Encoding the user frames the body themselves.
        if let Some(given) = content_length
            && !has_transfer_encoding
            && given.trim().parse::<u64>().ok() != Some(body_len as u64)
        {
            return Err(RequestError::ContentLengthMismatch {
                given: given.clone(),
                actual: body_len,
            });
        }

        let mut bytes = Vec::with_capacity(128 + path.len() + body_len);
        let mut slots = Vec::new();
        bytes.extend_from_slice(method.as_bytes());
        bytes.push(b' ');
        compile_path(path, &mut bytes, &mut slots)?;
        let path_end = bytes.len();
        bytes.extend_from_slice(b" HTTP/1.1\r\n");
        // RFC 9112 §3.2: a client sends Host as the first header field.
        let mut head = vec![("Host", host.unwrap_or(&target.authority).as_str())];
        head.extend(
            headers
                .iter()
                .filter(|(name, _)| !name.eq_ignore_ascii_case("host"))
                .map(|(name, value)| (name.as_str(), value.as_str())),
        );
        let body_len_text = body_len.to_string();
        if (body.is_some() || sends_content(method))
            && content_length.is_none()
            && !has_transfer_encoding
        {
            head.push(("Content-Length", &body_len_text));
        }
        if !keep_alive && !says_close {
            head.push(("Connection", "close"));
        }
        if !has_user_agent {
            head.push(("User-Agent", USER_AGENT));
        }
        for (name, value) in &head {
            push_header(&mut bytes, name, value);
        }
        bytes.extend_from_slice(b"\r\n");
        let body_start = bytes.len();
        if let Some(body) = body {
            bytes.extend_from_slice(body);
        }
        Ok(RequestTemplate {
            method: method.clone(),
            h2: http2_parts(method, &head, body.as_deref()),
            bytes,
            body_start,
            path_end,
            slots,
            keep_alive: *keep_alive && !says_close,
        })
    }

    /// True when no placeholders: the same bytes every time.
    pub fn is_static(&self) -> bool {
        self.slots.is_empty()
    }

    /// The bytes of a static template, to send as they are (no copy per
    /// request); `None` when the path holds placeholders.
    pub fn static_bytes(&self) -> Option<&[u8]> {
        self.is_static().then_some(self.bytes.as_slice())
    }

    /// Appends the request for sequence number `seq` to `out`, drawing the
    /// values of `{rand:...}` from `rng`.
    ///
    /// Allocates nothing beyond growing `out` (at most once).
    pub fn write(&self, seq: u64, rng: &mut fastrand::Rng, out: &mut Vec<u8>) {
        out.reserve(self.bytes.len() + self.slots.len() * MAX_DECIMAL_LEN);
        self.fill(0..self.bytes.len(), seq, rng, out);
    }

    /// Request `seq` for HTTP/2, with the values `write` would put in (the
    /// same draws from `rng`): the path is filled into `path` (cleared
    /// first), the other fields and the body are the ones made once.
    ///
    /// Allocates the fields and the body it returns, and nothing else
    /// (`path` grows at most once).
    pub(crate) fn http2(
        &self,
        scheme: &str,
        seq: u64,
        rng: &mut fastrand::Rng,
        path: &mut Vec<u8>,
    ) -> Result<http2::Request, String> {
        path.clear();
        self.fill(self.method.len() + 1..self.path_end, seq, rng, path);
        let parts = self.h2.as_ref().map_err(String::clone)?;
        let mut fields = h2::Fields::new(self.method.as_bytes(), scheme, parts.headers.len());
        fields.authority(&parts.authority);
        fields.path(path);
        for (name, value) in &parts.headers {
            fields.push(name, value);
        }
        Ok(fields.request(parts.body.as_deref().map(Bytes::copy_from_slice)))
    }

    /// Appends `self.bytes[range]` with the slots' values filled in; the
    /// range holds every slot.
    fn fill(&self, range: Range<usize>, seq: u64, rng: &mut fastrand::Rng, out: &mut Vec<u8>) {
        let mut done = range.start;
        for &SlotAt { offset, slot } in &self.slots {
            debug_assert!(range.contains(&offset) || offset == range.end);
            out.extend_from_slice(&self.bytes[done..offset]);
            let value = match slot {
                Slot::Seq => seq,
                Slot::Rand { min, max } => rng.u64(min..=max),
            };
            push_decimal(out, value);
            done = offset;
        }
        out.extend_from_slice(&self.bytes[done..range.end]);
    }

    /// True for `HEAD`, whose response has headers but no body.
    pub fn is_head(&self) -> bool {
        self.method == "HEAD"
    }

    /// The method, as sent.
    pub fn method(&self) -> &str {
        &self.method
    }

    /// Whether the connection may be reused after this request: false when
    /// the spec asked for no keep-alive or the user sent `Connection: close`
    /// (the server will then close it).
    pub fn keep_alive(&self) -> bool {
        self.keep_alive
    }
}

impl fmt::Debug for RequestTemplate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RequestTemplate")
            .field(
                "head",
                &String::from_utf8_lossy(&self.bytes[..self.body_start]),
            )
            .field("body_len", &(self.bytes.len() - self.body_start))
            .field("slots", &self.slots)
            .field("keep_alive", &self.keep_alive)
            .finish_non_exhaustive()
    }
}

/// What HTTP/2 sends of a request of `method` with the header fields
/// `head` (in the order HTTP/1.1 sends them) and `body`, but its path.
fn http2_parts(method: &str, head: &[(&str, &str)], body: Option<&[u8]>) -> Result<Http2, String> {
    h2::check_method(method)?;
    let mut parts = Http2 {
        authority: Box::default(),
        headers: Vec::with_capacity(head.len()),
        body: body.map(Box::from),
    };
    for &(name, value) in head {
        let header = Header::of(name)?;
        let value = h2::value(value.as_bytes(), &header)?;
        match header {
            Header::Authority => parts.authority = value.into(),
            Header::Dropped => {}
            Header::Field(name) => parts.headers.push((name, value.into())),
        }
    }
    Ok(parts)
}

/// Parses a header given on the command line as `Name: value`.
///
/// Whitespace around the whole string and around the value is dropped; the
/// name must be an HTTP token (no spaces, so `Name : value` is refused) and
/// the value one line of text.
pub fn parse_header(s: &str) -> Result<(String, String), RequestError> {
    let s = s.trim();
    let malformed = |reason: &str| RequestError::MalformedHeader {
        header: s.into(),
        reason: reason.into(),
    };
    let Some((name, value)) = s.split_once(':') else {
        return Err(malformed("no ':' between the name and the value"));
    };
    if name.is_empty() {
        return Err(malformed("the name before ':' is empty"));
    }
    let value = value.trim_matches([' ', '\t']);
    check_header(name, value)?;
    Ok((name.into(), value.into()))
}

/// Checks that `path` can be a template's path: printable ASCII, starting
/// with `/` (or `*`), with valid placeholders.
pub(super) fn check_path(path: &str) -> Result<(), RequestError> {
    compile_path(path, &mut Vec::new(), &mut Vec::new())
}

/// Appends the literal bytes of `path` to `bytes` and records its slots (at
/// offsets into `bytes`) in `slots`.
fn compile_path(
    path: &str,
    bytes: &mut Vec<u8>,
    slots: &mut Vec<SlotAt>,
) -> Result<(), RequestError> {
    let invalid = |reason: String| RequestError::InvalidPath {
        path: path.into(),
        reason,
    };
    if path.is_empty() {
        return Err(invalid("it is empty; use / for the root".into()));
    }
    if !path.starts_with('/') && path != "*" {
        return Err(invalid("it must start with '/', e.g. /index.html".into()));
    }
    // The request line is split on spaces and ends at CRLF; httparse, like
    // most servers, accepts only printable ASCII in the request target.
    if let Some((index, bad)) = path.char_indices().find(|&(_, c)| !c.is_ascii_graphic()) {
        return Err(invalid(format!(
            "{bad:?} at position {} cannot go into a request line; percent-encode it (a space is %20)",
            index + 1
        )));
    }

    // Only ASCII from here on, so byte positions are character positions.
    let raw = path.as_bytes();
    let mut i = 0;
    while i < raw.len() {
        match raw[i] {
            b'{' if raw.get(i + 1) == Some(&b'{') => {
                bytes.push(b'{');
                i += 2;
            }
            b'}' if raw.get(i + 1) == Some(&b'}') => {
                bytes.push(b'}');
                i += 2;
            }
            b'{' => {
                let unclosed = || RequestError::UnmatchedBrace {
                    path: path.into(),
                    brace: '{',
                    position: i + 1,
                };
                let close = path[i + 1..].find('}').ok_or_else(unclosed)? + i + 1;
                let inner = &path[i + 1..close];
                if inner.contains('{') {
                    return Err(unclosed());
                }
                let slot = parse_placeholder(path, inner)?;
                slots.push(SlotAt {
                    offset: bytes.len(),
                    slot,
                });
                i = close + 1;
            }
            b'}' => {
                return Err(RequestError::UnmatchedBrace {
                    path: path.into(),
                    brace: '}',
                    position: i + 1,
                });
            }
            byte => {
                bytes.push(byte);
                i += 1;
            }
        }
    }
    Ok(())
}

/// Parses the text between `{` and `}`.
fn parse_placeholder(path: &str, inner: &str) -> Result<Slot, RequestError> {
    let placeholder = format!("{{{inner}}}");
    let invalid = |reason: String| RequestError::InvalidPlaceholder {
        placeholder: placeholder.clone(),
        path: path.into(),
        reason,
    };
    if inner == "seq" {
        return Ok(Slot::Seq);
    }
    let Some(range) = inner
        .strip_prefix("rand:")
        .or_else(|| (inner == "rand").then_some(""))
    else {
        return Err(RequestError::UnknownPlaceholder {
            placeholder,
            path: path.into(),
        });
    };
    let number = |s: &str| {
        (!s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()))
            .then(|| s.parse::<u64>().ok())
            .flatten()
    };
    let Some((min, max)) = range
        .split_once('-')
        .and_then(|(min, max)| Some((number(min)?, number(max)?)))
    else {
        return Err(invalid(
            "write {rand:MIN-MAX} with MIN and MAX whole numbers from 0 to 18446744073709551615, e.g. {rand:1-1000}"
                .into(),
        ));
    };
    if min > max {
        return Err(invalid(format!(
            "MIN ({min}) is greater than MAX ({max}); write {{rand:{max}-{min}}}"
        )));
    }
    Ok(Slot::Rand { min, max })
}

/// Checks a header's name (an HTTP token) and value (no control characters
/// but tab; in particular no CR, LF or NUL, which would split or truncate
/// the request).
fn check_header(name: &str, value: &str) -> Result<(), RequestError> {
    if !is_token(name) {
        return Err(RequestError::InvalidHeaderName { name: name.into() });
    }
    if value.bytes().any(|b| b.is_ascii_control() && b != b'\t') {
        return Err(RequestError::InvalidHeaderValue {
            name: name.into(),
            value: value.into(),
        });
    }
    Ok(())
}

/// An HTTP token (RFC 9110 §5.6.2): one or more tchars.
fn is_token(s: &str) -> bool {
    !s.is_empty()
        && s.bytes().all(|b| {
            b.is_ascii_alphanumeric()
                || matches!(
                    b,
                    b'!' | b'#'
                        | b'$'
                        | b'%'
                        | b'&'
                        | b'\''
                        | b'*'
                        | b'+'
                        | b'-'
                        | b'.'
                        | b'^'
                        | b'_'
                        | b'`'
                        | b'|'
                        | b'~'
                )
        })
}

fn push_header(bytes: &mut Vec<u8>, name: &str, value: &str) {
    bytes.extend_from_slice(name.as_bytes());
    bytes.extend_from_slice(b": ");
    bytes.extend_from_slice(value.as_bytes());
    bytes.extend_from_slice(b"\r\n");
}

/// The length of `u64::MAX` in decimal.
const MAX_DECIMAL_LEN: usize = 20;

/// Appends `n` in decimal, formatted on the stack.
pub(crate) fn push_decimal(out: &mut Vec<u8>, mut n: u64) {
    let mut digits = [0u8; MAX_DECIMAL_LEN];
    let mut start = digits.len();
    loop {
        start -= 1;
        digits[start] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    out.extend_from_slice(&digits[start..]);
}

#[cfg(test)]
mod tests {
    use super::super::parse_url;
    use super::*;
    use proptest::prelude::*;

    fn target(url: &str) -> Target {
        parse_url(url).unwrap().0
    }

    fn spec(method: &str, path: &str) -> RequestSpec {
        RequestSpec {
            method: method.into(),
            path: path.into(),
            ..RequestSpec::default()
        }
    }

    fn headers(list: &[(&str, &str)]) -> Vec<(String, String)> {
        list.iter().map(|&(n, v)| (n.into(), v.into())).collect()
    }

    /// The bytes of a template that must be static.
    fn encode(target: &Target, spec: &RequestSpec) -> String {
        let template = RequestTemplate::new(target, spec).unwrap();
        assert!(template.is_static());
        let bytes = template.static_bytes().unwrap();
        // write() of a static template is the same bytes.
        let mut out = Vec::new();
        template.write(7, &mut fastrand::Rng::with_seed(1), &mut out);
        assert_eq!(out, bytes);
        String::from_utf8(bytes.to_vec()).unwrap()
    }

    /// Writes `seq` with a seeded generator and returns the request.
    fn fill(template: &RequestTemplate, seq: u64) -> String {
        let mut out = Vec::new();
        template.write(seq, &mut fastrand::Rng::with_seed(seq), &mut out);
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn get_keep_alive() {
        let got = encode(&target("http://localhost:8080/"), &spec("GET", "/hello"));
        assert_eq!(
            got,
            format!(
                "GET /hello HTTP/1.1\r\nHost: localhost:8080\r\nUser-Agent: {USER_AGENT}\r\n\r\n"
            )
        );
        assert!(USER_AGENT.starts_with("dyno/") && USER_AGENT.len() > "dyno/".len());
        let template = RequestTemplate::new(&target("http://h/"), &spec("GET", "/")).unwrap();
        assert_eq!(template.method(), "GET");
        assert!(!template.is_head());
        assert!(template.keep_alive());
    }

    #[test]
    fn get_without_keep_alive_says_close() {
        let spec = RequestSpec {
            keep_alive: false,
            ..spec("GET", "/hello")
        };
        let got = encode(&target("http://localhost/"), &spec);
        assert_eq!(
            got,
            format!(
                "GET /hello HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\nUser-Agent: {USER_AGENT}\r\n\r\n"
            )
        );
        assert!(
            !RequestTemplate::new(&target("http://h/"), &spec)
                .unwrap()
                .keep_alive()
        );
    }

    #[test]
    fn user_connection_close_is_not_repeated() {
        let spec = RequestSpec {
            keep_alive: false,
            headers: headers(&[("Connection", "Close")]),
            ..spec("GET", "/")
        };
        let template = RequestTemplate::new(&target("http://h/"), &spec).unwrap();
        assert_eq!(
            fill(&template, 0),
            format!(
                "GET / HTTP/1.1\r\nHost: h\r\nConnection: Close\r\nUser-Agent: {USER_AGENT}\r\n\r\n"
            )
        );
        let keep = RequestSpec {
            keep_alive: true,
            ..spec
        };
        assert!(
            !RequestTemplate::new(&target("http://h/"), &keep)
                .unwrap()
                .keep_alive()
        );
    }

    #[test]
    fn post_with_body_gets_content_length() {
        let spec = RequestSpec {
            headers: headers(&[("Content-Type", "application/json")]),
            body: Some(br#"{"a":1}"#.to_vec()),
            ..spec("POST", "/api/items")
        };
        let got = encode(&target("https://example.com/"), &spec);
        assert_eq!(
            got,
            format!(
                "POST /api/items HTTP/1.1\r\nHost: example.com\r\nContent-Type: application/json\r\n\
                 Content-Length: 7\r\nUser-Agent: {USER_AGENT}\r\n\r\n{{\"a\":1}}"
            )
        );
    }

    #[test]
    fn empty_body_is_content_length_zero() {
        let empty = RequestSpec {
            body: Some(Vec::new()),
            ..spec("POST", "/")
        };
        let got = encode(&target("http://h/"), &empty);
        assert!(got.contains("\r\nContent-Length: 0\r\n"), "{got}");
        // A POST, PUT or PATCH without a body says so too; a GET does not.
        for method in ["POST", "PUT", "patch"] {
            let got = encode(&target("http://h/"), &spec(method, "/"));
            assert!(got.contains("\r\nContent-Length: 0\r\n"), "{method}: {got}");
        }
        for method in ["GET", "DELETE", "HEAD"] {
            let got = encode(&target("http://h/"), &spec(method, "/"));
            assert!(!got.contains("Content-Length"), "{method}: {got}");
        }
    }

    #[test]
    fn user_content_length_must_match_the_body() {
        let with = |body: Option<&[u8]>, length: &str| RequestSpec {
            headers: headers(&[("content-length", length)]),
            body: body.map(<[u8]>::to_vec),
            ..spec("POST", "/")
        };
        let got = encode(&target("http://h/"), &with(Some(b"abc"), "3"));
        assert_eq!(
            got,
            format!(
                "POST / HTTP/1.1\r\nHost: h\r\ncontent-length: 3\r\nUser-Agent: {USER_AGENT}\r\n\r\nabc"
            )
        );
        encode(&target("http://h/"), &with(None, "0"));
        for (body, length) in [(Some(&b"abc"[..]), "4"), (None, "5"), (Some(b"a"), "one")] {
            let err = RequestTemplate::new(&target("http://h/"), &with(body, length)).unwrap_err();
            assert!(
                matches!(err, RequestError::ContentLengthMismatch { .. }),
                "{err:?}"
            );
            assert!(err.to_string().contains("drop the header"), "{err}");
        }
    }

    #[test]
    fn transfer_encoding_leaves_framing_to_the_user() {
        let spec = RequestSpec {
            headers: headers(&[("Transfer-Encoding", "chunked")]),
            body: Some(b"3\r\nabc\r\n0\r\n\r\n".to_vec()),
            ..spec("POST", "/")
        };
        let got = encode(&target("http://h/"), &spec);
        assert!(!got.contains("Content-Length"), "{got}");
        assert!(got.ends_with("\r\n\r\n3\r\nabc\r\n0\r\n\r\n"), "{got}");
    }

    #[test]
    fn user_headers_keep_their_order() {
        let spec = RequestSpec {
            headers: headers(&[("X-B", "2"), ("Accept", "*/*"), ("X-A", "1"), ("X-B", "3")]),
            ..spec("GET", "/")
        };
        let got = encode(&target("http://h:8080/"), &spec);
        assert_eq!(
            got,
            format!(
                "GET / HTTP/1.1\r\nHost: h:8080\r\nX-B: 2\r\nAccept: */*\r\nX-A: 1\r\nX-B: 3\r\n\
                 User-Agent: {USER_AGENT}\r\n\r\n"
            )
        );
    }

    #[test]
    fn user_host_and_user_agent_replace_the_defaults() {
        let spec = RequestSpec {
            headers: headers(&[
                ("X-First", "1"),
                ("user-agent", "wrk"),
                ("host", "virtual.example"),
            ]),
            ..spec("GET", "/")
        };
        let got = encode(&target("http://127.0.0.1:8080/"), &spec);
        assert_eq!(
            got,
            "GET / HTTP/1.1\r\nHost: virtual.example\r\nX-First: 1\r\nuser-agent: wrk\r\n\r\n"
        );
    }

    #[test]
    fn head() {
        let template =
            RequestTemplate::new(&target("http://[::1]:8080/"), &spec("HEAD", "/x")).unwrap();
        assert!(template.is_head());
        assert_eq!(template.method(), "HEAD");
        assert_eq!(
            encode(&target("http://[::1]:8080/"), &spec("HEAD", "/x")),
            format!("HEAD /x HTTP/1.1\r\nHost: [::1]:8080\r\nUser-Agent: {USER_AGENT}\r\n\r\n")
        );
    }

    #[test]
    fn bad_methods_and_headers_are_refused() {
        let h = target("http://h/");
        for method in ["", "GET POST", "GET\r\n", "G{T", "GÉT"] {
            let err = RequestTemplate::new(&h, &spec(method, "/")).unwrap_err();
            assert!(
                matches!(err, RequestError::InvalidMethod { .. }),
                "{method:?}: {err:?}"
            );
        }
        let bad = [
            (("X Y", "1"), "invalid header name"),
            (("", "1"), "invalid header name"),
            (("X:Y", "1"), "invalid header name"),
            (("X", "a\r\nEvil: 1"), "line break"),
            (("X", "a\nb"), "line break"),
            (("X", "a\0b"), "line break"),
        ];
        for ((name, value), fragment) in bad {
            let spec = RequestSpec {
                headers: headers(&[(name, value)]),
                ..spec("GET", "/")
            };
            let err = RequestTemplate::new(&h, &spec).unwrap_err().to_string();
            assert!(err.contains(fragment), "{name:?}: {value:?}: {err}");
        }
        for name in ["Host", "Content-Length"] {
            let spec = RequestSpec {
                headers: headers(&[(name, "0"), (&name.to_lowercase(), "0")]),
                ..spec("GET", "/")
            };
            let err = RequestTemplate::new(&h, &spec).unwrap_err();
            assert_eq!(err, RequestError::DuplicateHeader { name: name.into() });
        }
        // Tabs and non-ASCII text are legal in values.
        let spec = RequestSpec {
            headers: headers(&[("X", "a\tb café")]),
            ..spec("GET", "/")
        };
        RequestTemplate::new(&h, &spec).unwrap();
    }

    #[test]
    fn bad_paths_are_refused() {
        let h = target("http://h/");
        for (path, fragment) in [
            ("", "empty"),
            ("hello", "start with '/'"),
            ("/a b", "%20"),
            ("/a\r\n", "percent-encode"),
            ("/caf\u{e9}", "percent-encode"),
        ] {
            let err = RequestTemplate::new(&h, &spec("GET", path))
                .unwrap_err()
                .to_string();
            assert!(err.contains(fragment), "{path:?}: {err}");
        }
        encode(&h, &spec("OPTIONS", "*"));
    }

    #[test]
    fn seq_fills_the_sequence_number() {
        let template = RequestTemplate::new(
            &target("http://h/"),
            &spec("GET", "/item/{seq}?again={seq}"),
        )
        .unwrap();
        assert!(!template.is_static());
        assert_eq!(template.static_bytes(), None);
        let mut out = Vec::new();
        let mut rng = fastrand::Rng::with_seed(0);
        for seq in 0..3 {
            template.write(seq, &mut rng, &mut out);
        }
        let one = |seq: u64| {
            format!(
                "GET /item/{seq}?again={seq} HTTP/1.1\r\nHost: h\r\nUser-Agent: {USER_AGENT}\r\n\r\n"
            )
        };
        assert_eq!(
            String::from_utf8(out).unwrap(),
            [one(0), one(1), one(2)].concat()
        );
        assert_eq!(fill(&template, u64::MAX), one(u64::MAX));
    }

    #[test]
    fn rand_stays_in_range_and_covers_it() {
        let template =
            RequestTemplate::new(&target("http://h/"), &spec("GET", "/r/{rand:5-7}")).unwrap();
        let mut rng = fastrand::Rng::with_seed(42);
        let mut seen = [0u32; 3];
        let mut out = Vec::new();
        for seq in 0..300 {
            out.clear();
            template.write(seq, &mut rng, &mut out);
            let request = String::from_utf8(out.clone()).unwrap();
            let value: u64 = request
                .strip_prefix("GET /r/")
                .and_then(|rest| rest.split_once(' '))
                .map(|(value, _)| value.parse().unwrap())
                .unwrap();
            assert!((5..=7).contains(&value), "{value}");
            seen[(value - 5) as usize] += 1;
        }
        assert!(seen.iter().all(|&count| count > 0), "{seen:?}");
    }

    #[test]
    fn rand_over_the_whole_range_and_a_single_value() {
        let template = RequestTemplate::new(
            &target("http://h/"),
            &spec("GET", "/{rand:0-18446744073709551615}/{rand:9-9}"),
        )
        .unwrap();
        for seq in 0..20 {
            let request = fill(&template, seq);
            let path = request.split(' ').nth(1).unwrap();
            let (big, nine) = path[1..].split_once('/').unwrap();
            big.parse::<u64>().unwrap();
            assert_eq!(nine, "9");
        }
    }

    #[test]
    fn doubled_braces_are_literal() {
        let template =
            RequestTemplate::new(&target("http://h/"), &spec("GET", "/{{seq}}/{{{seq}}}/}}"))
                .unwrap();
        assert!(!template.is_static());
        assert!(fill(&template, 12).starts_with("GET /{seq}/{12}/} HTTP/1.1\r\n"));
        let literal = encode(&target("http://h/"), &spec("GET", "/a{{b}}"));
        assert!(literal.starts_with("GET /a{b} HTTP/1.1\r\n"), "{literal}");
    }

    #[test]
    fn bad_placeholders_are_refused() {
        let h = target("http://h/");
        let cases: &[(&str, &[&str])] = &[
            (
                "/{id}",
                &[
                    "unknown placeholder {id}",
                    "{seq} and {rand:MIN-MAX}",
                    "'{{'",
                ],
            ),
            ("/{}", &["unknown placeholder {}"]),
            ("/{SEQ}", &["unknown placeholder {SEQ}"]),
            (
                "/{rand:9-3}",
                &[
                    "{rand:9-3}",
                    "MIN (9) is greater than MAX (3)",
                    "{rand:3-9}",
                ],
            ),
            ("/{rand}", &["{rand}", "{rand:MIN-MAX}"]),
            ("/{rand:5}", &["{rand:5}", "{rand:MIN-MAX}"]),
            ("/{rand:a-b}", &["{rand:a-b}", "whole numbers"]),
            ("/{rand:-1-5}", &["whole numbers"]),
            ("/{rand:1-18446744073709551616}", &["whole numbers"]),
            ("/{seq", &["unmatched '{' at position 2", "'{{'"]),
            ("/{se{q}", &["unmatched '{' at position 2"]),
            ("/a}b", &["unmatched '}' at position 3", "'}}'"]),
        ];
        for (path, fragments) in cases {
            let err = RequestTemplate::new(&h, &spec("GET", path))
                .unwrap_err()
                .to_string();
            for fragment in *fragments {
                assert!(
                    err.contains(fragment),
                    "{path:?}: {err:?} lacks {fragment:?}"
                );
            }
        }
    }

    #[test]
    fn parse_header_accepts_name_colon_value() {
        let cases = [
            ("Accept: */*", ("Accept", "*/*")),
            ("X-Empty:", ("X-Empty", "")),
            ("  X-Pad:   spaced value \t ", ("X-Pad", "spaced value")),
            (
                "Authorization: Bearer a:b:c",
                ("Authorization", "Bearer a:b:c"),
            ),
            ("x:y", ("x", "y")),
        ];
        for (input, (name, value)) in cases {
            assert_eq!(
                parse_header(input),
                Ok((name.into(), value.into())),
                "{input:?}"
            );
        }
    }

    #[test]
    fn parse_header_refuses_malformed_headers() {
        let cases = [
            ("Accept */*", "no ':'"),
            ("", "no ':'"),
            (": value", "name before ':' is empty"),
            ("Bad Name: v", "invalid header name"),
            ("Name : v", "invalid header name"),
            ("X: a\rb", "line break"),
        ];
        for (input, fragment) in cases {
            let err = parse_header(input).unwrap_err().to_string();
            assert!(err.contains(fragment), "{input:?}: {err}");
        }
        let err = parse_header("Accept */*").unwrap_err().to_string();
        assert!(err.contains("-H 'Name: value'"), "{err}");
    }

    #[test]
    fn decimal_formatting() {
        for n in [0, 1, 9, 10, 99, 100, 12345, u64::MAX / 3, u64::MAX] {
            let mut out = b"x".to_vec();
            push_decimal(&mut out, n);
            assert_eq!(out, format!("x{n}").into_bytes());
        }
    }

    /// The HTTP/2 request built directly equals the one the HTTP/1.1
    /// bytes parse back to (the route taken before), with the same values
    /// drawn: for several sequence numbers, from generators seeded alike.
    #[test]
    fn http2_requests_are_the_http1_requests_parsed_back() {
        let patch = RequestSpec {
            method: "PATCH".into(),
            path: "/item/{seq}?r={rand:1-1000000}&again={seq}".into(),
            headers: headers(&[
                ("X-Trace", "  padded\tvalue "),
                ("host", "virtual.example:8443"),
                ("Keep-Alive", "timeout=5"),
                ("Accept", "*/*"),
                ("Transfer-Encoding", "identity"),
            ]),
            body: Some(br#"{"a":1}"#.to_vec()),
            keep_alive: false,
        };
        let template = RequestTemplate::new(&target("https://h:8443/"), &patch).unwrap();
        assert!(!template.is_static());
        let (mut old, mut new) = (fastrand::Rng::with_seed(9), fastrand::Rng::with_seed(9));
        let (mut bytes, mut path) = (Vec::new(), Vec::new());
        for seq in [0, 1, 7, 12_345, u64::MAX] {
            bytes.clear();
            template.write(seq, &mut old, &mut bytes);
            let want = h2::request_from_http1(&bytes, "https").unwrap();
            let got = template.http2("https", seq, &mut new, &mut path).unwrap();
            assert_eq!(h2::wire(&got), h2::wire(&want), "seq {seq}");
            assert_eq!(old.u64(..), new.u64(..), "seq {seq}: the same draws");
        }
        let got = template.http2("https", 3, &mut new, &mut path).unwrap();
        let names: Vec<_> = got.fields.iter().map(|(n, _)| &n[..]).collect();
        assert_eq!(
            names,
            [
                &b":method"[..],
                b":scheme",
                b":authority",
                b":path",
                b"x-trace",
                b"accept",
                b"user-agent"
            ]
        );
        assert_eq!(&got.fields[2].1[..], b"virtual.example:8443");
        assert_eq!(&got.fields[4].1[..], b"padded\tvalue");
        assert!(
            std::str::from_utf8(&got.fields[3].1)
                .unwrap()
                .starts_with("/item/3?r=")
        );
        assert_eq!(got.body.as_deref(), Some(&br#"{"a":1}"#[..]));
        // A static template's request, and one without a body.
        for spec in [spec("GET", "/"), spec("POST", "/x"), spec("HEAD", "/{{a}}")] {
            let template = RequestTemplate::new(&target("http://h/"), &spec).unwrap();
            let want = h2::request_from_http1(template.static_bytes().unwrap(), "http").unwrap();
            let mut rng = fastrand::Rng::with_seed(0);
            let got = template.http2("http", 0, &mut rng, &mut path).unwrap();
            assert_eq!(h2::wire(&got), h2::wire(&want), "{spec:?}");
            assert_eq!(got.body, None);
        }
    }

    proptest! {
        #[test]
        fn written_requests_parse_back(
            prefix in "/[a-zA-Z0-9._~/-]{0,12}",
            query in "[a-z0-9=&]{0,8}",
            seqs in proptest::collection::vec(any::<u64>(), 1..8),
            body in proptest::option::of(proptest::collection::vec(any::<u8>(), 0..64)),
            keep_alive in any::<bool>(),
        ) {
            let path = format!("{prefix}{{seq}}/{{{{x}}}}?q={query}&s={{seq}}");
            let spec = RequestSpec {
                method: "POST".into(),
                path: path.clone(),
                headers: headers(&[("X-Test", "1")]),
                body: body.clone(),
                keep_alive,
            };
            let template = RequestTemplate::new(&target("http://h:8080/"), &spec).unwrap();
            let mut rng = fastrand::Rng::with_seed(0);
            for seq in seqs {
                let mut out = Vec::new();
                template.write(seq, &mut rng, &mut out);
                let mut parsed_headers = [httparse::EMPTY_HEADER; 8];
                let mut request = httparse::Request::new(&mut parsed_headers);
                let status = request.parse(&out).unwrap();
                let httparse::Status::Complete(head_len) = status else {
                    panic!("incomplete request");
                };
                let want = path.replace("{seq}", &seq.to_string()).replace("{{x}}", "{x}");
                prop_assert_eq!(request.path, Some(want.as_str()));
                prop_assert_eq!(request.method, Some("POST"));
                prop_assert_eq!(request.version, Some(1));
                let host = request.headers.iter().find(|h| h.name == "Host").unwrap();
                prop_assert_eq!(host.value, b"h:8080");
                let closes = request.headers.iter().any(|h| h.name == "Connection" && h.value == b"close");
                prop_assert_eq!(closes, !keep_alive);
                prop_assert_eq!(&out[head_len..], body.as_deref().unwrap_or_default());
            }
        }
    }
}
