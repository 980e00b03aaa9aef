//! A kept answer, read for a step's checks and extractions, and a virtual
//! user's cookies.
//!
//! The engine's parser frames answers without keeping them; for a step
//! that looks into its answer, the exchange also copies the answer's bytes
//! as they are consumed. They are read here once the answer is complete:
//! the head again by `httparse` (a complete head, so one pass), the body
//! de-chunked when it was sent chunked.

use std::borrow::Cow;

use super::{Extract, Source};

/// A complete answer's bytes, as sent: interim 1xx heads, the final head
/// and the body.
#[derive(Debug)]
pub struct Answer<'a> {
    headers: Vec<(&'a str, &'a [u8])>,
    body: Cow<'a, [u8]>,
}

impl<'a> Answer<'a> {
    /// Reads an answer the engine's parser has framed; `None` when it is
    /// not one (which the parser would have refused first).
    pub fn read(bytes: &'a [u8]) -> Option<Answer<'a>> {
        let mut rest = bytes;
        loop {
            // Stray empty lines before a head, as the parser skips them.
            let skip = rest
                .iter()
                .take_while(|&&b| b == b'\r' || b == b'\n')
                .count();
            rest = &rest[skip..];
            let mut fields = [httparse::EMPTY_HEADER; 64];
            let mut more: Vec<httparse::Header<'_>>;
            let mut head = httparse::Response::new(&mut fields);
            let parsed = match head.parse(rest) {
                // The engine's parser takes a head of any number of
                // fields: room for one a line of it.
                Err(httparse::Error::TooManyHeaders) => {
                    let end = rest
                        .windows(2)
                        .position(|w| w == b"\n\n" || w == b"\n\r")
                        .unwrap_or(rest.len());
                    more = vec![
                        httparse::EMPTY_HEADER;
                        rest[..end].iter().filter(|&&b| b == b'\n').count() + 1
                    ];
                    head = httparse::Response::new(&mut more);
                    head.parse(rest)
                }
                parsed => parsed,
            };
            let httparse::Status::Complete(len) = parsed.ok()? else {
                return None;
            };
            let code = head.code?;
            if (100..200).contains(&code) {
                rest = &rest[len..];
                continue;
            }
            let headers: Vec<(&str, &[u8])> =
                head.headers.iter().map(|h| (h.name, h.value)).collect();
            let body = &rest[len..];
            let chunked = headers.iter().any(|(n, v)| {
                n.eq_ignore_ascii_case("transfer-encoding")
                    && String::from_utf8_lossy(v)
                        .rsplit(',')
                        .next()
                        .is_some_and(|last| last.trim().eq_ignore_ascii_case("chunked"))
            });
            let body = if chunked {
                Cow::Owned(dechunk(body)?)
            } else {
                Cow::Borrowed(body)
            };
            let body = decode(&headers, body);
            return Some(Answer { headers, body });
        }
    }

    /// The body, de-chunked.
    pub fn body(&self) -> &[u8] {
        &self.body
    }

    /// The first header of this name (any case).
    pub fn header(&self, name: &str) -> Option<&'a [u8]> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|&(_, v)| v)
    }

    /// Every header of this name, in order.
    pub fn headers<'b>(&'b self, name: &'b str) -> impl Iterator<Item = &'a [u8]> + 'b {
        self.headers
            .iter()
            .filter(move |(n, _)| n.eq_ignore_ascii_case(name))
            .map(|&(_, v)| v)
    }

    /// Whether the body holds `needle`.
    pub fn contains(&self, needle: &[u8]) -> bool {
        needle.is_empty() || self.body.windows(needle.len()).any(|w| w == needle)
    }

    /// What `extract` finds, or `None`.
    pub fn extract(&self, extract: &Extract) -> Option<Box<[u8]>> {
        match &extract.from {
            Source::Header(name) => self.header(name).map(Into::into),
            Source::Regex(re) => {
                let caps = re.captures(&self.body)?;
                let m = caps.get(1).or_else(|| caps.get(0))?;
                Some(m.as_bytes().into())
            }
            Source::Json(pointer) => {
                let value: serde_json::Value = serde_json::from_slice(&self.body).ok()?;
                match value.pointer(pointer)? {
                    serde_json::Value::String(s) => Some(s.as_bytes().into()),
                    serde_json::Value::Null => None,
                    other => Some(other.to_string().into_bytes().into()),
                }
            }
        }
    }
}

