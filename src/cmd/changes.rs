//! `dyno changes`: the saved runs the filters select, analysed series by
//! series ([`dyno_report::changes`]), printed in the format asked for, and
//! with `--gate` the exit status of a CI step.

use std::io::Write as _;

use anyhow::{Context as _, Result, bail};
use dyno_report::changes::{self, ChangesReport};
use dyno_stats::series::Order;

use super::{Context, history, list_runs, print};
use crate::ExitStatus;
use crate::cli::{ChangesArgs, ChangesFormat};

pub(super) fn run(ctx: &Context, args: ChangesArgs) -> Result<ExitStatus> {
    let settings = crate::settings::changes(&args);
    let order = if args.by_commit {
        Order::Commits(commits()?)
    } else {
        Order::Time
    };
    let runs = list_runs(&*ctx.read_store()?, &history::filter(args.filter))?;
    let report = ChangesReport::of(&runs, &args.metric, &settings, args.gate, &order);
    let format = if args.json {
        ChangesFormat::Json
    } else {
        args.format
    };
    match format {
        ChangesFormat::Text => print(&changes::changes_text(&report))?,
        ChangesFormat::Json => print(&format!("{}\n", serde_json::to_string_pretty(&report)?))?,
        ChangesFormat::Markdown => print(&changes::changes_markdown(&report))?,
        ChangesFormat::Junit => print(&changes::changes_junit(&report))?,
        ChangesFormat::Github => {
            print(&changes::changes_github(&report))?;
            step_summary(&changes::changes_markdown(&report))?;
        }
    }
    let failed = report.regressions().count();
    if args.gate && failed > 0 {
        eprintln!(
            "dyno: {} in a regression; `dyno changes` without --gate shows every change",
            dyno_report::counted(failed as u64, "line")
        );
        return Ok(ExitStatus::ChecksFailed);
    }
    Ok(ExitStatus::Success)
}

/// Adds `markdown` to the GitHub Actions step's summary, the file
/// `$GITHUB_STEP_SUMMARY` names (appended, as the runner expects); said
/// on stderr when it is not set.
fn step_summary(markdown: &str) -> Result<()> {
    let Some(path) = std::env::var_os("GITHUB_STEP_SUMMARY") else {
        eprintln!(
            "dyno: GITHUB_STEP_SUMMARY is not set (not in a GitHub Actions step): no summary written"
        );
        return Ok(());
    };
    let shown = std::path::Path::new(&path).display().to_string();
    let mut file = std::fs::OpenOptions::new()
        .append(true)
        .create(true)
        .open(&path)
        .with_context(|| format!("could not open the step summary '{shown}'"))?;
    file.write_all(markdown.as_bytes())
        .with_context(|| format!("could not write the step summary '{shown}'"))
}

/// The commits of HEAD in the repository of this directory, oldest first,
/// parents before children.
fn commits() -> Result<Vec<String>> {
    let out = std::process::Command::new("git")
        .args(["rev-list", "--topo-order", "--reverse", "HEAD"])
        .output()
        .context("--by-commit runs git, which could not be started")?;
    if !out.status.success() {
        bail!(
            "--by-commit orders runs by the commits of this directory's git repository, but `git rev-list HEAD` failed here: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(str::to_owned)
        .collect())
}
