//! dyno's own HTTP/3 framing over quinn (issue 50), as `http2` is over
//! TCP: through the h3 crate the client spent ~42,650 instructions a page
//! request against `dyno serve --h3`, a fifth of them in QPACK Huffman
//! coding; in this framing, 19,200 before the last-head cache
//! (callgrind, `probe` below).

pub(crate) mod client;
pub(crate) mod frame;
pub(crate) mod qpack;
pub(crate) mod tickets;

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::frame::{self, DATA, HEADERS};
    use super::qpack;

    /// One request in this module's framing against `dyno serve --h3`
    /// (the h3 crate's server): its QPACK decoder reads what `qpack`
    /// wrote, and `qpack` reads what its encoder wrote.
    #[test]
    fn one_request_in_our_framing_is_answered_by_the_h3_crates_server() {
        let (tcp, udp) = dyno_serve::bind_tcp_udp("127.0.0.1:0".parse().unwrap()).unwrap();
        let tls = dyno_serve::Tls::self_signed(&["127.0.0.1".into()]).unwrap();
        let server = dyno_serve::spawn_h3(tcp, udp, 1, tls).unwrap();
        let addr = server.local_addr();
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let (status, length, body) = runtime.block_on(async move {
            let settings = crate::settings::TlsSettings { insecure: true };
            let tls =
                crate::tls::client_config(&settings, &[b"h3".to_vec()], &[&rustls::version::TLS13])
                    .unwrap();
            let crypto = quinn::crypto::rustls::QuicClientConfig::try_from(tls).unwrap();
            let mut endpoint = quinn::Endpoint::client("127.0.0.1:0".parse().unwrap()).unwrap();
            endpoint.set_default_client_config(quinn::ClientConfig::new(Arc::new(crypto)));
            let conn = endpoint.connect(addr, "127.0.0.1").unwrap().await.unwrap();
            let mut control = conn.open_uni().await.unwrap();
            control
                .write_all(&frame::control_stream_opening())
                .await
                .unwrap();
            let authority = addr.to_string();
            let fields: Vec<(&[u8], &[u8])> = vec![
                (b":method", b"GET"),
                (b":scheme", b"https"),
                (b":authority", authority.as_bytes()),
                (b":path", b"/hello"),
                (b"user-agent", b"dyno"),
            ];
            let mut block = Vec::new();
            qpack::encode(&fields, &mut block);
            let mut request = Vec::new();
            frame::put_head(&mut request, HEADERS, block.len() as u64);
            request.extend_from_slice(&block);
            let (mut send, mut recv) = conn.open_bi().await.unwrap();
            send.write_all(&request).await.unwrap();
            send.finish().unwrap();
            let answer = recv.read_to_end(1 << 20).await.unwrap();
            let (mut status, mut length, mut body) = (0u16, String::new(), Vec::new());
            let mut at = 0;
            while at < answer.len() {
                let head = frame::head(&answer[at..]).unwrap();
                let payload = &answer[at + head.size..at + head.size + head.len as usize];
                match head.kind {
                    HEADERS => qpack::decode(payload, |name, value| match name {
                        b":status" => status = std::str::from_utf8(value).unwrap().parse().unwrap(),
                        b"content-length" => length = String::from_utf8(value.to_vec()).unwrap(),
                        _ => {}
                    })
                    .unwrap(),
                    DATA => body.extend_from_slice(payload),
                    _ => {}
                }
                at += head.size + head.len as usize;
            }
            conn.close(0u32.into(), b"");
            endpoint.wait_idle().await;
            (status, length, body)
        });
        assert_eq!(status, 200);
        assert_eq!(length, dyno_serve::HELLO.len().to_string());
        assert_eq!(body, dyno_serve::HELLO);
    }
}

/// A measure, not a test: `DYNO_H3_ADDR=127.0.0.1:PORT cargo test -p
/// dyno-http --release --lib http3::probe -- --ignored --nocapture`
/// against `dyno serve --h3 --threads 1`, to set beside `dyno http --h3
/// --insecure -t1 -c 2 -m 8 -n 20000` on the same server: the client CPU
/// a request of this framing, 2 connections × 8 streams, one thread.
#[cfg(test)]
mod probe {
    use std::rc::Rc;
    use std::sync::Arc;

