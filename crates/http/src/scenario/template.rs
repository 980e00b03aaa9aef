//! A step's request, compiled once: literal bytes and slots.
//!
//! The text of a URL, a header value or a body may hold `${name}` (a
//! variable: a data column or an extracted value), `${vu}` (the virtual
//! user's number), `${iter}` (its flow count), `${seq}` (the request's
//! number) and `${rand:MIN-MAX}`; `$$` is a literal `$`. The request is laid
//! out as `dyno http` lays out its own (Host first, the user's headers,
//! Content-Length, Cookie, User-Agent), so a step with nothing to fill is
//! encoded whole, once, and sent as it is.
//!
//! For HTTP/2 the same layout is kept as fields, their names turned by
//! `request::h2`'s rules once; [`Text::http2`] fills the values in the
//! order [`Text::write`] does (the same draws, the same refusals) and
//! applies the value rules to them, without HTTP/1.1 bytes between.

use std::fmt;

use bytes::Bytes;

use crate::http2;
use crate::request::Target;
use crate::request::h2::{self, Header};
use crate::request::push_decimal;

/// The `User-Agent` sent unless a step gives one.
const USER_AGENT: &str = concat!("dyno/", env!("CARGO_PKG_VERSION"));

/// A part of a request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Piece {
    Lit(Box<[u8]>),
    /// A variable's value. In the URL it is percent-encoded for where it
    /// goes (a path segment, a query component, or raw); in a header a
    /// value with a line break fails the step.
    Var {
        slot: usize,
        place: Place,
    },
    /// A step's whole URL is a variable (`url = "${loc}"`, an extracted
    /// Location): a path, or a full URL on `origin` (the scenario's
    /// server), whose origin is dropped; a URL on another server fails
    /// the step.
    Target {
        slot: usize,
        origin: Box<[u8]>,
    },
    Builtin(Builtin),
}

/// A value dyno knows itself: `${vu}`, `${iter}`, `${seq}`,
/// `${rand:MIN-MAX}`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Builtin {
    Vu,
    Iter,
    Seq,
    Rand { min: u64, max: u64 },
}

/// Where a value goes, which says how it is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Place {
    /// The URL, as [`parse`] is given it: each value there is a
    /// [`Place::Path`] or a [`Place::Query`] by where it stands.
    Url,
    /// The path: all but `?#%`, spaces and the like is kept.
    Path,
    /// A query component: only what `encodeURIComponent` keeps, so `&`,
    /// `=`, `+` and `#` in a value stay in it.
    Query,
    /// `${raw:name}` in the URL: kept as it is but for what a request line
    /// cannot hold (spaces, control bytes).
    Raw,
    Header,
    Body,
}

/// A step's request: the head up to its own headers, the body, and what
/// ends the head. `whole` holds the bytes of a request with nothing to fill.
#[derive(Clone, PartialEq, Eq)]
pub(crate) struct Text {
    head: Vec<Piece>,
    body: Option<Vec<Piece>>,
    /// Whether the step gave its own Content-Length or Transfer-Encoding.
    framed: bool,
    tail: Box<[u8]>,
    whole: Option<Box<[u8]>>,
    h2: Http2,
}

/// A step's request as HTTP/2 fields: what [`Text::http2`] fills.
#[derive(Clone, PartialEq, Eq)]
struct Http2 {
    method: Box<[u8]>,
    path: Vec<Piece>,
    authority: Vec<Piece>,
    /// The step's headers but `Host`, in order, each with its rule: a
    /// dropped one is filled all the same (its values are drawn and
    /// checked as for HTTP/1.1) and left out.
    headers: Vec<(Header, Vec<Piece>)>,
    /// The fields dyno adds after them, in order.
    added: Vec<(Header, Added)>,
    /// Why HTTP/2 cannot carry the request whatever fills it (its method
    /// or a header's name).
    refused: Option<String>,
}

/// A field dyno adds to a step's request.
#[derive(Clone, PartialEq, Eq)]
enum Added {
    /// The body's length.
    ContentLength,
    /// The virtual user's cookies, when it has some.
    Cookie,
    Fixed(Box<[u8]>),
}