/// The body as the server meant it: a gzip or deflate `Content-Encoding`
/// undone, so that a check or an extraction reads text, not compressed
/// bytes. Other codings (br, zstd), and a body that does not decode, stay
/// as they came.
fn decode<'a>(headers: &[(&str, &[u8])], body: Cow<'a, [u8]>) -> Cow<'a, [u8]> {
    use std::io::Read;
    let Some(coding) = headers
        .iter()
        .find(|(n, _)| n.eq_ignore_ascii_case("content-encoding"))
        .map(|(_, v)| String::from_utf8_lossy(v).trim().to_ascii_lowercase())
    else {
        return body;
    };
    // A bound on what a small body may inflate to (a "zip bomb").
    const MOST: u64 = 64 << 20;
    let mut out = Vec::with_capacity(body.len() * 4);
    let decoded = match coding.as_str() {
        "gzip" | "x-gzip" => flate2::read::MultiGzDecoder::new(&body[..])
            .take(MOST)
            .read_to_end(&mut out),
        // RFC 9110's deflate is zlib's format; some servers send it raw.
        "deflate" => flate2::read::ZlibDecoder::new(&body[..])
            .take(MOST)
            .read_to_end(&mut out)
            .or_else(|_| {
                out.clear();
                flate2::read::DeflateDecoder::new(&body[..])
                    .take(MOST)
                    .read_to_end(&mut out)
            }),
        _ => return body,
    };
    match decoded {
        Ok(_) => Cow::Owned(out),
        Err(_) => body,
    }
}

/// The data of a chunked body (chunk-size lines, extensions and trailers
/// dropped); `None` when it is not well-formed.
fn dechunk(mut body: &[u8]) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(body.len());
    loop {
        let eol = body.iter().position(|&b| b == b'\n')?;
        let line = std::str::from_utf8(&body[..eol]).ok()?;
        let size = line.split(';').next()?.trim();
        let size = usize::from_str_radix(size, 16).ok()?;
        body = &body[eol + 1..];
        if size == 0 {
            return Some(out);
        }
        out.extend_from_slice(body.get(..size)?);
        body = body.get(size..)?;
        let crlf = body
            .iter()
            .take(2)
            .take_while(|&&b| b == b'\r' || b == b'\n')
            .count();
        body = &body[crlf..];
    }
}

/// A virtual user's cookies: one target, so only names and values are
/// kept (no domain or path matching); a cookie set already expired
/// (`Max-Age` 0 or negative, or an `Expires` date in the past without a
/// `Max-Age`, as Express's `clearCookie` sends) is removed, as a server
/// logs a user out.
#[derive(Debug, Default, Clone)]
pub struct CookieJar {
    cookies: Vec<(String, String)>,
    /// The `Cookie` header's value, rebuilt when the jar changes.
    header: String,
}

/// Whether a `Set-Cookie` removes its cookie: `Max-Age` rules when both
/// are given (RFC 6265 §5.3 step 3).
fn gone(cookie: &cookie::Cookie<'_>) -> bool {
    if let Some(age) = cookie.max_age() {
        return age.whole_seconds() <= 0;
    }
    cookie.expires_datetime().is_some_and(|at| {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs() as i64);
        at.unix_timestamp() <= now
    })
}

impl CookieJar {
    /// Takes the answer's `Set-Cookie` headers.
    pub fn take(&mut self, answer: &Answer<'_>) {
        let mut changed = false;
        for set in answer.headers("set-cookie") {
            let text = String::from_utf8_lossy(set);
            // A header the parser refuses (no `=`, an empty name) is
            // ignored, as a browser ignores it (RFC 6265 §5.2).
            let Ok(cookie) = cookie::Cookie::parse(text.as_ref()) else {
                continue;
            };
            let (name, value) = cookie.name_value();
            if name.is_empty() {
                continue;
            }
            let expired = gone(&cookie);
            self.cookies.retain(|(n, _)| n != name);
            if !expired {
                self.cookies.push((name.to_owned(), value.to_owned()));
            }
            changed = true;
        }
        if changed {
            self.header = self
                .cookies
                .iter()
                .map(|(n, v)| format!("{n}={v}"))
                .collect::<Vec<_>>()
                .join("; ");
        }
    }

