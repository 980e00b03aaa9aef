//! `dyno http`: flag checks, the statuses a run expects, and what the
//! human and ab reports say, through the real binary against real servers
//! on loopback.

use super::*;

/// A loopback server that answers every request on every connection with
/// `response` (keep-alive), for as long as the test runs.
fn canned_server(response: &'static [u8]) -> std::net::SocketAddr {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { return };
            std::thread::spawn(move || {
                let mut buf = [0u8; 8192];
                let mut seen = Vec::new();
                loop {
                    match stream.read(&mut buf) {
                        Ok(0) | Err(_) => return,
                        Ok(n) => seen.extend_from_slice(&buf[..n]),
                    }
                    while let Some(end) = seen.windows(4).position(|w| w == b"\r\n\r\n") {
                        seen.drain(..end + 4);
                        if stream.write_all(response).is_err() {
                            return;
                        }
                    }
                }
            });
        }
    });
    addr
}

#[test]
fn zero_durations_and_timeouts_are_usage_errors() {
    let home = temp();
    assert_refused(
        home.path(),
        &[
            (&["http", "-d", "0"], &["too short", "at least 10ms"]),
            (&["http", "-d", "5ms"], &["too short", "at least 10ms"]),
            (&["http", "--timeout", "0"], &["too short", "at least 1ms"]),
            (
                &["http", "--connect-timeout", "0s"],
                &["too short", "at least 1ms"],
            ),
            (&["http", "--warmup", "-1s"], &["negative"]),
        ],
    );
}
