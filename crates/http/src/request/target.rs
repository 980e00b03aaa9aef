//! URLs: where the load goes ([`Target`]) and which path each request asks
//! for.
//!
//! A small, strict splitter for the subset a load generator needs
//! (`http`/`https`, a host name or IP address, a port, a path and query),
//! rather than a general URL library: anything outside that subset is
//! refused with a message saying how to write it, instead of being
//! normalised behind the user's back.

use std::fmt;
use std::net::{Ipv4Addr, Ipv6Addr};

use super::RequestError;
use super::template;

/// The URL scheme: plain HTTP or HTTP over TLS.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Scheme {
    /// `http://`, default port 80.
    Http,
    /// `https://`, default port 443.
    Https,
}

impl Scheme {
    /// The port used when the URL gives none.
    pub fn default_port(self) -> u16 {
        match self {
            Scheme::Http => 80,
            Scheme::Https => 443,
        }
    }

    /// The scheme as written in a URL, without `://`.
    pub fn as_str(self) -> &'static str {
        match self {
            Scheme::Http => "http",
            Scheme::Https => "https",
        }
    }
}

impl fmt::Display for Scheme {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The server a load test talks to: what to connect to and what to put in
/// the `Host` header.
///
/// Displayed as its origin, `scheme://authority`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Target {
    /// `http` or `https`.
    pub scheme: Scheme,
    /// The host to connect to: a lower-cased host name, an IPv4 address, or
    /// an IPv6 address *without* brackets (so `(host.as_str(), port)` can be
    /// handed to `ToSocketAddrs` as it is).
    pub host: String,
    /// The port, the scheme's default when the URL gives none.
    pub port: u16,
    /// The `Host` header value: the host, with `:port` when the port is not
    /// the scheme's default, and an IPv6 address in brackets.
    pub authority: String,
}

impl Target {
    /// Builds a target, deriving the authority from host and port.
    fn new(scheme: Scheme, host: String, port: u16) -> Self {
        let bracketed = if host.contains(':') {
            format!("[{host}]")
        } else {
            host.clone()
        };
        let authority = if port == scheme.default_port() {
            bracketed
        } else {
            format!("{bracketed}:{port}")
        };
        Target {
            scheme,
            host,
            port,
            authority,
        }
    }
}

impl fmt::Display for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}://{}", self.scheme, self.authority)
    }
}

/// Splits an `http://` or `https://` URL into its [`Target`] and its path
/// and query (`"/"` when the URL has none).
///
/// Accepts host names, IPv4 addresses and bracketed IPv6 addresses
/// (`http://[::1]:8080/`), an optional port and an optional path and query.
/// The fragment (`#...`) is dropped, since it is never sent. Host names are
/// lower-cased. Placeholders in the path (`{seq}`, `{rand:MIN-MAX}`, see
/// [`RequestTemplate`](super::RequestTemplate)) are checked and kept as they
/// are.
///
/// Refused, with a message saying how to fix it: a URL without a scheme,
/// other schemes, credentials (`user:pass@`), spaces, control and non-ASCII
/// characters (percent-encode them), an empty host, and a port that is
/// missing after `:`, not a number, 0 or above 65535.
pub fn parse_url(url: &str) -> Result<(Target, String), RequestError> {
    if url.is_empty() {
        return Err(RequestError::EmptyUrl);
    }
    check_chars(url)?;
    let (scheme, rest) = split_scheme(url)?;
    // The fragment is for the browser; it never goes on the wire.
    let rest = rest.split_once('#').map_or(rest, |(before, _)| before);
    let authority_end = rest.find(['/', '?']).unwrap_or(rest.len());
    let (authority, path) = rest.split_at(authority_end);
    if authority.contains('@') {
        return Err(RequestError::UserInfo { url: url.into() });
    }
    let (host, port) = split_authority(url, authority)?;
    let port = port.unwrap_or(scheme.default_port());
    let path = if path.is_empty() {
        "/".to_owned()
    } else if path.starts_with('?') {
        format!("/{path}")
    } else {
        path.to_owned()
    };
    template::check_path(&path)?;
    Ok((Target::new(scheme, host, port), path))
}

