//! The log formats: which one a file is in, and one line of it turned into
//! an [`Entry`]. The combined and common formats are nginx `log_format`
//! strings compiled once ([`NginxFormat`]); JSON lines are read here; HAR
//! lives in `har.rs`. The shared pieces (stamps, request lines, targets,
//! escapes) are here too.

use std::borrow::Cow;
use std::sync::LazyLock;

use super::Entry;
use super::nginx::{NginxError, NginxFormat, StampCache};

/// The Apache and nginx default ("combined") format, as an nginx `log_format`.
const COMBINED: &str = "$remote_addr - $remote_user [$time_local] \"$request\" $status \
                        $body_bytes_sent \"$http_referer\" \"$http_user_agent\"";
/// The common log format: the combined format's first seven fields.
const COMMON: &str =
    "$remote_addr - $remote_user [$time_local] \"$request\" $status $body_bytes_sent";

static COMBINED_FORMAT: LazyLock<NginxFormat> =
    LazyLock::new(|| NginxFormat::compile(COMBINED).expect("the combined format compiles"));
static COMMON_FORMAT: LazyLock<NginxFormat> =
    LazyLock::new(|| NginxFormat::compile(COMMON).expect("the common format compiles"));

/// The format of an access log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LogFormat {
    /// The Apache/nginx default: `$remote_addr - $remote_user [$time_local]
    /// "$request" $status $body_bytes_sent "$http_referer" "$http_user_agent"`.
    /// Fields appended after it (nginx's `main` format) are ignored.
    Combined,
    /// The common log format (CLF): the combined format's first seven fields.
    Common,
    /// A custom nginx `log_format` string.
    Nginx(NginxFormat),
    /// One JSON object per line, with the field names given.
    JsonLines(JsonFields),
    /// A HAR 1.2 document. HAR is one JSON document, so it is read whole,
    /// unlike the line formats, which are streamed.
    Har,
}

/// Why a `--log-format` value was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FormatError {
    /// Not one of the names, and no `$` to make it an nginx `log_format`.
    #[error(
        "unknown log format '{0}': use combined, common, json, json:FIELD=NAME,..., har, \
         or an nginx log_format string such as '$remote_addr [$time_local] \"$request\" $status'"
    )]
    Unknown(String),
    /// An nginx `log_format` string that cannot be used.
    #[error(transparent)]
    Nginx(#[from] NginxError),
    /// A `json:` field list that cannot be used.
    #[error(
        "in the JSON field list '{list}': {why}; write it as json:time=ts,path=uri with \
         the keys time, method, path, request, status, headers, body"
    )]
    JsonFields {
        /// The list as given.
        list: String,
        /// What is wrong with it.
        why: String,
    },
}

impl LogFormat {
    /// Reads a `--log-format` value: `combined`, `common`, `json`,
    /// `json:time=ts,path=uri` (renamed fields), `har`, or any string with a
    /// `$` in it, taken as an nginx `log_format`.
    pub fn parse(value: &str) -> Result<LogFormat, FormatError> {
        let trimmed = value.trim();
        if trimmed.contains('$') {
            return Ok(LogFormat::Nginx(NginxFormat::compile(trimmed)?));
        }
        match trimmed.to_ascii_lowercase().as_str() {
            "combined" => return Ok(LogFormat::Combined),
            "common" | "clf" => return Ok(LogFormat::Common),
            "json" | "jsonl" | "json-lines" => {
                return Ok(LogFormat::JsonLines(JsonFields::default()));
            }
            "har" => return Ok(LogFormat::Har),
            _ => {}
        }
        match trimmed.split_once(':') {
            Some((kind, list)) if kind.eq_ignore_ascii_case("json") => {
                Ok(LogFormat::JsonLines(JsonFields::parse(list)?))
            }
            _ => Err(FormatError::Unknown(value.to_owned())),
        }
    }

