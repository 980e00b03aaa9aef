//! Parameters: query strings and form bodies
//! (`application/x-www-form-urlencoded`) decoded strictly, and every field
//! checked against its limit, for the thesis's endpoints, the pages and the
//! JSON API alike.
//!
//! The decoder is our own, a few lines: `percent-encoding` and
//! `form_urlencoded` pass a malformed escape (`%zz`) through as text and the
//! latter replaces invalid UTF-8, where a bad request must be told so (400).

use std::borrow::Cow;

use super::Failure;
use super::board::NewMessage;

/// Longest board name, in bytes.
pub(crate) const MAX_BNAME: usize = 100;
/// Longest author name, in bytes.
pub(crate) const MAX_AUTHOR: usize = 100;
/// Longest message, in bytes.
pub(crate) const MAX_MSG: usize = 10 * 1024;
/// Longest edit key, in bytes.
pub(crate) const MAX_KEY: usize = 100;
/// Messages or boards listed when no `limit` is given.
pub(crate) const DEFAULT_LIMIT: usize = 100;
/// The largest `limit` a listing takes.
pub(crate) const MAX_LIMIT: usize = 1000;

/// Decodes one name or value of a form: `+` is a space, `%XX` the byte
/// XX, anything else itself; the result must be UTF-8. Borrows when there
/// is nothing to decode, as in `bname=hello`.
fn decode(raw: &str) -> Result<Cow<'_, str>, DecodeError> {
    decode_with(raw, true)
}

/// Decodes one segment of a path, where `+` is itself, and checks it as a
/// board name (`what` names the segment in messages).
pub(crate) fn path_segment(raw: &str, what: &str) -> Result<String, Failure> {
    let decoded = decode_with(raw, false).map_err(|err| bad_form("path", err, Some(what)))?;
    Ok(decoded.into_owned())
}

fn decode_with(raw: &str, plus_is_space: bool) -> Result<Cow<'_, str>, DecodeError> {
    if !raw
        .bytes()
        .any(|b| b == b'%' || (plus_is_space && b == b'+'))
    {
        return Ok(Cow::Borrowed(raw));
    }
    let bytes = raw.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'+' if plus_is_space => out.push(b' '),
            b'%' => {
                let byte = bytes
                    .get(i + 1..i + 3)
                    .and_then(|h| Some(hex(h[0])? << 4 | hex(h[1])?))
                    .ok_or_else(|| {
                        let end = raw.len().min(i + 3);
                        // The escape may end inside a character: show whole ones.
                        let end = (end..=raw.len())
                            .find(|&e| raw.is_char_boundary(e))
                            .unwrap_or(raw.len());
                        DecodeError::Escape(raw[i..end].to_owned())
                    })?;
                out.push(byte);
                i += 2;
            }
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8(out)
        .map(Cow::Owned)
        .map_err(|_| DecodeError::Utf8)
}

fn hex(digit: u8) -> Option<u8> {
    match digit {
        b'0'..=b'9' => Some(digit - b'0'),
        b'a'..=b'f' => Some(digit - b'a' + 10),
        b'A'..=b'F' => Some(digit - b'A' + 10),
        _ => None,
    }
}

#[derive(Debug, PartialEq, Eq)]
enum DecodeError {
    /// A `%` not followed by two hex digits: the text from the `%` on.
    Escape(String),
    Utf8,
}

/// The fields of a request: name–value pairs of a form body and of the
/// query string. A name given twice, in one or across both, is refused
/// (400 naming it): which value was meant is not ours to guess.
#[derive(Debug, Default)]
pub(crate) struct Fields<'a> {
    pairs: Vec<(Cow<'a, str>, Cow<'a, str>)>,
    /// Where each pair came from, to say so when a name repeats.
    from: Vec<&'static str>,
    /// The names seen, once there are too many to compare one by one.
    names: Option<std::collections::HashSet<String>>,
}

