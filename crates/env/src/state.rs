//! This machine's own state while a run goes on, where the kernel shows
//! it: the load average, each core's clock frequency and the times the
//! cores were throttled for heat. A figure that cannot be read here (no
//! `cpufreq` in a VM, no `thermal_throttle` off Intel) is left out, never
//! guessed.

use std::path::Path;
use std::time::Instant;

use dyno_model::names::telemetry;
use dyno_model::{Direction, Merge, Metric, Unit};

use crate::root::Root;

/// One reading of this machine.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct State {
    /// The 1-minute load average.
    pub load: Option<f64>,
    /// Each core's current frequency, in MHz: `cpufreq/scaling_cur_freq`,
    /// else `/proc/cpuinfo`'s `cpu MHz`.
    pub mhz: Vec<f64>,
    /// Thermal throttling events so far, all cores and packages (Intel's
    /// `thermal_throttle` counters).
    pub throttles: Option<u64>,
}

/// Reads this machine now.
pub fn read() -> State {
    read_from(Root::new(Path::new("/")))
}

pub(crate) fn read_from(root: Root<'_>) -> State {
    let load = root
        .read("proc/loadavg")
        .and_then(|l| l.split_whitespace().next()?.parse().ok());
    let cores = std::fs::read_dir(root.path("sys/devices/system/cpu"))
        .map(|dir| {
            let mut cores: Vec<String> = dir
                .flatten()
                .filter_map(|e| e.file_name().to_str().map(str::to_owned))
                .filter(|n| {
                    n.strip_prefix("cpu")
                        .is_some_and(|d| !d.is_empty() && d.bytes().all(|b| b.is_ascii_digit()))
                })
                .collect();
            cores.sort_by_key(|n| n[3..].parse::<u32>().unwrap_or(0));
            cores
        })
        .unwrap_or_default();
    let mut mhz: Vec<f64> = cores
        .iter()
        .filter_map(|c| {
            root.parse::<f64>(&format!(
                "sys/devices/system/cpu/{c}/cpufreq/scaling_cur_freq"
            ))
            .map(|khz| khz / 1000.0)
        })
        .collect();
    if mhz.is_empty() {
        mhz = root
            .read("proc/cpuinfo")
            .map(|text| {
                text.lines()
                    .filter(|l| l.starts_with("cpu MHz"))
                    .filter_map(|l| l.split(':').nth(1)?.trim().parse().ok())
                    .collect()
            })
            .unwrap_or_default();
    }
    let mut throttles = None;
    for c in &cores {
        for counter in ["core_throttle_count", "package_throttle_count"] {
            if let Some(n) = root.parse::<u64>(&format!(
                "sys/devices/system/cpu/{c}/thermal_throttle/{counter}"
            )) {
                *throttles.get_or_insert(0) += n;
            }
        }
    }
    State {
        load,
        mhz,
        throttles,
    }
}

