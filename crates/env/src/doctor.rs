//! The checklist behind `dyno doctor` and the preflight warnings: what on
//! this machine makes a benchmark measure the machine's own limits instead
//! of its target, with the value found, the value wanted, why it matters
//! and the commands that fix it now and across reboots.
//!
//! Each check reads only the [`Environment`] and the few [`Extras`] it
//! lacks; a value that could not be read makes the check "unknown", never
//! a failure. [`crate::preflight`] attaches the findings marked for it to
//! every run, so the warnings and `doctor` always agree.

use std::path::Path;

use dyno_model::size::BinarySize;
use dyno_model::{Environment, Warning};
use serde::Serialize;

use crate::root::Root;

/// The kind of benchmark a check matters for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    Http,
    Disk,
    Run,
    Db,
}

impl Kind {
    pub const ALL: [Kind; 4] = [Kind::Http, Kind::Disk, Kind::Run, Kind::Db];
}

/// What a check found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    /// As recommended.
    Ok,
    /// Skews the figures; the run is still valid, with care.
    Advice,
    /// A valid run of this kind is not possible until it is fixed.
    Blocks,
    /// The value could not be read.
    Unknown,
}

/// One check's result.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Finding {
    /// Stable name (`open_files`, `somaxconn` …), also the preflight
    /// warning's code.
    pub id: &'static str,
    pub title: &'static str,
    pub kinds: &'static [Kind],
    pub verdict: Verdict,
    pub found: String,
    pub recommended: String,
    pub why: &'static str,
    /// Commands that fix it until the next reboot (or for this shell).
    pub fix_now: Vec<String>,
    /// Commands that make the fix last across reboots.
    pub fix_always: Vec<String>,
    /// The runtime fix as files to write (`dyno doctor --fix`): what
    /// `fix_now` does, for the checks whose fix is a kernel setting.
    pub apply: Vec<Setting>,
    /// The preflight warning's text, for checks every run carries.
    #[serde(skip)]
    preflight: Option<String>,
}

impl Finding {
    fn new(id: &'static str, title: &'static str, kinds: &'static [Kind]) -> Finding {
        Finding {
            id,
            title,
            kinds,
            verdict: Verdict::Unknown,
            found: "unknown (not readable here)".into(),
            recommended: String::new(),
            why: "",
            fix_now: Vec::new(),
            fix_always: Vec::new(),
            apply: Vec::new(),
            preflight: None,
        }
    }

    /// A check made outside this crate (`dyno doctor db`'s checks of the
    /// server), already judged.
    #[allow(clippy::too_many_arguments)]
    pub fn judged_elsewhere(
        id: &'static str,
        title: &'static str,
        kinds: &'static [Kind],
        verdict: Verdict,
        found: String,
        recommended: String,
        why: &'static str,
        fix_now: Vec<String>,
    ) -> Finding {
        let mut f = Finding::new(id, title, kinds);
        f.recommended = recommended;
        f.why = why;
        f.fix_now = fix_now;
        f.judged(found, verdict)
    }

    /// Whether the check matters for `kind`.
    pub fn concerns(&self, kind: Kind) -> bool {
        self.kinds.contains(&kind)
    }

    fn judged(mut self, found: String, verdict: Verdict) -> Finding {
        self.found = found;
        self.verdict = verdict;
        if verdict == Verdict::Ok {
            self.fix_now.clear();
            self.fix_always.clear();
            self.apply.clear();
        }
        self
    }
}

/// A kernel setting as a file and the value to write into it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Setting {
    /// Relative to the root (`proc/sys/net/core/somaxconn`).
    pub path: String,
    pub value: String,
}

/// What the checks need beyond the [`Environment`] a run records.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Extras {
    /// `net.ipv4.tcp_max_syn_backlog`.
    pub tcp_max_syn_backlog: Option<u32>,
    /// `net.core.rmem_max` and `net.core.wmem_max`.
    pub rmem_max: Option<u64>,
    pub wmem_max: Option<u64>,
    /// Transparent huge pages: the selected mode (`always`, `madvise`,
    /// `never`).
    pub transparent_hugepages: Option<String>,
}

