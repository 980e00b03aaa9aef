//! A db run as a [`Run`]: its settings record ([`DbRecord`]), metrics,
//! warnings, description and headline, from the engine's settings and the
//! run's [`Outcome`].
//!
//! Data flow: the binary resolves flags into [`RunSettings`] (a segment's
//! share of the run) and [`Whole`] (the run as given), runs the engine and
//! hands the outcome to [`record`] (or, for `dyno quick`'s db line,
//! [`quick`]). Nothing here prints or saves.

use std::time::Duration;

use dyno_model::record::{DbObserved, DbRecord, LoadModel, QuickLine, ScriptWeight};
use dyno_model::{Environment, Kind, Run, Warning};

use crate::run::{Outcome, RunSettings, Stop};
use crate::warnings;

/// The whole run as its flags gave it: a segment's [`RunSettings`] holds
/// only its share of the clients and threads.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Whole {
    /// `-c`.
    pub clients: u32,
    /// `-j`, at most `-c`.
    pub jobs: u32,
    /// `-s`, if given (pgbench ignores it with a built-in script, and says
    /// so).
    pub scale: Option<i64>,
    /// The whole run's rate (`-R`, a plan's mean, a search step's): a
    /// segment runs its share of it.
    pub rate: Option<f64>,
}

/// The settings as a db run records them ([`asked_record`]), with what
/// it found on the server.
pub(crate) fn settings_record(
    settings: &RunSettings,
    whole: Option<&Whole>,
    outcome: &Outcome,
) -> DbRecord {
    DbRecord {
        observed: DbObserved {
            server_version: outcome.server.version.clone(),
            server_settings: outcome.server.settings.iter().cloned().collect(),
            scale: Some(outcome.scale),
            clean_up: outcome.vacuum.clone(),
            aborted: outcome.aborted.clone(),
        },
        rate_plan: settings
            .plan
            .as_ref()
            .map(|plan| dyno_load::stages::record(plan, &outcome.stages)),
        ..asked_record(settings, whole)
    }
}

/// The settings record of what the run was asked, before it runs: nothing
/// found on the server yet, a rate plan's stages without figures. A
/// segment publishes it at the start barrier (less what differs per
/// segment), so that every segment of a group runs the same run.
pub fn asked_record(settings: &RunSettings, whole: Option<&Whole>) -> DbRecord {
    let nanos = |d: Duration| d.as_nanos() as u64;
    DbRecord {
        target: settings.target.to_string(),
        scripts: settings
            .scripts
            .iter()
            .map(|w| ScriptWeight {
                name: w.script.name().to_owned(),
                weight: u64::from(w.weight),
            })
            .collect(),
        clients: settings.clients as u64,
        threads: settings.threads as u64,
        transactions: match settings.stop {
            Stop::Transactions(n) => Some(n),
            Stop::Duration(_) => None,
        },
        duration_ns: match settings.stop {
            Stop::Duration(d) => Some(nanos(d)),
            Stop::Transactions(_) => None,
        },
        protocol: settings.protocol.name().to_owned(),
        model: if settings.rate.is_some() {
            LoadModel::Open
        } else {
            LoadModel::Closed
        },
        // The whole run's rate: a segment's share would label the merged
        // run with one segment's part.
        rate_per_sec: whole.and_then(|w| w.rate).or(settings.rate),
        warmup_ns: (!settings.warmup.is_zero()).then(|| nanos(settings.warmup)),
        latency_limit_ns: settings.latency_limit.map(nanos),
        reconnect: settings.reconnect,
        pipeline: settings.pipeline,
        max_tries: u64::from(settings.max_tries),
        vacuum: settings.vacuum,
        seed: settings.seed,
        observed: DbObserved::default(),
        segment: None,
        group: None,
        capacity: None,
        rate_plan: settings
            .plan
            .as_ref()
            .map(|plan| dyno_load::stages::record(plan, &[])),
    }
}

/// The run's description: its scripts, its server and the whole run's
/// `-c` and `-j` (a segment is described as the run it is part of).
fn description(settings: &RunSettings, whole: &Whole) -> String {
    let names: Vec<&str> = settings.scripts.iter().map(|w| w.script.name()).collect();
    format!(
        "{} on {}, -c {} -j {}",
        names.join(" + "),
        settings.target,
        whole.clients,
        whole.jobs,
    )
}

