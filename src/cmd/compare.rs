//! `dyno compare`: sides resolved from the store → the comparison engine
//! (`dyno_stats::versus`) → the table, Markdown, CSV or JSON → the store.

use std::time::Instant;

use anyhow::{Context as _, Result, bail};
use dyno_model::{Kind, Run};
use dyno_stats::versus::{self, Group, Options};
use dyno_store::{Filter, Store};

use super::{Context, print};
use crate::ExitStatus;
use crate::cli::{CompareArgs, CompareFormat};
use crate::settings::{self, compare::Pick, compare::Side};

pub(super) fn run(ctx: &Context, args: CompareArgs) -> Result<ExitStatus> {
    let CompareArgs {
        sides,
        baseline,
        last,
        filter,
        noise,
        seed,
        format,
        fail_if_worse,
        score,
        no_save,
        json,
        labels,
    } = args;
    let format = if json { CompareFormat::Json } else { format };
    let common = super::history::filter(filter);
    // A comparison that is not saved only reads the store.
    let mut store = if no_save {
        ctx.read_store()?
    } else {
        ctx.open_store()?
    };
    let started = Instant::now();
    let sides: Vec<String> = baseline.into_iter().chain(sides).collect();
    let groups = select(&store, &sides, last, &common)?;
    let options = Options {
        noise_band: noise / 100.0,
        seed: seed.unwrap_or(versus::DEFAULT_SEED),
        ..Options::default()
    };
    let mut run = versus::compare_runs(&groups, &options)?;
    run.environment = super::environment();
    run.duration_ns = started.elapsed().as_nanos() as u64;
    run.tags = labels;

    match format {
        CompareFormat::Text => print(&dyno_report::compare_report(&run))?,
        CompareFormat::Markdown => print(&dyno_report::compare_markdown(&run))?,
        CompareFormat::Csv => {
            let mut out = Vec::new();
            dyno_report::compare_csv(&run, &mut out)?;
            print(&String::from_utf8(out).expect("CSV of UTF-8 text is UTF-8"))?;
        }
        CompareFormat::Json => print(&(serde_json::to_string_pretty(&run)? + "\n"))?,
    }
    if !no_save {
        save(&mut store, &run, format)?;
    }
    let Some(pct) = fail_if_worse else {
        return Ok(ExitStatus::Success);
    };
    match gate(&run, pct, score) {
        Gate::Pass => Ok(ExitStatus::Success),
        Gate::Fail => Ok(ExitStatus::ChecksFailed),
        Gate::CannotJudge(why) => bail!(why),
    }
}

/// What `--fail-if-worse` decided.
#[derive(Debug, PartialEq)]
enum Gate {
    /// Every primary figure it could test is within the threshold.
    Pass,
    /// A tested primary figure (or the score) is worse by more than the
    /// threshold with confidence: its whole interval lies beyond it.
    Fail,
    /// Nothing it was asked to judge could be tested: it refuses rather
    /// than pass what it never looked at.
    CannotJudge(String),
}

fn save(store: &mut dyn Store, run: &Run, format: CompareFormat) -> Result<()> {
    store.save(run).with_context(|| {
        format!(
            "the comparison was made but could not be saved in {}",
            store.location()
        )
    })?;
    if format == CompareFormat::Text {
        eprintln!("saved as {} (dyno show {})", run.id, run.id);
    }
    Ok(())
}

/// Judges the comparison for `--fail-if-worse pct` ([`dyno_report::gate`]),
/// saying on stderr what failed and what could not be tested. When nothing
/// at all could be tested the gate refuses (exit 2) and says how to get a
/// verdict.
fn gate(run: &Run, pct: f64, score: bool) -> Gate {
    let found = dyno_report::gate(run, pct, score);
    for regression in &found.regressions {
        eprintln!("regression: {regression}");
    }
    let needed = found.runs_needed;
    if found.judged == 0 {
        return Gate::CannotJudge(format!(
            "--fail-if-worse could not judge anything: no primary figure could be tested ({}). A verdict needs repeated runs: at least {needed} runs a side, saved under one tag per side (for i in $(seq {needed}); do dyno http URL -d 10s --tag pr-42; done), then `dyno compare --baseline @tag:main @tag:pr-42 --fail-if-worse {pct}`; `dyno run --runs N` keeps its N runs in one record and can be gated alone",
            found.untested.join(", ")
        ));
    }
    let untested = &found.untested;
    if !untested.is_empty() {
        eprintln!(
            "note: {} could not be tested and {} not judged by --fail-if-worse: {}; compare groups of at least {needed} runs a side to judge {}",
            dyno_report::counted(untested.len() as u64, "primary figure"),
            if untested.len() == 1 { "was" } else { "were" },
            untested.join(", "),
            if untested.len() == 1 { "it" } else { "them" },
        );
    }
    if found.regressions.is_empty() {
        Gate::Pass
    } else {
        Gate::Fail
    }
}

