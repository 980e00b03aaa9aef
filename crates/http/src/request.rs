//! What the load generator sends: the target, and the request bytes.
//!
//! Data flow: the binary turns `dyno http URL` (or `--url-file FILE`) into a
//! [`Target`] and one or more paths with [`parse_url`] / [`parse_url_list`],
//! and its `-X`/`-H`/`--body` flags into a [`RequestSpec`]. The engine encodes
//! each spec **once**, before the run, into a [`RequestTemplate`]: the whole
//! HTTP/1.1 request as bytes, with slots where the path holds placeholders
//! (`{seq}`, `{rand:MIN-MAX}`). On the hot path a worker either sends the
//! template's [`static_bytes`](RequestTemplate::static_bytes) as they are, or
//! calls [`write`](RequestTemplate::write), which copies the static segments
//! and formats the slot values into the connection's buffer without any
//! allocation of its own: no header is formatted, validated or looked up per
//! request. Over HTTP/2 the template's fields are made once by [`h2`]'s
//! rules, and only the path is filled per request.
//!
//! Everything a user can get wrong (a URL without a scheme, a header without
//! a colon, an unknown placeholder) is rejected here, before the run starts,
//! with a [`RequestError`] that says how to fix it.

pub(crate) mod h2;
mod target;
mod template;
pub(crate) use template::sends_content;

pub use target::{Scheme, Target, parse_url, parse_url_list};
pub(crate) use template::push_decimal;
pub use template::{RequestSpec, RequestTemplate, parse_header};

/// A method as sent: the standard ones (RFC 9110's and PATCH) in upper
/// case however they were typed, since methods are case-sensitive and
/// servers answer `post` with 400 or 405; any other method exactly as
/// given. `-X` and a scenario's steps both go through here.
pub fn standard_method(method: &str) -> String {
    const STANDARD: [&str; 9] = [
        "GET", "HEAD", "POST", "PUT", "DELETE", "CONNECT", "OPTIONS", "TRACE", "PATCH",
    ];
    match STANDARD.iter().find(|m| m.eq_ignore_ascii_case(method)) {
        Some(m) => (*m).to_owned(),
        None => method.to_owned(),
    }
}

#[cfg(test)]
#[test]
fn standard_methods_go_in_upper_case() {
    assert_eq!(standard_method("post"), "POST");
    assert_eq!(standard_method("Patch"), "PATCH");
    assert_eq!(standard_method("purge"), "purge");
    assert_eq!(standard_method("MKCOL"), "MKCOL");
}

