//! The page of hand-built runs: its safety (CSP, nothing fetched, hostile
//! text escaped) and each chart with the series and points plotters drew,
//! counted in the SVG itself, not only in our data attributes.

use dyno_model::{Direction, Kind, Metric, Run, Uncertainty, UncertaintyMethod, Unit};
use dyno_stats::hdr;
use serde_json::json;

use super::chart::{LATENCY, NEUTRAL, PALETTE, RATE, UNCORRECTED, hex};
use super::{DETAILED_RUNS, html_report, html_trend};

// ---- fixtures ----

fn histogram(values: impl IntoIterator<Item = u64>) -> dyno_model::Histogram {
    let mut h = hdr::latency_histogram();
    for v in values {
        h.record(v).unwrap();
    }
    hdr::to_model(&h)
}

fn with_histogram(name: &str, values: impl IntoIterator<Item = u64>) -> Metric {
    let mut m = Metric::new(name, Unit::Ns, Direction::LowerIsBetter, 0.0);
    m.histogram = Some(histogram(values));
    m
}

fn tally(name: &str, v: f64) -> Metric {
    Metric::new(name, Unit::Count, Direction::LowerIsBetter, v)
}

/// An HTTP run's headline: `requests_per_sec`.
fn requests_per_sec(v: f64) -> Metric {
    Metric::new(
        "requests_per_sec",
        Unit::RequestsPerSec,
        Direction::HigherIsBetter,
        v,
    )
}

/// A timeline's name, unit and direction.
type Timeline = (&'static str, Unit, Direction);

/// An HTTP run's requests/s over time.
const RATE_OVER_TIME: Timeline = (
    "timeline_requests_per_sec",
    Unit::RequestsPerSec,
    Direction::HigherIsBetter,
);
/// A run's p99 latency over time (0 for a second without an answer).
const P99_OVER_TIME: Timeline = (
    "timeline_latency_p99_ns",
    Unit::Ns,
    Direction::LowerIsBetter,
);

/// A metric over time as the engines record one: `value` overall, and one
/// sample a second.
fn timeline((name, unit, direction): Timeline, value: f64, samples: Vec<f64>) -> Metric {
    let mut m = Metric::new(name, unit, direction, value);
    m.samples = samples;
    m
}

/// A timeline whose direction does not matter to the page: lower is
/// better, and its value is its first second's.
fn series(name: &'static str, unit: Unit, samples: Vec<f64>) -> Metric {
    timeline((name, unit, Direction::LowerIsBetter), samples[0], samples)
}

fn interval(m: Metric, low: f64, high: f64, n: u64) -> Metric {
    let mut m = m;
    m.uncertainty = Some(Uncertainty {
        method: UncertaintyMethod::StudentT,
        confidence: 0.95,
        low,
        high,
        n,
        stddev: None,
    });
    m
}

/// An open-model HTTP run of 12,345 requests: latency corrected and not,
/// two statuses and an error class.
fn http_run() -> Run {
    let mut run = Run::new(Kind::Http, "GET http://127.0.0.1:8080/ 2000 req/s");
    run.settings = json!({"model": "open", "rate_per_sec": 2000.0});
    run.metrics = vec![
        requests_per_sec(2000.0),
        with_histogram("latency_ns", (0..12_345).map(|i| 50_000 + i * 37)),
        with_histogram(
            "latency_uncorrected_ns",
            (0..12_345).map(|i| 40_000 + i * 11),
        ),
        tally("status_200", 12_000.0),
        tally("status_503", 340.0),
        tally("errors_timeout", 5.0),
    ];
    run.headline = Some("requests_per_sec".into());
    run
}

fn disk_run() -> Run {
    let mut run = Run::new(Kind::Disk, "disk cdm8: 1 GiB on /data");
    for (test, mbs) in [("SEQ1M Q8T1", 2000e6), ("RND4K Q1T1", 50e6)] {
        for op in ["read", "write"] {
            let l = |m: Metric| m.with_label("test", test).with_label("op", op);
            run.metrics.push(l(Metric::new(
                "throughput_bytes_per_sec",
                Unit::BytesPerSec,
                Direction::HigherIsBetter,
                mbs,
            )));
            run.metrics.push(l(Metric::new(
                "iops",
                Unit::OpsPerSec,
                Direction::HigherIsBetter,
                mbs / 4096.0,
            )));
            run.metrics
                .push(l(with_histogram("latency_ns", (1..2_000).map(|i| i * 100))));
        }
    }
    run.headline = Some("throughput_bytes_per_sec".into());
    run
}

fn wall(command: &str, samples: &[f64]) -> Metric {
    let mean = samples.iter().sum::<f64>() / samples.len() as f64;
    let mut m = Metric::new("wall_ns", Unit::Ns, Direction::LowerIsBetter, mean)
        .with_label("command", command);
    m.samples = samples.to_vec();
    interval(m, mean * 0.97, mean * 1.03, samples.len() as u64)
}

/// A sweep over N = 1..4 of one command, 5 runs each; N = 2 has an outlier.
fn sweep_run() -> Run {
    let mut run = Run::new(Kind::Exec, "time 4 commands: 'sleep 0.0{N}'");
    run.settings = json!({"commands": [{"name": null, "template": "sleep 0.0{N}"}]});
    for n in 1..=4 {
        let base = f64::from(n) * 10e6;
        let mut s = vec![base, base * 1.01, base * 0.99, base * 1.02, base * 0.98];
        if n == 2 {
            s[4] = base * 3.0;
        }
        run.metrics
            .push(wall(&format!("sleep 0.0{n}"), &s).with_label("param.N", n.to_string()));
    }
    run
}

fn hostile_run() -> Run {
    let mut run = Run::new(Kind::Exec, "</script><img src=x onerror=alert(1)>");
    run.metrics = vec![wall(
        "</script><img src=x onerror=alert(1)>",
        &[1e6, 1.1e6, 0.9e6],
    )];
    run.tags = vec!["<b>tag</b>".into()];
    run.warn("odd", "<script>alert(2)</script>");
    run
}

fn scale_run() -> Run {
    let mut run = Run::new(Kind::Scale, "scaling from s.csv");
    let ratio = |name: &str, v: f64| Metric::new(name, Unit::Ratio, Direction::HigherIsBetter, v);
    for (n, t) in [
        (1, 10.0),
        (2, 5.3),
        (4, 2.9),
        (8, 1.8),
        (16, 1.4),
        (32, 1.5),
    ] {
        let s = 10.0 / t;
        let n_s = n.to_string();
        run.metrics.push(
            Metric::new("time_ns", Unit::Ns, Direction::LowerIsBetter, t * 1e9)
                .with_label("n", &n_s),
        );
        run.metrics.push(ratio("speedup", s).with_label("n", &n_s));
        run.metrics
            .push(ratio("efficiency", s / f64::from(n)).with_label("n", &n_s));
    }
    run.metrics.extend([
        ratio("amdahl_fit_parallel_fraction", 0.9),
        ratio("usl_sigma", 0.06),
        ratio("usl_kappa", 0.002),
        Metric::new(
            "usl_lambda",
            Unit::OpsPerSec,
            Direction::HigherIsBetter,
            0.105,
        ),
        Metric::new("usl_peak_n", Unit::Count, Direction::HigherIsBetter, 21.0),
        ratio("usl_peak_speedup", 7.2),
    ]);
    run
}

/// metric, kind, unit, direction, baseline, candidate, verdict, interval.
type Matched = (
    &'static str,
    &'static str,
    Unit,
    Direction,
    f64,
    f64,
    &'static str,
    (f64, f64),
);

/// A comparison of xeon (baseline) and opteron, as `dyno compare` records
/// it: three matched metrics of two kinds.
pub(super) fn compare_run() -> Run {
    let mut run = Run::new(Kind::Compare, "xeon vs opteron");
    run.settings = json!({
        "baseline": "xeon",
        "groups": [
            {"name": "xeon", "selector": "@tag:xeon", "runs": ["01JD5Z7M3Q8XK2V4N6R9T0W1YB"]},
            {"name": "opteron", "selector": "@tag:opteron", "runs": ["01JD5Z7M3Q8XK2V4N6R9T0W1YC"]}
        ],
        "noise": 0.02,
        "alpha": 0.05,
        "setting_differences": [{"key": "http.connections", "values": {"xeon": "16", "opteron": "64"}}],
        "environment_differences": [{"key": "cpu.model", "values": {"xeon": "Xeon <E5>", "opteron": "Opteron 6272"}}],
        "unmatched": [{"group": "xeon", "metric": "disk_iops{op=read, test=RND4K Q32T1}"}]
    });
    let rows: [Matched; 3] = [
        (
            "requests_per_sec",
            "http",
            Unit::RequestsPerSec,
            Direction::HigherIsBetter,
            100_000.0,
            80_000.0,
            "slower",
            (0.78, 0.82),
        ),
        (
            "latency_ns{percentile=99}",
            "http",
            Unit::Ns,
            Direction::LowerIsBetter,
            200_000.0,
            150_000.0,
            "faster",
            (0.70, 0.80),
        ),
        (
            "throughput_bytes_per_sec{op=read, test=SEQ1M Q8T1}",
            "disk",
            Unit::BytesPerSec,
            Direction::HigherIsBetter,
            2e9,
            2.01e9,
            "no_significant_difference",
            (0.98, 1.03),
        ),
    ];
    for (metric, kind, unit, dir, base, cand, verdict, (lo, hi)) in rows {
        for (group, v) in [("xeon", base), ("opteron", cand)] {
            run.metrics.push(
                Metric::new("value", unit, dir, v)
                    .with_label("metric", metric)
                    .with_label("kind", kind)
                    .with_label("group", group),
            );
        }
        run.metrics.push(interval(
            Metric::new("ratio", Unit::Ratio, dir, cand / base)
                .with_label("metric", metric)
                .with_label("kind", kind)
                .with_label("group", "opteron")
                .with_label("verdict", verdict),
            lo,
            hi,
            5,
        ));
        run.metrics.push(
            Metric::new("p_value", Unit::Ratio, Direction::LowerIsBetter, 0.008)
                .with_label("metric", metric)
                .with_label("kind", kind)
                .with_label("group", "opteron"),
        );
    }
    run.metrics.push(interval(
        Metric::new("geomean", Unit::Ratio, Direction::HigherIsBetter, 1.05)
            .with_label("group", "opteron"),
        0.95,
        1.16,
        3,
    ));
    run.headline = Some("geomean".into());
    run
}

// ---- reading the page ----

/// The first `<figure>` whose data-chart is `id`.
fn figure<'a>(html: &'a str, id: &str) -> &'a str {
    figures(html, id)
        .next()
        .unwrap_or_else(|| panic!("no chart {id} in the page"))
}

