//! The system under test as `/proc` and cgroup v2 show it (`--watch-pid`,
//! `--watch-name`, `--watch-cgroup`): what one sample of a process or a
//! cgroup reads, and the processes that go by a name.
//!
//! A sample is a snapshot of cumulative counters (CPU time, context
//! switches, bytes read and written) and of levels (resident memory,
//! threads); a watcher takes one each interval on the run's clock, and the
//! differences between samples are what the run records. Reading never
//! panics: a process that has exited is [`WatchError::Gone`], and a file
//! the kernel will not show this user (another user's `/proc/PID/io`) is a
//! field left `None`, not an error.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use dyno_model::names::{label, telemetry};
use dyno_model::{Direction, Merge, Metric, Unit};

use crate::root::Root;
use crate::scrape::{self, Scrape, ScrapeSeries};
use crate::state::{self, State};

/// Why a process or cgroup could not be sampled.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WatchError {
    /// No such process (never was, or has exited).
    #[error("process {0} does not exist (it may have exited)")]
    Gone(u32),
    /// Its `/proc` files do not read as Linux writes them.
    #[error("process {pid}'s {file} could not be read as /proc writes it: {why}")]
    Garbled {
        pid: u32,
        file: &'static str,
        why: String,
    },
    /// No cgroup directory there (or not readable).
    #[error(
        "{0} is not a cgroup directory this user can read: it needs cgroup v2's cpu.stat with usage_usec, or cgroup v1's cpuacct.usage (here or at the same place under the cpuacct hierarchy)"
    )]
    NotCgroup(String),
}

/// One process's counters and levels at one moment.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ProcSample {
    /// The command name (`/proc/PID/comm`, as `stat` has it).
    pub name: String,
    /// CPU time in user and kernel mode, all threads, since it started.
    pub user: Duration,
    pub system: Duration,
    /// Resident memory, in bytes.
    pub rss_bytes: u64,
    pub threads: u64,
    /// Context switches since it started: it waited (voluntary), or was
    /// preempted (involuntary); all threads (`/proc/PID/status` counts the
    /// main thread only, so these come from each task's status).
    pub voluntary_switches: u64,
    pub involuntary_switches: u64,
    /// Bytes it made the storage layer read and write (`/proc/PID/io`);
    /// `None` where this user may not read another user's counters.
    pub read_bytes: Option<u64>,
    pub write_bytes: Option<u64>,
    /// Each thread's CPU time so far, by thread id, in order of id: a
    /// process whose one busy thread does its work alone (an event loop)
    /// is limited by that thread, whatever its others do.
    pub thread_cpu: Vec<ThreadCpu>,
}

/// One thread's CPU so far.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ThreadCpu {
    pub tid: u32,
    /// Time on a CPU (`schedstat`'s, to the nanosecond; `stat`'s ticks
    /// where there is no schedstat).
    pub cpu: Duration,
    /// Time it was ready to run and waited for a CPU (`schedstat`); zero
    /// where the kernel does not keep it. A thread that ran or waited to
    /// run all the time wanted a whole core, even when others took part of
    /// it.
    pub waited: Duration,
    /// Context switches so far, both kinds (0 where its status could not
    /// be read).
    pub switches: u64,
}

impl ProcSample {
    /// CPU time in both modes.
    pub fn cpu(&self) -> Duration {
        self.user + self.system
    }
}

/// The kernel's clock ticks per second, the unit of `/proc/PID/stat`'s
/// times.
fn ticks_per_second() -> u64 {
    // SAFETY: sysconf reads a constant of the running kernel.
    let ticks = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    u64::try_from(ticks).ok().filter(|t| *t > 0).unwrap_or(100)
}

/// The kernel's page size, the unit of `/proc/PID/stat`'s resident set.
fn page_size() -> u64 {
    // SAFETY: sysconf reads a constant of the running kernel.
    let size = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    u64::try_from(size).ok().filter(|s| *s > 0).unwrap_or(4096)
}

/// Samples process `pid` from this machine's `/proc`.
pub fn sample(pid: u32) -> Result<ProcSample, WatchError> {
    sample_from(Root::new(Path::new("/")), pid)
}

pub(crate) fn sample_from(root: Root<'_>, pid: u32) -> Result<ProcSample, WatchError> {
    let stat = root
        .read(&format!("proc/{pid}/stat"))
        .ok_or(WatchError::Gone(pid))?;
    let garbled = |why: String| WatchError::Garbled {
        pid,
        file: "stat",
        why,
    };
    // "PID (COMM) STATE PPID …": the name may hold spaces and parentheses,
    // so it ends at the last ')'.
    let (open, close) = match (stat.find('('), stat.rfind(')')) {
        (Some(open), Some(close)) if open < close => (open, close),
        _ => return Err(garbled("no (name)".into())),
    };
    let name = stat[open + 1..close].to_owned();
    let fields: Vec<&str> = stat[close + 1..].split_whitespace().collect();
    // A process that has exited and is not yet reaped (a zombie) has no
    // memory or threads left to read: it is gone, not a process of 0 B.
    if matches!(fields.first(), Some(&("Z" | "X" | "x"))) {
        return Err(WatchError::Gone(pid));
    }
    // Fields counted from the state (field 3 of proc(5)).
    let field = |n: usize, what: &str| -> Result<u64, WatchError> {
        fields
            .get(n - 3)
            .and_then(|f| f.parse().ok())
            .ok_or_else(|| garbled(format!("no {what} (field {n})")))
    };
    let ticks = ticks_per_second();
    let from_ticks = |t: u64| Duration::from_nanos(t.saturating_mul(1_000_000_000) / ticks);
    let mut sample = ProcSample {
        name,
        user: from_ticks(field(14, "utime")?),
        system: from_ticks(field(15, "stime")?),
        threads: field(20, "num_threads")?,
        rss_bytes: field(24, "rss")?.saturating_mul(page_size()),
        ..ProcSample::default()
    };
    // Switches of every thread: each task's status; and its CPU: each
    // task's stat.
    let tasks = std::fs::read_dir(root.path(&format!("proc/{pid}/task")))
        .map_err(|_| WatchError::Gone(pid))?;
    for task in tasks.flatten() {
        let tid = task
            .file_name()
            .to_str()
            .and_then(|t| t.parse::<u32>().ok());
        // "ON_CPU_NS WAITING_NS TIMESLICES"
        let schedstat = std::fs::read_to_string(task.path().join("schedstat"))
            .ok()
            .and_then(|text| {
                let mut f = text.split_whitespace().map(|v| v.parse::<u64>().ok());
                Some((f.next()??, f.next()??))
            });
        let cpu = match schedstat {
            Some((on, waiting)) => Some((Duration::from_nanos(on), Duration::from_nanos(waiting))),
            None => std::fs::read_to_string(task.path().join("stat"))
                .ok()
                .and_then(|stat| {
                    let after = &stat[stat.rfind(')')? + 1..];
                    let mut f = after.split_whitespace().skip(14 - 3);
                    let user: u64 = f.next()?.parse().ok()?;
                    let system: u64 = f.next()?.parse().ok()?;
                    Some((from_ticks(user) + from_ticks(system), Duration::ZERO))
                }),
        };
        // A thread that ended between the listing and the read has no
        // status: its switches count as none.
        let status = std::fs::read_to_string(task.path().join("status")).unwrap_or_default();
        let mut switches = 0;
        for line in status.lines() {
            let value = |prefix: &str| {
                line.strip_prefix(prefix)
                    .and_then(|v| v.trim().parse::<u64>().ok())
            };
            if let Some(v) = value("voluntary_ctxt_switches:") {
                sample.voluntary_switches += v;
                switches += v;
            } else if let Some(v) = value("nonvoluntary_ctxt_switches:") {
                sample.involuntary_switches += v;
                switches += v;
            }
        }
        if let (Some(tid), Some((cpu, waited))) = (tid, cpu) {
            sample.thread_cpu.push(ThreadCpu {
                tid,
                cpu,
                waited,
                switches,
            });
        }
    }
    if let Some(io) = root.read(&format!("proc/{pid}/io")) {
        for line in io.lines() {
            let value = |prefix: &str| {
                line.strip_prefix(prefix)
                    .and_then(|v| v.trim().parse::<u64>().ok())
            };
            if let Some(v) = value("read_bytes:") {
                sample.read_bytes = Some(v);
            } else if let Some(v) = value("write_bytes:") {
                sample.write_bytes = Some(v);
            }
        }
    }
    sample.thread_cpu.sort_unstable_by_key(|t| t.tid);
    Ok(sample)
}

/// The processes whose command name (`/proc/PID/comm`, at most 15
/// characters, as `pgrep` matches) is `name`, by PID; this process is
/// left out, as `pgrep` leaves itself out (`--watch-name dyno` must not
/// add the client to the server it loads).
pub fn pids_named(name: &str) -> Vec<u32> {
    pids_named_from(Root::new(Path::new("/")), name)
}

pub(crate) fn pids_named_from(root: Root<'_>, name: &str) -> Vec<u32> {
    let Ok(entries) = std::fs::read_dir(root.path("proc")) else {
        return Vec::new();
    };
    let own = std::process::id();
    let mut pids: Vec<u32> = entries
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|&pid| pid != own)
        .filter(|pid| {
            root.read_value(&format!("proc/{pid}/comm"))
                .is_some_and(|comm| comm == name)
        })
        .collect();
    pids.sort_unstable();
    pids
}

/// The processes of one name that descend from the first of them: a
/// server's master and its workers, or its process per connection.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tree {
    pub root: u32,
    /// Every process of the tree, the root included, by PID.
    pub pids: Vec<u32>,
}

/// The processes named `name` ([`pids_named`]), grouped by tree: each
/// goes with its highest ancestor of the same name, whatever lies between. Two trees are two
/// servers (two PostgreSQL clusters, two nginx masters), whose figures
/// must not be added up as one's.
pub fn trees_named(name: &str) -> Vec<Tree> {
    trees_named_from(Root::new(Path::new("/")), name)
}