    /// The format's short name, as `--log-format` spells it.
    pub fn name(&self) -> &'static str {
        match self {
            LogFormat::Combined => "combined",
            LogFormat::Common => "common",
            LogFormat::Nginx(_) => "nginx",
            LogFormat::JsonLines(_) => "json",
            LogFormat::Har => "har",
        }
    }

    /// Guesses the format of a line log from its first non-empty line: JSON
    /// lines when it starts with `{`, else combined if it parses as such,
    /// else common if it does. The error says what was seen.
    pub fn detect(first_line: &str) -> Result<LogFormat, String> {
        if first_line.trim_start().starts_with('{') {
            return Ok(LogFormat::JsonLines(JsonFields::default()));
        }
        if COMBINED_FORMAT.parse_line(first_line).is_ok() {
            return Ok(LogFormat::Combined);
        }
        match COMMON_FORMAT.parse_line(first_line) {
            Ok(_) => Ok(LogFormat::Common),
            Err(why) => Err(format!(
                "the first line is neither JSON nor in the combined or common format ({why}): {}",
                first_line.chars().take(120).collect::<String>()
            )),
        }
    }

    /// Reads one line as a request. The entry's `line` is left at 0 for the
    /// caller to set. HAR has no lines, so it always fails here.
    pub fn parse_line(&self, line: &str) -> Result<Entry, String> {
        self.parse_line_with(line, &mut StampCache::default())
    }

    /// [`LogFormat::parse_line`] for a reader of many lines, which keeps
    /// the last stamp read in `stamps`.
    pub(super) fn parse_line_with(
        &self,
        line: &str,
        stamps: &mut StampCache,
    ) -> Result<Entry, String> {
        match self {
            LogFormat::Combined => COMBINED_FORMAT.parse_line_with(line, stamps),
            LogFormat::Common => COMMON_FORMAT.parse_line_with(line, stamps),
            LogFormat::Nginx(format) => format.parse_line_with(line, stamps),
            LogFormat::JsonLines(fields) => fields.parse_line(line),
            LogFormat::Har => Err("a HAR file is one JSON document, not lines".to_owned()),
        }
    }
}

/// The field names of a JSON-lines log. Each may be a dotted path into
/// nested objects (`req.path`) when no field has the dotted name itself.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JsonFields {
    /// The stamp: an RFC 3339 string or epoch seconds (`time`).
    pub time: String,
    /// The method (`method`; `GET` when absent and no request line).
    pub method: String,
    /// The target, path and query or absolute URL; tried in order
    /// (`path`, then `url`, then `uri`).
    pub path: Vec<String>,
    /// A whole request line such as `GET /x HTTP/1.1`, used when no
    /// target field is present (`request`).
    pub request: String,
    /// The response status (`status`).
    pub status: String,
    /// An object of request headers (`headers`).
    pub headers: String,
    /// The request body as a string (`body`).
    pub body: String,
}

impl Default for JsonFields {
    fn default() -> Self {
        JsonFields {
            time: "time".to_owned(),
            method: "method".to_owned(),
            path: vec!["path".to_owned(), "url".to_owned(), "uri".to_owned()],
            request: "request".to_owned(),
            status: "status".to_owned(),
            headers: "headers".to_owned(),
            body: "body".to_owned(),
        }
    }
}