/// [`figure`] `id`, which draws `series` series.
fn figure_of_series<'a>(html: &'a str, id: &str, series: &str) -> &'a str {
    let fig = figure(html, id);
    assert_eq!(attr(fig, "data-series"), series, "{id}");
    fig
}

/// The page (or a figure of it) says `words`, and is shown whole when it
/// does not.
fn assert_says(html: &str, words: &str) {
    assert!(html.contains(words), "{html}");
}

fn figures<'a>(html: &'a str, id: &str) -> impl Iterator<Item = &'a str> + 'a {
    let needle = format!("data-chart=\"{id}\"");
    html.match_indices("<figure").filter_map(move |(at, _)| {
        let rest = &html[at..];
        let head_end = rest.find('>')?;
        if !rest[..head_end].contains(&needle) {
            return None;
        }
        let end = rest.find("</figure>")?;
        Some(&rest[..end])
    })
}

fn attr<'a>(fig: &'a str, name: &str) -> &'a str {
    let key = format!("{name}=\"");
    let at = fig.find(&key).unwrap() + key.len();
    &fig[at..at + fig[at..].find('"').unwrap()]
}

/// The number of points of each data line (a polyline of more than two
/// points) drawn in `colour`.
fn lines(fig: &str, colour: &str) -> Vec<usize> {
    fig.match_indices("<polyline")
        .filter_map(|(at, _)| {
            let tag = &fig[at..at + fig[at..].find("/>")?];
            if !tag.contains(&format!("stroke=\"{colour}\"")) {
                return None;
            }
            let points = attr(tag, "points").split_whitespace().count();
            (points > 2).then_some(points)
        })
        .collect()
}

/// The text of every SVG `<text>` element, trimmed.
fn texts(fig: &str) -> Vec<&str> {
    fig.split("<text")
        .skip(1)
        .filter_map(|t| Some(t[t.find('>')? + 1..t.find("</text>")?].trim()))
        .collect()
}

fn count(fig: &str, needle: &str) -> usize {
    fig.matches(needle).count()
}

// ---- the tests ----

#[test]
fn the_page_forbids_scripts_and_fetches_nothing() {
    let html = html_report(&[
        http_run(),
        disk_run(),
        sweep_run(),
        scale_run(),
        compare_run(),
    ]);
    assert!(html.starts_with("<!DOCTYPE html>"));
    assert!(html.contains(
        "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; img-src data:\">"
    ));
    assert!(!html.to_lowercase().contains("<script"));
    assert!(!html.contains("<link"));
    for attr in ["src=", "href=", "url("] {
        for (at, _) in html.match_indices(attr) {
            let value = &html[at + attr.len()..(at + attr.len() + 12).min(html.len())];
            assert!(
                !value.contains("http:") && !value.contains("https:") && !value.contains("//"),
                "a remote reference: {attr}{value}"
            );
        }
    }
    assert!(
        !html.contains("xmlns=\"http"),
        "inline SVG needs no namespace"
    );
    // Light, dark and print.
    assert!(html.contains("prefers-color-scheme: dark"));
    assert!(html.contains("@media print"));
    assert!(html.contains("fill: currentColor"));
}

#[test]
fn hostile_text_stays_text() {
    let html = html_report(&[hostile_run()]);
    assert!(
        !html.contains("<img"),
        "markup from a command name got through"
    );
    assert!(!html.contains("</script>"));
    assert!(!html.contains("<script>alert"));
    assert!(!html.contains("<b>tag"));
    assert!(html.contains("&lt;/script&gt;&lt;img src=x onerror=alert(1)&gt;"));
    // plotters escapes its own labels too.
    let fig = figure(&html, "exec-distribution");
    assert!(fig.contains("&lt;/script&gt;"));
}

#[test]
fn an_open_model_http_run_draws_corrected_and_uncorrected_spectra() {
    let html = html_report(&[http_run()]);
    let fig = figure_of_series(&html, "http-latency-spectrum", "2");
    // 12,345 samples resolve four decades (to 99.99%): 41 points and the max.
    let corrected = lines(fig, &hex(LATENCY));
    let uncorrected = lines(fig, &hex(UNCORRECTED));
    assert_eq!(corrected, vec![42]);
    assert_eq!(uncorrected, vec![42]);
    assert_eq!(attr(fig, "data-points"), "84");
    for label in ["0%", "90%", "99%", "99.9%", "99.99%"] {
        assert!(texts(fig).contains(&label), "no tick {label}");
    }
    assert!(fig.contains("latency (µs)") || fig.contains("latency (ms)"));
    assert!(fig.contains("<td>99.9%</td>"));

    let answers = figure(&html, "http-answers");
    assert_eq!(attr(answers, "data-points"), "3");
    assert_eq!(count(answers, "<rect"), 3);
    assert!(answers.contains("<td>HTTP 503</td><td class=\"n\">340</td>"));
    assert!(answers.contains("error: timeout"));
}

#[test]
fn an_http3_run_says_what_quic_did_and_others_do_not() {
    let mut run = http_run();
    assert!(!html_report(std::slice::from_ref(&run)).contains("What QUIC did"));
    run.metrics.extend([
        tally("h3_handshakes", 2.0),
        tally("h3_handshake_ns_sum", 4_000_000.0),
        tally("h3_handshake_ns_max", 2_500_000.0),
        tally("h3_datagrams_sent", 700.0),
        tally("h3_datagrams_received", 900.0),
        tally("h3_send_calls", 700.0),
        tally("h3_receive_calls", 300.0),
        tally("h3_packets_sent", 702.0),
        tally("h3_packets_lost", 3.0),
        tally("h3_rtt_min_ns", 40_000.0),
        tally("h3_rtt_max_ns", 90_000.0),
    ]);
    let html = html_report(&[run]);
    assert_says(&html, "<caption>What QUIC did (HTTP/3)</caption>");
    assert_says(&html, "2 handshakes (mean 2.000ms, max 2.500ms)");
    assert_says(&html, "received 900 (3.0 a receive call)");
    assert_says(&html, "packets lost 3 of 702 sent (0.43%)");
}

#[test]
fn a_closed_model_http_run_draws_one_spectrum() {
    let mut run = http_run();
    run.metrics.retain(|m| m.name != "latency_uncorrected_ns");
    let html = html_report(&[run]);
    let fig = figure_of_series(&html, "http-latency-spectrum", "1");
    assert_eq!(lines(fig, &hex(LATENCY)).len(), 1);
    assert!(lines(fig, &hex(UNCORRECTED)).is_empty());
}

