//! The engine over HTTP/2 (`--h2`) against well-behaved and misbehaving
//! h2c servers on loopback: exact `-n` accounting with many streams per
//! connection, the server's stream limit obeyed, and GOAWAY, RST_STREAM, a
//! stalled stream, garbage frames and a server without HTTP/2 each counted
//! under their class, with no hang.
//!
//! The servers are the `h2` crate's server side (`common::h2c`, hyper's
//! HTTP/2, the conformance reference of dyno's own client: a fault is
//! exactly the frame it names); the raw ones are plain sockets, and the framed ones write frames byte by byte
//! (CONTINUATION, an oversized frame, a window that never opens).

#[allow(dead_code)]
mod common;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use common::h2c::{BODY, Fault, H2Server, h2_server};
use dyno_http::{ErrorClass, Outcome, Settings, Stop};

const TIMEOUT: Duration = Duration::from_millis(500);

fn h2_settings(addr: SocketAddr, n: u64, connections: usize, streams: usize) -> Settings {
    let mut s = common::settings(
        &format!("http://{addr}/x"),
        Stop::Requests(n),
        connections,
        TIMEOUT,
    );
    s.http2 = true;
    s.streams = streams;
    s
}

/// Runs the engine; a run must end well within its worst case.
fn run(settings: Settings) -> Outcome {
    let began = Instant::now();
    let outcome =
        dyno_http::run(settings, Arc::new(AtomicBool::new(false)), |_| {}).expect("the run starts");
    assert!(
        began.elapsed() < Duration::from_secs(30),
        "the run hung: {:?}",
        began.elapsed()
    );
    outcome
}

/// Every request is counted once: answered or failed.
fn assert_accounted(o: &Outcome, n: u64) {
    let s = &o.stats;
    assert_eq!(s.requests(), n, "errors {:?}", s.errors);
    assert_eq!(s.responses + s.errors.total(), n);
    assert_eq!(s.unfinished, 0);
}

/// Runs `n` requests on `connections` connections of `streams` streams
/// each against an h2c server with `fault`, and checks every request is
/// accounted for; the server, for what it saw, and the outcome.
fn run_against(fault: Fault, n: u64, connections: usize, streams: usize) -> (H2Server, Outcome) {
    let server = h2_server(fault);
    let o = run(h2_settings(server.addr, n, connections, streams));
    assert_accounted(&o, n);
    (server, o)
}

#[test]
fn many_streams_count_exactly_and_headers_are_compressed() {
    let (server, o) = run_against(Fault::None, 2000, 3, 10);
    let s = &o.stats;
    assert_eq!(s.errors.total(), 0, "{:?}", s.errors);
    assert_eq!(s.status, vec![(200, 2000)]);
    assert_eq!(s.body_bytes, 2000 * BODY.len() as u64);
    assert_eq!(
        server.requests.load(Ordering::SeqCst),
        2000,
        "the server saw each once"
    );
    assert_eq!(s.connects, 3);
    assert!(
        server.peak.load(Ordering::SeqCst) > 3,
        "streams overlapped on a connection"
    );
    // The same header fields again and again: HPACK sends most as indexes.
    let saved = s.h2.header_savings().expect("header bytes were counted");
    assert!(saved > 0.5, "HPACK saved {saved}");
    assert!(s.h2.header_block_written > 0 && s.h2.header_block_read > 0);
    assert!(s.bytes_read > s.body_bytes && s.bytes_written > 0);
}

#[test]
fn the_servers_stream_limit_is_obeyed_and_recorded() {
    let (server, o) = run_against(Fault::MaxStreams(2), 600, 1, 16);
    assert_eq!(o.stats.errors.total(), 0, "{:?}", o.stats.errors);
    assert_eq!(o.stats.h2.max_concurrent_streams, Some(2));
    assert!(
        server.peak.load(Ordering::SeqCst) <= 2,
        "never more than the limit"
    );
}

