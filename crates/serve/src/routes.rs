//! The endpoints: maps a request path to its response.
//!
//! Routing is plain prefix matching on the path (no regex, no router crate) and
//! every fixed body is static, so the common answers cost no allocation beyond
//! hyper's own. Only error answers format a message.

use std::time::Duration;

use bytes::Bytes;
use hyper::header::{CONTENT_TYPE, HeaderValue};
use hyper::{Response, StatusCode};

use crate::HELLO;
use crate::body::Body;

/// The largest body `/blob/<size>` serves: 1 TiB (it streams, so size costs no
/// memory; the cap only stops absurd requests).
pub(crate) const MAX_BLOB: u64 = 1 << 40;

/// The longest wait `/delay/<ms>` accepts, in milliseconds.
pub(crate) const MAX_DELAY_MS: u64 = 60_000;

const TEXT_HTML: &str = "text/html";
const TEXT_PLAIN: &str = "text/plain; charset=utf-8";
const OCTET_STREAM: &str = "application/octet-stream";

/// The endpoint list served at `/` (the BBS's follows, when served).
pub(crate) const INDEX: &[u8] = b"dyno reference server\n\
\n\
GET /hello          a 92-byte HTML page\n\
GET /blob/<size>    <size> bytes (512, 64k, 1m, ...; powers of 1024, up to 1t)\n\
GET /status/<code>  that status (200-599), its reason phrase as the body\n\
GET /delay/<ms>     /hello after <ms> milliseconds (0-60000)\n\
GET /cpu/<us>       /hello after <us> microseconds of CPU, one request at a time\n\
                    across the server: a known capacity of 1000000/<us> req/s\n\
\n\
Any method works; request bodies are read and discarded.\n";

const NOT_FOUND: &[u8] = b"not found: GET / lists the endpoints\n";

/// What to answer, and when.
#[derive(Debug)]
pub(crate) enum Answer {
    /// Answer at once.
    Now(Response<Body>),
    /// Answer after waiting.
    After(Duration, Response<Body>),
    /// Answer after burning this much CPU, one such request at a time
    /// across the whole server.
    Serial(Duration, Response<Body>),
}

/// Routes a request by its path. `blob` is the server's shared blob buffer,
/// `index` the page served at `/`.
pub(crate) fn route(path: &str, blob: &Bytes, index: &Bytes) -> Answer {
    if path == "/hello" {
        Answer::Now(hello())
    } else if let Some(size) = path.strip_prefix("/blob/") {
        Answer::Now(blob_response(size, blob))
    } else if let Some(code) = path.strip_prefix("/status/") {
        Answer::Now(status_response(code))
    } else if let Some(ms) = path.strip_prefix("/delay/") {
        match parse_delay(ms) {
            Ok(delay) => Answer::After(delay, hello()),
            Err(message) => Answer::Now(text(StatusCode::BAD_REQUEST, message.into())),
        }
    } else if let Some(us) = path.strip_prefix("/cpu/") {
        match parse_cpu(us) {
            Ok(work) => Answer::Serial(work, hello()),
            Err(message) => Answer::Now(text(StatusCode::BAD_REQUEST, message.into())),
        }
    } else if path == "/" {
        Answer::Now(text(StatusCode::OK, index.clone()))
    } else {
        Answer::Now(text(StatusCode::NOT_FOUND, Bytes::from_static(NOT_FOUND)))
    }
}

pub(crate) fn response(
    status: StatusCode,
    content_type: &'static str,
    body: Body,
) -> Response<Body> {
    let mut response = Response::new(body);
    *response.status_mut() = status;
    // from_static shares the static string; it only checks its few bytes.
    response
        .headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static(content_type));
    response
}

fn hello() -> Response<Body> {
    response(StatusCode::OK, TEXT_HTML, Body::from_static(HELLO))
}

fn text(status: StatusCode, message: Bytes) -> Response<Body> {
    response(status, TEXT_PLAIN, Body::full(message))
}

fn blob_response(size: &str, blob: &Bytes) -> Response<Body> {
    match parse_blob_size(size) {
        Ok(len) => response(StatusCode::OK, OCTET_STREAM, Body::repeat(blob, len)),
        Err(message) => text(StatusCode::BAD_REQUEST, message.into()),
    }
}

fn status_response(code: &str) -> Response<Body> {
    let status = match parse_status(code) {
        Ok(status) => status,
        Err(message) => return text(StatusCode::BAD_REQUEST, message.into()),
    };
    // These statuses must not carry content (RFC 9110 15.3.5, 15.3.6, 15.4.5),
    // so they get neither a body nor a Content-Type.
    if matches!(
        status,
        StatusCode::NO_CONTENT | StatusCode::RESET_CONTENT | StatusCode::NOT_MODIFIED
    ) {
        let mut response = Response::new(Body::empty());
        *response.status_mut() = status;
        return response;
    }
    let reason = status.canonical_reason().unwrap_or("Unknown Status");
    response(status, TEXT_PLAIN, Body::from_static(reason.as_bytes()))
}

/// Reads the `<size>` of `/blob/<size>`; the error is the 400 body.
fn parse_blob_size(size: &str) -> Result<u64, String> {
    let len =
        dyno_model::size::parse_size(size).map_err(|err| format!("bad /blob size: {err}\n"))?;
    if len > MAX_BLOB {
        return Err(format!(
            "bad /blob size: '{size}' is {len} bytes, more than the 1 TiB (1t) limit\n"
        ));
    }
    Ok(len)
}