#[test]
fn a_scenario_run_draws_latency_by_step_and_time_by_flow() {
    let mut run = http_run();
    run.metrics.retain(|m| m.name != "latency_uncorrected_ns");
    let step = |flow: &str, step: &str, base: u64| {
        with_histogram("step_latency_ns", (0..1000).map(move |i| base + i * 10))
            .with_label("flow", flow)
            .with_label("step", step)
    };
    run.metrics.extend([
        step("read", "messages", 50_000),
        step("write", "post", 300_000),
        step("write", "edit", 350_000),
        with_histogram("flow_duration_ns", (0..100).map(|i| 4_000_000 + i * 1000))
            .with_label("flow", "write"),
    ]);
    let html = html_report(&[run]);
    let steps = figure(&html, "http-step-latency");
    assert_eq!(attr(steps, "data-series"), "3");
    for name in ["read/messages", "write/post", "write/edit"] {
        assert!(steps.contains(name), "no {name}");
    }
    let flows = figure(&html, "http-flow-time");
    assert_eq!(attr(flows, "data-series"), "1");
    assert!(flows.contains("write"));
}

#[test]
fn a_disk_run_draws_the_panel_and_a_spectrum_per_operation() {
    let html = html_report(&[disk_run()]);
    let panel = figure(&html, "disk-panel");
    assert_eq!(count(panel, "class=\"tile\""), 4);
    assert!(panel.contains("<div class=\"mbs\">2000.00</div>"));
    // IOPS for the random test only.
    assert_eq!(count(panel, "IOPS</div>"), 2);
    for op in ["read", "write"] {
        let fig = figure_of_series(&html, &format!("disk-latency-{op}"), "2");
        assert_eq!(lines(fig, &hex(PALETTE[0])).len(), 1);
        assert_eq!(lines(fig, &hex(PALETTE[1])).len(), 1);
    }
}

#[test]
fn an_exec_sweep_draws_every_run_and_time_against_the_parameter() {
    let html = html_report(&[sweep_run()]);
    let dist = figure(&html, "exec-distribution");
    assert_eq!(attr(dist, "data-series"), "4");
    // Every run is a circle: 19 dots and one ringed outlier.
    assert_eq!(count(dist, "<circle"), 20);
    assert_eq!(
        count(dist, &format!("stroke=\"{}\"", hex(super::chart::WORSE))),
        1
    );
    let sweep = figure(&html, "exec-sweep");
    assert_eq!(lines(sweep, &hex(PALETTE[0])), vec![4]);
    // A dot per mean, and the one plotters' error bar draws at its centre.
    assert_eq!(count(sweep, "<circle"), 8);
    assert!(sweep.contains("mean wall time (ms)"));
}

#[test]
fn a_scale_run_draws_speedup_with_both_fits_and_the_peak() {
    let html = html_report(&[scale_run()]);
    let fig = figure_of_series(&html, "scale-speedup", "4");
    // Measured points: six filled circles and the legend's.
    assert_eq!(count(fig, &format!("fill=\"{}\"", hex(PALETTE[0]))), 7);
    assert_eq!(lines(fig, &hex(PALETTE[1])).len(), 1, "the Amdahl curve");
    assert_eq!(lines(fig, &hex(PALETTE[2])).len(), 1, "the USL curve");
    assert!(fig.contains("USL peak N* = 21"));
    let eff = figure(&html, "scale-efficiency");
    assert_eq!(lines(eff, &hex(PALETTE[0])), vec![6]);
}

#[test]
fn a_comparison_draws_improvement_factors_right_is_better() {
    let html = html_report(&[compare_run()]);
    let fig = figure(&html, "compare-factors");
    // Geomean and three metrics.
    assert_eq!(attr(fig, "data-points"), "4");
    let bars = |c| count(fig, &format!("fill=\"{}\"", hex(c)));
    assert_eq!(bars(super::chart::BETTER), 1, "p99 latency fell: better");
    assert_eq!(bars(super::chart::WORSE), 1, "req/s fell: worse");
    // Geomean (interval across 1) and the disk metric.
    assert_eq!(bars(super::chart::NEUTRAL), 2);
    // A lower-is-better ratio of 0.75 is an improvement of 1.333×.
    assert!(fig.contains("<td class=\"n\">0.750×</td>"));
    assert!(fig.contains("<td class=\"n\">1.333×</td>"));
    assert!(fig.contains("<td>no significant difference</td>"));
    assert!(fig.contains("<td class=\"n\">0.008</td>"));
    // Grouped by kind: disk before http, geomean first.
    let row = |cell: &str| fig.find(&format!("<tr><td>{cell}</td>")).unwrap();
    assert!(row("") < row("disk") && row("disk") < row("http"));
    let labels = texts(fig);
    assert!(labels.contains(&"geomean (all metrics)"));
    assert!(labels.contains(&"http · latency_ns p99"));
    assert!(html.contains("<td>cpu.model</td><td>Xeon &lt;E5&gt;</td><td>Opteron 6272</td>"));
    assert!(
        html.contains("<td>http.connections</td><td class=\"n\">16</td><td class=\"n\">64</td>")
    );
    assert!(html.contains("disk_iops{op=read, test=RND4K Q32T1}"));
}

#[test]
fn a_quick_run_draws_its_http_db_and_disk_parts() {
    let mut run = Run::new(Kind::Quick, "int64, HTTP on loopback, disk");
    run.metrics.push(Metric::new(
        "int64_1t_ns",
        Unit::Ns,
        Direction::LowerIsBetter,
        1e9,
    ));
    // As an earlier dyno saved the same run: each part's names behind its
    // prefix, and the names they refer to alike.
    let mut old = run.clone();
    let prefixed = |prefix: &str, m: &Metric| {
        let mut m = m.clone();
        m.name = format!("{prefix}_{}", m.name);
        for name in [&mut m.of, &mut m.rate_of].into_iter().flatten() {
            *name = format!("{prefix}_{name}");
        }
        m
    };
    for (part, of) in [
        ("http", http_run()),
        ("disk", disk_run()),
        ("db", db_run(3)),
    ] {
        run.metrics
            .extend(of.metrics.iter().map(|m| m.clone().of_part(part)));
        old.metrics
            .extend(of.metrics.iter().map(|m| prefixed(part, m)));
    }
    let old: Run = serde_json::from_value(serde_json::to_value(&old).unwrap()).unwrap();
    assert_eq!(old, run, "the old record reads as today's");
    let html = html_report(&[run]);
    for id in [
        "http-latency-spectrum",
        "http-answers",
        "db-latency-spectrum",
        "db-timeline-rate",
        "disk-panel",
        "disk-latency-read",
    ] {
        figure(&html, id);
    }
    // Both parts have a `latency_ns`: each draws its own (the http one's
    // are µs, the db one's ms), and the db timeline its own 3 seconds.
    let db = figure(&html, "db-latency-spectrum");
    assert!(
        db.contains("latency (ms)") && !db.contains("latency (µs)"),
        "{db}"
    );
    let http = figure(&html, "http-latency-spectrum");
    assert!(
        http.contains("latency (µs)") && !http.contains("latency (ms)"),
        "{http}"
    );
    assert_eq!(attr(figure(&html, "db-timeline-rate"), "data-points"), "3");
    assert!(html.contains("<td>int64_1t_ns</td>"));
    assert!(html.contains("<td>latency_ns{part=db}</td>"));
    assert!(html.contains("PostgreSQL (select-only)"));
}

#[test]
fn many_runs_get_an_overview_not_every_chart() {
    let runs: Vec<Run> = (0..DETAILED_RUNS + 1)
        .map(|i| {
            let mut r = http_run();
            r.id = dyno_model::RunId::new();
            r.started_at = jiff::Timestamp::from_second(1_790_000_000 + i as i64 * 3600).unwrap();
            r
        })
        .collect();
    let html = html_report(&runs);
    assert_eq!(figures(&html, "http-latency-spectrum").count(), 0);
    let fig = figure(&html, "summary-headline");
    assert_eq!(attr(fig, "data-points"), "13");
    assert_eq!(count(fig, "<circle"), 13);
    assert_eq!(count(&html, "<tr><td>"), 13, "one table row per run");
}

#[test]
fn a_trend_draws_one_metric_with_its_intervals() {
    let runs: Vec<Run> = (0..5)
        .map(|i| {
            let mut r = disk_run();
            r.started_at = jiff::Timestamp::from_second(1_790_000_000 + i * 86_400).unwrap();
            for m in &mut r.metrics {
                if m.name == "iops" {
                    *m = interval(m.clone(), m.value * 0.9, m.value * 1.1, 5);
                }
            }
            r
        })
        .collect();
    let html = html_trend(&runs, "iops{op=read,test=RND4K Q1T1}").unwrap();
    let fig = figure(&html, "trend");
    assert_eq!(attr(fig, "data-points"), "5");
    // A dot per run, and the one plotters' error bar draws at its centre.
    assert_eq!(count(fig, "<circle"), 10);
    // Each error bar: plotters draws its stem and two caps.
    assert!(count(fig, "<line") + count(fig, "<polyline") >= 15);
    assert!(fig.contains("iops (ops/s)"));
    assert!(html_trend(&runs, "no_such_metric").is_none());
}

