//! One timed child process: spawned in its own process group, waited for
//! with `wait4` so its user time, system time and peak RSS are its own (not
//! the running total `RUSAGE_CHILDREN` gives), and killed with its whole
//! group on a timeout or a stop request.
//!
//! The wait polls a pidfd beside the stop socket and the output pipes, so a
//! timeout or Ctrl-C interrupts it at once and a chatty child never blocks
//! on a full pipe. Wall time runs from just before `spawn` to the moment
//! the pidfd reports the exit.

use std::fs::File;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::Stop;
use crate::settings::Output;

/// The environment variable whose random length shifts the child's stack
/// and environment block from run to run, so one lucky (or unlucky) memory
/// layout does not bias every run the same way.
pub const PAD_VARIABLE: &str = "DYNO_RANDOM_PAD";

/// How much of a run's stdout is kept to show when outputs differ.
const HEAD_BYTES: usize = 200;

/// One process to run.
#[derive(Debug, Clone, Copy)]
pub struct Invocation<'a> {
    /// Program and arguments.
    pub argv: &'a [String],
    pub cwd: Option<&'a Path>,
    pub env: &'a [(String, String)],
    pub input: Option<&'a Path>,
    pub output: &'a Output,
    /// Hash stdout (it is read through a pipe whatever `output` says).
    pub capture: bool,
    pub timeout: Option<Duration>,
    /// Length of the padding variable.
    pub pad: usize,
}

/// What one run measured.
#[derive(Debug, Clone, PartialEq)]
pub struct Sample {
    pub wall: Duration,
    pub user: Duration,
    pub system: Duration,
    /// Peak resident set size of the child and the descendants it waited for.
    pub max_rss_bytes: u64,
    pub status: Status,
    pub stdout: Option<Captured>,
}

/// A run's stdout, summarised.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Captured {
    /// 64-bit FNV-1a of every byte.
    pub hash: u64,
    pub len: u64,
    /// The first bytes, to show when outputs differ.
    pub head: Vec<u8>,
}

/// How a run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    Exited(i32),
    /// Killed by this signal (not by dyno).
    Signaled(i32),
    /// Ran past the timeout; dyno killed its process group.
    TimedOut,
    /// A stop was asked for; dyno killed its process group.
    Stopped,
}

impl Status {
    pub fn success(self) -> bool {
        self == Status::Exited(0)
    }

    /// The exit code as recorded: the code itself, or minus the signal
    /// number for a run that was killed (by a signal, a timeout or a stop,
    /// which are SIGKILL).
    pub fn recorded_code(self) -> i64 {
        match self {
            Status::Exited(code) => code.into(),
            Status::Signaled(sig) => -i64::from(sig),
            Status::TimedOut | Status::Stopped => -i64::from(libc::SIGKILL),
        }
    }
}

impl std::fmt::Display for Status {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Status::Exited(code) => write!(f, "exited with code {code}"),
            Status::Signaled(sig) => write!(f, "was killed by signal {sig}"),
            Status::TimedOut => f.write_str("ran past the timeout and was killed"),
            Status::Stopped => f.write_str("was stopped"),
        }
    }
}

/// A process that could not be started.
#[derive(Debug, thiserror::Error)]
pub enum SpawnError {
    #[error("command '{0}' was not found: check the spelling and that it is on PATH")]
    NotFound(String),
    #[error("command '{0}' cannot be run: permission denied (is it executable?)")]
    PermissionDenied(String),
    #[error("could not start '{program}': {source}")]
    Spawn { program: String, source: io::Error },
    #[error("could not open the input file '{}': {source}", path.display())]
    Input { path: PathBuf, source: io::Error },
    #[error("could not create the output file '{}': {source}", path.display())]
    Output { path: PathBuf, source: io::Error },
    #[error("lost track of a child process: {0}")]
    Wait(io::Error),
}

