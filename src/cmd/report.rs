//! `dyno report`: saved runs (by id, or the store's filters) → the HTML
//! page `dyno_report::html` draws → a file, written whole or not at all.

use std::fs::{self, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{Context as _, Result, bail};
use dyno_model::Run;
use dyno_stats::versus;
use dyno_store::Filter;

use super::history::filter;
use super::{Context, list_runs, print};
use crate::ExitStatus;
use crate::cli::ReportArgs;

pub(super) fn run(ctx: &Context, args: ReportArgs) -> Result<ExitStatus> {
    let ReportArgs {
        runs: ids,
        filter: mut f,
        last,
        compare,
        trend,
        output,
        force,
    } = args;
    let stdout = output == Path::new("-");
    if !stdout {
        check_output(&output, force)?;
    }
    if compare {
        let store = ctx.read_store()?;
        let last = last.map(|n| usize::try_from(n).unwrap_or(usize::MAX));
        let groups = super::compare::select(&store, &ids, last, &filter(f))?;
        let mut comparison = versus::compare_runs(&groups, &versus::Options::default())?;
        comparison.environment = super::environment();
        let runs: Vec<Run> = groups.into_iter().flat_map(|g| g.runs).collect();
        let page = dyno_report::html::html_comparison(&comparison, &runs);
        return deliver(&output, stdout, &page, runs.len(), force);
    }
    if last.is_some() {
        f.limit = last;
    }
    let f = filter(f);
    let filtered = f != Filter::default();
    let store = ctx.read_store()?;
    let runs: Vec<Run> = if ids.is_empty() {
        let runs = list_runs(&store, &f)?;
        if runs.is_empty() {
            bail!(
                "no saved run matches{}: see `dyno history` for what is stored",
                if filtered { " the filters" } else { "" }
            );
        }
        runs
    } else {
        if filtered {
            bail!(
                "give run ids or filters (--kind, --tag, --host, --since, --limit/--last), not both"
            );
        }
        ids.iter()
            .map(|id| {
                super::get_run(&*store, id).with_context(|| format!("no run to report for '{id}'"))
            })
            .collect::<Result<_>>()?
    };
    let page = match &trend {
        Some(metric) => dyno_report::html::html_trend(&runs, metric).with_context(|| {
            let known: Vec<String> = runs[0]
                .metrics
                .iter()
                .take(6)
                .map(|m| format!("'{}'", m.display_name()))
                .collect();
            format!(
                "none of the {} selected runs has a metric '{metric}' (names as `dyno show` displays them, e.g. {})",
                runs.len(),
                known.join(", ")
            )
        })?,
        None => dyno_report::html::html_report(&runs),
    };
    deliver(&output, stdout, &page, runs.len(), force)
}

/// Prints the page, or writes it whole to `output` and says so.
fn deliver(
    output: &Path,
    stdout: bool,
    page: &str,
    runs: usize,
    force: bool,
) -> Result<ExitStatus> {
    if stdout {
        print(page)?;
    } else {
        write_whole(output, page.as_bytes(), force)?;
        eprintln!(
            "wrote {} ({} KB, {})",
            output.display(),
            page.len().div_ceil(1000),
            dyno_report::counted(runs as u64, "run")
        );
    }
    Ok(ExitStatus::Success)
}

/// Refuses, before any work, a FILE that exists (without --force) or whose
/// directory is missing.
fn check_output(path: &Path, force: bool) -> Result<()> {
    let shown = path.display();
    if path.is_dir() {
        bail!("'{shown}' is a directory: give a file name for the report");
    }
    if path.exists() && !force {
        bail!("'{shown}' already exists: choose a new name, or add --force to replace it");
    }
    let dir = directory(path);
    if !dir.is_dir() {
        bail!(
            "cannot write '{shown}': the directory '{}' does not exist (create it first)",
            dir.display()
        );
    }
    Ok(())
}

fn directory(path: &Path) -> PathBuf {
    match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir.to_owned(),
        _ => PathBuf::from("."),
    }
}

/// Writes `bytes` to a new temporary file beside `path`, then renames it
/// over `path`: a reader sees the old file or the whole new one, never a
/// part. The temporary file is removed if anything fails.
fn write_whole(path: &Path, bytes: &[u8], force: bool) -> Result<()> {
    let shown = path.display();
    let dir = directory(path);
    let name = path
        .file_name()
        .map_or_else(|| "report".into(), |n| n.to_string_lossy().into_owned());
    let tmp = dir.join(format!(
        ".{name}.{}-{:08x}.tmp",
        std::process::id(),
        fastrand::u32(..)
    ));
    let written = (|| -> std::io::Result<()> {
        let mut file = OpenOptions::new().write(true).create_new(true).open(&tmp)?;
        file.write_all(bytes)?;
        file.sync_all()
    })();
    if let Err(err) = written {
        let _ = fs::remove_file(&tmp);
        return Err(err).with_context(|| {
            format!(
                "cannot write '{shown}' (a temporary file in '{}' could not be written)",
                dir.display()
            )
        });
    }
    // Checked again just before the rename: a file that appeared while the
    // page was drawn is not replaced without --force either.
    if path.exists() && !force {
        let _ = fs::remove_file(&tmp);
        bail!("'{shown}' already exists: choose a new name, or add --force to replace it");
    }
    fs::rename(&tmp, path).map_err(|err| {
        let _ = fs::remove_file(&tmp);
        anyhow::Error::new(err).context(format!("cannot write '{shown}'"))
    })
}