#[test]
fn an_hour_long_timeline_is_drawn_in_buckets_with_a_short_table() {
    let mut run = http_run();
    let seconds = 3_600;
    let rates = (0..seconds).map(|s| 2000.0 + (s % 7) as f64).collect();
    // Second 100 had no answer: no point there, not a fast one.
    let p99s = (0..seconds)
        .map(|s| if s == 100 { 0.0 } else { 1e6 + s as f64 })
        .collect();
    run.metrics.extend([
        timeline(RATE_OVER_TIME, 2000.0, rates),
        timeline(P99_OVER_TIME, 1e6, p99s),
    ]);
    let html = html_report(&[run]);
    let rate = figure(&html, "http-timeline-rate");
    assert_eq!(attr(rate, "data-points"), "600");
    assert_eq!(lines(rate, &hex(RATE)), vec![600]);
    assert!(rate.contains("one point per 6 s"), "{rate}");
    let p99 = figure(&html, "http-timeline-p99");
    // Every bucket of six seconds has an answer, the one with second 100 too.
    assert_eq!(lines(p99, &hex(LATENCY)), vec![600]);
    assert_eq!(count(p99, "<tr>") - 1, 60, "the table has one row a minute");
    assert!(p99.contains("<td>0–60</td>"), "{p99}");
    assert!(html.len() < 2_000_000, "{} bytes", html.len());
}

#[test]
fn a_run_saved_without_a_timeline_says_so() {
    let html = html_report(&[http_run()]);
    assert!(figures(&html, "http-timeline-rate").next().is_none());
    assert!(html.contains("keeps no per-second timeline"));
}

// ---- issue 26: db runs, warnings, time axes, answers, small faults ----

/// A closed-model db run as `dyno db run` records it: tps, the latency
/// histogram, counts, and (when `seconds` > 0) the per-second timeline.
fn db_run(seconds: usize) -> Run {
    let mut run = Run::new(Kind::Db, "tpcb-like@1 at scale 10, 4 clients");
    run.settings = json!({"model": "closed", "clients": 4});
    run.metrics = vec![
        Metric::new(
            "transactions_per_sec",
            Unit::OpsPerSec,
            Direction::HigherIsBetter,
            438.7,
        ),
        with_histogram("latency_ns", (0..4_387).map(|i| 2_000_000 + i * 1_000)),
        tally("transactions", 4_387.0),
        Metric::new("connect_ns", Unit::Ns, Direction::LowerIsBetter, 2e7),
    ];
    if seconds > 0 {
        let tps = (
            "timeline_transactions_per_sec",
            Unit::OpsPerSec,
            Direction::HigherIsBetter,
        );
        let tpss = (0..seconds).map(|s| 430.0 + (s % 5) as f64 * 4.0).collect();
        // Second 3 committed nothing: a gap, not a fast second.
        let p99s = (0..seconds)
            .map(|s| if s == 3 { 0.0 } else { 6e6 + s as f64 * 1e4 })
            .collect();
        run.metrics.extend([
            timeline(tps, 438.7, tpss),
            timeline(P99_OVER_TIME, 6e6, p99s),
        ]);
    }
    run.headline = Some("transactions_per_sec".into());
    run
}

/// The tick labels of a time axis: the texts that are dates or times.
fn time_labels(fig: &str) -> Vec<&str> {
    texts(fig)
        .into_iter()
        .filter(|t| {
            t.len() >= 5
                && (t.contains(':') || t.matches('-').count() >= 1)
                && t.chars()
                    .all(|c| c.is_ascii_digit() || matches!(c, ':' | '-' | ' '))
        })
        .collect()
}

/// [`time_labels`], at least three of them, none twice.
fn time_labels_each_once(fig: &str) -> Vec<&str> {
    let labels = time_labels(fig);
    assert!(labels.len() >= 3, "{labels:?}");
    let mut unique = labels.clone();
    unique.sort_unstable();
    unique.dedup();
    assert_eq!(unique.len(), labels.len(), "a repeated label: {labels:?}");
    labels
}

/// `n` runs made by `run`, each with an id of its own, the first started at
/// `first` (seconds since the epoch) and the rest every `every` seconds.
fn started_every(run: fn() -> Run, n: i64, first: i64, every: i64) -> Vec<Run> {
    (0..n)
        .map(|i| {
            let mut r = run();
            r.id = dyno_model::RunId::new();
            r.started_at = jiff::Timestamp::from_second(first + i * every).unwrap();
            r
        })
        .collect()
}

/// M8: a db run is drawn as an HTTP run is: the latency spectrum from its
/// histogram, tps and p99 over time from its per-second series, and its
/// metric table keeps `438.7 ops/s` on one line.
#[test]
fn a_db_run_draws_its_latency_spectrum_and_tps_and_p99_over_time() {
    let html = html_report(&[db_run(10)]);
    let spectrum = figure(&html, "db-latency-spectrum");
    assert_eq!(attr(spectrum, "data-series"), "1");
    // 4,387 samples resolve three decades: 31 points and the max.
    assert_eq!(lines(spectrum, &hex(LATENCY)), vec![32]);
    assert!(spectrum.contains("latency (ms)"), "{spectrum}");
    let tps = figure(&html, "db-timeline-rate");
    assert_eq!(attr(tps, "data-points"), "10");
    assert_eq!(lines(tps, &hex(RATE)), vec![10]);
    assert!(tps.contains("transactions per second"), "{tps}");
    let p99 = figure(&html, "db-timeline-p99");
    // Second 3 has no commit: nine points, and the table says so.
    assert_eq!(attr(p99, "data-points"), "9");
    assert!(p99.contains("no commit"), "{p99}");
    assert!(p99.contains("p99 latency (ms)"), "{p99}");
    // The metric table follows, its value cells kept on one line.
    assert_says(&html, "<td class=\"n\">438.7 ops/s</td>");
    assert!(html.contains("white-space: nowrap"));
    let style = &html[html.find("td.n {").unwrap()..];
    assert!(
        style[..style.find('}').unwrap()].contains("white-space: nowrap"),
        "numeric cells must not wrap"
    );
    // A db run's connect_ns is its connections' time, not a mean.
    assert!(!html.contains("mean over requests"));
}

/// M8: a db run saved before it kept a timeline gets its spectrum and a
/// sentence, not empty charts.
#[test]
fn a_db_run_without_a_timeline_says_so() {
    let html = html_report(&[db_run(0)]);
    figure(&html, "db-latency-spectrum");
    assert_eq!(figures(&html, "db-timeline-rate").count(), 0);
    assert_says(&html, "keeps no per-second timeline");
    assert_says(&html, "tps and p99 over time are not drawn");
}

/// M2: the page of a comparison shows each compared run's own warning
/// with the runs that gave it, never the first run's words on all of them.
#[test]
fn a_comparison_page_keeps_each_runs_own_warning_words() {
    let mut comparison = compare_run();
    comparison.warn(
        "source_outliers",
        "all 3 runs: 'sleep 0.02': 4 of 12 runs are statistical outliers",
    );
    let run = |id: &str, message: &str| {
        let mut r = sweep_run();
        r.id = id.parse().unwrap();
        r.warn("outliers", message);
        r
    };
    let a = run(
        "01JD5Z7M3Q8XK2V4N6R9T0W1YB",
        "'sleep 0.02': 4 of 12 runs are statistical outliers",
    );
    let b = run(
        "01JD5Z8M3Q8XK2V4N6R9T0W1YC",
        "'sleep 0.024': 3 of 10 runs are statistical outliers",
    );
    let c = run(
        "01JD5Z9M3Q8XK2V4N6R9T0W1YD",
        "'sleep 0.02': 4 of 12 runs are statistical outliers",
    );
    let html = super::html_comparison(&comparison, &[a, b, c]);
    let lead = &html[..html.find("</section>").unwrap()];
    assert!(!lead.contains("all 3 runs"), "{lead}");
    assert!(
        lead.contains(
            "2 runs (01JD5Z7M3Q, 01JD5Z9M3Q): &#39;sleep 0.02&#39;: 4 of 12 runs are statistical outliers <code>[source_outliers]</code>"
        ),
        "{lead}"
    );
    assert!(
        lead.contains(
            "1 run (01JD5Z8M3Q): &#39;sleep 0.024&#39;: 3 of 10 runs are statistical outliers"
        ),
        "{lead}"
    );
}

