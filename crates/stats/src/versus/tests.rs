use super::*;
use crate::compare::compare;
use crate::hdr::{latency_histogram, to_model};

fn run(kind: Kind, metrics: Vec<Metric>) -> Run {
    let mut r = Run::new(kind, "r");
    r.metrics = metrics;
    r
}

fn group(name: &str, runs: Vec<Run>) -> Group {
    Group {
        name: name.into(),
        selector: name.into(),
        runs,
    }
}

fn sampled(name: &str, unit: Unit, dir: Direction, samples: &[f64]) -> Metric {
    let mut m = Metric::new(
        name,
        unit,
        dir,
        samples.iter().sum::<f64>() / samples.len() as f64,
    );
    m.samples = samples.to_vec();
    m
}

fn wall(command: &str, samples: &[f64]) -> Metric {
    sampled("wall_ns", Unit::Ns, Direction::LowerIsBetter, samples).with_label("command", command)
}

fn rps(v: f64) -> Metric {
    Metric::new(
        "requests_per_sec",
        Unit::RequestsPerSec,
        Direction::HigherIsBetter,
        v,
    )
}

/// The metric of `name` for `group` whose `metric` label is `subject`.
fn find<'a>(run: &'a Run, name: &str, subject: &str, group: &str) -> &'a Metric {
    run.metrics
        .iter()
        .find(|m| {
            m.name == name && m.label("metric") == Some(subject) && m.label("group") == Some(group)
        })
        .unwrap_or_else(|| panic!("no {name} of {subject} for {group} in {:#?}", run.metrics))
}

fn counts(run: &Run, group: &str) -> [f64; 4] {
    ["better", "worse", "same", "untested"].map(|n| {
        run.metrics
            .iter()
            .find(|m| m.name == n && m.label("group") == Some(group))
            .unwrap()
            .value
    })
}

#[test]
fn two_exec_runs_compare_to_the_same_numbers_as_dyno_run_would() {
    let a = [10.0, 11.0, 10.5, 10.2, 10.8, 10.1];
    let b = [12.0, 12.5, 12.2, 13.0, 12.1, 12.4];
    let o = Options::default();
    let c = compare_runs(
        &[
            group("a", vec![run(Kind::Exec, vec![wall("make -j 2", &a)])]),
            group("b", vec![run(Kind::Exec, vec![wall("make -j 2", &b)])]),
        ],
        &o,
    )
    .unwrap();
    let expected = compare(
        &b,
        &a,
        Direction::LowerIsBetter,
        o.noise_band,
        o.alpha,
        o.seed,
    )
    .unwrap();
    let subject = "wall_ns{command=make -j 2}";
    let ratio = find(&c, "ratio", subject, "b");
    assert_eq!(ratio.value, expected.ratio);
    let u = ratio.uncertainty.as_ref().unwrap();
    assert_eq!((u.low, u.high), (expected.low, expected.high));
    assert_eq!(find(&c, "p_value", subject, "b").value, expected.p_value);
    assert_eq!(ratio.label("verdict"), Some("slower"));
    assert_eq!(
        find(&c, "value", subject, "a").label("evidence"),
        Some("samples")
    );
    assert_eq!(counts(&c, "b"), [0.0, 1.0, 0.0, 0.0]);
    let gm = c.metric("geomean").unwrap();
    assert!((gm.value - 1.0 / expected.ratio).abs() < 1e-12, "{gm:?}");
    assert_eq!(c.kind, Kind::Compare);
    assert_eq!(c.headline.as_deref(), Some("geomean"));
    assert_eq!(c.settings["baseline"], "a");
}

#[test]
fn groups_of_runs_compare_one_value_per_run_and_the_geomean_turns_latency_around() {
    let side = |rates: &[f64], lat: &[f64]| {
        rates
            .iter()
            .zip(lat)
            .map(|(&r, &l)| {
                run(
                    Kind::Http,
                    vec![
                        rps(r),
                        Metric::new("mean_ns", Unit::Ns, Direction::LowerIsBetter, l),
                    ],
                )
            })
            .collect::<Vec<_>>()
    };
    let xeon = side(
        &[100.0, 102.0, 101.0, 99.0, 100.5],
        &[10.0, 10.2, 9.9, 10.1, 10.0],
    );
    let opteron = side(
        &[120.0, 121.0, 119.0, 122.0, 120.5],
        &[8.0, 8.1, 7.9, 8.2, 8.0],
    );
    let c = compare_runs(
        &[group("xeon", xeon), group("opteron", opteron)],
        &Options::default(),
    )
    .unwrap();
    let r = find(&c, "ratio", "requests_per_sec", "opteron");
    assert_eq!(r.label("verdict"), Some("faster"), "{r:?}");
    assert_eq!(
        find(&c, "value", "requests_per_sec", "xeon").label("evidence"),
        Some("runs")
    );
    let l = find(&c, "ratio", "mean_ns", "opteron");
    assert_eq!(
        l.label("verdict"),
        Some("faster"),
        "lower latency is better: {l:?}"
    );
    let gm = c.metric("geomean").unwrap();
    // sqrt(1.2 × 1.25) ≈ 1.22: both metrics improved.
    assert!(gm.value > 1.18 && gm.value < 1.26, "{gm:?}");
    let u = gm.uncertainty.as_ref().unwrap();
    assert!(u.low > 1.0 && u.high > gm.value, "{u:?}");
    assert_eq!(counts(&c, "opteron"), [2.0, 0.0, 0.0, 0.0]);
}

