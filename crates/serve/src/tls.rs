//! `dyno serve --tls` and `--h3`: a certificate made at start-up for the
//! names the server answers to, signed by itself, and the rustls
//! configurations that use it: one for TCP that offers HTTP/2 and HTTP/1.1
//! by ALPN, one for QUIC (TLS 1.3 only, ALPN `h3`). Load generators reach
//! it with their "insecure" switch (`dyno http --insecure`; h2load checks
//! nothing).

use std::sync::Arc;

use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use tokio_rustls::TlsAcceptor;

use crate::ServeError;

/// The ALPN token of HTTP/3 (RFC 9114 3.1).
pub(crate) const ALPN_H3: &[u8] = b"h3";

/// A server's TLS set-up: its self-signed certificate and configurations.
#[derive(Clone)]
pub struct Tls {
    acceptor: TlsAcceptor,
    quic: Arc<quinn::crypto::rustls::QuicServerConfig>,
}

impl std::fmt::Debug for Tls {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tls").finish_non_exhaustive()
    }
}

impl Tls {
    /// A fresh self-signed certificate for `names` (DNS names or IP
    /// addresses), through *ring*: over TCP, TLS 1.3 and 1.2 with ALPN `h2`
    /// then `http/1.1`; over QUIC, TLS 1.3 with ALPN `h3`.
    pub fn self_signed(names: &[String]) -> Result<Tls, ServeError> {
        let (chain, key) = certificate(names)?;
        let mut tcp = config(chain.clone(), key.clone_key(), rustls::DEFAULT_VERSIONS)?;
        tcp.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
        // QUIC carries TLS 1.3 only (RFC 9001 4.2). 0-RTT is taken (QUIC
        // allows no other size than all or nothing), so `dyno http --h3
        // --0rtt` can be measured against it: a test server, whose
        // answers do not change when a request is replayed.
        let mut quic = config(chain, key, &[&rustls::version::TLS13])?;
        quic.alpn_protocols = vec![ALPN_H3.to_vec()];
        quic.max_early_data_size = u32::MAX;
        let quic = quinn::crypto::rustls::QuicServerConfig::try_from(quic)
            .map_err(|e| ServeError::Tls(format!("using the certificate for QUIC: {e}")))?;
        Ok(Tls {
            acceptor: TlsAcceptor::from(Arc::new(tcp)),
            quic: Arc::new(quic),
        })
    }

    pub(crate) fn acceptor(&self) -> TlsAcceptor {
        self.acceptor.clone()
    }

    pub(crate) fn quic(&self) -> Arc<quinn::crypto::rustls::QuicServerConfig> {
        self.quic.clone()
    }
}

/// A rustls server configuration with a fresh self-signed certificate for
/// `names` (DNS names or IP addresses), TLS 1.3 and 1.2 through *ring*, and
/// no ALPN (the caller offers what it speaks).
pub fn self_signed_config(names: &[String]) -> Result<rustls::ServerConfig, ServeError> {
    let (chain, key) = certificate(names)?;
    config(chain, key, rustls::DEFAULT_VERSIONS)
}

type Certificate = (Vec<CertificateDer<'static>>, PrivateKeyDer<'static>);

fn certificate(names: &[String]) -> Result<Certificate, ServeError> {
    let rcgen::CertifiedKey { cert, signing_key } =
        rcgen::generate_simple_self_signed(names.to_vec())
            .map_err(|e| ServeError::Tls(format!("making the certificate: {e}")))?;
    let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(signing_key.serialize_der()));
    Ok((vec![cert.der().clone()], key))
}

fn config(
    chain: Vec<CertificateDer<'static>>,
    key: PrivateKeyDer<'static>,
    versions: &[&'static rustls::SupportedProtocolVersion],
) -> Result<rustls::ServerConfig, ServeError> {
    rustls::ServerConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
        .with_protocol_versions(versions)
        .map_err(|e| ServeError::Tls(e.to_string()))?
        .with_no_client_auth()
        .with_single_cert(chain, key)
        .map_err(|e| ServeError::Tls(e.to_string()))
}
