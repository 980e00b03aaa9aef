//! Environment capture: the machine, its limits and the preflight checks.
//!
//! [`capture`] records where a run ran as a [`dyno_model::Environment`],
//! reading Linux's `/proc`, `/sys` and `/etc/os-release` and asking the
//! kernel for this process's open-file limit. It never fails: whatever cannot
//! be read (common in VMs and containers) stays `None`. [`capture_from`] reads
//! the same files under another root so tests can use a fake tree.
//! [`preflight()`] then turns what skews results into warnings for the run.
//!
//! Data flow: binary → `capture` → `Run::environment` → `preflight` →
//! `Run::warnings`. Nothing here prints.

mod cpu;
mod cpuinfo;
pub mod doctor;
mod limits;
mod memory;
mod network;
mod postgres;
mod preflight;
mod root;
pub mod scrape;
pub mod sources;
pub mod state;
mod storage;
mod system;
mod virt;
pub mod watch;

use std::path::Path;

use dyno_model::{DynoBuild, Environment};

pub use preflight::{code, preflight};

use crate::cpuinfo::CpuInfo;
use crate::root::Root;

/// Captures this machine and process: everything [`capture_from`] reads
/// under `/`, plus the architecture this binary was built for and the
/// process's `RLIMIT_NOFILE`.
pub fn capture(build: DynoBuild) -> Environment {
    Environment {
        arch: Some(std::env::consts::ARCH.to_owned()),
        limits: limits::capture(),
        ..capture_from(Path::new("/"), build)
    }
}

/// Whether this process runs as root (effective user 0): what changing
/// kernel settings needs.
pub fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() == 0 }
}

/// The CPUs this process may run on (its affinity mask and cgroup quota,
/// as the standard library reads them); 1 where that cannot be read.
/// The memory this machine has free now (`MemAvailable`), if it says.
pub fn available_memory() -> Option<u64> {
    memory::capture(root::Root::new(Path::new("/"))).available_bytes
}

pub fn available_cpus() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// How long the calling thread has waited, runnable, for a CPU so far
/// (the second field of `/proc/thread-self/schedstat`, the scheduler's
/// run-queue delay); `None` where the kernel does not keep it. A load
/// thread that waits this long for a CPU is starved by other work on the
/// machine, whatever its own CPU time says: the two added are how much of
/// a CPU it wanted.
pub fn thread_cpu_wait() -> Option<std::time::Duration> {
    let text = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    let waited: u64 = text.split_whitespace().nth(1)?.parse().ok()?;
    Some(std::time::Duration::from_nanos(waited))
}

/// CPU time (user + system) the calling thread has used so far; zero where
/// the kernel will not say. Engines read it around their worker threads,
/// so a server in the same process (the built-in target) is not counted.
pub fn thread_cpu_time() -> std::time::Duration {
    // SAFETY: getrusage only writes the struct we hand it.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    if unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut usage) } != 0 {
        return std::time::Duration::ZERO;
    }
    let tv = |t: libc::timeval| {
        std::time::Duration::from_secs(t.tv_sec as u64)
            + std::time::Duration::from_micros(t.tv_usec as u64)
    };
    tv(usage.ru_utime) + tv(usage.ru_stime)
}

/// The file system and device under `path` (a directory, file or block
/// device; a path that does not exist yet is looked up through its
/// parent), for the environment of disk runs.
pub fn storage(path: &Path) -> dyno_model::Storage {
    storage::capture(Root::new(Path::new("/")), path)
}

