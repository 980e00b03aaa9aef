//! httpbin (a real web app: Flask) under gunicorn's sync workers, on a
//! loopback port of its own, from the virtual environment `scripts/test`
//! installs (`DYNO_GUNICORN` names its `gunicorn`). gunicorn writes an
//! access log, so a test can see what the app was sent. Tests fail without
//! it rather than pass against nothing.

use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use crate::process::{self, Probe, Process};

/// A gunicorn serving httpbin, killed when dropped.
#[derive(Debug)]
pub struct Httpbin {
    _process: Process,
    /// `http://127.0.0.1:PORT`
    pub base: String,
    /// gunicorn's access log: one line a request, its request line quoted.
    pub log: PathBuf,
    _dir: tempfile::TempDir,
}

impl Httpbin {
    /// Starts gunicorn with `workers` sync workers and waits until httpbin
    /// answers.
    pub fn start(workers: u32) -> Httpbin {
        let gunicorn = std::env::var("DYNO_GUNICORN").unwrap_or_else(|_| "gunicorn".into());
        let port = process::free_port();
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("access.log");
        let process = Process::start(
            Command::new(&gunicorn)
                .args([
                    "-b",
                    &format!("127.0.0.1:{port}"),
                    "-w",
                    &workers.to_string(),
                ])
                .arg("--access-logfile")
                .arg(&log)
                .arg("httpbin:app"),
            &format!(
                "httpbin under gunicorn ({gunicorn}): run scripts/test, which installs both into target/httpbin, or set DYNO_GUNICORN to a gunicorn that can import httpbin"
            ),
            "httpbin under gunicorn",
            port,
            &GET,
        );
        Httpbin {
            _process: process,
            base: format!("http://127.0.0.1:{port}"),
            log,
            _dir: dir,
        }
    }

    /// The access log's lines so far.
    pub fn logged(&self) -> Vec<String> {
        std::fs::read_to_string(&self.log)
            .unwrap_or_default()
            .lines()
            .map(str::to_owned)
            .collect()
    }
}

/// httpbin has started once it answers `/get` with a 200: within 30 s.
const GET: Probe = Probe {
    request: b"GET /get HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n",
    head: b"HTTP/1.1 200",
    timeout: Duration::from_secs(5),
    within: Duration::from_secs(30),
};