/// Parses the contents of a `--url-file`: one URL per line, used
/// round-robin. Returns the shared target and the paths in file order.
///
/// Blank lines and lines starting with `#` are skipped; surrounding
/// whitespace (and a UTF-8 byte-order mark) is ignored. Every URL must share
/// scheme, host and port with the first one, since a load test holds its
/// connections to one server. Errors name the line (counting from 1).
pub fn parse_url_list(text: &str) -> Result<(Target, Vec<String>), RequestError> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut first: Option<(usize, Target)> = None;
    let mut paths = Vec::new();
    for (index, line) in text.lines().enumerate() {
        let line_number = index + 1;
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let (target, path) = parse_url(line).map_err(|error| RequestError::UrlList {
            line: line_number,
            error: Box::new(error),
        })?;
        match &first {
            None => first = Some((line_number, target)),
            Some((first_line, first_target)) => {
                if *first_target != target {
                    return Err(RequestError::MixedOrigins {
                        line: line_number,
                        origin: target.to_string(),
                        first_line: *first_line,
                        first_origin: first_target.to_string(),
                    });
                }
            }
        }
        paths.push(path);
    }
    match first {
        Some((_, target)) => Ok((target, paths)),
        None => Err(RequestError::EmptyUrlList),
    }
}

/// Refuses spaces, control characters and non-ASCII characters anywhere in
/// the URL: none of them may appear in a request line or a `Host` header.
fn check_chars(url: &str) -> Result<(), RequestError> {
    let Some((index, bad)) = url
        .char_indices()
        .find(|&(_, c)| c == ' ' || c.is_ascii_control() || !c.is_ascii())
    else {
        return Ok(());
    };
    let (what, fix) = match bad {
        ' ' => ("a space".to_owned(), "percent-encode it as %20".to_owned()),
        c if c.is_ascii_control() => (
            format!("the control character {c:?}"),
            "remove it (a URL is one line of printable text)".to_owned(),
        ),
        c => {
            let mut utf8 = [0; 4];
            let encoded: String = c
                .encode_utf8(&mut utf8)
                .bytes()
                .map(|b| format!("%{b:02X}"))
                .collect();
            (
                format!("the non-ASCII character {c:?}"),
                format!(
                    "percent-encode it as {encoded} in a path, or write a host name in its xn-- (punycode) form"
                ),
            )
        }
    };
    Err(RequestError::InvalidUrlChar {
        url: url.into(),
        what,
        position: url[..index].chars().count() + 1,
        fix,
    })
}

/// Splits off `http://` or `https://` (in any case).
fn split_scheme(url: &str) -> Result<(Scheme, &str), RequestError> {
    if let Some((scheme, rest)) = url.split_once("://") {
        // Only a scheme-shaped prefix counts: in `host/?next=http://x` the
        // `://` belongs to the query.
        let scheme_shaped = scheme.starts_with(|c: char| c.is_ascii_alphabetic())
            && scheme
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'));
        if scheme_shaped {
            return if scheme.eq_ignore_ascii_case("http") {
                Ok((Scheme::Http, rest))
            } else if scheme.eq_ignore_ascii_case("https") {
                Ok((Scheme::Https, rest))
            } else {
                Err(RequestError::UnsupportedScheme {
                    url: url.into(),
                    scheme: scheme.into(),
                })
            };
        }
    }
    // Suggest the URL as it was probably meant: `localhost:8080/x`,
    // `//localhost/x` and `http:/localhost/x` all become
    // `http://localhost...`.
    let lower = url.to_ascii_lowercase();
    let (scheme, rest) = if lower.starts_with("https:") {
        ("https", &url["https:".len()..])
    } else if lower.starts_with("http:") {
        ("http", &url["http:".len()..])
    } else {
        ("http", url)
    };
    Err(RequestError::MissingScheme {
        url: url.into(),
        suggestion: format!("{scheme}://{}", rest.trim_start_matches('/')),
    })
}

