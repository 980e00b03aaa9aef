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
/// (each step's, when given); `max_error_rate` (percent) is the error
/// target when `--slo` has none; `excluded` names the command's flags a
/// search cannot go with, and whether each was given.
pub(crate) fn plan(
    args: FindMaxArgs,
    warmup: Duration,
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
        warmup: if warmup.is_zero() {
            STEP_WARMUP
        } else {
            warmup
        },
        budget,
    }))
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
