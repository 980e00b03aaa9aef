//! `\shell` and `\setshell`: a command line run by `/bin/sh`, as pgbench
//! runs it with `system()` or `popen()`.
//!
//! The child is waited for on a thread of its own, not by the event loop:
//! tokio's process support reaps orphans at every park of every runtime,
//! which cost every engine's loop 70–120 instructions a wake-up for the
//! sake of one rarely used command. A command dropped before its child
//! ends (the load cut at its grace, the run stopped) kills the child, as
//! `kill_on_drop` did.

use std::io::{self, Read as _};
use std::os::fd::AsFd as _;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{Arc, Mutex, PoisonError};

/// Runs `line` with `/bin/sh -c`. With `keep` (`\setshell`), returns the
/// integer its output starts with; `\shell`'s output goes to dyno's
/// stderr, so that it never mixes with the report on stdout. A command that
/// cannot start, or exits other than 0, fails: the client stops, as
/// pgbench's does.
pub(crate) async fn run(line: &str, keep: bool) -> Result<Option<i64>, String> {
    let what = if keep { "\\setshell" } else { "\\shell" };
    let failed = |e: io::Error| format!("{what}: could not run /bin/sh for `{line}`: {e}");
    let mut command = Command::new("/bin/sh");
    command.arg("-c").arg(line).stdin(Stdio::null());
    // Its own errors go where dyno's go.
    command.stderr(Stdio::inherit());
    if keep {
        command.stdout(Stdio::piped());
    } else if let Ok(fd) = io::stderr().as_fd().try_clone_to_owned() {
        command.stdout(Stdio::from(fd));
    }
    let child = command.spawn().map_err(failed)?;
    let guard = KillOnDrop {
        pid: child.id() as libc::pid_t,
        reaped: Arc::default(),
    };
    let reaped = Arc::clone(&guard.reaped);
    let (tx, rx) = tokio::sync::oneshot::channel();
    std::thread::Builder::new()
        .name("dyno-shell".to_owned())
        .spawn(move || {
            let _ = tx.send(wait(child, &reaped));
        })
        .map_err(failed)?;
    let (status, stdout) = rx
        .await
        .map_err(|_| failed(io::Error::other("its waiting thread ended")))?
        .map_err(failed)?;
    drop(guard);
    if !status.success() {
        let how = match status.code() {
            Some(code) => format!("exited with status {code}"),
            None => "was killed by a signal".to_owned(),
        };
        return Err(format!("{what}: `{line}` {how}"));
    }
    if !keep {
        return Ok(None);
    }
    let text = String::from_utf8_lossy(&stdout);
    crate::script::Shell::integer(&text)
        .map(Some)
        .map_err(|e| format!("{what}: `{line}`: {e}"))
}

/// Reads the child's output to its end, then waits for it. The child is
/// known to have exited (`WNOWAIT`) before it is reaped, and `reaped` is
/// set under its lock between the two, so a kill from [`KillOnDrop`] can
/// never reach another process that was given the same pid.
fn wait(mut child: Child, reaped: &Mutex<bool>) -> io::Result<(ExitStatus, Vec<u8>)> {
    let mut stdout = Vec::new();
    let read = match child.stdout.take() {
        Some(mut pipe) => pipe.read_to_end(&mut stdout).map(drop),
        None => Ok(()),
    };
    loop {
        // SAFETY: `info` is a plain C struct that waitid fills.
        let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
        let pid = child.id() as libc::id_t;
        // SAFETY: waits for our own child, with a valid pointer.
        let r = unsafe { libc::waitid(libc::P_PID, pid, &mut info, libc::WEXITED | libc::WNOWAIT) };
        if r == 0 {
            break;
        }
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
    let mut reaped = reaped.lock().unwrap_or_else(PoisonError::into_inner);
    let status = child.wait()?;
    *reaped = true;
    read?;
    Ok((status, stdout))
}

/// Kills the child unless it has been reaped.
struct KillOnDrop {
    pid: libc::pid_t,
    reaped: Arc<Mutex<bool>>,
}

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let reaped = self.reaped.lock().unwrap_or_else(PoisonError::into_inner);
        if !*reaped {
            // SAFETY: the pid is our unreaped child's (see `wait`).
            unsafe { libc::kill(self.pid, libc::SIGKILL) };
        }
    }
}