/// Pairs compared one by one before a set of names is kept.
const FEW: usize = 16;

impl<'a> Fields<'a> {
    /// The fields of `body` (a form body, if any) and `query`.
    pub(crate) fn parse(body: Option<&'a str>, query: &'a str) -> Result<Fields<'a>, Failure> {
        let mut fields = Fields {
            pairs: Vec::with_capacity(8),
            from: Vec::new(),
            names: None,
        };
        if let Some(body) = body {
            fields.add(body, "form body")?;
        }
        fields.add(query, "query string")?;
        Ok(fields)
    }

    fn add(&mut self, raw: &'a str, what: &'static str) -> Result<(), Failure> {
        for pair in raw.split('&').filter(|p| !p.is_empty()) {
            let (name, value) = pair.split_once('=').unwrap_or((pair, ""));
            let name = decode(name).map_err(|err| bad_form(what, err, None))?;
            let value = decode(value).map_err(|err| bad_form(what, err, Some(&name)))?;
            let first = match &mut self.names {
                Some(names) => (!names.insert(name.to_string())).then(|| {
                    let at = self.pairs.iter().position(|(n, _)| *n == name);
                    self.from[at.unwrap_or(0)]
                }),
                None => self
                    .pairs
                    .iter()
                    .position(|(n, _)| *n == name)
                    .map(|at| self.from[at]),
            };
            if let Some(first) = first {
                let place = if first == what {
                    format!("twice in the {what}")
                } else {
                    format!("in the {first} and again in the {what}")
                };
                return Err(Failure::bad_request(format!(
                    "parameter '{name}' is given {place}: give it once"
                )));
            }
            self.pairs.push((name, value));
            self.from.push(what);
            if self.names.is_none() && self.pairs.len() >= FEW {
                self.names = Some(self.pairs.iter().map(|(n, _)| n.to_string()).collect());
            }
        }
        Ok(())
    }

    /// Every pair, decoded, in order.
    pub(crate) fn pairs(&self) -> Vec<(String, String)> {
        self.pairs
            .iter()
            .map(|(n, v)| (n.to_string(), v.to_string()))
            .collect()
    }

    /// The value of `name`, if given.
    pub(crate) fn get(&self, name: &str) -> Option<&str> {
        self.pairs
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| &**v)
    }

    /// The board name `bname`, which must be given.
    pub(crate) fn bname(&self) -> Result<&str, Failure> {
        let value = self
            .get("bname")
            .ok_or_else(|| missing("parameter", "bname"))?;
        check_bname(value)?;
        Ok(value)
    }

    /// The message number `id`, which must be given.
    pub(crate) fn id(&self) -> Result<u64, Failure> {
        let value = self.get("id").ok_or_else(|| missing("parameter", "id"))?;
        parse_id("id", value)
    }

    /// Paging of a message listing: `before` (an id) and `limit`.
    pub(crate) fn before_and_limit(&self) -> Result<(Option<u64>, usize), Failure> {
        let before = self
            .get("before")
            .map(|b| parse_id("before", b))
            .transpose()?;
        Ok((before, self.limit()?))
    }

    /// Paging of the board listing: `after` (a board name) and `limit`.
    pub(crate) fn after_and_limit(&self) -> Result<(Option<&str>, usize), Failure> {
        Ok((self.get("after"), self.limit()?))
    }

    fn limit(&self) -> Result<usize, Failure> {
        let Some(value) = self.get("limit") else {
            return Ok(DEFAULT_LIMIT);
        };
        value
            .parse::<usize>()
            .ok()
            .filter(|l| (1..=MAX_LIMIT).contains(l))
            .ok_or_else(|| {
                Failure::bad_request(format!(
                    "limit must be a whole number from 1 to {MAX_LIMIT}, not '{value}'"
                ))
            })
    }
}