#[test]
fn a_graceful_goaway_loses_nothing_and_the_run_moves_to_new_connections() {
    let (_server, o) = run_against(Fault::GracefulGoAwayAfter(50), 500, 2, 4);
    let s = &o.stats;
    assert_eq!(s.errors.total(), 0, "{:?}", s.errors);
    assert_eq!(s.responses, 500);
    assert!(
        s.connects >= 10,
        "one connection per 50 requests: {}",
        s.connects
    );
}

#[test]
fn an_abrupt_goaway_fails_only_what_it_cut_and_the_run_goes_on() {
    let (_server, o) = run_against(Fault::GoAwayAfter(50), 500, 2, 4);
    let s = &o.stats;
    assert!(s.responses >= 400, "most were answered: {}", s.responses);
    // Every request under way when a connection's GOAWAY came is cut,
    // and counted under it.
    assert!(
        s.errors.of(ErrorClass::GoAway) > 0,
        "the GOAWAYs cut requests"
    );
    assert_eq!(
        s.errors.of(ErrorClass::GoAway),
        s.errors.total(),
        "only what the GOAWAYs cut: {:?}",
        s.errors
    );
    assert!(s.connects > 2, "new connections replaced the ended ones");
}

#[test]
fn rst_stream_fails_one_request_and_the_connection_stays() {
    let (_server, o) = run_against(Fault::ResetEvery(10), 400, 2, 4);
    let s = &o.stats;
    assert_eq!(s.errors.of(ErrorClass::StreamReset), 40, "{:?}", s.errors);
    assert_eq!(s.errors.total(), 40);
    assert_eq!(s.connects, 2, "a reset stream does not end its connection");
}

#[test]
fn a_stalled_stream_times_out_alone() {
    let (_server, o) = run_against(Fault::StallOne(7), 100, 1, 4);
    let s = &o.stats;
    assert_eq!(s.errors.of(ErrorClass::ReadTimeout), 1, "{:?}", s.errors);
    assert_eq!(s.responses, 99);
}

/// A loopback listener that does not block its accepts, its address, and
/// the flag that stops its server.
fn listen() -> (TcpListener, SocketAddr, Arc<AtomicBool>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let addr = listener.local_addr().unwrap();
    (listener, addr, Arc::new(AtomicBool::new(false)))
}

/// A raw server: accepts, reads what comes, and answers `reply`.
fn raw_server(reply: &'static [u8]) -> (SocketAddr, std::thread::JoinHandle<()>, Arc<AtomicBool>) {
    let (listener, addr, stop) = listen();
    let done = Arc::clone(&stop);
    let thread = std::thread::spawn(move || {
        while !done.load(Ordering::SeqCst) {
            match listener.accept() {
                Ok((mut socket, _)) => {
                    socket.set_nonblocking(false).unwrap();
                    socket
                        .set_read_timeout(Some(Duration::from_millis(50)))
                        .unwrap();
                    let mut buf = [0u8; 4096];
                    let _ = socket.read(&mut buf);
                    let _ = socket.write_all(reply);
                }
                Err(_) => std::thread::sleep(Duration::from_millis(5)),
            }
        }
    });
    (addr, thread, stop)
}

#[test]
fn garbage_frames_and_a_server_without_http2_end_the_run_with_the_reason() {
    for reply in [
        &b"\x00\x00\x04\xff\x00\x00\x00\x00\x00garbage that is not a frame"[..],
        b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
    ] {
        let (addr, thread, stop) = raw_server(reply);
        let o = run(h2_settings(addr, 1000, 2, 4));
        stop.store(true, Ordering::SeqCst);
        thread.join().unwrap();
        let s = &o.stats;
        assert_eq!(s.responses, 0);
        let why = o.protocol_failure.as_deref().expect("the reason is kept");
        assert!(why.contains("HTTP/2 handshake failed"), "{why}");
        assert!(
            s.errors.total() >= 1 && s.errors.total() < 1000,
            "given up early: {:?}",
            s.errors
        );
        assert!(!o.refused, "not a refused connection");
    }
}