    /// The `Cookie` header's value, `None` while the jar is empty.
    pub fn header(&self) -> Option<&str> {
        (!self.cookies.is_empty()).then_some(self.header.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const CHUNKED: &[u8] = b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 201 Created\r\nTransfer-Encoding: chunked\r\nSet-Cookie: s=abc; Path=/\r\nSet-Cookie: t=1\r\nLocation: /m/9\r\n\r\n7;x=y\r\n{\"id\":9\r\n3\r\n,\"a\r\n6\r\n\":\"x\"}\r\n0\r\nTrailer: 1\r\n\r\n";

    #[test]
    fn an_answer_of_many_fields_is_read_whole() {
        // A web app's 71 fields, and a Location after them.
        let head = format!(
            "HTTP/1.1 302 Found\r\n{}Location: /next\r\nContent-Length: 2\r\n\r\nok",
            "X-Field: y\r\n".repeat(71)
        );
        let answer = Answer::read(head.as_bytes()).unwrap();
        assert_eq!(answer.header("location"), Some(&b"/next"[..]));
        assert_eq!(answer.body(), b"ok");
    }

    #[test]
    fn an_answer_is_read_past_interim_heads_and_its_chunks() {
        let answer = Answer::read(CHUNKED).unwrap();
        assert_eq!(answer.body(), br#"{"id":9,"a":"x"}"#);
        assert_eq!(answer.header("location"), Some(&b"/m/9"[..]));
        assert!(answer.contains(b"\"a\":\"x\""));
        assert!(!answer.contains(b"nothing"));
        let json = |p: &str| Extract {
            from: Source::Json(p.into()),
            slot: 0,
        };
        assert_eq!(answer.extract(&json("/id")).as_deref(), Some(&b"9"[..]));
        assert_eq!(answer.extract(&json("/a")).as_deref(), Some(&b"x"[..]));
        assert_eq!(answer.extract(&json("/none")), None);
        let re = Extract {
            from: Source::Regex(regex::bytes::Regex::new(r#""id":(\d+)"#).unwrap()),
            slot: 0,
        };
        assert_eq!(answer.extract(&re).as_deref(), Some(&b"9"[..]));
        let header = Extract {
            from: Source::Header("Location".into()),
            slot: 0,
        };
        assert_eq!(answer.extract(&header).as_deref(), Some(&b"/m/9"[..]));
        assert!(
            Answer::read(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n").is_none()
        );
    }

    #[test]
    fn gzip_and_deflate_bodies_are_read_decoded() {
        use std::io::Write;
        let text = br#"{"gzipped": true, "token": "t-1"}"#;
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        gz.write_all(text).unwrap();
        let gz = gz.finish().unwrap();
        let mut zl = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
        zl.write_all(text).unwrap();
        let zl = zl.finish().unwrap();
        for (coding, body) in [("gzip", &gz), ("deflate", &zl), ("GZIP", &gz)] {
            let mut bytes = format!(
                "HTTP/1.1 200 OK\r\nContent-Encoding: {coding}\r\nContent-Length: {}\r\n\r\n",
                body.len()
            )
            .into_bytes();
            bytes.extend_from_slice(body);
            let answer = Answer::read(&bytes).unwrap();
            assert_eq!(answer.body(), text, "{coding}");
            assert!(answer.contains(b"\"gzipped\": true"), "{coding}");
            let token = Extract {
                from: Source::Json("/token".into()),
                slot: 0,
            };
            assert_eq!(answer.extract(&token).as_deref(), Some(&b"t-1"[..]));
        }
        // A coding not decoded, or a body that does not decode, stays.
        let raw = b"HTTP/1.1 200 OK\r\nContent-Encoding: br\r\nContent-Length: 3\r\n\r\nabc";
        assert_eq!(Answer::read(raw).unwrap().body(), b"abc");
        let bad = b"HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nContent-Length: 3\r\n\r\nabc";
        assert_eq!(Answer::read(bad).unwrap().body(), b"abc");
    }

    #[test]
    fn the_jar_keeps_the_last_value_of_each_cookie_and_drops_expired_ones() {
        let mut jar = CookieJar::default();
        assert_eq!(jar.header(), None);
        jar.take(&Answer::read(CHUNKED).unwrap());
        assert_eq!(jar.header(), Some("s=abc; t=1"));
        let again = b"HTTP/1.1 200 OK\r\nSet-Cookie: s=new\r\nSet-Cookie: t=; Max-Age=0\r\nContent-Length: 0\r\n\r\n";
        jar.take(&Answer::read(again).unwrap());
        assert_eq!(jar.header(), Some("s=new"));
        // Expires in the past removes (Express's clearCookie), in either
        // date form; in the future it keeps; Max-Age rules over Expires.
        let dates = b"HTTP/1.1 200 OK\r\nSet-Cookie: a=1\r\nSet-Cookie: b=2\r\nSet-Cookie: c=3; Expires=Fri, 01 Jan 2100 00:00:00 GMT\r\nSet-Cookie: d=4; Max-Age=60; Expires=Thu, 01 Jan 1970 00:00:00 GMT\r\nContent-Length: 0\r\n\r\n";
        jar.take(&Answer::read(dates).unwrap());
        assert_eq!(jar.header(), Some("s=new; a=1; b=2; c=3; d=4"));
        let clear = b"HTTP/1.1 200 OK\r\nSet-Cookie: a=; Path=/; Expires=Thu, 01 Jan 1970 00:00:00 GMT\r\nSet-Cookie: b=; expires=Thursday, 01-Jan-70 00:00:01 GMT; Path=/\r\nContent-Length: 0\r\n\r\n";
        jar.take(&Answer::read(clear).unwrap());
        assert_eq!(jar.header(), Some("s=new; c=3; d=4"));
    }
}