/// Why a step's request cannot be sent over HTTP/2.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Refused {
    /// A value cannot go where the step puts it (as for HTTP/1.1).
    Unsendable(Unsendable),
    /// HTTP/2 cannot carry the request as filled.
    Http2(String),
}

impl From<Unsendable> for Refused {
    fn from(u: Unsendable) -> Refused {
        Refused::Unsendable(u)
    }
}

impl fmt::Debug for Text {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Text")
            .field(
                "pieces",
                &(self.head.len() + self.body.as_ref().map_or(0, Vec::len)),
            )
            .field("whole", &self.whole.is_some())
            .finish()
    }
}

/// What fills a request's slots.
pub(crate) struct Fill<'a> {
    pub values: &'a [Option<Box<[u8]>>],
    pub vu: u64,
    pub iter: u64,
    pub seq: u64,
    pub rng: &'a mut fastrand::Rng,
    /// The `Cookie` header's value, when the virtual user has cookies.
    pub cookie: Option<&'a str>,
}

/// Why a request could not be filled: a variable's value cannot go where
/// the step puts it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Unsendable {
    pub slot: usize,
}

impl Text {
    /// Lays a request out. `path` (the path and query), the header values
    /// and the body are pieces already parsed by [`parse`].
    pub(crate) fn new(
        target: &Target,
        method: &str,
        path: Vec<Piece>,
        headers: Vec<(String, Vec<Piece>)>,
        body: Option<Vec<Piece>>,
    ) -> Text {
        // A POST without a body still says `Content-Length: 0`.
        let body = body.or_else(|| crate::request::sends_content(method).then(Vec::new));
        let mut h2 = Http2 {
            method: method.as_bytes().into(),
            path: merge(path.clone()),
            authority: Vec::new(),
            headers: Vec::with_capacity(headers.len()),
            added: Vec::new(),
            refused: h2::check_method(method).err(),
        };
        let mut head = vec![Piece::Lit(format!("{method} ").into_bytes().into())];
        head.extend(path);
        let host = headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case("host"))
            .map(|(_, v)| v.clone());
        head.push(Piece::Lit(b" HTTP/1.1\r\nHost: ".to_vec().into()));
        let host = host.unwrap_or_else(|| vec![Piece::Lit(target.authority.as_bytes().into())]);
        h2.authority = merge(host.clone());
        head.extend(host);
        head.push(Piece::Lit(b"\r\n".to_vec().into()));
        let mut user_agent = false;
        let mut framed = false;
        for (name, value) in headers {
            if name.eq_ignore_ascii_case("host") {
                continue;
            }
            user_agent |= name.eq_ignore_ascii_case("user-agent");
            framed |= name.eq_ignore_ascii_case("content-length")
                || name.eq_ignore_ascii_case("transfer-encoding");
            head.push(Piece::Lit(format!("{name}: ").into_bytes().into()));
            head.extend(value.iter().cloned());
            head.push(Piece::Lit(b"\r\n".to_vec().into()));
            let header = h2.rule(&name);
            h2.headers.push((header, merge(value)));
        }
        let mut added = vec![];
        if body.is_some() && !framed {
            added.push(("Content-Length", Added::ContentLength));
        }
        added.push(("Cookie", Added::Cookie));
        let mut tail = Vec::new();
        if !user_agent {
            tail.extend_from_slice(format!("User-Agent: {USER_AGENT}\r\n").as_bytes());
            added.push(("User-Agent", Added::Fixed(USER_AGENT.as_bytes().into())));
        }
        tail.extend_from_slice(b"\r\n");
        for (name, what) in added {
            let header = h2.rule(name);
            h2.added.push((header, what));
        }
        let mut text = Text {
            head: merge(head),
            body: body.map(merge),
            framed,
            tail: tail.into(),
            whole: None,
            h2,
        };
        let fixed = text.head.iter().all(|p| matches!(p, Piece::Lit(_)))
            && text
                .body
                .iter()
                .flatten()
                .all(|p| matches!(p, Piece::Lit(_)));
        if fixed {
            let mut bytes = Vec::new();
            let mut scratch = Vec::new();
            let mut rng = fastrand::Rng::with_seed(0);
            let mut fill = Fill {
                values: &[],
                vu: 0,
                iter: 0,
                seq: 0,
                rng: &mut rng,
                cookie: None,
            };
            text.write(&mut fill, &mut bytes, &mut scratch)
                .expect("a request with nothing to fill is always sendable");
            text.whole = Some(bytes.into());
        }
        text
    }

    /// Request for HTTP/2 with `scheme`, filled as [`Text::write`] fills
    /// it: the same values in the same order (the same draws from the
    /// generator), refused where it refuses. `out` and `scratch` are the
    /// buffers the values and the body are filled in.
    ///
    /// Allocates the fields and the body it returns, and nothing else.
    pub(crate) fn http2(
        &self,
        fill: &mut Fill<'_>,
        scheme: &str,
        out: &mut Vec<u8>,
        scratch: &mut Vec<u8>,
    ) -> Result<http2::Request, Refused> {
        let h2 = &self.h2;
        let mut fields = h2::Fields::new(&h2.method, scheme, h2.headers.len() + h2.added.len());
        // The first value HTTP/2 cannot carry; the rest are filled all the
        // same, since a refusal of theirs comes first.
        let mut bad = None;
        fill_into(&h2.path, fill, out)?;
        match std::str::from_utf8(out) {
            Ok(path) => fields.path(path.as_bytes()),
            Err(e) => bad = Some(e.to_string()),
        }
        fill_into(&h2.authority, fill, out)?;
        match h2::value(out, &Header::Authority) {
            Ok(value) => fields.authority(value),
            Err(e) => bad = bad.or(Some(e)),
        }
        for (header, pieces) in &h2.headers {
            fill_into(pieces, fill, out)?;
            match h2::value(out, header) {
                Ok(value) => fields.add(header, value),
                Err(e) => bad = bad.or(Some(e)),
            }
        }
        if let Some(body) = &self.body {
            fill_into(body, fill, scratch)?;
        }
        for (header, what) in &h2.added {
            out.clear();
            match what {
                Added::ContentLength => push_decimal(out, scratch.len() as u64),
                Added::Cookie => match fill.cookie {
                    Some(cookie) => out.extend_from_slice(cookie.as_bytes()),
                    None => continue,
                },
                Added::Fixed(value) => out.extend_from_slice(value),
            }
            match h2::value(out, header) {
                Ok(value) => fields.add(header, value),
                Err(e) => bad = bad.or(Some(e)),
            }
        }
        if let Some(why) = h2.refused.as_ref().or(bad.as_ref()) {
            return Err(Refused::Http2(why.clone()));
        }
        let body = self.body.as_ref().map(|_| Bytes::copy_from_slice(scratch));
        Ok(fields.request(body))
    }

    /// The variables whose values go into a header of this request.
    pub(crate) fn header_slots(&self) -> impl Iterator<Item = usize> + '_ {
        self.head.iter().filter_map(|p| match p {
            Piece::Var {
                slot,
                place: Place::Header,
            } => Some(*slot),
            _ => None,
        })
    }

    /// The bytes of a request with nothing to fill, sent without a copy
    /// unless cookies must go with it.
    pub(crate) fn whole(&self) -> Option<&[u8]> {
        self.whole.as_deref()
    }

    /// Writes the request into `out` (cleared first), using `scratch` for
    /// the body, whose length comes before it.
    pub(crate) fn write(
        &self,
        fill: &mut Fill<'_>,
        out: &mut Vec<u8>,
        scratch: &mut Vec<u8>,
    ) -> Result<(), Unsendable> {
        out.clear();
        for piece in &self.head {
            put(piece, fill, out)?;
        }
        if let Some(body) = &self.body {
            scratch.clear();
            for piece in body {
                put(piece, fill, scratch)?;
            }
            if !self.framed {
                out.extend_from_slice(b"Content-Length: ");
                push_decimal(out, scratch.len() as u64);
                out.extend_from_slice(b"\r\n");
            }
        }
        if let Some(cookie) = fill.cookie {
            out.extend_from_slice(b"Cookie: ");
            out.extend_from_slice(cookie.as_bytes());
            out.extend_from_slice(b"\r\n");
        }
        out.extend_from_slice(&self.tail);
        if self.body.is_some() {
            out.extend_from_slice(scratch);
        }
        Ok(())
    }
}

