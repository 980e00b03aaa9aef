//! dyno's change points against a published E-divisive: Apache Otava
//! 0.8.0 (scripts/changes-reference.py, in the virtual environment whose
//! python `DYNO_OTAVA` names; scripts/test installs it). Where both must
//! agree — clear steps, and nothing in a flat series — they are held to
//! the same runs, ±1. The ignored test prints how they differ over many
//! series:
//! `DYNO_OTAVA=target/otava/bin/python cargo test --release -p dyno-stats
//! --test reference -- --ignored --nocapture`.

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};

use dyno_stats::changes::{Settings, analyse};
use statrs::distribution::{ContinuousCDF, Normal};

/// `n` values around 100 with relative noise `noise` (normal, from
/// `seed`); from each step's run on, the level is multiplied by
/// `1 + step`.
fn series(n: usize, noise: f64, steps: &[(usize, f64)], seed: u64) -> Vec<f64> {
    let mut rng = fastrand::Rng::with_seed(seed);
    let normal = Normal::standard();
    (0..n)
        .map(|i| {
            let level: f64 = steps
                .iter()
                .filter(|(at, _)| i >= *at)
                .map(|(_, step)| 1.0 + step)
                .product();
            let u = rng.f64().clamp(1e-12, 1.0 - 1e-12);
            100.0 * level * (1.0 + noise * normal.inverse_cdf(u))
        })
        .collect()
}

/// dyno's change indexes of each series, the analysis seeded by its
/// position.
fn dyno(all: &[Vec<f64>], alpha: f64, min_change: f64) -> Vec<Vec<usize>> {
    all.iter()
        .enumerate()
        .map(|(i, values)| {
            let settings = Settings {
                alpha,
                min_change,
                seed: i as u64,
                ..Settings::default()
            };
            let a = analyse(values, &settings).expect("a series long enough");
            a.changes.iter().map(|c| c.index).collect()
        })
        .collect()
}

/// The reference's answer: (its name and version, the change indexes of
/// each series, the first run after each change).
fn reference(
    all: &[Vec<f64>],
    alpha: f64,
    min_change: f64,
    method: &str,
) -> (String, Vec<Vec<usize>>) {
    let python = std::env::var_os("DYNO_OTAVA").unwrap_or_else(|| {
        panic!(
            "DYNO_OTAVA is not set: run the tests through scripts/test, which installs \
             Apache Otava into target/otava and sets DYNO_OTAVA to its python"
        )
    });
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/changes-reference.py");
    let query = serde_json::json!({
        "series": all,
        "alpha": alpha,
        "min_change": min_change,
        "method": method,
    });
    let mut child = Command::new(&python)
        .arg(&script)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("{python:?} {}: {e}", script.display()));
    child
        .stdin
        .take()
        .expect("piped stdin")
        .write_all(query.to_string().as_bytes())
        .expect("write the series");
    let out = child.wait_with_output().expect("the reference runs");
    assert!(
        out.status.success(),
        "{}: {}\n{}",
        script.display(),
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    let answer: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    let tool = format!(
        "{} {} ({})",
        answer["tool"].as_str().unwrap_or("?"),
        answer["version"].as_str().unwrap_or("?"),
        answer["method"].as_str().unwrap_or("?")
    );
    let changes = answer["changes"]
        .as_array()
        .expect("changes")
        .iter()
        .map(|c| {
            c.as_array()
                .expect("indexes")
                .iter()
                .map(|i| i.as_u64().expect("an index") as usize)
                .collect()
        })
        .collect();
    (tool, changes)
}

/// Both tools, at dyno's defaults, find the changes `expected` in every
/// series, each within ±1 run.
fn both_find(all: &[Vec<f64>], expected: &[usize]) {
    let ours = dyno(all, 0.01, 0.05);
    let (tool, theirs) = reference(all, 0.01, 0.05, "otava");
    for (s, (o, t)) in ours.iter().zip(&theirs).enumerate() {
        for (who, found) in [("dyno", o), (tool.as_str(), t)] {
            let near = found.len() == expected.len()
                && found.iter().zip(expected).all(|(f, e)| f.abs_diff(*e) <= 1);
            assert!(
                near,
                "series {s}: {who} found {found:?}, expected {expected:?} ±1 \
                 (dyno {o:?}, {tool} {t:?})"
            );
        }
    }
}

