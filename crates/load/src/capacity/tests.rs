//! The search's loop on a fake engine whose shards say what a step
//! measured: what it runs, where it stops, what it records and claims.

use std::convert::Infallible;
use std::sync::atomic::AtomicBool;
use std::time::{Duration, SystemTime};

use dyno_model::record::{CapacityOutcome, CapacityRecord};
use dyno_model::{Direction, Metric, Role, Run, Unit};
use hdrhistogram::Histogram;

use super::*;
use crate::search::Answer;
use crate::shard::{Part, Shard, Together};

fn plan(axis: Axis) -> Plan {
    Plan {
        slo: "p99<=100ms".parse().unwrap(),
        slo_text: "p99<=100ms".into(),
        step: Duration::from_secs(2),
        warmup: Duration::from_millis(500),
        budget: Duration::from_secs(60),
        axis,
    }
}

fn rates(start: Option<f64>) -> Plan {
    plan(Axis::Rate {
        start,
        precision: 0.05,
    })
}

/// What a process measured of a 2 s step: `per_sec` requests a second,
/// each answered in `latency_ms`.
fn shard(per_sec: f64, latency_ms: u64) -> Shard {
    let requests = (per_sec * 2.0) as u64;
    let mut latency = dyno_stats::hdr::latency_histogram();
    latency.record_n(latency_ms * 1_000_000, requests).unwrap();
    Shard {
        requests,
        errors: 0,
        sends: requests,
        late: 0,
        elapsed: Duration::from_secs(2),
        latency,
        lag: dyno_stats::hdr::latency_histogram(),
        seconds: Vec::new(),
        client_cpu_percent: 10.0,
        client_wait_percent: 0.0,
        asked_per_sec: None,
    }
}

/// A fake engine: `answer` says how each step it is asked to run ends
/// (its outcome is the step's level as a number); a zero outcome is a
/// target that refused the step.
struct Fake<F> {
    asked: Vec<Load>,
    answer: F,
}

impl<F: FnMut(&Load, usize) -> Ended<f64>> Engine for Fake<F> {
    type Outcome = f64;
    type Error = Infallible;

    fn run(&mut self, load: &Load, _gate: Option<SystemTime>) -> Result<Ended<f64>, Infallible> {
        self.asked.push(*load);
        Ok((self.answer)(load, self.asked.len()))
    }

    fn lost(&self, outcome: &f64) -> Option<String> {
        (*outcome == 0.0).then(|| "gone".to_owned())
    }
}

fn fake<F: FnMut(&Load, usize) -> Ended<f64>>(answer: F) -> Fake<F> {
    Fake {
        asked: Vec::new(),
        answer,
    }
}

/// A target that meets p99 <= 100 ms up to 400/s, and carries 900/s
/// closed.
fn target(load: &Load) -> Ended<f64> {
    let (outcome, per_sec) = match load.level {
        Level::Rate(rate) => (rate, rate),
        Level::Concurrency(c) => (f64::from(c), 100.0 * f64::from(c)),
        Level::Probe => (1.0, 900.0),
        // A replayed log of 100 requests a second, at its multiple.
        Level::Speed(speed) => (speed, 100.0 * speed),
    };
    let latency = if per_sec <= 400.0 { 10 } else { 500 };
    Ended::Measured {
        outcome,
        shard: shard(per_sec, latency),
    }
}

fn drive_on<F: FnMut(&Load, usize) -> Ended<f64>>(
    plan: &Plan,
    engine: &mut Fake<F>,
) -> Searched<f64> {
    drive(plan, engine, None, &AtomicBool::new(false), |_| {}).unwrap()
}

