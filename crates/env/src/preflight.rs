//! The preflight checks: what in the [`Environment`] skews benchmark
//! results, as [`Warning`]s to attach to a run or show in `dyno doctor`.
//!
//! Each check needs its fields to be known; an unknown field never warns.

use dyno_model::{Environment, Warning};

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

/// The warnings about `env`, in a fixed order (governor, swap, load,
/// virtualization). A clean, idle bare-metal machine set to `performance`
/// gets none. They are the findings of [`crate::doctor`]'s checks that
/// every run carries, so `dyno doctor` and the runs never disagree.
pub fn preflight(env: &Environment) -> Vec<Warning> {
    crate::doctor::preflight_warnings(env)
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
