//! dyno's own HTTP/3 framing over quinn (issue 50), as `http2` is over
//! TCP: the h3 crate spent about a fifth of the client's instructions in
//! QPACK Huffman coding (callgrind, the page against `dyno serve --h3`).
//! Not wired into the engine yet: this branch holds its pieces.
#![allow(dead_code)]

pub(crate) mod frame;
pub(crate) mod qpack;

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
