//! `dyno serve --tls`: a certificate made at start-up for the names the
//! server answers to, signed by itself, and a rustls configuration that
//! offers HTTP/2 and HTTP/1.1 by ALPN. Load generators reach it with their
//! "insecure" switch (`dyno http --insecure`; h2load checks nothing).

use std::sync::Arc;

use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use tokio_rustls::TlsAcceptor;

use crate::ServeError;

/// A server's TLS set-up: its self-signed certificate and configuration.
#[derive(Clone)]
pub struct Tls {
    acceptor: TlsAcceptor,
}

impl std::fmt::Debug for Tls {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tls").finish_non_exhaustive()
    }
}

impl Tls {
    /// A fresh self-signed certificate for `names` (DNS names or IP
    /// addresses), TLS 1.3 and 1.2 through *ring*, ALPN `h2` then
    /// `http/1.1`.
    pub fn self_signed(names: &[String]) -> Result<Tls, ServeError> {
        let mut config = self_signed_config(names)?;
        config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
        Ok(Tls {
            acceptor: TlsAcceptor::from(Arc::new(config)),
        })
    }

    pub(crate) fn acceptor(&self) -> TlsAcceptor {
        self.acceptor.clone()
    }
}

/// A rustls server configuration with a fresh self-signed certificate for
/// `names` (DNS names or IP addresses), TLS 1.3 and 1.2 through *ring*, and
/// no ALPN (the caller offers what it speaks).
pub fn self_signed_config(names: &[String]) -> Result<rustls::ServerConfig, ServeError> {
    let rcgen::CertifiedKey { cert, signing_key } =
        rcgen::generate_simple_self_signed(names.to_vec())
            .map_err(|e| ServeError::Tls(format!("making the certificate: {e}")))?;
    let chain: Vec<CertificateDer<'static>> = vec![cert.der().clone()];
    let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(signing_key.serialize_der()));
    rustls::ServerConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
        .with_safe_default_protocol_versions()
        .map_err(|e| ServeError::Tls(e.to_string()))?
        .with_no_client_auth()
        .with_single_cert(chain, key)
        .map_err(|e| ServeError::Tls(e.to_string()))
}