impl JsonFields {
    /// Reads a comma-separated list of `key=name` overrides, such as
    /// `time=ts,path=uri`, over the default names. Unknown keys are refused.
    pub fn parse(list: &str) -> Result<JsonFields, FormatError> {
        let refuse = |why: String| FormatError::JsonFields {
            list: list.to_owned(),
            why,
        };
        let mut fields = JsonFields::default();
        for pair in list.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let Some((key, name)) = pair.split_once('=') else {
                return Err(refuse(format!("'{pair}' has no '='")));
            };
            let (key, name) = (key.trim(), name.trim().to_owned());
            if name.is_empty() {
                return Err(refuse(format!("'{pair}' names no field")));
            }
            match key {
                "time" => fields.time = name,
                "method" => fields.method = name,
                "path" | "url" | "uri" | "target" => fields.path = vec![name],
                "request" => fields.request = name,
                "status" => fields.status = name,
                "headers" => fields.headers = name,
                "body" => fields.body = name,
                other => return Err(refuse(format!("unknown key '{other}'"))),
            }
        }
        Ok(fields)
    }

    fn parse_line(&self, line: &str) -> Result<Entry, String> {
        let value: serde_json::Value =
            serde_json::from_str(line).map_err(|e| format!("not valid JSON: {e}"))?;
        if !value.is_object() {
            return Err("not a JSON object".to_owned());
        }
        let time =
            lookup(&value, &self.time).ok_or_else(|| format!("no time field '{}'", self.time))?;
        let (at_us, resolution_us) = match time {
            serde_json::Value::String(s) => parse_stamp(s)?,
            serde_json::Value::Number(n) => parse_epoch(&n.to_string())?,
            _ => {
                return Err(format!(
                    "the time field '{}' is not a string or number",
                    self.time
                ));
            }
        };
        let mut method = lookup_str(&value, &self.method)?.map(str::to_owned);
        let mut target = None;
        for name in &self.path {
            if let Some(raw) = lookup_str(&value, name)? {
                target = Some(target_of(raw)?);
                break;
            }
        }
        if target.is_none()
            && let Some(request) = lookup_str(&value, &self.request)?
        {
            let (m, t) = split_request(request)?;
            method.get_or_insert_with(|| m.to_owned());
            target = Some(t.into_owned());
        }
        let target = target.ok_or_else(|| {
            format!(
                "no target: none of the fields {} or '{}'",
                self.path.join(", "),
                self.request
            )
        })?;
        Ok(Entry {
            line: 0,
            at_us,
            resolution_us,
            method: method.unwrap_or_else(|| "GET".to_owned()),
            target,
            status: self.status(&value)?,
            headers: self.headers(&value)?,
            body: lookup_str(&value, &self.body)?.map(|b| b.as_bytes().to_vec()),
        })
    }

    fn status(&self, value: &serde_json::Value) -> Result<Option<u16>, String> {
        match lookup(value, &self.status) {
            None | Some(serde_json::Value::Null) => Ok(None),
            Some(serde_json::Value::Number(n)) => n
                .as_u64()
                .and_then(|n| u16::try_from(n).ok())
                .map(Some)
                .ok_or_else(|| format!("the status {n} is not an HTTP status")),
            Some(serde_json::Value::String(s)) => parse_status(s),
            Some(_) => Err(format!(
                "the status field '{}' is not a number",
                self.status
            )),
        }
    }

    fn headers(&self, value: &serde_json::Value) -> Result<Vec<(String, String)>, String> {
        let Some(headers) = lookup(value, &self.headers) else {
            return Ok(Vec::new());
        };
        let object = headers
            .as_object()
            .ok_or_else(|| format!("the headers field '{}' is not an object", self.headers))?;
        object
            .iter()
            .map(|(name, v)| match v {
                serde_json::Value::String(s) => Ok((name.clone(), s.clone())),
                serde_json::Value::Number(_) | serde_json::Value::Bool(_) => {
                    Ok((name.clone(), v.to_string()))
                }
                _ => Err(format!("the header '{name}' is not a string")),
            })
            .collect()
    }
}

/// A field by its name, or by walking a dotted path through nested objects.
fn lookup<'a>(value: &'a serde_json::Value, name: &str) -> Option<&'a serde_json::Value> {
    if let Some(v) = value.get(name) {
        return Some(v);
    }
    if !name.contains('.') {
        return None;
    }
    name.split('.').try_fold(value, |v, key| v.get(key))
}

