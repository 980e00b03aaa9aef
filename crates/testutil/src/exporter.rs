//! A real Prometheus exporter on a loopback port of its own (Debian's
//! `prometheus-node-exporter` and `prometheus-postgres-exporter`, which
//! `scripts/test` installs), for the tests of `--watch URL`. Tests fail
//! without one rather than pass without a source.

use std::io::{Read as _, Write as _};
use std::net::{TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// An exporter process, killed when dropped.
#[derive(Debug)]
pub struct Exporter {
    child: Child,
    /// `http://127.0.0.1:PORT/metrics`
    pub url: String,
}

impl Exporter {
    /// Starts `binary` (a Debian package's command) listening on a free
    /// loopback port, with `envs`, and waits until its metrics answer.
    pub fn start(binary: &str, package: &str, envs: &[(&str, &str)]) -> Exporter {
        let port = TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map(|a| a.port())
            .unwrap();
        let mut child = Command::new(binary)
            .arg(format!("--web.listen-address=127.0.0.1:{port}"))
            .envs(envs.iter().copied())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| {
                panic!(
                    "this test needs {binary} (Debian's `{package}`; scripts/test installs it): {e}"
                )
            });
        let url = format!("http://127.0.0.1:{port}/metrics");
        for _ in 0..200 {
            if let Some(status) = child.try_wait().unwrap() {
                let mut err = String::new();
                let _ = child.stderr.take().unwrap().read_to_string(&mut err);
                panic!("{binary} exited ({status}): {err}");
            }
            if answers(port) {
                // Its log is not needed; a full pipe must not stop it.
                let mut err = child.stderr.take().unwrap();
                std::thread::spawn(move || std::io::copy(&mut err, &mut std::io::sink()));
                return Exporter { child, url };
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = child.kill();
        let _ = child.wait();
        panic!("{binary} did not answer on 127.0.0.1:{port} within 10 s");
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

/// Whether something answers an HTTP request for /metrics on `port`.
fn answers(port: u16) -> bool {
    let Ok(mut s) = TcpStream::connect(("127.0.0.1", port)) else {
        return false;
    };
    let _ = s.set_read_timeout(Some(Duration::from_secs(2)));
    if s.write_all(b"GET /metrics HTTP/1.0\r\n\r\n").is_err() {
        return false;
    }
    let mut head = [0u8; 12];
    s.read_exact(&mut head).is_ok() && head.starts_with(b"HTTP/1.")
}

impl Drop for Exporter {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
