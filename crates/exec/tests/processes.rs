//! The engine against real child processes with known behaviour (the
//! `dyno-exec-fixture` program): per-run peak memory, CPU time of waited-for
//! children, interleaving, and exit codes in the metrics.

use std::time::Duration;

use dyno_exec::outcome::Compare;
use dyno_exec::{Policy, Settings, Shell, Stop};

const FIXTURE: &str = env!("CARGO_BIN_EXE_dyno-exec-fixture");
const MIB: f64 = 1024.0 * 1024.0;

fn settings(commands: &[String]) -> Settings {
    Settings {
        shell: Shell::None,
        policy: Policy::Fixed { runs: 3 },
        timeout: Some(Duration::from_secs(60)),
        seed: 7,
        ..Settings::new(commands)
    }
}

#[test]
fn peak_memory_is_each_runs_own_not_a_running_maximum() {
    // A big allocation and a small one take turns: if the figure were
    // RUSAGE_CHILDREN's running maximum, the small one would inherit the
    // big one's peak after the first round.
    let big = format!("{FIXTURE} alloc 96");
    let small = format!("{FIXTURE} alloc 8");
    let outcome = dyno_exec::run(&settings(&[big, small]), &Stop::new().unwrap(), |_| {}).unwrap();
    let peaks = |i: usize| -> Vec<f64> {
        outcome.results[i]
            .samples
            .iter()
            .map(|s| s.max_rss_bytes as f64 / MIB)
            .collect()
    };
    let floor = outcome.spawner_rss_bytes.unwrap_or(0) as f64 / MIB;
    for p in peaks(0) {
        assert!(
            (96.0..96.0 + 16.0 + floor).contains(&p),
            "big run peak {p} MiB"
        );
    }
    for p in peaks(1) {
        assert!(
            p < 8.0 + 16.0 + floor,
            "small run peak {p} MiB carries the big one's"
        );
        assert!(p >= 8.0, "small run peak {p} MiB");
    }
}

#[test]
fn cpu_time_includes_the_children_a_command_waits_for() {
    let cmd = format!("{FIXTURE} fork 2 150");
    let mut s = settings(&[cmd]);
    s.policy = Policy::Fixed { runs: 2 };
    let outcome = dyno_exec::run(&s, &Stop::new().unwrap(), |_| {}).unwrap();
    for sample in &outcome.results[0].samples {
        let cpu = sample.user + sample.system;
        // Two children spinning 150 ms each: 300 ms of CPU, on however many
        // cores the machine gives them.
        assert!(cpu >= Duration::from_millis(280), "{sample:?}");
        assert!(sample.wall >= Duration::from_millis(150), "{sample:?}");
    }
}

#[test]
fn metrics_carry_labels_exit_codes_and_the_comparison() {
    let mut s = settings(&[
        format!("{FIXTURE} spin {{ms}}"),
        format!("{FIXTURE} exit 3"),
    ]);
    // 5 against 120 ms of CPU: far enough apart that a start-up of tens of
    // milliseconds on a loaded machine still leaves them clearly apart.
    s.parameters = vec![dyno_exec::params::list("ms", "5,120").unwrap()];
    s.ignore_failure = true;
    s.policy = Policy::Fixed { runs: 5 };
    // `exit 3` does not use {ms}; it runs once per value all the same.
    let outcome = dyno_exec::run(&s, &Stop::new().unwrap(), |_| {}).unwrap();
    assert_eq!(outcome.results.len(), 4);
    let metrics = outcome.metrics(&Compare {
        reference: Some(0),
        noise_band: 0.02,
        seed: 1,
    });
    let find = |name: &str, command_suffix: &str| {
        metrics
            .iter()
            .find(|m| {
                m.name == name
                    && m.label("command")
                        .is_some_and(|c| c.ends_with(command_suffix))
            })
            .unwrap_or_else(|| panic!("no {name} for {command_suffix}"))
    };
    let fast = find("wall_ns", "spin 5");
    assert_eq!(fast.label("param.ms"), Some("5"));
    assert_eq!(fast.samples.len(), 5);
    assert!(fast.value >= 5e6, "{}", fast.value);
    let slow_ratio = find("ratio_to_reference", "spin 120");
    assert!(slow_ratio.value > 2.0, "{}", slow_ratio.value);
    assert_eq!(
        slow_ratio.label("reference"),
        Some(fast.label("command").unwrap())
    );
    assert_eq!(
        find("verdict", "spin 120").value,
        -1.0,
        "120 ms is slower than 5 ms"
    );
    let failed = find("failed_runs", "exit 3");
    assert_eq!(failed.value, 5.0);
    assert_eq!(failed.samples, vec![3.0; 5]);
    assert_eq!(find("failed_runs", "spin 5").value, 0.0);
    assert!(metrics.iter().all(|m| m.value.is_finite()));
}
