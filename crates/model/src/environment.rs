//! Where a run ran: the machine, its limits and the dyno build.
//!
//! Every field is optional: `None` means "could not be read here" (common in
//! VMs and containers), never an error. Readers tolerate missing fields so
//! records from older builds still load.

use serde::{Deserialize, Serialize};

/// The machine a run ran on, as `dyno sysinfo` shows it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Environment {
    pub hostname: Option<String>,
    /// The OS release's pretty name (`Debian GNU/Linux 12 (bookworm)`).
    pub os: Option<String>,
    /// The kernel release (`uname -r`).
    pub kernel: Option<String>,
    /// The machine architecture (`x86_64`).
    pub arch: Option<String>,
    /// Hypervisor or container technology, `none` on bare metal.
    pub virtualization: Option<String>,
    pub cpu: Cpu,
    pub memory: Memory,
    pub limits: Limits,
    pub network: Network,
    /// The 1, 5 and 15 minute load averages when the run started.
    pub load_average: Option<[f64; 3]>,
    pub dyno: DynoBuild,
    /// Disk runs: the file system and device under the tested path.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub storage: Option<Storage>,
}

/// The processor.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Cpu {
    pub model: Option<String>,
    pub vendor: Option<String>,
    pub sockets: Option<u32>,
    pub physical_cores: Option<u32>,
    pub logical_cores: Option<u32>,
    pub caches: Vec<Cache>,
    /// The cpufreq scaling governor of CPU 0 (`performance`, `powersave`).
    pub governor: Option<String>,
    pub frequency_current_hz: Option<u64>,
    pub frequency_max_hz: Option<u64>,
}

/// One level of CPU cache as CPU 0 sees it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Cache {
    pub level: u8,
    /// `Data`, `Instruction` or `Unified`.
    pub kind: String,
    pub size_bytes: u64,
    /// How many logical CPUs share one instance of this cache.
    pub shared_by_cpus: Option<u32>,
}

/// Memory and swap.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Memory {
    pub total_bytes: Option<u64>,
    pub available_bytes: Option<u64>,
    pub swap_total_bytes: Option<u64>,
    pub swap_used_bytes: Option<u64>,
}

/// Per-process limits that cap a benchmark.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Limits {
    /// `RLIMIT_NOFILE`; `u64::MAX` means unlimited.
    pub open_files_soft: Option<u64>,
    pub open_files_hard: Option<u64>,
}

/// Kernel network settings that cap load tests.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Network {
    /// `net.core.somaxconn`: the largest listen backlog.
    pub somaxconn: Option<u32>,
    /// `net.ipv4.ip_local_port_range`: the first and last ephemeral port.
    pub ephemeral_ports: Option<[u16; 2]>,
    /// `net.ipv4.tcp_tw_reuse` (0 off, 1 on, 2 loopback only).
    pub tcp_tw_reuse: Option<u8>,
}

/// The dyno build that made the run.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct DynoBuild {
    pub version: Option<String>,
    pub git_revision: Option<String>,
}

/// The file system and device a disk run measured.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Storage {
    /// The path tested (a directory, file or device).
    pub path: Option<String>,
    /// The file system type (`ext4`, `xfs`, `tmpfs` …).
    pub filesystem: Option<String>,
    pub mount_point: Option<String>,
    /// The mount options (`rw,relatime,discard`).
    pub mount_options: Option<String>,
    /// What is mounted (`/dev/nvme0n1p2`).
    pub source: Option<String>,
    /// The whole block device under it (`nvme0n1`).
    pub device: Option<String>,
    /// The device's model as the kernel reports it.
    pub model: Option<String>,
    /// A spinning disk (true) or not (false), as the kernel believes.
    pub rotational: Option<bool>,
    /// The active I/O scheduler (`none`, `mq-deadline` …).
    pub scheduler: Option<String>,
    /// Whether the run's I/O bypassed the page cache (O_DIRECT).
    pub direct_io: Option<bool>,
}
