//! The charts of a disk run (and of the disk line of a quick run, the part
//! `disk`): CrystalDiskMark's panel of read and write tiles per test, in
//! MB/s (10^6 bytes per second) with IOPS for random tests, and the latency
//! spectrum of every test, one chart per operation.

use std::fmt::Write as _;

use dyno_model::Run;
use dyno_model::names::{common, disk, label};

use super::latency::{self, Series};
use super::markup::esc;

/// The tests of the run in table order, each with the operations it ran.
fn tests<'a>(run: &'a Run, part: Option<&str>) -> Vec<(&'a str, Vec<&'a str>)> {
    let mut out: Vec<(&str, Vec<&str>)> = Vec::new();
    for m in run
        .metrics
        .iter()
        .filter(|m| m.name == common::LATENCY && m.part() == part)
    {
        let (Some(test), Some(op)) = (m.label(label::TEST), m.label(label::OP)) else {
            continue;
        };
        match out.iter_mut().find(|(t, _)| *t == test) {
            Some((_, ops)) if !ops.contains(&op) => ops.push(op),
            Some(_) => {}
            None => out.push((test, vec![op])),
        }
    }
    out
}

/// The metric `name` of quick's part `part` (`None`: a disk run's own) of
/// one test and operation.
fn labelled<'a>(
    run: &'a Run,
    (part, name): (Option<&str>, &str),
    test: &str,
    op: &str,
) -> Option<&'a dyno_model::Metric> {
    run.metrics.iter().find(|m| {
        m.name == name
            && m.part() == part
            && m.label(label::TEST) == Some(test)
            && m.label(label::OP) == Some(op)
    })
}

/// The disk charts of `run`.
pub(super) fn charts(run: &Run, part: Option<&str>) -> Vec<String> {
    let tests = tests(run, part);
    if tests.is_empty() {
        return vec!["<p class=\"note\">No disk tests in this run.</p>".into()];
    }
    let mut out = vec![panel(run, part, &tests)];
    let mut ops: Vec<&str> = Vec::new();
    for (_, o) in &tests {
        for op in o {
            if !ops.contains(op) {
                ops.push(op);
            }
        }
    }
    let latency = (part, common::LATENCY);
    for op in ops {
        let series: Vec<Series> = tests
            .iter()
            .filter_map(|(test, _)| Series::of(*test, labelled(run, latency, test, op)))
            .collect();
        let id = format!("disk-latency-{op}");
        if let Some(c) =
            latency::spectrum(&id, &format!("Disk {op} latency by percentile"), &series)
        {
            out.push(c.html());
        }
    }
    out
}

/// The CrystalDiskMark grid: one row per test, a tile per operation.
fn panel(run: &Run, part: Option<&str>, tests: &[(&str, Vec<&str>)]) -> String {
    let mut ops: Vec<&str> = vec!["read", "write"];
    for (_, o) in tests {
        for op in o {
            if !ops.contains(op) {
                ops.push(op);
            }
        }
    }
    let throughput = (part, disk::THROUGHPUT_BYTES_PER_SEC);
    let iops = (part, disk::IOPS);
    let files = (part, disk::FILES_PER_SEC);
    let mut tiles = 0;
    let mut grid = String::new();
    let _ = write!(
        grid,
        "<div class=\"cdm\" style=\"grid-template-columns: 9em repeat({}, minmax(9em, 14em))\"><div class=\"head\"></div>",
        ops.len()
    );
    for op in &ops {
        let _ = write!(
            grid,
            "<div class=\"head\">{} (MB/s)</div>",
            esc(&capital(op))
        );
    }
    for (test, _) in tests {
        let _ = write!(grid, "<div class=\"test\">{}</div>", esc(test));
        for op in &ops {
            let mbs = labelled(run, throughput, test, op);
            let io = labelled(run, iops, test, op).or_else(|| labelled(run, files, test, op));
            match (mbs, io) {
                (Some(m), io) => {
                    tiles += 1;
                    open_tile(&mut grid, test, op, format_args!("{:.2}", m.value / 1e6));
                    if let (Some(io), true) = (io, !test.starts_with("SEQ")) {
                        let _ = write!(grid, "<div class=\"iops\">{:.0} IOPS</div>", io.value);
                    }
                    grid.push_str("</div>");
                }
                (None, Some(io)) => {
                    tiles += 1;
                    open_tile(&mut grid, test, op, format_args!("{:.0}", io.value));
                    let _ = write!(
                        grid,
                        "<div class=\"iops\">{}/s</div></div>",
                        if io.name.ends_with(disk::FILES_PER_SEC) {
                            "files"
                        } else {
                            "IOPS"
                        }
                    );
                }
                (None, None) => grid.push_str("<div></div>"),
            }
        }
    }
    grid.push_str("</div>");
    format!(
        "<figure class=\"chart\" data-chart=\"disk-panel\" data-series=\"{}\" data-points=\"{tiles}\">\n<figcaption>Disk throughput per test (best pass, MB/s = 10^6 bytes/s; IOPS for random tests)</figcaption>\n{grid}\n</figure>\n",
        ops.len()
    )
}

/// Opens the tile of `test` and `op` in `grid` with `figure` as its big
/// number; the caller adds what follows and closes it.
fn open_tile(grid: &mut String, test: &str, op: &str, figure: std::fmt::Arguments<'_>) {
    let _ = write!(
        grid,
        "<div class=\"tile\" data-test=\"{}\" data-op=\"{}\"><div class=\"mbs\">{figure}</div>",
        esc(test),
        esc(op),
    );
}

fn capital(s: &str) -> String {
    let mut c = s.chars();
    c.next()
        .map(|f| f.to_uppercase().chain(c).collect())
        .unwrap_or_default()
}
