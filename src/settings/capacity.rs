//! `--find-max` and its flags (shared by `dyno http` and `dyno db run`)
//! resolved into the capacity search's plan, and `--rate-plan`'s checks.

use std::time::Duration;

use anyhow::{Result, bail};
use dyno_load::capacity::{Axis, Plan};

use crate::cli::FindMaxArgs;
use dyno_model::units;

/// Each step's warm-up when `--warmup` gives none.
pub(crate) const STEP_WARMUP: Duration = Duration::from_secs(1);

/// What a command does: one run, or a capacity search.
#[derive(Debug, Clone)]
pub(crate) enum Mode {
    Run,
    /// `--find-max`: a search of rates, or with `-c FROM..TO` of
    /// concurrency.
    FindMax(Plan),
}

/// The mode from `--find-max` and its flags. `range`: `-c FROM..TO`, a
/// range of the concurrency (`what`: connections, clients) that makes the
/// search a closed-model sweep. `warmup` is the command's own (each
/// step's, when given, `0s` included; [`STEP_WARMUP`] otherwise);
/// `max_error_rate` (percent) is the error target when `--slo` has none;
/// `excluded` names the command's flags a search cannot go with, and
/// whether each was given.
pub(crate) fn mode(
    args: FindMaxArgs,
    (range, what): (Option<(u32, u32)>, &str),
    warmup: Option<Duration>,
    max_error_rate: f64,
    excluded: &[(&str, bool)],
) -> Result<Mode> {
    let FindMaxArgs {
        find_max,
        slo,
        start,
        step,
        precision,
        budget,
    } = args;
    if !find_max {
        if let Some((from, to)) = range {
            bail!(
                "-c {from}..{to} is a range of {what} for a capacity search to sweep: add --find-max --slo OBJECTIVE, or give one number"
            );
        }
        return Ok(Mode::Run);
    }
    if let Some((flag, _)) = excluded.iter().find(|(_, given)| *given) {
        bail!(
            "--find-max chooses the rate and the length of each step itself: drop {flag} (--start, --step and --budget steer the search)"
        );
    }
    // clap requires --slo with --find-max, and has checked it.
    let slo_text = slo.unwrap_or_default();
    let mut slo: dyno_load::Slo = slo_text.parse()?;
    if slo.errors.is_none() {
        slo.errors = Some((max_error_rate / 100.0, false));
    }
    if budget < step {
        bail!(
            "--budget {} is shorter than one --step {}: give a budget of several steps (the default is 3m)",
            units::duration_flag(budget),
            units::duration_flag(step)
        );
    }
    let axis = match range {
        Some((from, to)) => {
            if start.is_some() {
                bail!(
                    "--start is the first rate of a rate search; a sweep of -c {from}..{to} starts at {from} {what}: drop --start"
                );
            }
            Axis::Concurrency { from, to }
        }
        None => Axis::Rate {
            start,
            precision: precision / 100.0,
        },
    };
    Ok(Mode::FindMax(Plan {
        slo,
        slo_text,
        step,
        warmup: warmup.unwrap_or(STEP_WARMUP),
        budget,
        axis,
    }))
}

/// Checks a search split over segments (`--find-max --segment`), and
/// adds what every segment's search must share to the settings `shared`
/// publishes at the barrier: the objective, the axis (the start and the
/// precision, or a sweep's range of `what`), the steps and the budget, so
/// that every segment's search takes the same steps.
pub(crate) fn segmented(
    segment: &crate::settings::segment::Plan,
    mode: &Mode,
    what: &str,
    shared: &mut crate::settings::segment::Settings,
) -> Result<()> {
    let Mode::FindMax(plan) = mode else {
        return Ok(());
    };
    if segment.start_at.is_some() {
        bail!(
            "--find-max over segments meets the other segments before each step at the barrier: drop --start-at (every step starts together once all {} have arrived)",
            segment.segment.count
        );
    }
    let mut search = Search {
        slo: &plan.slo_text,
        find_max: "rates",
        start: None,
        precision: None,
        from: None,
        to: None,
        step_ns: plan.step.as_nanos() as u64,
        step_warmup_ns: plan.warmup.as_nanos() as u64,
        budget_ns: plan.budget.as_nanos() as u64,
    };
    match plan.axis {
        Axis::Rate { start, precision } => {
            search.start = start;
            search.precision = Some(precision);
        }
        Axis::Speed { start, precision } => {
            search.find_max = "speed";
            search.start = Some(start);
            search.precision = Some(precision);
        }
        Axis::Concurrency { from, to } => {
            let count = segment.segment.count;
            if from < count {
                bail!(
                    "-c {from}..{to} cannot be shared out over {count} segments: every segment needs {what} at each step (-c {count}..{} or more)",
                    to.max(count)
                );
            }
            search.find_max = what;
            (search.from, search.to) = (Some(from), Some(to));
        }
    }
    shared.add(&Published { capacity: search });
    Ok(())
}

/// What every segment of a split search must share, published under
/// `capacity` (where the run's record keeps its search): the objective as
/// given, what is searched (`rates`, or the concurrency swept), a rate
/// search's first rate as given (none: probed) and precision, a sweep's
/// range, the steps and the budget.
#[derive(serde::Serialize)]
struct Published<'a> {
    capacity: Search<'a>,
}

#[derive(serde::Serialize)]
struct Search<'a> {
    slo: &'a str,
    find_max: &'a str,
    start: Option<f64>,
    precision: Option<f64>,
    from: Option<u32>,
    to: Option<u32>,
    step_ns: u64,
    step_warmup_ns: u64,
    budget_ns: u64,
}

/// Refuses `--rate-plan` beside the flags it replaces: `excluded` names
/// the command's flags that set a rate or a length, and whether each was
/// given.
pub(crate) fn rate_plan(
    plan: Option<&dyno_load::plan::RatePlan>,
    excluded: &[(&str, bool)],
) -> Result<()> {
    if plan.is_some()
        && let Some((flag, _)) = excluded.iter().find(|(_, given)| *given)
    {
        bail!(
            "--rate-plan sets the rate and the length of the run, stage by stage: drop {flag} (a first stage at a low rate serves as a warm-up, with figures of its own)"
        );
    }
    Ok(())
}