#[test]
fn the_budget_and_the_step_set_the_steps_and_the_floor() {
    let p = rates(None);
    assert_eq!(p.max_steps(), 24);
    // 10 requests in a 2 s step: no lower than 5/s.
    assert_eq!(p.search(100.0).settings().floor, 5.0);
    assert_eq!(p.search(100_000.0).settings().floor, 100_000.0 / 1024.0);
    assert_eq!(p.late_after(), Duration::from_millis(25));
    let mut tight = rates(None);
    tight.slo = "p99<=4ms".parse().unwrap();
    assert_eq!(tight.late_after(), LATE_AFTER);
}

#[test]
fn each_level_asks_the_engine_for_its_own_load() {
    let p = rates(None);
    let probe = p.load(Level::Probe);
    assert_eq!(
        (probe.length + probe.warmup, probe.late_after),
        (PROBE, None)
    );
    let rate = p.load(Level::Rate(50.0));
    assert_eq!(rate.length, p.step);
    assert_eq!(rate.grace, Duration::from_millis(100));
    assert_eq!(rate.late_after, Some(Duration::from_millis(25)));
    // A closed-model step has no due times, so no late sends.
    assert_eq!(p.load(Level::Concurrency(8)).late_after, None);
    assert_eq!(p.describe("connections"), "find-max p99<=100ms");
    let sweep = plan(Axis::Concurrency { from: 1, to: 64 });
    assert_eq!(
        sweep.describe("clients"),
        "find-max p99<=100ms over 1..64 clients"
    );
}

#[test]
fn a_client_that_waited_a_quarter_of_what_it_wanted_was_starved() {
    // Figures of a 2000 req/s client on this project's VM.
    assert!(!starved(15.0, 0.5), "quiet: scheduling noise");
    assert!(starved(15.0, 8.0), "beside a compile");
    assert!(starved(9.0, 14.0), "beside two CPU hogs");
    // A light client is starved by the share, not the time.
    assert!(starved(2.0, 1.5));
    assert!(!starved(60.0, 5.0));
}

#[test]
fn lags_past_the_threshold_are_late() {
    let mut lag = Histogram::<u64>::new(3).unwrap();
    for ns in [100_000, 900_000, 2_000_000, 6_000_000, 50_000_000] {
        lag.record(ns).unwrap();
    }
    assert_eq!(late(&lag, Duration::from_millis(1)), 3);
    assert_eq!(late(&lag, Duration::from_millis(5)), 2);
}

#[test]
fn a_rate_search_probes_for_its_start_then_runs_what_the_search_asks() {
    let mut engine = fake(|load, _| target(load));
    let searched = drive_on(&rates(None), &mut engine);
    // Half the probe's 900/s.
    assert_eq!(searched.start, Some((450.0, true)));
    assert_eq!(engine.asked[0].level, Level::Probe);
    assert_eq!(searched.steps.len(), engine.asked.len() - 1);
    assert_eq!(searched.answer.outcome, CapacityOutcome::Found);
    let max = searched.answer.max_rate.unwrap();
    assert!((390.0..=400.0).contains(&max), "{max}");
    let figures = searched.figures().unwrap();
    assert_eq!((figures.outcome, figures.passed()), (max, true));
    let knee = searched.knee().unwrap();
    assert_eq!(Some(knee.outcome), searched.answer.above_rate);
    assert!(!knee.passed());

    let found = record(&searched, &rates(None));
    assert_eq!((found.start, found.start_probed), (450.0, true));
    assert_eq!(found.steps.len(), searched.steps.len());
    assert_eq!(found.sweep, None);
    assert!(found.steps.iter().all(|s| s.connections.is_none()));
    assert!(
        found
            .steps
            .iter()
            .any(|s| s.why.first().is_some_and(|w| w.starts_with("p99 50"))
                && s.failed_on == ["latency"]),
        "{:?}",
        found.steps
    );
    let objective = found.objective.unwrap();
    assert_eq!(objective.limit_at(99.0).unwrap().limit_ns, 100_000_000);
}