/// L13: fifty hourly runs in the overview: ticks at whole hours, no label
/// twice; the Y axis says what the metric is in words.
#[test]
fn the_overview_time_axis_labels_round_times_once_each() {
    // 2026-11-20 00:47 UTC, then hourly.
    let runs = started_every(http_run, 50, 1_795_135_620, 3600);
    let html = html_report(&runs);
    let fig = figure(&html, "summary-headline");
    let labels = time_labels_each_once(fig);
    for l in &labels {
        assert!(l.ends_with(":00"), "a tick at an odd time: {labels:?}");
        assert!(
            l.contains(' '),
            "a tick without its date or time: {labels:?}"
        );
    }
    assert_says(fig, "throughput (req/s)");
    assert!(!fig.contains("requests_per_sec (req/s)"), "{fig}");
}

/// L13: runs within a minute: the ticks show times with seconds, each once,
/// and the axis title carries the date they share.
#[test]
fn a_trend_within_a_minute_shows_times_and_the_date_once() {
    let runs = started_every(sweep_run, 4, 1_795_675_620, 12);
    let html = html_trend(&runs, "wall_ns{command=sleep 0.01, param.N=1}").unwrap();
    let fig = figure(&html, "trend");
    let labels = time_labels_each_once(fig);
    for l in &labels {
        assert_eq!(l.matches(':').count(), 2, "no seconds: {labels:?}");
        assert!(!l.contains('-'), "the date repeated on a tick: {labels:?}");
    }
    assert!(fig.contains("run started on 2026-11-26 (UTC)"), "{fig}");
    assert!(fig.contains("wall time (ms)"), "{fig}");
    assert!(!fig.contains("wall_ns (ms)"), "{fig}");
}

/// L14: an unexpected status is one answer: drawn as its status bar, not
/// again as an "error: status" bar of their sum.
#[test]
fn unexpected_statuses_are_counted_once_in_the_answers() {
    let mut run = http_run();
    run.metrics
        .retain(|m| !m.name.starts_with("status_") && !m.name.starts_with("errors_"));
    run.metrics.extend([
        tally("status_200", 30_118.0),
        tally("status_503", 30_118.0),
        tally("status_404", 30_118.0),
        tally("errors_status", 60_236.0),
        tally("errors_timeout", 2.0),
    ]);
    let html = html_report(&[run]);
    let fig = figure(&html, "http-answers");
    assert_eq!(attr(fig, "data-points"), "4");
    assert_eq!(count(fig, "<rect"), 4);
    assert!(!texts(fig).contains(&"error: status"), "{fig}");
    assert!(!fig.contains("<td class=\"n\">60236</td>"), "{fig}");
    assert!(fig.contains("error: timeout"));
    assert_says(
        fig,
        "60236 requests answered with a status outside --expect-status",
    );
}

/// L15: a run with no answer draws no empty chart and no axis in raw ns;
/// it says there is nothing to draw.
#[test]
fn a_run_without_answers_draws_no_empty_charts() {
    let mut run = Run::new(Kind::Http, "GET http://127.0.0.1:9/");
    run.metrics = vec![
        requests_per_sec(0.0),
        with_histogram("latency_ns", []),
        tally("errors_timeout", 40.0),
        timeline(RATE_OVER_TIME, 0.0, vec![0.0; 5]),
        timeline(P99_OVER_TIME, 0.0, vec![0.0; 5]),
    ];
    let html = html_report(&[run]);
    assert_eq!(figures(&html, "http-timeline-rate").count(), 0);
    assert_eq!(figures(&html, "http-timeline-p99").count(), 0);
    assert_eq!(figures(&html, "http-latency-spectrum").count(), 0);
    assert!(!html.contains("(ns)"), "an axis in raw ns");
    assert_says(
        &html,
        "No answer in any of the run&#39;s 5 s: nothing to draw over time.",
    );
    assert_says(&html, "No request was answered");
    // The failures are still drawn.
    figure(&html, "http-answers");
}

/// L15: an open-model (--rate) run's p99 over time says it is the
/// corrected latency; a closed run's does not.
#[test]
fn an_open_model_p99_timeline_says_it_is_corrected() {
    let timeline = |run: &mut Run| {
        run.metrics.extend([
            timeline(RATE_OVER_TIME, 2000.0, vec![2000.0; 4]),
            timeline(P99_OVER_TIME, 1e6, vec![1e6; 4]),
        ]);
    };
    let mut open = http_run();
    timeline(&mut open);
    let html = html_report(&[open]);
    let fig = figure(&html, "http-timeline-p99");
    assert!(
        fig.contains("HTTP p99 latency over time (corrected)"),
        "{fig}"
    );
    assert!(fig.contains("from each request&#39;s due time"), "{fig}");
    // A closed run: its record says so, and it has no uncorrected latency
    // (either alone makes a run open: `HttpFigures::of`).
    let mut closed = http_run();
    closed.settings = json!({"model": "closed"});
    closed
        .metrics
        .retain(|m| m.name != "latency_uncorrected_ns");
    timeline(&mut closed);
    let html = html_report(&[closed]);
    let fig = figure(&html, "http-timeline-p99");
    assert!(!fig.contains("corrected"), "{fig}");
}

/// The y coordinates of the first data line drawn in `colour`.
fn line_ys(fig: &str, colour: &str) -> Vec<f64> {
    let at = fig
        .match_indices("<polyline")
        .map(|(at, _)| &fig[at..at + fig[at..].find("/>").unwrap()])
        .find(|tag| {
            tag.contains(&format!("stroke=\"{colour}\""))
                && attr(tag, "points").split_whitespace().count() > 2
        })
        .unwrap();
    attr(at, "points")
        .split_whitespace()
        .map(|p| p.split(',').nth(1).unwrap().parse().unwrap())
        .collect()
}

/// L15: disk latency in µs beside latency in ms: the axis turns
/// logarithmic, so the µs line keeps its shape instead of lying on zero.
#[test]
fn disk_latency_in_microseconds_stays_visible_beside_milliseconds() {
    let mut run = Run::new(Kind::Disk, "disk cdm8");
    for (test, base, step) in [("SEQ1M Q8T1", 8_000_000, 2_000), ("RND4K Q1T1", 60_000, 40)] {
        run.metrics.push(
            with_histogram("latency_ns", (0..2_000).map(|i| base + i * step))
                .with_label("test", test)
                .with_label("op", "read"),
        );
    }
    let html = html_report(&[run]);
    let fig = figure(&html, "disk-latency-read");
    assert!(fig.contains("log scale)"), "{fig}");
    let ys = line_ys(fig, &hex(PALETTE[1]));
    let spread =
        ys.iter().copied().fold(f64::MIN, f64::max) - ys.iter().copied().fold(f64::MAX, f64::min);
    assert!(spread > 20.0, "the µs line spans {spread} px");
    // One run of one kind keeps the linear axis from zero.
    let html = html_report(&[http_run()]);
    assert!(!figure(&html, "http-latency-spectrum").contains("log scale)"));
}

/// L15: the parallel fraction reads as a percentage in the report, as
/// `dyno show` prints it, not as `0.22×`.
#[test]
fn the_parallel_fraction_is_a_percentage() {
    let mut run = Run::new(Kind::Quick, "int64 on 1 and 4 threads");
    run.metrics = vec![Metric::new(
        "int64_amdahl_parallel_fraction",
        Unit::Ratio,
        Direction::HigherIsBetter,
        0.22,
    )];
    let html = html_report(&[run]);
    assert_says(&html, "<td class=\"n\">22.0%</td>");
    assert!(!html.contains("0.22×"));
}

/// real-clients item 15: ab-style split times in a metric table say they
/// are means over requests.
#[test]
fn split_times_in_a_metric_table_are_labelled_means() {
    let mut run = Run::new(Kind::Cpu, "x");
    run.metrics = vec![with_histogram("connect_ns", [0, 0, 0, 21_780])];
    let html = html_report(&[run]);
    assert_says(&html, "<td>connect_ns (mean over requests)</td>");
}