/// Splits `host`, `host:port`, `[v6]` or `[v6]:port` into the host (IPv6
/// without brackets, names lower-cased) and the port, if one is given.
fn split_authority(url: &str, authority: &str) -> Result<(String, Option<u16>), RequestError> {
    let invalid_host = |host: &str, reason: &str| RequestError::InvalidHost {
        url: url.into(),
        host: host.into(),
        reason: reason.into(),
    };
    if authority.is_empty() {
        return Err(RequestError::EmptyHost { url: url.into() });
    }
    if let Some(bracketed) = authority.strip_prefix('[') {
        let Some((inner, after)) = bracketed.split_once(']') else {
            return Err(invalid_host(
                authority,
                "the '[' of an IPv6 address is not closed; write it as [::1]",
            ));
        };
        if inner.parse::<Ipv6Addr>().is_err() {
            return Err(invalid_host(
                authority,
                "not an IPv6 address; brackets are only for IPv6 addresses such as [::1] (zone ids are not supported)",
            ));
        }
        let port = match after {
            "" => None,
            _ => match after.strip_prefix(':') {
                Some(port) => Some(parse_port(url, port)?),
                None => {
                    return Err(invalid_host(
                        authority,
                        "unexpected text after ']'; write [address]:port",
                    ));
                }
            },
        };
        return Ok((inner.to_ascii_lowercase(), port));
    }
    if authority.matches(':').count() > 1 {
        return Err(invalid_host(
            authority,
            "an IPv6 address must be in brackets, e.g. http://[::1]:8080/",
        ));
    }
    let (host, port) = match authority.split_once(':') {
        Some((host, port)) => (host, Some(parse_port(url, port)?)),
        None => (authority, None),
    };
    if host.is_empty() {
        return Err(RequestError::EmptyHost { url: url.into() });
    }
    if let Some(bad) = host
        .chars()
        .find(|&c| !(c.is_ascii_alphanumeric() || matches!(c, '-' | '.' | '_')))
    {
        return Err(invalid_host(
            host,
            &format!(
                "{bad:?} cannot appear in a host name; a host is a name of letters, digits, '-' and '.', or an IP address"
            ),
        ));
    }
    if host.starts_with('.') || host.contains("..") {
        return Err(invalid_host(
            host,
            "a host name has an empty label ('..' or a leading '.')",
        ));
    }
    if host.chars().all(|c| c.is_ascii_digit() || c == '.') && host.parse::<Ipv4Addr>().is_err() {
        return Err(invalid_host(
            host,
            "not an IPv4 address; write four numbers from 0 to 255, e.g. 127.0.0.1",
        ));
    }
    Ok((host.to_ascii_lowercase(), port))
}