/// Runs `inv` to its end (or its timeout, or a stop) and measures it.
pub fn execute(inv: &Invocation<'_>, stop: &Stop) -> Result<Sample, SpawnError> {
    let program = inv.argv.first().map(String::as_str).unwrap_or_default();
    let mut cmd = Command::new(program);
    cmd.args(&inv.argv[1..])
        .process_group(0)
        .env(PAD_VARIABLE, "x".repeat(inv.pad))
        .envs(inv.env.iter().map(|(k, v)| (k, v)));
    if let Some(cwd) = inv.cwd {
        cmd.current_dir(cwd);
    }
    cmd.stdin(match inv.input {
        Some(path) => Stdio::from(File::open(path).map_err(|source| SpawnError::Input {
            path: path.to_owned(),
            source,
        })?),
        None => Stdio::null(),
    });
    let (stdout, stderr) = streams(inv)?;
    cmd.stdout(stdout).stderr(stderr);

    let start = Instant::now();
    let mut child = cmd.spawn().map_err(|source| match source.kind() {
        io::ErrorKind::NotFound => SpawnError::NotFound(program.to_owned()),
        io::ErrorKind::PermissionDenied => SpawnError::PermissionDenied(program.to_owned()),
        _ => SpawnError::Spawn {
            program: program.to_owned(),
            source,
        },
    })?;
    let pid = child.id() as libc::pid_t;
    let mut pipes = Pipes {
        stdout: child.stdout.take().map(OwnedFd::from),
        stderr: child.stderr.take().map(OwnedFd::from),
        hash: inv.capture.then(Hasher::new),
    };
    let pidfd = pidfd_open(pid);
    let deadline = inv.timeout.map(|t| start + t);

    let (ended, killed) = wait_for_exit(pid, pidfd.as_ref(), &mut pipes, stop, deadline)?;
    let (raw_status, usage) = reap(pid).map_err(SpawnError::Wait)?;
    let ended = ended.unwrap_or_else(Instant::now);
    pipes.drain();
    let status = killed.unwrap_or_else(|| decode(raw_status));
    Ok(Sample {
        wall: ended.duration_since(start),
        user: timeval(usage.ru_utime),
        system: timeval(usage.ru_stime),
        // Linux reports ru_maxrss in KiB.
        max_rss_bytes: u64::try_from(usage.ru_maxrss).unwrap_or(0) * 1024,
        status,
        stdout: pipes.hash.map(Hasher::finish),
    })
}

/// Where stdout and stderr go.
fn streams(inv: &Invocation<'_>) -> Result<(Stdio, Stdio), SpawnError> {
    if inv.capture {
        // stdout is hashed; stderr follows `output` where it can.
        let stderr = match inv.output {
            Output::Inherit => Stdio::inherit(),
            Output::Pipe => Stdio::piped(),
            Output::Null | Output::File(_) => Stdio::null(),
        };
        return Ok((Stdio::piped(), stderr));
    }
    Ok(match inv.output {
        Output::Null => (Stdio::null(), Stdio::null()),
        Output::Pipe => (Stdio::piped(), Stdio::piped()),
        Output::Inherit => (Stdio::inherit(), Stdio::inherit()),
        Output::File(path) => {
            let error = |source| SpawnError::Output {
                path: path.clone(),
                source,
            };
            let file = File::create(path).map_err(error)?;
            let copy = file.try_clone().map_err(error)?;
            (Stdio::from(file), Stdio::from(copy))
        }
    })
}