impl Http2 {
    /// The rule for the header `name`; one that is no field name refuses
    /// the request.
    fn rule(&mut self, name: &str) -> Header {
        Header::of(name).unwrap_or_else(|why| {
            self.refused.get_or_insert(why);
            Header::Dropped
        })
    }
}

/// Fills `pieces` into `out`, cleared first.
fn fill_into(pieces: &[Piece], fill: &mut Fill<'_>, out: &mut Vec<u8>) -> Result<(), Unsendable> {
    out.clear();
    for piece in pieces {
        put(piece, fill, out)?;
    }
    Ok(())
}

/// Writes `pieces` (a template of the body's kind: a check's text) into
/// `out`, cleared first.
pub(crate) fn render(pieces: &[Piece], fill: &mut Fill<'_>, out: &mut Vec<u8>) {
    out.clear();
    for piece in pieces {
        put(piece, fill, out).expect("a body's values always go in");
    }
}

/// Joins neighbouring literals, so that a request is as few copies as it
/// has slots.
fn merge(pieces: Vec<Piece>) -> Vec<Piece> {
    let mut out: Vec<Piece> = Vec::with_capacity(pieces.len());
    for piece in pieces {
        match (out.last_mut(), piece) {
            (Some(Piece::Lit(a)), Piece::Lit(b)) => {
                let mut joined = a.to_vec();
                joined.extend_from_slice(&b);
                *a = joined.into();
            }
            (_, piece) => out.push(piece),
        }
    }
    out
}