/// Parses the text after `:` as a port from 1 to 65535.
fn parse_port(url: &str, port: &str) -> Result<u16, RequestError> {
    let invalid = |reason: &str| RequestError::InvalidPort {
        url: url.into(),
        port: port.into(),
        reason: reason.into(),
    };
    if port.is_empty() {
        return Err(invalid(
            "no port after ':'; give one (e.g. :8080) or remove the ':'",
        ));
    }
    if !port.bytes().all(|b| b.is_ascii_digit()) {
        return Err(invalid("a port is a number from 1 to 65535"));
    }
    match port.parse::<u16>() {
        Ok(0) => Err(invalid(
            "port 0 cannot be connected to; ports run from 1 to 65535",
        )),
        Ok(port) => Ok(port),
        Err(_) => Err(invalid("too large; ports run from 1 to 65535")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn good_urls() {
        use Scheme::{Http, Https};
        /// Scheme, host, port, authority, path.
        type Parts<'a> = (Scheme, &'a str, u16, &'a str, &'a str);
        let table: &[(&str, Parts)] = &[
            (
                "http://localhost",
                (Http, "localhost", 80, "localhost", "/"),
            ),
            (
                "http://localhost/",
                (Http, "localhost", 80, "localhost", "/"),
            ),
            (
                "http://localhost:80/x",
                (Http, "localhost", 80, "localhost", "/x"),
            ),
            (
                "http://localhost:8080/hello",
                (Http, "localhost", 8080, "localhost:8080", "/hello"),
            ),
            (
                "https://example.com",
                (Https, "example.com", 443, "example.com", "/"),
            ),
            (
                "https://example.com:443/a/b",
                (Https, "example.com", 443, "example.com", "/a/b"),
            ),
            (
                "https://example.com:8443/",
                (Https, "example.com", 8443, "example.com:8443", "/"),
            ),
            (
                "https://example.com:80/",
                (Https, "example.com", 80, "example.com:80", "/"),
            ),
            (
                "HTTP://Example.COM/Path",
                (Http, "example.com", 80, "example.com", "/Path"),
            ),
            (
                "http://127.0.0.1:3000/api",
                (Http, "127.0.0.1", 3000, "127.0.0.1:3000", "/api"),
            ),
            ("http://[::1]:8080/", (Http, "::1", 8080, "[::1]:8080", "/")),
            ("http://[::1]/x", (Http, "::1", 80, "[::1]", "/x")),
            (
                "https://[2001:DB8::1]:443",
                (Https, "2001:db8::1", 443, "[2001:db8::1]", "/"),
            ),
            ("http://h:1/s?q=1&r=2", (Http, "h", 1, "h:1", "/s?q=1&r=2")),
            ("http://h:65535?q=1", (Http, "h", 65535, "h:65535", "/?q=1")),
            ("http://h/page#section", (Http, "h", 80, "h", "/page")),
            (
                "http://h/page?a=1#section",
                (Http, "h", 80, "h", "/page?a=1"),
            ),
            ("http://h#top", (Http, "h", 80, "h", "/")),
            (
                "http://my_service.local/",
                (Http, "my_service.local", 80, "my_service.local", "/"),
            ),
            (
                "http://h/x?next=http://y/",
                (Http, "h", 80, "h", "/x?next=http://y/"),
            ),
            (
                "http://h/item/{seq}?r={rand:1-10}",
                (Http, "h", 80, "h", "/item/{seq}?r={rand:1-10}"),
            ),
            ("http://h/{{literal}}", (Http, "h", 80, "h", "/{{literal}}")),
        ];
        for (url, want) in table {
            let (target, path) = parse_url(url).unwrap_or_else(|e| panic!("{url}: {e}"));
            let got = (
                target.scheme,
                target.host.as_str(),
                target.port,
                target.authority.as_str(),
                path.as_str(),
            );
            assert_eq!(got, *want, "{url}");
        }
    }

    #[test]
    fn target_displays_as_origin() {
        let (target, _) = parse_url("https://[::1]:8443/x").unwrap();
        assert_eq!(target.to_string(), "https://[::1]:8443");
        let (target, _) = parse_url("http://localhost/x").unwrap();
        assert_eq!(target.to_string(), "http://localhost");
    }

    /// Each bad URL with the fragments its message must contain.
    #[test]
    fn bad_urls() {
        let table: &[(&str, &[&str])] = &[
            ("", &["empty", "http://localhost:8080/"]),
            (
                "localhost:8080/x",
                &["\"localhost:8080/x\"", "write \"http://localhost:8080/x\""],
            ),
            ("example.com", &["write \"http://example.com\""]),
            ("//example.com/x", &["write \"http://example.com/x\""]),
            ("http:/example.com", &["write \"http://example.com\""]),
            ("https:example.com", &["write \"https://example.com\""]),
            (
                "localhost/?next=http://x",
                &["write \"http://localhost/?next=http://x\""],
            ),
            (
                "ftp://example.com/",
                &["\"ftp\"", "not supported", "http://"],
            ),
            ("ws://example.com/", &["\"ws\"", "not supported"]),
            (
                "http://user:pass@example.com/",
                &["credentials", "Authorization"],
            ),
            ("http://user@example.com/", &["credentials"]),
            ("http://example.com/a b", &["a space", "position 21", "%20"]),
            (
                "http://example.com/a\r\nX: y",
                &["control character '\\r'", "\\r\\n"],
            ),
            ("http://example.com/\t", &["control character '\\t'"]),
            ("http://example.com/caf\u{e9}", &["non-ASCII", "%C3%A9"]),
            ("http://b\u{fc}cher.de/", &["non-ASCII", "punycode"]),
            ("http://", &["no host"]),
            ("http:///path", &["no host"]),
            ("http://:8080/", &["no host"]),
            ("http://h:0/", &["\"0\"", "1 to 65535"]),
            ("http://h:65536/", &["\"65536\"", "1 to 65535"]),
            ("http://h:99999999999/", &["1 to 65535"]),
            ("http://h:/", &["no port", "remove the ':'"]),
            ("http://h:http/", &["\"http\"", "a number"]),
            ("http://h:-1/", &["a number"]),
            ("http://::1:8080/", &["brackets", "[::1]"]),
            ("http://[::1/", &["not closed"]),
            ("http://[nope]/", &["not an IPv6"]),
            ("http://[::1]x/", &["after ']'"]),
            ("http://[::1]:0/", &["1 to 65535"]),
            ("http://300.1.1.1/", &["not an IPv4"]),
            ("http://a..b/", &["empty label"]),
            ("http://ho%st/", &["'%'", "host name"]),
            ("http://h/{id}", &["unknown placeholder {id}", "{seq}"]),
        ];
        for (url, fragments) in table {
            let err = parse_url(url).expect_err(url).to_string();
            for fragment in *fragments {
                assert!(
                    err.contains(fragment),
                    "{url:?}: {err:?} lacks {fragment:?}"
                );
            }
        }
    }

    #[test]
    fn url_list_skips_comments_and_blank_lines() {
        let text = "\u{feff}# targets\n\nhttp://h:8080/a\r\n  http://h:8080/b?x=1  \n#http://other/\n\thttp://H:8080/{seq}\n";
        let (target, paths) = parse_url_list(text).unwrap();
        assert_eq!(target, parse_url("http://h:8080/").unwrap().0);
        assert_eq!(paths, ["/a", "/b?x=1", "/{seq}"]);
    }

    #[test]
    fn url_list_rejects_mixed_origins_naming_the_lines() {
        let text = "# header\nhttp://h:8080/a\n\nhttps://h:8080/b\n";
        let err = parse_url_list(text).unwrap_err();
        assert_eq!(
            err,
            RequestError::MixedOrigins {
                line: 4,
                origin: "https://h:8080".into(),
                first_line: 2,
                first_origin: "http://h:8080".into(),
            }
        );
        let message = err.to_string();
        assert!(message.starts_with("line 4: https://h:8080 "), "{message}");
        assert!(message.contains("http://h:8080 (line 2)"), "{message}");

        for other in ["http://h:8081/b", "http://g:8080/b"] {
            let text = format!("http://h:8080/a\n{other}\n");
            assert!(matches!(
                parse_url_list(&text),
                Err(RequestError::MixedOrigins { line: 2, .. })
            ));
        }
    }

    #[test]
    fn url_list_names_the_line_of_a_bad_url() {
        let err = parse_url_list("http://h/a\nh/b\n").unwrap_err();
        assert!(
            matches!(&err, RequestError::UrlList { line: 2, .. }),
            "{err:?}"
        );
        assert!(
            err.to_string()
                .starts_with("line 2: \"h/b\" does not start with http://")
        );
        let err = parse_url_list("http://h/a\n\nhttp://h/{nope}\n").unwrap_err();
        assert!(
            err.to_string()
                .starts_with("line 3: unknown placeholder {nope}"),
            "{err}"
        );
    }

    #[test]
    fn empty_url_list_is_an_error() {
        for text in ["", "\n\n", "# only a comment\n   \n"] {
            assert_eq!(parse_url_list(text), Err(RequestError::EmptyUrlList));
        }
    }
}
