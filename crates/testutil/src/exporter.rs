//! A real Prometheus exporter on a loopback port of its own (Debian's
//! `prometheus-node-exporter` and `prometheus-postgres-exporter`, which
//! `scripts/test` installs), for the tests of `--watch URL`. Tests fail
//! without one rather than pass without a source.

use std::io::{Read as _, Write as _};
use std::net::TcpStream;
use std::process::Command;
use std::time::Duration;

use crate::process::{self, Probe, Process};

/// An exporter process, killed when dropped.
#[derive(Debug)]
pub struct Exporter {
    _process: Process,
    /// `http://127.0.0.1:PORT/metrics`
    pub url: String,
}

impl Exporter {
    /// Starts `binary` (a Debian package's command) listening on a free
    /// loopback port, with `envs`, and waits until its metrics answer.
    pub fn start(binary: &str, package: &str, envs: &[(&str, &str)]) -> Exporter {
        let port = process::free_port();
        let process = Process::start(
            Command::new(binary)
                .arg(format!("--web.listen-address=127.0.0.1:{port}"))
                .envs(envs.iter().copied()),
            &format!("{binary} (Debian's `{package}`; scripts/test installs it)"),
            binary,
            port,
            &METRICS,
        );
        let url = format!("http://127.0.0.1:{port}/metrics");
        Exporter {
            _process: process,
            url,
        }
    }

    /// Debian's node_exporter.
    pub fn node() -> Exporter {
        Exporter::start("prometheus-node-exporter", "prometheus-node-exporter", &[])
    }

    /// Debian's postgres_exporter, reading the server at `dsn` (a
    /// `postgres://` URL).
    pub fn postgres(dsn: &str) -> Exporter {
        Exporter::start(
            "prometheus-postgres-exporter",
            "prometheus-postgres-exporter",
            &[("DATA_SOURCE_NAME", dsn)],
        )
    }

    /// One scrape's text, as the test reads it itself.
    pub fn scrape(&self) -> String {
        let port = self
            .url
            .split(':')
            .nth(2)
            .and_then(|p| p.split('/').next())
            .unwrap();
        let mut s = TcpStream::connect(("127.0.0.1", port.parse::<u16>().unwrap())).unwrap();
        s.write_all(b"GET /metrics HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n")
            .unwrap();
        let mut text = String::new();
        s.read_to_string(&mut text).unwrap();
        text
    }
}

/// An exporter has started once something answers an HTTP request for
/// /metrics: within 10 s.
const METRICS: Probe = Probe {
    request: b"GET /metrics HTTP/1.0\r\n\r\n",
    head: b"HTTP/1.",
    timeout: Duration::from_secs(2),
    within: Duration::from_secs(10),
};
