//! TLS for `https://` targets: one rustls client configuration per run,
//! built before the worker threads start and shared by all of them (the
//! configuration, with its session cache, sits behind one `Arc`).
//!
//! Trust comes from Mozilla's root certificates compiled into the binary
//! (`webpki-roots`), so a run never depends on the files of the machine it
//! runs on and nothing is downloaded. `--insecure` swaps the certificate
//! check for [`AcceptAnyCertificate`], for self-signed test servers.

use std::sync::Arc;

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::WebPkiSupportedAlgorithms;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{ClientConfig, DigitallySignedStruct, RootCertStore, SignatureScheme};
use tokio_rustls::TlsConnector;

use crate::settings::TlsSettings;

/// What every connection of a run needs to start TLS: the shared
/// configuration and the name the server's certificate must carry.
#[derive(Clone)]
pub(crate) struct TlsClient {
    pub(crate) connector: TlsConnector,
    /// The URL's host: a DNS name (sent as SNI) or an IP address (checked
    /// against the certificate's IP entries; no SNI is sent for it).
    pub(crate) server_name: ServerName<'static>,
}

impl std::fmt::Debug for TlsClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TlsClient")
            .field("server_name", &self.server_name)
            .finish_non_exhaustive()
    }
}

/// What a TLS handshake settled on, recorded once per run (every
/// connection uses the same configuration, so the first session stands for
/// all of them), as ab prints it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TlsSession {
    /// "TLSv1.3" or "TLSv1.2".
    pub protocol: String,
    /// The IANA name of the cipher suite, e.g. "TLS13_AES_256_GCM_SHA384".
    pub cipher: String,
    /// The key exchange group, e.g. "X25519", when one was used.
    pub key_exchange: Option<String>,
    /// The application protocol ALPN settled on (`h2`, `http/1.1`), when
    /// the server chose one.
    pub alpn: Option<String>,
}

impl TlsSession {
    /// The session of a finished handshake; `None` before the handshake.
    pub(crate) fn of(conn: &rustls::ClientConnection) -> Option<TlsSession> {
        let protocol = match conn.protocol_version()? {
            rustls::ProtocolVersion::TLSv1_3 => "TLSv1.3".to_owned(),
            rustls::ProtocolVersion::TLSv1_2 => "TLSv1.2".to_owned(),
            other => format!("{other:?}"),
        };
        let suite = conn.negotiated_cipher_suite()?.suite();
        let cipher = suite
            .as_str()
            .map_or_else(|| format!("{suite:?}"), str::to_owned);
        let key_exchange = conn.negotiated_key_exchange_group().map(|group| {
            let name = group.name();
            name.as_str()
                .map_or_else(|| format!("{name:?}"), str::to_owned)
        });
        let alpn = conn
            .alpn_protocol()
            .map(|p| String::from_utf8_lossy(p).into_owned());
        Some(TlsSession {
            protocol,
            cipher,
            key_exchange,
            alpn,
        })
    }
}

/// Whether a failed handshake was the server refusing every protocol ALPN
/// offered (a `no_application_protocol` alert): a server without h2 says
/// so to a client that offers only h2.
pub(crate) fn refused_alpn(e: &std::io::Error) -> bool {
    e.get_ref()
        .and_then(|inner| inner.downcast_ref::<rustls::Error>())
        .is_some_and(|e| {
            matches!(
                e,
                rustls::Error::AlertReceived(rustls::AlertDescription::NoApplicationProtocol)
            )
        })
}

/// Why TLS could not be set up for a run.
#[derive(Debug, thiserror::Error)]
pub enum TlsSetupError {
    /// The host cannot be checked against a certificate.
    #[error(
        "'{0}' cannot be used as a TLS server name: use a DNS name (example.com) or an IP address"
    )]
    ServerName(String),
    /// rustls refused the configuration (not expected with the built-in
    /// provider and protocol versions).
    #[error("could not configure TLS: {0}")]
    Config(#[from] rustls::Error),
}