/// Waits until the child exits, the deadline passes or a stop is asked for.
/// Returns when the exit was seen (None when only `wait4` can tell) and, if
/// dyno killed the child, why.
fn wait_for_exit(
    pid: libc::pid_t,
    pidfd: Option<&OwnedFd>,
    pipes: &mut Pipes,
    stop: &Stop,
    deadline: Option<Instant>,
) -> Result<(Option<Instant>, Option<Status>), SpawnError> {
    loop {
        let mut fds = Vec::with_capacity(4);
        let watch = |fd: RawFd| libc::pollfd {
            fd,
            events: libc::POLLIN,
            revents: 0,
        };
        fds.push(watch(stop.fd().as_raw_fd()));
        if let Some(fd) = pidfd {
            fds.push(watch(fd.as_raw_fd()));
        } else if pipes.is_empty() {
            // No pidfd (a kernel before 5.3 or a seccomp filter) and nothing
            // to read: only a blocking wait4 is left, which neither a
            // timeout nor a stop can interrupt.
            return Ok((None, None));
        }
        let pipe_fds: Vec<RawFd> = pipes.fds().collect();
        fds.extend(pipe_fds.iter().map(|&fd| watch(fd)));
        let timeout_ms = match deadline {
            None => -1,
            Some(d) => {
                let left = d.saturating_duration_since(Instant::now());
                i32::try_from(left.as_micros().div_ceil(1000)).unwrap_or(i32::MAX)
            }
        };
        // SAFETY: `fds` is a valid array of pollfd of the given length.
        let ready = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, timeout_ms) };
        let now = Instant::now();
        if ready < 0 {
            let err = io::Error::last_os_error();
            if err.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return Err(SpawnError::Wait(err));
        }
        if pidfd.is_some() && fds[1].revents != 0 {
            return Ok((Some(now), None));
        }
        if fds[0].revents != 0 {
            kill_group(pid);
            return Ok((Some(now), Some(Status::Stopped)));
        }
        if deadline.is_some_and(|d| now >= d) {
            kill_group(pid);
            return Ok((Some(now), Some(Status::TimedOut)));
        }
        let first_pipe = fds.len() - pipe_fds.len();
        for (poll, fd) in fds[first_pipe..].iter().zip(pipe_fds) {
            if poll.revents != 0 {
                pipes.read_available(fd);
            }
        }
        if pidfd.is_none() && pipes.is_empty() {
            return Ok((None, None));
        }
    }
}

fn kill_group(pid: libc::pid_t) {
    // SAFETY: plain syscall; the group id is the child's pid
    // (`process_group(0)`), and the child is not yet reaped, so the id
    // cannot have been reused.
    unsafe {
        libc::kill(-pid, libc::SIGKILL);
    }
}

fn pidfd_open(pid: libc::pid_t) -> Option<OwnedFd> {
    // SAFETY: plain syscall; on success it returns a new descriptor we own.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) };
    (fd >= 0).then(|| unsafe { OwnedFd::from_raw_fd(fd as RawFd) })
}

/// Reaps the child and returns its wait status and its own resource usage.
fn reap(pid: libc::pid_t) -> io::Result<(libc::c_int, libc::rusage)> {
    let mut status = 0;
    // SAFETY: an all-zero rusage is a valid value of this plain C struct.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    loop {
        // SAFETY: valid pointers to a status and a rusage we own.
        let r = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
        if r == pid {
            return Ok((status, usage));
        }
        let err = io::Error::last_os_error();
        if err.kind() != io::ErrorKind::Interrupted {
            return Err(err);
        }
    }
}

fn decode(status: libc::c_int) -> Status {
    if libc::WIFSIGNALED(status) {
        Status::Signaled(libc::WTERMSIG(status))
    } else {
        Status::Exited(libc::WEXITSTATUS(status))
    }
}

fn timeval(tv: libc::timeval) -> Duration {
    Duration::from_secs(tv.tv_sec.max(0) as u64) + Duration::from_micros(tv.tv_usec.max(0) as u64)
}

/// The child's output pipes, read as data arrives.
struct Pipes {
    stdout: Option<OwnedFd>,
    stderr: Option<OwnedFd>,
    /// Hashes stdout when it is captured.
    hash: Option<Hasher>,
}

impl Pipes {
    fn is_empty(&self) -> bool {
        self.stdout.is_none() && self.stderr.is_none()
    }

