//! `--find-max` and its flags (shared by `dyno http` and `dyno db run`)
//! resolved into the capacity search's plan, and `--rate-plan`'s checks.

use std::time::Duration;

use anyhow::{Result, bail};
use dyno_load::capacity::Plan;

use crate::cli::FindMaxArgs;
use crate::settings::segment::humantime;

/// Each step's warm-up when `--warmup` gives none.
pub(crate) const STEP_WARMUP: Duration = Duration::from_secs(1);

/// The plan, or `None` without `--find-max`. `warmup` is the command's own
/// (each step's, when given, `0s` included; [`STEP_WARMUP`] otherwise); `max_error_rate` (percent) is the error
/// target when `--slo` has none; `excluded` names the command's flags a
/// search cannot go with, and whether each was given.
pub(crate) fn plan(
    args: FindMaxArgs,
    warmup: Option<Duration>,
    max_error_rate: f64,
    excluded: &[(&str, bool)],
) -> Result<Option<Plan>> {
    let FindMaxArgs {
        find_max,
        slo,
        start,
        step,
        precision,
        budget,
    } = args;
    if !find_max {
        return Ok(None);
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
            humantime(budget),
            humantime(step)
        );
    }
    Ok(Some(Plan {
        slo,
        slo_text,
        start,
        precision: precision / 100.0,
        step,
        warmup: warmup.unwrap_or(STEP_WARMUP),
        budget,
    }))
}

/// Checks a search split over segments (`--find-max --segment`), and
/// adds what every segment's search must share to the settings `shared`
/// publishes at the barrier: the objective, the start, the steps, the
/// precision, the budget and a sweep's range, so that every segment's
/// search takes the same steps.
pub(crate) fn segmented(
    segment: &crate::settings::segment::Plan,
    search: Option<&Plan>,
    sweep: Option<&dyno_load::sweep::Plan>,
    unit: &str,
    shared: &mut crate::settings::segment::Settings,
) -> Result<()> {
    if search.is_none() && sweep.is_none() {
        return Ok(());
    }
    if segment.start_at.is_some() {
        bail!(
            "--find-max over segments meets the other segments before each step at the barrier: drop --start-at (every step starts together once all {} have arrived)",
            segment.segment.count
        );
    }
    if let Some(sweep) = sweep
        && sweep.from < segment.segment.count
    {
        bail!(
            "-c {}..{} cannot be shared out over {} segments: every segment needs {unit} at each step (-c {}..{} or more)",
            sweep.from,
            sweep.to,
            segment.segment.count,
            segment.segment.count,
            sweep.to.max(segment.segment.count)
        );
    }
    if let Some(plan) = search {
        shared
            .put("find_max", "rates")
            .put("slo", &plan.slo_text)
            .opt("start", plan.start)
            .put("precision", plan.precision)
            .put("step", humantime(plan.step))
            .put("step_warmup", humantime(plan.warmup))
            .put("budget", humantime(plan.budget));
    }
    if let Some(plan) = sweep {
        shared
            .put("find_max", format!("{unit} {}..{}", plan.from, plan.to))
            .put("slo", &plan.slo_text)
            .put("step", humantime(plan.step))
            .put("step_warmup", humantime(plan.warmup))
            .put("budget", humantime(plan.budget));
    }
    Ok(())
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