pub(crate) fn trees_named_from(root: Root<'_>, name: &str) -> Vec<Tree> {
    let pids = pids_named_from(root, name);
    let mut trees: Vec<Tree> = Vec::new();
    for &pid in &pids {
        // A process that ended since it was listed (a database's backend
        // for a short session) is of no tree: alone, it would pass for a
        // second server.
        if parent_from(root, pid).is_none() {
            continue;
        }
        // The highest ancestor of the name, whatever lies between (a
        // shell that started a worker). A chain of parents is short; the
        // bound guards a garbled /proc.
        let (mut top, mut at) = (pid, pid);
        for _ in 0..64 {
            match parent_from(root, at) {
                Some(up) if up != at && up != 0 => at = up,
                _ => break,
            }
            if pids.contains(&at) {
                top = at;
            }
        }
        match trees.iter_mut().find(|t| t.root == top) {
            Some(tree) => tree.pids.push(pid),
            None => trees.push(Tree {
                root: top,
                pids: vec![pid],
            }),
        }
    }
    trees.sort_unstable_by_key(|t| t.root);
    trees
}

/// Whether process `pid` is `ancestor` or descends from it.
fn descends_from(root: Root<'_>, pid: u32, ancestor: u32) -> bool {
    let mut at = pid;
    for _ in 0..64 {
        if at == ancestor {
            return true;
        }
        match parent_from(root, at) {
            Some(up) if up != at && up != 0 => at = up,
            _ => return false,
        }
    }
    false
}

/// A process's parent (`stat`'s field 4), if it can be read.
fn parent_from(root: Root<'_>, pid: u32) -> Option<u32> {
    let stat = root.read(&format!("proc/{pid}/stat"))?;
    // "PID (COMM) STATE PPID …": the name ends at the last ')'.
    let rest = &stat[stat.rfind(')')? + 1..];
    rest.split_whitespace().nth(1)?.parse().ok()
}

/// The processes that hold a socket listening on `port`: TCP over IPv4
/// or IPv6, or a PostgreSQL Unix socket (`.s.PGSQL.PORT`), as far as this
/// user may read their descriptors (root reads every one).
pub fn listening_on(port: u16) -> Vec<u32> {
    listening_on_from(Root::new(Path::new("/")), port)
}

pub(crate) fn listening_on_from(root: Root<'_>, port: u16) -> Vec<u32> {
    let mut inodes: Vec<String> = Vec::new();
    for table in ["proc/net/tcp", "proc/net/tcp6"] {
        for line in root.read(table).unwrap_or_default().lines().skip(1) {
            // "sl local_address rem_address st … inode": local is HEX:PORT,
            // and 0A is LISTEN.
            let fields: Vec<&str> = line.split_whitespace().collect();
            let local_port = fields
                .get(1)
                .and_then(|a| a.rsplit(':').next())
                .and_then(|p| u16::from_str_radix(p, 16).ok());
            if local_port == Some(port) && fields.get(3) == Some(&"0A") {
                inodes.extend(fields.get(9).map(|i| (*i).to_owned()));
            }
        }
    }
    let socket = format!(".s.PGSQL.{port}");
    for line in root
        .read("proc/net/unix")
        .unwrap_or_default()
        .lines()
        .skip(1)
    {
        // "Num RefCount Protocol Flags Type St Inode Path".
        let fields: Vec<&str> = line.split_whitespace().collect();
        if fields.get(7).is_some_and(|p| p.ends_with(&socket)) {
            inodes.extend(fields.get(6).map(|i| (*i).to_owned()));
        }
    }
    if inodes.is_empty() {
        return Vec::new();
    }
    let wanted: Vec<String> = inodes.iter().map(|i| format!("socket:[{i}]")).collect();
    let Ok(entries) = std::fs::read_dir(root.path("proc")) else {
        return Vec::new();
    };
    let mut pids: Vec<u32> = entries
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            std::fs::read_dir(root.path(&format!("proc/{pid}/fd"))).is_ok_and(|fds| {
                fds.flatten().any(|fd| {
                    std::fs::read_link(fd.path())
                        .is_ok_and(|l| wanted.iter().any(|w| l.as_os_str() == w.as_str()))
                })
            })
        })
        .collect();
    pids.sort_unstable();
    pids
}

/// One cgroup's counters and levels at one moment (cgroup v2).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CgroupSample {
    /// CPU time of every process in it, since it was made.
    pub user: Duration,
    pub system: Duration,
    /// How often, and for how long, its CPU limit held it back.
    pub throttled_periods: u64,
    pub throttled: Duration,
    /// Memory in use now (`memory.current`), when the memory controller
    /// is on.
    pub memory_bytes: Option<u64>,
}

/// Samples the cgroup directory `dir`: cgroup v2's (e.g.
/// `/sys/fs/cgroup/system.slice/nginx.service`), whose `cpu.stat` has
/// `usage_usec`, or cgroup v1's (e.g.
/// `/sys/fs/cgroup/cpu/system.slice/nginx.service`), whose CPU time is
/// the `cpuacct` controller's, read at the same place of its own
/// hierarchy when it is mounted apart (as systemd-cgtop and cAdvisor read
/// it). A directory with neither is refused: a v1 `cpu.stat` alone has
/// no CPU time, and would read as an idle server.
pub fn sample_cgroup(dir: &Path) -> Result<CgroupSample, WatchError> {
    sample_cgroup_under(dir, Path::new("/sys/fs/cgroup"))
}

/// [`sample_cgroup`] with cgroup v1's hierarchies mounted under `mounts`.
pub(crate) fn sample_cgroup_under(dir: &Path, mounts: &Path) -> Result<CgroupSample, WatchError> {
    let not = || WatchError::NotCgroup(dir.display().to_string());
    let stat = std::fs::read_to_string(dir.join("cpu.stat")).unwrap_or_default();
    let mut sample = CgroupSample::default();
    let mut usage = None;
    for line in stat.lines() {
        let mut parts = line.split_whitespace();
        let (Some(key), Some(value)) = (parts.next(), parts.next()) else {
            continue;
        };
        let Ok(value) = value.parse::<u64>() else {
            continue;
        };
        match key {
            "usage_usec" => usage = Some(Duration::from_micros(value)),
            "user_usec" => sample.user = Duration::from_micros(value),
            "system_usec" => sample.system = Duration::from_micros(value),
            "nr_throttled" => sample.throttled_periods = value,
            "throttled_usec" => sample.throttled = Duration::from_micros(value),
            // cgroup v1's, in nanoseconds.
            "throttled_time" => sample.throttled = Duration::from_nanos(value),
            _ => {}
        }
    }
    if usage.is_some() {
        sample.memory_bytes = std::fs::read_to_string(dir.join("memory.current"))
            .ok()
            .and_then(|t| t.trim().parse().ok());
        return Ok(sample);
    }
    // cgroup v1: the cpuacct controller's CPU time, here or at the same
    // place of its own hierarchy.
    let v1 = |controllers: &[&str], file: &str| -> Option<String> {
        let here = std::fs::read_to_string(dir.join(file)).ok();
        here.or_else(|| {
            let rest = dir.strip_prefix(mounts).ok()?;
            let mut parts = rest.components();
            parts.next()?;
            let rest = parts.as_path();
            controllers
                .iter()
                .find_map(|c| std::fs::read_to_string(mounts.join(c).join(rest).join(file)).ok())
        })
    };
    let cpuacct = ["cpuacct", "cpu,cpuacct", "cpuacct,cpu"];
    let total: u64 = v1(&cpuacct, "cpuacct.usage")
        .and_then(|t| t.trim().parse().ok())
        .ok_or_else(not)?;
    // cpuacct.stat splits it in clock ticks: its system share, applied to
    // the nanosecond total.
    let ticks = |key: &str, text: &str| -> Option<u64> {
        text.lines()
            .find_map(|l| l.strip_prefix(key)?.trim().parse().ok())
    };
    let split = v1(&cpuacct, "cpuacct.stat").unwrap_or_default();
    let total = Duration::from_nanos(total);
    sample.system = match (ticks("user", &split), ticks("system", &split)) {
        (Some(user), Some(system)) if user + system > 0 => {
            total.mul_f64(system as f64 / (user + system) as f64)
        }
        _ => Duration::ZERO,
    };
    sample.user = total.saturating_sub(sample.system);
    if stat.is_empty()
        && let Some(cpu) = v1(&["cpu", "cpu,cpuacct", "cpuacct,cpu"], "cpu.stat")
    {
        for line in cpu.lines() {
            match line.split_once(' ') {
                Some(("nr_throttled", v)) => {
                    sample.throttled_periods = v.trim().parse().unwrap_or(0)
                }
                Some(("throttled_time", v)) => {
                    sample.throttled = Duration::from_nanos(v.trim().parse().unwrap_or(0));
                }
                _ => {}
            }
        }
    }
    sample.memory_bytes =
        v1(&["memory"], "memory.usage_in_bytes").and_then(|t| t.trim().parse().ok());
    Ok(sample)
}

/// What is watched.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    /// A process, by PID.
    Pid(u32),
    /// A cgroup directory (v2, or v1's with its cpuacct controller).
    Cgroup(PathBuf),
    /// A Prometheus text endpoint (`--watch URL`), scraped on a thread of
    /// its own.
    Prometheus(String),
    /// Every process of a name (`--watch-name`): those running at the
    /// start, and those that start during the run (a server that forks
    /// one per connection, as PostgreSQL does), each watched from the
    /// tick it is first seen, at which it had used no CPU since the tick
    /// before. One that ends is no loss. `tree`: only those that descend
    /// from this process ([`trees_named`]'s root), so that another server
    /// of the name is not added up with this one.
    Named { name: String, tree: Option<u32> },
}