impl Extras {
    /// Read under `root` instead of `/`.
    pub fn from_root(root: &Path) -> Extras {
        let root = Root::new(root);
        Extras {
            tcp_max_syn_backlog: root.parse("proc/sys/net/ipv4/tcp_max_syn_backlog"),
            rmem_max: root.parse("proc/sys/net/core/rmem_max"),
            wmem_max: root.parse("proc/sys/net/core/wmem_max"),
            transparent_hugepages: root
                .read_value("sys/kernel/mm/transparent_hugepage/enabled")
                .and_then(|text| selected(&text)),
        }
    }

    /// This machine's.
    pub fn capture() -> Extras {
        Extras::from_root(Path::new("/"))
    }
}

/// The bracketed choice of a sysfs list: `always [madvise] never`.
fn selected(text: &str) -> Option<String> {
    let start = text.find('[')? + 1;
    let end = start + text[start..].find(']')?;
    Some(text[start..end].to_owned())
}

/// Open files a load test wants: tens of thousands of connections.
const OPEN_FILES_WANTED: u64 = 65_536;
/// Below this, a load test of a few thousand connections cannot run.
const OPEN_FILES_BLOCKS: u64 = 4_096;
const BACKLOG_WANTED: u32 = 4_096;
const BACKLOG_BLOCKS: u32 = 512;
const EPHEMERAL_WANTED: u32 = 28_000;
const EPHEMERAL_BLOCKS: u32 = 10_000;
/// The socket buffer ceilings (`rmem_max`, `wmem_max`) wanted: 16 MiB. For
/// TCP, a window of 16 MiB fills 1 Gb/s at 130 ms, or 10 Gb/s at 13 ms. For
/// QUIC it is past what is asked for on a UDP socket (`dyno serve --h3`
/// asks 8 MiB; quic-go asks 7 MiB and advises 7.5 MB ceilings), so QUIC
/// needs no more than TCP does.
const BUFFER_WANTED: u64 = 16 << 20;
/// The load, as a share of the logical cores, from which other work on the
/// machine is taken to compete with a benchmark.
const BUSY_LOAD_PER_CORE: f64 = 0.5;

const NET: &[Kind] = &[Kind::Http, Kind::Db];
const EVERY: &[Kind] = &[Kind::Http, Kind::Disk, Kind::Run, Kind::Db];

fn sysctl_fix(f: &mut Finding, key: &str, value: &str) {
    f.fix_now = vec![format!("sysctl -w {key}={value}")];
    f.apply = vec![Setting {
        path: format!("proc/sys/{}", key.replace('.', "/")),
        value: value.trim_matches('"').replace(' ', "\t"),
    }];
    f.fix_always = vec![format!(
        "echo '{key} = {value}' >> /etc/sysctl.d/90-dyno.conf && sysctl --system"
    )];
}

/// Every check, in a fixed order.
pub fn doctor(env: &Environment, extras: &Extras) -> Vec<Finding> {
    vec![
        open_files(env),
        somaxconn(env),
        syn_backlog(extras),
        ephemeral_ports(env),
        tw_reuse(env),
        socket_buffers(extras),
        governor(env),
        swap(env),
        hugepages(extras),
        load(env),
        virtualization(env),
    ]
}

fn open_files(env: &Environment) -> Finding {
    let mut f = Finding::new("open_files", "open-file limit", NET);
    f.recommended = format!("at least {OPEN_FILES_WANTED}");
    f.why = "every connection is a file; with the default 1,024 a load test of many connections fails to connect (\"very poor results\"), measuring the limit instead of the server";
    let target = env
        .limits
        .open_files_hard
        .map_or(OPEN_FILES_WANTED, |hard| {
            hard.clamp(OPEN_FILES_WANTED, 1 << 20)
        });
    f.fix_now = vec![format!(
        "ulimit -n {target}   # in the shell that runs dyno and the server"
    )];
    f.fix_always = vec![format!(
        "printf '* soft nofile {target}\\n* hard nofile {target}\\n' > /etc/security/limits.d/90-dyno.conf   # then log in again"
    )];
    let Some(soft) = env.limits.open_files_soft else {
        return f;
    };
    let verdict = if soft < OPEN_FILES_BLOCKS {
        Verdict::Blocks
    } else if soft < OPEN_FILES_WANTED {
        Verdict::Advice
    } else {
        Verdict::Ok
    };
    let found = if soft == u64::MAX {
        "unlimited".into()
    } else {
        soft.to_string()
    };
    f.judged(found, verdict)
}

/// File descriptors a database benchmark of `clients` connections needs
/// beyond its connections: the standard streams, the runtime's, the store.
const DB_FILES_SPARE: u64 = 64;