/// The run of `settings` (part of `whole`) that ended as `outcome` after
/// `duration`, on the machine `environment`.
pub fn record(
    settings: &RunSettings,
    whole: &Whole,
    outcome: &Outcome,
    duration: Duration,
    environment: Environment,
) -> Run {
    let mut run = Run::new(Kind::Db, description(settings, whole));
    run.environment = environment;
    run.duration_ns = duration.as_nanos() as u64;
    run.set_record(&settings_record(settings, Some(whole), outcome));
    run.metrics = outcome.metrics(settings);
    run.headline = Some(dyno_model::names::db::TRANSACTIONS_PER_SEC.into());
    run.warnings.extend(dyno_env::preflight(&run.environment));
    run.warnings.extend(
        warnings::judge(outcome, settings, whole.scale)
            .into_iter()
            .map(Warning::from),
    );
    run
}

/// `dyno quick`'s db line: its part of quick's settings, its metrics
/// (its part `db`) and its warnings.
pub fn quick(settings: &RunSettings, outcome: &Outcome) -> QuickLine<DbRecord> {
    let metrics = outcome
        .metrics(settings)
        .into_iter()
        .map(|m| m.of_part(dyno_model::names::quick::DB))
        .collect();
    let warnings = warnings::judge(outcome, settings, None)
        .into_iter()
        .map(Warning::from)
        .collect();
    QuickLine {
        part: settings_record(settings, None, outcome),
        metrics,
        warnings,
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use hdrhistogram::Histogram;

    use super::*;
    use crate::Target;
    use crate::run::{Protocol, Server, Weighted};
    use crate::script::{self, Script};

    /// An open-model run of select-only for one second; parsed only,
    /// nothing connects.
    fn settings() -> RunSettings {
        let (name, text) = script::builtin("select-only").unwrap();
        RunSettings {
            plan: None,
            share: 1.0,
            target: Target::new("host=localhost dbname=bench user=bench", |_| None).unwrap(),
            scripts: vec![Weighted {
                script: Script::parse(name, text).unwrap(),
                weight: 3,
            }],
            clients: 4,
            threads: 2,
            stop: Stop::Duration(Duration::from_secs(1)),
            protocol: Protocol::Prepared,
            scale: None,
            vacuum: true,
            max_tries: 2,
            seed: 42,
            default_seed: crate::script::default_seed(42, 4),
            rate: Some(500.0),
            warmup: Duration::ZERO,
            grace: Duration::ZERO,
            latency_limit: Some(Duration::from_millis(5)),
            per_statement: false,
            reconnect: false,
            pipeline: true,
            exit_on_abort: false,
            log: None,
            progress_every: Duration::from_secs(1),
            segment: dyno_model::Segment::WHOLE,
        }
    }

    /// What a server with the pgbench tables at scale 10 answered.
    fn outcome() -> Outcome {
        let mut latency = Histogram::new(2).unwrap();
        latency.record(1_000_000).unwrap();
        Outcome {
            latency,
            transactions: 500,
            aborted: vec!["client 3: connection lost".into()],
            per_script: vec![500],
            vacuum: vec!["vacuum pgbench_branches".into()],
            elapsed: Duration::from_secs(1),
            cpu: Duration::from_millis(100),
            scale: 10,
            server: Server {
                version: "17.2".into(),
                settings: vec![
                    ("fsync".into(), "on".into()),
                    ("shared_buffers".into(), "128MB".into()),
                ],
            },
            ..Outcome::empty()
        }
    }

    const WHOLE: Whole = Whole {
        clients: 8,
        jobs: 4,
        scale: None,
        rate: None,
    };

    /// A segment runs its share of -R (here half of 1000 tps); its record,
    /// and so the merged run's, says the whole run's rate (M6).
    #[test]
    fn a_segment_records_the_whole_runs_rate() {
        let whole = Whole {
            rate: Some(1000.0),
            ..WHOLE
        };
        let run = record(
            &settings(),
            &whole,
            &outcome(),
            Duration::from_secs(2),
            Environment::default(),
        );
        let rec: DbRecord = run.record().unwrap();
        assert_eq!(rec.rate_per_sec, Some(1000.0));
    }

    #[test]
    fn the_record_round_trips_the_settings_and_the_server() {
        let run = record(
            &settings(),
            &WHOLE,
            &outcome(),
            Duration::from_secs(2),
            Environment::default(),
        );
        let rec: DbRecord = run.record().unwrap();
        assert_eq!(rec.target, settings().target.to_string());
        assert_eq!(
            rec.scripts,
            [ScriptWeight {
                name: "select-only".into(),
                weight: 3
            }]
        );
        assert_eq!((rec.clients, rec.threads), (4, 2));
        assert_eq!(rec.transactions, None);
        assert_eq!(rec.duration_ns, Some(1_000_000_000));
        assert_eq!(rec.protocol, "prepared");
        assert_eq!(rec.model, LoadModel::Open);
        assert_eq!(rec.rate_per_sec, Some(500.0));
        assert_eq!(rec.latency_limit_ns, Some(5_000_000));
        assert!(rec.pipeline && rec.vacuum && !rec.reconnect);
        assert_eq!((rec.max_tries, rec.seed), (2, 42));
        assert_eq!(
            rec.observed,
            DbObserved {
                server_version: "17.2".into(),
                server_settings: [("fsync", "on"), ("shared_buffers", "128MB")]
                    .map(|(k, v)| (k.to_owned(), v.to_owned()))
                    .into(),
                scale: Some(10),
                clean_up: vec!["vacuum pgbench_branches".into()],
                aborted: vec!["client 3: connection lost".into()],
            }
        );
        // A segment is described as the whole run it is part of.
        assert_eq!(
            run.description,
            format!("select-only on {}, -c 8 -j 4", settings().target)
        );
        assert_eq!(run.duration_ns, 2_000_000_000);
        assert_eq!(run.headline.as_deref(), Some("transactions_per_sec"));
        assert!(run.headline_metric().is_some());
    }

    /// The keys dyno has always written, the unset ones as null.
    #[test]
    fn the_settings_keep_their_keys() {
        let mut s = settings();
        s.stop = Stop::Transactions(10);
        s.rate = None;
        let run = record(
            &s,
            &WHOLE,
            &outcome(),
            Duration::ZERO,
            Environment::default(),
        );
        let settings = run.settings.as_object().unwrap();
        let keys: BTreeSet<&str> = settings.keys().map(String::as_str).collect();
        let expected: BTreeSet<&str> = [
            "target",
            "server_version",
            "server_settings",
            "scripts",
            "scale",
            "clients",
            "threads",
            "transactions",
            "duration_ns",
            "protocol",
            "model",
            "rate_per_sec",
            "latency_limit_ns",
            "reconnect",
            "pipeline",
            "max_tries",
            "vacuum",
            "clean_up",
            "seed",
            "aborted",
        ]
        .into();
        assert_eq!(keys, expected);
        assert_eq!(settings["transactions"], 10);
        assert!(settings["duration_ns"].is_null() && settings["rate_per_sec"].is_null());
        assert_eq!(settings["model"], "closed");
    }

    #[test]
    fn quick_labels_its_metrics_part_db_and_records_the_same_settings() {
        let QuickLine { part, metrics, .. } = quick(&settings(), &outcome());
        let run = record(
            &settings(),
            &WHOLE,
            &outcome(),
            Duration::ZERO,
            Environment::default(),
        );
        assert_eq!(part, run.record::<DbRecord>().unwrap());
        assert!(!metrics.is_empty());
        // The engine's names, each labelled with the part, and what a
        // metric names is named as the engine names it.
        assert!(
            metrics.iter().all(|m| m.part() == Some("db")),
            "{metrics:?}"
        );
        let names = |ms: &[dyno_model::Metric]| -> Vec<String> {
            ms.iter().map(|m| m.name.clone()).collect()
        };
        assert_eq!(names(&metrics), names(&run.metrics));
        let tps = metrics
            .iter()
            .find(|m| m.name == dyno_model::names::db::TRANSACTIONS_PER_SEC)
            .unwrap();
        assert_eq!(
            tps.rate_of.as_deref(),
            Some(dyno_model::names::db::TRANSACTIONS)
        );
    }
}
