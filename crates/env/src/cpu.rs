//! The processor: model, counts, topology, caches and clock, from
//! `/proc/cpuinfo` and `/sys/devices/system/cpu`.
//!
//! Counts of physical cores and sockets come only from topology the kernel
//! reports; when it reports none (some VMs and containers), they stay `None`
//! rather than being guessed from the logical count.

use std::collections::BTreeSet;

use dyno_model::{Cache, Cpu, size::parse_size};

use crate::cpuinfo::CpuInfo;
use crate::root::{Root, numbered};

const CPU_DIR: &str = "sys/devices/system/cpu";

/// Reads everything about the processor. `cpuinfo` is the parsed
/// `/proc/cpuinfo`, if it could be read.
pub(crate) fn capture(root: Root<'_>, cpuinfo: Option<&CpuInfo>) -> Cpu {
    let (sockets, physical_cores) = topology(root)
        .or_else(|| counts(cpuinfo?.core_pairs()?))
        .unzip();
    let cpufreq = |file: &str| format!("{CPU_DIR}/cpu0/cpufreq/{file}");
    let khz_as_hz = |file: &str| {
        root.parse::<u64>(&cpufreq(file))
            .and_then(|khz| khz.checked_mul(1000))
            .filter(|&hz| hz > 0)
    };
    Cpu {
        model: cpuinfo.and_then(CpuInfo::model),
        vendor: cpuinfo.and_then(CpuInfo::vendor),
        sockets,
        physical_cores,
        logical_cores: cpuinfo
            .and_then(CpuInfo::processor_count)
            .or_else(|| cpu_list_len(&root.read(&format!("{CPU_DIR}/online"))?)),
        caches: caches(root),
        governor: root.read_value(&cpufreq("scaling_governor")),
        frequency_current_hz: khz_as_hz("scaling_cur_freq").or_else(|| cpuinfo?.first_mhz_as_hz()),
        frequency_max_hz: khz_as_hz("cpuinfo_max_freq"),
    }
}

fn count(n: usize) -> Option<u32> {
    u32::try_from(n).ok().filter(|&n| n > 0)
}

/// The number of sockets and of physical cores among distinct
/// (package, core) keys.
fn counts<P: Ord, C: Ord>(cores: BTreeSet<(P, C)>) -> Option<(u32, u32)> {
    let packages: BTreeSet<&P> = cores.iter().map(|(package, _)| package).collect();
    Some((count(packages.len())?, count(cores.len())?))
}

/// Sockets and physical cores from `cpuN/topology`, or `None` when no CPU
/// has readable topology. CPUs without it (offline ones) are skipped.
///
/// `core_id` is only unique within a package (and on some multi-die parts
/// within a die), so the die id, where there is one, is part of the core key.
fn topology(root: Root<'_>) -> Option<(u32, u32)> {
    let mut cores = BTreeSet::new();
    for name in root.list(CPU_DIR) {
        if numbered(&name, "cpu").is_none() {
            continue;
        }
        let file = |leaf: &str| format!("{CPU_DIR}/{name}/topology/{leaf}");
        // Some ARM kernels report -1 for an unknown package, hence i64.
        let (Some(package), Some(core)) = (
            root.parse::<i64>(&file("physical_package_id")),
            root.parse::<i64>(&file("core_id")),
        ) else {
            continue;
        };
        let die = root.parse::<i64>(&file("die_id"));
        cores.insert((package, (die, core)));
    }
    counts(cores)
}

/// The caches CPU 0 sees, in `index` order. An entry whose level, type or
/// size cannot be read is left out.
fn caches(root: Root<'_>) -> Vec<Cache> {
    let dir = format!("{CPU_DIR}/cpu0/cache");
    let mut indices: Vec<(u32, String)> = root
        .list(&dir)
        .into_iter()
        .filter_map(|name| Some((numbered(&name, "index")?, name)))
        .collect();
    indices.sort();
    indices
        .into_iter()
        .filter_map(|(_, name)| {
            let file = |leaf: &str| format!("{dir}/{name}/{leaf}");
            Some(Cache {
                level: root.parse(&file("level"))?,
                kind: root.read_value(&file("type"))?,
                size_bytes: parse_size(&root.read_value(&file("size"))?).ok()?,
                shared_by_cpus: cpu_list_len(&root.read(&file("shared_cpu_list"))?),
            })
        })
        .collect()
}