fn bad_form(what: &str, err: DecodeError, name: Option<&str>) -> Failure {
    Failure::bad_request(match (err, name) {
        (DecodeError::Escape(at), _) => {
            format!("bad {what}: '{at}' is not a percent escape (% and two hex digits, e.g. %2F)")
        }
        (DecodeError::Utf8, Some(name)) => {
            format!("bad {what}: the value of '{name}' is not UTF-8 once percent-decoded")
        }
        (DecodeError::Utf8, None) => {
            format!("bad {what}: a parameter name is not UTF-8 once percent-decoded")
        }
    })
}

/// "missing parameter 'bname'" (`kind` is "parameter" or "field").
pub(crate) fn missing(kind: &str, name: &str) -> Failure {
    Failure::bad_request(format!("missing {kind} '{name}'"))
}

/// A message number: a whole number from 1.
pub(crate) fn parse_id(name: &str, value: &str) -> Result<u64, Failure> {
    value
        .parse::<u64>()
        .ok()
        .filter(|&id| id >= 1)
        .ok_or_else(|| {
            Failure::bad_request(format!(
                "{name} must be a message number (1, 2, 3, ...), not '{value}'"
            ))
        })
}

/// `value` of field `name` is at most `limit` bytes.
pub(crate) fn check_len(name: &str, value: &str, limit: usize) -> Result<(), Failure> {
    if value.len() > limit {
        return Err(Failure::bad_request(format!(
            "{name} is {} bytes long; the limit is {limit} bytes",
            value.len()
        )));
    }
    Ok(())
}

/// A message to post, from its fields `author`, `msg` and `key` (`kind`
/// says "parameter" or "field" when one is missing), each within its
/// limit: the author one line of text, the message text with tabs and line
/// breaks but no other control character (which could drive the terminal
/// of someone reading the plain-text listing), the key anything.
pub(crate) fn new_message(
    kind: &str,
    author: Option<&str>,
    msg: Option<&str>,
    key: Option<&str>,
) -> Result<NewMessage, Failure> {
    let field = |name: &str, value: Option<&str>, limit: usize| {
        let value = value.ok_or_else(|| missing(kind, name))?;
        check_len(name, value, limit)?;
        Ok::<_, Failure>(value.to_owned())
    };
    let author = field("author", author, MAX_AUTHOR)?;
    let msg = field("msg", msg, MAX_MSG)?;
    let key = field("key", key, MAX_KEY)?;
    if author.chars().any(char::is_control) {
        return Err(Failure::bad_request(
            "author holds a control character (a newline, a tab, ...): give one line of text",
        ));
    }
    if msg
        .chars()
        .any(|c| c.is_control() && !matches!(c, '\t' | '\n' | '\r'))
    {
        return Err(Failure::bad_request(
            "msg holds a control character other than a tab or a line break",
        ));
    }
    Ok(NewMessage { author, msg, key })
}