fn lookup_str<'a>(value: &'a serde_json::Value, name: &str) -> Result<Option<&'a str>, String> {
    match lookup(value, name) {
        None | Some(serde_json::Value::Null) => Ok(None),
        Some(serde_json::Value::String(s)) => Ok(Some(s)),
        Some(_) => Err(format!("the field '{name}' is not a string")),
    }
}

/// A status as logged; `-` (none sent) is `None`.
pub(super) fn parse_status(text: &str) -> Result<Option<u16>, String> {
    if text.is_empty() || text == "-" {
        return Ok(None);
    }
    match text.parse::<u16>() {
        Ok(status) if (100..1000).contains(&status) => Ok(Some(status)),
        _ => Err(format!("the status '{text}' is not an HTTP status")),
    }
}

/// A stamp in any of the forms logs use: epoch seconds (`1700000000.123`),
/// the common log format's `10/Oct/2000:13:55:36 -0700`, or RFC 3339 /
/// ISO 8601 with an offset. Returns microseconds and the resolution.
pub(super) fn parse_stamp(text: &str) -> Result<(i64, u64), String> {
    let text = text.trim();
    if text.starts_with(|c: char| c.is_ascii_digit())
        && text.bytes().all(|b| b.is_ascii_digit() || b == b'.')
    {
        return parse_epoch(text);
    }
    if text.contains('/') {
        return parse_clf_time(text);
    }
    parse_iso(text)
}

/// Epoch seconds with an optional fraction (`$msec`: `1700000000.123`).
pub(super) fn parse_epoch(text: &str) -> Result<(i64, u64), String> {
    let bad = || format!("the stamp '{text}' is not epoch seconds");
    let (whole, fraction) = text.split_once('.').unwrap_or((text, ""));
    if whole.is_empty() || !whole.bytes().all(|b| b.is_ascii_digit()) {
        return Err(bad());
    }
    if !fraction.bytes().all(|b| b.is_ascii_digit()) {
        return Err(bad());
    }
    let seconds: i64 = whole.parse().map_err(|_| bad())?;
    let micros = fraction_micros(fraction);
    let at = seconds
        .checked_mul(1_000_000)
        .and_then(|s| s.checked_add(micros))
        .ok_or_else(bad)?;
    Ok((at, resolution_of(fraction.len())))
}

/// The first six digits of a fraction of a second, as microseconds.
fn fraction_micros(digits: &str) -> i64 {
    let mut micros = 0;
    for i in 0..6 {
        let digit = digits.as_bytes().get(i).map_or(0, |b| i64::from(b - b'0'));
        micros = micros * 10 + digit;
    }
    micros
}

/// The resolution of a stamp with `digits` decimals of a second.
fn resolution_of(digits: usize) -> u64 {
    10u64.pow(6u32.saturating_sub(digits.min(6) as u32))
}

/// An ISO 8601 / RFC 3339 stamp with an offset (`$time_iso8601`).
pub(super) fn parse_iso(text: &str) -> Result<(i64, u64), String> {
    let stamp: jiff::Timestamp = text.parse().map_err(|e| {
        format!("the stamp '{text}' is not an ISO 8601 time with a UTC offset ({e})")
    })?;
    // The decimals after the seconds give the resolution.
    let time = text.split_once(['T', 't', ' ']).map_or("", |(_, t)| t);
    let digits = time
        .split_once(['.', ','])
        .map_or(0, |(_, f)| f.bytes().take_while(u8::is_ascii_digit).count());
    Ok((stamp.as_microsecond(), resolution_of(digits)))
}

const MONTHS: [&str; 12] = [
    "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
];

