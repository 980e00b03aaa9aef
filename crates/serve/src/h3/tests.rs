//! HTTP/3 end to end: a real QUIC client (quinn and h3, from
//! `dyno-testutil`) against a spawned server on loopback, and the TLS side
//! of the same server for what it announces.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use dyno_testutil::h3::{H3Client, H3Reply, H3Request};

use crate::{HELLO, ServerHandle, Tls, bind_tcp_udp, spawn_h3, spawn_tls};

fn tls() -> Tls {
    Tls::self_signed(&["localhost".into(), "127.0.0.1".into()]).unwrap()
}

fn server() -> ServerHandle {
    let (tcp, udp) = bind_tcp_udp("127.0.0.1:0".parse().unwrap()).unwrap();
    spawn_h3(tcp, udp, 2, tls()).unwrap()
}

fn client(server: &ServerHandle) -> H3Client {
    H3Client::connect(server.local_addr()).unwrap()
}

fn get(client: &mut H3Client, path: &str) -> H3Reply {
    client.get(path).unwrap()
}

/// The head and body of one HTTP/1.1 GET over TLS (ALPN http/1.1).
fn tls_get(addr: SocketAddr, path: &str) -> (Vec<(String, String)>, Vec<u8>) {
    let config = dyno_testutil::tls::insecure_client_config(
        rustls::DEFAULT_VERSIONS,
        &[b"http/1.1".as_slice()],
    );
    let name = "localhost".try_into().unwrap();
    let tls = rustls::ClientConnection::new(Arc::new(config), name).unwrap();
    let tcp = std::net::TcpStream::connect(addr).unwrap();
    tcp.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    let mut stream = BufReader::new(rustls::StreamOwned::new(tls, tcp));
    let request = format!("GET {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n");
    stream.get_mut().write_all(request.as_bytes()).unwrap();
    let mut line = String::new();
    stream.read_line(&mut line).unwrap();
    assert!(line.starts_with("HTTP/1.1 200"), "{line:?}");
    let mut headers = Vec::new();
    loop {
        let mut line = String::new();
        stream.read_line(&mut line).unwrap();
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        let (name, value) = line.split_once(':').unwrap();
        headers.push((name.to_ascii_lowercase(), value.trim().to_owned()));
    }
    let len: usize = headers
        .iter()
        .find(|(n, _)| n == "content-length")
        .map(|(_, v)| v.parse().unwrap())
        .expect("a content-length");
    let mut body = vec![0; len];
    stream.read_exact(&mut body).unwrap();
    (headers, body)
}

fn header<'a>(headers: &'a [(String, String)], name: &str) -> Option<&'a str> {
    headers
        .iter()
        .find(|(n, _)| n == name)
        .map(|(_, v)| v.as_str())
}

#[test]
fn hello_is_the_92_byte_page_of_http1() {
    let server = server();
    let reply = get(&mut client(&server), "/hello");
    assert_eq!(reply.status, 200);
    assert_eq!(reply.body, HELLO);
    assert_eq!(reply.header("content-length"), Some("92"));
    assert_eq!(reply.header("content-type"), Some("text/html"));
    let (_, http1) = tls_get(server.local_addr(), "/hello");
    assert_eq!(reply.body, http1, "the same bytes over HTTP/1.1 and HTTP/3");
}

#[test]
fn blobs_have_exact_lengths_and_the_shared_bytes() {
    let server = server();
    let mut client = client(&server);
    let buffer = crate::body::blob_buffer();
    for (path, len) in [("/blob/1m", 1 << 20), ("/blob/3m", 3 << 20), ("/blob/0", 0)] {
        let reply = get(&mut client, path);
        assert_eq!(reply.status, 200, "{path}");
        assert_eq!(reply.body.len(), len, "{path}");
        assert_eq!(reply.header("content-length"), Some(&*len.to_string()));
        for (i, chunk) in reply.body.chunks(buffer.len()).enumerate() {
            assert_eq!(chunk, &buffer[..chunk.len()], "{path} chunk {i}");
        }
    }
}

#[test]
fn routes_are_those_of_tcp() {
    let server = server();
    let mut client = client(&server);
    let reply = get(&mut client, "/status/503");
    assert_eq!(
        (reply.status, reply.body.as_slice()),
        (503, &b"Service Unavailable"[..])
    );
    let no_content = get(&mut client, "/status/204");
    assert_eq!(no_content.status, 204);
    assert_eq!(no_content.header("content-length"), None);
    assert!(no_content.body.is_empty());
    let bad = get(&mut client, "/blob/1x");
    assert_eq!(bad.status, 400);
    assert!(String::from_utf8_lossy(&bad.body).contains("unknown unit 'x'"));
    assert_eq!(get(&mut client, "/nope").status, 404);
    assert_eq!(get(&mut client, "/cpu/100").body, HELLO);
    assert_eq!(get(&mut client, "/delay/1").body, HELLO);
    let index = get(&mut client, "/");
    assert!(String::from_utf8_lossy(&index.body).contains("/blob/<size>"));
}

