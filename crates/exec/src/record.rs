//! An [`Outcome`] as the `Run` that `dyno run` prints and saves: its
//! description, settings record ([`ExecRecord`]), metrics, headline and
//! warnings, all decided here so the binary only wires.

use dyno_model::names::exec;
use dyno_model::record::ExecRecord;
use dyno_model::{Environment, Kind, Run};

use crate::child::Captured;
use crate::engine::Outcome;
use crate::outcome::Compare;
use crate::settings::Settings;

/// How the benchmarks were asked to be compared (`--reference`,
/// `--noise-band`), beyond the settings the engine ran with.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Judging {
    /// Index of the reference benchmark; the fastest when `None`.
    pub reference: Option<usize>,
    /// Ratios within this percentage of 1 are called the same (2.0 = 2%).
    pub noise_band_percent: f64,
}

/// The run of `outcome`, measured with `settings` on the machine
/// `environment` describes.
pub fn record(
    settings: &Settings,
    outcome: &Outcome,
    judging: &Judging,
    environment: Environment,
) -> Run {
    let mut run = Run::new(Kind::Exec, describe(outcome));
    run.started_at = outcome.started_at;
    run.duration_ns = outcome.duration.as_nanos() as u64;
    run.environment = environment;
    let compare = Compare {
        reference: judging.reference,
        noise_band: judging.noise_band_percent / 100.0,
        seed: settings.seed,
    };
    run.metrics = outcome.metrics(&compare);
    run.headline = Some(exec::WALL.into());
    run.set_record(&ExecRecord {
        settings: settings.clone(),
        benchmarks: outcome.plan(),
        noise_band_percent: judging.noise_band_percent,
        reference: outcome
            .reference(judging.reference)
            .map(|i| outcome.results[i].benchmark.name.clone()),
    });
    run.warnings.extend(outcome.warnings(settings, &compare));
    if outcome.interrupted {
        run.warn(
            "interrupted",
            "the run was stopped early by an interrupt (Ctrl-C, SIGTERM or SIGHUP); figures cover the runs that finished",
        );
    }
    if let Some(message) = output_mismatch(settings, outcome) {
        run.warn("output_mismatch", message);
    }
    run
}

/// With `--check-output`, why the commands' outputs differ, if they do:
/// the `output_mismatch` warning's message, and what fails `dyno run`'s
/// check (exit 1).
pub fn output_mismatch(settings: &Settings, outcome: &Outcome) -> Option<String> {
    let outputs = outcome.outputs();
    (settings.check_output && outputs.len() > 1).then(|| mismatch_message(&outputs))
}

fn describe(outcome: &Outcome) -> String {
    match outcome.results.as_slice() {
        [one] => format!("time '{}'", one.benchmark.name),
        many => format!(
            "time {} commands: '{}', …",
            many.len(),
            many.first().map_or("", |r| r.benchmark.name.as_str())
        ),
    }
}

fn mismatch_message(outputs: &[(Captured, Vec<String>)]) -> String {
    let groups: Vec<String> = outputs
        .iter()
        .map(|(c, names)| {
            let head = String::from_utf8_lossy(&c.head);
            let head = head.lines().next().unwrap_or_default();
            format!(
                "{} printed {} bytes starting {:?}",
                names
                    .iter()
                    .map(|n| format!("'{n}'"))
                    .collect::<Vec<_>>()
                    .join(", "),
                c.len,
                head
            )
        })
        .collect();
    format!(
        "--check-output: the outputs differ ({} different outputs): {}",
        outputs.len(),
        groups.join("; ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Stop;

    #[test]
    fn record_holds_the_plan_the_reference_and_the_headline() {
        let mut settings = Settings::new(["true", "sh -c exit"]);
        settings.shell = crate::Shell::None;
        settings.policy = crate::Policy::Fixed { runs: 3 };
        let stop = Stop::new().unwrap();
        let outcome = crate::run(&settings, &stop, |_| {}).unwrap();
        let judging = Judging {
            reference: Some(1),
            noise_band_percent: 2.0,
        };
        let run = record(&settings, &outcome, &judging, Environment::default());

        assert_eq!(run.kind, Kind::Exec);
        assert_eq!(run.description, "time 2 commands: 'true', …");
        assert_eq!(run.started_at, outcome.started_at);
        let rec: ExecRecord = run.record().unwrap();
        assert_eq!(rec.settings, settings);
        let names: Vec<&str> = rec.benchmarks.iter().map(|b| b.name.as_str()).collect();
        assert_eq!(names, ["true", "sh -c exit"]);
        assert!(rec.benchmarks.iter().all(|b| b.runs == 3));
        assert_eq!(rec.reference.as_deref(), Some("sh -c exit"));
        assert_eq!(rec.noise_band_percent, 2.0);
        let headline = run.headline_metric().expect("the headline metric exists");
        assert_eq!(headline.name, "wall_ns");
        assert!(!run.warnings.iter().any(|w| w.code == "interrupted"));
    }
}
