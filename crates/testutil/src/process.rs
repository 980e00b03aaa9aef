//! A server process a test starts on a loopback port of its own and waits
//! for until it answers: the Prometheus exporters ([`crate::exporter`]) and
//! httpbin under gunicorn ([`crate::httpbin`]).

use std::io::{Read as _, Write as _};
use std::net::{TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// How often a starting server is asked whether it answers.
const POLL: Duration = Duration::from_millis(50);

/// A free loopback port (the listener that found it is closed again).
pub(crate) fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .unwrap()
}

/// How a test asks a server it started whether it answers yet.
pub(crate) struct Probe {
    /// The HTTP request it sends.
    pub(crate) request: &'static [u8],
    /// How the head of an answer that counts starts.
    pub(crate) head: &'static [u8],
    /// How long it waits for that answer.
    pub(crate) timeout: Duration,
    /// How long the server has to start answering.
    pub(crate) within: Duration,
}

impl Probe {
    /// Whether the server on loopback `port` gives the answer.
    fn answered(&self, port: u16) -> bool {
        let Ok(mut s) = TcpStream::connect(("127.0.0.1", port)) else {
            return false;
        };
        let _ = s.set_read_timeout(Some(self.timeout));
        if s.write_all(self.request).is_err() {
            return false;
        }
        let mut got = [0u8; 12];
        s.read_exact(&mut got).is_ok() && got.starts_with(self.head)
    }
}

/// A server process, killed and reaped when dropped.
#[derive(Debug)]
pub(crate) struct Process(Child);

impl Process {
    /// Starts `command` (its stdout discarded) and waits until it answers
    /// `probe` on `port`, asking every 50 ms. Panics, saying "this test
    /// needs `needs`", if it cannot be started; with its stderr if `name`
    /// exits first; and if it does not answer within the probe's time.
    pub(crate) fn start(
        command: &mut Command,
        needs: &str,
        name: &str,
        port: u16,
        probe: &Probe,
    ) -> Process {
        let child = command
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("this test needs {needs}: {e}"));
        let mut process = Process(child);
        let child = &mut process.0;
        for _ in 0..probe.within.as_millis() / POLL.as_millis() {
            if let Some(status) = child.try_wait().unwrap() {
                let mut err = String::new();
                let _ = child.stderr.take().unwrap().read_to_string(&mut err);
                panic!("{name} exited ({status}): {err}");
            }
            if probe.answered(port) {
                // Its log is not needed; a full pipe must not stop it.
                let mut err = child.stderr.take().unwrap();
                std::thread::spawn(move || std::io::copy(&mut err, &mut std::io::sink()));
                return process;
            }
            std::thread::sleep(POLL);
        }
        drop(process);
        panic!(
            "{name} did not answer on 127.0.0.1:{port} within {} s",
            probe.within.as_secs()
        );
    }
}

impl Drop for Process {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}
