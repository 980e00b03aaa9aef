//! nginx `log_format` strings, compiled into literals and variables and
//! matched against log lines. Each variable's value runs to the next
//! literal; nginx writes `-` for an empty value and escapes `"`, `\` and
//! control bytes as `\xHH`, which are undone here.

use std::borrow::Cow;

use super::Entry;
use super::format::{
    parse_clf_time, parse_epoch, parse_iso, parse_status, split_request, target_cow, target_of,
    unescape, unescape_bytes,
};

/// A compiled nginx `log_format` string.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NginxFormat {
    source: String,
    parts: Vec<Part>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Part {
    Literal(String),
    Var(Var),
}

/// What a variable's value means for the entry.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Var {
    TimeLocal,
    TimeIso,
    Msec,
    Request,
    Method,
    RequestUri,
    Uri,
    Args,
    Status,
    RequestTime,
    Body,
    /// A request header, by its HTTP name (`$http_user_agent` → `User-Agent`).
    Header(String),
    /// A variable read past but not used (`$remote_addr`, `$bytes_sent`, ...).
    Ignored,
}

/// Why an nginx `log_format` string cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NginxError {
    /// Two variables with no text between them cannot be told apart.
    #[error(
        "in the log_format, ${0} and ${1} have no text between them, so their values cannot \
         be told apart: use the exact log_format of the server that wrote the log"
    )]
    Adjacent(String, String),
    /// A `${` with no `}`, or a `$` with no name.
    #[error("the log_format has a '$' with no variable name after it near '{0}'")]
    BadVariable(String),
    /// A quoted piece that is not closed.
    #[error("the log_format has an unclosed quote: paste the quoted pieces as nginx.conf has them")]
    Unclosed,
    /// Nothing to tell when a request was made.
    #[error(
        "the log_format has no time variable ($time_local, $time_iso8601 or $msec): a replay \
         needs each request's time"
    )]
    NoTime,
    /// Nothing to tell what was requested.
    #[error(
        "the log_format has no request variable ($request, $request_uri or $uri): a replay \
         needs each request's path"
    )]
    NoTarget,
}

impl NginxFormat {
    /// Compiles a `log_format` string: `$name` or `${name}` variables between
    /// literal text. The quoted pieces of nginx.conf (`'$remote_addr - '
    /// '"$request"'`) may be pasted as they are; they are joined.
    pub fn compile(format: &str) -> Result<NginxFormat, NginxError> {
        let joined = join_quoted(format.trim())?;
        let parts = split_parts(&joined)?;
        let vars: Vec<&Var> = parts
            .iter()
            .filter_map(|p| match p {
                Part::Var(v) => Some(v),
                Part::Literal(_) => None,
            })
            .collect();
        if !vars
            .iter()
            .any(|v| matches!(v, Var::TimeLocal | Var::TimeIso | Var::Msec))
        {
            return Err(NginxError::NoTime);
        }
        if !vars
            .iter()
            .any(|v| matches!(v, Var::Request | Var::RequestUri | Var::Uri))
        {
            return Err(NginxError::NoTarget);
        }
        Ok(NginxFormat {
            source: joined,
            parts,
        })
    }

    /// The format string as compiled (quoted pieces joined).
    pub fn source(&self) -> &str {
        &self.source
    }

    /// Reads one line in this format; the entry's `line` is left at 0.
    pub fn parse_line(&self, line: &str) -> Result<Entry, String> {
        self.parse_line_with(line, &mut StampCache::default())
    }

    /// [`NginxFormat::parse_line`], remembering the last stamp read in
    /// `stamps`: a log's consecutive lines mostly share their stamp, and
    /// reading one costs more than the rest of the line (bench/replay-read.sh).
    pub(super) fn parse_line_with(
        &self,
        line: &str,
        stamps: &mut StampCache,
    ) -> Result<Entry, String> {
        let mut fields = Fields::default();
        let mut pos = 0;
        for (i, part) in self.parts.iter().enumerate() {
            match part {
                Part::Literal(text) if i == 0 => {
                    if !line.starts_with(text.as_str()) {
                        return Err(format!("the line does not start with '{text}'"));
                    }
                    pos = text.len();
                }
                // Consumed with the variable before it.
                Part::Literal(_) => {}
                Part::Var(var) => {
                    let value = match self.parts.get(i + 1) {
                        Some(Part::Literal(next)) => {
                            let end = find_unescaped(line, pos, next).ok_or_else(|| {
                                format!(
                                    "'{next}' was expected after the value of {}",
                                    var_label(var)
                                )
                            })?;
                            let value = &line[pos..end];
                            pos = end + next.len();
                            value
                        }
                        _ => {
                            let value = &line[pos..];
                            pos = line.len();
                            value
                        }
                    };
                    fields.set(var, value, stamps)?;
                }
            }
        }
        fields.into_entry()
    }
}