impl TlsClient {
    /// Builds the configuration for `host`: TLS 1.3 and 1.2 through *ring*,
    /// ALPN offering `protocols` (the engine's default is `http/1.1` alone,
    /// so that a server that would pick HTTP/2 is told not to).
    pub(crate) fn new(
        host: &str,
        settings: &TlsSettings,
        protocols: &[Vec<u8>],
    ) -> Result<TlsClient, TlsSetupError> {
        let server_name = server_name(host)?;
        let config = client_config(settings, protocols, rustls::DEFAULT_VERSIONS)?;
        Ok(TlsClient {
            connector: TlsConnector::from(Arc::new(config)),
            server_name,
        })
    }
}

/// The name the server's certificate must carry: the URL's host, a DNS
/// name or an IP address (brackets of an IPv6 literal dropped).
pub(crate) fn server_name(host: &str) -> Result<ServerName<'static>, TlsSetupError> {
    let host = host.trim_start_matches('[').trim_end_matches(']');
    ServerName::try_from(host.to_owned()).map_err(|_| TlsSetupError::ServerName(host.to_owned()))
}

/// The rustls client configuration of a run: `versions` through *ring*,
/// trusting Mozilla's roots (or, `--insecure`, any certificate), ALPN
/// offering `protocols`. TCP connections take TLS 1.3 and 1.2; QUIC's
/// handshake is TLS 1.3 only (RFC 9001 §4.2).
pub(crate) fn client_config(
    settings: &TlsSettings,
    protocols: &[Vec<u8>],
    versions: &[&'static rustls::SupportedProtocolVersion],
) -> Result<ClientConfig, TlsSetupError> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = ClientConfig::builder_with_provider(Arc::clone(&provider))
        .with_protocol_versions(versions)?;
    let mut config = if settings.insecure {
        builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(AcceptAnyCertificate {
                algorithms: provider.signature_verification_algorithms,
            }))
            .with_no_client_auth()
    } else {
        let roots = RootCertStore {
            roots: webpki_roots::TLS_SERVER_ROOTS.to_vec(),
        };
        builder.with_root_certificates(roots).with_no_client_auth()
    };
    config.alpn_protocols = protocols.to_vec();
    Ok(config)
}

/// `--insecure`: takes any certificate chain for any name, but still checks
/// that the server signed the handshake with the key of the certificate it
/// sent, using the provider's algorithms. The connection is encrypted and
/// costs what a verified one costs; only whom it goes to is not checked.
#[derive(Debug)]
pub(crate) struct AcceptAnyCertificate {
    algorithms: WebPkiSupportedAlgorithms,
}

impl ServerCertVerifier for AcceptAnyCertificate {
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
        rustls::crypto::verify_tls12_signature(message, cert, dss, &self.algorithms)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(message, cert, dss, &self.algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.algorithms.supported_schemes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_names_and_ip_addresses_are_server_names() {
        let tls = TlsSettings::default();
        let name =
            |host: &str| TlsClient::new(host, &tls, &[b"http/1.1".to_vec()]).map(|c| c.server_name);
        assert!(matches!(name("example.com"), Ok(ServerName::DnsName(_))));
        assert!(matches!(name("127.0.0.1"), Ok(ServerName::IpAddress(_))));
        assert!(matches!(name("::1"), Ok(ServerName::IpAddress(_))));
        assert!(matches!(name("[::1]"), Ok(ServerName::IpAddress(_))));
        let err = name("bad name").unwrap_err().to_string();
        assert!(
            err.contains("'bad name'") && err.contains("DNS name"),
            "{err}"
        );
    }

    #[test]
    fn only_http11_is_offered() {
        for insecure in [false, true] {
            let client = TlsClient::new(
                "localhost",
                &TlsSettings { insecure },
                &[b"http/1.1".to_vec()],
            )
            .unwrap();
            assert_eq!(
                client.connector.config().alpn_protocols,
                vec![b"http/1.1".to_vec()]
            );
        }
    }
}