#[test]
fn a_capacity_search_draws_its_steps_with_the_target_and_the_answer() {
    let mut run = http_run();
    let step = |requested: f64, p99_ms: u64, passed: bool| {
        json!({"purpose": "bracket", "requested": requested, "achieved": requested,
               "p50_ns": 1_000_000, "p99_ns": p99_ms * 1_000_000, "p999_ns": p99_ms * 2_000_000,
               "requests": 1000, "errors": 0, "sends": 1000, "late": 0,
               "passed": passed, "why": if passed { json!([]) } else { json!(["p99 too high"]) }})
    };
    run.settings["capacity"] = json!({
        "slo": "p99<=20ms",
        "start": 200.0,
        "precision": 0.05,
        "answer": {"outcome": "found", "max_rate": 476.0, "above_rate": 490.0},
        "steps": [step(224.0, 3, true), step(448.0, 4, true), step(896.0, 2700, false),
                  step(476.0, 8, true), step(490.0, 111, false)],
    });
    let html = html_report(&[run]);
    let fig = figure(&html, "capacity-steps");
    assert_eq!(attr(fig, "data-points"), "5");
    // Three passes as green dots, two fails as crosses, and the answer in
    // the caption of the step table.
    assert_eq!(
        count(fig, &format!("fill=\"{}\"", hex(super::chart::BETTER))),
        4
    );
    assert!(fig.contains("max sustainable 476 req/s (bracket 476–490) at p99&lt;=20ms"));
    assert!(fig.contains("fail: p99 too high"));
    // The run's own charts follow: they are the step at the answer.
    assert!(html.find("capacity-steps").unwrap() < html.find("http-latency-spectrum").unwrap());
}

/// What was watched is drawn second by second on the run's own axis,
/// below the rate and the p99, one line per source, with a table of each
/// one's mean and highest second; a run that watched nothing has no such
/// chart.
#[test]
fn what_was_watched_is_drawn_over_the_runs_seconds() {
    let mut run = http_run();
    run.metrics.extend([
        series(
            "timeline_requests_per_sec",
            Unit::RequestsPerSec,
            vec![2000.0; 4],
        ),
        series("timeline_latency_p99_ns", Unit::Ns, vec![1e6; 4]),
    ]);
    let html = html_report(std::slice::from_ref(&run));
    assert!(!html.contains("watched-timeline"));
    let mut cpu = series(
        "timeline_server_cpu_percent",
        Unit::Percent,
        vec![40.0, 99.0, 98.0, 20.0],
    );
    cpu.labels.insert("watched".into(), "nginx".into());
    let mut machine = series(
        "timeline_target_cpu_busy_percent",
        Unit::Percent,
        vec![30.0, 60.0, 61.0, 10.0],
    );
    machine
        .labels
        .insert("watched".into(), "10.0.0.2:9100".into());
    run.metrics.extend([cpu, machine]);
    let html = html_report(&[run]);
    let fig = figure(&html, "watched-timeline");
    assert!(fig.contains("nginx: CPU, % of one core"), "{fig}");
    assert!(fig.contains("10.0.0.2:9100: machine busy"), "{fig}");
    // The table: nginx's mean (64.25) and highest second (99).
    assert!(fig.contains("64.25%") && fig.contains("99.00%"), "{fig}");
}

// ---- issue 49: a replay's rate against the log's ----

/// A replay at 2× as `dyno http --replay` records it: the log's requests
/// in each second of the replay (five, one past the run's four: the run
/// was cut by -d) and the run's own timeline, which fell behind in its
/// second second.
fn replay_run() -> Run {
    let mut run = http_run();
    run.settings = json!({
        "model": "open", "warmup_ns": 0,
        "replay": {
            "file": "access.log", "format": "combined", "speed": 2.0,
            "requests": 390, "passes": 1, "cut": true,
            "log_per_second": [100, 200, 50, 0, 40],
        },
    });
    run.metrics.extend([
        timeline(RATE_OVER_TIME, 87.5, vec![98.0, 150.0, 92.0, 10.0]),
        timeline(P99_OVER_TIME, 1e6, vec![1e6, 9e6, 4e6, 1e6]),
    ]);
    run
}

/// A timeline table's first cells: the seconds, the rate replayed and the
/// log's.
fn cells((seconds, replayed, log): (&str, &str, &str)) -> String {
    format!("<td>{seconds}</td><td class=\"n\">{replayed}</td><td class=\"n\">{log}</td>")
}

/// Issue 49: a replay's rate chart draws the log's rate at the replay's
/// speed against the rate replayed, a point a second each, with a legend,
/// and the timeline's table gives the log's rate a column; a run that is
/// no replay draws its rate alone.
#[test]
fn a_replay_draws_its_rate_against_the_logs() {
    let html = html_report(&[replay_run()]);
    let fig = figure_of_series(&html, "http-timeline-rate", "2");
    assert_eq!(attr(fig, "data-points"), "8");
    assert_eq!(lines(fig, &hex(RATE)), vec![4]);
    assert_eq!(lines(fig, &hex(NEUTRAL)), vec![4], "the log's line: {fig}");
    let legend = texts(fig);
    for name in [
        "the log at 2×: requests due",
        "replayed: requests completed",
    ] {
        assert!(legend.contains(&name), "{name} not in {legend:?}");
    }
    // Drawn on one axis: the log's 200 in second 1 is above the 150
    // replayed (a smaller y in SVG), its 0 in second 3 below the 10.
    let (log, replayed) = (line_ys(fig, &hex(NEUTRAL)), line_ys(fig, &hex(RATE)));
    assert!(
        log[1] < replayed[1] && log[3] > replayed[3],
        "{log:?} {replayed:?}"
    );
    assert_says(fig, "the log&#39;s time ÷ 2");
    assert_says(
        fig,
        "the log&#39;s seconds after the run&#39;s end are not drawn",
    );
    // The table: the log's rate beside the replayed one, second by second;
    // its fifth second, after the run's end, has no row.
    let table = figure(&html, "http-timeline-p99");
    assert_says(table, "<th>the log&#39;s req/s at 2× (mean)</th>");
    for row in [
        ("0–1", "98.00", "100.0"),
        ("1–2", "150.0", "200.0"),
        ("2–3", "92.00", "50.00"),
        ("3–4", "10.00", "0"),
    ] {
        assert_says(table, &cells(row));
    }
    assert_eq!(count(table, "<tr>") - 1, 4);

    // No replay: the rate alone, no legend, no column.
    let mut plain = replay_run();
    plain.settings = json!({"model": "open"});
    let html = html_report(&[plain]);
    let fig = figure_of_series(&html, "http-timeline-rate", "1");
    assert_eq!(lines(fig, &hex(NEUTRAL)), Vec::<usize>::new());
    assert!(!html.contains("the log"), "{fig}");
    assert_says(
        figure(&html, "http-timeline-p99"),
        "<td>0–1</td><td class=\"n\">98.00</td><td class=\"n\">1.000 ms</td>",
    );
}

/// A long replay's two lines are bucketed alike: the log's point of each
/// bucket is the mean of its seconds, as the replayed rate's is.
#[test]
fn a_long_replay_buckets_the_logs_rate_as_the_runs() {
    let mut run = replay_run();
    let seconds = 1_200;
    run.settings["replay"]["log_per_second"] = json!(vec![300; seconds]);
    run.settings["replay"]["cut"] = json!(false);
    run.metrics.retain(|m| !m.name.starts_with("timeline_"));
    run.metrics.extend([
        timeline(RATE_OVER_TIME, 300.0, vec![300.0; seconds]),
        timeline(P99_OVER_TIME, 1e6, vec![1e6; seconds]),
    ]);
    let html = html_report(&[run]);
    let fig = figure_of_series(&html, "http-timeline-rate", "2");
    assert_eq!(lines(fig, &hex(RATE)), vec![600]);
    assert_eq!(lines(fig, &hex(NEUTRAL)), vec![600]);
    // The same rate: the two lines lie on each other.
    assert_eq!(line_ys(fig, &hex(NEUTRAL)), line_ys(fig, &hex(RATE)));
    let table = figure(&html, "http-timeline-p99");
    assert_says(table, &cells(("0–20", "300.0", "300.0")));
}

// ---- real-clients 2026-11-d items 11 and 12, newcomer L16 ----

/// An open-model run as `dyno http --rate` records it: its settings, the
/// client's CPU, and a per-second timeline.
fn http_run_with_settings() -> Run {
    let mut run = http_run();
    run.settings = json!({
        "url": "http://127.0.0.1:8080/", "method": "GET", "model": "open",
        "rate_per_sec": 2000.0, "connections": 16, "threads": 2,
        "duration_ns": 5_000_000_000u64, "warmup_ns": 500_000_000u64,
        "keep_alive": true, "expect_status": "200-399",
    });
    run.metrics.extend([
        Metric::new(
            "client_cpu_percent",
            Unit::Percent,
            Direction::LowerIsBetter,
            35.0,
        ),
        series(
            "timeline_requests_per_sec",
            Unit::RequestsPerSec,
            vec![2000.0; 4],
        ),
        series(
            "timeline_latency_p99_ns",
            Unit::Ns,
            vec![1e6, 1.2e6, 1.1e6, 1e6],
        ),
    ]);
    run
}