/// The last whole-second stamp read and what it came to, so that the lines
/// that share it (up to thousands a second in a busy log) read it once.
#[derive(Debug, Default)]
pub(super) struct StampCache {
    /// Which variable the text was read as.
    var: Option<StampVar>,
    text: String,
    stamp: (i64, u64),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum StampVar {
    TimeLocal,
    TimeIso,
}

impl StampCache {
    /// `raw` read as `var` by `parse`, or as it was on the last call with
    /// the same text. Only stamps read without error are remembered.
    fn read(
        &mut self,
        var: StampVar,
        raw: &str,
        parse: fn(&str) -> Result<(i64, u64), String>,
    ) -> Result<(i64, u64), String> {
        if self.var == Some(var) && self.text == raw {
            return Ok(self.stamp);
        }
        let stamp = parse(raw)?;
        self.var = Some(var);
        self.text.clear();
        self.text.push_str(raw);
        self.stamp = stamp;
        Ok(stamp)
    }
}

fn var_label(var: &Var) -> &'static str {
    match var {
        Var::TimeLocal => "$time_local",
        Var::TimeIso => "$time_iso8601",
        Var::Msec => "$msec",
        Var::Request => "$request",
        Var::Method => "$request_method",
        Var::RequestUri => "$request_uri",
        Var::Uri => "$uri",
        Var::Args => "$args",
        Var::Status => "$status",
        Var::RequestTime => "$request_time",
        Var::Body => "$request_body",
        Var::Header(_) => "a header variable",
        Var::Ignored => "a variable",
    }
}

/// The next occurrence of `needle` at or after `from` that is not preceded
/// by an odd number of backslashes (Apache writes a quote as `\"`).
///
/// Searched byte by byte for the needle's first byte, then compared: the
/// literals between variables are a few bytes, and `str::find` with a
/// string needle built a searcher on every call, the parser's largest cost
/// (callgrind on bench/replay-read.sh's log).
fn find_unescaped(line: &str, from: usize, needle: &str) -> Option<usize> {
    let (bytes, pattern) = (line.as_bytes(), needle.as_bytes());
    let (&first, _) = pattern.split_first()?;
    let mut start = from;
    loop {
        let at = start + bytes.get(start..)?.iter().position(|&b| b == first)?;
        if !bytes[at..].starts_with(pattern) {
            start = at + 1;
            continue;
        }
        let backslashes = bytes[from..at]
            .iter()
            .rev()
            .take_while(|&&b| b == b'\\')
            .count();
        if backslashes % 2 == 0 {
            return Some(at);
        }
        // A match begins on a character boundary (both are UTF-8), so the
        // next one cannot begin inside this one's first byte.
        start = at + 1;
    }
}

/// nginx.conf writes a format as quoted pieces; join them. A string that
/// does not start with a quote is taken as it is.
fn join_quoted(format: &str) -> Result<String, NginxError> {
    if !format.starts_with(['\'', '"']) {
        return Ok(format.to_owned());
    }
    let mut out = String::new();
    let mut rest = format;
    while let Some(quote) = rest.chars().next() {
        if quote != '\'' && quote != '"' {
            // Not a quoted piece after all: keep the whole string.
            return Ok(format.to_owned());
        }
        let end = rest[1..].find(quote).ok_or(NginxError::Unclosed)? + 1;
        out.push_str(&rest[1..end]);
        rest = rest[end + 1..].trim_start();
        rest = rest.strip_suffix(';').unwrap_or(rest).trim_end();
    }
    Ok(out)
}

fn split_parts(format: &str) -> Result<Vec<Part>, NginxError> {
    let mut parts: Vec<Part> = Vec::new();
    let mut last_name = String::new();
    let mut rest = format;
    while !rest.is_empty() {
        let Some(dollar) = rest.find('$') else {
            push_literal(&mut parts, rest);
            break;
        };
        push_literal(&mut parts, &rest[..dollar]);
        let after = &rest[dollar + 1..];
        let (name, consumed) = if let Some(braced) = after.strip_prefix('{') {
            let close = braced
                .find('}')
                .ok_or_else(|| NginxError::BadVariable(rest.chars().take(20).collect()))?;
            (&braced[..close], close + 2)
        } else {
            let len = after
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .unwrap_or(after.len());
            (&after[..len], len)
        };
        if name.is_empty() {
            return Err(NginxError::BadVariable(rest.chars().take(20).collect()));
        }
        if let Some(Part::Var(_)) = parts.last() {
            return Err(NginxError::Adjacent(last_name, name.to_owned()));
        }
        parts.push(Part::Var(variable(name)));
        last_name = name.to_owned();
        rest = &after[consumed..];
    }
    Ok(parts)
}

