//! An HTTPS server on loopback for tests: rustls (through tokio-rustls)
//! with a fresh self-signed certificate for `localhost` and 127.0.0.1,
//! answering every request head with one fixed answer.
//!
//! Used by the engine's tests (`crates/http/tests/faults.rs`) and the CLI
//! tests; its certificate is `dyno serve --tls`'s
//! ([`dyno_serve::self_signed_config`]).
//!
//! It runs on its own thread with its own current-thread runtime; dropping
//! the [`TlsServer`] stops accepting, ends every connection (their tasks
//! die with the runtime) and joins the thread, so nothing outlives a test.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::thread::JoinHandle;

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{DigitallySignedStruct, SignatureScheme};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::oneshot;
use tokio_rustls::TlsAcceptor;

/// What the server does after writing an answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum After {
    /// Keeps the connection open for the next request.
    KeepAlive,
    /// Ends the connection the proper way: `close_notify`, then TCP close.
    CloseNotify,
    /// Closes the TCP connection without `close_notify`, as many servers
    /// do after a close-delimited body.
    Close,
}

/// A running HTTPS server; dropping it stops it.
#[derive(Debug)]
pub struct TlsServer {
    addr: SocketAddr,
    accepted: Arc<AtomicU64>,
    stop: Option<oneshot::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl TlsServer {
    /// Starts a server on 127.0.0.1 (a free port) that answers every
    /// request head with `answer`, then does what `after` says.
    pub fn start(answer: &'static [u8], after: After) -> TlsServer {
        TlsServer::start_with_alpn(answer, after, &[])
    }

    /// [`TlsServer::start`], with ALPN choosing from `protocols` (none:
    /// no ALPN). rustls refuses a client whose offer shares none of them
    /// with a `no_application_protocol` alert, as nginx without http2 does.
    pub fn start_with_alpn(answer: &'static [u8], after: After, protocols: &[&[u8]]) -> TlsServer {
        let mut config = dyno_serve::self_signed_config(&["localhost".into(), "127.0.0.1".into()])
            .expect("a self-signed certificate");
        config.alpn_protocols = protocols.iter().map(|p| p.to_vec()).collect();
        let acceptor = TlsAcceptor::from(Arc::new(config));
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0");
        listener.set_nonblocking(true).expect("non-blocking");
        let addr = listener.local_addr().expect("bound");
        let accepted = Arc::new(AtomicU64::new(0));
        let (stop, mut stopped) = oneshot::channel::<()>();
        let count = Arc::clone(&accepted);
        let thread = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("a runtime");
            runtime.block_on(async move {
                let listener = tokio::net::TcpListener::from_std(listener).expect("a listener");
                loop {
                    tokio::select! {
                        _ = &mut stopped => break,
                        conn = listener.accept() => {
                            let Ok((tcp, _)) = conn else { continue };
                            count.fetch_add(1, Ordering::SeqCst);
                            tokio::spawn(serve(acceptor.clone(), tcp, answer, after));
                        }
                    }
                }
            });
            // Dropping the runtime here drops the connections' tasks.
        });
        TlsServer {
            addr,
            accepted,
            stop: Some(stop),
            thread: Some(thread),
        }
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// TCP connections accepted so far (handshakes that failed included).
    pub fn accepted(&self) -> u64 {
        self.accepted.load(Ordering::SeqCst)
    }
}

impl Drop for TlsServer {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// One connection: handshake, then an answer per request head.
async fn serve(
    acceptor: TlsAcceptor,
    tcp: tokio::net::TcpStream,
    answer: &'static [u8],
    after: After,
) {
    // A client that does not trust the certificate ends the handshake.
    let Ok(mut tls) = acceptor.accept(tcp).await else {
        return;
    };
    let mut seen = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        match tls.read(&mut buf).await {
            Ok(0) | Err(_) => return,
            Ok(n) => seen.extend_from_slice(&buf[..n]),
        }
        while let Some(end) = seen.windows(4).position(|w| w == b"\r\n\r\n") {
            seen.drain(..end + 4);
            if tls.write_all(answer).await.is_err() || tls.flush().await.is_err() {
                return;
            }
            match after {
                After::KeepAlive => {}
                After::CloseNotify => {
                    let _ = tls.shutdown().await;
                    return;
                }
                After::Close => {
                    // Drop the TCP stream under rustls: no close_notify.
                    let (tcp, _) = tls.into_inner();
                    drop(tcp);
                    return;
                }
            }
        }
    }
}

/// A rustls client configuration of `versions` offering `alpn` that
/// accepts any certificate (its signature of the handshake is still
/// checked), as `dyno http --insecure` does: what a test needs to reach the
/// self-signed `dyno serve --tls`.
pub fn insecure_client_config(
    versions: &[&'static rustls::SupportedProtocolVersion],
    alpn: &[&[u8]],
) -> rustls::ClientConfig {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ClientConfig::builder_with_provider(provider.clone())
        .with_protocol_versions(versions)
        .expect("ring supports TLS 1.2 and 1.3")
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(AnyCertificate(provider)))
        .with_no_client_auth();
    config.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
    config
}

/// Trusts any certificate, as the self-signed one of `dyno serve` needs.
#[derive(Debug)]
struct AnyCertificate(Arc<rustls::crypto::CryptoProvider>);

impl ServerCertVerifier for AnyCertificate {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}