/// Whether `value` can go into a header value: no line break (CR, LF),
/// which would end the header, and no NUL (RFC 9110 §5.5).
pub(crate) fn fits_a_header(value: &[u8]) -> bool {
    !value.iter().any(|&b| b == b'\r' || b == b'\n' || b == 0)
}

fn put(piece: &Piece, fill: &mut Fill<'_>, out: &mut Vec<u8>) -> Result<(), Unsendable> {
    match piece {
        Piece::Lit(bytes) => out.extend_from_slice(bytes),
        Piece::Builtin(builtin) => push_decimal(
            out,
            match *builtin {
                Builtin::Vu => fill.vu,
                Builtin::Iter => fill.iter,
                Builtin::Seq => fill.seq,
                Builtin::Rand { min, max } => fill.rng.u64(min..=max),
            },
        ),
        Piece::Var { slot, place } => {
            let value = fill.values[*slot].as_deref().unwrap_or_default();
            match place {
                Place::Body => out.extend_from_slice(value),
                Place::Header => {
                    if !fits_a_header(value) {
                        return Err(Unsendable { slot: *slot });
                    }
                    out.extend_from_slice(value);
                }
                Place::Path | Place::Url => encode(value, path_safe, out),
                Place::Query => encode(value, query_safe, out),
                Place::Raw => encode(value, raw_safe, out),
            }
        }
        Piece::Target { slot, origin } => {
            let value = fill.values[*slot].as_deref().unwrap_or_default();
            let path = match value.strip_prefix(&origin[..]) {
                Some(rest) if rest.is_empty() || rest.starts_with(b"/") => rest,
                _ if value.starts_with(b"http://") || value.starts_with(b"https://") => {
                    return Err(Unsendable { slot: *slot });
                }
                _ => value,
            };
            if !path.starts_with(b"/") {
                out.push(b'/');
            }
            encode(path, raw_safe, out);
        }
    }
    Ok(())
}

/// `value` into `out`, each byte `keep` refuses percent-encoded.
fn encode(value: &[u8], keep: fn(u8) -> bool, out: &mut Vec<u8>) {
    const HEX: &[u8; 16] = b"0123456789ABCDEF";
    for &b in value {
        if keep(b) {
            out.push(b);
        } else {
            out.extend_from_slice(&[b'%', HEX[usize::from(b >> 4)], HEX[usize::from(b & 15)]]);
        }
    }
}

/// RFC 3986's unreserved bytes: kept everywhere.
fn unreserved(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~')
}

/// Bytes a value keeps in the path (RFC 3986 `pchar` and `/`, so an
/// extracted path goes as a path): `?`, `#` and `%` are encoded, so a
/// value stays in the path.
fn path_safe(b: u8) -> bool {
    unreserved(b) || b"!$&'()*+,;=:@/".contains(&b)
}