#[test]
fn three_runs_a_side_are_too_few_and_one_value_each_is_untested() {
    let side = |v: &[f64]| v.iter().map(|&x| run(Kind::Http, vec![rps(x)])).collect();
    let c = compare_runs(
        &[
            group("a", side(&[100.0, 101.0, 99.0])),
            group("b", side(&[150.0, 151.0, 149.0])),
        ],
        &Options::default(),
    )
    .unwrap();
    assert_eq!(
        find(&c, "ratio", "requests_per_sec", "b").label("verdict"),
        Some("too_few_runs")
    );
    let c = compare_runs(
        &[group("a", side(&[100.0])), group("b", side(&[150.0]))],
        &Options::default(),
    )
    .unwrap();
    let r = find(&c, "ratio", "requests_per_sec", "b");
    assert_eq!((r.value, r.label("verdict")), (1.5, Some("no_test")));
    assert!(r.uncertainty.is_none());
    assert!(
        c.metrics.iter().all(|m| m.name != "p_value"),
        "no test, no p-value"
    );
    assert_eq!(counts(&c, "b"), [0.0, 0.0, 0.0, 1.0]);
    let gm = c.metric("geomean").unwrap();
    assert_eq!(gm.value, 1.5);
    assert!(
        gm.uncertainty.is_none(),
        "a factor without an interval leaves the score without one"
    );
}

fn latency_run(offset: u64) -> Run {
    let mut h = latency_histogram();
    for i in 0..20_000u64 {
        h.record(offset + (i * 7919) % 50_000).unwrap();
    }
    let mut m = Metric::new("latency_ns", Unit::Ns, Direction::LowerIsBetter, h.mean());
    m.histogram = Some(to_model(&h));
    run(Kind::Http, vec![m, rps(1000.0)])
}

#[test]
fn latency_histograms_are_compared_percentile_by_percentile() {
    let c = compare_runs(
        &[
            group("a", vec![latency_run(100_000)]),
            group("b", vec![latency_run(130_000)]),
        ],
        &Options::default(),
    )
    .unwrap();
    for p in ["50", "90", "99", "99.9"] {
        let subject = format!("latency_ns{{percentile={p}}}");
        let r = find(&c, "ratio", &subject, "b");
        assert_eq!(r.label("verdict"), Some("slower"), "p{p}: {r:?}");
        assert!(r.value > 1.0);
        let v = find(&c, "value", &subject, "a");
        assert_eq!(v.label("evidence"), Some("histogram"));
        assert_eq!(
            v.uncertainty.as_ref().unwrap().method,
            UncertaintyMethod::OrderStatistic
        );
    }
    assert!(
        c.metrics
            .iter()
            .all(|m| m.label("metric") != Some("latency_ns")),
        "the mean is not compared"
    );
    assert!(c.warnings.iter().any(|w| w.code == "histogram_intervals"));
}

#[test]
fn totals_and_notes_on_the_run_are_not_compared() {
    let metrics = || {
        vec![
            rps(10.0),
            Metric::new("requests", Unit::Count, Direction::LowerIsBetter, 5.0),
            Metric::new("bytes_read", Unit::Bytes, Direction::HigherIsBetter, 5.0),
            Metric::new("http_measured_ns", Unit::Ns, Direction::LowerIsBetter, 5.0),
            Metric::new(
                "client_cpu_percent",
                Unit::Percent,
                Direction::LowerIsBetter,
                5.0,
            ),
            Metric::new("peak_rss_bytes", Unit::Bytes, Direction::LowerIsBetter, 5.0),
        ]
    };
    let c = compare_runs(
        &[
            group("a", vec![run(Kind::Http, metrics())]),
            group("b", vec![run(Kind::Http, metrics())]),
        ],
        &Options::default(),
    )
    .unwrap();
    let mut compared: Vec<&str> = c
        .metrics
        .iter()
        .filter(|m| m.name == "ratio")
        .filter_map(|m| m.label("metric"))
        .collect();
    compared.sort_unstable();
    assert_eq!(compared, ["peak_rss_bytes", "requests_per_sec"]);
}