/// A replay's search is the rate search over its speed: no probe, from
/// its start (1×), doubling to a fail and bisecting; a log of 100/s on a
/// target that holds 400/s is sustained up to 4×, recorded as multiples.
#[test]
fn a_speed_search_runs_the_rate_search_over_multiples_of_the_log() {
    let p = plan(Axis::Speed {
        start: 1.0,
        precision: 0.05,
    });
    let mut engine = fake(|load, _| target(load));
    let found = drive_on(&p, &mut engine);
    assert!(
        engine
            .asked
            .iter()
            .all(|l| matches!(l.level, Level::Speed(_))),
        "{:?}",
        engine.asked
    );
    assert_eq!(engine.asked[0].level, Level::Speed(1.0));
    assert_eq!(engine.asked[1].level, Level::Speed(2.0));
    assert_eq!(found.answer.outcome, CapacityOutcome::Found);
    let max = found.answer.max_rate.unwrap();
    assert!((3.8..=4.0).contains(&max), "{max}");
    assert_eq!(found.figures().unwrap().level, Level::Speed(max));
    let record = record(&found, &p);
    assert!(record.over_speed);
    assert_eq!(record.start, 1.0);
    assert_eq!(record.steps[0].speed, Some(1.0));
    // Late sends are judged as in any open-model step.
    assert!(p.load(Level::Speed(2.0)).late_after.is_some());
    assert_eq!(
        p.describe("connections"),
        "find-max p99<=100ms over the replay's speed"
    );
}

#[test]
fn a_probe_that_finds_no_target_ends_the_search_before_any_step() {
    let mut engine = fake(|_, _| Ended::Measured {
        outcome: 0.0,
        shard: shard(0.0, 1),
    });
    let searched = drive_on(&rates(None), &mut engine);
    assert!(searched.steps.is_empty());
    let why = searched.lost_target.unwrap();
    assert!(
        why.contains("give --start RATE") && why.ends_with("gone"),
        "{why}"
    );
}

#[test]
fn an_interrupt_keeps_the_steps_and_claims_nothing() {
    // Interrupted inside the third step: two steps, no answer yet.
    let mut engine = fake(|load, n| {
        if n == 3 {
            Ended::Interrupted
        } else {
            target(load)
        }
    });
    let searched = drive_on(&rates(Some(100.0)), &mut engine);
    assert!(searched.interrupted);
    assert_eq!(searched.steps.len(), 2);
    assert_eq!(searched.answer.outcome, CapacityOutcome::Interrupted);
    assert_eq!(searched.answer.max_rate, Some(200.0));
    // Its record says so, and its run claims no capacity: the highest
    // pass is context, and the warning says why.
    let kept = record(&searched, &rates(Some(100.0)));
    assert_eq!(kept.answer.outcome, CapacityOutcome::Interrupted);
    let mut run = Run::new(dyno_model::Kind::Http, "x");
    mark(&mut run, &kept, Unit::RequestsPerSec);
    assert_eq!(run.headline, None);
    assert!(run.metrics.iter().all(|m| m.name != "max_sustainable_rate"));
    let passing = run.metrics.iter().find(|m| m.name == "max_passing_rate");
    assert_eq!(
        passing.map(|m| (m.value, m.role)),
        Some((200.0, Some(Role::Context)))
    );
    assert_eq!(
        run.warnings
            .iter()
            .map(|w| w.code.as_str())
            .collect::<Vec<_>>(),
        ["interrupted"]
    );
}

#[test]
fn a_step_that_found_no_target_is_neither_judged_nor_kept() {
    // The target went away in the second step.
    let mut engine = fake(|load, n| {
        if n == 2 {
            Ended::Measured {
                outcome: 0.0,
                shard: shard(0.0, 1),
            }
        } else {
            target(load)
        }
    });
    let searched = drive_on(&rates(Some(100.0)), &mut engine);
    assert_eq!(searched.steps.len(), 1);
    assert_eq!(searched.steps[0].level, Level::Rate(100.0));
    assert_eq!(searched.lost_target.as_deref(), Some("gone"));
    assert_eq!(searched.answer.outcome, CapacityOutcome::Unfinished);
    assert_eq!(searched.answer.max_rate, Some(100.0));
}

