//! HTTP/2's rules for a request that dyno lays out as HTTP/1.1: the one
//! place that says what becomes of the method, the `Host` header and the
//! other header fields when a request goes out as HTTP/2 fields.
//!
//! Both compiled requests use it: a [`RequestTemplate`](super::RequestTemplate)
//! applies it once, when it is encoded (only its path changes per request),
//! and a scenario step's `Text` applies the name rules once and the value
//! rules to each filled value. Neither writes HTTP/1.1 bytes to parse them
//! back per request.

use bytes::Bytes;

use crate::http2::{Field, Request};

/// Header fields HTTP/2 forbids (RFC 9113 §8.2.2): the connection's
/// business, which HTTP/2 does itself. `Host` becomes `:authority`.
pub(crate) fn connection_specific(name: &str) -> bool {
    [
        "host",
        "connection",
        "keep-alive",
        "proxy-connection",
        "transfer-encoding",
        "upgrade",
    ]
    .iter()
    .any(|n| name.eq_ignore_ascii_case(n))
}

/// What a header field of the HTTP/1.1 layout becomes in HTTP/2.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Header {
    /// `Host`: its value is the `:authority` pseudo-field.
    Authority,
    /// A connection-specific field, not sent.
    Dropped,
    /// A field sent under this name, in lower case as HTTP/2 requires
    /// (RFC 9113 §8.2.1).
    Field(Box<[u8]>),
}

impl Header {
    /// The rule for the field `name`; an error when it is no field name.
    pub(crate) fn of(name: &str) -> Result<Header, String> {
        if name.eq_ignore_ascii_case("host") {
            return Ok(Header::Authority);
        }
        if connection_specific(name) {
            return Ok(Header::Dropped);
        }
        let name = http::HeaderName::from_bytes(name.to_ascii_lowercase().as_bytes())
            .map_err(|e| e.to_string())?;
        Ok(Header::Field(name.as_str().as_bytes().into()))
    }
}

/// The method, if HTTP/2 can carry it.
pub(crate) fn check_method(method: &str) -> Result<(), String> {
    http::Method::from_bytes(method.as_bytes())
        .map(drop)
        .map_err(|e| e.to_string())
}

/// A header value as HTTP/2 sends it: text, without the whitespace around
/// it. A field's value must be a valid field value (no control bytes but
/// tab); the authority's is taken as it is.
pub(crate) fn value<'a>(raw: &'a [u8], header: &Header) -> Result<&'a [u8], String> {
    let text = std::str::from_utf8(raw).map_err(|e| e.to_string())?;
    let text = text.trim();
    if let Header::Field(_) = header {
        http::HeaderValue::from_str(text).map_err(|e| e.to_string())?;
    }
    Ok(text.as_bytes())
}

/// The fields of one request as they are built: the pseudo-fields first
/// (`:method`, `:scheme`, `:authority`, `:path`), then the others in the
/// order they are pushed.
pub(crate) struct Fields(Vec<Field>);

impl Fields {
    /// Starts a request of `method` and `scheme` with room for `headers`
    /// more fields; the authority and the path are empty until set.
    pub(crate) fn new(method: &[u8], scheme: &str, headers: usize) -> Fields {
        let mut fields = Vec::with_capacity(4 + headers);
        fields.push((b":method"[..].into(), method.into()));
        fields.push((b":scheme"[..].into(), scheme.as_bytes().into()));
        fields.push((b":authority"[..].into(), Box::default()));
        fields.push((b":path"[..].into(), Box::default()));
        Fields(fields)
    }

    pub(crate) fn authority(&mut self, value: &[u8]) {
        self.0[2].1 = value.into();
    }

    pub(crate) fn path(&mut self, value: &[u8]) {
        self.0[3].1 = value.into();
    }

    /// Appends the field `name` (lower case already).
    pub(crate) fn push(&mut self, name: &[u8], value: &[u8]) {
        self.0.push((name.into(), value.into()));
    }

    /// Adds a header by its rule: a field is appended, `Host` sets the
    /// authority, a dropped one is left out.
    pub(crate) fn add(&mut self, header: &Header, value: &[u8]) {
        match header {
            Header::Authority => self.authority(value),
            Header::Dropped => {}
            Header::Field(name) => self.push(name, value),
        }
    }

    /// The request, with `body` (none when empty: the HEADERS frame ends
    /// the stream).
    pub(crate) fn request(self, body: Option<Bytes>) -> Request {
        Request {
            plain: self.0.iter().map(|(n, v)| (n.len() + v.len()) as u64).sum(),
            fields: self.0,
            body: body.filter(|b| !b.is_empty()),
            key: None,
        }
    }
}