/// The open-file check judged for a database benchmark of `clients`
/// connections, which needs a file per connection, not the tens of
/// thousands an HTTP load test wants: it blocks only below what the
/// clients need, and is advice below the load-test level.
pub fn open_files_for_db(env: &Environment, clients: u32) -> Finding {
    let mut f = open_files(env);
    let need = u64::from(clients) + DB_FILES_SPARE;
    f.kinds = &[Kind::Db];
    f.recommended = format!("at least {need} for -c {clients} (a file per connection)");
    f.why = "every connection is a file; below what -c needs, clients fail to connect and the run measures the limit instead of the server";
    let Some(soft) = env.limits.open_files_soft else {
        return f;
    };
    let verdict = if soft < need {
        Verdict::Blocks
    } else {
        Verdict::Ok
    };
    let found = f.found.clone();
    f.judged(found, verdict)
}

fn somaxconn(env: &Environment) -> Finding {
    backlog(
        ("somaxconn", "listen queue (net.core.somaxconn)"),
        "net.core.somaxconn",
        "a server's accept queue is capped here; a burst of new connections beyond it is dropped and retried after a second, which shows as latency that is not the server's",
        env.network.somaxconn,
    )
}

/// The finding on the queue length `key` (found as `value`, when known):
/// [`BACKLOG_WANTED`] recommended, judged by [`backlog_verdict`].
fn backlog(
    (id, title): (&'static str, &'static str),
    key: &str,
    why: &'static str,
    value: Option<u32>,
) -> Finding {
    let mut f = Finding::new(id, title, NET);
    f.recommended = format!("at least {BACKLOG_WANTED}");
    f.why = why;
    sysctl_fix(&mut f, key, "65535");
    match value {
        None => f,
        Some(v) => f.judged(v.to_string(), backlog_verdict(v)),
    }
}

fn backlog_verdict(v: u32) -> Verdict {
    if v < BACKLOG_BLOCKS {
        Verdict::Blocks
    } else if v < BACKLOG_WANTED {
        Verdict::Advice
    } else {
        Verdict::Ok
    }
}

fn syn_backlog(extras: &Extras) -> Finding {
    backlog(
        (
            "tcp_max_syn_backlog",
            "half-open connection queue (net.ipv4.tcp_max_syn_backlog)",
        ),
        "net.ipv4.tcp_max_syn_backlog",
        "connections still in their handshake wait here; when it is full, SYNs are dropped and the client retries a second later",
        extras.tcp_max_syn_backlog,
    )
}

fn ephemeral_ports(env: &Environment) -> Finding {
    let mut f = Finding::new(
        "ephemeral_ports",
        "local port range (net.ipv4.ip_local_port_range)",
        NET,
    );
    f.recommended = format!("at least {EPHEMERAL_WANTED} ports (1024 65535 gives 64,512)");
    f.why = "every client connection takes a local port, held for a minute in TIME_WAIT after it closes; a short range runs out in tests that open many connections (--no-keepalive)";
    sysctl_fix(&mut f, "net.ipv4.ip_local_port_range", "\"1024 65535\"");
    let Some([low, high]) = env.network.ephemeral_ports else {
        return f;
    };
    let n = u32::from(high) - u32::from(low) + 1;
    let verdict = if n < EPHEMERAL_BLOCKS {
        Verdict::Blocks
    } else if n < EPHEMERAL_WANTED {
        Verdict::Advice
    } else {
        Verdict::Ok
    };
    f.judged(format!("{low}-{high} ({n} ports)"), verdict)
}

fn tw_reuse(env: &Environment) -> Finding {
    let mut f = Finding::new(
        "tcp_tw_reuse",
        "TIME_WAIT reuse (net.ipv4.tcp_tw_reuse)",
        &[Kind::Http],
    );
    f.recommended = "1 (2, loopback only, suits tests on one machine)".into();
    f.why = "without it a client that opens a connection per request waits for ports in TIME_WAIT to free up once the range is used";
    sysctl_fix(&mut f, "net.ipv4.tcp_tw_reuse", "1");
    match env.network.tcp_tw_reuse {
        None => f,
        Some(0) => f.judged("0 (off)".into(), Verdict::Advice),
        Some(v) => f.judged(v.to_string(), Verdict::Ok),
    }
}