#[test]
fn a_sweep_runs_on_the_same_loop_and_records_its_connections() {
    // 100/s a connection: 4 connections pass (400/s), 8 fail.
    let sweep = plan(Axis::Concurrency { from: 1, to: 64 });
    let mut engine = fake(|load, _| target(load));
    let searched = drive_on(&sweep, &mut engine);
    let levels: Vec<Level> = searched.steps.iter().map(|s| s.level).collect();
    assert_eq!(
        levels,
        [1, 2, 4, 8, 16].map(Level::Concurrency),
        "two fails past the knee end it"
    );
    assert!(engine.asked.iter().all(|l| l.late_after.is_none()));
    assert_eq!(searched.answer.outcome, CapacityOutcome::Found);
    assert_eq!(searched.figures().unwrap().level, Level::Concurrency(4));
    assert_eq!(searched.knee().unwrap().level, Level::Concurrency(8));
    assert!(searched.usl.is_some());
    let kept = record(&searched, &sweep);
    assert_eq!(kept.steps[2].connections, Some(4));
    assert_eq!(kept.steps[2].purpose, "sweep");
    assert_eq!((kept.start, kept.precision), (1.0, 0.0));
    let swept = kept.sweep.unwrap();
    assert_eq!((swept.from, swept.to), (1, 64));
    assert!(swept.usl.is_some());

    let mut run = Run::new(dyno_model::Kind::Http, "x");
    run.settings = serde_json::json!({});
    conclude(
        &mut run,
        &searched,
        &sweep,
        "GET http://x/",
        (Unit::RequestsPerSec, "connections"),
    );
    assert_eq!(
        run.description,
        "GET http://x/ find-max p99<=100ms over 1..64 connections"
    );
    assert_eq!(run.headline.as_deref(), Some("max_sustainable_rate"));
    assert_eq!(run.capacity().unwrap().steps.len(), 5);
}

#[test]
fn a_search_run_is_headed_by_its_capacity() {
    let mut run = Run::new(dyno_model::Kind::Http, "x");
    run.metrics.push(
        Metric::new(
            "requests_per_sec",
            Unit::RequestsPerSec,
            Direction::HigherIsBetter,
            400.0,
        )
        .primary(),
    );
    let searched = |answer| CapacityRecord {
        slo: "p99<=20ms".into(),
        answer: answer_record(answer),
        ..CapacityRecord::default()
    };
    mark(
        &mut run,
        &searched(Answer::Found {
            max: 400.0,
            above: 420.0,
        }),
        Unit::RequestsPerSec,
    );
    assert_eq!(run.headline.as_deref(), Some("max_sustainable_rate"));
    assert_eq!(run.metrics[0].name, "max_sustainable_rate");
    // Labelled with the target: compare matches only equal targets.
    assert_eq!(run.metrics[0].labels["slo"], "p99<=20ms");
    assert_eq!(run.metrics[2].labels["slo"], "p99<=20ms");
    assert_eq!(run.metrics[0].role, Some(Role::Primary));
    assert_eq!(run.metrics[1].role, Some(Role::Diagnostic));
    assert_eq!(run.metrics[2].name, "first_failing_rate");
    // A search the budget ended has a lower bound, not a capacity.
    let mut run = Run::new(dyno_model::Kind::Http, "x");
    mark(
        &mut run,
        &searched(Answer::Unfinished {
            max: Some(300.0),
            above: Some(400.0),
        }),
        Unit::FlowsPerSec,
    );
    assert_eq!(run.headline, None);
    assert_eq!(run.metrics[0].name, "max_passing_rate");
    assert_eq!(run.metrics[0].unit, Unit::FlowsPerSec);
    assert_eq!(run.metrics[0].role, Some(Role::Context));
    assert_eq!(run.warnings[0].code, "search_unfinished");
    // No pass, no capacity figure.
    let mut run = Run::new(dyno_model::Kind::Http, "x");
    mark(
        &mut run,
        &searched(Answer::NoneMeets { lowest: 5.0 }),
        Unit::RequestsPerSec,
    );
    assert!(run.metrics.is_empty());
    assert_eq!(run.headline, None);
    // Client-bound: no capacity claimed, even with a pass before.
    let mut run = Run::new(dyno_model::Kind::Http, "x");
    mark(
        &mut run,
        &searched(Answer::ClientBound {
            at: 380.0,
            max: Some(200.0),
        }),
        Unit::RequestsPerSec,
    );
    assert!(run.metrics.is_empty());
    assert_eq!(run.headline, None);
}

