//! Fuzzes how the server takes a BBS request apart: the request line and
//! headers (hyper, as `dyno serve` sets it up), the routing of the path,
//! and the strict decoding of query strings and form bodies.
//!
//! The input is split at its first `\0`: before it, a query string and a
//! form body (split at the first `#`) given to the decoder and a path given
//! to the router; the whole input is also sent as the bytes of one client
//! connection to a server with the BBS on an in-memory database.
//!
//! Checked: no panic, no hang; decoded pairs never repeat a name (a
//! repeat is a 400 naming it) and an accepted query without `%` or `+`
//! decodes to itself; the server answers every connection with HTTP/1.1
//! responses or nothing (a client that sent no complete request), never
//! with bytes that are not a response.

#![no_main]

use std::sync::OnceLock;

use dyno_serve::fuzz::{Server, fields, route};
use libfuzzer_sys::fuzz_target;

fn runtime() -> &'static tokio::runtime::Runtime {
    static RUNTIME: OnceLock<tokio::runtime::Runtime> = OnceLock::new();
    RUNTIME.get_or_init(|| {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            // `/delay/<ms>` returns at once on a paused clock.
            .start_paused(true)
            .build()
            .expect("a runtime")
    })
}

fn server() -> &'static Server {
    static SERVER: OnceLock<Server> = OnceLock::new();
    SERVER.get_or_init(Server::new)
}

fuzz_target!(|data: &[u8]| {
    let head = data.split(|&b| b == 0).next().unwrap_or_default();
    if let Ok(text) = std::str::from_utf8(head) {
        let (query, body) = match text.split_once('#') {
            Some((q, b)) => (q, Some(b)),
            None => (text, None),
        };
        if let Ok(pairs) = fields(body, query) {
            let mut names: Vec<&str> = pairs.iter().map(|(n, _)| n.as_str()).collect();
            names.sort_unstable();
            let before = names.len();
            names.dedup();
            assert_eq!(names.len(), before, "a name repeats in {pairs:?}");
            if body.is_none() && !query.contains(['%', '+']) {
                let plain: Vec<(String, String)> = query
                    .split('&')
                    .filter(|p| !p.is_empty())
                    .map(|p| {
                        let (n, v) = p.split_once('=').unwrap_or((p, ""));
                        (n.to_owned(), v.to_owned())
                    })
                    .collect();
                assert_eq!(pairs, plain);
            }
        }
        let _ = route(text);
    }
    let back = runtime().block_on(server().exchange(data));
    // A connection that opens with HTTP/2's preface is answered in HTTP/2
    // frames (h2c by prior knowledge); an HTTP/1.0 request in HTTP/1.0.
    const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
    assert!(
        back.is_empty()
            || back.starts_with(b"HTTP/1.1 ")
            || back.starts_with(b"HTTP/1.0 ")
            || data.starts_with(PREFACE),
        "not a response: {:?}",
        String::from_utf8_lossy(&back[..back.len().min(200)])
    );
});