fn socket_buffers(extras: &Extras) -> Finding {
    let mut f = Finding::new(
        "socket_buffers",
        "socket buffer ceilings (net.core.rmem_max, wmem_max)",
        &[Kind::Http],
    );
    f.recommended = format!("at least {}", BinarySize(BUFFER_WANTED));
    f.why = "TCP cannot grow a connection's window past these: large bodies over a link with any delay are capped by the buffer, not the server. \
             QUIC (dyno serve --h3, HTTP/3 clients) needs them too: it runs over UDP, where a datagram that finds the socket's receive buffer full is dropped and taken for congestion; \
             the kernel's default buffer (rmem_default, about 208 KiB) holds about a hundred full-size packets, and a QUIC socket's request for more (8 MiB by dyno serve --h3) is cut down to these ceilings";
    let value = BUFFER_WANTED.to_string();
    f.fix_now = vec![
        format!("sysctl -w net.core.rmem_max={value}"),
        format!("sysctl -w net.core.wmem_max={value}"),
    ];
    f.apply = ["rmem_max", "wmem_max"]
        .map(|name| Setting {
            path: format!("proc/sys/net/core/{name}"),
            value: value.clone(),
        })
        .to_vec();
    f.fix_always = vec![format!(
        "printf 'net.core.rmem_max = {value}\\nnet.core.wmem_max = {value}\\n' >> /etc/sysctl.d/90-dyno.conf && sysctl --system"
    )];
    let (Some(r), Some(w)) = (extras.rmem_max, extras.wmem_max) else {
        return f;
    };
    let verdict = if r.min(w) < BUFFER_WANTED {
        Verdict::Advice
    } else {
        Verdict::Ok
    };
    f.judged(format!("{} / {}", BinarySize(r), BinarySize(w)), verdict)
}

fn governor(env: &Environment) -> Finding {
    let mut f = Finding::new("cpu_governor", "CPU frequency governor", EVERY);
    f.recommended = "performance".into();
    f.why = "other governors change the clock with the load, so the same work takes different times from run to run";
    f.fix_now = vec!["cpupower frequency-set -g performance".into()];
    f.fix_always = vec![
        "echo 'GOVERNOR=\"performance\"' > /etc/default/cpufrequtils   # Debian's cpufrequtils applies it at boot".into(),
    ];
    let Some(governor) = env.cpu.governor.as_deref() else {
        return f;
    };
    if governor == "performance" {
        return f.judged(governor.into(), Verdict::Ok);
    }
    f.preflight = Some(format!(
        "CPU frequency scaling governor is '{governor}'; results may vary with clock \
         speed; for stable figures: cpupower frequency-set -g performance"
    ));
    f.judged(governor.into(), Verdict::Advice)
}

fn swap(env: &Environment) -> Finding {
    let mut f = Finding::new("swap_in_use", "swap in use", EVERY);
    f.recommended = "none in use".into();
    f.why = "a page read back from swap stalls whatever touches it: the benchmark, its target or the server";
    f.fix_now =
        vec!["swapoff -a && swapon -a   # needs free memory for what is swapped out".into()];
    f.fix_always =
        vec!["echo 'vm.swappiness = 1' >> /etc/sysctl.d/90-dyno.conf && sysctl --system".into()];
    let Some(used) = env.memory.swap_used_bytes else {
        return f;
    };
    if used == 0 {
        return f.judged("0".into(), Verdict::Ok);
    }
    f.preflight = Some(format!(
        "{} of swap is in use; paging can stall the benchmark and its target; free \
         memory (or run swapoff -a) before measuring",
        BinarySize(used)
    ));
    f.judged(BinarySize(used).to_string(), Verdict::Advice)
}

fn hugepages(extras: &Extras) -> Finding {
    let mut f = Finding::new(
        "transparent_hugepages",
        "transparent huge pages",
        &[Kind::Db, Kind::Run],
    );
    f.recommended = "madvise or never".into();
    f.why = "with 'always' the kernel compacts memory to make huge pages at moments of its choosing: databases (PostgreSQL's own advice) and allocation-heavy commands see stalls";
    f.fix_now = vec!["echo madvise > /sys/kernel/mm/transparent_hugepage/enabled".into()];
    f.apply = vec![Setting {
        path: "sys/kernel/mm/transparent_hugepage/enabled".into(),
        value: "madvise".into(),
    }];
    f.fix_always = vec![
        "add transparent_hugepage=madvise to GRUB_CMDLINE_LINUX in /etc/default/grub, then update-grub".into(),
    ];
    match extras.transparent_hugepages.as_deref() {
        None => f,
        Some("always") => f.judged("always".into(), Verdict::Advice),
        Some(mode) => f.judged(mode.into(), Verdict::Ok),
    }
}

