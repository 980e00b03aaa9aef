//! The store's subcommands: `history`, `show`, `export`, `import`, `rm`.

use std::fs::OpenOptions;
use std::io::{BufWriter, Read, Write};
use std::path::Path;

use anyhow::{Context as _, Result, bail};
use dyno_model::record::{FiguresFile, FiguresRecord};
use dyno_model::{Kind, Metric, Run, Samples};
use dyno_store::barrier::Saved;
use dyno_store::{Filter, Listing, Store, StoreError};
use jiff::tz::TimeZone;

use super::{Context, get_run, list_runs, merged_group, print, report_skipped};
use crate::ExitStatus;
use crate::cli::{
    ExportArgs, FilterArgs, HistoryArgs, ImportArgs, MergeArgs, RmArgs, SaveArgs, ShowArgs,
    ShowFormat,
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

pub(super) fn history(ctx: &Context, args: HistoryArgs) -> Result<ExitStatus> {
    let HistoryArgs { filter: f } = args;
    let filter = filter(f);
    let filters = crate::settings::compare::filter_flags(&filter);
    let Listing { runs, skipped } = ctx.read_store()?.list(&filter)?;
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
    let tag = crate::settings::segment::group_tag(group);
    match dyno_store::barrier::wait_for_saved(store, group, &tag, wait)? {
        Saved::All => {}
        Saved::CalledOff(why) => {
            bail!("group '{group}' was called off at the start barrier, so no segment ran: {why}")
        }
        Saved::Some(saved) => eprintln!(
            "dyno: waited {} for group '{group}': {} segment run{} saved; merging what there is",
            dyno_model::units::duration_flag(wait),
            saved,
            if saved == 1 { "" } else { "s" }
        ),
    }
    Ok(())
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
        ShowFormat::Text => print(&dyno_report::show_report(&run, &TimeZone::system()))?,
    }
    Ok(ExitStatus::Success)
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
            eprintln!(
                "exported {} to {}",
                dyno_report::counted(runs.len() as u64, "run"),
                path.display()
            );
        }
    }
    Ok(ExitStatus::Success)
}

pub(super) fn import(ctx: &Context, args: ImportArgs) -> Result<ExitStatus> {
    let ImportArgs {
        file,
        figures,
        tags,
    } = args;
    let (name, text) = read_input(&file)?;
    if figures {
        return import_figures(ctx, &name, &text, tags);
    }
    let runs = dyno_model::read_runs(&text).with_context(|| {
        let hint = FiguresFile::parse(&text).map_or(
            "",
            |_| " (it holds figures measured outside dyno: import them with --figures)",
        );
        format!("could not import '{name}'{hint}")
    })?;
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
                    dyno_report::counted(added as u64, "run")
                ));
            }
        }
    }
    eprintln!(
        "imported {} from {name} ({skipped} already in the store)",
        dyno_report::counted(added as u64, "run")
    );
    Ok(ExitStatus::Success)
}

/// `import --figures`: the figures of `text` as one run of this machine,
/// saved with `tags`.
fn import_figures(ctx: &Context, name: &str, text: &str, tags: Vec<String>) -> Result<ExitStatus> {
    let file = FiguresFile::parse(text)
        .map_err(|e| anyhow::anyhow!("could not import the figures of '{name}': {e}"))?;
    let mut run = Run::new(
        Kind::Figures,
        file.description.as_deref().unwrap_or(&file.name),
    );
    run.environment = super::environment();
    run.metrics = file
        .figures
        .into_iter()
        .map(|f| {
            let mut metric = match f.value {
                Some(value) => Metric::new(f.name, f.unit, f.direction, value),
                None => dyno_stats::sampled_metric(f.name, f.unit, f.direction, f.samples)
                    .samples_are(Samples::Runs),
            };
            metric.labels = f.labels;
            metric.primary()
        })
        .collect();
    run.set_record(&FiguresRecord {
        name: file.name,
        settings: file.settings,
    });
    let save = SaveArgs {
        no_save: false,
        tags,
        json: false,
    };
    let tz = TimeZone::system();
    super::finish(run, &save, ctx.store_for(&save)?, |run| {
        dyno_report::show_report(run, &tz)
    })?;
    Ok(ExitStatus::Success)
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
