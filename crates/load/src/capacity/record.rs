//! The run's record of a capacity search, and what the search makes of
//! the run: its headline, its warnings, its description.

use dyno_model::names::{capacity as name, label};
use dyno_model::record::{
    CapacityAnswer, CapacityOutcome, CapacityRecord, CapacityStep, ConnectionSweep, LatencyLimit,
    Objective, UslSummary,
};
use dyno_model::{Direction, Metric, Role, Run, Unit};

use super::{Axis, Level, Plan, Ran, Searched};
use crate::search::{self, Answer, Why};
use crate::slo::Slo;

/// The run's record of the search: what it was asked, how it ended and
/// every step it ran.
pub fn record<O>(searched: &Searched<O>, plan: &Plan) -> CapacityRecord {
    let (start, start_probed, precision, sweep) = match plan.axis {
        Axis::Rate { precision, .. } | Axis::Speed { precision, .. } => {
            let (start, probed) = searched.start.unwrap_or_default();
            (start, probed, precision, None)
        }
        Axis::Concurrency { from, to } => (
            f64::from(from),
            false,
            0.0,
            Some(ConnectionSweep {
                from: u64::from(from),
                to: u64::from(to),
                usl: searched.usl.as_ref().map(|fit| UslSummary {
                    sigma: fit.sigma,
                    kappa: fit.kappa,
                    lambda: fit.lambda,
                    r_squared: fit.r_squared,
                    peak_connections: fit.peak_n,
                    peak_rate: fit.peak_throughput,
                }),
            }),
        ),
    };
    CapacityRecord {
        slo: plan.slo_text.clone(),
        objective: Some(objective(&plan.slo)),
        start,
        start_probed,
        precision,
        step_ns: plan.step.as_nanos() as u64,
        step_warmup_ns: plan.warmup.as_nanos() as u64,
        budget_ns: plan.budget.as_nanos() as u64,
        answer: searched.answer.clone(),
        steps: searched.steps.iter().map(step_record).collect(),
        sweep,
        over_speed: matches!(plan.axis, Axis::Speed { .. }),
    }
}

/// The objective as the record keeps it.
pub fn objective(slo: &Slo) -> Objective {
    Objective {
        latency: slo
            .latency
            .iter()
            .map(|t| LatencyLimit {
                percentile: t.percentile,
                limit_ns: u64::try_from(t.limit.as_nanos()).unwrap_or(u64::MAX),
                strict: t.strict,
            })
            .collect(),
        max_error_share: slo.errors.map(|(share, _)| share),
    }
}

/// Makes `run`, the run an engine recorded of the search's
/// [`Searched::figures`] step, the run of the whole search: described as
/// `subject` searched ([`Plan::describe`]; `what`: the engine's word for
/// its concurrency), headed by its capacity in `unit` ([`mark`]), and
/// holding the search's record.
pub fn conclude<O>(
    run: &mut Run,
    searched: &Searched<O>,
    plan: &Plan,
    subject: &str,
    (unit, what): (Unit, &str),
) {
    run.description = format!("{subject} {}", plan.describe(what));
    let capacity = record(searched, plan);
    mark(run, &capacity, unit);
    run.set_capacity(&capacity);
}

/// Makes `run` (the figures of [`Searched::figures`]'s step) the run of a
/// search: its primary metrics become diagnostics, which explain the
/// answer, and only a search that found its answer claims a capacity:
/// `max_sustainable_rate` (the highest pass) is then the headline, in
/// `unit`, with `first_failing_rate` (the lowest fail) as context; both
/// are labelled with the objective (`slo`), so that `compare` matches
/// capacities only at the same target.
///
/// Every other ending claims none. A search the budget (or a lost target)
/// ended keeps its highest pass as `max_passing_rate`, a lower bound,
/// as context (not compared), with a `search_unfinished` warning; one an
/// interrupt ended does the same with the `interrupted` warning. A
/// client-bound search has neither figure: what passed before the client
/// ran out measured the client as much as the server.
pub fn mark(run: &mut Run, searched: &CapacityRecord, unit: Unit) {
    let answer = &searched.answer;
    let labelled = |mut m: Metric| {
        m.labels.insert(label::SLO.into(), searched.slo.clone());
        m
    };
    for m in &mut run.metrics {
        if m.role == Some(Role::Primary) {
            m.role = Some(Role::Diagnostic);
        }
    }
    // The step's own headline explains; it does not answer.
    run.headline = None;
    let steps = searched.steps.len();
    match answer.outcome {
        CapacityOutcome::ClientBound | CapacityOutcome::NoneMeets => {}
        CapacityOutcome::Found => {
            if let Some(max) = answer.max_rate {
                run.metrics.insert(
                    0,
                    labelled(
                        Metric::new(
                            name::MAX_SUSTAINABLE_RATE,
                            unit,
                            Direction::HigherIsBetter,
                            max,
                        )
                        .primary(),
                    ),
                );
                run.headline = Some(name::MAX_SUSTAINABLE_RATE.into());
            }
        }
        CapacityOutcome::Unfinished | CapacityOutcome::Interrupted | CapacityOutcome::Unstable => {
            if let Some(max) = answer.max_rate {
                run.metrics.insert(
                    0,
                    labelled(
                        Metric::new(name::MAX_PASSING_RATE, unit, Direction::HigherIsBetter, max)
                            .context(),
                    ),
                );
            }
            run.warnings.push(match answer.outcome {
                CapacityOutcome::Interrupted => CapacityWarning::Interrupted { steps }.into(),
                CapacityOutcome::Unstable => CapacityWarning::Unstable {
                    cause: answer.cause.clone().unwrap_or_default(),
                }
                .into(),
                _ => CapacityWarning::Unfinished { steps }.into(),
            });
        }
    }
    if let Some(above) = answer.above_rate
        && answer.outcome != CapacityOutcome::ClientBound
    {
        run.metrics.push(labelled(
            Metric::new(
                name::FIRST_FAILING_RATE,
                unit,
                Direction::HigherIsBetter,
                above,
            )
            .context(),
        ));
    }
}