    fn fds(&self) -> impl Iterator<Item = RawFd> + '_ {
        [&self.stdout, &self.stderr]
            .into_iter()
            .flatten()
            .map(AsRawFd::as_raw_fd)
    }

    /// Reads what `fd` holds now; closes it at end of file.
    fn read_available(&mut self, fd: RawFd) {
        let is_stdout = self.stdout.as_ref().is_some_and(|f| f.as_raw_fd() == fd);
        let slot = if is_stdout {
            &mut self.stdout
        } else {
            &mut self.stderr
        };
        if slot.is_none() {
            return;
        }
        let mut buf = [0u8; 16 * 1024];
        // One read per wake-up: poll says there is data (or end of file),
        // so the read does not block.
        // SAFETY: `fd` is open (owned by `slot`) and `buf` is writable for
        // its whole length.
        let n = unsafe { libc::read(fd, buf.as_mut_ptr().cast(), buf.len()) };
        match n {
            0 => *slot = None,
            n if n > 0 => {
                if is_stdout && let Some(h) = &mut self.hash {
                    h.update(&buf[..n as usize]);
                }
            }
            _ if io::Error::last_os_error().kind() == io::ErrorKind::Interrupted => {}
            _ => *slot = None,
        }
    }

    /// After the child exited: reads what is left without waiting for
    /// descendants that may still hold the pipes open.
    fn drain(&mut self) {
        loop {
            let Some(fd) = self.fds().next() else { break };
            let mut poll = libc::pollfd {
                fd,
                events: libc::POLLIN,
                revents: 0,
            };
            // SAFETY: one valid pollfd, no timeout.
            let ready = unsafe { libc::poll(&mut poll, 1, 0) };
            if ready > 0 {
                self.read_available(fd);
            } else if self.stdout.as_ref().is_some_and(|f| f.as_raw_fd() == fd) {
                self.stdout = None;
            } else {
                self.stderr = None;
            }
        }
    }
}

/// 64-bit FNV-1a: stable across builds and machines, fast, and enough to
/// tell outputs apart (this is not a security boundary).
#[derive(Debug, Clone)]
struct Hasher {
    /// FNV-1a's state (`FnvHasher` is neither `Clone` nor `Debug`).
    state: u64,
    len: u64,
    head: Vec<u8>,
}

impl Hasher {
    fn new() -> Self {
        Hasher {
            state: std::hash::Hasher::finish(&fnv::FnvHasher::default()),
            len: 0,
            head: Vec::new(),
        }
    }

    fn update(&mut self, bytes: &[u8]) {
        let mut h = fnv::FnvHasher::with_key(self.state);
        std::hash::Hasher::write(&mut h, bytes);
        self.state = std::hash::Hasher::finish(&h);
        self.len += bytes.len() as u64;
        let room = HEAD_BYTES.saturating_sub(self.head.len());
        self.head.extend_from_slice(&bytes[..room.min(bytes.len())]);
    }