#[test]
fn both_find_a_single_clear_step_at_its_run() {
    // +10% at run 30 of 60, in 1% noise.
    let all: Vec<Vec<f64>> = (0..5)
        .map(|seed| series(60, 0.01, &[(30, 0.10)], 100 + seed))
        .collect();
    both_find(&all, &[30]);
}

#[test]
fn both_find_two_steps_at_their_runs() {
    // +10% at run 20 and −15% at run 45 of 70, in 1% noise.
    let all: Vec<Vec<f64>> = (0..5)
        .map(|seed| series(70, 0.01, &[(20, 0.10), (45, -0.15)], 200 + seed))
        .collect();
    both_find(&all, &[20, 45]);
}

#[test]
fn both_find_nothing_in_a_flat_series_of_low_noise() {
    let all: Vec<Vec<f64>> = (0..5)
        .map(|seed| series(60, 0.005, &[], 300 + seed))
        .collect();
    both_find(&all, &[]);
}

/// How often a tool found anything, how many changes on average, and
/// for a step at `at`: the share found within ±1 run, the share found
/// there alone, the mean distance of the nearest change when found within
/// ±5.
struct Tally {
    any: f64,
    mean_count: f64,
    within_1: f64,
    alone: f64,
    error: f64,
}

impl Tally {
    fn of(found: &[Vec<usize>], at: Option<usize>) -> Tally {
        let n = found.len() as f64;
        let share =
            |f: &dyn Fn(&Vec<usize>) -> bool| found.iter().filter(|c| f(c)).count() as f64 / n;
        let nearest = |c: &Vec<usize>, at: usize| c.iter().map(|i| i.abs_diff(at)).min();
        let (within_1, alone, error) = match at {
            None => (f64::NAN, f64::NAN, f64::NAN),
            Some(at) => {
                let near: Vec<usize> = found
                    .iter()
                    .filter_map(|c| nearest(c, at))
                    .filter(|d| *d <= 5)
                    .collect();
                (
                    share(&|c| nearest(c, at).is_some_and(|d| d <= 1)),
                    share(&|c| c.len() == 1 && c[0].abs_diff(at) <= 1),
                    near.iter().sum::<usize>() as f64 / near.len().max(1) as f64,
                )
            }
        };
        Tally {
            any: share(&|c| !c.is_empty()),
            mean_count: found.iter().map(Vec::len).sum::<usize>() as f64 / n,
            within_1,
            alone,
            error,
        }
    }
}

#[test]
#[ignore]
fn comparison_over_many_series() {
    let noise: Vec<Vec<f64>> = (0..200)
        .map(|seed| series(40, 0.02, &[], 10_000 + seed))
        .collect();
    let stepped: Vec<Vec<f64>> = (0..100)
        .map(|seed| series(40, 0.02, &[(20, 0.05)], 20_000 + seed))
        .collect();
    println!(
        "alpha 0.01; 200 series of 40 runs of pure 2% noise; \
         100 series of 40 runs, +5% at run 20, 2% noise"
    );
    println!(
        "{:<34} {:>10}  {:>9} {:>9}  {:>9} {:>9} {:>9} {:>9}",
        "tool", "min_change", "noise:any", "changes", "step:any", "at ±1", "alone ±1", "|error|"
    );
    for min_change in [0.05, 0.0] {
        let (tool, noise_otava) = reference(&noise, 0.01, min_change, "otava");
        let (_, step_otava) = reference(&stepped, 0.01, min_change, "otava");
        let mut rows = vec![
            (
                "dyno (permutation, 999)".to_string(),
                dyno(&noise, 0.01, min_change),
                dyno(&stepped, 0.01, min_change),
            ),
            (tool, noise_otava, step_otava),
        ];
        if min_change == 0.0 {
            // Otava's original E-divisive has no magnitude limit.
            let (tool, noise_orig) = reference(&noise, 0.01, 0.0, "orig");
            let (_, step_orig) = reference(&stepped, 0.01, 0.0, "orig");
            rows.push((tool, noise_orig, step_orig));
        }
        for (tool, on_noise, on_step) in rows {
            let (n, s) = (Tally::of(&on_noise, None), Tally::of(&on_step, Some(20)));
            println!(
                "{tool:<34} {min_change:>10}  {:>9.3} {:>9.3}  {:>9.3} {:>9.3} {:>9.3} {:>9.2}",
                n.any, n.mean_count, s.any, s.within_1, s.alone, s.error
            );
        }
    }
}