fn push_literal(parts: &mut Vec<Part>, text: &str) {
    if text.is_empty() {
        return;
    }
    match parts.last_mut() {
        Some(Part::Literal(previous)) => previous.push_str(text),
        _ => parts.push(Part::Literal(text.to_owned())),
    }
}

fn variable(name: &str) -> Var {
    match name {
        "time_local" => Var::TimeLocal,
        "time_iso8601" => Var::TimeIso,
        "msec" => Var::Msec,
        "request" => Var::Request,
        "request_method" => Var::Method,
        "request_uri" => Var::RequestUri,
        "uri" | "document_uri" => Var::Uri,
        "args" | "query_string" => Var::Args,
        "status" => Var::Status,
        "request_time" => Var::RequestTime,
        "request_body" => Var::Body,
        "host" => Var::Header("Host".to_owned()),
        _ => match name.strip_prefix("http_") {
            Some(header) => Var::Header(header_name(header)),
            None => Var::Ignored,
        },
    }
}

/// `user_agent` → `User-Agent`, as nginx maps `$http_*` variables.
fn header_name(variable: &str) -> String {
    variable
        .split('_')
        .map(|word| {
            let mut chars = word.chars();
            match chars.next() {
                Some(first) => first.to_ascii_uppercase().to_string() + chars.as_str(),
                None => String::new(),
            }
        })
        .collect::<Vec<_>>()
        .join("-")
}

/// The values of one line, gathered before they become an entry: borrowed
/// from the line where no escape had to be undone, so that a line costs
/// one copy of each field it keeps, into its [`Entry`].
#[derive(Default)]
struct Fields<'a> {
    stamp: Option<(i64, u64)>,
    request: Option<(Cow<'a, str>, Cow<'a, str>)>,
    method: Option<Cow<'a, str>>,
    request_uri: Option<Cow<'a, str>>,
    uri: Option<Cow<'a, str>>,
    args: Option<Cow<'a, str>>,
    status: Option<u16>,
    request_time_us: Option<i64>,
    headers: Vec<(String, String)>,
    body: Option<Vec<u8>>,
}

impl<'a> Fields<'a> {
    fn set(&mut self, var: &Var, raw: &'a str, stamps: &mut StampCache) -> Result<(), String> {
        // nginx writes "-" for an empty value.
        let empty = raw.is_empty() || raw == "-";
        match var {
            Var::TimeLocal => {
                self.stamp = Some(stamps.read(StampVar::TimeLocal, raw, parse_clf_time)?);
            }
            Var::TimeIso => self.stamp = Some(stamps.read(StampVar::TimeIso, raw, parse_iso)?),
            Var::Msec => self.stamp = Some(parse_epoch(raw)?),
            Var::Request => {
                self.request = Some(match unescape(raw) {
                    Cow::Borrowed(request) => {
                        let (method, target) = split_request(request)?;
                        (Cow::Borrowed(method), target)
                    }
                    Cow::Owned(request) => {
                        let (method, target) = split_request(&request)?;
                        (
                            Cow::Owned(method.to_owned()),
                            Cow::Owned(target.into_owned()),
                        )
                    }
                });
            }
            Var::Status => self.status = parse_status(raw)?,
            Var::RequestTime if !empty => {
                let (us, _) = parse_epoch(raw)
                    .map_err(|_| format!("the $request_time '{raw}' is not seconds"))?;
                self.request_time_us = Some(us);
            }
            _ if empty => {}
            Var::Method => self.method = Some(unescape(raw)),
            Var::RequestUri => {
                self.request_uri = Some(match unescape(raw) {
                    Cow::Borrowed(uri) => target_cow(uri)?,
                    Cow::Owned(uri) => Cow::Owned(target_of(&uri)?),
                });
            }
            Var::Uri => self.uri = Some(unescape(raw)),
            Var::Args => self.args = Some(unescape(raw)),
            Var::Body => self.body = Some(unescape_bytes(raw)),
            Var::Header(name) => self
                .headers
                .push((name.clone(), unescape(raw).into_owned())),
            Var::RequestTime | Var::Ignored => {}
        }
        Ok(())
    }