    fn finish(self) -> Captured {
        Captured {
            hash: self.state,
            len: self.len,
            head: self.head,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn argv(words: &[&str]) -> Vec<String> {
        words.iter().map(|w| (*w).to_owned()).collect()
    }

    /// An invocation of `argv` with nothing else set.
    fn plain(argv: &[String]) -> Invocation<'_> {
        Invocation {
            argv,
            cwd: None,
            env: &[],
            input: None,
            output: &Output::Null,
            capture: false,
            timeout: None,
            pad: 10,
        }
    }

    fn run(words: &[&str], capture: bool, timeout: Option<Duration>) -> Sample {
        let argv = argv(words);
        let inv = Invocation {
            capture,
            timeout,
            ..plain(&argv)
        };
        execute(&inv, &Stop::new().unwrap()).unwrap()
    }

    #[test]
    fn fnv1a_matches_its_reference_vectors() {
        let mut h = Hasher::new();
        h.update(b"");
        assert_eq!(h.clone().finish().hash, 0xcbf2_9ce4_8422_2325);
        h.update(b"a");
        assert_eq!(h.finish().hash, 0xaf63_dc4c_8601_ec8c);
        let mut h = Hasher::new();
        h.update(b"foo");
        assert_eq!(h.finish().hash, 0xdcb2_7518_fed9_d577);
    }

    #[test]
    fn exit_codes_and_signals_are_told_apart() {
        assert_eq!(run(&["true"], false, None).status, Status::Exited(0));
        assert_eq!(
            run(&["sh", "-c", "exit 3"], false, None).status,
            Status::Exited(3)
        );
        let killed = run(&["sh", "-c", "kill -TERM $$"], false, None);
        assert_eq!(killed.status, Status::Signaled(libc::SIGTERM));
        assert_eq!(killed.status.recorded_code(), -15);
    }

    #[test]
    fn captured_output_is_hashed_and_its_head_kept() {
        let a = run(&["printf", "hello"], true, None).stdout.unwrap();
        let b = run(&["sh", "-c", "printf hel; printf lo"], true, None)
            .stdout
            .unwrap();
        assert_eq!(a, b);
        assert_eq!((a.len, a.head.as_slice()), (5, &b"hello"[..]));
        let big = run(&["head", "-c", "1000000", "/dev/zero"], true, None)
            .stdout
            .unwrap();
        assert_eq!(
            big.len, 1_000_000,
            "a large output is read while the child runs"
        );
        assert_eq!(big.head.len(), HEAD_BYTES);
    }

    #[test]
    fn a_timeout_kills_the_whole_process_group() {
        let dir = tempfile::tempdir().unwrap();
        let marker = dir.path().join("grandchild-survived");
        // The child forks a grandchild that would write the marker after
        // 0.5 s, then waits: both must die at the timeout.
        let script = format!("(sleep 0.5; touch '{}') & wait", marker.display());
        let sample = run(
            &["sh", "-c", &script],
            false,
            Some(Duration::from_millis(100)),
        );
        assert_eq!(sample.status, Status::TimedOut);
        assert!(sample.wall >= Duration::from_millis(100));
        assert!(
            sample.wall < Duration::from_millis(450),
            "{:?}",
            sample.wall
        );
        std::thread::sleep(Duration::from_millis(700));
        assert!(!marker.exists(), "the grandchild outlived the timeout");
    }

    #[test]
    fn a_stop_interrupts_a_long_wait() {
        let argv = argv(&["sleep", "30"]);
        let stop = Stop::new().unwrap();
        let sender = stop.sender().unwrap();
        let trigger = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(100));
            std::io::Write::write_all(&mut &sender, &[1]).unwrap();
        });
        let sample = execute(&plain(&argv), &stop).unwrap();
        trigger.join().unwrap();
        assert_eq!(sample.status, Status::Stopped);
        assert!(sample.wall < Duration::from_secs(10));
    }

    #[test]
    fn cpu_time_and_peak_memory_are_the_childs_own() {
        // A busy loop in the shell burns user time; `head -c` into a shell
        // variable is not reliable for memory, so memory is checked by the
        // CLI tests with a program that allocates a known amount.
        let busy = run(
            &[
                "sh",
                "-c",
                "i=0; while [ $i -lt 200000 ]; do i=$((i+1)); done",
            ],
            false,
            None,
        );
        assert!(
            busy.user + busy.system > Duration::from_millis(20),
            "{busy:?}"
        );
        assert!(busy.user + busy.system <= busy.wall + Duration::from_millis(20));
        assert!(busy.max_rss_bytes > 0);
        let idle = run(&["sleep", "0.05"], false, None);
        assert!(
            idle.user + idle.system < Duration::from_millis(20),
            "{idle:?}"
        );
    }

    #[test]
    fn missing_programs_and_files_are_clear_errors() {
        let stop = Stop::new().unwrap();
        let argv = argv(&["dyno-no-such-command"]);
        let mut inv = plain(&argv);
        let err = execute(&inv, &stop).unwrap_err();
        assert!(matches!(err, SpawnError::NotFound(_)), "{err}");
        assert!(err.to_string().contains("dyno-no-such-command"));
        let argv = self::argv(&["true"]);
        inv.argv = &argv;
        let missing = Path::new("/nonexistent/input");
        inv.input = Some(missing);
        let err = execute(&inv, &stop).unwrap_err();
        assert!(err.to_string().contains("/nonexistent/input"), "{err}");
    }

    #[test]
    fn environment_input_and_file_output_reach_the_child() {
        let dir = tempfile::tempdir().unwrap();
        let input = dir.path().join("in");
        std::fs::write(&input, "from stdin").unwrap();
        let out = dir.path().join("out");
        let argv = argv(&["sh", "-c", "cat; printf \" $GREETING ${#DYNO_RANDOM_PAD}\""]);
        let env = [("GREETING".to_owned(), "hi".to_owned())];
        let output = Output::File(out.clone());
        let inv = Invocation {
            cwd: Some(dir.path()),
            env: &env,
            input: Some(&input),
            output: &output,
            pad: 7,
            ..plain(&argv)
        };
        let sample = execute(&inv, &Stop::new().unwrap()).unwrap();
        assert!(sample.status.success());
        assert_eq!(std::fs::read_to_string(&out).unwrap(), "from stdin hi 7");
    }
}
