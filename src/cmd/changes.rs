//! `dyno changes`: the saved runs the filters select, analysed series by
//! series ([`dyno_report::changes`]), printed, and with `--gate` the exit
//! status of a CI step.

use anyhow::Result;

use super::{Context, history, list_runs, print};
use crate::ExitStatus;
use crate::cli::ChangesArgs;

pub(super) fn run(ctx: &Context, args: ChangesArgs) -> Result<ExitStatus> {
    let settings = crate::settings::changes(&args);
    let runs = list_runs(&*ctx.read_store()?, &history::filter(args.filter))?;
    let report = dyno_report::changes::ChangesReport::of(&runs, &args.metric, &settings, args.gate);
    if args.json {
        print(&format!("{}\n", serde_json::to_string_pretty(&report)?))?;
    } else {
        print(&dyno_report::changes::changes_text(&report))?;
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