fn load(env: &Environment) -> Finding {
    let mut f = Finding::new("machine_busy", "other load on the machine", EVERY);
    f.recommended = format!(
        "a 1-minute load average under {:.0}% of the logical cores",
        BUSY_LOAD_PER_CORE * 100.0
    );
    f.why = "other work takes CPU time, caches and memory bandwidth from the benchmark, and changes while it runs";
    f.fix_now = vec!["stop other work, or wait until `uptime` shows the machine idle".into()];
    let (Some([load1, _, _]), Some(cores)) = (env.load_average, env.cpu.logical_cores) else {
        return f;
    };
    let found = format!("{load1:.2} on {cores} logical cores");
    if load1 < BUSY_LOAD_PER_CORE * f64::from(cores) {
        return f.judged(found, Verdict::Ok);
    }
    f.preflight = Some(format!(
        "1-minute load average is {load1:.2} on {cores} logical cores: other load on \
         the machine competes with the benchmark; stop other work or wait until the \
         machine is idle"
    ));
    f.judged(found, Verdict::Advice)
}

fn virtualization(env: &Environment) -> Finding {
    let mut f = Finding::new("virtualized", "virtualization", EVERY);
    f.recommended = "bare metal, or compare only with runs on the same kind of host".into();
    f.why = "a virtual machine or container shares its host: neighbours, CPU steal and virtual devices move the figures";
    let Some(kind) = env.virtualization.as_deref() else {
        return f;
    };
    if kind == "none" {
        return f.judged("none (bare metal)".into(), Verdict::Ok);
    }
    f.preflight = Some(format!(
        "running under virtualization ({kind}); results depend on the host and on \
         neighbouring workloads, so compare them with runs on the same kind of host"
    ));
    f.judged(kind.into(), Verdict::Advice)
}