/// The sides of a comparison, the baseline first: each SIDE as typed, then
/// with `last` the N most recent runs matching `common`. At least two, with
/// distinct names.
pub(super) fn select(
    store: &dyn Store,
    sides: &[String],
    last: Option<usize>,
    common: &Filter,
) -> Result<Vec<Group>> {
    let mut groups = Vec::new();
    for side in sides {
        groups.push(resolve(store, side, common)?);
    }
    if let Some(n) = last {
        groups.extend(latest(store, n, common)?);
    }
    if groups.len() < 2 {
        bail!(
            "a comparison needs at least two sides, but {} given: name two runs (`dyno compare ID ID`), two groups (`a=@tag:x b=@tag:y`) or --last 2; `dyno history` lists the runs",
            if groups.is_empty() {
                "none was"
            } else {
                "one was"
            }
        );
    }
    distinct_names(&mut groups)?;
    Ok(groups)
}

/// One side: `ID`, `NAME=ID,ID…` or `NAME=@filter,@filter…`.
fn resolve(store: &dyn Store, side: &str, common: &Filter) -> Result<Group> {
    let Side {
        name,
        selector,
        pick,
    } = settings::compare::side(side, common)?;
    let runs = match pick {
        Pick::Ids(ids) => ids
            .iter()
            .map(|id| super::get_run(store, id))
            .collect::<Result<Vec<Run>>>()?,
        Pick::Matching(filter) => comparable(super::list_runs(store, &filter)?),
    };
    if runs.is_empty() {
        let shared = settings::compare::filter_flags(common);
        if shared.is_empty() {
            bail!(
                "'{selector}' selects no runs: `dyno history` with the same filters lists what there is"
            );
        }
        bail!(
            "'{selector}' selects no runs together with {}, which every side must also match: drop {}, or see `dyno history` with the same filters (to label the saved comparison, use --label)",
            shared.join(" "),
            if shared.len() == 1 { "it" } else { "them" }
        );
    }
    Ok(Group {
        name,
        selector,
        runs,
    })
}

/// The `n` most recent runs that match `common`, each its own side.
fn latest(store: &dyn Store, n: usize, common: &Filter) -> Result<Vec<Group>> {
    let all = comparable(super::list_runs(store, common)?);
    if all.len() < n {
        bail!(
            "--last {n} needs {n} saved runs, but {} match{}: `dyno history` lists them",
            all.len(),
            if all.len() == 1 { "es" } else { "" }
        );
    }
    Ok(all[all.len() - n..]
        .iter()
        .map(|run| {
            let id = run.id.to_string();
            Group {
                name: id[..10].to_owned(),
                selector: id,
                runs: vec![run.clone()],
            }
        })
        .collect())
}

/// Runs a filter may select for comparison: not earlier comparisons.
fn comparable(runs: Vec<Run>) -> Vec<Run> {
    runs.into_iter()
        .filter(|r| r.kind != Kind::Compare)
        .collect()
}

/// Refuses two sides of one name; a name shortened from an id is made
/// longer until it is unique.
fn distinct_names(groups: &mut [Group]) -> Result<()> {
    for i in 0..groups.len() {
        for j in 0..i {
            if groups[i].name != groups[j].name {
                continue;
            }
            let from_last = |g: &Group| g.runs.len() == 1 && g.selector == g.runs[0].id.to_string();
            if from_last(&groups[i]) && from_last(&groups[j]) {
                groups[i].name = groups[i].selector.clone();
                groups[j].name = groups[j].selector.clone();
            } else {
                bail!(
                    "two sides are named '{}': give each its own name (NAME=SELECTOR)",
                    groups[i].name
                );
            }
        }
    }
    Ok(())
}