impl Source {
    /// Reads it now: its CPU time so far, its memory and threads.
    fn read(&self) -> Result<Reading, WatchError> {
        match self {
            Source::Pid(pid) => sample(*pid).map(|s| Reading::of(&s)),
            Source::Cgroup(dir) => sample_cgroup(dir).map(|s| Reading {
                cpu: s.user + s.system,
                memory_bytes: s.memory_bytes,
                threads: None,
                thread_cpu: Vec::new(),
                counters: Counters {
                    system: s.system,
                    throttled: Some(s.throttled),
                    ..Counters::default()
                },
            }),
            Source::Prometheus(url) => unreachable!("{url} is scraped, not read"),
            Source::Named { name, .. } => unreachable!("{name} names processes, not one"),
        }
    }
}

/// A source read over a connection of its own, on a thread of its own, so
/// that a slow one delays no other: a Prometheus endpoint
/// ([`scrape::Endpoint`]), a PostgreSQL server's statistics views. Each
/// reading is a [`Scrape`] of dyno's keys, and what it says of a run is
/// [`ScrapeSeries::findings`].
pub trait Probe: Send {
    /// What it reads, as the run's labels and warnings name it: a URL.
    fn url(&self) -> String;
    /// How often to read it, given the run's `--watch-interval`.
    fn interval(&self, watch: Duration) -> Duration {
        watch
    }
    /// One reading, or why it failed (failures are counted by why).
    fn read(&mut self) -> Result<Scrape, String>;
    /// The last reading, when the watcher is stopped (just after the
    /// load ended): a source that publishes late may wait for it here.
    fn last(&mut self) -> Result<Scrape, String> {
        self.read()
    }
    /// What a reader of its figures should know when it is stopped (a
    /// view it could not read, sessions it could not see).
    fn notes(&mut self) -> Vec<String> {
        Vec::new()
    }
}

/// What one sample of a source read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reading {
    /// CPU time used so far (cumulative).
    pub cpu: Duration,
    pub memory_bytes: Option<u64>,
    pub threads: Option<u64>,
    /// Each thread's CPU so far (a process's; none for a cgroup).
    pub thread_cpu: Vec<ThreadCpu>,
    /// The other counters, where the source has them.
    pub counters: Counters,
}

/// A source's counters besides its CPU, cumulative; `None` where it has
/// not that counter (a cgroup's switches, another user's `/proc/PID/io`,
/// a process's throttling).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counters {
    /// Of the CPU time, the part in the kernel.
    pub system: Duration,
    /// Context switches, both kinds.
    pub switches: Option<u64>,
    /// Bytes it made the storage layer read and write.
    pub read_bytes: Option<u64>,
    pub write_bytes: Option<u64>,
    /// How long a cgroup's CPU limit held it back.
    pub throttled: Option<Duration>,
}

impl Counters {
    /// What grew from `was` to `self` (a counter missing from either is
    /// missing).
    fn since(&self, was: &Counters) -> Counters {
        let grew = |a: Option<u64>, b: Option<u64>| Some(a?.saturating_sub(b?));
        Counters {
            system: self.system.saturating_sub(was.system),
            switches: grew(self.switches, was.switches),
            read_bytes: grew(self.read_bytes, was.read_bytes),
            write_bytes: grew(self.write_bytes, was.write_bytes),
            throttled: self
                .throttled
                .zip(was.throttled)
                .map(|(a, b)| a.saturating_sub(b)),
        }
    }

    /// Both added up (a counter either has counts).
    fn plus(&self, other: &Counters) -> Counters {
        let add = |a: Option<u64>, b: Option<u64>| match (a, b) {
            (None, None) => None,
            (a, b) => Some(a.unwrap_or(0) + b.unwrap_or(0)),
        };
        Counters {
            system: self.system + other.system,
            switches: add(self.switches, other.switches),
            read_bytes: add(self.read_bytes, other.read_bytes),
            write_bytes: add(self.write_bytes, other.write_bytes),
            throttled: match (self.throttled, other.throttled) {
                (None, None) => None,
                (a, b) => Some(a.unwrap_or_default() + b.unwrap_or_default()),
            },
        }
    }
}

impl Reading {
    fn of(s: &ProcSample) -> Reading {
        Reading {
            cpu: s.cpu(),
            memory_bytes: Some(s.rss_bytes),
            threads: Some(s.threads),
            thread_cpu: s.thread_cpu.clone(),
            counters: Counters {
                system: s.system,
                switches: Some(s.voluntary_switches + s.involuntary_switches),
                read_bytes: s.read_bytes,
                write_bytes: s.write_bytes,
                throttled: None,
            },
        }
    }
}

/// One source's samples over a run.
#[derive(Debug, Clone)]
pub struct Series {
    /// The source as people name it: `nginx (pid 1234)`, or the cgroup's
    /// path.
    pub name: String,
    /// What its figures are labelled with (`watched`): the process's name
    /// without its PID, so that the processes of one server add up and a
    /// run compares with the next run of the same server; the cgroup's
    /// path.
    pub group: String,
    pub samples: Vec<(Instant, Reading)>,
    /// Why sampling stopped before the end (the process exited), if it
    /// did.
    pub lost: Option<String>,
    /// It started during the run and was found by its name
    /// ([`Source::Named`]): it had used nothing before its first sample.
    pub joined: bool,
    /// It was found by its name: its end is no loss (a connection's
    /// process ends with the connection).
    pub named: bool,
}

/// Samples sources on threads of their own every interval, from
/// [`Watcher::start`] to [`Watcher::stop`], so that the load's threads do
/// none of it: one for the processes and cgroups (reads of `/proc` take
/// microseconds), one per Prometheus endpoint (a slow one delays no
/// other).
#[derive(Debug)]
pub struct Watcher {
    stop: Arc<AtomicBool>,
    thread: std::thread::JoinHandle<Local>,
    scrapers: Vec<std::thread::JoinHandle<ScrapeSeries>>,
}

/// What the thread of the processes and cgroups returns: their series,
/// this machine's readings, and the CPU time it used.
type Local = (Vec<Series>, Vec<(Instant, State)>, Duration);

/// Everything watched over a run.
#[derive(Debug, Clone, Default)]
pub struct Watched {
    pub series: Vec<Series>,
    pub scrapes: Vec<ScrapeSeries>,
    /// This machine's own state at each tick (see [`crate::state`]).
    pub machine: Vec<(Instant, State)>,
    /// The CPU time the watching threads used: what watching cost this
    /// process (the load generator).
    pub cost: Duration,
}

/// Sleeps until `next`, or until stopped (the stopper unparks the
/// thread, so a stop is seen at once without waking in between); true
/// when stopped.
fn nap_until(next: Instant, stopped: &AtomicBool) -> bool {
    loop {
        if stopped.load(Ordering::Acquire) {
            return true;
        }
        let now = Instant::now();
        if now >= next {
            return false;
        }
        std::thread::park_timeout(next - now);
    }
}

impl Watcher {
    /// Checks every process and cgroup once (a process that does not
    /// exist, a directory that is no cgroup: `Err`, nothing started),
    /// then samples them every `interval` until stopped; each of `probes`
    /// (and each endpoint of `sources`) is read on a thread of its own.
    /// An endpoint is not checked: one that is down, slow or answers
    /// garbage is counted per reading and told at the end, and the run
    /// goes on.
    pub fn start(
        sources: Vec<Source>,
        mut probes: Vec<Box<dyn Probe>>,
        interval: Duration,
    ) -> Result<Watcher, WatchError> {
        let interval = interval.max(Duration::from_millis(10));
        let (urls, local): (Vec<Source>, Vec<Source>) = sources
            .into_iter()
            .partition(|s| matches!(s, Source::Prometheus(_)));
        for source in urls {
            let Source::Prometheus(url) = source else {
                unreachable!("partitioned")
            };
            probes.push(Box::new(scrape::Endpoint::new(url, interval)));
        }
        let (names, local): (Vec<Source>, Vec<Source>) = local
            .into_iter()
            .partition(|s| matches!(s, Source::Named { .. }));
        let names: Vec<(String, Option<u32>)> = names
            .into_iter()
            .filter_map(|s| match s {
                Source::Named { name, tree } => Some((name, tree)),
                _ => None,
            })
            .collect();
        let mut watching: Vec<(Source, Series)> = Vec::with_capacity(local.len());
        for source in local {
            // One read gives the first sample and the process's name.
            let (first, name, group) = match &source {
                Source::Pid(pid) => {
                    let s = sample(*pid)?;
                    (Reading::of(&s), format!("{} (pid {pid})", s.name), s.name)
                }
                Source::Cgroup(dir) => {
                    let path = dir.display().to_string();
                    (source.read()?, path.clone(), path)
                }
                Source::Prometheus(_) | Source::Named { .. } => unreachable!("partitioned out"),
            };
            watching.push((
                source,
                Series {
                    name,
                    group,
                    samples: vec![(Instant::now(), first)],
                    lost: None,
                    joined: false,
                    named: false,
                },
            ));
        }
        add_named(&names, &mut watching, None);
        let stop = Arc::new(AtomicBool::new(false));
        let stopped = Arc::clone(&stop);
        let mut machine = vec![(Instant::now(), state::read())];
        let thread = std::thread::Builder::new()
            .name("dyno-watch".into())
            .spawn(move || {
                let mut next = Instant::now() + interval;
                let mut before = Instant::now();
                loop {
                    let last = nap_until(next, &stopped);
                    machine.push((Instant::now(), state::read()));
                    for (source, series) in &mut watching {
                        if series.lost.is_some() {
                            continue;
                        }
                        match source.read() {
                            Ok(r) => series.samples.push((Instant::now(), r)),
                            Err(e) => series.lost = Some(e.to_string()),
                        }
                    }
                    add_named(&names, &mut watching, Some(before));
                    before = Instant::now();
                    if last {
                        let series = watching.into_iter().map(|(_, s)| s).collect();
                        return (series, machine, crate::thread_cpu_time());
                    }
                    next += interval;
                }
            })
            .expect("a thread starts");
        let scrapers = probes
            .into_iter()
            .map(|probe| {
                let stopped = Arc::clone(&stop);
                std::thread::Builder::new()
                    .name("dyno-scrape".into())
                    .spawn(move || read_until(probe, interval, &stopped))
                    .expect("a thread starts")
            })
            .collect();
        Ok(Watcher {
            stop,
            thread,
            scrapers,
        })
    }