/// The findings every run carries as warnings, in the checklist's order.
pub(crate) fn preflight_warnings(env: &Environment) -> Vec<Warning> {
    doctor(env, &Extras::default())
        .into_iter()
        .filter_map(|f| {
            f.preflight.map(|message| Warning {
                code: f.id.to_owned(),
                message,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use dyno_model::{Limits, Network};

    use super::*;
    use crate::tests::{write, write_network};

    fn verdict(findings: &[Finding], id: &str) -> Verdict {
        findings.iter().find(|f| f.id == id).unwrap().verdict
    }

    /// Writes what the checklist reads beyond [`Network`]: the SYN
    /// backlog, the receive buffers' limit and the transparent hugepages
    /// setting (`thp`, as sysfs shows the choice).
    fn write_kernel(root: &Path, syn_backlog: u32, rmem_max: u64, thp: &str) {
        write(
            root,
            "proc/sys/net/ipv4/tcp_max_syn_backlog",
            &format!("{syn_backlog}\n"),
        );
        write(root, "proc/sys/net/core/rmem_max", &format!("{rmem_max}\n"));
        write(
            root,
            "sys/kernel/mm/transparent_hugepage/enabled",
            &format!("{thp}\n"),
        );
    }

    /// A machine set up as the checklist wants.
    fn tuned(root: &Path) -> (Environment, Extras) {
        write_network(root, 65535, (1024, 65535), 1);
        write_kernel(root, 65535, 16_777_216, "always [madvise] never");
        write(root, "proc/sys/net/core/wmem_max", "16777216\n");
        let mut env = crate::capture_from(root, Default::default());
        env.limits = Limits {
            open_files_soft: Some(1 << 20),
            open_files_hard: Some(1 << 20),
        };
        env.cpu.governor = Some("performance".into());
        env.cpu.logical_cores = Some(8);
        env.load_average = Some([0.1, 0.1, 0.1]);
        env.memory.swap_used_bytes = Some(0);
        env.virtualization = Some("none".into());
        (env, Extras::from_root(root))
    }

    #[test]
    fn a_tuned_machine_passes_every_check() {
        let dir = tempfile::tempdir().unwrap();
        let (env, extras) = tuned(dir.path());
        let findings = doctor(&env, &extras);
        for f in &findings {
            assert_eq!(f.verdict, Verdict::Ok, "{f:?}");
            assert!(f.fix_now.is_empty() && f.fix_always.is_empty(), "{f:?}");
        }
        assert!(preflight_warnings(&env).is_empty());
    }

    #[test]
    fn bad_values_say_why_and_how_to_fix_them() {
        let dir = tempfile::tempdir().unwrap();
        let (mut env, _) = tuned(dir.path());
        let root = dir.path();
        write_network(root, 128, (50000, 55000), 0);
        write_kernel(root, 1024, 212_992, "[always] madvise never");
        env.network = crate::capture_from(root, Default::default()).network;
        env.limits.open_files_soft = Some(1024);
        env.limits.open_files_hard = Some(524_288);
        let findings = doctor(&env, &Extras::from_root(root));
        assert_eq!(verdict(&findings, "open_files"), Verdict::Blocks);
        assert_eq!(verdict(&findings, "somaxconn"), Verdict::Blocks);
        assert_eq!(verdict(&findings, "ephemeral_ports"), Verdict::Blocks);
        assert_eq!(verdict(&findings, "tcp_tw_reuse"), Verdict::Advice);
        assert_eq!(verdict(&findings, "tcp_max_syn_backlog"), Verdict::Advice);
        assert_eq!(verdict(&findings, "socket_buffers"), Verdict::Advice);
        let buffers = findings.iter().find(|f| f.id == "socket_buffers").unwrap();
        assert!(buffers.why.contains("QUIC"), "{}", buffers.why);
        assert_eq!(
            buffers.fix_now,
            [
                "sysctl -w net.core.rmem_max=16777216",
                "sysctl -w net.core.wmem_max=16777216"
            ]
        );
        assert_eq!(verdict(&findings, "transparent_hugepages"), Verdict::Advice);
        let files = findings.iter().find(|f| f.id == "open_files").unwrap();
        assert_eq!(files.found, "1024");
        assert_eq!(
            files.fix_now,
            ["ulimit -n 524288   # in the shell that runs dyno and the server"]
        );
        assert!(files.fix_always[0].contains("/etc/security/limits.d/"));
        let somax = findings.iter().find(|f| f.id == "somaxconn").unwrap();
        assert_eq!(somax.fix_now, ["sysctl -w net.core.somaxconn=65535"]);
        assert!(somax.fix_always[0].contains("/etc/sysctl.d/"));
        let ports = findings.iter().find(|f| f.id == "ephemeral_ports").unwrap();
        assert_eq!(ports.found, "50000-55000 (5001 ports)");
    }

    #[test]
    fn what_cannot_be_read_is_unknown_never_a_failure() {
        let dir = tempfile::tempdir().unwrap();
        // An empty tree, and garbage where numbers belong.
        write(dir.path(), "proc/sys/net/core/somaxconn", "lots\n");
        let env = Environment::default();
        let findings = doctor(&env, &Extras::from_root(dir.path()));
        assert_eq!(findings.len(), 11);
        for f in &findings {
            assert_eq!(f.verdict, Verdict::Unknown, "{f:?}");
            assert!(f.found.starts_with("unknown"), "{f:?}");
        }
        assert_eq!(
            Network::default(),
            crate::capture_from(dir.path(), Default::default()).network
        );
    }

    #[test]
    fn sysfs_choices() {
        assert_eq!(selected("always [madvise] never"), Some("madvise".into()));
        assert_eq!(selected("[never]\n"), Some("never".into()));
        assert_eq!(selected("madvise"), None);
    }

    #[test]
    fn a_low_open_file_limit_blocks_a_db_benchmark_only_below_what_its_clients_need() {
        let dir = tempfile::tempdir().unwrap();
        let (mut env, _) = tuned(dir.path());
        env.limits.open_files_soft = Some(512);
        env.limits.open_files_hard = Some(512);
        let f = open_files_for_db(&env, 10);
        assert_eq!(f.verdict, Verdict::Ok, "{f:?}");
        assert_eq!(f.kinds, &[Kind::Db]);
        let f = open_files_for_db(&env, 500);
        assert_eq!(f.verdict, Verdict::Blocks, "{f:?}");
        assert!(f.recommended.contains("-c 500"), "{}", f.recommended);
        assert!(!f.fix_now.is_empty());
    }
}