/// How many CPUs a kernel CPU list such as `0-3,8-11` or `0,2,4` names;
/// `None` when it is empty or malformed.
pub(crate) fn cpu_list_len(list: &str) -> Option<u32> {
    let list = list.trim();
    if list.is_empty() {
        return None;
    }
    let mut total: u32 = 0;
    for part in list.split(',') {
        let n = match part.split_once('-') {
            Some((first, last)) => {
                let first: u32 = first.trim().parse().ok()?;
                let last: u32 = last.trim().parse().ok()?;
                last.checked_sub(first)?.checked_add(1)?
            }
            None => {
                part.trim().parse::<u32>().ok()?;
                1
            }
        };
        total = total.checked_add(n)?;
    }
    Some(total)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cpuinfo::tests::X86_VM;
    use crate::tests::write;

    #[test]
    fn cpu_lists() {
        assert_eq!(cpu_list_len("0\n"), Some(1));
        assert_eq!(cpu_list_len("0-1\n"), Some(2));
        assert_eq!(cpu_list_len("0-3,8-11"), Some(8));
        assert_eq!(cpu_list_len("0-3,5"), Some(5));
        assert_eq!(cpu_list_len("0,2,4,6"), Some(4));
        assert_eq!(cpu_list_len(""), None);
        assert_eq!(cpu_list_len("3-1"), None);
        assert_eq!(cpu_list_len("0-x"), None);
        assert_eq!(cpu_list_len("all"), None);
    }

    /// A two-socket machine with two cores of two threads each per socket;
    /// core ids repeat across sockets, as they do on real hardware.
    #[test]
    fn topology_counts_cores_per_package() {
        let dir = tempfile::tempdir().unwrap();
        let topology = [
            (0, 0),
            (0, 0),
            (0, 1),
            (0, 1),
            (1, 0),
            (1, 0),
            (1, 1),
            (1, 1),
        ];
        for (cpu, (package, core)) in topology.iter().enumerate() {
            let base = format!("{CPU_DIR}/cpu{cpu}/topology");
            write(
                dir.path(),
                &format!("{base}/physical_package_id"),
                &format!("{package}\n"),
            );
            write(dir.path(), &format!("{base}/core_id"), &format!("{core}\n"));
        }
        // An offline CPU has no topology directory.
        std::fs::create_dir_all(dir.path().join(CPU_DIR).join("cpu8")).unwrap();
        write(dir.path(), &format!("{CPU_DIR}/cpufreq/policy0/x"), "");

        let cpu = capture(Root::new(dir.path()), None);
        assert_eq!(cpu.sockets, Some(2));
        assert_eq!(cpu.physical_cores, Some(4));
    }

    #[test]
    fn die_ids_keep_cores_of_different_dies_apart() {
        let dir = tempfile::tempdir().unwrap();
        for (cpu, die) in [(0, 0), (1, 1)] {
            let base = format!("{CPU_DIR}/cpu{cpu}/topology");
            write(dir.path(), &format!("{base}/physical_package_id"), "0\n");
            write(dir.path(), &format!("{base}/die_id"), &format!("{die}\n"));
            write(dir.path(), &format!("{base}/core_id"), "0\n");
        }
        let cpu = capture(Root::new(dir.path()), None);
        assert_eq!(cpu.sockets, Some(1));
        assert_eq!(cpu.physical_cores, Some(2));
    }

    #[test]
    fn cpuinfo_is_the_fallback_for_topology_and_frequency() {
        let dir = tempfile::tempdir().unwrap();
        let info = CpuInfo::parse(X86_VM);
        let cpu = capture(Root::new(dir.path()), Some(&info));
        assert_eq!(cpu.sockets, Some(1));
        assert_eq!(cpu.physical_cores, Some(2));
        assert_eq!(cpu.logical_cores, Some(2));
        assert_eq!(cpu.frequency_current_hz, Some(2_000_000_000));
        assert_eq!(cpu.frequency_max_hz, None);
        assert_eq!(cpu.governor, None);
        assert!(cpu.caches.is_empty());
    }

    #[test]
    fn online_list_is_the_fallback_for_logical_cores() {
        let dir = tempfile::tempdir().unwrap();
        write(dir.path(), &format!("{CPU_DIR}/online"), "0-3,5\n");
        let cpu = capture(Root::new(dir.path()), None);
        assert_eq!(cpu.logical_cores, Some(5));
        assert_eq!(cpu.physical_cores, None);
        assert_eq!(cpu.sockets, None);
    }

    #[test]
    fn caches_in_index_order_skipping_broken_entries() {
        let dir = tempfile::tempdir().unwrap();
        let entries = [
            ("index0", "1", "Data", "48K", "0"),
            ("index1", "1", "Instruction", "32K", "0"),
            ("index2", "2", "Unified", "2048K", "0-1"),
            ("index3", "3", "Unified", "105M", "0-3,8-11"),
            ("index10", "4", "Unified", "garbage", "0"),
        ];
        for (index, level, kind, size, shared) in entries {
            let base = format!("{CPU_DIR}/cpu0/cache/{index}");
            write(dir.path(), &format!("{base}/level"), &format!("{level}\n"));
            write(dir.path(), &format!("{base}/type"), &format!("{kind}\n"));
            write(dir.path(), &format!("{base}/size"), &format!("{size}\n"));
            write(
                dir.path(),
                &format!("{base}/shared_cpu_list"),
                &format!("{shared}\n"),
            );
        }
        write(dir.path(), &format!("{CPU_DIR}/cpu0/cache/uevent"), "");

        let caches = caches(Root::new(dir.path()));
        let expected = [
            (1, "Data", 48 << 10, 1),
            (1, "Instruction", 32 << 10, 1),
            (2, "Unified", 2048 << 10, 2),
            (3, "Unified", 105 << 20, 8),
        ]
        .map(|(level, kind, size_bytes, shared)| Cache {
            level,
            kind: kind.to_owned(),
            size_bytes,
            shared_by_cpus: Some(shared),
        });
        assert_eq!(caches, expected);
    }

    #[test]
    fn cpufreq_in_khz() {
        let dir = tempfile::tempdir().unwrap();
        let base = format!("{CPU_DIR}/cpu0/cpufreq");
        write(
            dir.path(),
            &format!("{base}/scaling_governor"),
            "schedutil\n",
        );
        write(dir.path(), &format!("{base}/scaling_cur_freq"), "1397000\n");
        write(dir.path(), &format!("{base}/cpuinfo_max_freq"), "4700000\n");
        let info = CpuInfo::parse(X86_VM);
        let cpu = capture(Root::new(dir.path()), Some(&info));
        assert_eq!(cpu.governor.as_deref(), Some("schedutil"));
        assert_eq!(cpu.frequency_current_hz, Some(1_397_000_000));
        assert_eq!(cpu.frequency_max_hz, Some(4_700_000_000));
    }
}