/// Bytes a value keeps in a query component: those `encodeURIComponent`
/// keeps. `&`, `=`, `+` (a space to form decoders) and `#` are encoded.
fn query_safe(b: u8) -> bool {
    unreserved(b) || b"!'()*".contains(&b)
}

/// Bytes a raw value keeps: all a request target may hold as it is
/// (`%` too, so a value encoded already goes as it is).
fn raw_safe(b: u8) -> bool {
    b.is_ascii_graphic()
        && !matches!(
            b,
            b'"' | b'<' | b'>' | b'\\' | b'^' | b'`' | b'{' | b'|' | b'}'
        )
}

/// A name in `${…}`: a built-in or a variable.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Name<'a> {
    Builtin(Builtin),
    Variable(&'a str),
    /// `${raw:name}`: a variable put into the URL as it is.
    Raw(&'a str),
}

/// Splits `text` into literals and `${…}` names; `resolve` turns a
/// variable's name into its slot or says why it cannot be used there.
/// Errors carry the byte offset in `text` where the problem is.
pub(crate) fn parse(
    text: &str,
    place: Place,
    resolve: &mut dyn FnMut(&str) -> Result<usize, String>,
) -> Result<Vec<Piece>, (usize, String)> {
    let mut pieces = Vec::new();
    let mut lit = Vec::new();
    let bytes = text.as_bytes();
    let mut i = 0;
    // In the URL, past a `?` a value is a query component.
    let mut in_query = false;
    while i < bytes.len() {
        match (bytes[i], bytes.get(i + 1)) {
            (b'$', Some(b'$')) => {
                lit.push(b'$');
                i += 2;
            }
            (b'$', Some(b'{')) => {
                let Some(len) = text[i + 2..].find('}') else {
                    return Err((
                        i,
                        "`${` is not closed: write `${name}`, or `$$` for a literal `$`".into(),
                    ));
                };
                let inner = &text[i + 2..i + 2 + len];
                let name = name(inner).map_err(|m| (i, m))?;
                if !lit.is_empty() {
                    pieces.push(Piece::Lit(std::mem::take(&mut lit).into()));
                }
                pieces.push(match name {
                    Name::Builtin(builtin) => Piece::Builtin(builtin),
                    Name::Variable(v) => Piece::Var {
                        slot: resolve(v).map_err(|m| (i, m))?,
                        place: match place {
                            Place::Url if in_query => Place::Query,
                            Place::Url => Place::Path,
                            other => other,
                        },
                    },
                    Name::Raw(v) => Piece::Var {
                        slot: resolve(v).map_err(|m| (i, m))?,
                        place: match place {
                            Place::Url => Place::Raw,
                            other => other,
                        },
                    },
                });
                i += len + 3;
            }
            (b, _) => {
                in_query |= b == b'?';
                lit.push(b);
                i += 1;
            }
        }
    }
    if !lit.is_empty() {
        pieces.push(Piece::Lit(lit.into()));
    }
    Ok(pieces)
}

/// What is inside `${…}`.
fn name(inner: &str) -> Result<Name<'_>, String> {
    match inner {
        "vu" => return Ok(Name::Builtin(Builtin::Vu)),
        "iter" => return Ok(Name::Builtin(Builtin::Iter)),
        "seq" => return Ok(Name::Builtin(Builtin::Seq)),
        _ => {}
    }
    if let Some(range) = inner.strip_prefix("rand:") {
        let bad = || {
            format!(
                "`${{{inner}}}`: write a range of integers as `${{rand:MIN-MAX}}`, e.g. `${{rand:1-100}}`"
            )
        };
        let (min, max) = range.split_once('-').ok_or_else(bad)?;
        let (min, max) = (
            min.trim().parse::<u64>().map_err(|_| bad())?,
            max.trim().parse::<u64>().map_err(|_| bad())?,
        );
        if min > max {
            return Err(bad());
        }
        return Ok(Name::Builtin(Builtin::Rand { min, max }));
    }
    if let Some(raw) = inner.strip_prefix("raw:")
        && is_name(raw)
    {
        return Ok(Name::Raw(raw));
    }
    if is_name(inner) {
        Ok(Name::Variable(inner))
    } else {
        Err(format!(
            "`${{{inner}}}` is not a variable: names are letters, digits and `_`, not starting with a digit; the built-ins are vu, iter, seq and rand:MIN-MAX"
        ))
    }
}

