//! `dyno doctor`'s checklist as text: the table, what to do about each
//! check that is not ok, and the summary line.

use std::fmt::Write as _;

use dyno_env::doctor::{Finding, Verdict};

/// The checklist of `findings`, checked for `scope` ("any benchmark",
/// "http benchmarks").
pub fn doctor_report(findings: &[Finding], scope: &str) -> String {
    let mut out = String::new();
    let title = findings.iter().map(|f| f.title.len()).max().unwrap_or(0);
    let found = findings.iter().map(|f| f.found.len()).max().unwrap_or(0);
    for f in findings {
        let _ = writeln!(
            out,
            "{:<7}  {:<title$}  {:<found$}  want {}",
            mark(f.verdict),
            f.title,
            f.found,
            f.recommended
        );
    }
    for f in findings
        .iter()
        .filter(|f| matches!(f.verdict, Verdict::Advice | Verdict::Blocks))
    {
        let _ = writeln!(out, "\n{} ({}): {}", f.title, mark(f.verdict), f.why);
        for c in &f.fix_now {
            let _ = writeln!(out, "  now:    {c}");
        }
        for c in &f.fix_always {
            let _ = writeln!(out, "  always: {c}");
        }
    }
    let count = |v: Verdict| findings.iter().filter(|f| f.verdict == v).count();
    let _ = writeln!(
        out,
        "\n{} checks for {scope}: {} ok, {} advice, {} blocking, {} unknown; {}",
        findings.len(),
        count(Verdict::Ok),
        count(Verdict::Advice),
        count(Verdict::Blocks),
        count(Verdict::Unknown),
        if count(Verdict::Blocks) > 0 {
            "fix the blocking ones before measuring"
        } else {
            "nothing blocks a valid run"
        }
    );
    out
}

/// A verdict as the table's first column writes it.
fn mark(v: Verdict) -> &'static str {
    match v {
        Verdict::Ok => "ok",
        Verdict::Advice => "ADVICE",
        Verdict::Blocks => "BLOCKS",
        Verdict::Unknown => "unknown",
    }
}