/// A board name: 1 to [`MAX_BNAME`] bytes, no control characters.
pub(crate) fn check_bname(value: &str) -> Result<(), Failure> {
    if value.is_empty() {
        return Err(Failure::bad_request(
            "bname is empty: give the board a name",
        ));
    }
    check_len("bname", value, MAX_BNAME)?;
    if value.chars().any(char::is_control) {
        return Err(Failure::bad_request(
            "bname holds a control character (a newline, a tab, ...): board names are one line of text",
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decodes_plus_and_escapes_strictly() {
        assert!(matches!(decode("hello"), Ok(Cow::Borrowed("hello"))));
        assert_eq!(decode("a+b%20c%2Bd").unwrap(), "a b c+d");
        assert_eq!(decode("%E3%81%82").unwrap(), "あ");
        assert_eq!(decode("%3cscript%3E").unwrap(), "<script>");
        assert_eq!(decode("x%zz"), Err(DecodeError::Escape("%zz".into())));
        assert_eq!(decode("x%4"), Err(DecodeError::Escape("%4".into())));
        assert_eq!(decode("%"), Err(DecodeError::Escape("%".into())));
        assert_eq!(decode("%4あ"), Err(DecodeError::Escape("%4あ".into())));
        assert_eq!(decode("%ff%fe"), Err(DecodeError::Utf8));
        assert_eq!(decode("%C3"), Err(DecodeError::Utf8));
    }

    #[test]
    fn fields_come_from_the_body_and_the_query() {
        let f = Fields::parse(Some("msg=from+body&&x"), "bname=b&id=7&limit=5").unwrap();
        assert_eq!(f.get("msg"), Some("from body"));
        assert_eq!(f.get("x"), Some(""));
        assert_eq!(f.bname().unwrap(), "b");
        assert_eq!(f.id().unwrap(), 7);
        assert_eq!(f.before_and_limit().unwrap(), (None, 5));
        assert_eq!(f.get("nope"), None);
    }

    #[test]
    fn a_name_given_twice_is_refused_and_named() {
        let message = |r: Result<Fields<'_>, Failure>| r.unwrap_err().message;
        assert_eq!(
            message(Fields::parse(None, "bname=hello&bname=hello2")),
            "parameter 'bname' is given twice in the query string: give it once"
        );
        assert_eq!(
            message(Fields::parse(Some("msg=a"), "msg=b")),
            "parameter 'msg' is given in the form body and again in the query string: give it once"
        );
        // Decoded names are compared: `b%6Eame` is `bname`.
        assert!(message(Fields::parse(Some("bname=a&b%6Eame=b"), "")).contains("'bname'"));
        // Past the names compared one by one, a set finds the repeat.
        let many: String = (0..100).map(|i| format!("p{i}=x&")).collect();
        assert!(message(Fields::parse(None, &format!("{many}p3=y"))).contains("'p3'"));
        assert!(Fields::parse(None, &many).is_ok());
    }

    #[test]
    fn bad_fields_say_which_and_why() {
        let message = |r: Result<Fields<'_>, Failure>| r.unwrap_err().message;
        assert!(message(Fields::parse(None, "a=%zz")).contains("'%zz' is not a percent escape"));
        assert!(
            message(Fields::parse(Some("msg=%ff"), "")).contains("form body: the value of 'msg'")
        );
        let f = Fields::parse(None, "id=x&before=0&limit=1001&bname=").unwrap();
        assert!(f.id().unwrap_err().message.contains("not 'x'"));
        assert!(
            f.before_and_limit()
                .unwrap_err()
                .message
                .contains("not '0'")
        );
        assert!(f.bname().unwrap_err().message.contains("empty"));
        let f = Fields::parse(None, "limit=1001").unwrap();
        assert!(
            f.before_and_limit()
                .unwrap_err()
                .message
                .contains("1 to 1000")
        );
        let message = |a, m, k| new_message("parameter", a, m, k).unwrap_err().message;
        assert_eq!(
            message(None, Some("m"), Some("k")),
            "missing parameter 'author'"
        );
        let long = "x".repeat(MAX_MSG + 1);
        assert_eq!(
            message(Some("a"), Some(&long), Some("k")),
            "msg is 10241 bytes long; the limit is 10240 bytes"
        );
        assert!(
            message(Some("a\u{1b}[2J"), Some("m"), Some("k")).contains("author holds a control")
        );
        assert!(message(Some("a"), Some("m\u{7}"), Some("k")).contains("msg holds a control"));
        let ok = new_message("field", Some("ann"), Some("a\tb\r\nc"), Some("\u{0}")).unwrap();
        assert_eq!(
            (&*ok.author, &*ok.msg, &*ok.key),
            ("ann", "a\tb\r\nc", "\u{0}")
        );
        assert!(check_bname("a\nb").is_err());
        assert!(check_bname(&"b".repeat(101)).is_err());
        assert!(check_bname("any name / with: punctuation").is_ok());
    }
}