/// What makes a search's run claim no capacity, as its warnings say.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CapacityWarning {
    /// An interrupt ended the search after `steps` steps.
    Interrupted { steps: usize },
    /// The budget (or the target going away) ended it after `steps`.
    Unfinished { steps: usize },
    /// Repeated steps disagreed; `cause` is [`search::Cause::code`]'s.
    Unstable { cause: String },
}

impl dyno_model::Judgement for CapacityWarning {
    fn code(&self) -> &'static str {
        match self {
            CapacityWarning::Interrupted { .. } => "interrupted",
            CapacityWarning::Unfinished { .. } => "search_unfinished",
            CapacityWarning::Unstable { .. } => "search_unstable",
        }
    }
}

impl std::fmt::Display for CapacityWarning {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let steps = |n: usize| format!("{n} step{}", if n == 1 { "" } else { "s" });
        match self {
            CapacityWarning::Interrupted { steps: n } => write!(
                f,
                "the search was stopped by an interrupt (Ctrl-C, SIGTERM or SIGHUP) after {}: no capacity is claimed, and its steps are kept as diagnostics; run it to its end for an answer",
                steps(*n)
            ),
            CapacityWarning::Unfinished { steps: n } => write!(
                f,
                "the search ended after {} before its bracket was confirmed: its highest pass is a lower bound (max_passing_rate), not a capacity; give a longer --budget or a --start nearer the answer",
                steps(*n)
            ),
            CapacityWarning::Unstable { cause } => write!(
                f,
                "repeated steps kept disagreeing, so no capacity is claimed: {}",
                match cause.as_str() {
                    name::CAUSE_MACHINE_BUSY =>
                        "other work took the client's CPU during them (the machine was busy); stop it, or run the client on a machine of its own",
                    _ =>
                        "nothing changed on the client's side, so the target's capacity moved during the search (other load on it, caches, a neighbour); search again when it holds still",
                }
            ),
        }
    }
}

/// The reasons' codes ([`search::Why::code`]), for the record.
pub fn failed_on(why: &[search::Why]) -> Vec<String> {
    why.iter().map(|w| w.code().to_owned()).collect()
}

/// The record of a search's answer.
pub fn answer_record(answer: Answer) -> CapacityAnswer {
    match answer {
        Answer::Found { max, above } => CapacityAnswer {
            outcome: CapacityOutcome::Found,
            max_rate: Some(max),
            above_rate: Some(above),
            ..CapacityAnswer::default()
        },
        Answer::Unfinished { max, above } => CapacityAnswer {
            outcome: CapacityOutcome::Unfinished,
            max_rate: max,
            above_rate: above,
            ..CapacityAnswer::default()
        },
        Answer::NoneMeets { lowest } => CapacityAnswer {
            outcome: CapacityOutcome::NoneMeets,
            lowest_rate: Some(lowest),
            ..CapacityAnswer::default()
        },
        Answer::Unstable { max, above, cause } => CapacityAnswer {
            outcome: CapacityOutcome::Unstable,
            max_rate: max,
            above_rate: above,
            cause: Some(cause.code().to_owned()),
            ..CapacityAnswer::default()
        },
        Answer::ClientBound { at, max } => CapacityAnswer {
            outcome: CapacityOutcome::ClientBound,
            max_rate: max,
            client_bound_at: Some(at),
            ..CapacityAnswer::default()
        },
    }
}

fn step_record<O>(ran: &Ran<O>) -> CapacityStep {
    let o = &ran.observation;
    let ns = |p: f64| o.percentile(p).map_or(0, |d| d.as_nanos() as u64);
    CapacityStep {
        purpose: ran.purpose.name().to_owned(),
        connections: match ran.level {
            Level::Concurrency(c) => Some(u64::from(c)),
            Level::Probe | Level::Rate(_) | Level::Speed(_) => None,
        },
        speed: match ran.level {
            Level::Speed(s) => Some(s),
            Level::Probe | Level::Rate(_) | Level::Concurrency(_) => None,
        },
        requested: o.requested,
        achieved: o.achieved,
        p50_ns: ns(50.0),
        p99_ns: ns(99.0),
        p999_ns: ns(99.9),
        requests: o.requests,
        errors: o.errors,
        sends: o.sends,
        late: o.late,
        send_lag_p99_ns: ran.extra.send_lag_p99_ns,
        client_cpu_percent: ran.extra.client_cpu_percent,
        client_wait_percent: ran.extra.client_wait_percent,
        server_cpu_percent: None,
        target_cpu_percent: None,
        passed: ran.passed(),
        why: ran.why.iter().map(Why::describe).collect(),
        failed_on: failed_on(&ran.why),
    }
}