/// Reads the `<code>` of `/status/<code>`; the error is the 400 body.
fn parse_status(code: &str) -> Result<StatusCode, String> {
    code.parse::<u16>()
        .ok()
        .filter(|c| (200..=599).contains(c))
        .and_then(|c| StatusCode::from_u16(c).ok())
        .ok_or_else(|| {
            format!(
                "bad /status code '{code}': give a status code from 200 to 599, e.g. /status/503\n"
            )
        })
}

/// The most CPU `/cpu/<us>` burns per request, in microseconds.
pub(crate) const MAX_CPU_US: u64 = 1_000_000;

/// Reads the `<us>` of `/cpu/<us>`; the error is the 400 body.
fn parse_cpu(us: &str) -> Result<Duration, String> {
    us.parse::<u64>()
        .ok()
        .filter(|us| (1..=MAX_CPU_US).contains(us))
        .map(Duration::from_micros)
        .ok_or_else(|| {
            format!(
                "bad /cpu '{us}': give whole microseconds from 1 to {MAX_CPU_US}, e.g. /cpu/2000 (a capacity of 500 req/s)\n"
            )
        })
}

/// Reads the `<ms>` of `/delay/<ms>`; the error is the 400 body.
fn parse_delay(ms: &str) -> Result<Duration, String> {
    ms.parse::<u64>()
        .ok()
        .filter(|ms| *ms <= MAX_DELAY_MS)
        .map(Duration::from_millis)
        .ok_or_else(|| {
            format!(
                "bad /delay '{ms}': give whole milliseconds from 0 to {MAX_DELAY_MS}, e.g. /delay/100\n"
            )
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use hyper::body::Body as _;

    fn now(answer: Answer) -> Response<Body> {
        match answer {
            Answer::Now(response) => response,
            Answer::After(..) | Answer::Serial(..) => panic!("expected an immediate answer"),
        }
    }

    #[test]
    fn blob_sizes_parse_in_powers_of_1024() {
        assert_eq!(parse_blob_size("512"), Ok(512));
        assert_eq!(parse_blob_size("64k"), Ok(65_536));
        assert_eq!(parse_blob_size("1m"), Ok(1 << 20));
        assert_eq!(parse_blob_size("1t"), Ok(MAX_BLOB));
        assert_eq!(parse_blob_size("0"), Ok(0));
        let err = parse_blob_size("1025g").unwrap_err();
        assert!(err.contains("1 TiB"), "{err}");
        let err = parse_blob_size("1x").unwrap_err();
        assert!(err.contains("unknown unit 'x'"), "{err}");
    }

    #[test]
    fn status_codes_must_be_200_to_599() {
        assert_eq!(parse_status("200"), Ok(StatusCode::OK));
        assert_eq!(parse_status("599").unwrap().as_u16(), 599);
        for bad in ["99", "199", "600", "", "abc", "-1", "70000"] {
            assert!(parse_status(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn delays_must_be_0_to_60000_ms() {
        assert_eq!(parse_delay("0"), Ok(Duration::ZERO));
        assert_eq!(parse_delay("60000"), Ok(Duration::from_secs(60)));
        for bad in ["60001", "", "1.5", "-3", "1s"] {
            assert!(parse_delay(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn cpu_answers_after_its_work_and_refuses_bad_times() {
        let blob = crate::body::blob_buffer();
        match route_plain("/cpu/2000", &blob) {
            Answer::Serial(work, response) => {
                assert_eq!(work, Duration::from_micros(2000));
                assert_eq!(response.status(), StatusCode::OK);
            }
            _ => panic!("expected a serial answer"),
        }
        assert_eq!(
            now(route_plain("/cpu/0", &blob)).status(),
            StatusCode::BAD_REQUEST
        );
    }

    #[test]
    fn cpu_must_be_1_to_a_million_us() {
        assert_eq!(parse_cpu("1"), Ok(Duration::from_micros(1)));
        assert_eq!(parse_cpu("1000000"), Ok(Duration::from_secs(1)));
        for bad in ["0", "1000001", "", "1.5", "-3", "2ms"] {
            assert!(parse_cpu(bad).is_err(), "{bad}");
        }
    }

    fn route_plain(path: &str, blob: &Bytes) -> Answer {
        route(path, blob, &Bytes::from_static(INDEX))
    }

    #[test]
    fn routes_by_path() {
        let blob = crate::body::blob_buffer();
        assert_eq!(now(route_plain("/hello", &blob)).status(), StatusCode::OK);
        assert_eq!(now(route_plain("/", &blob)).status(), StatusCode::OK);
        assert_eq!(
            now(route_plain("/nope", &blob)).status(),
            StatusCode::NOT_FOUND
        );
        assert_eq!(
            now(route_plain("/hello/", &blob)).status(),
            StatusCode::NOT_FOUND
        );
        let blob_answer = now(route_plain("/blob/3m", &blob));
        assert_eq!(blob_answer.body().size_hint().exact(), Some(3 << 20));
        let no_content = now(route_plain("/status/204", &blob));
        assert_eq!(no_content.status(), StatusCode::NO_CONTENT);
        assert_eq!(no_content.body().size_hint().exact(), Some(0));
        match route_plain("/delay/5", &blob) {
            Answer::After(delay, response) => {
                assert_eq!(delay, Duration::from_millis(5));
                assert_eq!(
                    response.body().size_hint().exact(),
                    Some(HELLO.len() as u64)
                );
            }
            Answer::Now(_) | Answer::Serial(..) => panic!("expected a delayed answer"),
        }
    }
}
