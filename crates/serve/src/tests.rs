//! End-to-end tests: real HTTP/1.1 over loopback against a spawned server,
//! spoken by a deliberately small raw client so that the bytes on the wire are
//! what is asserted (exact lengths, pipelining, HEAD without a body).

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use super::*;

/// One parsed response.
#[derive(Debug)]
pub(crate) struct Reply {
    pub(crate) status: u16,
    pub(crate) headers: Vec<(String, String)>,
    pub(crate) body: Vec<u8>,
}

impl Reply {
    pub(crate) fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    fn content_length(&self) -> Option<u64> {
        self.header("content-length").map(|v| v.parse().unwrap())
    }

    pub(crate) fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }
}

/// A raw HTTP/1.1 connection.
pub(crate) struct Client {
    reader: BufReader<TcpStream>,
}

impl Client {
    pub(crate) fn connect(addr: SocketAddr) -> Self {
        let stream = TcpStream::connect(addr).unwrap();
        stream
            .set_read_timeout(Some(Duration::from_secs(30)))
            .unwrap();
        Self {
            reader: BufReader::new(stream),
        }
    }

    pub(crate) fn send_raw(&mut self, raw: &[u8]) {
        self.reader.get_mut().write_all(raw).unwrap();
    }

    pub(crate) fn send(&mut self, method: &str, path: &str) {
        self.send_raw(request(method, path).as_bytes());
    }

    /// Reads one response; `head` says it answers a HEAD request (no body).
    pub(crate) fn read(&mut self, head: bool) -> Reply {
        let mut line = String::new();
        self.reader.read_line(&mut line).unwrap();
        let mut parts = line.trim_end().splitn(3, ' ');
        assert_eq!(parts.next(), Some("HTTP/1.1"), "status line {line:?}");
        let status = parts.next().unwrap().parse().unwrap();
        let mut headers = Vec::new();
        loop {
            let mut line = String::new();
            self.reader.read_line(&mut line).unwrap();
            let line = line.trim_end();
            if line.is_empty() {
                break;
            }
            let (name, value) = line.split_once(':').unwrap();
            headers.push((name.to_owned(), value.trim().to_owned()));
        }
        let mut reply = Reply {
            status,
            headers,
            body: Vec::new(),
        };
        assert_eq!(
            reply.header("transfer-encoding"),
            None,
            "the server always knows its lengths"
        );
        // 204 and 304 carry neither a body nor a Content-Length.
        if !head && !matches!(status, 204 | 304) {
            let len = reply.content_length().expect("a content-length");
            reply.body = vec![0; len as usize];
            self.reader.read_exact(&mut reply.body).unwrap();
        }
        reply
    }

    pub(crate) fn get(&mut self, path: &str) -> Reply {
        self.send("GET", path);
        self.read(false)
    }

    /// Sends `method path` with `body` (of `content_type`, when given) and
    /// reads the answer.
    pub(crate) fn send_body(
        &mut self,
        method: &str,
        path: &str,
        content_type: Option<&str>,
        body: &[u8],
    ) -> Reply {
        let kind = content_type
            .map(|t| format!("Content-Type: {t}\r\n"))
            .unwrap_or_default();
        let head = format!(
            "{method} {path} HTTP/1.1\r\nHost: test\r\n{kind}Content-Length: {}\r\n\r\n",
            body.len()
        );
        self.send_raw(&[head.as_bytes(), body].concat());
        self.read(method == "HEAD")
    }

    /// True when the server has closed the connection (reads EOF or a reset).
    pub(crate) fn is_closed(&mut self) -> bool {
        match self.reader.fill_buf() {
            Ok(buffered) => buffered.is_empty(),
            Err(err) => err.kind() == std::io::ErrorKind::ConnectionReset,
        }
    }
}

fn request(method: &str, path: &str) -> String {
    format!("{method} {path} HTTP/1.1\r\nHost: test\r\n\r\n")
}

fn server() -> ServerHandle {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    spawn(listener, 2).unwrap()
}

pub(crate) fn get(addr: SocketAddr, path: &str) -> Reply {
    Client::connect(addr).get(path)
}

#[test]
fn hello_is_the_92_byte_page() {
    assert_eq!(HELLO.len(), 92);
    let server = server();
    let reply = get(server.local_addr(), "/hello");
    assert_eq!(reply.status, 200);
    assert_eq!(reply.content_length(), Some(92));
    assert_eq!(reply.header("content-type"), Some("text/html"));
    assert_eq!(reply.body, HELLO);
}

