//! What `--find-max` prints while it searches, for `dyno http` and `dyno
//! db run` alike: one line per step as it ends.

use dyno_load::capacity::{Ran, Searched};
use dyno_load::search::Answer;

use crate::ExitStatus;
use dyno_load::slo::human_duration;

/// How a finished search or sweep ends, once its run is saved under an
/// id.
pub(super) type Status = Box<dyn Fn(&dyno_model::RunId) -> ExitStatus>;

/// The line that opens a search.
pub(super) fn announce(plan: &dyno_load::capacity::Plan) {
    eprintln!(
        "dyno: searching for the highest rate that meets {} ({} steps, budget {})",
        plan.slo,
        crate::settings::segment::humantime(plan.step),
        crate::settings::segment::humantime(plan.budget)
    );
}

/// One finished step: `step 3 (bisect) 41200 req/s: achieved 41198, p99
/// 18ms: pass`.
pub(super) fn step_line<O>(n: usize, ran: &Ran<O>, unit: &str) -> String {
    let s = &ran.step;
    let o = &s.observation;
    let p99 = o
        .percentile(99.0)
        .map_or_else(|| "–".to_owned(), human_duration);
    let verdict = if s.passed() {
        "pass".to_owned()
    } else {
        let why: Vec<String> = s.why.iter().map(|w| w.describe()).collect();
        format!("fail ({})", why.join("; "))
    };
    format!(
        "step {n} ({}) {} {unit}: achieved {}, p99 {p99}: {verdict}",
        s.purpose.name(),
        dyno_report::short_rate(s.rate),
        dyno_report::short_rate(o.achieved),
    )
}

/// How a search that saved `run_id` ends: the target lost (1), an
/// interrupt (130, what was found kept, no capacity claimed), no rate
/// meeting the objective or an unstable search (1), or an answer (0).
pub(super) fn exit_status<O>(searched: &Searched<O>, run_id: &dyno_model::RunId) -> ExitStatus {
    ended(
        "search",
        searched.lost_target.as_deref(),
        searched.interrupted,
        // No rate meets the objective, or the search could not judge.
        matches!(
            searched.answer,
            Answer::NoneMeets { .. } | Answer::Unstable { .. }
        ),
        run_id,
    )
}

/// How a search or sweep that measured no step ends: the reason it could
/// not (the target, or the other segments, gone), else an interrupt.
pub(super) fn nothing_measured(lost: Option<String>) -> anyhow::Result<ExitStatus> {
    match lost {
        Some(why) => anyhow::bail!("the search stopped before any step: {why}; nothing was saved"),
        None => {
            eprintln!("dyno: interrupted before any step was measured; nothing was saved");
            Ok(ExitStatus::Interrupted)
        }
    }
}

/// How a search or sweep ends, said on stderr where it did not finish.
fn ended(
    what: &str,
    lost: Option<&str>,
    interrupted: bool,
    none_meets: bool,
    run_id: &dyno_model::RunId,
) -> ExitStatus {
    if let Some(why) = lost {
        eprintln!("dyno: the {what} stopped: {why}; the steps so far were kept in {run_id}");
        return ExitStatus::ChecksFailed;
    }
    if interrupted {
        eprintln!("dyno: interrupted; the steps so far were kept in {run_id}");
        return ExitStatus::Interrupted;
    }
    if none_meets {
        ExitStatus::ChecksFailed
    } else {
        ExitStatus::Success
    }
}

/// The line that opens a sweep of connections.
pub(super) fn announce_sweep(plan: &dyno_load::sweep::Plan) {
    eprintln!(
        "dyno: sweeping {}..{} connections (closed model, doubling) for the highest throughput that meets {} ({} steps, budget {})",
        plan.from,
        plan.to,
        plan.slo,
        crate::settings::segment::humantime(plan.step),
        crate::settings::segment::humantime(plan.budget)
    );
}

/// One finished step of a sweep: `step 3: 4 connections, 41.2k req/s,
/// p99 18ms: pass`.
pub(super) fn sweep_line<O>(n: usize, ran: &dyno_load::sweep::Ran<O>, unit: &str) -> String {
    let o = &ran.observation;
    let p99 = o
        .percentile(99.0)
        .map_or_else(|| "–".to_owned(), human_duration);
    let verdict = if ran.passed() {
        "pass".to_owned()
    } else {
        let why: Vec<String> = ran.why.iter().map(|w| w.describe()).collect();
        format!("fail ({})", why.join("; "))
    };
    format!(
        "step {n}: {} connection{}, {} {unit}, p99 {p99}: {verdict}",
        ran.connections,
        if ran.connections == 1 { "" } else { "s" },
        dyno_report::short_rate(o.achieved),
    )
}

/// How a sweep that saved `run_id` ends, as [`exit_status`] says for a
/// search.
pub(super) fn sweep_exit_status<O>(
    swept: &dyno_load::sweep::Swept<O>,
    run_id: &dyno_model::RunId,
) -> ExitStatus {
    ended(
        "sweep",
        swept.lost_target.as_deref(),
        swept.interrupted,
        swept.answer().outcome == dyno_model::record::CapacityOutcome::NoneMeets,
        run_id,
    )
}

/// The windows a watched search is judged over: the step whose figures
/// the run keeps, the first failing step above the answer (named by its
/// rate in `unit`), if one ran, and every step's, in the record's order.
/// `window` reads a step's outcome.
pub(super) fn search_windows<O>(
    found: &Searched<O>,
    unit: &str,
    window: impl Fn(&O) -> super::watch::Window,
) -> Option<super::watch::Windows> {
    let figures = found.figures()?;
    let above = match found.answer {
        Answer::Found { above, .. }
        | Answer::Unfinished {
            above: Some(above), ..
        } => Some(above),
        _ => None,
    };
    let knee = above.and_then(|above| {
        found
            .steps
            .iter()
            .rev()
            .find(|s| s.step.rate == above && !s.step.passed())
    });
    Some(super::watch::Windows {
        answer: window(&figures.outcome),
        knee: knee.map(|k| (format!("{:.0} {unit}", k.step.rate), window(&k.outcome))),
        steps: found.steps.iter().map(|s| window(&s.outcome)).collect(),
    })
}

/// [`search_windows`] of a sweep: the step whose figures the run keeps,
/// the first failing step after the best (named by its connections or
/// clients, `what`), and every step's.
pub(super) fn sweep_windows<O>(
    swept: &dyno_load::sweep::Swept<O>,
    what: &str,
    window: impl Fn(&O) -> super::watch::Window,
) -> Option<super::watch::Windows> {
    let figures = swept.figures()?;
    let after = swept.best().map_or(0, |b| b.connections);
    let knee = swept
        .steps
        .iter()
        .find(|s| !s.passed() && s.connections > after);
    Some(super::watch::Windows {
        answer: window(&figures.outcome),
        knee: knee.map(|k| (format!("{} {what}", k.connections), window(&k.outcome))),
        steps: swept.steps.iter().map(|s| window(&s.outcome)).collect(),
    })
}