#[test]
fn metrics_without_a_partner_are_listed_not_dropped() {
    let disk = |tests: &[&str]| {
        run(
            Kind::Disk,
            tests
                .iter()
                .map(|t| {
                    Metric::new(
                        "disk_iops",
                        Unit::OpsPerSec,
                        Direction::HigherIsBetter,
                        100.0,
                    )
                    .with_label("test", *t)
                })
                .collect(),
        )
    };
    let c = compare_runs(
        &[
            group("ssd", vec![disk(&["RND4K Q1T1", "RND4K Q32T1"])]),
            group("hdd", vec![disk(&["RND4K Q1T1", "SEQ1M Q8T1"])]),
        ],
        &Options::default(),
    )
    .unwrap();
    let unmatched = c.settings["unmatched"].as_array().unwrap();
    assert_eq!(unmatched.len(), 2, "{unmatched:?}");
    assert_eq!(unmatched[0]["group"], "ssd");
    assert_eq!(unmatched[0]["metric"], "disk_iops{test=RND4K Q32T1}");
    assert_eq!(unmatched[1]["group"], "hdd");
    assert_eq!(unmatched[1]["metric"], "disk_iops{test=SEQ1M Q8T1}");
    assert!(
        c.warnings
            .iter()
            .any(|w| w.code == "unmatched_metrics" && w.message.starts_with("2 metrics"))
    );
}

#[test]
fn sweeps_match_by_parameter_and_single_commands_match_each_other() {
    let sweep = |cmd: &str, n: &str, s: &[f64]| wall(cmd, s).with_label("param.N", n);
    let c = compare_runs(
        &[
            group(
                "old",
                vec![run(
                    Kind::Exec,
                    vec![sweep("./old -j {N}", "2", &[1.0, 2.0])],
                )],
            ),
            group(
                "new",
                vec![run(
                    Kind::Exec,
                    vec![sweep("./new -j {N}", "2", &[1.0, 2.0])],
                )],
            ),
        ],
        &Options::default(),
    )
    .unwrap();
    assert!(
        c.metrics.iter().any(|m| m.name == "ratio"),
        "matched by param.N"
    );
    let c = compare_runs(
        &[
            group(
                "gzip",
                vec![run(Kind::Exec, vec![wall("gzip f", &[1.0, 2.0])])],
            ),
            group(
                "zstd",
                vec![run(Kind::Exec, vec![wall("zstd f", &[1.0, 2.0])])],
            ),
        ],
        &Options::default(),
    )
    .unwrap();
    assert!(c.metrics.iter().any(|m| m.name == "ratio"));
    assert!(c.warnings.iter().any(|w| w.code == "different_commands"));
}

#[test]
fn bad_comparisons_are_refused_with_a_reason() {
    let r = run(Kind::Http, vec![rps(1.0)]);
    let same = compare_runs(
        &[group("a", vec![r.clone()]), group("b", vec![r.clone()])],
        &Options::default(),
    );
    assert!(matches!(same, Err(VersusError::SameRun { .. })), "{same:?}");
    let one = compare_runs(&[group("a", vec![r.clone()])], &Options::default());
    assert!(matches!(one, Err(VersusError::TooFewGroups(1))));
    let empty = compare_runs(
        &[group("a", vec![r.clone()]), group("b", vec![])],
        &Options::default(),
    );
    assert!(matches!(empty, Err(VersusError::EmptyGroup(_))));
    let disk = run(
        Kind::Disk,
        vec![Metric::new(
            "disk_iops",
            Unit::OpsPerSec,
            Direction::HigherIsBetter,
            1.0,
        )],
    );
    let apart = compare_runs(
        &[group("a", vec![r.clone()]), group("b", vec![disk])],
        &Options::default(),
    )
    .unwrap_err();
    assert!(
        apart.to_string().contains("(http) and 'b' (disk)"),
        "{apart}"
    );
    let nested = run(Kind::Compare, vec![]);
    let n = compare_runs(
        &[group("a", vec![r]), group("b", vec![nested])],
        &Options::default(),
    );
    assert!(matches!(n, Err(VersusError::NestedCompare(_))));
    let bad_band = Options {
        noise_band: -0.1,
        ..Options::default()
    };
    let a = run(Kind::Http, vec![rps(1.0)]);
    let b = run(Kind::Http, vec![rps(1.0)]);
    assert!(matches!(
        compare_runs(&[group("a", vec![a]), group("b", vec![b])], &bad_band),
        Err(VersusError::Options(_))
    ));
}

#[test]
fn the_comparison_run_round_trips_through_json() {
    let c = compare_runs(
        &[
            group("a", vec![latency_run(100)]),
            group("b", vec![latency_run(120)]),
        ],
        &Options::default(),
    )
    .unwrap();
    let json = serde_json::to_string(&c).unwrap();
    let back: Run = serde_json::from_str(&json).unwrap();
    assert_eq!(back.metrics.len(), c.metrics.len());
    for (b, m) in back.metrics.iter().zip(&c.metrics) {
        assert_eq!((&b.name, &b.labels, b.unit), (&m.name, &m.labels, m.unit));
        assert!((b.value - m.value).abs() <= 1e-12 * m.value.abs());
    }
    assert_eq!(back.settings, c.settings);
}