#[test]
fn blobs_have_exact_lengths() {
    let server = server();
    let mut client = Client::connect(server.local_addr());
    let buffer = body::blob_buffer();
    for (path, len) in [
        ("/blob/512", 512),
        ("/blob/64k", 64 << 10),
        ("/blob/1m", 1 << 20),
        ("/blob/3m", 3 << 20),
        ("/blob/0", 0),
    ] {
        let reply = client.get(path);
        assert_eq!(reply.status, 200, "{path}");
        assert_eq!(reply.content_length(), Some(len as u64), "{path}");
        assert_eq!(
            reply.header("content-type"),
            Some("application/octet-stream")
        );
        assert_eq!(reply.body.len(), len, "{path}");
        // The bytes are the shared buffer, repeated past its end.
        for (i, chunk) in reply.body.chunks(buffer.len()).enumerate() {
            assert_eq!(chunk, &buffer[..chunk.len()], "{path} chunk {i}");
        }
    }
}

#[test]
fn bad_blob_size_is_400_with_the_reason() {
    let server = server();
    let reply = get(server.local_addr(), "/blob/1x");
    assert_eq!(reply.status, 400);
    assert!(
        reply.text().contains("unknown unit 'x'"),
        "{}",
        reply.text()
    );
    let reply = get(server.local_addr(), "/blob/2t");
    assert_eq!(reply.status, 400);
    assert!(reply.text().contains("1 TiB"), "{}", reply.text());
}

#[test]
fn status_echoes_the_code() {
    let server = server();
    let mut client = Client::connect(server.local_addr());
    let reply = client.get("/status/404");
    assert_eq!(reply.status, 404);
    assert_eq!(reply.text(), "Not Found");
    assert_eq!(client.get("/status/503").status, 503);
    let no_content = client.get("/status/204");
    assert_eq!(no_content.status, 204);
    assert_eq!(no_content.content_length(), None);
    // The connection is still in step: nothing was sent after the 204 head.
    assert_eq!(client.get("/status/205").content_length(), Some(0));
    let reply = client.get("/status/99");
    assert_eq!(reply.status, 400);
    assert!(reply.text().contains("200 to 599"), "{}", reply.text());
    assert_eq!(client.get("/status/600").status, 400);
}

#[test]
fn delay_waits_at_least_that_long() {
    let server = server();
    let started = Instant::now();
    let reply = get(server.local_addr(), "/delay/50");
    assert!(started.elapsed() >= Duration::from_millis(50));
    assert_eq!(reply.status, 200);
    assert_eq!(reply.body, HELLO);
    let reply = get(server.local_addr(), "/delay/70000");
    assert_eq!(reply.status, 400);
    assert!(reply.text().contains("60000"), "{}", reply.text());
}

#[test]
fn index_and_unknown_paths() {
    let server = server();
    let index = get(server.local_addr(), "/");
    assert_eq!(index.status, 200);
    assert!(index.text().contains("/blob/<size>"), "{}", index.text());
    let missing = get(server.local_addr(), "/missing");
    assert_eq!(missing.status, 404);
    assert!(!missing.body.is_empty());
}

#[test]
fn keep_alive_serves_several_requests_on_one_connection() {
    let server = server();
    let mut client = Client::connect(server.local_addr());
    assert_eq!(client.get("/hello").body, HELLO);
    assert_eq!(client.get("/blob/1k").body.len(), 1024);
    assert_eq!(client.get("/hello").body, HELLO);
}

#[test]
fn pipelined_requests_are_answered_in_order() {
    let server = server();
    let mut client = Client::connect(server.local_addr());
    let batch = [
        request("GET", "/hello"),
        request("GET", "/status/503"),
        request("GET", "/blob/100"),
    ]
    .concat();
    client.send_raw(batch.as_bytes());
    let first = client.read(false);
    let second = client.read(false);
    let third = client.read(false);
    assert_eq!((first.status, first.body.as_slice()), (200, HELLO));
    assert_eq!(second.status, 503);
    assert_eq!((third.status, third.body.len()), (200, 100));
}