/// The common log format's stamp, `10/Oct/2000:13:55:36 -0700` (brackets
/// optional), read by hand, as UTC microseconds with a one-second resolution.
pub(super) fn parse_clf_time(text: &str) -> Result<(i64, u64), String> {
    let bad =
        |what: &str| format!("the time '{text}' is not like 10/Oct/2000:13:55:36 -0700 ({what})");
    let inner = text.trim().trim_start_matches('[').trim_end_matches(']');
    let (date_time, zone) = inner.split_once(' ').ok_or_else(|| bad("no UTC offset"))?;
    let mut parts = date_time.splitn(4, [':', '/']);
    let mut next = || parts.next().unwrap_or("");
    let (day, month, year) = (next(), next(), next());
    let clock = next();
    let month = MONTHS
        .iter()
        .position(|m| m.eq_ignore_ascii_case(month))
        .ok_or_else(|| bad("unknown month"))? as i8
        + 1;
    let number = |s: &str, what: &str| s.parse::<i16>().map_err(|_| bad(what));
    let (day, year) = (number(day, "bad day")?, number(year, "bad year")?);
    let mut hms = clock.split(':');
    let mut field = |what: &str| number(hms.next().unwrap_or(""), what);
    let (hour, minute, second) = (
        field("bad hour")?,
        field("bad minute")?,
        field("bad second")?,
    );
    let offset = parse_offset(zone).ok_or_else(|| bad("bad UTC offset"))?;
    let civil = jiff::civil::DateTime::new(
        year,
        month,
        day as i8,
        hour as i8,
        minute as i8,
        second as i8,
        0,
    )
    .map_err(|e| bad(&e.to_string()))?;
    let stamp = offset
        .to_timestamp(civil)
        .map_err(|e| bad(&e.to_string()))?;
    Ok((stamp.as_microsecond(), 1_000_000))
}

/// `-0700` or `+0530` as a jiff offset.
fn parse_offset(zone: &str) -> Option<jiff::tz::Offset> {
    let (sign, digits) = match zone.as_bytes().first()? {
        b'+' => (1, &zone[1..]),
        b'-' => (-1, &zone[1..]),
        _ => return None,
    };
    let digits = digits.replace(':', "");
    if digits.len() != 4 || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let hours: i32 = digits[..2].parse().ok()?;
    let minutes: i32 = digits[2..].parse().ok()?;
    jiff::tz::Offset::from_seconds(sign * (hours * 3600 + minutes * 60)).ok()
}

/// A request line, `GET /x?y HTTP/1.1`, as its method and target, both
/// borrowed from the line when they can be (the reader's hot path: see
/// [`target_cow`]).
pub(super) fn split_request(request: &str) -> Result<(&str, Cow<'_, str>), String> {
    let request = request.trim();
    if request.is_empty() || request == "-" {
        return Err("no request line (the client sent none)".to_owned());
    }
    let (method, rest) = request
        .split_once(' ')
        .ok_or_else(|| format!("the request '{request}' has no target"))?;
    let rest = rest.trim();
    let target = match rest.rsplit_once(' ') {
        Some((target, protocol)) if protocol.starts_with("HTTP/") => target.trim(),
        _ => rest,
    };
    if !method
        .bytes()
        .all(|b| b.is_ascii_alphabetic() || b == b'-' || b == b'_')
    {
        return Err(format!(
            "the request '{request}' does not start with a method"
        ));
    }
    Ok((method, target_cow(target)?))
}

/// A logged target as a path and query: an absolute URL is reduced to its
/// path and query, a fragment is dropped.
pub(super) fn target_of(raw: &str) -> Result<String, String> {
    target_cow(raw).map(Cow::into_owned)
}

/// [`target_of`], borrowing from `raw` unless a `/` must be added: a log
/// line's target is then copied once, into its entry, not twice.
pub(super) fn target_cow(raw: &str) -> Result<Cow<'_, str>, String> {
    let raw = raw.trim();
    let raw = raw.split_once('#').map_or(raw, |(before, _)| before);
    if raw.starts_with('/') {
        return Ok(Cow::Borrowed(raw));
    }
    let scheme = raw.get(..8).unwrap_or(raw);
    let after_scheme = if starts_with_ignore_case(scheme, "http://") {
        &raw[7..]
    } else if starts_with_ignore_case(scheme, "https://") {
        &raw[8..]
    } else {
        return Err(format!(
            "the target '{raw}' is neither a path nor an http(s) URL"
        ));
    };
    Ok(match after_scheme.find(['/', '?']) {
        Some(i) if after_scheme[i..].starts_with('?') => {
            Cow::Owned(format!("/{}", &after_scheme[i..]))
        }
        Some(i) => Cow::Borrowed(&after_scheme[i..]),
        None => Cow::Borrowed("/"),
    })
}