    use super::frame::{self, DATA, HEADERS};
    use super::qpack;

    #[test]
    #[ignore = "a measure: needs DYNO_H3_ADDR"]
    fn cpu_per_request() {
        let Ok(addr) = std::env::var("DYNO_H3_ADDR") else {
            return;
        };
        let addr: std::net::SocketAddr = addr.parse().unwrap();
        let n = 20_000u64;
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let local = tokio::task::LocalSet::new();
        let (took, cpu) = local.block_on(&runtime, async move {
            let settings = crate::settings::TlsSettings { insecure: true };
            let tls =
                crate::tls::client_config(&settings, &[b"h3".to_vec()], &[&rustls::version::TLS13])
                    .unwrap();
            let crypto = quinn::crypto::rustls::QuicClientConfig::try_from(tls).unwrap();
            let config = quinn::ClientConfig::new(Arc::new(crypto));
            let authority = addr.to_string();
            let fields: Vec<(&[u8], &[u8])> = vec![
                (b":method", b"GET"),
                (b":scheme", b"https"),
                (b":authority", authority.as_bytes()),
                (b":path", b"/hello"),
            ];
            let mut block = Vec::new();
            qpack::encode(&fields, &mut block);
            let mut request = Vec::new();
            frame::put_head(&mut request, HEADERS, block.len() as u64);
            request.extend_from_slice(&block);
            let request = bytes::Bytes::from(request);
            let left = Rc::new(std::cell::Cell::new(n));
            let mut conns = Vec::new();
            for _ in 0..2 {
                let endpoint = quinn::Endpoint::client("127.0.0.1:0".parse().unwrap()).unwrap();
                let conn = endpoint
                    .connect_with(config.clone(), addr, "127.0.0.1")
                    .unwrap()
                    .await
                    .unwrap();
                let mut control = conn.open_uni().await.unwrap();
                control
                    .write_all(&frame::control_stream_opening())
                    .await
                    .unwrap();
                conns.push((endpoint, conn, control));
            }
            let began = std::time::Instant::now();
            let cpu_before = dyno_env::thread_cpu_time();
            let mut tasks = tokio::task::JoinSet::new();
            for (_, conn, _) in &conns {
                for _ in 0..8 {
                    let (conn, left, request) = (conn.clone(), Rc::clone(&left), request.clone());
                    tasks.spawn_local(async move {
                        let mut buf = Vec::new();
                        while left.get() > 0 {
                            left.set(left.get() - 1);
                            let (mut send, mut recv) = conn.open_bi().await.unwrap();
                            send.write_chunk(request.clone()).await.unwrap();
                            send.finish().unwrap();
                            buf.clear();
                            while let Some(chunk) = recv.read_chunk(usize::MAX, true).await.unwrap()
                            {
                                buf.extend_from_slice(&chunk.bytes);
                            }
                            let (mut status, mut body) = (0u16, 0usize);
                            let mut at = 0;
                            while at < buf.len() {
                                let head = frame::head(&buf[at..]).unwrap();
                                let payload =
                                    &buf[at + head.size..at + head.size + head.len as usize];
                                match head.kind {
                                    HEADERS => qpack::decode(payload, |name, value| {
                                        if name == b":status" {
                                            status = std::str::from_utf8(value)
                                                .unwrap()
                                                .parse()
                                                .unwrap();
                                        }
                                    })
                                    .unwrap(),
                                    DATA => body += payload.len(),
                                    _ => {}
                                }
                                at += head.size + head.len as usize;
                            }
                            assert_eq!(status, 200);
                            assert!(body > 0);
                        }
                    });
                }
            }
            while tasks.join_next().await.is_some() {}
            let took = began.elapsed();
            let cpu = dyno_env::thread_cpu_time() - cpu_before;
            for (endpoint, conn, _) in conns {
                conn.close(0u32.into(), b"");
                endpoint.wait_idle().await;
            }
            (took, cpu)
        });
        eprintln!(
            "{n} requests in {took:?}: {:.0} req/s, client CPU {:.2} µs a request",
            n as f64 / took.as_secs_f64(),
            cpu.as_secs_f64() * 1e6 / n as f64
        );
    }
}