#[test]
fn methods_bodies_headers_and_templates_go_over_h2_as_given() {
    use dyno_http::request::{RequestSpec, RequestTemplate, parse_url};
    let server = h2_server(Fault::None);
    let mut s = h2_settings(server.addr, 60, 2, 4);
    let (target, _) = parse_url(&format!("http://{}/", server.addr)).unwrap();
    s.requests = ["/item/{seq}", "/other/{seq}"]
        .iter()
        .map(|path| {
            RequestTemplate::new(
                &target,
                &RequestSpec {
                    method: "POST".into(),
                    path: (*path).into(),
                    headers: vec![
                        ("X-Test".into(), "yes".into()),
                        ("Content-Type".into(), "text/plain".into()),
                    ],
                    body: Some(b"abc".to_vec()),
                    keep_alive: true,
                },
            )
            .unwrap()
        })
        .collect();
    s.schedule.warmup = Duration::from_millis(200);
    let o = run(s);
    assert_accounted(&o, 60);
    assert_eq!(o.stats.errors.total(), 0, "{:?}", o.stats.errors);
    let seen = server.seen.lock().unwrap();
    // The warm-up's requests came too, and are not counted.
    assert!(seen.len() >= 60, "{}", seen.len());
    let mut paths: Vec<&str> = seen.iter().map(|r| r.1.as_str()).collect();
    paths.sort_unstable();
    paths.dedup();
    assert_eq!(paths.len(), seen.len(), "every {{seq}} once");
    for (method, path, body, header) in seen.iter() {
        assert_eq!(method, "POST");
        assert!(
            path.starts_with("/item/") || path.starts_with("/other/"),
            "{path}"
        );
        assert_eq!(body, b"abc");
        assert_eq!(header.as_deref(), Some("yes"));
    }
}

#[test]
fn the_open_model_keeps_its_schedule_over_h2() {
    let server = h2_server(Fault::None);
    let mut s = h2_settings(server.addr, 300, 2, 4);
    s.schedule.rate_per_sec = Some(1000.0);
    let o = run(s);
    assert_accounted(&o, 300);
    assert_eq!(o.stats.errors.total(), 0, "{:?}", o.stats.errors);
    // 300 requests at 1000/s take about 0.3 s whoever answers.
    assert!(o.elapsed >= Duration::from_millis(290), "{:?}", o.elapsed);
    assert_eq!(o.stats.uncorrected.len(), 300, "both latencies recorded");
}

/// HPACK's savings count received (response) header blocks only, as
/// h2load's "space savings" does: a long request header moves the request
/// side's figures and leaves the savings exactly where they were.
#[test]
fn hpack_savings_count_received_headers_only_as_h2load_does() {
    use dyno_http::request::{RequestSpec, RequestTemplate, parse_url};
    let server = h2_server(Fault::None);
    let short = h2_settings(server.addr, 200, 1, 1);
    let mut long = short.clone();
    let (target, path) = parse_url(&format!("http://{}/x", server.addr)).unwrap();
    long.requests = vec![
        RequestTemplate::new(
            &target,
            &RequestSpec {
                method: "GET".into(),
                path,
                headers: vec![("x-long".into(), "x".repeat(300))],
                body: None,
                keep_alive: true,
            },
        )
        .unwrap(),
    ];
    let a = run(short.clone());
    let b = run(long.clone());
    assert_accounted(&a, 200);
    assert_accounted(&b, 200);
    let (ha, hb) = (&a.stats.h2, &b.stats.h2);
    // The same answers, so the same response header blocks.
    assert_eq!(ha.header_block_read, hb.header_block_read);
    assert_eq!(ha.plain_header_read, hb.plain_header_read);
    assert_eq!(ha.header_savings(), hb.header_savings());
    // What was sent grew by the header, 200 times in plain.
    assert!(hb.plain_header_written >= ha.plain_header_written + 200 * 306);
    assert!(hb.header_block_written > ha.header_block_written);
    // The metrics: wire and plain are the received side; the sent side has
    // its own names.
    let metric = |o: &Outcome, s: &Settings, name: &str| {
        o.metrics(s)
            .into_iter()
            .find(|m| m.name == name)
            .unwrap_or_else(|| panic!("no {name}"))
            .value
    };
    for name in [
        "h2_header_savings_percent",
        "h2_header_bytes_wire",
        "h2_header_bytes_plain",
    ] {
        assert_eq!(metric(&a, &short, name), metric(&b, &long, name), "{name}");
    }
    assert_eq!(
        metric(&a, &short, "h2_header_bytes_wire"),
        ha.header_block_read as f64
    );
    assert!(
        metric(&b, &long, "h2_request_header_bytes_plain")
            > metric(&a, &short, "h2_request_header_bytes_plain")
    );
    assert!(metric(&a, &short, "h2_request_header_bytes_wire") > 0.0);
    assert_eq!(metric(&a, &short, "h2_goaway_retried"), 0.0);
}