/// A variable's name: letters, digits and `_`, not starting with a digit.
pub(crate) fn is_name(s: &str) -> bool {
    let mut chars = s.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::request::{h2, parse_url};

    fn pieces(text: &str, place: Place) -> Vec<Piece> {
        parse(text, place, &mut |n| match n {
            "id" | "p" => Ok(0),
            "name" | "q" => Ok(1),
            other => Err(format!("unknown {other}")),
        })
        .unwrap()
    }

    /// A GET of `url` on `target`, no headers, no body.
    fn get(target: &Target, url: Vec<Piece>) -> Text {
        Text::new(target, "GET", url, vec![], None)
    }

    /// What a request is filled from: `values`, for virtual user 0 in its
    /// first iteration, without cookies.
    fn fill_from<'a>(values: &'a [Option<Box<[u8]>>], rng: &'a mut fastrand::Rng) -> Fill<'a> {
        Fill {
            values,
            vu: 0,
            iter: 0,
            seq: 0,
            rng,
            cookie: None,
        }
    }

    #[test]
    fn a_request_with_nothing_to_fill_is_encoded_once_as_dyno_http_encodes_it() {
        let (target, _) = parse_url("http://127.0.0.1:8080/").unwrap();
        let text = Text::new(&target, "GET", pieces("/hello", Place::Url), vec![], None);
        let spec = crate::request::RequestSpec {
            path: "/hello".into(),
            ..Default::default()
        };
        let template = crate::request::RequestTemplate::new(&target, &spec).unwrap();
        assert_eq!(text.whole(), template.static_bytes());
        // A POST without a body: both say Content-Length: 0.
        let text = Text::new(&target, "POST", pieces("/hello", Place::Url), vec![], None);
        let spec = crate::request::RequestSpec {
            method: "POST".into(),
            ..spec
        };
        let template = crate::request::RequestTemplate::new(&target, &spec).unwrap();
        assert_eq!(text.whole(), template.static_bytes());
        let bytes = String::from_utf8_lossy(text.whole().unwrap()).into_owned();
        assert!(bytes.contains("\r\nContent-Length: 0\r\n"), "{bytes}");
    }

    #[test]
    fn values_are_encoded_for_where_they_go() {
        let (target, _) = parse_url("http://h/").unwrap();
        let text = Text::new(
            &target,
            "PUT",
            pieces("/m/${id}?n=${name}&v=${vu}", Place::Url),
            vec![("X-Name".into(), pieces("${name}", Place::Header))],
            Some(pieces(r#"{"n":"${name}","i":${iter},"$$":1}"#, Place::Body)),
        );
        assert!(text.whole().is_none());
        let values = vec![Some(b"42".to_vec().into()), Some(b"a b".to_vec().into())];
        let mut rng = fastrand::Rng::with_seed(1);
        let (mut out, mut scratch) = (Vec::new(), Vec::new());
        let mut fill = Fill {
            vu: 7,
            iter: 3,
            cookie: Some("s=1"),
            ..fill_from(&values, &mut rng)
        };
        text.write(&mut fill, &mut out, &mut scratch).unwrap();
        let body = r#"{"n":"a b","i":3,"$":1}"#;
        assert_eq!(
            String::from_utf8(out).unwrap(),
            format!(
                "PUT /m/42?n=a%20b&v=7 HTTP/1.1\r\nHost: h\r\nX-Name: a b\r\nContent-Length: {}\r\nCookie: s=1\r\nUser-Agent: {USER_AGENT}\r\n\r\n{body}",
                body.len()
            )
        );
        let broken = vec![
            Some(b"1".to_vec().into()),
            Some(b"a\r\nX: y".to_vec().into()),
        ];
        fill.values = &broken;
        assert_eq!(
            text.write(&mut fill, &mut Vec::new(), &mut scratch),
            Err(Unsendable { slot: 1 })
        );
    }

    /// The HTTP/2 request filled directly equals the one the HTTP/1.1
    /// bytes parse back to (the route taken before): the same values in
    /// the same places, the same draws, the same refusals.
    #[test]
    fn http2_requests_are_the_http1_requests_parsed_back() {
        let (target, _) = parse_url("https://h:8443/").unwrap();
        let header = |name: &str, text: &str| (name.to_owned(), pieces(text, Place::Header));
        let text = Text::new(
            &target,
            "POST",
            pieces("/m/${id}/${seq}?n=${name}&r=${rand:1-99999}", Place::Url),
            vec![
                header("X-Name", " ${name}-${rand:1-99999} "),
                header("Connection", "${id}"),
                header("HOST", "${id}.example"),
                header("Accept", "*/*"),
            ],
            Some(pieces(
                r#"{"n":"${name}","s":${seq},"r":${rand:1-9}}"#,
                Place::Body,
            )),
        );
        let mut old = fastrand::Rng::with_seed(5);
        let mut new = fastrand::Rng::with_seed(5);
        let (mut bytes, mut out, mut scratch) = (Vec::new(), Vec::new(), Vec::new());
        let values = vec![Some(b"42".to_vec().into()), Some(b"a b".to_vec().into())];
        // A control byte in `Host` and `Connection` goes (as it went), in
        // another field it does not.
        let odd = vec![Some(b"4\x012".to_vec().into()), Some(b"a".to_vec().into())];
        let broken = vec![Some(b"4".to_vec().into()), Some(b"a\x01".to_vec().into())];
        let unsendable = vec![Some(b"4\n2".to_vec().into()), Some(b"a".to_vec().into())];
        for (seq, values, cookie, outcome) in [
            (0, &values, None, "sent"),
            (1, &values, Some("s=1; t=2"), "sent"),
            (76, &odd, None, "sent"),
            (77, &broken, None, "refused"),
            (78, &unsendable, Some("s=1"), "unsendable"),
            (u64::MAX, &values, Some("bad\x01cookie"), "refused"),
            (9, &values, None, "sent"),
        ] {
            let fill = |rng| Fill {
                seq,
                cookie,
                ..fill_from(values, rng)
            };
            let want = text
                .write(&mut fill(&mut old), &mut bytes, &mut scratch)
                .map(|()| h2::request_from_http1(&bytes, "https"));
            let got = text.http2(&mut fill(&mut new), "https", &mut out, &mut scratch);
            let got = match (got, want) {
                (Ok(got), Ok(Ok(want))) => {
                    assert_eq!(h2::wire(&got), h2::wire(&want), "seq {seq}");
                    "sent"
                }
                (Err(Refused::Http2(_)), Ok(Err(_))) => "refused",
                (Err(Refused::Unsendable(got)), Err(want)) => {
                    assert_eq!(got, want);
                    "unsendable"
                }
                (got, want) => panic!("seq {seq}: {got:?} against {want:?}"),
            };
            assert_eq!(got, outcome, "seq {seq}");
            assert_eq!(old.u64(..), new.u64(..), "seq {seq}: the same draws");
        }
        // What goes out: `Host` as the authority, `Connection` left out.
        let mut fill = Fill {
            seq: 3,
            ..fill_from(&values, &mut new)
        };
        let got = text
            .http2(&mut fill, "https", &mut out, &mut scratch)
            .unwrap();
        let field = |name: &[u8]| {
            got.fields
                .iter()
                .find(|(n, _)| &n[..] == name)
                .map(|(_, v)| String::from_utf8(v.to_vec()).unwrap())
        };
        assert_eq!(field(b":authority").as_deref(), Some("42.example"));
        assert!(field(b":path").unwrap().starts_with("/m/42/3?n=a%20b&r="));
        assert!(field(b"x-name").unwrap().starts_with("a b-"));
        assert_eq!(field(b"connection"), None);
        let body = got.body.unwrap();
        assert!(body.starts_with(br#"{"n":"a b","s":3,"r":"#), "{body:?}");
        assert_eq!(field(b"content-length"), Some(body.len().to_string()));
        // Two values that are UTF-8 only together are sent together.
        let text = Text::new(
            &target,
            "GET",
            pieces("/", Place::Url),
            vec![header("X-Name", "${id}${name}")],
            None,
        );
        let values = vec![Some(b"\xc3".to_vec().into()), Some(b"\xa9".to_vec().into())];
        let mut rng = fastrand::Rng::with_seed(0);
        let got = text
            .http2(
                &mut fill_from(&values, &mut rng),
                "http",
                &mut out,
                &mut scratch,
            )
            .unwrap();
        assert_eq!(&got.fields[4].1[..], "é".as_bytes());
    }

    /// M3: `&`, `=`, `+` and `#` in a query value stay in the value, `?`
    /// and `#` in a path value stay in the path, and `${raw:name}` goes as it
    /// is (but for what a request line cannot hold).
    #[test]
    fn url_values_are_encoded_as_a_query_component_or_a_path_segment_or_raw() {
        let (target, _) = parse_url("http://h/").unwrap();
        let url = pieces("/i/${p}/x?q=${q}&r=${raw:q}&s=${raw:p}", Place::Url);
        let text = get(&target, url);
        let values = vec![
            Some(b"a/b c?#%".to_vec().into()),
            Some("a+b&c=d#é".as_bytes().to_vec().into()),
        ];
        let mut rng = fastrand::Rng::with_seed(1);
        let mut out = Vec::new();
        let mut fill = fill_from(&values, &mut rng);
        text.write(&mut fill, &mut out, &mut Vec::new()).unwrap();
        let line = String::from_utf8(out).unwrap();
        let line = line.lines().next().unwrap();
        assert_eq!(
            line,
            "GET /i/a/b%20c%3F%23%25/x?q=a%2Bb%26c%3Dd%23%C3%A9&r=a+b&c=d#%C3%A9&s=a/b%20c?#% HTTP/1.1"
        );
    }

    /// `url = "${loc}"`: a path, or a URL on the scenario's own server
    /// (its origin dropped), is followed; a URL on another server is not
    /// sent.
    #[test]
    fn a_whole_url_value_is_followed_on_the_same_server_only() {
        let (target, _) = parse_url("http://h:8080/").unwrap();
        let text = get(
            &target,
            vec![Piece::Target {
                slot: 0,
                origin: b"http://h:8080".to_vec().into(),
            }],
        );
        let mut rng = fastrand::Rng::with_seed(1);
        let mut first_line = |value: &str| {
            let values = vec![Some(value.as_bytes().to_vec().into())];
            let mut fill = fill_from(&values, &mut rng);
            let mut out = Vec::new();
            text.write(&mut fill, &mut out, &mut Vec::new()).map(|()| {
                String::from_utf8(out)
                    .unwrap()
                    .lines()
                    .next()
                    .unwrap()
                    .to_owned()
            })
        };
        assert_eq!(
            first_line("/m/1?x=a b").unwrap(),
            "GET /m/1?x=a%20b HTTP/1.1"
        );
        assert_eq!(
            first_line("http://h:8080/m/2").unwrap(),
            "GET /m/2 HTTP/1.1"
        );
        assert_eq!(first_line("http://h:8080").unwrap(), "GET / HTTP/1.1");
        assert_eq!(first_line("m/3").unwrap(), "GET /m/3 HTTP/1.1");
        assert_eq!(
            first_line("http://other:8080/m/2"),
            Err(Unsendable { slot: 0 })
        );
        assert_eq!(first_line("http://h:80800/x"), Err(Unsendable { slot: 0 }));
    }

    #[test]
    fn bad_placeholders_say_where_and_how_to_write_them() {
        let mut resolve = |n: &str| Err(format!("no {n}"));
        let mut err = |t: &str| parse(t, Place::Body, &mut resolve).unwrap_err();
        assert_eq!(err("ab${x").0, 2);
        assert!(err("${rand:5-1}").1.contains("rand:MIN-MAX"));
        assert!(err("${1x}").1.contains("not a variable"));
        assert_eq!(err("x ${who}"), (2, "no who".into()));
        assert_eq!(
            parse("$5 and $$", Place::Body, &mut resolve).unwrap(),
            vec![Piece::Lit(b"$5 and $".to_vec().into())]
        );
    }
}