/// Why a URL, header, path or URL list was refused.
///
/// Every message quotes what was given and says how to fix it; URLs and
/// paths are quoted with Rust's string escaping so that a stray control
/// character shows up as `\r` rather than garbling the terminal.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RequestError {
    /// The URL is the empty string.
    #[error("the URL is empty; give one such as http://localhost:8080/")]
    EmptyUrl,

    /// The URL does not start with `http://` or `https://`.
    #[error("{url:?} does not start with http:// or https://; write {suggestion:?}")]
    MissingScheme {
        /// The URL as given.
        url: String,
        /// The URL with `http://` in front.
        suggestion: String,
    },

    /// The URL names a scheme other than `http` or `https`.
    #[error(
        "{url:?}: the scheme {scheme:?} is not supported; dyno http speaks http:// and https:// URLs"
    )]
    UnsupportedScheme {
        /// The URL as given.
        url: String,
        /// The scheme, as written.
        scheme: String,
    },

    /// The URL carries `user:password@` before the host.
    #[error(
        "{url:?} contains credentials (user:password@); remove them from the URL and send them as a header, e.g. -H 'Authorization: Basic <base64 of user:password>'"
    )]
    UserInfo {
        /// The URL as given.
        url: String,
    },

    /// The URL contains a space, a control character or a non-ASCII
    /// character.
    #[error("{url:?} contains {what} at position {position}; {fix}")]
    InvalidUrlChar {
        /// The URL as given.
        url: String,
        /// What was found, e.g. `a space`.
        what: String,
        /// Where, counting characters from 1.
        position: usize,
        /// How to write it instead.
        fix: String,
    },

    /// The URL has nothing between the scheme and the port or path.
    #[error("{url:?} has no host; write one after the scheme, e.g. http://localhost:8080/")]
    EmptyHost {
        /// The URL as given.
        url: String,
    },

    /// The host is not a host name, an IPv4 address or a bracketed IPv6
    /// address.
    #[error("{url:?}: invalid host {host:?}: {reason}")]
    InvalidHost {
        /// The URL as given.
        url: String,
        /// The host part as written.
        host: String,
        /// What is wrong and how to fix it.
        reason: String,
    },

    /// The port is missing after `:`, not a number, 0 or above 65535.
    #[error("{url:?}: invalid port {port:?}: {reason}")]
    InvalidPort {
        /// The URL as given.
        url: String,
        /// The port part as written.
        port: String,
        /// What is wrong and how to fix it.
        reason: String,
    },

    /// The request path cannot go into a request line.
    #[error("invalid request path {path:?}: {reason}")]
    InvalidPath {
        /// The path as given.
        path: String,
        /// What is wrong and how to fix it.
        reason: String,
    },

    /// A `{` without its `}`, or a `}` without its `{`.
    #[error(
        "unmatched '{brace}' at position {position} of the path {path:?}; write '{brace}{brace}' for a literal '{brace}', or use a placeholder: {{seq}} or {{rand:MIN-MAX}}"
    )]
    UnmatchedBrace {
        /// The path as given.
        path: String,
        /// The brace, `{` or `}`.
        brace: char,
        /// Where, counting characters from 1.
        position: usize,
    },

    /// A `{name}` that is not one of the known placeholders.
    #[error(
        "unknown placeholder {placeholder} in the path {path:?}; the placeholders are {{seq}} and {{rand:MIN-MAX}} (write '{{{{' for a literal '{{')"
    )]
    UnknownPlaceholder {
        /// The placeholder with its braces, e.g. `{id}`.
        placeholder: String,
        /// The path as given.
        path: String,
    },

    /// A known placeholder with bad arguments, e.g. `{rand:9-3}`.
    #[error("invalid placeholder {placeholder} in the path {path:?}: {reason}")]
    InvalidPlaceholder {
        /// The placeholder with its braces.
        placeholder: String,
        /// The path as given.
        path: String,
        /// What is wrong and how to fix it.
        reason: String,
    },

    /// The method is empty or not an HTTP token.
    #[error(
        "invalid method {method:?}: a method is one word such as GET, POST or HEAD, without spaces"
    )]
    InvalidMethod {
        /// The method as given.
        method: String,
    },

    /// A header given as a string is not of the form `Name: value`.
    #[error("malformed header {header:?}: {reason}; write it as -H 'Name: value'")]
    MalformedHeader {
        /// The header as given.
        header: String,
        /// What is wrong.
        reason: String,
    },

    /// A header name is not an HTTP token.
    #[error(
        "invalid header name {name:?}: a name is one word of letters, digits and !#$%&'*+-.^_`|~ without spaces, as in -H 'Name: value'"
    )]
    InvalidHeaderName {
        /// The name as given.
        name: String,
    },

    /// A header value contains CR, LF, NUL or another control character.
    #[error(
        "the value of header {name:?} contains a line break or control character ({value:?}); a header value is one line of text"
    )]
    InvalidHeaderValue {
        /// The header's name.
        name: String,
        /// The value as given.
        value: String,
    },

    /// A header that may appear only once was given twice.
    #[error("the {name} header is given more than once; give it once")]
    DuplicateHeader {
        /// The header's name.
        name: String,
    },

    /// A user `Content-Length` that disagrees with the body.
    #[error(
        "Content-Length: {given} does not match the body ({actual} bytes); drop the header and dyno sets it"
    )]
    ContentLengthMismatch {
        /// The value as given.
        given: String,
        /// The body's length in bytes (0 when there is no body).
        actual: usize,
    },

    /// A line of a URL list that does not parse.
    #[error("line {line}: {error}")]
    UrlList {
        /// The line number, counting from 1.
        line: usize,
        /// Why the line was refused.
        error: Box<RequestError>,
    },

    /// A line of a URL list that names another server than the first URL.
    #[error(
        "line {line}: {origin} is not the same server as {first_origin} (line {first_line}); every URL in the list must share scheme, host and port, since a load test holds its connections to one server (run dyno http once per server)"
    )]
    MixedOrigins {
        /// The line number, counting from 1.
        line: usize,
        /// The origin (`scheme://authority`) on that line.
        origin: String,
        /// The line of the first URL.
        first_line: usize,
        /// The origin of the first URL.
        first_origin: String,
    },

    /// A URL list without any URL.
    #[error(
        "the URL list has no URLs (blank lines and lines starting with '#' are skipped); list one URL per line, e.g. http://localhost:8080/"
    )]
    EmptyUrlList,
}