/// Whether `text` starts with the ASCII `prefix`, in any case.
fn starts_with_ignore_case(text: &str, prefix: &str) -> bool {
    text.get(..prefix.len())
        .is_some_and(|head| head.eq_ignore_ascii_case(prefix))
}

/// Undoes a log's escapes: nginx's `\xHH` and Apache's `\"`, `\\`, `\n`, `\t`.
/// Bytes that are not UTF-8 after unescaping become replacement characters.
/// Borrows `value` when it has no backslash, as nearly every field has.
pub(super) fn unescape(value: &str) -> Cow<'_, str> {
    if !value.contains('\\') {
        return Cow::Borrowed(value);
    }
    Cow::Owned(String::from_utf8_lossy(&unescape_bytes(value)).into_owned())
}

/// [`unescape`], keeping the raw bytes (for bodies).
pub(super) fn unescape_bytes(value: &str) -> Vec<u8> {
    let bytes = value.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] != b'\\' || i + 1 == bytes.len() {
            out.push(bytes[i]);
            i += 1;
            continue;
        }
        let hex = bytes
            .get(i + 2..i + 4)
            .and_then(|h| std::str::from_utf8(h).ok())
            .and_then(|h| u8::from_str_radix(h, 16).ok());
        match (bytes[i + 1], hex) {
            (b'x', Some(byte)) => {
                out.push(byte);
                i += 4;
                continue;
            }
            (b'"', _) | (b'\\', _) => out.push(bytes[i + 1]),
            (b'n', _) => out.push(b'\n'),
            (b't', _) => out.push(b'\t'),
            (other, _) => out.extend([b'\\', other]),
        }
        i += 2;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_flag_values() {
        assert_eq!(LogFormat::parse("combined").unwrap(), LogFormat::Combined);
        assert_eq!(LogFormat::parse("Common").unwrap(), LogFormat::Common);
        assert_eq!(LogFormat::parse("har").unwrap(), LogFormat::Har);
        assert_eq!(
            LogFormat::parse("json").unwrap(),
            LogFormat::JsonLines(JsonFields::default())
        );
        let LogFormat::JsonLines(fields) = LogFormat::parse("json:time=ts,path=uri").unwrap()
        else {
            panic!("not json");
        };
        assert_eq!(fields.time, "ts");
        assert_eq!(fields.path, vec!["uri".to_owned()]);
        assert_eq!(fields.method, "method");
        assert_eq!(
            LogFormat::parse("$msec \"$request\"").unwrap().name(),
            "nginx"
        );
        let err = LogFormat::parse("apache").unwrap_err();
        assert!(err.to_string().contains("combined, common"), "{err}");
    }

    #[test]
    fn refuses_unknown_json_keys_clearly() {
        let err = JsonFields::parse("time=ts,when=x").unwrap_err().to_string();
        assert!(err.contains("unknown key 'when'"), "{err}");
        assert!(err.contains("keys time, method"), "{err}");
        let err = JsonFields::parse("time").unwrap_err().to_string();
        assert!(err.contains("has no '='"), "{err}");
    }

    #[test]
    fn reads_nginx_combined_lines() {
        let line = r#"192.0.2.10 - - [14/Nov/2023:22:13:20 +0100] "GET /static/app.js?v=3 HTTP/2.0" 200 5120 "https://shop.example/" "Mozilla/5.0 (Windows NT 10.0; Win64; x64) \x22quoted\x22""#;
        let e = LogFormat::Combined.parse_line(line).unwrap();
        assert_eq!(e.method, "GET");
        assert_eq!(e.target, "/static/app.js?v=3");
        assert_eq!(e.status, Some(200));
        // 22:13:20 at +01:00 is 21:13:20 UTC.
        assert_eq!(e.at_us, 1_699_996_400_000_000);
        assert_eq!(e.resolution_us, 1_000_000);
        assert_eq!(
            e.headers,
            vec![
                ("Referer".to_owned(), "https://shop.example/".to_owned()),
                (
                    "User-Agent".to_owned(),
                    "Mozilla/5.0 (Windows NT 10.0; Win64; x64) \"quoted\"".to_owned()
                ),
            ]
        );
    }

    #[test]
    fn reads_an_ipv6_client_and_an_apache_escaped_agent() {
        let line = r#"2001:db8:85a3::8a2e:370:7334 - bob [01/Jan/2024:00:00:00 -0000] "DELETE /items/9 HTTP/1.1" 204 0 "-" "agent \"x\" \\ y""#;
        let e = LogFormat::Combined.parse_line(line).unwrap();
        assert_eq!(e.method, "DELETE");
        assert_eq!(e.target, "/items/9");
        assert_eq!(e.status, Some(204));
        assert_eq!(e.at_us, 1_704_067_200_000_000);
        // "-" is no header at all.
        assert_eq!(
            e.headers,
            vec![("User-Agent".to_owned(), r#"agent "x" \ y"#.to_owned())]
        );
    }

    #[test]
    fn ignores_fields_after_the_combined_ones() {
        let line = r#"10.0.0.1 - - [14/Nov/2023:22:13:20 +0000] "GET / HTTP/1.1" 200 1 "-" "ua" "203.0.113.9""#;
        let e = LogFormat::Combined.parse_line(line).unwrap();
        assert_eq!(e.headers, vec![("User-Agent".to_owned(), "ua".to_owned())]);
    }

    #[test]
    fn reads_common_lines_and_refuses_them_as_combined() {
        let line = r#"127.0.0.1 - frank [10/Oct/2000:13:55:36 -0700] "GET /apache_pb.gif HTTP/1.0" 200 2326"#;
        let e = LogFormat::Common.parse_line(line).unwrap();
        assert_eq!(e.at_us, 971_211_336_000_000);
        assert_eq!(e.target, "/apache_pb.gif");
        assert!(e.headers.is_empty());
        assert!(LogFormat::Combined.parse_line(line).is_err());
    }

    #[test]
    fn reports_what_is_wrong_with_a_line() {
        let no_request = r#"1.2.3.4 - - [10/Oct/2000:13:55:36 -0700] "-" 400 0 "-" "-""#;
        let why = LogFormat::Combined.parse_line(no_request).unwrap_err();
        assert!(why.contains("no request line"), "{why}");
        let bad_month =
            r#"1.2.3.4 - - [10/Foo/2000:13:55:36 -0700] "GET / HTTP/1.1" 200 0 "-" "-""#;
        let why = LogFormat::Combined.parse_line(bad_month).unwrap_err();
        assert!(why.contains("unknown month"), "{why}");
        let bad_day = r#"1.2.3.4 - - [31/Feb/2000:13:55:36 -0700] "GET / HTTP/1.1" 200 0 "-" "-""#;
        assert!(LogFormat::Combined.parse_line(bad_day).is_err());
    }

    #[test]
    fn reads_json_lines_with_renamed_fields() {
        let format =
            LogFormat::parse("json:time=ts,path=req.uri,status=code,headers=hdrs").unwrap();
        let line = r#"{"ts":"2023-11-14T22:13:20.250Z","method":"PUT","req":{"uri":"https://api.example/v1/x?y=1#frag"},"code":"201","hdrs":{"Accept":"*/*","X-N":3},"body":"{\"a\":1}"}"#;
        let e = format.parse_line(line).unwrap();
        assert_eq!(e.at_us, 1_700_000_000_250_000);
        assert_eq!(e.resolution_us, 1_000);
        assert_eq!(e.method, "PUT");
        assert_eq!(e.target, "/v1/x?y=1");
        assert_eq!(e.status, Some(201));
        assert_eq!(
            e.headers,
            vec![
                ("Accept".to_owned(), "*/*".to_owned()),
                ("X-N".to_owned(), "3".to_owned())
            ]
        );
        assert_eq!(e.body.as_deref(), Some(&b"{\"a\":1}"[..]));
    }

    #[test]
    fn reads_json_lines_with_epoch_numbers_and_request_lines() {
        let format = LogFormat::JsonLines(JsonFields::default());
        let e = format
            .parse_line(r#"{"time":1700000000.5,"request":"POST /login HTTP/1.1","status":302}"#)
            .unwrap();
        assert_eq!(e.at_us, 1_700_000_000_500_000);
        assert_eq!(e.resolution_us, 100_000);
        assert_eq!((e.method.as_str(), e.target.as_str()), ("POST", "/login"));
        assert_eq!(e.status, Some(302));
        let e = format
            .parse_line(r#"{"time":1700000000,"url":"/a"}"#)
            .unwrap();
        assert_eq!((e.method.as_str(), e.resolution_us), ("GET", 1_000_000));
        let why = format.parse_line(r#"{"time":1700000000}"#).unwrap_err();
        assert!(why.contains("no target"), "{why}");
        let why = format.parse_line(r#"{"path":"/a"}"#).unwrap_err();
        assert!(why.contains("no time field 'time'"), "{why}");
        let why = format
            .parse_line(r#"{"time":"yesterday","path":"/a"}"#)
            .unwrap_err();
        assert!(why.contains("ISO 8601"), "{why}");
        assert!(
            format
                .parse_line("{not json")
                .unwrap_err()
                .contains("not valid JSON")
        );
    }

    #[test]
    fn reads_stamps_of_every_kind() {
        assert_eq!(
            parse_epoch("1700000000.123").unwrap(),
            (1_700_000_000_123_000, 1_000)
        );
        assert_eq!(
            parse_epoch("1700000000.1234567").unwrap(),
            (1_700_000_000_123_456, 1)
        );
        assert!(parse_epoch("17000x").is_err());
        assert_eq!(
            parse_iso("2023-11-14T23:13:20+01:00").unwrap(),
            (1_700_000_000_000_000, 1_000_000)
        );
        assert_eq!(
            parse_iso("2023-11-14T22:13:20.123456Z").unwrap(),
            (1_700_000_000_123_456, 1)
        );
        assert!(parse_iso("2023-11-14T22:13:20").is_err());
        assert_eq!(
            parse_stamp("[14/Nov/2023:22:13:20 +0000]").unwrap(),
            (1_700_000_000_000_000, 1_000_000)
        );
        assert_eq!(parse_stamp("1700000000").unwrap().0, 1_700_000_000_000_000);
    }

    #[test]
    fn reduces_targets_to_path_and_query() {
        assert_eq!(target_of("/a?b=1").unwrap(), "/a?b=1");
        assert_eq!(target_of("HTTPS://Host:8443/p/q?x").unwrap(), "/p/q?x");
        assert_eq!(target_of("http://host").unwrap(), "/");
        assert_eq!(target_of("http://host?q=1").unwrap(), "/?q=1");
        assert!(target_of("ftp://x/y").is_err());
        assert!(target_of("*").is_err());
    }

    #[test]
    fn unescapes_nginx_and_apache_escapes() {
        assert_eq!(unescape(r#"a\x22b\x5Cc"#), r#"a"b\c"#);
        assert_eq!(unescape(r#"\"q\" \\ \q"#), r#""q" \ \q"#);
        assert_eq!(unescape_bytes(r"\xFF"), vec![0xFF]);
    }
}