    fn into_entry(self) -> Result<Entry, String> {
        let (mut at_us, resolution_us) = self.stamp.ok_or("the line has no time")?;
        // nginx stamps a request when it ends; with a stamp fine enough to
        // carry it, the request time moves it back to when the request began.
        // A whole-second stamp is left alone: subtracting milliseconds from
        // it would invent a precision the log does not have.
        if let Some(took) = self.request_time_us
            && resolution_us <= 1_000
        {
            at_us -= took;
        }
        let (request_method, request_target) = self.request.unzip();
        let target = match (self.request_uri, request_target, self.uri) {
            (Some(target), _, _) | (None, Some(target), _) => target.into_owned(),
            (None, None, Some(uri)) => match self.args {
                Some(args) => format!("{}?{args}", target_cow(&uri)?),
                None => target_cow(&uri)?.into_owned(),
            },
            (None, None, None) => return Err("the line has no request path".to_owned()),
        };
        Ok(Entry {
            line: 0,
            at_us,
            resolution_us,
            method: self
                .method
                .or(request_method)
                .map_or_else(|| "GET".to_owned(), Cow::into_owned),
            target,
            status: self.status,
            headers: self.headers,
            body: self.body,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TIMED: &str = r#"$remote_addr [$msec] "$request_method $request_uri" $status $request_time "${http_x_tenant}" rt=$request_time"#;

    #[test]
    fn reads_a_custom_format_with_msec_and_request_time() {
        let format = NginxFormat::compile(TIMED).unwrap();
        let line = r#"10.1.2.3 [1700000000.250] "POST /orders?id=7" 201 0.050 "acme" rt=0.050"#;
        let e = format.parse_line(line).unwrap();
        // The stamp is the end; the request began 50 ms earlier.
        assert_eq!(e.at_us, 1_700_000_000_200_000);
        assert_eq!(e.resolution_us, 1_000);
        assert_eq!(e.method, "POST");
        assert_eq!(e.target, "/orders?id=7");
        assert_eq!(e.status, Some(201));
        assert_eq!(e.headers, vec![("X-Tenant".to_owned(), "acme".to_owned())]);
    }

    #[test]
    fn a_whole_second_stamp_is_not_moved_by_request_time() {
        let format = NginxFormat::compile("[$time_local] \"$request\" $request_time").unwrap();
        let e = format
            .parse_line(r#"[14/Nov/2023:22:13:20 +0000] "GET / HTTP/1.1" 1.500"#)
            .unwrap();
        assert_eq!(e.at_us, 1_700_000_000_000_000);
    }

    #[test]
    fn reads_iso_stamps_uri_args_host_and_body() {
        let format = NginxFormat::compile(
            "$time_iso8601 $host $request_method $uri?$args body=$request_body end",
        )
        .unwrap();
        let line =
            r#"2023-11-14T22:13:20+00:00 api.example POST /search?q=a%20b body={\x22k\x22:1} end"#;
        let e = format.parse_line(line).unwrap();
        assert_eq!(e.at_us, 1_700_000_000_000_000);
        assert_eq!(e.target, "/search?q=a%20b");
        assert_eq!(
            e.headers,
            vec![("Host".to_owned(), "api.example".to_owned())]
        );
        assert_eq!(e.body.as_deref(), Some(&br#"{"k":1}"#[..]));
        // "-" args and body: no query, no body.
        let e = format
            .parse_line("2023-11-14T22:13:20+00:00 - GET /x?- body=- end")
            .unwrap();
        assert_eq!((e.target.as_str(), e.body.is_none()), ("/x", true));
        assert!(e.headers.is_empty());
    }

    #[test]
    fn joins_the_quoted_pieces_of_nginx_conf() {
        let conf = r#"'$remote_addr - $remote_user [$time_local] '
                      '"$request" $status';"#;
        let format = NginxFormat::compile(conf).unwrap();
        assert_eq!(
            format.source(),
            r#"$remote_addr - $remote_user [$time_local] "$request" $status"#
        );
        let e = format
            .parse_line(r#"::1 - - [14/Nov/2023:22:13:20 +0000] "GET /q HTTP/1.1" 404"#)
            .unwrap();
        assert_eq!((e.target.as_str(), e.status), ("/q", Some(404)));
    }

    #[test]
    fn refuses_formats_that_cannot_be_read() {
        assert_eq!(
            NginxFormat::compile("$request $status").unwrap_err(),
            NginxError::NoTime
        );
        assert_eq!(
            NginxFormat::compile("$msec $status").unwrap_err(),
            NginxError::NoTarget
        );
        let err = NginxFormat::compile("$msec$request").unwrap_err();
        assert!(matches!(err, NginxError::Adjacent(..)), "{err}");
        assert!(
            err.to_string().contains("$msec and $request have no text"),
            "{err}"
        );
        assert!(matches!(
            NginxFormat::compile("${msec $request").unwrap_err(),
            NginxError::BadVariable(_)
        ));
        assert_eq!(
            NginxFormat::compile("'$msec $request").unwrap_err(),
            NginxError::Unclosed
        );
    }

    #[test]
    fn the_stamp_cache_follows_a_change_of_stamp() {
        let format = NginxFormat::compile("[$time_local] \"$request\"").unwrap();
        let mut stamps = StampCache::default();
        let mut at = |line: &str| format.parse_line_with(line, &mut stamps).map(|e| e.at_us);
        let first = r#"[14/Nov/2023:22:13:20 +0000] "GET /a HTTP/1.1""#;
        assert_eq!(at(first), Ok(1_700_000_000_000_000));
        assert_eq!(at(first), Ok(1_700_000_000_000_000));
        // The next second, then only the offset changes: each is read anew.
        let next = r#"[14/Nov/2023:22:13:21 +0000] "GET /a HTTP/1.1""#;
        assert_eq!(at(next), Ok(1_700_000_001_000_000));
        let east = r#"[14/Nov/2023:22:13:21 +0100] "GET /a HTTP/1.1""#;
        assert_eq!(at(east), Ok(1_699_996_401_000_000));
        // A bad stamp is an error every time, and leaves the last good one.
        let bad = r#"[14/Foo/2023:22:13:21 +0100] "GET /a HTTP/1.1""#;
        assert!(at(bad).unwrap_err().contains("unknown month"));
        assert!(at(bad).unwrap_err().contains("unknown month"));
        assert_eq!(at(east), Ok(1_699_996_401_000_000));
        // The same text read as another variable is not taken from the cache.
        let iso = NginxFormat::compile("$time_iso8601 $request_uri").unwrap();
        assert_eq!(
            iso.parse_line_with("2023-11-14T22:13:20+00:00 /a", &mut stamps)
                .map(|e| e.at_us),
            Ok(1_700_000_000_000_000)
        );
    }

    #[test]
    fn reads_odd_fields_as_before() {
        let format = NginxFormat::compile(
            r#"$remote_addr [$time_local] "$request" $status "$http_user_agent" "$request_uri" x"#,
        )
        .unwrap();
        // An escaped request line and URI, an escaped quote before the
        // closing one, a literal's first byte met early ('"' inside the
        // agent, '" x' wanted): the values are the unescaped ones.
        let line = r#"::1 [14/Nov/2023:22:13:20 +0000] "GET /a\x20b?q=\x22 HTTP/1.1" 200 "say \"hi\" x" "HTTPS://h/p\x3Fq" x"#;
        let e = format.parse_line(line).unwrap();
        assert_eq!(e.method, "GET");
        assert_eq!(e.target, "/p?q");
        assert_eq!(
            e.headers,
            vec![("User-Agent".to_owned(), r#"say "hi" x"#.to_owned())]
        );
        // A request without $request_uri: the target from the escaped line.
        let format = NginxFormat::compile(r#"[$time_local] "$request" end"#).unwrap();
        let e = format
            .parse_line(r#"[14/Nov/2023:22:13:20 +0000] "post /a\x20b?q=\x22 HTTP/1.1" end"#)
            .unwrap();
        assert_eq!(
            (e.method.as_str(), e.target.as_str()),
            ("post", r#"/a b?q=""#)
        );
        // An absolute URL whose query follows the host gains its '/'.
        let e = format
            .parse_line(r#"[14/Nov/2023:22:13:20 +0000] "GET http://h?x=1 HTTP/1.1" end"#)
            .unwrap();
        assert_eq!(e.target, "/?x=1");
        // Non-ASCII text around the literals.
        let e = format
            .parse_line("[14/Nov/2023:22:13:20 +0000] \"GET /é HTTP/1.1\" end")
            .unwrap();
        assert_eq!(e.target, "/é");
    }

    #[test]
    fn says_which_literal_was_missing() {
        let format = NginxFormat::compile(TIMED).unwrap();
        let why = format.parse_line("10.1.2.3 1700000000.250").unwrap_err();
        assert!(why.contains("' [' was expected"), "{why}");
    }
}