#[test]
fn head_has_a_length_but_no_body() {
    let server = server();
    let mut client = Client::connect(server.local_addr());
    client.send("HEAD", "/hello");
    let reply = client.read(true);
    assert_eq!(reply.status, 200);
    assert_eq!(reply.content_length(), Some(92));
    client.send("HEAD", "/blob/3m");
    assert_eq!(client.read(true).content_length(), Some(3 << 20));
    // Had a body been sent, this would read its bytes as a status line.
    assert_eq!(client.get("/hello").body, HELLO);
}

#[test]
fn request_bodies_are_read_and_discarded() {
    let server = server();
    let mut client = Client::connect(server.local_addr());
    let payload = vec![b'x'; 300_000];
    let head = format!(
        "POST /hello HTTP/1.1\r\nHost: test\r\nContent-Length: {}\r\n\r\n",
        payload.len()
    );
    client.send_raw(head.as_bytes());
    client.send_raw(&payload);
    let reply = client.read(false);
    assert_eq!((reply.status, reply.body.as_slice()), (200, HELLO));
    // The body was consumed, so the connection stays usable.
    assert_eq!(client.get("/hello").body, HELLO);
    client.send_raw(b"PUT /blob/10 HTTP/1.1\r\nHost: test\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n");
    assert_eq!(client.read(false).body.len(), 10);
}

#[test]
fn shutdown_refuses_new_connections_and_finishes_in_flight_requests() {
    let server = server();
    let addr = server.local_addr();
    let mut idle = Client::connect(addr);
    assert_eq!(idle.get("/hello").status, 200);
    let in_flight = thread::spawn(move || {
        let mut client = Client::connect(addr);
        client.send("GET", "/delay/300");
        let reply = client.read(false);
        (reply, client.is_closed())
    });
    // Let the request reach the server before shutting it down.
    thread::sleep(Duration::from_millis(100));
    let started = Instant::now();
    server.shutdown();
    assert!(
        started.elapsed() >= Duration::from_millis(100),
        "shutdown waited for the in-flight request"
    );
    let (reply, closed) = in_flight.join().unwrap();
    assert_eq!(reply.status, 200);
    assert_eq!(reply.body, HELLO);
    assert!(closed, "the connection closes after its last response");
    assert!(idle.is_closed(), "idle keep-alive connections are closed");
    let refused = TcpStream::connect(addr);
    assert!(refused.is_err(), "connected after shutdown: {refused:?}");
}

#[test]
fn dropping_the_handle_stops_the_server() {
    let server = server();
    let addr = server.local_addr();
    assert_eq!(get(addr, "/hello").status, 200);
    drop(server);
    assert!(TcpStream::connect(addr).is_err());
}

#[test]
fn zero_threads_still_serves() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let server = spawn(listener, 0).unwrap();
    assert_eq!(get(server.local_addr(), "/hello").body, HELLO);
}

#[tokio::test]
async fn serve_returns_ok_when_shutdown_completes() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (stop_tx, stop_rx) = oneshot::channel::<()>();
    let server = tokio::spawn(serve(listener, async {
        let _ = stop_rx.await;
    }));
    let reply = tokio::task::spawn_blocking(move || get(addr, "/hello"))
        .await
        .unwrap();
    assert_eq!(reply.body, HELLO);
    stop_tx.send(()).unwrap();
    let result = tokio::time::timeout(Duration::from_secs(10), server)
        .await
        .expect("serve returns soon after shutdown")
        .unwrap();
    assert!(result.is_ok());
    assert!(TcpStream::connect(addr).is_err());
}

#[tokio::test]
async fn grace_period_is_bounded() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (stop_tx, stop_rx) = oneshot::channel::<()>();
    let server = tokio::spawn(serve_with_grace(
        listener,
        async {
            let _ = stop_rx.await;
        },
        Duration::from_millis(100),
        Svc::new(App::Plain, None),
        None,
    ));
    // A request that would outlive the grace period by far.
    let slow = tokio::task::spawn_blocking(move || {
        let mut client = Client::connect(addr);
        client.send("GET", "/delay/60000");
        client.is_closed()
    });
    tokio::time::sleep(Duration::from_millis(100)).await;
    stop_tx.send(()).unwrap();
    tokio::time::timeout(Duration::from_secs(10), server)
        .await
        .expect("serve gives up on the slow request")
        .unwrap();
    assert!(slow.await.unwrap(), "the slow connection was dropped");
}