/// The lines of the text report that start with `label`, less the label.
fn text_lines(run: &Run, label: &str) -> Vec<String> {
    crate::http_report(run)
        .lines()
        .filter_map(|l| l.strip_prefix(label).map(|r| r.trim().to_owned()))
        .collect()
}

/// real-clients 11: an http page leads with what the text report leads
/// with: the target, the model with its rate, the settings (connections,
/// threads, keep-alive, duration, warm-up) and the client's CPU, in the
/// same words; and it ends with every metric, as a db page does.
#[test]
fn an_http_page_leads_with_its_settings_and_the_client_cpu() {
    let run = http_run_with_settings();
    let html = html_report(std::slice::from_ref(&run));
    let section = &html[html.find("<section").unwrap()..];
    let how = &section[section
        .find("<table class=\"facts\">")
        .expect("no settings table")..];
    let how = &how[..how.find("</table>").unwrap()];
    assert!(how.contains("<caption>How it ran</caption>"), "{how}");
    for label in ["Target", "Model", "Settings", "Client CPU"] {
        let words = text_lines(&run, label);
        assert_eq!(words.len(), 1, "{label}: {words:?}");
        assert!(
            how.contains(&format!(
                "<th scope=\"row\">{label}</th><td>{}</td>",
                super::esc(&words[0])
            )),
            "{label} {words:?} not in {how}"
        );
    }
    for words in [
        "open model: 2000 req/s",
        "16 connections, 2 worker threads, keep-alive",
        "warm-up excluded",
        "35% of 2 worker threads",
    ] {
        assert!(how.contains(words), "no {words} in {how}");
    }
    // The settings come first, before the charts.
    assert!(html.find("How it ran").unwrap() < html.find("http-latency-spectrum").unwrap());
    // Every metric, at the end of the section.
    let every = &section[section
        .find("<h3>Every metric</h3>")
        .expect("no metric table")..];
    assert!(every.find("</section>").unwrap() < every.find("<figure").unwrap_or(usize::MAX));
    assert!(every.contains("<td>status_503</td>"), "{every}");
    assert!(every.contains("<td>client_cpu_percent</td>"), "{every}");
}

/// A watched server's cost, as `--watch-pid` records it.
fn watched(run: &mut Run, name: &str) {
    let w = |metric: &str, unit, v: f64| {
        Metric::new(metric, unit, Direction::LowerIsBetter, v).with_label("watched", name)
    };
    run.metrics.extend([
        w("server_cpu_percent", Unit::Percent, 41.34),
        w("server_cpu_system_percent", Unit::Percent, 62.0),
        w("server_cpu_per_op_ns", Unit::Ns, 5_218.0),
        w("server_context_switches_per_op", Unit::Count, 0.0213),
        w("server_memory_peak", Unit::Bytes, 12.0 * 1024.0 * 1024.0),
    ]);
}

/// real-clients 11: a watched run's page shows the server's CPU per
/// request, its kernel share, context switches per request and peak
/// memory, as the text report's Server CPU line says them.
#[test]
fn a_watched_run_shows_what_the_server_cost_per_request() {
    let mut run = http_run_with_settings();
    watched(&mut run, "nginx");
    let text = text_lines(&run, "Server CPU");
    assert_eq!(
        text,
        vec![
            "nginx: 41.3% of a core (62% in the kernel), 5.218µs per request, 0.0213 context switches per request, peak memory 12 MiB"
        ]
    );
    let html = html_report(&[run]);
    let at = html
        .find("<caption>What the watched server cost</caption>")
        .expect("no server cost table");
    let table = &html[at..at + html[at..].find("</table>").unwrap()];
    for header in [
        "CPU (% of a core)",
        "in the kernel",
        "CPU per request",
        "context switches per request",
        "peak memory",
    ] {
        assert!(table.contains(&format!("<th>{header}</th>")), "{table}");
    }
    assert!(
        table.contains(
            "<tr><td>nginx</td><td class=\"n\">41.3%</td><td class=\"n\">62%</td><td class=\"n\">5.218µs</td><td class=\"n\">0.0213</td><td class=\"n\">12 MiB</td></tr>"
        ),
        "{table}"
    );
    // A run that watched nothing has no such table.
    let html = html_report(&[http_run_with_settings()]);
    assert!(!html.contains("What the watched server cost"));
}

/// The `(y, text)` of each SVG `<text>` of a figure.
fn text_ys(fig: &str) -> Vec<(f64, &str)> {
    fig.split("<text")
        .skip(1)
        .filter_map(|t| {
            let tag = &t[..t.find('>')?];
            let y = attr(tag, "y").parse().ok()?;
            Some((y, t[t.find('>')? + 1..t.find("</text>")?].trim()))
        })
        .collect()
}

/// The top of a figure's plotting area: the highest end of its vertical
/// axis line.
fn plot_top(fig: &str) -> f64 {
    fig.match_indices("<polyline")
        .filter_map(|(at, _)| {
            let tag = &fig[at..at + fig[at..].find("/>")?];
            if !tag.contains("stroke=\"#000000\"") {
                return None;
            }
            let ends: Vec<(f64, f64)> = attr(tag, "points")
                .split_whitespace()
                .filter_map(|p| {
                    let (x, y) = p.split_once(',')?;
                    Some((x.parse().ok()?, y.parse().ok()?))
                })
                .collect();
            match ends[..] {
                [(x0, y0), (x1, y1)] if x0 == x1 && y0 != y1 => Some(y0.min(y1)),
                _ => None,
            }
        })
        .fold(f64::INFINITY, f64::min)
}

/// real-clients 12: a legend never sits on data: every legend entry is
/// above the plotting area, where no point, line or target is drawn (the
/// first CPU point of "What was watched" was under its legend, the 20 ms
/// target crossed the capacity legend).
#[test]
fn legends_sit_above_the_data() {
    let mut run = http_run_with_settings();
    let mut cpu = Metric::new(
        "timeline_server_cpu_percent",
        Unit::Percent,
        Direction::LowerIsBetter,
        90.0,
    );
    cpu.samples = vec![99.0, 98.0, 97.0, 99.0];
    cpu.labels.insert("watched".into(), "nginx".into());
    let mut machine = cpu.clone();
    machine.name = "timeline_target_cpu_busy_percent".into();
    machine
        .labels
        .insert("watched".into(), "10.0.0.2:9100".into());
    run.metrics.extend([cpu, machine]);
    capacity(
        &mut run,
        "found",
        &[(3.8, true), (2700.0, false), (20.5, false)],
    );
    let html = html_report(&[run]);
    for (id, names) in [
        (
            "watched-timeline",
            &[
                "nginx: CPU, % of one core",
                "10.0.0.2:9100: machine busy, % of all cores",
            ][..],
        ),
        ("capacity-steps", &["p99 target", "pass", "fail"][..]),
        (
            "http-latency-spectrum",
            &[
                "latency (corrected: from due time)",
                "uncorrected (from send)",
            ][..],
        ),
    ] {
        let fig = figure(&html, id);
        let top = plot_top(fig);
        assert!(top.is_finite() && top > 0.0, "{id}: no axis");
        for name in names {
            let (y, _) = text_ys(fig)
                .into_iter()
                .find(|(_, t)| t == name)
                .unwrap_or_else(|| panic!("{id}: no legend entry {name}"));
            assert!(
                y + 8.0 < top,
                "{id}: {name} at y = {y}, the plot from y = {top}"
            );
        }
    }
}

/// A capacity search on `run` with `outcome` and steps of (p99 in ms,
/// passed), its answer bracketing the highest pass and the lowest fail.
fn capacity(run: &mut Run, outcome: &str, steps: &[(f64, bool)]) {
    let step = |i: usize, p99_ms: f64, passed: bool| {
        json!({"purpose": "bracket", "requested": 100.0 * (i + 1) as f64,
               "achieved": 100.0 * (i + 1) as f64, "p50_ns": 1_000_000,
               "p99_ns": (p99_ms * 1e6) as u64, "p999_ns": (p99_ms * 2e6) as u64,
               "requests": 1000, "errors": 0, "sends": 1000, "late": 0,
               "passed": passed, "why": if passed { json!([]) } else { json!(["p99 too high"]) }})
    };
    let rate = |want: bool| {
        steps
            .iter()
            .enumerate()
            .filter(|(_, s)| s.1 == want)
            .map(|(i, _)| 100.0 * (i + 1) as f64)
            .collect::<Vec<f64>>()
    };
    let max = rate(true).into_iter().fold(0.0, f64::max);
    let above = rate(false).into_iter().fold(f64::INFINITY, f64::min);
    run.settings["capacity"] = json!({
        "slo": "p99<=20ms",
        "objective": {"latency": [{"percentile": 99.0, "limit_ns": 20_000_000}]},
        "start": 100.0,
        "precision": 0.05,
        "answer": {"outcome": outcome, "max_rate": max, "above_rate": above},
        "steps": steps.iter().enumerate().map(|(i, s)| step(i, s.0, s.1)).collect::<Vec<_>>(),
    });
}