/// The HTTP/2 request that an HTTP/1.1 request's bytes describe: the route
/// requests took before they were built directly (write the HTTP/1.1 bytes,
/// parse them back), kept as the reference the direct route is tested
/// against.
#[cfg(test)]
pub(crate) fn request_from_http1(bytes: &[u8], scheme: &str) -> Result<Request, String> {
    let head_end = bytes
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .ok_or("the request has no end of head")?;
    let head = std::str::from_utf8(&bytes[..head_end]).map_err(|e| e.to_string())?;
    let mut lines = head.split("\r\n");
    let request_line = lines.next().unwrap_or_default();
    let mut parts = request_line.split(' ');
    let method = parts.next().unwrap_or_default();
    let path = parts.next().unwrap_or("/");
    http::Method::from_bytes(method.as_bytes()).map_err(|e| e.to_string())?;
    let field = |n: &str, v: &str| -> Field { (n.as_bytes().into(), v.as_bytes().into()) };
    let mut fields = vec![
        field(":method", method),
        field(":scheme", scheme),
        field(":authority", ""),
        field(":path", path),
    ];
    for line in lines {
        let Some((name, value)) = line.split_once(':') else {
            continue;
        };
        let value = value.trim();
        if name.eq_ignore_ascii_case("host") {
            fields[2].1 = value.as_bytes().into();
            continue;
        }
        if connection_specific(name) {
            continue;
        }
        let name = http::HeaderName::from_bytes(name.to_ascii_lowercase().as_bytes())
            .map_err(|e| e.to_string())?;
        http::HeaderValue::from_str(value).map_err(|e| e.to_string())?;
        fields.push(field(name.as_str(), value));
    }
    let body = &bytes[head_end + 4..];
    Ok(Request {
        plain: fields.iter().map(|(n, v)| (n.len() + v.len()) as u64).sum(),
        fields,
        body: (!body.is_empty()).then(|| Bytes::copy_from_slice(body)),
        key: None,
    })
}

/// The parts of two requests that say what goes on the wire, to compare.
#[cfg(test)]
pub(crate) fn wire(r: &Request) -> (&[Field], Option<&Bytes>, u64, Option<usize>) {
    (&r.fields, r.body.as_ref(), r.plain, r.key)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_becomes_the_authority_and_connection_fields_are_dropped() {
        assert_eq!(Header::of("HOST"), Ok(Header::Authority));
        for name in [
            "Connection",
            "keep-alive",
            "Proxy-Connection",
            "Transfer-Encoding",
            "UPGRADE",
        ] {
            assert_eq!(Header::of(name), Ok(Header::Dropped), "{name}");
        }
        assert_eq!(
            Header::of("X-Trace-ID"),
            Ok(Header::Field(b"x-trace-id"[..].into()))
        );
        assert_eq!(
            Header::of("Content-Length"),
            Ok(Header::Field(b"content-length"[..].into()))
        );
        assert!(Header::of("bad name").is_err());
    }

    #[test]
    fn values_are_trimmed_text_and_fields_are_checked() {
        let field = Header::Field(b"x"[..].into());
        assert_eq!(value(b"  a b\t", &field), Ok(&b"a b"[..]));
        assert!(value(b"a\x01b", &field).is_err());
        assert!(value(b"\xff", &field).is_err());
        // The authority is taken as it is, but for its whitespace.
        assert_eq!(value(b" h\x01 ", &Header::Authority), Ok(&b"h\x01"[..]));
        assert!(value(b"\xc3", &Header::Authority).is_err());
        assert!(check_method("PURGE").is_ok());
        assert!(check_method("G T").is_err());
    }

    #[test]
    fn fields_put_the_pseudo_fields_first_and_an_empty_body_is_none() {
        let mut fields = Fields::new(b"POST", "https", 1);
        fields.push(b"content-length", b"0");
        fields.path(b"/a");
        fields.authority(b"h:1");
        let request = fields.request(Some(Bytes::new()));
        let reference = request_from_http1(
            b"POST /a HTTP/1.1\r\nHost: h:1\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
            "https",
        )
        .unwrap();
        assert_eq!(wire(&request), wire(&reference));
        assert_eq!(request.body, None);
        assert_eq!(
            request.plain,
            (7 + 4 + 7 + 5 + 10 + 3 + 5 + 2 + 14 + 1) as u64
        );
    }
}
