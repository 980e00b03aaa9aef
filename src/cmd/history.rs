//! The store's subcommands: `history`, `show`, `export`, `import`, `rm`.

use std::fmt::Write as _;
use std::fs::OpenOptions;
use std::io::{BufWriter, Read, Write};
use std::path::Path;

use anyhow::{Context as _, Result, bail};
use dyno_model::{Kind, Run};
use dyno_store::{Filter, Listing, Store, StoreError};
use jiff::tz::TimeZone;

use super::{Context, get_run, list_runs, merged_group, print, report_skipped};
use crate::ExitStatus;
use crate::cli::{
    ExportArgs, FilterArgs, HistoryArgs, ImportArgs, MergeArgs, RmArgs, ShowArgs, ShowFormat,
};

pub(super) fn filter(args: FilterArgs) -> Filter {
    let FilterArgs {
        kind,
        tags,
        host,
        since,
        limit,
    } = args;
    Filter {
        kind,
        tags,
        host,
        since,
        limit: limit.map(|l| usize::try_from(l).unwrap_or(usize::MAX)),
    }
}

/// The filters given, as they were typed (`--tag nope`), for a message.
fn describe(args: &FilterArgs) -> Vec<String> {
    let FilterArgs {
        kind,
        tags,
        host,
        since,
        limit: _,
    } = args;
    let mut given = Vec::new();
    if let Some(kind) = kind {
        given.push(format!("--kind {kind}"));
    }
    given.extend(tags.iter().map(|t| format!("--tag {t}")));
    if let Some(host) = host {
        given.push(format!("--host {host}"));
    }
    if let Some(since) = since {
        given.push(format!("--since {since}"));
    }
    given
}

pub(super) fn history(ctx: &Context, args: HistoryArgs) -> Result<ExitStatus> {
    let HistoryArgs { filter: f } = args;
    let filters = describe(&f);
    let Listing { runs, skipped } = ctx.read_store()?.list(&filter(f))?;
    report_skipped(&skipped);
    if runs.is_empty() {
        if !skipped.is_empty() {
            // The lines above say what is there.
        } else if filters.is_empty() {
            eprintln!("no runs saved yet; `dyno quick` makes one");
        } else {
            eprintln!(
                "no run matches the filters {}; `dyno history` with no filters lists every run",
                filters.join(" ")
            );
        }
        return Ok(ExitStatus::Success);
    }
    print(&dyno_report::history(&runs, &TimeZone::system()))?;
    Ok(ExitStatus::Success)
}

pub(super) fn show(ctx: &Context, args: ShowArgs) -> Result<ExitStatus> {
    let ShowArgs { id, json, format } = args;
    let store = ctx.read_store()?;
    display(&get_run(&*store, &id)?, json, format)
}

/// `dyno merge GROUP`: the group's merged run, shown, and saved if asked.
pub(super) fn merge(ctx: &Context, args: MergeArgs) -> Result<ExitStatus> {
    let MergeArgs {
        group,
        json,
        format,
        save,
        wait,
    } = args;
    let mut store = ctx.open_store()?;
    if let Some(wait) = wait {
        wait_for_segments(&*store, &group, wait)?;
    }
    let Some(run) = merged_group(&*store, &group)? else {
        let state = store.group(&group)?;
        if let Some(dyno_store::Decision::CalledOff { why }) = &state.decision {
            bail!("group '{group}' was called off at the start barrier, so no segment ran: {why}");
        }
        let arrived = state.arrivals.len();
        if arrived > 0 {
            bail!(
                "group '{group}': {arrived} segment{} arrived at the start barrier, but none has saved a run yet: wait for them to finish",
                if arrived == 1 { "" } else { "s" }
            );
        }
        bail!(
            "no run of group '{group}' is in the store {}: `dyno history --tag group:{group}` lists a group's runs (segments save them with --segment I/N --group {group})",
            store.location()
        );
    };
    display(&run, json, format)?;
    if save {
        match store.save(&run) {
            Ok(()) => eprintln!("saved as {} (dyno show {})", run.id, run.id),
            Err(StoreError::Duplicate { id }) => {
                eprintln!("the same merged run is already saved as {id}")
            }
            Err(e) => return Err(e.into()),
        }
    }
    Ok(ExitStatus::Success)
}

/// Waits until every segment of `group` has saved its run, the barrier
/// called the run off (an error), or `wait` has passed (the merge then
/// names what is missing).
fn wait_for_segments(store: &dyn Store, group: &str, wait: std::time::Duration) -> Result<()> {
    let deadline = std::time::Instant::now() + wait;
    // Each look reads the group's saved runs in full, histograms and all:
    // often at first, when the segments are finishing together, then less
    // and less while one that will never come (killed) is waited for.
    let mut pause = std::time::Duration::from_millis(250);
    let filter = Filter {
        tags: vec![format!("group:{group}")],
        ..Filter::default()
    };
    loop {
        let state = store.group(group)?;
        if let Some(dyno_store::Decision::CalledOff { why }) = &state.decision {
            bail!("group '{group}' was called off at the start barrier, so no segment ran: {why}");
        }
        let runs = list_runs(store, &filter)?;
        let count = state.arrivals.first().map(|a| a.segment.count);
        let saved: std::collections::BTreeSet<u32> = runs
            .iter()
            .filter_map(Run::segment)
            .map(|s| s.index)
            .collect();
        if count.is_some_and(|n| saved.len() as u32 >= n) {
            return Ok(());
        }
        if std::time::Instant::now() >= deadline {
            eprintln!(
                "dyno: waited {} for group '{group}': {} segment run{} saved; merging what there is",
                dyno_model::units::duration_flag(wait),
                saved.len(),
                if saved.len() == 1 { "" } else { "s" }
            );
            return Ok(());
        }
        std::thread::sleep(
            pause.min(deadline.saturating_duration_since(std::time::Instant::now())),
        );
        pause = (pause * 2).min(std::time::Duration::from_secs(15));
    }
}