    /// Takes a last sample and returns everything watched.
    pub fn stop(self) -> Watched {
        self.stop.store(true, Ordering::Release);
        self.thread.thread().unpark();
        for t in &self.scrapers {
            t.thread().unpark();
        }
        let (series, machine, mut cost) = self.thread.join().unwrap_or_default();
        let scrapes: Vec<ScrapeSeries> = self
            .scrapers
            .into_iter()
            .filter_map(|t| t.join().ok())
            .collect();
        cost += scrapes.iter().map(|s| s.cost).sum::<Duration>();
        Watched {
            series,
            scrapes,
            machine,
            cost,
        }
    }
}

/// How long one scrape may take: twice the interval, from half a second
/// to ten (a slow exporter delays the end of a run by at most this).
pub fn scrape_timeout(interval: Duration) -> Duration {
    (interval * 2).clamp(Duration::from_millis(500), Duration::from_secs(10))
}

/// Adds to `watching` the processes of `names` it does not have yet (one
/// that ended since it was named is passed over): at the start
/// (`started_before` is `None`) from their first sample; during the run
/// as started since the tick at `started_before`, when they had used
/// nothing.
fn add_named(
    names: &[(String, Option<u32>)],
    watching: &mut Vec<(Source, Series)>,
    started_before: Option<Instant>,
) {
    let proc = Root::new(Path::new("/"));
    for (name, tree) in names {
        for pid in pids_named(name) {
            let known = watching
                .iter()
                .any(|(s, _)| matches!(s, Source::Pid(p) if *p == pid));
            if known || tree.is_some_and(|root| !descends_from(proc, pid, root)) {
                continue;
            }
            let Ok(s) = sample(pid) else { continue };
            let mut samples = Vec::with_capacity(2);
            if let Some(before) = started_before {
                let none = Reading {
                    cpu: Duration::ZERO,
                    memory_bytes: None,
                    threads: None,
                    thread_cpu: Vec::new(),
                    counters: Counters {
                        switches: Some(0),
                        read_bytes: Some(0),
                        write_bytes: Some(0),
                        ..Counters::default()
                    },
                };
                samples.push((before, none));
            }
            samples.push((Instant::now(), Reading::of(&s)));
            watching.push((
                Source::Pid(pid),
                Series {
                    name: format!("{} (pid {pid})", s.name),
                    group: s.name.clone(),
                    samples,
                    lost: None,
                    joined: started_before.is_some(),
                    named: true,
                },
            ));
        }
    }
}

/// Reads `probe` at once and then every interval it asks for (a reading
/// that overruns skips the ticks it missed), and once more when stopped.
fn read_until(mut probe: Box<dyn Probe>, interval: Duration, stopped: &AtomicBool) -> ScrapeSeries {
    let interval = probe.interval(interval).max(Duration::from_millis(10));
    let mut series = ScrapeSeries {
        url: probe.url(),
        ..ScrapeSeries::default()
    };
    let mut next = Instant::now();
    loop {
        let last = nap_until(next, stopped);
        let reading = if last { probe.last() } else { probe.read() };
        match reading {
            Ok(s) => series.scrapes.push(s),
            Err(why) => *series.failures.entry(why).or_default() += 1,
        }
        if last {
            // Readings placed at the source's own times stay in order.
            series.scrapes.sort_by_key(|s| s.at);
            series.notes = probe.notes();
            series.cost = crate::thread_cpu_time();
            return series;
        }
        next += interval;
        let now = Instant::now();
        while next < now {
            next += interval;
        }
    }
}

/// What a source used over a window of the run.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Usage {
    /// CPU time used in the window (the cumulative counter read between
    /// the samples around each end, linearly).
    pub cpu: Duration,
    pub window: Duration,
    /// The most memory and threads any sample saw.
    pub max_memory_bytes: Option<u64>,
    pub max_threads: Option<u64>,
    /// The busiest thread between the first and the last sample inside
    /// the window; `None` without two samples inside it.
    pub busiest_thread: Option<BusyThread>,
    /// The other counters' growth between the first and the last sample
    /// inside the window, and how long apart those were (zero without
    /// two samples inside it).
    pub counters: Counters,
    pub counted: Duration,
    /// The CPU time used over that same span.
    pub counted_cpu: Duration,
}

/// A thread's use of the CPU over a window, in percent of the window.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BusyThread {
    pub tid: u32,
    /// On a CPU.
    pub cpu_percent: f64,
    /// Ready to run, and waiting for a CPU.
    pub waited_percent: f64,
}

impl BusyThread {
    /// A thread's shares of the window. The time it ran is counted in
    /// clock ticks (`stat`) and the time it waited in nanoseconds
    /// (`schedstat`), read a moment apart: their sum can pass 100%, which
    /// a thread cannot. Such a sum is scaled back to 100%, each share
    /// keeping its part.
    pub fn new(tid: u32, cpu_percent: f64, waited_percent: f64) -> BusyThread {
        let sum = cpu_percent + waited_percent;
        let scale = if sum > 100.0 { 100.0 / sum } else { 1.0 };
        BusyThread {
            tid,
            cpu_percent: cpu_percent * scale,
            waited_percent: waited_percent * scale,
        }
    }

    /// How much of a core it wanted: the time it ran or was ready to.
    pub fn demand(&self) -> f64 {
        self.cpu_percent + self.waited_percent
    }
}

impl Usage {
    /// CPU time over the window, in percent of one core.
    pub fn cpu_percent(&self) -> f64 {
        if self.window.is_zero() {
            0.0
        } else {
            100.0 * self.cpu.as_secs_f64() / self.window.as_secs_f64()
        }
    }
}

impl Series {
    /// The cumulative CPU time at `at`, read between the samples around
    /// it; `None` outside the samples.
    fn cpu_at(&self, at: Instant) -> Option<f64> {
        // A process that started during the run had used nothing before
        // it, and uses nothing more once it has ended.
        if self.joined {
            match (self.samples.first(), self.samples.last()) {
                (Some((first, _)), _) if at < *first => return Some(0.0),
                (_, Some((last, r))) if at > *last && self.lost.is_some() => {
                    return Some(r.cpu.as_secs_f64());
                }
                _ => {}
            }
        }
        let i = self.samples.iter().position(|(t, _)| *t >= at)?;
        let (t1, r1) = &self.samples[i];
        let t1 = *t1;
        if i == 0 {
            return (t1 == at).then_some(r1.cpu.as_secs_f64());
        }
        let (t0, r0) = &self.samples[i - 1];
        let t0 = *t0;
        let span = (t1 - t0).as_secs_f64();
        let part = if span > 0.0 {
            (at - t0).as_secs_f64() / span
        } else {
            1.0
        };
        Some(r0.cpu.as_secs_f64() + part * (r1.cpu.as_secs_f64() - r0.cpu.as_secs_f64()))
    }

    /// What it used from `from` to `to`, clipped to the samples it has
    /// (a process that exited is counted to its last sample); `None`
    /// without two samples in the window.
    pub fn usage(&self, from: Instant, to: Instant) -> Option<Usage> {
        let first = self.samples.first()?.0;
        let last = self.samples.last()?.0;
        let (from, to) = (from.max(first), to.min(last));
        if to <= from {
            return None;
        }
        let cpu = (self.cpu_at(to)? - self.cpu_at(from)?).max(0.0);
        let within = || self.samples.iter().filter(|(t, _)| *t >= from && *t <= to);
        let busiest_thread = match (within().next(), within().next_back()) {
            (Some((t0, r0)), Some((t1, r1))) if t1 > t0 => {
                let span = (*t1 - *t0).as_secs_f64();
                r1.thread_cpu
                    .iter()
                    .filter_map(|t| {
                        let i = r0.thread_cpu.binary_search_by_key(&t.tid, |t| t.tid).ok()?;
                        let was = r0.thread_cpu[i];
                        let share = |d: Duration| 100.0 * d.as_secs_f64() / span;
                        Some(BusyThread::new(
                            t.tid,
                            share(t.cpu.saturating_sub(was.cpu)),
                            share(t.waited.saturating_sub(was.waited)),
                        ))
                    })
                    .max_by(|a, b| a.demand().total_cmp(&b.demand()))
            }
            _ => None,
        };
        let (counters, counted, counted_cpu) = match (within().next(), within().next_back()) {
            (Some((t0, r0)), Some((t1, r1))) if t1 > t0 => {
                let mut counters = r1.counters.since(&r0.counters);
                // A process's threads come and go, so the sum over those
                // alive is no counter: its switches grew by each thread's
                // growth (a thread new since is counted whole).
                if counters.switches.is_some() && !r1.thread_cpu.is_empty() {
                    let grew = r1
                        .thread_cpu
                        .iter()
                        .map(
                            |t| match r0.thread_cpu.binary_search_by_key(&t.tid, |t| t.tid) {
                                Ok(i) => t.switches.saturating_sub(r0.thread_cpu[i].switches),
                                Err(_) => t.switches,
                            },
                        )
                        .sum();
                    counters.switches = Some(grew);
                }
                (counters, *t1 - *t0, r1.cpu.saturating_sub(r0.cpu))
            }
            _ => (Counters::default(), Duration::ZERO, Duration::ZERO),
        };
        Some(Usage {
            cpu: Duration::from_secs_f64(cpu),
            window: to - from,
            max_memory_bytes: within().filter_map(|(_, r)| r.memory_bytes).max(),
            max_threads: within().filter_map(|(_, r)| r.threads).max(),
            busiest_thread,
            counters,
            counted,
            counted_cpu,
        })
    }