/// A frame as a server writes it.
fn frame(kind: u8, flags: u8, stream: u32, payload: &[u8]) -> Vec<u8> {
    let len = (payload.len() as u32).to_be_bytes();
    let mut f = vec![len[1], len[2], len[3], kind, flags];
    f.extend_from_slice(&stream.to_be_bytes());
    f.extend_from_slice(payload);
    f
}

const END_STREAM: u8 = 0x1;
const END_HEADERS: u8 = 0x4;
/// HPACK for `:status: 200` (static index 8) and `content-type:
/// text/plain` (a literal with the static name 31, not indexed).
const STATUS_200: u8 = 0x88;
const CONTENT_TYPE: &[u8] = b"\x0f\x10\x0atext/plain";

/// A server written frame by frame: it sends its SETTINGS (`settings`:
/// id and value pairs), then answers every stream whose HEADERS the client
/// sends with `reply(stream)`.
fn frame_server(
    settings: &'static [(u16, u32)],
    reply: fn(u32) -> Vec<u8>,
) -> (SocketAddr, std::thread::JoinHandle<()>, Arc<AtomicBool>) {
    let (listener, addr, stop) = listen();
    let done = Arc::clone(&stop);
    let thread = std::thread::spawn(move || {
        let mut conns = Vec::new();
        while !done.load(Ordering::SeqCst) {
            let Ok((mut socket, _)) = listener.accept() else {
                std::thread::sleep(Duration::from_millis(5));
                continue;
            };
            let done = Arc::clone(&done);
            conns.push(std::thread::spawn(move || {
                let mut payload = Vec::new();
                for (id, value) in settings {
                    payload.extend_from_slice(&id.to_be_bytes());
                    payload.extend_from_slice(&value.to_be_bytes());
                }
                let greeting = frame(0x4, 0, 0, &payload);
                let mut at = 24; // the client's preface
                common::answer_reads(&mut socket, &done, &greeting, |socket, bytes| {
                    while bytes.len() >= at + 9 {
                        let h = &bytes[at..at + 9];
                        let len = (usize::from(h[0]) << 16)
                            | (usize::from(h[1]) << 8)
                            | usize::from(h[2]);
                        if bytes.len() < at + 9 + len {
                            break;
                        }
                        let stream = u32::from_be_bytes([h[5], h[6], h[7], h[8]]);
                        if h[3] == 0x1 && socket.write_all(&reply(stream)).is_err() {
                            return false;
                        }
                        at += 9 + len;
                    }
                    true
                });
            }));
        }
        for c in conns {
            let _ = c.join();
        }
    });
    (addr, thread, stop)
}