/// Prints one run as `show` does.
fn display(run: &Run, json: bool, format: ShowFormat) -> Result<ExitStatus> {
    let run = run.clone();
    if json {
        print(&(serde_json::to_string_pretty(&run)? + "\n"))?;
        return Ok(ExitStatus::Success);
    }
    match format {
        ShowFormat::Ab if run.kind == Kind::Http => print(&dyno_report::ab_report(&run))?,
        ShowFormat::Ab => bail!(
            "--format ab is ApacheBench's layout, for http runs; run {} is of kind {} (leave out --format)",
            run.id,
            run.kind
        ),
        ShowFormat::Text => {
            let tz = TimeZone::system();
            // The report the subcommand printed, rebuilt from the record: it
            // has what the metric list cannot say in one row (percentiles,
            // the disk table, comparisons, the scaling verdict).
            let report = dyno_report::text_report(&run);
            let text = match report {
                // A comparison's tables are its record: the metric list
                // and the settings would only repeat them, less readably.
                Some(report) if run.kind == Kind::Compare => {
                    format!("{}\n{report}", dyno_report::run_header(&run, &tz))
                }
                Some(report) => {
                    let mut text = dyno_report::run_details_before_report(&run, &tz);
                    let _ = writeln!(text, "\nAs `dyno {}` reported it:\n", command_of(run.kind));
                    text.push_str(&report);
                    text
                }
                None => dyno_report::run_details(&run, &tz),
            };
            print(&text)?;
        }
    }
    Ok(ExitStatus::Success)
}

/// The subcommand that makes runs of `kind`.
fn command_of(kind: Kind) -> &'static str {
    match kind {
        Kind::Exec => "run",
        other => other.as_str(),
    }
}

pub(super) fn export(ctx: &Context, args: ExportArgs) -> Result<ExitStatus> {
    let ExportArgs {
        filter: f,
        format,
        output,
    } = args;
    let exporter =
        dyno_report::exporter(format.name()).expect("every ExportFormat has an exporter");
    let runs = list_runs(&ctx.read_store()?, &filter(f))?;
    match output {
        None => {
            let mut stdout = std::io::stdout().lock();
            exporter.write(&runs, &mut stdout)?;
            stdout.flush()?;
        }
        Some(path) => {
            // create_new: an export never overwrites an existing file.
            let file = OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(&path)
                .map_err(|err| cannot_create(&path, err))?;
            let mut out = BufWriter::new(file);
            exporter
                .write(&runs, &mut out)
                .and_then(|()| out.flush())
                .with_context(|| format!("could not write '{}'", path.display()))?;
            eprintln!("exported {} to {}", runs_n(runs.len()), path.display());
        }
    }
    Ok(ExitStatus::Success)
}

pub(super) fn import(ctx: &Context, args: ImportArgs) -> Result<ExitStatus> {
    let ImportArgs { file } = args;
    let (name, text) = read_input(&file)?;
    let runs =
        dyno_model::read_runs(&text).with_context(|| format!("could not import '{name}'"))?;
    if runs.is_empty() {
        bail!(
            "'{name}' holds no runs: expected a Run, an array of Runs or JSON Lines, as `dyno export` writes"
        );
    }
    let mut store = ctx.open_store()?;
    let (mut added, mut skipped) = (0usize, 0usize);
    for run in &runs {
        match store.save(run) {
            Ok(()) => added += 1,
            Err(StoreError::Duplicate { .. }) => skipped += 1,
            Err(e) => {
                return Err(e).context(format!(
                    "imported {} from '{name}', then failed",
                    runs_n(added)
                ));
            }
        }
    }
    eprintln!(
        "imported {} from {name} ({skipped} already in the store)",
        runs_n(added)
    );
    Ok(ExitStatus::Success)
}

/// `1 run`, `2 runs`.
fn runs_n(n: usize) -> String {
    format!("{n} {}", if n == 1 { "run" } else { "runs" })
}

/// Why `export -o PATH` could not create its file, in words that fit the
/// cause: an existing file, a missing directory, or what the system said.
fn cannot_create(path: &Path, err: std::io::Error) -> anyhow::Error {
    let shown = path.display();
    let dir = match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    };
    match err.kind() {
        std::io::ErrorKind::AlreadyExists => anyhow::anyhow!(
            "'{shown}' already exists (an export never overwrites a file; choose a new name)"
        ),
        std::io::ErrorKind::NotFound => anyhow::anyhow!(
            "could not create '{shown}': the directory '{}' does not exist (create it first; an export does not create directories)",
            dir.display()
        ),
        _ => anyhow::Error::new(err).context(format!("could not create '{shown}'")),
    }
}

fn read_input(path: &Path) -> Result<(String, String)> {
    if path == Path::new("-") {
        let mut text = String::new();
        std::io::stdin()
            .read_to_string(&mut text)
            .context("could not read stdin")?;
        return Ok(("stdin".to_owned(), text));
    }
    let name = path.display().to_string();
    let text = std::fs::read_to_string(path).with_context(|| format!("could not read '{name}'"))?;
    Ok((name, text))
}

pub(super) fn rm(ctx: &Context, args: RmArgs) -> Result<ExitStatus> {
    let RmArgs { ids } = args;
    let mut store = ctx.open_store()?;
    let ids: Vec<&str> = ids.iter().map(String::as_str).collect();
    // All or nothing: one id that matches no run (or several) removes none.
    let removed = store.remove_all(&ids).context("no run was removed")?;
    for id in removed {
        eprintln!("removed {id}");
    }
    Ok(ExitStatus::Success)
}