    /// CPU use in percent of one core in each whole second from `from`
    /// (the run's per-second timeline), read between the samples; a
    /// second the samples do not cover is 0.
    pub fn cpu_per_second(&self, from: Instant, to: Instant) -> Vec<f64> {
        per_second(from, to, |a, b| {
            let (x, y) = (self.cpu_at(a)?, self.cpu_at(b)?);
            Some(100.0 * (y - x).max(0.0) / (b - a).as_secs_f64())
        })
    }
}

/// `f` over each second of `from..to`, as the run's per-second timeline
/// has them: whole seconds from `from`, and the part-second at the end if
/// there is one (`f` gets the clipped second); a second `f` cannot read is
/// 0.
pub fn per_second(
    from: Instant,
    to: Instant,
    f: impl Fn(Instant, Instant) -> Option<f64>,
) -> Vec<f64> {
    let span = to.saturating_duration_since(from);
    let secs = span.as_secs() + u64::from(span.subsec_nanos() > 0);
    (0..secs)
        .map(|i| {
            let a = from + Duration::from_secs(i);
            f(a, (a + Duration::from_secs(1)).min(to)).unwrap_or(0.0)
        })
        .collect()
}

/// Labels a metric with the source it describes; a segment's watch is its
/// own, so none merges.
fn labelled(mut m: Metric, source: &str) -> Metric {
    m.labels.insert(label::WATCHED.into(), source.to_owned());
    m.merged(Merge::None)
}

/// The CPU metrics of some CPU time over a window: in percent of one
/// core, and per operation (derived) when any ended.
fn cpu_metrics(cpu: Duration, window: Duration, operations: u64) -> Vec<Metric> {
    let percent = if window.is_zero() {
        0.0
    } else {
        100.0 * cpu.as_secs_f64() / window.as_secs_f64()
    };
    let mut out = vec![
        Metric::new(
            telemetry::SERVER_CPU_PERCENT,
            Unit::Percent,
            Direction::LowerIsBetter,
            percent,
        )
        .diagnostic(),
    ];
    if operations > 0 {
        out.push(
            Metric::new(
                telemetry::SERVER_CPU_PER_OP,
                Unit::Ns,
                Direction::LowerIsBetter,
                cpu.as_nanos() as f64 / operations as f64,
            )
            .derived_of(telemetry::SERVER_CPU_PERCENT),
        );
    }
    out
}

/// The counters' figures of a watched server over `counted` (the span
/// between its first and last samples in a window of `window`, in which
/// `operations` ended; `cpu` used over that span): the kernel's share of
/// its CPU, context switches and storage bytes per second (and switches
/// per operation, derived), and the share of the time a cgroup's CPU
/// limit held it back.
fn counter_metrics(
    counters: &Counters,
    counted: Duration,
    cpu: Duration,
    window: Duration,
    operations: u64,
) -> Vec<Metric> {
    let mut out = Vec::new();
    let secs = counted.as_secs_f64();
    if secs <= 0.0 {
        return out;
    }
    if !cpu.is_zero() {
        out.push(
            Metric::new(
                telemetry::SERVER_CPU_SYSTEM_PERCENT,
                Unit::Percent,
                Direction::LowerIsBetter,
                (100.0 * counters.system.as_secs_f64() / cpu.as_secs_f64()).min(100.0),
            )
            .context(),
        );
    }
    if let Some(n) = counters.switches {
        let per_sec = n as f64 / secs;
        out.push(
            Metric::new(
                telemetry::SERVER_CONTEXT_SWITCHES_PER_SEC,
                Unit::OpsPerSec,
                Direction::LowerIsBetter,
                per_sec,
            )
            .context(),
        );
        if operations > 0 {
            out.push(
                Metric::new(
                    telemetry::SERVER_CONTEXT_SWITCHES_PER_OP,
                    Unit::Count,
                    Direction::LowerIsBetter,
                    per_sec * window.as_secs_f64() / operations as f64,
                )
                .derived_of(telemetry::SERVER_CONTEXT_SWITCHES_PER_SEC),
            );
        }
    }
    for (bytes, name) in [
        (counters.read_bytes, telemetry::SERVER_READ_BYTES_PER_SEC),
        (
            counters.write_bytes,
            telemetry::SERVER_WRITTEN_BYTES_PER_SEC,
        ),
    ] {
        if let Some(b) = bytes {
            out.push(
                Metric::new(name, Unit::Bytes, Direction::LowerIsBetter, b as f64 / secs).context(),
            );
        }
    }
    if let Some(held) = counters.throttled {
        out.push(
            Metric::new(
                telemetry::SERVER_CPU_THROTTLED_PERCENT,
                Unit::Percent,
                Direction::LowerIsBetter,
                100.0 * held.as_secs_f64() / secs,
            )
            .diagnostic(),
        );
    }
    out
}

/// The metrics of what was watched over a run's measured window, from
/// `from` to `to`, in which `operations` requests (or transactions) ended.
///
/// Processes and cgroups are added up by what they are labelled with
/// (the processes of one name are one server): each one's CPU in percent
/// of one core, its CPU per operation (derived), its peak memory (the sum
/// of each process's peak) and its CPU in each second. With more than one
/// such source, their sum is there too, unlabelled, so that `compare`
/// sets two different servers side by side ("nginx spends … per request,
/// Apache …"). Each endpoint adds what its families say (see
/// [`ScrapeSeries::findings`]).
pub fn metrics(watched: &Watched, from: Instant, to: Instant, operations: u64) -> Vec<Metric> {
    let mut out = Vec::new();
    let mut groups: Vec<&str> = watched.series.iter().map(|s| s.group.as_str()).collect();
    groups.dedup();
    let mut seen = Vec::new();
    groups.retain(|g| {
        let new = !seen.contains(g);
        seen.push(g);
        new
    });
    let (mut total, mut window) = (Duration::ZERO, Duration::ZERO);
    for group in &groups {
        let members: Vec<(&Series, Usage)> = watched
            .series
            .iter()
            .filter(|s| s.group == *group)
            .filter_map(|s| Some((s, s.usage(from, to)?)))
            .collect();
        if members.is_empty() {
            continue;
        }
        let cpu: Duration = members.iter().map(|(_, u)| u.cpu).sum();
        let span = members
            .iter()
            .map(|(_, u)| u.window)
            .max()
            .unwrap_or_default();
        total += cpu;
        window = window.max(span);
        out.extend(
            cpu_metrics(cpu, span, operations)
                .into_iter()
                .map(|m| labelled(m, group)),
        );
        let memory: Option<u64> = members
            .iter()
            .map(|(_, u)| u.max_memory_bytes)
            .sum::<Option<u64>>();
        let counters = members
            .iter()
            .fold(Counters::default(), |a, (_, u)| a.plus(&u.counters));
        let counted = members
            .iter()
            .map(|(_, u)| u.counted)
            .max()
            .unwrap_or_default();
        let counted_cpu: Duration = members.iter().map(|(_, u)| u.counted_cpu).sum();
        out.extend(
            counter_metrics(&counters, counted, counted_cpu, span, operations)
                .into_iter()
                .map(|m| labelled(m, group)),
        );
        if let Some(bytes) = memory {
            out.push(labelled(
                Metric::new(
                    telemetry::SERVER_MEMORY_PEAK,
                    Unit::Bytes,
                    Direction::LowerIsBetter,
                    bytes as f64,
                )
                .context(),
                group,
            ));
        }
        let per_second = members
            .iter()
            .map(|(s, _)| s.cpu_per_second(from, to))
            .reduce(|a, b| a.iter().zip(&b).map(|(x, y)| x + y).collect())
            .unwrap_or_default();
        if !per_second.is_empty() {
            let mut m = Metric::new(
                telemetry::TIMELINE_SERVER_CPU_PERCENT,
                Unit::Percent,
                Direction::LowerIsBetter,
                per_second.iter().sum::<f64>() / per_second.len() as f64,
            )
            .context();
            m.samples = per_second;
            out.push(labelled(m, group));
        }
    }
    if groups.len() > 1 && !window.is_zero() {
        out.extend(
            cpu_metrics(total, window, operations)
                .into_iter()
                .map(|m| m.merged(Merge::None)),
        );
    }
    for scrapes in &watched.scrapes {
        out.extend(scrapes.findings(from, to, operations).metrics);
    }
    let watching = !watched.series.is_empty() || !watched.scrapes.is_empty();
    if watching && !watched.cost.is_zero() {
        out.push(
            Metric::new(
                telemetry::WATCH_CLIENT_CPU,
                Unit::Ns,
                Direction::LowerIsBetter,
                watched.cost.as_nanos() as f64,
            )
            .context()
            .merged(Merge::None),
        );
    }
    out
}

/// The CPU over one window (a capacity search's step): the watched
/// processes' and cgroups' added up, in percent of one core, and the first
/// watched machine's busy share, in percent of its cores; each `None` when
/// nothing of its kind was watched over the window.
pub fn window_cpu(watched: &Watched, from: Instant, to: Instant) -> (Option<f64>, Option<f64>) {
    let server = watched
        .series
        .iter()
        .filter_map(|s| s.usage(from, to))
        .map(|u| u.cpu_percent())
        .reduce(|a, b| a + b);
    let machine = watched.scrapes.iter().find_map(|s| {
        let (a, b) = s.covered(from, to)?;
        s.cpu_busy(a, b)
    });
    (server, machine)
}