/// The labels of a chart's y axis: its texts that are plain numbers.
fn numeric_labels(fig: &str) -> Vec<f64> {
    texts(fig)
        .into_iter()
        .filter_map(|t| t.parse::<f64>().ok())
        .collect()
}

/// real-clients 12, newcomer L16: the capacity chart's log p99 axis is
/// labelled where the points are: at least three labels among passing
/// steps at 3.8–9.1 ms under a 20 ms target (not only 10, 20 and 30).
#[test]
fn the_capacity_p99_axis_is_labelled_where_the_points_are() {
    let mut run = http_run();
    let passes = [3.8, 4.4, 5.0, 5.9, 6.6, 7.3, 9.1];
    let mut steps: Vec<(f64, bool)> = passes.iter().map(|&p| (p, true)).collect();
    steps.extend([(31.0, false), (25.0, false), (22.0, false)]);
    capacity(&mut run, "found", &steps);
    let html = html_report(&[run]);
    let fig = figure(&html, "capacity-steps");
    let labels = numeric_labels(fig);
    let among = labels.iter().filter(|&&l| (3.8..=9.1).contains(&l)).count();
    assert!(among >= 3, "labels {labels:?}");
    assert!(labels.contains(&20.0), "labels {labels:?}");
}

/// real-clients 12, newcomer L16: an unsettled search says "not settled"
/// once on its page, and its answer is said once, not in the table's
/// caption again.
#[test]
fn a_capacity_page_says_its_answer_once() {
    for (outcome, answer) in [
        (
            "unfinished",
            "not settled: passes at 200 req/s, fails at 300 req/s",
        ),
        ("found", "max sustainable 200 req/s"),
    ] {
        let mut run = http_run_with_settings();
        capacity(
            &mut run,
            outcome,
            &[(4.0, true), (6.0, true), (30.0, false)],
        );
        let html = html_report(&[run]);
        assert_eq!(count(&html, answer), 1, "{outcome}: {html}");
        let fig = figure(&html, "capacity-steps");
        assert!(!fig.contains("<caption>not settled"), "{fig}");
    }
}

/// real-clients 12: on a --rate page, the corrected latency has one colour
/// and the uncorrected another, the same on every chart: the p99 over time
/// (the corrected latency) is drawn in the spectrum's corrected colour,
/// never in its uncorrected one, and the rate in neither.
#[test]
fn corrected_and_uncorrected_keep_their_colours_on_every_chart() {
    let html = html_report(&[http_run_with_settings()]);
    let spectrum = figure(&html, "http-latency-spectrum");
    assert_eq!(lines(spectrum, &hex(LATENCY)).len(), 1);
    assert_eq!(lines(spectrum, &hex(UNCORRECTED)).len(), 1);
    let p99 = figure(&html, "http-timeline-p99");
    assert_eq!(lines(p99, &hex(LATENCY)), vec![4]);
    assert!(lines(p99, &hex(UNCORRECTED)).is_empty(), "{p99}");
    let rate = figure(&html, "http-timeline-rate");
    assert_eq!(lines(rate, &hex(RATE)), vec![4]);
    for c in [LATENCY, UNCORRECTED] {
        assert_ne!(hex(RATE), hex(c));
        assert!(lines(rate, &hex(c)).is_empty(), "{rate}");
    }
    assert_ne!(hex(LATENCY), hex(UNCORRECTED));
}

/// One run of `./work.sh` at `ms` milliseconds (its interval ±3%), tagged
/// `rev:{rev}`, started `hour` hours after 2026-11-20 00:00 UTC on `cpu`.
fn work_run(ms: f64, rev: &str, hour: i64, cpu: &str) -> Run {
    let mut run = Run::new(Kind::Exec, "time './work.sh'");
    run.started_at = jiff::Timestamp::from_second(1_795_132_800 + hour * 3600).unwrap();
    run.tags = vec![format!("rev:{rev}")];
    run.environment.cpu.model = Some(cpu.to_owned());
    let ns = ms * 1e6;
    let m = Metric::new("wall_ns", Unit::Ns, Direction::LowerIsBetter, ns)
        .with_label("command", "./work.sh")
        .primary();
    run.metrics = vec![interval(m, ns * 0.97, ns * 1.03, 10)];
    run
}

/// 15 runs at 10 ms, then 15 at 12 ms, ±1% around each (means exact).
fn stepped(cpu: impl Fn(i64) -> &'static str) -> Vec<Run> {
    (0..30)
        .map(|i| {
            let base = if i < 15 { 10.0 } else { 12.0 };
            let wobble = [0.0, 0.01, -0.01][i as usize % 3];
            let rev = if i < 15 {
                format!("a{i}")
            } else {
                format!("b{}", i - 15)
            };
            work_run(base * (1.0 + wobble), &rev, i, cpu(i))
        })
        .collect()
}

const WORK: &str = "wall_ns{command=./work.sh}";

/// A trend of one series with a step: the segments' means as lines, the
/// change marked at its first run and labelled with its commit, the
/// change in percent and that it is a regression, and a table of it.
#[test]
fn a_trend_of_one_series_marks_its_change_point_with_the_commit() {
    let runs = stepped(|_| "Xeon");
    let html = html_trend(&runs, WORK).unwrap();
    let fig = figure(&html, "trend");
    assert_eq!(attr(fig, "data-points"), "30");
    let said = texts(fig);
    assert!(
        said.contains(&"b0: +20.0% (regression)"),
        "no change label: {said:?}"
    );
    assert!(said.contains(&"mean 10.00 ms"), "{said:?}");
    assert!(said.contains(&"mean 12.00 ms"), "{said:?}");
    assert!(said.contains(&"segment mean") && said.contains(&"change: regression"));
    // The dashed marker in the regression's colour, and no improvement.
    assert!(fig.contains(&format!("stroke=\"{}\"", hex(super::chart::WORSE))));
    assert!(!said.contains(&"change: improvement"), "{said:?}");
    assert_says(fig, "1 change point (E-divisive means");
    // The table of changes: the run, commit, change, interval, p-value.
    assert_says(fig, "<caption>Change points</caption>");
    assert_says(fig, &format!("<td>{}</td><td>b0</td>", runs[15].id));
    assert_says(fig, "<td class=\"n\">+20.0%</td>");
    assert_says(fig, "<td>regression</td>");
    assert_says(
        fig,
        "<td class=\"n\">10.00 ms</td><td class=\"n\">12.00 ms</td>",
    );
    assert!(!html.to_lowercase().contains("<script"));
    // Faster is an improvement of a throughput-like metric: the same step
    // read the other way round.
    let mut faster = stepped(|_| "Xeon");
    for r in &mut faster {
        r.metrics[0].direction = Direction::HigherIsBetter;
        r.tags.clear();
    }
    let html = html_trend(&faster, WORK).unwrap();
    let fig = figure(&html, "trend");
    let id = &faster[15].id.to_string()[..10];
    assert!(
        texts(fig).contains(&format!("{id}: +20.0% (improvement)").as_str()),
        "{fig}"
    );
}

/// Runs of two machine classes are two series: the note says so and how
/// to narrow them, and no change is drawn.
#[test]
fn a_trend_of_two_series_draws_no_change_and_says_why() {
    let runs = stepped(|i| if i % 2 == 0 { "Xeon" } else { "EPYC" });
    let html = html_trend(&runs, WORK).unwrap();
    let fig = figure(&html, "trend");
    assert_eq!(attr(fig, "data-points"), "30");
    assert_says(fig, "These runs are 2 series");
    assert_says(fig, "--tag, --host or --kind");
    let said = texts(fig);
    assert!(!said.iter().any(|t| t.contains("regression")), "{said:?}");
    assert!(!said.iter().any(|t| t.starts_with("mean ")), "{said:?}");
    assert!(!fig.contains("Change points"));
    assert!(!fig.contains(&format!("stroke=\"{}\"", hex(super::chart::WORSE))));
    // Too few runs of one series: said, nothing drawn.
    let html = html_trend(&stepped(|_| "Xeon")[..5], WORK).unwrap();
    let fig = figure(&html, "trend");
    assert_says(
        fig,
        "Too few runs for change points: 5, where they need at least 8.",
    );
    assert!(!texts(fig).iter().any(|t| t.starts_with("mean ")), "{fig}");
}
