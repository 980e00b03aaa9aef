//! The preflight checks: what in the [`Environment`] skews benchmark
//! results, as [`Warning`]s to attach to a run or show in `dyno doctor`.
//!
//! Each check needs its fields to be known; an unknown field never warns.

use dyno_model::{Environment, Warning, size::BinarySize};

/// The stable `code` of each warning [`preflight`] can produce.
pub mod code {
    /// The CPU frequency governor is known and is not `performance`.
    pub const CPU_GOVERNOR: &str = "cpu_governor";
    /// Some swap is in use.
    pub const SWAP_IN_USE: &str = "swap_in_use";
    /// The 1-minute load average is at least half the logical core count.
    pub const MACHINE_BUSY: &str = "machine_busy";
    /// The machine is a virtual machine or a container.
    pub const VIRTUALIZED: &str = "virtualized";
}

/// The load, as a share of the logical cores, from which other work on the
/// machine is taken to compete with a benchmark.
const BUSY_LOAD_PER_CORE: f64 = 0.5;

/// The warnings about `env`, in a fixed order (governor, swap, load,
/// virtualization). A clean, idle bare-metal machine set to `performance`
/// gets none.
pub fn preflight(env: &Environment) -> Vec<Warning> {
    let mut warnings = Vec::new();
    let mut warn = |code: &str, message: String| {
        warnings.push(Warning {
            code: code.to_owned(),
            message,
        });
    };

    if let Some(governor) = env.cpu.governor.as_deref()
        && governor != "performance"
    {
        warn(
            code::CPU_GOVERNOR,
            format!(
                "CPU frequency scaling governor is '{governor}'; results may vary with clock \
                 speed; for stable figures: cpupower frequency-set -g performance"
            ),
        );
    }

    if let Some(used) = env.memory.swap_used_bytes
        && used > 0
    {
        warn(
            code::SWAP_IN_USE,
            format!(
                "{} of swap is in use; paging can stall the benchmark and its target; free \
                 memory (or run swapoff -a) before measuring",
                BinarySize(used)
            ),
        );
    }

    if let (Some([load1, _, _]), Some(cores)) = (env.load_average, env.cpu.logical_cores)
        && load1 >= BUSY_LOAD_PER_CORE * f64::from(cores)
    {
        warn(
            code::MACHINE_BUSY,
            format!(
                "1-minute load average is {load1:.2} on {cores} logical cores: other load on \
                 the machine competes with the benchmark; stop other work or wait until the \
                 machine is idle"
            ),
        );
    }

    if let Some(kind) = env.virtualization.as_deref()
        && kind != "none"
    {
        warn(
            code::VIRTUALIZED,
            format!(
                "running under virtualization ({kind}); results depend on the host and on \
                 neighbouring workloads, so compare them with runs on the same kind of host"
            ),
        );
    }

    warnings
}

#[cfg(test)]
mod tests {
    use dyno_model::{Cpu, Memory};

    use super::*;

    /// An idle bare-metal machine set up for benchmarking.
    fn clean() -> Environment {
        Environment {
            virtualization: Some("none".to_owned()),
            cpu: Cpu {
                logical_cores: Some(8),
                governor: Some("performance".to_owned()),
                ..Cpu::default()
            },
            memory: Memory {
                swap_total_bytes: Some(1 << 30),
                swap_used_bytes: Some(0),
                ..Memory::default()
            },
            load_average: Some([3.99, 6.0, 7.0]),
            ..Environment::default()
        }
    }

    fn codes(env: &Environment) -> Vec<String> {
        preflight(env).into_iter().map(|w| w.code).collect()
    }

    #[test]
    fn clean_and_unknown_machines_get_no_warnings() {
        assert_eq!(preflight(&clean()), Vec::new());
        assert_eq!(preflight(&Environment::default()), Vec::new());
    }

    #[test]
    fn governor() {
        let mut env = clean();
        env.cpu.governor = Some("powersave".to_owned());
        assert_eq!(
            preflight(&env),
            vec![Warning {
                code: "cpu_governor".to_owned(),
                message: "CPU frequency scaling governor is 'powersave'; results may vary with \
                          clock speed; for stable figures: cpupower frequency-set -g performance"
                    .to_owned(),
            }]
        );
        for governor in ["ondemand", "schedutil", "conservative"] {
            env.cpu.governor = Some(governor.to_owned());
            assert_eq!(codes(&env), ["cpu_governor"]);
            assert!(
                preflight(&env)[0]
                    .message
                    .contains(&format!("'{governor}'"))
            );
        }
    }

    #[test]
    fn swap() {
        let mut env = clean();
        env.memory.swap_used_bytes = Some(3 << 20);
        let warnings = preflight(&env);
        assert_eq!(codes(&env), ["swap_in_use"]);
        assert!(
            warnings[0].message.starts_with("3 MiB of swap is in use"),
            "{}",
            warnings[0].message
        );
        assert!(warnings[0].message.contains("swapoff"));
    }

    #[test]
    fn load_at_half_the_cores_is_busy() {
        let mut env = clean();
        env.load_average = Some([4.0, 0.1, 0.1]);
        let warnings = preflight(&env);
        assert_eq!(codes(&env), ["machine_busy"]);
        assert!(
            warnings[0].message.contains("4.00 on 8 logical cores"),
            "{}",
            warnings[0].message
        );
        // Without the core count there is nothing to compare with.
        env.cpu.logical_cores = None;
        assert_eq!(preflight(&env), Vec::new());
    }

    #[test]
    fn virtualization_is_mild() {
        let mut env = clean();
        env.virtualization = Some("kvm".to_owned());
        let warnings = preflight(&env);
        assert_eq!(codes(&env), ["virtualized"]);
        assert!(warnings[0].message.contains("(kvm)"));
        assert!(warnings[0].message.contains("same kind of host"));
    }

    #[test]
    fn all_at_once_in_order() {
        let mut env = clean();
        env.cpu.governor = Some("ondemand".to_owned());
        env.memory.swap_used_bytes = Some(1);
        env.load_average = Some([16.0, 16.0, 16.0]);
        env.virtualization = Some("docker".to_owned());
        assert_eq!(
            codes(&env),
            ["cpu_governor", "swap_in_use", "machine_busy", "virtualized"]
        );
    }
}