/// The share of the time, in percent, that a cgroup's CPU limit must hold
/// it back for the verdict to name it.
pub const THROTTLED_PERCENT: f64 = 10.0;

/// The share of its cores at which a watched source counts as CPU-bound.
pub const SATURATED_SHARE: f64 = 0.9;

/// The verdict on what was watched, as one warning's code and line: each
/// process or cgroup that used at least [`SATURATED_SHARE`] of the cores
/// it could use (one per thread, at most `cpus`) was CPU-bound, and each
/// endpoint says what of its machine was saturated (CPU, a core, a disk,
/// a link, the listen queue); the code is the first finding's, and the
/// line names them all. When something was watched and nothing was
/// saturated, says so. `None` without a usable source.
pub fn verdict(
    watched: &Watched,
    from: Instant,
    to: Instant,
    cpus: usize,
) -> Option<(&'static str, String)> {
    let mut found: Vec<(&'static str, String)> = Vec::new();
    let mut any = false;
    for s in &watched.series {
        let Some(u) = s.usage(from, to) else {
            continue;
        };
        any = true;
        let cores = u
            .max_threads
            .map_or(cpus as u64, |t| t.min(cpus as u64))
            .max(1);
        if let Some(held) = u.counters.throttled.filter(|_| !u.counted.is_zero()) {
            let percent = 100.0 * held.as_secs_f64() / u.counted.as_secs_f64();
            if percent >= THROTTLED_PERCENT {
                found.push((
                    "server_cpu_throttled",
                    format!(
                        "the server was held back by its CPU limit: {}'s cpu.max throttled it {percent:.0}% of the time (it wanted more CPU than its quota; raise cpu.max, or count the quota as its cores)",
                        s.name
                    ),
                ));
            }
        }
        let share = u.cpu_percent() / 100.0 / cores as f64;
        let hot_thread = u
            .busiest_thread
            .filter(|t| t.demand() >= 100.0 * SATURATED_SHARE);
        if share < SATURATED_SHARE
            && let Some(t) = hot_thread
        {
            let waited = if t.waited_percent >= 1.0 {
                format!(
                    " and waited for a CPU {:.0}% of the time (others had it)",
                    t.waited_percent
                )
            } else {
                String::new()
            };
            found.push((
                "server_cpu_bound",
                format!(
                    "the server was CPU-bound on one thread: {}'s thread {} ran {:.0}% of the time{waited}, so it wanted a whole core, while the process used {:.0}% of its {cores} cores (a thread that does its part alone, an event loop or an acceptor, limits it)",
                    s.name,
                    t.tid,
                    t.cpu_percent.min(100.0),
                    u.cpu_percent() / cores as f64,
                ),
            ));
        } else if share >= SATURATED_SHARE {
            let of = if cores == 1 {
                "one core".to_owned()
            } else {
                format!("{cores} cores")
            };
            found.push((
                "server_cpu_bound",
                format!(
                    "the server was CPU-bound: {} used {:.0}% of {of}, all it can use{}",
                    s.name,
                    u.cpu_percent() / cores as f64,
                    if u.max_threads == Some(1) {
                        " (one thread)"
                    } else {
                        ""
                    }
                ),
            ));
        }
    }
    for scrapes in &watched.scrapes {
        let f = scrapes.findings(from, to, 0);
        any |= !f.metrics.is_empty();
        found.extend(f.saturated);
    }
    match found.first() {
        Some((code, _)) => Some((
            code,
            found
                .iter()
                .map(|(_, line)| line.as_str())
                .collect::<Vec<_>>()
                .join("; "),
        )),
        None if any => Some((
            "nothing_saturated",
            "nothing watched was saturated: no watched process or machine ran out of CPU, disk or link, so the limit was elsewhere (the client, the network between, or something not watched)".to_owned(),
        )),
        None => None,
    }
}

#[cfg(test)]
mod tests {
    use std::io::Write as _;
    use std::process::{Child, Command, Stdio};

    use super::*;

    /// A shell that counts to `n` (to burn CPU), says `counted`, and
    /// waits for a line on its standard input before it exits.
    fn counting_shell(n: u32) -> Child {
        let script =
            format!("i=0; while [ $i -lt {n} ]; do i=$((i+1)); done; echo counted; read x");
        Command::new("sh")
            .args(["-c", &script])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap()
    }

    /// The next line `child` writes to its standard output.
    fn line_from(child: &mut Child) -> String {
        let mut line = String::new();
        std::io::BufRead::read_line(
            &mut std::io::BufReader::new(child.stdout.as_mut().unwrap()),
            &mut line,
        )
        .unwrap();
        line
    }

    /// A fake `/proc` with one process: its stat line, one task's status,
    /// and (if given) its io counters.
    fn fake(stat: &str, io: Option<&str>) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        let proc = dir.path().join("proc/42");
        std::fs::create_dir_all(proc.join("task/42")).unwrap();
        std::fs::create_dir_all(proc.join("task/43")).unwrap();
        std::fs::write(proc.join("stat"), stat).unwrap();
        std::fs::write(proc.join("comm"), "my server\n").unwrap();
        for (task, v, n) in [("42", 10, 1), ("43", 5, 2)] {
            std::fs::write(
                proc.join(format!("task/{task}/status")),
                format!(
                    "Name:\tx\nvoluntary_ctxt_switches:\t{v}\nnonvoluntary_ctxt_switches:\t{n}\n"
                ),
            )
            .unwrap();
        }
        if let Some(io) = io {
            std::fs::write(proc.join("io"), io).unwrap();
        }
        dir
    }

    fn reading(cpu_ms: u64, threads: u64) -> Reading {
        Reading {
            cpu: Duration::from_millis(cpu_ms),
            memory_bytes: Some(cpu_ms * 1000),
            threads: Some(threads),
            thread_cpu: vec![ThreadCpu {
                tid: 1,
                cpu: Duration::from_millis(cpu_ms),
                waited: Duration::ZERO,
                switches: 0,
            }],
            counters: Counters::default(),
        }
    }

    #[test]
    fn usage_over_a_window_reads_between_the_samples_around_its_ends() {
        let t0 = Instant::now();
        let at = |ms| t0 + Duration::from_millis(ms);
        // One core's worth from 0 to 1 s, none from 1 s to 2 s.
        let s = Series {
            name: "x (pid 1)".into(),
            group: "x".into(),
            samples: vec![
                (at(0), reading(0, 1)),
                (at(1000), reading(1000, 1)),
                (at(2000), reading(1000, 2)),
            ],
            lost: None,
            joined: false,
            named: false,
        };
        let u = s.usage(at(500), at(1500)).unwrap();
        assert_eq!(u.window, Duration::from_millis(1000));
        assert!((u.cpu.as_secs_f64() - 0.5).abs() < 1e-9, "{u:?}");
        assert!((u.cpu_percent() - 50.0).abs() < 1e-6);
        assert_eq!(
            (u.max_memory_bytes, u.max_threads),
            (Some(1_000_000), Some(1))
        );
        // Clipped to the samples; nothing outside them.
        let all = s
            .usage(
                at(0).checked_sub(Duration::from_secs(1)).unwrap_or(at(0)),
                at(5000),
            )
            .unwrap();
        assert_eq!(all.cpu, Duration::from_secs(1));
        assert!(s.usage(at(3000), at(4000)).is_none());
        assert_eq!(s.cpu_per_second(at(0), at(2000)), [100.0, 0.0]);
        assert_eq!(s.cpu_per_second(at(500), at(2000)), [50.0, 0.0]);
        // (the last second is a half, at its own rate)
        // Metrics: labelled with the source's name, CPU per operation
        // derived.
        let watched = Watched {
            series: vec![s.clone()],
            ..Watched::default()
        };
        let m = metrics(&watched, at(0), at(1000), 500);
        let find = |n: &str| m.iter().find(|m| m.name == n).unwrap();
        assert!((find("server_cpu_percent").value - 100.0).abs() < 1e-6);
        assert!((find("server_cpu_per_op_ns").value - 2_000_000.0).abs() < 1.0);
        assert_eq!(find("server_cpu_percent").labels["watched"], "x");
        assert_eq!(
            find("server_cpu_per_op_ns").role,
            Some(dyno_model::Role::Derived)
        );
        // The verdict: a one-thread process at 100% of its core is the
        // limit; at 50% it is not.
        let (code, why) = verdict(&watched, at(0), at(1000), 8).unwrap();
        assert_eq!(code, "server_cpu_bound");
        assert!(why.contains("x (pid 1) used 100% of one core"), "{why}");
        let (code, _) = verdict(&watched, at(500), at(1500), 8).unwrap();
        assert_eq!(code, "nothing_saturated");
        assert!(verdict(&Watched::default(), at(0), at(1000), 8).is_none());
        // Two processes of one name are one server, labelled once; a
        // second server adds an unlabelled sum to compare servers by.
        let mut twin = s.clone();
        twin.name = "x (pid 2)".into();
        let mut other = s.clone();
        other.group = "y".into();
        let three = Watched {
            series: vec![s.clone(), twin, other],
            ..Watched::default()
        };
        let m = metrics(&three, at(0), at(1000), 500);
        let per_op: Vec<_> = m
            .iter()
            .filter(|m| m.name == "server_cpu_per_op_ns")
            .map(|m| (m.label("watched"), m.value.round()))
            .collect();
        assert_eq!(
            per_op,
            [
                (Some("x"), 4_000_000.0),
                (Some("y"), 2_000_000.0),
                (None, 6_000_000.0)
            ]
        );
    }

    #[test]
    fn one_hot_thread_of_a_process_with_cores_to_spare_is_its_limit() {
        let t0 = Instant::now();
        let at = |ms| t0 + Duration::from_millis(ms);
        // Four threads: thread 7 ran 60% of the second and waited 35% (a
        // neighbour had the core), so it wanted 95% of one; thread 8 ran
        // a tenth.
        let thread = |tid, ms, waited| ThreadCpu {
            tid,
            cpu: Duration::from_millis(ms),
            waited: Duration::from_millis(waited),
            switches: 0,
        };
        let reading = |t7: u64, w7: u64, t8: u64| Reading {
            cpu: Duration::from_millis(t7 + t8),
            memory_bytes: None,
            threads: Some(4),
            thread_cpu: vec![thread(7, t7, w7), thread(8, t8, 0)],
            counters: Counters::default(),
        };
        let s = Series {
            name: "loop (pid 5)".into(),
            group: "loop".into(),
            samples: vec![
                (at(0), reading(0, 0, 0)),
                (at(1000), reading(600, 350, 100)),
            ],
            lost: None,
            joined: false,
            named: false,
        };
        let u = s.usage(at(0), at(1000)).unwrap();
        let busy = u.busiest_thread.unwrap();
        assert_eq!(busy.tid, 7);
        assert!((busy.demand() - 95.0).abs() < 1e-6, "{busy:?}");
        let watched = Watched {
            series: vec![s],
            ..Watched::default()
        };
        let (code, why) = verdict(&watched, at(0), at(1000), 8).unwrap();
        assert_eq!(code, "server_cpu_bound");
        assert!(
            why.contains("loop (pid 5)'s thread 7 ran 60% of the time and waited for a CPU 35%"),
            "{why}"
        );
        // Ticks and nanoseconds read a moment apart can add up past a
        // whole core (newcomer L11: 33% + 71%); a thread's shares never do.
        let over = BusyThread::new(7, 33.0, 71.0);
        assert!((over.demand() - 100.0).abs() < 1e-9, "{over:?}");
        assert!((over.cpu_percent / over.waited_percent - 33.0 / 71.0).abs() < 1e-9);
        assert_eq!(BusyThread::new(7, 60.0, 35.0).demand(), 95.0);
    }

    #[test]
    fn an_exited_process_not_yet_reaped_is_gone() {
        let mut child = Command::new("true").spawn().unwrap();
        // Not waited for: it stays a zombie until reaped.
        let pid = child.id();
        let mut gone = false;
        for _ in 0..200 {
            if matches!(sample(pid), Err(WatchError::Gone(p)) if p == pid) {
                gone = true;
                break;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        assert!(gone, "a zombie read as a live process (peak memory 0 B)");
        child.wait().unwrap();
    }

    #[test]
    fn a_watcher_follows_a_real_process_and_agrees_with_proc() {
        // About a second of CPU.
        let mut child = counting_shell(1_000_000);
        let pid = child.id();
        let before = sample(pid).unwrap();
        let start = Instant::now();
        let watcher = Watcher::start(
            vec![Source::Pid(pid)],
            Vec::new(),
            Duration::from_millis(100),
        )
        .unwrap();
        // It has counted.
        assert_eq!(line_from(&mut child), "counted\n");
        // It waits now: give the watcher a few samples of the idle
        // process, so that its last one comes after the counting ended
        // (on a loaded machine a sample can come late).
        std::thread::sleep(Duration::from_millis(400));
        let after = sample(pid).unwrap();
        let end = Instant::now();
        child.stdin.take().unwrap().write_all(b"\n").unwrap();
        child.wait().unwrap();
        let series = watcher.stop().series;
        assert_eq!(series.len(), 1);
        let s = &series[0];
        assert_eq!(s.name, format!("sh (pid {pid})"));
        // It exited before the last sample: sampling stopped and says why.
        assert!(
            s.lost
                .as_deref()
                .is_some_and(|l| l.contains("does not exist")),
            "{s:?}"
        );
        assert!(s.samples.len() >= 2);
        // The CPU the watcher saw over the whole watch is what /proc said
        // before and after, to its 10 ms ticks.
        let u = s.usage(start, end).unwrap();
        let truth = after.cpu() - before.cpu();
        let diff = (u.cpu.as_secs_f64() - truth.as_secs_f64()).abs();
        assert!(
            diff <= 0.03 + 0.05 * truth.as_secs_f64(),
            "{u:?} against {truth:?}"
        );
        // Its one thread's CPU is the process's.
        assert_eq!(after.thread_cpu.len(), 1);
        assert!(
            after.thread_cpu[0].cpu.abs_diff(after.cpu()) <= Duration::from_millis(20),
            "{after:?}"
        );
        assert!(
            Watcher::start(vec![Source::Pid(pid)], Vec::new(), Duration::from_secs(1)).is_err()
        );
    }

    #[test]
    fn a_stat_line_with_a_name_of_spaces_and_parentheses_reads_whole() {
        let ticks = ticks_per_second();
        // utime 2 s and stime 1 s in ticks, 3 threads, 100 pages resident.
        let stat = format!(
            "42 (my (odd) server) S 1 42 42 0 -1 4194560 100 0 0 0 {} {} 0 0 20 0 3 0 1000 1000000 100 18446744073709551615",
            2 * ticks,
            ticks
        );
        let dir = fake(
            &stat,
            Some("rchar: 9\nread_bytes: 4096\nwrite_bytes: 8192\n"),
        );
        let s = sample_from(Root::new(dir.path()), 42).unwrap();
        assert_eq!(s.name, "my (odd) server");
        assert_eq!(
            (s.user, s.system),
            (Duration::from_secs(2), Duration::from_secs(1))
        );
        assert_eq!(s.cpu(), Duration::from_secs(3));
        assert_eq!(s.threads, 3);
        assert_eq!(s.rss_bytes, 100 * page_size());
        // Both threads' switches.
        assert_eq!((s.voluntary_switches, s.involuntary_switches), (15, 3));
        assert_eq!((s.read_bytes, s.write_bytes), (Some(4096), Some(8192)));
        // Another user's io counters are not shown: left unknown.
        let dir = fake(&stat, None);
        let s = sample_from(Root::new(dir.path()), 42).unwrap();
        assert_eq!((s.read_bytes, s.write_bytes), (None, None));
        assert_eq!(pids_named_from(Root::new(dir.path()), "my server"), [42]);
        assert!(pids_named_from(Root::new(dir.path()), "my").is_empty());
    }

    #[test]
    fn a_missing_or_garbled_process_says_which() {
        let dir = fake("42 (x) S 1 2", None);
        let e = sample_from(Root::new(dir.path()), 42).unwrap_err();
        assert!(
            matches!(&e, WatchError::Garbled { pid: 42, file: "stat", why } if why.contains("utime")),
            "{e}"
        );
        let e = sample_from(Root::new(dir.path()), 7).unwrap_err();
        assert_eq!(e, WatchError::Gone(7));
        assert!(e.to_string().contains("process 7 does not exist"));
        let dir = fake("garbage", None);
        assert!(matches!(
            sample_from(Root::new(dir.path()), 42),
            Err(WatchError::Garbled { .. })
        ));
    }

    #[test]
    fn a_real_busy_child_shows_the_cpu_it_burned_and_then_is_gone() {
        // A few hundred milliseconds of CPU.
        let mut child = counting_shell(300_000);
        let pid = child.id();
        assert_eq!(line_from(&mut child), "counted\n");
        let s = sample(pid).unwrap();
        assert_eq!(s.name, "sh");
        assert!(s.threads >= 1 && s.rss_bytes > 0, "{s:?}");
        assert!(s.cpu() >= Duration::from_millis(30), "{s:?}");
        assert!(s.voluntary_switches + s.involuntary_switches >= 1, "{s:?}");
        assert!(pids_named("sh").contains(&pid));
        child.stdin.take().unwrap().write_all(b"\n").unwrap();
        child.wait().unwrap();
        assert_eq!(sample(pid), Err(WatchError::Gone(pid)));
    }

    #[test]
    fn this_process_is_sampled_with_its_own_cpu_time() {
        let pid = std::process::id();
        let before = sample(pid).unwrap();
        // Spin until this thread has used 200 ms of CPU (by its own
        // clock, so a busy machine only makes it take longer).
        let start = crate::thread_cpu_time();
        let mut x = 0u64;
        while crate::thread_cpu_time() < start + Duration::from_millis(200) {
            x = std::hint::black_box(x.wrapping_add(1));
        }
        let after = sample(pid).unwrap();
        // The process's counters show it, to their 10 ms ticks.
        assert!(
            after.cpu() >= before.cpu() + Duration::from_millis(170),
            "{before:?} {after:?}"
        );
        assert!(after.threads >= 1);
    }

    #[test]
    fn a_cgroup_reads_its_cpu_and_memory_and_a_plain_directory_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("cpu.stat"),
            "usage_usec 3000000\nuser_usec 2000000\nsystem_usec 1000000\nnr_periods 10\nnr_throttled 4\nthrottled_usec 250000\n",
        )
        .unwrap();
        std::fs::write(dir.path().join("memory.current"), "1048576\n").unwrap();
        let s = sample_cgroup(dir.path()).unwrap();
        assert_eq!(
            (s.user, s.system),
            (Duration::from_secs(2), Duration::from_secs(1))
        );
        assert_eq!(
            (s.throttled_periods, s.throttled),
            (4, Duration::from_millis(250))
        );
        assert_eq!(s.memory_bytes, Some(1_048_576));
        let plain = tempfile::tempdir().unwrap();
        let e = sample_cgroup(plain.path()).unwrap_err();
        assert!(e.to_string().contains("not a cgroup directory"), "{e}");
        // A cgroup v1 cpu.stat alone (throttling, no CPU time) is no
        // cgroup to watch either: it would read as an idle server.
        std::fs::write(
            plain.path().join("cpu.stat"),
            "nr_periods 0\nnr_throttled 0\nthrottled_time 0\n",
        )
        .unwrap();
        assert!(sample_cgroup(plain.path()).is_err());
    }

    #[test]
    fn a_cgroup_v1_reads_its_cpu_from_the_cpuacct_hierarchy() {
        // The cpu and cpuacct controllers mounted apart, as on this
        // project's VM: the user names the cpu hierarchy's directory.
        let mounts = tempfile::tempdir().unwrap();
        let at = |c: &str| {
            let d = mounts.path().join(c).join("system.slice/nginx.service");
            std::fs::create_dir_all(&d).unwrap();
            d
        };
        let cpu = at("cpu");
        std::fs::write(
            cpu.join("cpu.stat"),
            "nr_periods 20\nnr_throttled 5\nthrottled_time 250000000\n",
        )
        .unwrap();
        let acct = at("cpuacct");
        std::fs::write(acct.join("cpuacct.usage"), "3000000000\n").unwrap();
        std::fs::write(acct.join("cpuacct.stat"), "user 200\nsystem 100\n").unwrap();
        std::fs::write(at("memory").join("memory.usage_in_bytes"), "4096\n").unwrap();
        for dir in [&cpu, &acct] {
            let s = sample_cgroup_under(dir, mounts.path()).unwrap();
            assert_eq!(
                (s.user, s.system),
                (Duration::from_secs(2), Duration::from_secs(1))
            );
            assert_eq!(
                (s.throttled_periods, s.throttled),
                (5, Duration::from_millis(250))
            );
            assert_eq!(s.memory_bytes, Some(4096));
        }
    }

    /// A fake `/proc` with the processes `(pid, parent, name)`.
    fn fake_procs(procs: &[(u32, u32, &str)]) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        for (pid, parent, name) in procs {
            let at = dir.path().join(format!("proc/{pid}"));
            std::fs::create_dir_all(at.join("fd")).unwrap();
            std::fs::write(at.join("comm"), format!("{name}\n")).unwrap();
            std::fs::write(
                at.join("stat"),
                format!("{pid} ({name}) S {parent} 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0\n"),
            )
            .unwrap();
        }
        dir
    }

    #[test]
    fn processes_of_one_name_group_into_the_trees_of_their_servers() {
        // Two clusters: postmaster 100 with backends 101 and 102 (and a
        // shell between 102 and its own child 103, still the cluster's),
        // postmaster 200 with backend 201; 300 is another name.
        let dir = fake_procs(&[
            (100, 1, "postgres"),
            (101, 100, "postgres"),
            (102, 100, "postgres"),
            (150, 102, "sh"),
            (103, 150, "postgres"),
            (200, 1, "postgres"),
            (201, 200, "postgres"),
            (300, 1, "nginx"),
        ]);
        let root = Root::new(dir.path());
        let trees = trees_named_from(root, "postgres");
        let roots: Vec<u32> = trees.iter().map(|t| t.root).collect();
        assert_eq!(roots, [100, 200], "{trees:?}");
        assert_eq!(trees[0].pids, [100, 101, 102, 103]);
        // What descends from a root, whatever lies between, is its own.
        assert!(descends_from(root, 103, 100));
        assert!(descends_from(root, 201, 200));
        assert!(!descends_from(root, 201, 100));
        assert_eq!(trees_named_from(root, "nginx").len(), 1);
        // A backend that ended between the listing and the reading of its
        // parent (its comm still there, its stat gone) is no second server.
        std::fs::remove_dir_all(dir.path().join("proc/200")).unwrap();
        std::fs::remove_file(dir.path().join("proc/201/stat")).unwrap();
        let trees = trees_named_from(root, "postgres");
        assert_eq!(trees.len(), 1, "{trees:?}");
        assert_eq!(trees[0].pids, [100, 101, 102, 103]);
    }

    #[test]
    fn the_process_that_listens_on_a_port_is_found_by_its_socket() {
        let dir = fake_procs(&[(10, 1, "nginx"), (11, 10, "nginx"), (20, 1, "other")]);
        let net = dir.path().join("proc/net");
        std::fs::create_dir_all(&net).unwrap();
        // Port 8080 (0x1F90) listening (0A) on inode 555; 9090 connected.
        std::fs::write(
            net.join("tcp"),
            "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n   0: 0100007F:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 555 1\n   1: 0100007F:2382 0100007F:D431 01 00000000:00000000 00:00000000 00000000     0        0 777 1\n",
        )
        .unwrap();
        std::fs::write(
            net.join("unix"),
            "Num       RefCount Protocol Flags    Type St Inode Path\n0000: 00000002 00000000 00010000 0001 01 888 /run/postgresql/.s.PGSQL.5432\n",
        )
        .unwrap();
        let link = |pid: u32, fd: u32, to: &str| {
            std::os::unix::fs::symlink(to, dir.path().join(format!("proc/{pid}/fd/{fd}"))).unwrap();
        };
        link(10, 6, "socket:[555]");
        link(11, 6, "socket:[555]");
        link(20, 3, "socket:[777]");
        link(20, 4, "socket:[888]");
        let root = Root::new(dir.path());
        assert_eq!(listening_on_from(root, 8080), [10, 11]);
        assert!(listening_on_from(root, 9090).is_empty());
        assert_eq!(listening_on_from(root, 5432), [20]);
    }

    #[test]
    fn a_process_of_the_name_that_starts_mid_run_is_watched_from_nothing() {
        // A shell under a name no other process has, started after the
        // watcher, spinning for a while and then gone.
        let dir = tempfile::tempdir().unwrap();
        let name = format!("dynojoin{}", std::process::id() % 10_000_000);
        let shell = dir.path().join(&name);
        std::fs::copy("/bin/sh", &shell).unwrap();
        let watcher = Watcher::start(
            vec![Source::Named {
                name: name.clone(),
                tree: None,
            }],
            Vec::new(),
            Duration::from_millis(50),
        )
        .unwrap();
        let t0 = Instant::now();
        std::thread::sleep(Duration::from_millis(120));
        let mut child = Command::new(&shell)
            .args(["-c", "while :; do :; done"])
            .spawn()
            .unwrap();
        std::thread::sleep(Duration::from_millis(600));
        child.kill().unwrap();
        child.wait().unwrap();
        std::thread::sleep(Duration::from_millis(150));
        let watched = watcher.stop();
        let series: Vec<&Series> = watched.series.iter().filter(|s| s.group == name).collect();
        assert_eq!(series.len(), 1, "{:?}", watched.series);
        let s = series[0];
        assert!(s.joined && s.lost.is_some());
        // Its CPU from before it started: all it used, and no more than
        // the time it ran.
        let used = s.usage(t0, Instant::now()).unwrap().cpu;
        assert!(
            used >= Duration::from_millis(150) && used <= Duration::from_millis(700),
            "{used:?}"
        );
    }

    #[test]
    fn the_counters_give_kernel_share_switches_bytes_and_a_throttled_cgroups_verdict() {
        let t0 = Instant::now();
        let at = |ms| t0 + Duration::from_millis(ms);
        let read = |cpu_ms: u64, system_ms: u64, switches: u64, held_ms: u64| Reading {
            cpu: Duration::from_millis(cpu_ms),
            memory_bytes: None,
            threads: None,
            thread_cpu: Vec::new(),
            counters: Counters {
                system: Duration::from_millis(system_ms),
                switches: Some(switches),
                read_bytes: Some(0),
                write_bytes: Some(switches * 4096),
                throttled: Some(Duration::from_millis(held_ms)),
            },
        };
        // Two seconds: 1.6 s of CPU, a quarter in the kernel, 2,000
        // switches, 8 MB written, held back 0.5 s by its quota.
        let s = Series {
            name: "/sys/fs/cgroup/app".into(),
            group: "/sys/fs/cgroup/app".into(),
            samples: vec![
                (at(0), read(0, 0, 0, 0)),
                (at(2000), read(1600, 400, 2000, 500)),
            ],
            lost: None,
            joined: false,
            named: false,
        };
        let watched = Watched {
            series: vec![s],
            ..Watched::default()
        };
        let m = metrics(&watched, at(0), at(2000), 400);
        let value = |name: &str| m.iter().find(|m| m.name == name).unwrap().value;
        assert_eq!(value("server_cpu_system_percent"), 25.0);
        assert_eq!(value("server_context_switches_per_sec"), 1000.0);
        assert_eq!(value("server_context_switches_per_op"), 5.0);
        assert_eq!(value("server_written_bytes_per_sec"), 4096.0 * 1000.0);
        assert_eq!(value("server_cpu_throttled_percent"), 25.0);
        let (code, why) = verdict(&watched, at(0), at(2000), 4).unwrap();
        assert_eq!(code, "server_cpu_throttled", "{why}");
        assert!(why.contains("throttled it 25%"), "{why}");
    }

    #[test]
    fn switches_grow_by_each_threads_growth_when_threads_end_between_samples() {
        let t0 = Instant::now();
        let at = |ms| t0 + Duration::from_millis(ms);
        let read = |threads: &[(u32, u64)]| Reading {
            cpu: Duration::ZERO,
            memory_bytes: None,
            threads: Some(threads.len() as u64),
            thread_cpu: threads
                .iter()
                .map(|&(tid, switches)| ThreadCpu {
                    tid,
                    switches,
                    ..ThreadCpu::default()
                })
                .collect(),
            counters: Counters {
                switches: Some(threads.iter().map(|t| t.1).sum()),
                ..Counters::default()
            },
        };
        // Thread 2 (500 switches) ended; thread 1 grew by 40; thread 3 is
        // new with 10. The live sum fell from 600 to 150.
        let s = Series {
            name: "x (pid 1)".into(),
            group: "x".into(),
            samples: vec![
                (at(0), read(&[(1, 100), (2, 500)])),
                (at(1000), read(&[(1, 140), (3, 10)])),
            ],
            lost: None,
            joined: false,
            named: false,
        };
        let u = s.usage(at(0), at(1000)).unwrap();
        assert_eq!(u.counters.switches, Some(50));
    }
}