#[test]
fn request_bodies_are_read_and_discarded() {
    let server = server();
    let mut client = client(&server);
    let post = H3Request {
        method: "POST".into(),
        path: "/hello".into(),
        // Past the stream's first flow-control window of quinn's defaults
        // on either side, so the server must read it for the client to
        // finish sending.
        body: vec![b'x'; 3 << 20],
    };
    let reply = client.request(&post).unwrap();
    assert_eq!((reply.status, reply.body.as_slice()), (200, HELLO));
    // The connection is still good.
    assert_eq!(get(&mut client, "/hello").body, HELLO);
}

#[test]
fn head_has_a_length_but_no_body() {
    let server = server();
    let mut client = client(&server);
    for (path, len) in [("/hello", "92"), ("/blob/3m", "3145728")] {
        let head = H3Request {
            method: "HEAD".into(),
            path: path.into(),
            body: Vec::new(),
        };
        let reply = client.request(&head).unwrap();
        assert_eq!(reply.status, 200, "{path}");
        assert_eq!(reply.header("content-length"), Some(len), "{path}");
        assert!(reply.body.is_empty(), "{path}: {} bytes", reply.body.len());
    }
}

#[test]
fn many_concurrent_streams_on_one_connection_are_all_answered() {
    let server = server();
    let mut client = client(&server);
    // More than quinn's default stream limit (100) and hyper's HTTP/2 one
    // (200), each answered on its own stream.
    let requests: Vec<H3Request> = (0..400)
        .map(|i| match i % 3 {
            0 => H3Request::get("/hello"),
            1 => H3Request::get("/blob/64k"),
            _ => H3Request::get("/status/503"),
        })
        .collect();
    let replies = client.concurrent(&requests);
    assert_eq!(replies.len(), 400);
    for (i, reply) in replies.into_iter().enumerate() {
        let reply = reply.unwrap_or_else(|e| panic!("request {i}: {e}"));
        match i % 3 {
            0 => assert_eq!((reply.status, reply.body.as_slice()), (200, HELLO), "{i}"),
            1 => assert_eq!((reply.status, reply.body.len()), (200, 64 << 10), "{i}"),
            _ => assert_eq!(reply.status, 503, "{i}"),
        }
    }
}

#[test]
fn tls_answers_announce_http3_only_when_it_is_served() {
    let server = server();
    let port = server.local_addr().port();
    let (headers, body) = tls_get(server.local_addr(), "/hello");
    assert_eq!(body, HELLO);
    let expected = format!("h3=\":{port}\"; ma=86400");
    assert_eq!(header(&headers, "alt-svc"), Some(expected.as_str()));
    // Over HTTP/3 too (a client that came by another way learns it).
    let reply = get(&mut client(&server), "/hello");
    assert_eq!(reply.header("alt-svc"), Some(expected.as_str()));

    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let tls_only = spawn_tls(listener, 1, tls()).unwrap();
    let (headers, body) = tls_get(tls_only.local_addr(), "/hello");
    assert_eq!(body, HELLO);
    assert_eq!(header(&headers, "alt-svc"), None);
}

#[test]
fn shutdown_finishes_requests_in_flight_and_closes_with_h3_no_error() {
    let server = server();
    let addr = server.local_addr();
    let mut idle = H3Client::connect(addr).unwrap();
    assert_eq!(get(&mut idle, "/hello").status, 200);
    let in_flight = std::thread::spawn(move || {
        let mut client = H3Client::connect(addr).unwrap();
        let reply = client.get("/delay/500");
        (reply, client.close_code(Duration::from_secs(30)))
    });
    // Let the request reach the server before shutting it down.
    std::thread::sleep(Duration::from_millis(200));
    server.shutdown();
    let (reply, code) = in_flight.join().unwrap();
    let reply = reply.unwrap();
    assert_eq!((reply.status, reply.body.as_slice()), (200, HELLO));
    assert_eq!(code, Ok(0x100), "closed with H3_NO_ERROR");
    assert_eq!(idle.close_code(Duration::from_secs(30)), Ok(0x100));
}

#[test]
fn tcp_and_udp_share_a_port() {
    let (tcp, udp) = bind_tcp_udp("127.0.0.1:0".parse().unwrap()).unwrap();
    let addr = tcp.local_addr().unwrap();
    assert_ne!(addr.port(), 0);
    assert_eq!(udp.local_addr().unwrap(), addr);
    // With the TCP port free and the UDP one taken, the error says so.
    drop(tcp);
    let err = bind_tcp_udp(addr).unwrap_err();
    assert!(err.to_string().contains("could not bind UDP"), "{err}");
}

/// Linux grants what is asked up to the ceiling, and reports double
/// (socket(7)).
#[cfg(target_os = "linux")]
#[test]
fn udp_buffers_are_grown_up_to_the_kernel_ceilings() {
    let ceiling = |name: &str| -> usize {
        std::fs::read_to_string(format!("/proc/sys/net/core/{name}"))
            .unwrap()
            .trim()
            .parse()
            .unwrap()
    };
    let udp = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    let granted = crate::grow_udp_buffers(&udp).unwrap();
    let want = crate::QUIC_SOCKET_BUFFER;
    assert_eq!(
        granted.recv,
        2 * want.min(ceiling("rmem_max")),
        "{granted:?}"
    );
    assert_eq!(
        granted.send,
        2 * want.min(ceiling("wmem_max")),
        "{granted:?}"
    );
}