/// What this machine's readings over a window say: the highest load, the
/// lowest and highest core frequency, the throttling events; as context
/// metrics (labelled nothing: they describe the client's machine) and a
/// warning when the cores were throttled.
pub fn metrics(
    readings: &[(Instant, State)],
    from: Instant,
    to: Instant,
) -> (Vec<Metric>, Option<String>) {
    // The readings around the window (for the counters), and those in it
    // with them (a window shorter than a tick has none inside).
    let before = readings
        .iter()
        .rev()
        .find(|(t, _)| *t <= from)
        .map(|(_, s)| s);
    let after = readings.iter().find(|(t, _)| *t >= to).map(|(_, s)| s);
    let within: Vec<&State> = before
        .into_iter()
        .chain(
            readings
                .iter()
                .filter(|(t, _)| *t > from && *t < to)
                .map(|(_, s)| s),
        )
        .chain(after)
        .collect();
    let mut out = Vec::new();
    let context = |name: &str, unit, value| {
        Metric::new(name, unit, Direction::LowerIsBetter, value)
            .context()
            .merged(Merge::None)
    };
    if let Some(load) = within.iter().filter_map(|s| s.load).reduce(f64::max) {
        out.push(context(telemetry::MACHINE_LOAD_MAX, Unit::Count, load));
    }
    let all_mhz = || within.iter().flat_map(|s| s.mhz.iter().copied());
    if let (Some(lo), Some(hi)) = (all_mhz().reduce(f64::min), all_mhz().reduce(f64::max)) {
        out.push(context(telemetry::MACHINE_CPU_MHZ_MIN, Unit::Mhz, lo));
        out.push(context(telemetry::MACHINE_CPU_MHZ_MAX, Unit::Mhz, hi));
    }
    let mut warning = None;
    if let (Some(a), Some(b)) = (
        before.and_then(|s| s.throttles),
        after.and_then(|s| s.throttles),
    ) {
        let events = b.saturating_sub(a);
        out.push(context(
            telemetry::MACHINE_THROTTLE_EVENTS,
            Unit::Count,
            events as f64,
        ));
        if events > 0 {
            warning = Some(format!(
                "this machine's cores were throttled for heat {events} times during the run: its clock dropped, so the figures may be lower than the hardware gives; cool it, or compare only runs made alike"
            ));
        }
    }
    (out, warning)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(root: &Path, rel: &str, text: &str) {
        let p = root.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }

    #[test]
    fn frequencies_and_throttles_are_read_where_the_kernel_shows_them() {
        let dir = tempfile::tempdir().unwrap();
        let r = dir.path();
        write(r, "proc/loadavg", "1.50 0.5 0.2 1/100 42\n");
        for (core, khz, throttled) in [("cpu0", "3400000", "2"), ("cpu1", "1200000", "5")] {
            write(
                r,
                &format!("sys/devices/system/cpu/{core}/cpufreq/scaling_cur_freq"),
                khz,
            );
            write(
                r,
                &format!("sys/devices/system/cpu/{core}/thermal_throttle/core_throttle_count"),
                throttled,
            );
        }
        std::fs::create_dir_all(r.join("sys/devices/system/cpu/cpufreq")).unwrap();
        let s = read_from(Root::new(r));
        assert_eq!(s.load, Some(1.5));
        assert_eq!(s.mhz, [3400.0, 1200.0]);
        assert_eq!(s.throttles, Some(7));
        // Without cpufreq (a VM): /proc/cpuinfo's figure; no throttle
        // counters: none, not zero.
        let vm = tempfile::tempdir().unwrap();
        write(
            vm.path(),
            "proc/cpuinfo",
            "processor\t: 0\ncpu MHz\t\t: 2445.408\n\nprocessor\t: 1\ncpu MHz\t\t: 2445.408\n",
        );
        std::fs::create_dir_all(vm.path().join("sys/devices/system/cpu/cpu0")).unwrap();
        let s = read_from(Root::new(vm.path()));
        assert_eq!(s.mhz, [2445.408, 2445.408]);
        assert_eq!((s.load, s.throttles), (None, None));
    }

    #[test]
    fn throttling_during_the_window_is_counted_and_warned_of() {
        let t0 = Instant::now();
        let at = |ms| t0 + std::time::Duration::from_millis(ms);
        let state = |load, mhz: f64, throttles| State {
            load: Some(load),
            mhz: vec![mhz, mhz - 100.0],
            throttles: Some(throttles),
        };
        let readings = [
            (at(0), state(0.5, 3000.0, 10)),
            (at(1000), state(2.0, 2000.0, 12)),
            (at(2000), state(1.0, 2500.0, 13)),
        ];
        let (m, warning) = metrics(&readings, at(0), at(2000));
        let get = |n: &str| m.iter().find(|m| m.name == n).unwrap().value;
        assert_eq!(get("machine_load_max"), 2.0);
        assert_eq!(get("machine_cpu_mhz_min"), 1900.0);
        assert_eq!(get("machine_cpu_mhz_max"), 3000.0);
        assert_eq!(get("machine_throttle_events"), 3.0);
        assert!(warning.unwrap().contains("throttled for heat 3 times"));
        let calm = [
            (at(0), state(0.5, 3000.0, 10)),
            (at(1000), state(0.5, 3000.0, 10)),
        ];
        let (m, warning) = metrics(&calm, at(0), at(1000));
        assert!(warning.is_none());
        assert_eq!(
            m.iter()
                .find(|m| m.name == "machine_throttle_events")
                .unwrap()
                .value,
            0.0
        );
    }
}
