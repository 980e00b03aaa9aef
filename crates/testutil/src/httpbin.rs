//! httpbin (a real web app: Flask) under gunicorn's sync workers, on a
//! loopback port of its own, from the virtual environment `scripts/test`
//! installs (`DYNO_GUNICORN` names its `gunicorn`). gunicorn writes an
//! access log, so a test can see what the app was sent. Tests fail without
//! it rather than pass against nothing.

use std::io::{Read as _, Write as _};
use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// A gunicorn serving httpbin, killed when dropped.
#[derive(Debug)]
pub struct Httpbin {
    child: Child,
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
        let port = TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map(|a| a.port())
            .unwrap();
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("access.log");
        let mut child = Command::new(&gunicorn)
            .args(["-b", &format!("127.0.0.1:{port}"), "-w", &workers.to_string()])
            .arg("--access-logfile")
            .arg(&log)
            .arg("httpbin:app")
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| {
                panic!(
                    "this test needs httpbin under gunicorn ({gunicorn}): run scripts/test, which installs both into target/httpbin, or set DYNO_GUNICORN to a gunicorn that can import httpbin: {e}"
                )
            });
        for _ in 0..600 {
            if let Some(status) = child.try_wait().unwrap() {
                let mut err = String::new();
                let _ = child.stderr.take().unwrap().read_to_string(&mut err);
                panic!("gunicorn exited ({status}): {err}");
            }
            if answers(port) {
                let mut err = child.stderr.take().unwrap();
                std::thread::spawn(move || std::io::copy(&mut err, &mut std::io::sink()));
                return Httpbin {
                    child,
                    base: format!("http://127.0.0.1:{port}"),
                    log,
                    _dir: dir,
                };
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = child.kill();
        let _ = child.wait();
        panic!("httpbin did not answer on 127.0.0.1:{port} within 30 s");
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

/// Whether httpbin answers `/get` on `port`.
fn answers(port: u16) -> bool {
    let Ok(mut s) = TcpStream::connect(("127.0.0.1", port)) else {
        return false;
    };
    let _ = s.set_read_timeout(Some(Duration::from_secs(5)));
    if s.write_all(b"GET /get HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
        .is_err()
    {
        return false;
    }
    let mut head = [0u8; 12];
    s.read_exact(&mut head).is_ok() && head.starts_with(b"HTTP/1.1 200")
}

impl Drop for Httpbin {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