/// Captures the machine whose file system is mounted at `root`: the fields
/// that come from files (`proc/…`, `sys/…`, `etc/os-release`, …) relative to
/// `root`. `arch` and `limits` describe the running process, not the tree,
/// and stay `None`; `dyno` is `build` as given.
///
/// Physical cores and sockets come only from topology the kernel reports
/// (`sys/devices/system/cpu/cpuN/topology`, else `physical id`/`core id` in
/// `proc/cpuinfo`); without it they stay `None` rather than being guessed.
///
/// # Virtualization
///
/// `virtualization` is decided from files alone (no `systemd-detect-virt`
/// child process). The rules, first match wins:
///
/// 1. Containers, since a container inside a VM matters more to a benchmark
///    than the VM around it:
///    - `/.dockerenv` exists: `docker`;
///    - `/run/.containerenv` exists: `podman`;
///    - `/proc/1/environ` holds `container=NAME` (systemd-nspawn, LXC,
///      podman; readable only by root): `NAME`;
///    - `/proc/1/cgroup` mentions `kubepods`: `kubernetes`, else `docker`:
///      `docker`, else `lxc`: `lxc`.
/// 2. WSL: the kernel release mentions `microsoft`: `wsl`.
/// 3. Xen guests that expose `/sys/hypervisor/type`: its content (`xen`).
/// 4. Virtual machines, from the x86 `hypervisor` CPU flag in
///    `/proc/cpuinfo` and the firmware's `/sys/class/dmi/id/sys_vendor` and
///    `product_name`:
///    - a vendor or product that only virtual machines report (QEMU, KVM,
///      VMware, VirtualBox, Xen, Hyper-V, Google Compute Engine, Parallels,
///      Bochs, bhyve) names the hypervisor even without the flag (ARM guests
///      have no such flag);
///    - with the flag, clouds that also rent bare metal are named too
///      (`amazon`), and an unrecognised vendor gives `vm`.
/// 5. `none` when `/proc/cpuinfo` has x86 `flags` and nothing above matched.
/// 6. Otherwise unknown (`None`): without the flag line there is no evidence
///    either way.
pub fn capture_from(root: &Path, build: DynoBuild) -> Environment {
    let root = Root::new(root);
    let cpuinfo = root.read("proc/cpuinfo").map(|text| CpuInfo::parse(&text));
    Environment {
        hostname: system::hostname(root),
        os: system::os(root),
        kernel: system::kernel(root),
        arch: None,
        virtualization: virt::detect(root, cpuinfo.as_ref()),
        cpu: cpu::capture(root, cpuinfo.as_ref()),
        memory: memory::capture(root),
        limits: Default::default(),
        network: network::capture(root),
        load_average: system::load_average(root),
        dyno: build,
        storage: None,
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use dyno_model::{Cache, Cpu, Limits, Memory, Network};

    use super::*;

    /// Writes `text` to `root/relative`, creating folders on the way.
    pub(crate) fn write(root: &Path, relative: &str, text: &str) {
        let path = root.join(relative);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }

    /// Writes the network sysctls [`Network`] is read from: the listen
    /// backlog, the local port range and `tcp_tw_reuse`.
    pub(crate) fn write_network(root: &Path, somaxconn: u32, ports: (u16, u16), tw_reuse: u8) {
        let (first, last) = ports;
        write(
            root,
            "proc/sys/net/core/somaxconn",
            &format!("{somaxconn}\n"),
        );
        write(
            root,
            "proc/sys/net/ipv4/ip_local_port_range",
            &format!("{first}\t{last}\n"),
        );
        write(
            root,
            "proc/sys/net/ipv4/tcp_tw_reuse",
            &format!("{tw_reuse}\n"),
        );
    }

    const CPUINFO_PROCESSOR: &str = "\
processor\t: {n}
vendor_id\t: AuthenticAMD
cpu family\t: 25
model\t\t: 33
model name\t: AMD Ryzen 7 5800X 8-Core Processor
stepping\t: 0
cpu MHz\t\t: 3800.000
cache size\t: 512 KB
physical id\t: 0
siblings\t: 4
core id\t\t: {core}
cpu cores\t: 2
flags\t\t: fpu vme de pse tsc msr pae mce cx8 apic sep avx2 sha_ni
bogomips\t: 7600.00
power management: ts ttp tm hwpstate

";

    const MEMINFO: &str = "\
MemTotal:       32768000 kB
MemFree:        20000000 kB
MemAvailable:   30000000 kB
Buffers:          100000 kB
SwapTotal:       8388604 kB
SwapFree:        8388604 kB
";

    /// A one-socket desktop with two cores of two threads each, as its
    /// files would read.
    fn full_tree(root: &Path) {
        write(root, "proc/sys/kernel/hostname", "bench-01\n");
        write(root, "proc/sys/kernel/osrelease", "6.1.0-18-amd64\n");
        write(
            root,
            "etc/os-release",
            "PRETTY_NAME=\"Debian GNU/Linux 12 (bookworm)\"\nNAME=\"Debian GNU/Linux\"\nID=debian\n",
        );
        let cpuinfo: String = [(0, 0), (1, 1), (2, 0), (3, 1)]
            .iter()
            .map(|(n, core)| {
                CPUINFO_PROCESSOR
                    .replace("{n}", &n.to_string())
                    .replace("{core}", &core.to_string())
            })
            .collect();
        write(root, "proc/cpuinfo", &cpuinfo);
        write(root, "sys/devices/system/cpu/online", "0-3\n");
        for (cpu, core) in [(0, 0), (1, 1), (2, 0), (3, 1)] {
            let base = format!("sys/devices/system/cpu/cpu{cpu}/topology");
            write(root, &format!("{base}/physical_package_id"), "0\n");
            write(root, &format!("{base}/die_id"), "0\n");
            write(root, &format!("{base}/core_id"), &format!("{core}\n"));
        }
        let caches = [
            (0, "1", "Data", "32K", "0,2"),
            (1, "1", "Instruction", "32K", "0,2"),
            (2, "2", "Unified", "512K", "0,2"),
            (3, "3", "Unified", "32768K", "0-3"),
        ];
        for (index, level, kind, size, shared) in caches {
            let base = format!("sys/devices/system/cpu/cpu0/cache/index{index}");
            write(root, &format!("{base}/level"), &format!("{level}\n"));
            write(root, &format!("{base}/type"), &format!("{kind}\n"));
            write(root, &format!("{base}/size"), &format!("{size}\n"));
            write(
                root,
                &format!("{base}/shared_cpu_list"),
                &format!("{shared}\n"),
            );
        }
        let cpufreq = "sys/devices/system/cpu/cpu0/cpufreq";
        write(
            root,
            &format!("{cpufreq}/scaling_governor"),
            "performance\n",
        );
        write(root, &format!("{cpufreq}/scaling_cur_freq"), "4650000\n");
        write(root, &format!("{cpufreq}/cpuinfo_max_freq"), "4850000\n");
        write(
            root,
            "sys/class/dmi/id/sys_vendor",
            "Micro-Star International Co., Ltd.\n",
        );
        write(root, "sys/class/dmi/id/product_name", "MS-7C84\n");
        write(root, "proc/meminfo", MEMINFO);
        write_network(root, 4096, (32768, 60999), 2);
        write(root, "proc/loadavg", "0.52 0.58 0.59 1/1097 123456\n");
        write(root, "proc/1/cgroup", "0::/init.scope\n");
    }

    fn build() -> DynoBuild {
        DynoBuild {
            version: Some("0.1.0".to_owned()),
            git_revision: Some("9e58bcd".to_owned()),
        }
    }

    fn cache(level: u8, kind: &str, size_bytes: u64, shared: u32) -> Cache {
        Cache {
            level,
            kind: kind.to_owned(),
            size_bytes,
            shared_by_cpus: Some(shared),
        }
    }

    #[test]
    fn full_tree_gives_exact_values() {
        let dir = tempfile::tempdir().unwrap();
        full_tree(dir.path());
        let env = capture_from(dir.path(), build());
        let expected = Environment {
            hostname: Some("bench-01".to_owned()),
            os: Some("Debian GNU/Linux 12 (bookworm)".to_owned()),
            kernel: Some("6.1.0-18-amd64".to_owned()),
            arch: None,
            virtualization: Some("none".to_owned()),
            cpu: Cpu {
                model: Some("AMD Ryzen 7 5800X 8-Core Processor".to_owned()),
                vendor: Some("AuthenticAMD".to_owned()),
                sockets: Some(1),
                physical_cores: Some(2),
                logical_cores: Some(4),
                caches: vec![
                    cache(1, "Data", 32 << 10, 2),
                    cache(1, "Instruction", 32 << 10, 2),
                    cache(2, "Unified", 512 << 10, 2),
                    cache(3, "Unified", 32 << 20, 4),
                ],
                governor: Some("performance".to_owned()),
                frequency_current_hz: Some(4_650_000_000),
                frequency_max_hz: Some(4_850_000_000),
            },
            memory: Memory {
                total_bytes: Some(32_768_000 * 1024),
                available_bytes: Some(30_000_000 * 1024),
                swap_total_bytes: Some(8_388_604 * 1024),
                swap_used_bytes: Some(0),
            },
            limits: Limits::default(),
            network: Network {
                somaxconn: Some(4096),
                ephemeral_ports: Some([32768, 60999]),
                tcp_tw_reuse: Some(2),
            },
            load_average: Some([0.52, 0.58, 0.59]),
            dyno: build(),
            storage: None,
        };
        assert_eq!(env, expected);
        // An idle bare-metal machine on `performance`: nothing to warn about.
        assert_eq!(preflight(&env), Vec::new());
    }

    #[test]
    fn empty_root_knows_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let env = capture_from(dir.path(), DynoBuild::default());
        assert_eq!(env, Environment::default());
        // A root that does not exist at all behaves the same.
        let missing = dir.path().join("no/such/root");
        assert_eq!(
            capture_from(&missing, DynoBuild::default()),
            Environment::default()
        );
    }

    /// A VM without cpufreq or topology, with garbage in meminfo and a
    /// non-numeric somaxconn: only those fields are lost.
    #[test]
    fn malformed_files_lose_only_their_fields() {
        let dir = tempfile::tempdir().unwrap();
        full_tree(dir.path());
        let root = dir.path();
        std::fs::remove_dir_all(root.join("sys/devices/system/cpu/cpu0/cpufreq")).unwrap();
        for cpu in 0..4 {
            std::fs::remove_dir_all(root.join(format!("sys/devices/system/cpu/cpu{cpu}/topology")))
                .unwrap();
        }
        // Like many VMs' cpuinfo: no physical id / core id lines.
        let cpuinfo = std::fs::read_to_string(root.join("proc/cpuinfo")).unwrap();
        let cpuinfo: String = cpuinfo
            .lines()
            .filter(|line| !line.starts_with("physical id") && !line.starts_with("core id"))
            .map(|line| format!("{line}\n"))
            .collect();
        write(root, "proc/cpuinfo", &cpuinfo);
        write(
            root,
            "proc/meminfo",
            "MemTotal: \u{fffd}\u{fffd} kB\nthis is not meminfo\n",
        );
        write(root, "proc/sys/net/core/somaxconn", "lots\n");

        let env = capture_from(root, build());

        assert_eq!(env.cpu.physical_cores, None);
        assert_eq!(env.cpu.sockets, None);
        assert_eq!(env.cpu.governor, None);
        assert_eq!(env.cpu.frequency_max_hz, None);
        assert_eq!(env.memory, Memory::default());
        assert_eq!(env.network.somaxconn, None);
        // Everything else is still there; the current clock falls back to
        // cpuinfo's `cpu MHz`.
        assert_eq!(env.cpu.frequency_current_hz, Some(3_800_000_000));
        assert_eq!(env.cpu.logical_cores, Some(4));
        assert_eq!(env.cpu.caches.len(), 4);
        assert_eq!(
            env.cpu.model.as_deref(),
            Some("AMD Ryzen 7 5800X 8-Core Processor")
        );
        assert_eq!(env.hostname.as_deref(), Some("bench-01"));
        assert_eq!(env.network.ephemeral_ports, Some([32768, 60999]));
        assert_eq!(env.network.tcp_tw_reuse, Some(2));
        assert_eq!(env.load_average, Some([0.52, 0.58, 0.59]));
        assert_eq!(env.virtualization.as_deref(), Some("none"));
    }

    #[test]
    fn binary_garbage_does_not_panic() {
        let dir = tempfile::tempdir().unwrap();
        let garbage = [0xff, 0xfe, 0x00, b':', 0x80, b'\n', b'-', b','];
        for file in [
            "proc/cpuinfo",
            "proc/meminfo",
            "proc/loadavg",
            "proc/sys/kernel/hostname",
            "proc/1/environ",
            "proc/1/cgroup",
            "sys/devices/system/cpu/online",
            "sys/devices/system/cpu/cpu0/cache/index0/size",
            "sys/devices/system/cpu/cpu0/topology/core_id",
            "etc/os-release",
        ] {
            let path = dir.path().join(file);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, garbage).unwrap();
        }
        let env = capture_from(dir.path(), DynoBuild::default());
        assert_eq!(env, Environment::default());
    }

    /// The real machine running the tests (Linux).
    #[cfg(target_os = "linux")]
    #[test]
    fn captures_this_machine() {
        let env = capture(build());
        assert_eq!(
            env.hostname,
            Some(read_trimmed("/proc/sys/kernel/hostname"))
        );
        assert_eq!(env.kernel, Some(read_trimmed("/proc/sys/kernel/osrelease")));
        assert_eq!(env.arch.as_deref(), Some(std::env::consts::ARCH));
        let online = read_trimmed("/sys/devices/system/cpu/online");
        assert_eq!(env.cpu.logical_cores, cpu::cpu_list_len(&online));
        assert_eq!(env.memory.total_bytes, Some(sysinfo_total_ram()));
        let soft = env.limits.open_files_soft.unwrap();
        let hard = env.limits.open_files_hard.unwrap();
        assert!(0 < soft && soft <= hard);
        assert_eq!(env.dyno, build());
    }

    /// Total RAM as `sysinfo(2)` reports it: the same figure as `MemTotal`,
    /// from a different interface.
    // `totalram` is a `c_ulong`: `u64` here, `u32` on 32-bit targets.
    #[cfg(target_os = "linux")]
    #[allow(clippy::useless_conversion)]
    fn sysinfo_total_ram() -> u64 {
        // SAFETY: `sysinfo` is plain old data; all zeroes is a valid value.
        let mut info: libc::sysinfo = unsafe { std::mem::zeroed() };
        // SAFETY: `sysinfo` only writes to the struct we pass.
        assert_eq!(unsafe { libc::sysinfo(&mut info) }, 0);
        u64::from(info.totalram) * u64::from(info.mem_unit)
    }

    #[cfg(target_os = "linux")]
    fn read_trimmed(path: &str) -> String {
        std::fs::read_to_string(path).unwrap().trim().to_owned()
    }
}
