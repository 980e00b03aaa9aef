//! `--find-max` for `dyno http` and `dyno db run` alike: one wiring for
//! every engine and every axis of the search. The engine's command gives
//! what differs (how to run the search on its engine, how to make its
//! run, how a step's outcome is watched and printed); this module prints
//! one line per step as it ends, judges the watched server at the steps,
//! meets the other segments, saves the run and chooses the exit status.

use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant, SystemTime};

use anyhow::Result;
use dyno_load::capacity::{self, Level, Plan, Ran, Searched};
use dyno_load::shard::Together;
use dyno_model::Run;
use jiff::Timestamp;

use super::interrupt::{Interrupt, Second};
use super::watch::{Window, Windows};
use super::{finish, segment};
use crate::ExitStatus;

/// What differs from engine to engine in a search's wiring, besides the
/// engine itself.
pub(super) struct Wiring<'a, O> {
    /// What the search's rates count (`req/s`, `flows/s`, `tps`), and the
    /// engine's word for its concurrency (`connections`, `clients`).
    pub unit: &'a str,
    pub what: &'a str,
    /// Whether the engine's progress line is rewritten in place on the
    /// terminal, and so is cleared before each step's line.
    pub clear_line: bool,
    /// The measured window of a step's outcome, as the watcher judges it.
    pub window: &'a dyn Fn(&O) -> Window,
    /// When a step's outcome started (the segments' record of the step
    /// whose figures the run keeps).
    pub started_at: fn(&O) -> SystemTime,
    pub report: fn(&Run) -> String,
}

/// Where a search's run goes: the save flags, the store, this process's
/// segment (a split search meets the others at every step) and what of
/// the server is watched.
pub(super) struct Outputs<'a> {
    pub save: crate::cli::SaveArgs,
    pub store: Option<Box<dyn dyno_store::Store>>,
    pub segment: Option<&'a crate::settings::segment::Plan>,
    pub watch: Option<super::watch::Checked>,
}

/// `--find-max`: the steps, each printed as it ends, then the run (the
/// step at the answer, the search in its record), printed and saved.
/// `steps` makes the engine the search runs on (given the interrupt
/// flag); `record` makes the run of what it found (given the search's
/// length). Exit 1 when nothing met the objective, the search could not
/// judge or the target went away, 130 when interrupted (what was found is
/// kept, no capacity claimed).
pub(super) fn find_max<G: capacity::Engine>(
    plan: &Plan,
    wiring: Wiring<'_, G::Outcome>,
    steps: impl FnOnce(Arc<AtomicBool>) -> Result<G, G::Error>,
    record: impl FnOnce(&Searched<G::Outcome>, Duration) -> Option<Run>,
    outputs: Outputs<'_>,
) -> Result<ExitStatus>
where
    G::Error: Into<anyhow::Error>,
{
    let Outputs {
        mut save,
        mut store,
        segment,
        watch,
    } = outputs;
    let interrupt = Interrupt::install(Second::Exits)?;
    // Watched over the whole search; judged at its steps.
    let watcher = super::watch::start(watch)?;
    let started_at = Timestamp::now();
    let started = Instant::now();
    eprintln!("dyno: {}", plan.announcement(wiring.what));
    let clear = || {
        if wiring.clear_line {
            eprint!("\r\x1b[2K");
        }
    };
    let mut shown = 0;
    let on_step = |ran: &Ran<G::Outcome>| {
        clear();
        shown += 1;
        eprintln!("{}", ran.line(shown, wiring.unit, wiring.what));
    };
    let mut met = segment::Steps::of(segment, store.as_deref_mut());
    let group = met.as_mut().map(|s| s as &mut dyn Together);
    let stop = interrupt.flag();
    let searched = steps(Arc::clone(&stop))
        .and_then(|mut engine| capacity::drive(plan, &mut engine, group, &stop, on_step));
    clear();
    let searched = searched.map_err(Into::into)?;
    let watched = watcher.stop();
    let Some(mut run) = record(&searched, started.elapsed()) else {
        return nothing_measured(searched.lost_target);
    };
    if let Some(windows) = windows(&searched, &wiring) {
        let mut capacity = run.capacity();
        let steps = capacity.as_mut().map(|c| &mut c.steps);
        super::watch::record_search(&mut run, steps, &watched, windows);
        if let Some(capacity) = &capacity {
            run.set_capacity(capacity);
        }
    }
    run.started_at = started_at;
    run.duration_ns = started.elapsed().as_nanos() as u64;
    let figures_at = searched.figures().map(|f| (wiring.started_at)(&f.outcome));
    segment::Steps::mark(met, &mut run, figures_at, &mut save);
    let run = finish(run, &save, store, wiring.report)?;
    Ok(exit_status(&searched, &run.id))
}

/// How a search that saved `run_id` ends: the target lost (1), an
/// interrupt (130, what was found kept, no capacity claimed), no level
/// meeting the objective or an unstable search (1), or an answer (0).
fn exit_status<O>(searched: &Searched<O>, run_id: &dyno_model::RunId) -> ExitStatus {
    if let Some(why) = &searched.lost_target {
        eprintln!("dyno: the search stopped: {why}; the steps so far were kept in {run_id}");
        return ExitStatus::ChecksFailed;
    }
    if searched.interrupted {
        eprintln!("dyno: interrupted; the steps so far were kept in {run_id}");
        return ExitStatus::Interrupted;
    }
    if searched.failed() {
        ExitStatus::ChecksFailed
    } else {
        ExitStatus::Success
    }
}

/// How a search that measured no step ends: the reason it could not (the
/// target, or the other segments, gone), else an interrupt.
fn nothing_measured(lost: Option<String>) -> Result<ExitStatus> {
    match lost {
        Some(why) => anyhow::bail!("the search stopped before any step: {why}; nothing was saved"),
        None => {
            eprintln!("dyno: interrupted before any step was measured; nothing was saved");
            Ok(ExitStatus::Interrupted)
        }
    }
}

/// The windows a watched search is judged over: the step whose figures
/// the run keeps, the first failing step above the answer (named by its
/// level), if one ran, and every step's, in the record's order.
fn windows<O>(found: &Searched<O>, wiring: &Wiring<'_, O>) -> Option<Windows> {
    let figures = found.figures()?;
    let window = wiring.window;
    let knee = found.knee().map(|k| {
        let level = match k.level {
            Level::Rate(rate) => format!("{rate:.0} {}", wiring.unit),
            Level::Concurrency(c) => format!("{c} {}", capacity::counted(c, wiring.what)),
            Level::Speed(speed) => format!("{speed}× the log"),
            Level::Probe => "the probe".to_owned(),
        };
        (level, window(&k.outcome))
    });
    Some(Windows {
        answer: window(&figures.outcome),
        knee,
        steps: found.steps.iter().map(|s| window(&s.outcome)).collect(),
    })
}