/// The other processes of a split step, as the store would give them:
/// their parts, or a barrier that fails.
struct Others {
    parts: Vec<Part>,
    barrier: Result<(), String>,
    reported: Vec<Part>,
}

impl Together for Others {
    fn count(&self) -> u32 {
        self.parts.len() as u32 + 1
    }
    fn start(&mut self, _label: &str) -> Result<SystemTime, String> {
        self.barrier.clone().map(|()| SystemTime::now())
    }
    fn exchange(&mut self, _label: &str, mine: &Part) -> Result<Vec<Part>, String> {
        self.reported.push(mine.clone());
        let mut all = vec![mine.clone()];
        all.extend(self.parts.iter().cloned());
        Ok(all)
    }
}

/// A split step at 50/s, this process's part ending as `mine` says.
fn split(others: &mut Others, mine: Ended<f64>) -> Measured<f64> {
    let mut mine = Some(mine);
    let mut engine = fake(move |_, _| mine.take().expect("one run"));
    let p = rates(Some(50.0));
    step(
        Some(others),
        "1",
        &p.slo,
        &mut engine,
        &p.load(Level::Rate(50.0)),
    )
    .unwrap()
}

#[test]
fn a_split_step_is_judged_on_every_part_or_ends_for_all() {
    let measured = |per_sec: f64| Ended::Measured {
        outcome: per_sec,
        shard: shard(per_sec, 1),
    };
    let mut others = Others {
        parts: vec![Part::Measured(shard(30.0, 1))],
        barrier: Ok(()),
        reported: Vec::new(),
    };
    let Measured::Step {
        observation,
        outcome,
        ..
    } = split(&mut others, measured(20.0))
    else {
        panic!("measured")
    };
    assert_eq!((observation.requests, outcome), (100, 20.0));
    assert!((observation.achieved - 50.0).abs() < 1e-9);
    // Another's interrupt ends the step everywhere.
    others.parts = vec![Part::Interrupted];
    assert!(matches!(
        split(&mut others, measured(20.0)),
        Measured::Interrupted
    ));
    // Another lost its target: the step is lost, naming it.
    others.parts = vec![Part::Lost("reset".into())];
    assert!(
        matches!(split(&mut others, measured(20.0)), Measured::Lost(w) if w == "segment 1/2: reset")
    );
    // This one's target refused it: the others hear it as a loss.
    others.parts = vec![Part::Measured(shard(30.0, 1))];
    assert!(
        matches!(split(&mut others, measured(0.0)), Measured::Lost(w) if w == "segment 0/2: gone")
    );
    assert_eq!(others.reported.last(), Some(&Part::Lost("gone".into())));
    // A group that cannot meet runs nothing.
    others.barrier = Err("segment 1/2 did not arrive".into());
    let before = others.reported.len();
    assert!(
        matches!(split(&mut others, measured(20.0)), Measured::Lost(w) if w.contains("did not arrive"))
    );
    assert_eq!(others.reported.len(), before);
}