/// Runs `settings` against a frame server and stops the server.
fn run_framed(
    settings: &'static [(u16, u32)],
    reply: fn(u32) -> Vec<u8>,
    change: impl FnOnce(&mut Settings, SocketAddr),
    n: u64,
) -> Outcome {
    let (addr, thread, stop) = frame_server(settings, reply);
    let mut s = h2_settings(addr, n, 1, 2);
    change(&mut s, addr);
    let o = run(s);
    stop.store(true, Ordering::SeqCst);
    thread.join().unwrap();
    assert_accounted(&o, n);
    o
}

#[test]
fn a_header_block_split_over_continuation_frames_is_read_whole() {
    let o = run_framed(
        &[],
        |stream| {
            // The block cut inside its second field, over two CONTINUATIONs.
            let mut f = frame(0x1, 0, stream, &[STATUS_200, CONTENT_TYPE[0]]);
            f.extend(frame(0x9, 0, stream, &CONTENT_TYPE[1..4]));
            f.extend(frame(0x9, END_HEADERS, stream, &CONTENT_TYPE[4..]));
            f.extend(frame(0x0, END_STREAM, stream, BODY));
            f
        },
        |_, _| {},
        40,
    );
    let s = &o.stats;
    assert_eq!(s.errors.total(), 0, "{:?}", s.errors);
    assert_eq!(s.status, vec![(200, 40)]);
    assert_eq!(s.body_bytes, 40 * BODY.len() as u64);
    assert_eq!(s.h2.header_block_read, 40 * (1 + CONTENT_TYPE.len() as u64));
    // ":status" 200 and "content-type" text/plain, in plain.
    assert_eq!(s.h2.plain_header_read, 40 * (7 + 3 + 12 + 10));
}

#[test]
fn a_header_block_cut_by_another_frame_is_a_protocol_error() {
    let o = run_framed(
        &[],
        |stream| {
            let mut f = frame(0x1, 0, stream, &[STATUS_200]);
            f.extend(frame(0x0, END_STREAM, stream, BODY));
            f
        },
        |_, _| {},
        6,
    );
    let s = &o.stats;
    assert_eq!(s.responses, 0);
    assert_eq!(s.errors.of(ErrorClass::H2Protocol), 6, "{:?}", s.errors);
    assert!(s.connects >= 3, "each broken connection was replaced");
}

#[test]
fn a_frame_above_the_frame_size_limit_is_a_protocol_error() {
    let o = run_framed(
        &[],
        |stream| {
            let mut f = frame(0x1, END_HEADERS, stream, &[STATUS_200]);
            f.extend(frame(0x0, END_STREAM, stream, &vec![b'x'; 16_385]));
            f
        },
        |_, _| {},
        6,
    );
    let s = &o.stats;
    assert_eq!(s.responses, 0);
    assert_eq!(s.errors.of(ErrorClass::H2Protocol), 6, "{:?}", s.errors);
}

#[test]
fn a_window_that_never_opens_fails_the_upload_as_a_write_without_a_hang() {
    use dyno_http::request::{RequestSpec, RequestTemplate, parse_url};
    // SETTINGS_INITIAL_WINDOW_SIZE 0, and no WINDOW_UPDATE ever: a body
    // can never be sent. A GET still goes (it has no body to hold back).
    let o = run_framed(
        &[(0x4, 0)],
        |_| Vec::new(),
        |s, addr| {
            let (target, path) = parse_url(&format!("http://{addr}/x")).unwrap();
            s.requests = vec![
                RequestTemplate::new(
                    &target,
                    &RequestSpec {
                        method: "POST".into(),
                        path,
                        headers: Vec::new(),
                        body: Some(b"abc".to_vec()),
                        keep_alive: true,
                    },
                )
                .unwrap(),
            ];
        },
        4,
    );
    let s = &o.stats;
    // The first request went before the server's SETTINGS came, in the
    // protocol's default window, and was never answered; every later one
    // was held back by the closed window.
    assert_eq!(s.errors.of(ErrorClass::ReadTimeout), 1, "{:?}", s.errors);
    assert_eq!(s.errors.of(ErrorClass::Write), 3, "{:?}", s.errors);
    assert_eq!(s.connects, 1, "each stream was reset alone");
}
