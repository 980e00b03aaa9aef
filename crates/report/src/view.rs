//! The one dispatch on [`Kind`] for text: which view prints a run as its
//! subcommand reported it. Each kind's views live in its own module pair
//! (`http.rs` and `html/http.rs`, `disk.rs` and `html/disk.rs`, …), each
//! reading its kind's typed record; the HTML page's dispatch is
//! [`crate::html::charts`].

use dyno_model::{Kind, Run};
use jiff::tz::TimeZone;

/// The report the run's subcommand printed, rebuilt from the record: what
/// the metric list cannot say in one row (percentiles, the disk table,
/// comparisons, the scaling verdict, quick's summary table). `None` for a
/// kind whose report is not rendered here: `cpu` and `figures` have none
/// beyond their metric list.
pub fn text_report(run: &Run) -> Option<String> {
    match run.kind {
        Kind::Http => Some(crate::http_report(run)),
        Kind::Exec => Some(crate::exec_report(run)),
        Kind::Disk => Some(crate::disk_report(run)),
        Kind::Scale => Some(crate::scale_report(run)),
        Kind::Compare => Some(crate::compare_report(run)),
        Kind::Db => Some(crate::db_report(run)),
        Kind::Quick => Some(crate::quick_report(run)),
        Kind::Cpu | Kind::Figures => None,
    }
}

/// `dyno show RUN`: the run's header and details, then the report its
/// subcommand printed ([`text_report`]), which says what the metric list
/// cannot say in one row. A comparison is its tables alone: the metric
/// list and the settings would only repeat them, less readably.
pub fn show_report(run: &Run, tz: &TimeZone) -> String {
    match text_report(run) {
        Some(report) if run.kind == Kind::Compare => {
            format!("{}\n{report}", crate::run_header(run, tz))
        }
        Some(report) => {
            let command = match run.kind {
                Kind::Exec => "run",
                other => other.as_str(),
            };
            format!(
                "{}\nAs `dyno {command}` reported it:\n\n{report}",
                crate::run_details_before_report(run, tz)
            )
        }
        None => crate::run_details(run, tz),
    }
}
