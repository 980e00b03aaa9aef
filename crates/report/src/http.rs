//! The views of an HTTP run: dyno's own report and ApacheBench 2.3's
//! layout. Both read only the Run, so a saved run can be shown either way.

use std::collections::HashMap;
use std::fmt::Write as _;

use dyno_model::names::http::{self, class};
use dyno_model::names::{common, label};
use dyno_model::record::{HttpRecord, LoadModel};
use dyno_model::{Metric, Run};
use dyno_stats::hdr;
use hdrhistogram::Histogram;

use crate::figures::{H3Figures, HttpFigures};
use crate::format::{counted, format_value};
use dyno_model::units;

pub(crate) fn value(run: &Run, name: &str) -> f64 {
    run.metric(name).map_or(0.0, |m| m.value)
}

/// A rate averaged over time the target did not answer is marked where
/// it is shown: ` ! averaged over 2.800 s with no answer (target_lost)`.
pub(crate) fn lost_mark(run: &Run) -> String {
    lost_words(run.metric(common::TARGET_LOST).map(|m| m.value))
}

/// [`lost_mark`] of a run's target-lost time in ns, where it wrote one.
fn lost_words(target_lost_ns: Option<f64>) -> String {
    match target_lost_ns {
        Some(ns) if ns > 0.0 => format!(
            "  ! averaged over {} with no answer (target_lost)",
            units::duration(ns)
        ),
        _ => String::new(),
    }
}

/// The note on work still under way when a run's load was cut: empty
/// when there was none.
pub(crate) fn under_way(unfinished: u64) -> String {
    if unfinished > 0 {
        format!(" ({unfinished} still under way at the end: cut, not waited for)")
    } else {
        String::new()
    }
}

pub(crate) fn count(run: &Run, name: &str) -> u64 {
    value(run, name).round() as u64
}

pub(crate) fn histogram(run: &Run, name: &str) -> Option<Histogram<u64>> {
    run.metric(name)
        .and_then(|m| m.histogram.as_ref())
        .and_then(|h| hdr::from_model(h).ok())
}

/// What an HTTP run was, as its report leads with it: the target, the
/// load model and the settings, each a label and its words. The text
/// report prints them as lines, the HTML page as a table.
pub(crate) fn lead(rec: &HttpRecord) -> [(&'static str, String); 3] {
    [
        ("Target", target_words(rec)),
        ("Model", model_words(rec)),
        ("Settings", settings_words(rec)),
    ]
}

/// The URL loaded and what it was: `http://… (dyno's built-in server)`.
fn target_words(rec: &HttpRecord) -> String {
    let url = Some(rec.url.as_str())
        .filter(|u| !u.is_empty())
        .unwrap_or("?");
    let builtin = if rec.builtin_server {
        " (dyno's built-in server)"
    } else {
        ""
    };
    let scenario = rec
        .scenario
        .as_ref()
        .map_or(String::new(), |s| format!(" (scenario {})", s.file));
    let replay = rec
        .replay
        .as_ref()
        .map_or(String::new(), |r| format!(" (replaying {})", r.file));
    format!("{url}{builtin}{scenario}{replay}")
}

/// Connections, threads, keep-alive, TLS, pipelining or HTTP/2, the
/// length of the run and its warm-up.
fn settings_words(rec: &HttpRecord) -> String {
    let length = match (rec.requests, rec.duration_ns) {
        (Some(n), _) if rec.scenario.is_some() => format!("{n} flows"),
        (Some(n), _) => format!("{n} requests"),
        (None, Some(ns)) => units::duration(ns as f64),
        (None, None) if rec.replay.is_some() => "until the log ends".into(),
        _ => "?".into(),
    };
    let warmup = rec.warmup_ns;
    let warmup = if warmup == 0 {
        "no warm-up".to_owned()
    } else {
        format!("{} warm-up excluded", units::duration(warmup as f64))
    };
    let keep = if !rec.keep_alive {
        "new connection per request"
    } else {
        "keep-alive"
    };
    let tls = match (rec.tls, rec.insecure) {
        (true, insecure) => {
            let session = tls_session(rec).map_or(String::new(), |(protocol, cipher, kx)| {
                let kx = kx.map_or(String::new(), |kx| format!(", {kx}"));
                format!(" {protocol} {cipher}{kx}")
            });
            let unverified = if insecure {
                " (certificate not verified)"
            } else {
                ""
            };
            format!(", TLS{session}{unverified}{}", alpn_choice(rec))
        }
        _ => String::new(),
    };
    let pipeline = rec.pipeline;
    let pipeline = if pipeline > 1 {
        format!(", pipeline {pipeline}")
    } else if rec.http3 {
        format!(
            ", HTTP/3 over QUIC{}, {}",
            if rec.zero_rtt { " with 0-RTT" } else { "" },
            counted(rec.streams, "stream") + " a connection"
        )
    } else if rec.http2 {
        let streams = rec.streams;
        let kind = if rec.tls { "h2" } else { "h2c" };
        format!(
            ", HTTP/2 ({kind}), {}",
            counted(streams, "stream") + " a connection"
        )
    } else {
        String::new()
    };
    format!(
        "{}, {}, {keep}{tls}{pipeline}, {length}, {warmup}",
        counted(rec.connections, "connection"),
        counted(rec.threads, "worker thread"),
    )
}

/// The load model in words: closed or open, with its rate or its stages.
fn model_words(rec: &HttpRecord) -> String {
    let open = rec.model == LoadModel::Open;
    if let Some(r) = &rec.replay {
        let window = match (r.window_from_s, r.window_to_s) {
            (0.0, None) => String::new(),
            (from, to) => format!(
                ", its part {}..{}",
                units::duration(from * 1e9),
                to.map_or(String::new(), |to| units::duration(to * 1e9))
            ),
        };
        let looped = if r.looped { ", looped" } else { "" };
        return format!(
            "replay at {}× the log's pace{window}{looped}: each request at its logged time, latency from due times",
            r.speed
        );
    }
    if let Some(plan) = &rec.rate_plan {
        format!(
            "open model by stages: {} (mean {} {}) on a fixed schedule, latency from due times",
            plan.plan,
            rate(rec.rate_per_sec.unwrap_or(0.0)),
            if rec.scenario.is_some() {
                "flows/s"
            } else {
                "req/s"
            }
        )
    } else if open && rec.scenario.is_some() {
        format!(
            "open model: {} flows/s on a fixed schedule, each step's latency from when it was due (its flow's start lag added)",
            rate(rec.rate_per_sec.unwrap_or(0.0))
        )
    } else if open {
        format!(
            "open model: {} req/s on a fixed schedule, latency from due times",
            rate(rec.rate_per_sec.unwrap_or(0.0))
        )
    } else if rec.scenario.is_some() {
        format!(
            "closed model: each {} is a virtual user that starts its next flow when its last one ended (and it thought)",
            if rec.http2 {
                "stream of each connection"
            } else {
                "connection"
            }
        )
    } else if let Some(depth) = Some(rec.pipeline).filter(|&d| d > 1) {
        format!(
            "closed model, HTTP/1.1 pipelining: each connection writes {depth} requests back to back, then sends the next {depth} once all are answered"
        )
    } else if rec.http2 || rec.http3 {
        "closed model: each stream of each connection waits for its answer before the next request"
            .into()
    } else {
        "closed model: each connection waits for its answer before the next request".into()
    }
}

/// The client's CPU over the measured time: `35% of 2 worker threads`.
pub(crate) fn client_cpu_words(f: &HttpFigures) -> String {
    format!(
        "{:.0}% of {}",
        f.client_cpu_percent,
        counted(f.record.threads, "worker thread")
    )
}

/// dyno's report of an HTTP run.
pub fn http_report(run: &Run) -> String {
    let f = HttpFigures::of(run, None);
    let rec = &f.record;
    let mut out = String::new();
    for (label, words) in lead(rec) {
        let _ = writeln!(out, "{label:<12}{words}");
    }
    out.push('\n');
    plan_sections(&mut out, rec);
    requests_lines(&mut out, &f);
    transfer_lines(&mut out, &f);
    out.push('\n');

    if let Some(scenario) = &rec.scenario {
        scenario_section(&mut out, run, scenario);
    }
    if let Some(replay) = &rec.replay {
        crate::replay::replay_section(&mut out, run, replay);
    }
    latency_section(&mut out, &f);
    connection_times(&mut out, &f);
    answers_lines(&mut out, &f);
    if let Some(replay) = &rec.replay {
        crate::replay::log_status_line(&mut out, replay);
    }
    let _ = writeln!(out, "Client CPU  {}", client_cpu_words(&f));
    crate::text::watched(run, "request", &mut out);
    crate::text::warnings(run, &mut out);
    out
}

/// What a run's rates count: a scenario's flows, else requests.
fn rate_words(rec: &HttpRecord) -> &'static str {
    if rec.scenario.is_some() {
        "flows/s"
    } else {
        "req/s"
    }
}

/// A rate plan's stages and a capacity search's steps, each with a line
/// that says which figures follow; nothing for a plain run.
fn plan_sections(out: &mut String, rec: &HttpRecord) {
    let per = rate_words(rec);
    if let Some(plan) = &rec.rate_plan {
        crate::stages::stages_section(out, plan, per, "LAG P99");
        out.push_str("The figures below are the whole run's.\n\n");
    }
    if let Some(cap) = &rec.capacity {
        let per = if cap.over_speed {
            "× the log's pace"
        } else {
            per
        };
        crate::capacity::capacity_section(out, cap, per);
        if let (true, Some(replay)) = (cap.over_speed, &rec.replay) {
            let _ = writeln!(
                out,
                "The figures below are the step at {}× the log's pace.\n",
                replay.speed
            );
        } else if cap.sweep.is_some() {
            let _ = writeln!(
                out,
                "The figures below are the step with {}.\n",
                counted(rec.connections, "connection")
            );
        } else {
            let _ = writeln!(
                out,
                "The figures below are the step at {} {per}.\n",
                rate(rec.rate_per_sec.unwrap_or(0.0))
            );
        }
    }
}

/// The answers and their rate, and for an open-model run how the
/// schedule was kept: the rate asked for, late and dropped sends, the
/// send lag.
fn requests_lines(out: &mut String, f: &HttpFigures) {
    let open = f.open;
    let unfinished = under_way(f.unfinished);
    let _ = writeln!(
        out,
        "Requests    {} answered in {}: {}{unfinished}{}",
        f.responses,
        units::duration(f.measured_ns),
        format_value(f.requests_per_sec, dyno_model::Unit::RequestsPerSec),
        lost_words(f.target_lost_ns)
    );
    if open && f.record.scenario.is_some() {
        let _ = writeln!(
            out,
            "Rate        requested {} flows/s, completed {} flows/s; {} flows started late (max {} late), {} dropped",
            rate(f.requested_rate_per_sec),
            rate(f.flows_per_sec),
            f.late_sends,
            units::duration(f.max_lateness_ns),
            f.dropped_sends,
        );
    } else if open {
        let _ = writeln!(
            out,
            "Rate        requested {} req/s, achieved {} req/s; {} late sends (max {} late), {} dropped",
            rate(f.requested_rate_per_sec),
            rate(f.requests_per_sec),
            f.late_sends,
            units::duration(f.max_lateness_ns),
            f.dropped_sends,
        );
    }
    if open && let Some(h) = &f.send_lag {
        let _ = writeln!(
            out,
            "Send lag    p50 {}, p99 {}, max {} from due time to real send (client delay or a busy connection; counted in corrected latency only)",
            units::duration_short(dyno_stats::hdr::value_at_percentile(h, 50.0) as f64),
            units::duration_short(dyno_stats::hdr::value_at_percentile(h, 99.0) as f64),
            units::duration_short(h.max() as f64),
        );
    }
}

/// The bytes moved, and over HTTP/2 its header bytes, HPACK's savings,
/// the server's stream limit and the requests a GOAWAY sent again.
fn transfer_lines(out: &mut String, f: &HttpFigures) {
    let _ = writeln!(
        out,
        "Transfer    {} ({} read, {} written, {} of bodies)",
        format_value(f.transfer_bytes_per_sec, dyno_model::Unit::BytesPerSec),
        format_value(f.bytes_read, dyno_model::Unit::Bytes),
        format_value(f.bytes_written, dyno_model::Unit::Bytes),
        format_value(f.body_bytes, dyno_model::Unit::Bytes),
    );
    if let Some(h3) = &f.h3 {
        quic_lines(out, h3);
    }
    let Some(h2) = &f.h2 else {
        return;
    };
    let (wire, plain) = (h2.header_bytes_wire, h2.header_bytes_plain);
    let saved = h2
        .header_savings_percent
        .map_or(String::new(), |v| format!(": {v:.1}% saved by HPACK"));
    let limit = h2.server_max_concurrent_streams.map_or(String::new(), |v| {
        format!("; the server allows {v} concurrent streams")
    });
    let _ = writeln!(
        out,
        "HTTP/2      response headers {} on the wire for {} plain{saved}{limit}",
        format_value(wire, dyno_model::Unit::Bytes),
        format_value(plain, dyno_model::Unit::Bytes),
    );
    let retried = h2.goaway_retried;
    if retried > 0.0 {
        let _ = writeln!(
            out,
            "            {} sent again on a new connection: the server's GOAWAY said it had not processed them (not errors)",
            counted(retried as u64, "request")
        );
    }
}

/// What QUIC did under an HTTP/3 run: handshakes, the path's round trip,
/// datagrams per system call (above 1: GSO or GRO batched them), losses,
/// congestion, stream-limit stalls, QPACK's savings and GOAWAY retries.
fn quic_lines(out: &mut String, h3: &H3Figures) {
    let facts = quic_facts(h3);
    for (i, (label, words)) in facts.iter().enumerate() {
        match (i, *label) {
            (0, _) => {
                let rtt = facts
                    .iter()
                    .find(|(l, _)| *l == "Path RTT")
                    .map(|(_, w)| format!("; path RTT {w}"))
                    .unwrap_or_default();
                let _ = writeln!(out, "QUIC        {words}{rtt}");
            }
            (_, "Path RTT") => {}
            _ => {
                let _ = writeln!(out, "            {words}");
            }
        }
    }
}

/// What QUIC did under an HTTP/3 run, in words, each with its label: the
/// handshakes, the path's round trip, the datagrams and the system calls
/// that moved them, the packets lost and what held the sender back, and
/// the requests sent again. The text report's QUIC lines and the HTML
/// page's table say the same.
pub(crate) fn quic_facts(h3: &H3Figures) -> Vec<(&'static str, String)> {
    let ns = |v: f64| units::duration_short(v);
    let mut facts = vec![(
        "Handshakes",
        if h3.handshakes > 0.0 {
            let early = match h3.zero_rtt {
                Some((taken, rejected)) => {
                    format!("; 0-RTT: early data taken on {taken}, rejected on {rejected}")
                }
                None => String::new(),
            };
            format!(
                "{} (mean {}, max {}){early}",
                counted(h3.handshakes as u64, "handshake"),
                ns(h3.handshake_ns_sum / h3.handshakes),
                ns(h3.handshake_ns_max)
            )
        } else {
            "no handshake in the measured part".to_owned()
        },
    )];
    if let (Some(min), Some(max)) = (h3.rtt_min_ns, h3.rtt_max_ns) {
        facts.push(("Path RTT", format!("{}–{}", ns(min), ns(max))));
    }
    let per_call = |datagrams: f64, calls: f64| {
        if calls > 0.0 {
            format!("{:.1}", datagrams / calls)
        } else {
            "–".to_owned()
        }
    };
    facts.push((
        "Datagrams",
        format!(
            "datagrams sent {} ({} a send call), received {} ({} a receive call)",
            h3.datagrams_sent,
            per_call(h3.datagrams_sent, h3.send_calls),
            h3.datagrams_received,
            per_call(h3.datagrams_received, h3.receive_calls),
        ),
    ));
    let lost = if h3.packets_sent > 0.0 {
        100.0 * h3.packets_lost / h3.packets_sent
    } else {
        0.0
    };
    facts.push((
        "Packets",
        format!(
            "packets lost {} of {} sent ({lost:.2}%), {} congestion events, {} stream-limit stalls",
            h3.packets_lost, h3.packets_sent, h3.congestion_events, h3.stream_limit_stalls
        ),
    ));
    if let Some(wire) = h3.header_bytes_wire {
        let saved = h3
            .qpack_savings_percent
            .map_or(String::new(), |v| format!(": {v:.1}% saved by QPACK"));
        facts.push((
            "Headers",
            format!(
                "response headers {} on the wire for {} plain{saved}",
                format_value(wire, dyno_model::Unit::Bytes),
                format_value(h3.header_bytes_plain, dyno_model::Unit::Bytes),
            ),
        ));
    }
    if h3.goaway_retried > 0.0 {
        facts.push((
            "Sent again",
            format!(
                "{} sent again on a new connection: the server said it had not processed them (not errors)",
                counted(h3.goaway_retried as u64, "request")
            ),
        ));
    }
    facts
}

/// The latency table: the latency (corrected, in an `open` run) and the
/// uncorrected latency where the run has it.
fn latency_section(out: &mut String, f: &HttpFigures) {
    let mut rows: Vec<(&str, Histogram<u64>)> = Vec::new();
    if let Some(h) = &f.latency {
        rows.push((if f.open { "corrected" } else { "latency" }, h.clone()));
    }
    if let Some(h) = &f.latency_uncorrected {
        rows.push(("uncorrected", h.clone()));
    }
    latency_table(out, &rows);
}

/// ApacheBench's split of the latency, as dyno shows it: min, mean, sd,
/// median and max of each part, dashes where nothing was answered.
fn connection_times(out: &mut String, f: &HttpFigures) {
    let _ = writeln!(
        out,
        "Connection times    min      mean     sd       median   max"
    );
    for (label, h) in ab_split(f) {
        if let Some(h) = h {
            if h.is_empty() {
                let _ = writeln!(out, "{label:<20}{DASH:<9}{DASH:<9}{DASH:<9}{DASH:<9}{DASH}");
                continue;
            }
            let _ = writeln!(
                out,
                "{label:<20}{:<9}{:<9}{:<9}{:<9}{}",
                units::duration_short(h.min() as f64),
                units::duration_short(h.mean()),
                units::duration_short(h.stdev()),
                units::duration_short(dyno_stats::hdr::value_at_percentile(h, 50.0) as f64),
                units::duration_short(h.max() as f64),
            );
        }
    }
    out.push('\n');
}

/// ApacheBench's split of the latency, in its order: connect, processing,
/// waiting and the total (the latency).
fn ab_split(f: &HttpFigures) -> [(&'static str, Option<&Histogram<u64>>); 4] {
    [
        ("Connect", f.connect.as_ref()),
        ("Processing", f.processing.as_ref()),
        ("Waiting", f.waiting.as_ref()),
        ("Total", f.latency.as_ref()),
    ]
}

/// The answers by status code (with the statuses expected) and the
/// failures by error class.
fn answers_lines(out: &mut String, f: &HttpFigures) {
    let rec = &f.record;
    let statuses: Vec<String> = f.statuses().map(|(c, n)| format!("{c}: {n}")).collect();
    // Runs saved before --expect-status have no such setting.
    // A scenario's steps may check their own statuses.
    let expected = Some(rec.expect_status.as_str())
        .filter(|e| !e.is_empty())
        .map_or(String::new(), |e| match rec.scenario {
            Some(_) => format!(" (expected: each step's check, else {e})"),
            None => format!(" (expected {e})"),
        });
    let _ = writeln!(out, "Status      {}{expected}", listed(&statuses));
    let errors: Vec<String> = f
        .errors_by_class()
        .map(|(class, n)| format!("{}: {n}", class_words(class)))
        .collect();
    let _ = writeln!(out, "Errors      {}", listed(&errors));
}

/// `items` joined with commas, or `none` when there are none.
fn listed(items: &[String]) -> String {
    if items.is_empty() {
        "none".into()
    } else {
        items.join(", ")
    }
}

/// A labelled metric of the run: `name` with these labels (and maybe more).
/// The run's metrics of each flow (`step` `None`) and each step, sorted
/// out in one pass: a scenario of thousands of steps is read once, not
/// once a step.
pub(crate) struct ByPlace<'a>(HashMap<&'a str, HashMap<&'a str, Vec<&'a Metric>>>);

impl<'a> ByPlace<'a> {
    pub(crate) fn new(run: &'a Run) -> ByPlace<'a> {
        let mut map: HashMap<&str, HashMap<&str, Vec<&Metric>>> = HashMap::new();
        for m in &run.metrics {
            if let Some(flow) = m.label(label::FLOW) {
                // A flow's own figures under "", a step's under its name.
                let step = m.label(label::STEP).unwrap_or("");
                map.entry(flow)
                    .or_default()
                    .entry(step)
                    .or_default()
                    .push(m);
            }
        }
        ByPlace(map)
    }

    /// The metrics named `name` of a flow, or of one of its steps.
    fn all<'b>(
        &'b self,
        flow: &str,
        step: Option<&str>,
        name: &'b str,
    ) -> impl Iterator<Item = &'a Metric> + 'b {
        let found: &'b [&'a Metric] = self
            .0
            .get(flow)
            .and_then(|steps| steps.get(step.unwrap_or("")))
            .map_or(&[], Vec::as_slice);
        found.iter().copied().filter(move |m| m.name == name)
    }

    pub(crate) fn get(&self, flow: &str, step: Option<&str>, name: &str) -> Option<&'a Metric> {
        self.all(flow, step, name).next()
    }
}

/// A scenario's flows and steps: each flow's completions and end-to-end
/// time, each step's rate, latency and errors.
fn scenario_section(out: &mut String, run: &Run, scenario: &dyno_model::record::ScenarioRecord) {
    let steps: usize = scenario.flows.iter().map(|f| f.steps.len()).sum();
    let setup = if scenario.setup_steps > 0 {
        format!(
            "; {} made first",
            counted(scenario.setup_steps, "setup step")
        )
    } else {
        String::new()
    };
    let _ = writeln!(
        out,
        "Scenario    {}: {}, {}{setup}\n",
        scenario.file,
        counted(scenario.flows.len() as u64, "flow"),
        counted(steps as u64, "step"),
    );
    let pct = |h: &Histogram<u64>, p: f64| {
        if h.is_empty() {
            DASH.to_owned()
        } else {
            units::duration_short(hdr::value_at_percentile(h, p) as f64)
        }
    };
    let hist = |m: Option<&Metric>| {
        m.and_then(|m| m.histogram.as_ref())
            .and_then(|h| hdr::from_model(h).ok())
    };
    let width = scenario
        .flows
        .iter()
        .flat_map(|f| f.steps.iter().map(move |s| f.name.len() + 1 + s.name.len()))
        .chain(scenario.flows.iter().map(|f| f.name.len()))
        .max()
        .unwrap_or(4)
        .max(5);
    let _ = writeln!(
        out,
        "{:<width$}  {:>10} {:>9} {:>7} {:>10} {:>9} {:>9} {:>9}",
        "Flow", "flows/s", "completed", "failed", "unfinished", "p50", "p99", "max"
    );
    let place = ByPlace::new(run);
    for flow in &scenario.flows {
        let duration = hist(place.get(&flow.name, None, http::FLOW_DURATION));
        let get = |name: &str| place.get(&flow.name, None, name).map_or(0.0, |m| m.value);
        let _ = writeln!(
            out,
            "{:<width$}  {:>10} {:>9} {:>7} {:>10} {:>9} {:>9} {:>9}",
            flow.name,
            rate(get(http::FLOWS_PER_SEC)),
            get(http::FLOWS_COMPLETED) as u64,
            get(http::FLOWS_FAILED) as u64,
            get(http::FLOWS_UNFINISHED) as u64,
            duration.as_ref().map_or(DASH.into(), |h| pct(h, 50.0)),
            duration.as_ref().map_or(DASH.into(), |h| pct(h, 99.0)),
            duration.as_ref().map_or(DASH.into(), |h| pct(h, 100.0)),
        );
    }
    out.push('\n');
    let _ = writeln!(
        out,
        "{:<width$}  {:>10} {:>9} {:>9} {:>9} {:>9} {:>7}  by class",
        "Step", "req/s", "p50", "p90", "p99", "max", "errors"
    );
    for flow in &scenario.flows {
        for step in &flow.steps {
            let at = Some(step.name.as_str());
            let latency = hist(place.get(&flow.name, at, http::STEP_LATENCY));
            let get = |name: &str| place.get(&flow.name, at, name).map_or(0.0, |m| m.value);
            let classes = class_counts(place.all(&flow.name, at, http::STEP_ERRORS_BY_CLASS));
            let name = format!("{}/{}", flow.name, step.name);
            let _ = writeln!(
                out,
                "{name:<width$}  {:>10} {:>9} {:>9} {:>9} {:>9} {:>7}  {}",
                rate(get(http::STEP_REQUESTS_PER_SEC)),
                latency.as_ref().map_or(DASH.into(), |h| pct(h, 50.0)),
                latency.as_ref().map_or(DASH.into(), |h| pct(h, 90.0)),
                latency.as_ref().map_or(DASH.into(), |h| pct(h, 99.0)),
                latency.as_ref().map_or(DASH.into(), |h| pct(h, 100.0)),
                get(http::STEP_ERRORS) as u64,
                classes.join(", "),
            );
        }
    }
    out.push('\n');
}

/// Counts of errors by class (metrics labelled `class`), as the step and
/// endpoint tables show them: `reset: 3`.
pub(crate) fn class_counts<'a>(metrics: impl Iterator<Item = &'a Metric>) -> Vec<String> {
    metrics
        .map(|m| {
            format!(
                "{}: {}",
                class_words(m.label(label::CLASS).unwrap_or("?")),
                m.value as u64
            )
        })
        .collect()
}

/// An error class as the Errors line and the step table both name it.
pub(crate) fn class_words(class: &str) -> String {
    match class {
        class::STATUS => "unexpected status".into(),
        class => class.replace('_', " "),
    }
}

/// Latency percentiles, one row per histogram, then a blank line; nothing
/// without rows.
pub(crate) fn latency_table(out: &mut String, rows: &[(&str, Histogram<u64>)]) {
    if !rows.is_empty() {
        let _ = writeln!(
            out,
            "{:<12}{:>10}{:>10}{:>10}{:>10}{:>10}{:>10}{:>10}  mean ± sd",
            "Latency", "p50", "p75", "p90", "p99", "p99.9", "p99.99", "max"
        );
        for (label, h) in rows {
            let mut line = format!("{label:<12}");
            if h.is_empty() {
                // Nothing was answered: there is no latency to show.
                for _ in 0..=hdr::REPORTED_PERCENTILES.len() {
                    let _ = write!(line, "{:>10}", DASH);
                }
                let _ = writeln!(out, "{line}  {DASH}");
                continue;
            }
            for p in hdr::REPORTED_PERCENTILES {
                let _ = write!(
                    line,
                    "{:>10}",
                    units::duration_short(dyno_stats::hdr::value_at_percentile(h, p) as f64)
                );
            }
            let _ = write!(
                line,
                "{:>10}  {} ± {}",
                units::duration_short(h.max() as f64),
                units::duration_short(h.mean()),
                units::duration_short(h.stdev())
            );
            let _ = writeln!(out, "{line}");
        }
        out.push('\n');
    }
}

/// A request rate: whole numbers from 10 up, two decimals below (a
/// requested 0.5 req/s is not "0 req/s").
pub(crate) fn rate(per_sec: f64) -> String {
    if per_sec.abs() < 10.0 {
        format!("{per_sec:.2}")
    } else {
        format!("{per_sec:.0}")
    }
}

/// A table cell with nothing measured (no response, no latency).
pub(crate) const DASH: &str = "–";

fn ms(ns: f64) -> f64 {
    ns / 1e6
}

/// The negotiated TLS protocol, cipher suite and key exchange group of an
/// https run, when its handshakes succeeded.
fn tls_session(rec: &HttpRecord) -> Option<(&str, &str, Option<&str>)> {
    let session = rec.observed.tls_session.as_ref()?;
    Some((
        session.protocol.as_str(),
        session.cipher.as_str(),
        session.key_exchange.as_deref(),
    ))
}

/// `--alpn`: what was offered and what the first connection settled on.
fn alpn_choice(rec: &HttpRecord) -> String {
    let offered: Vec<&str> = rec.alpn.iter().map(String::as_str).collect();
    if offered.len() < 2 {
        return String::new();
    }
    let chosen = rec
        .observed
        .tls_session
        .as_ref()
        .and_then(|s| s.alpn.as_deref())
        .unwrap_or("nothing");
    format!(
        ", ALPN offered {}, server chose {chosen}",
        offered.join(",")
    )
}

/// The report in ApacheBench 2.3's layout and labels, so scripts written
/// for ab keep working. Open-model runs show the corrected latencies.
///
/// Where dyno and ab count differently, the layout keeps ab's labels with
/// dyno's meaning, and says so here and in `--help`:
/// - the banner names dyno: it is not ApacheBench, and a script that checks
///   for "This is ApacheBench" is checking which tool ran;
/// - `Failed requests` counts every request dyno counted as failed,
///   unexpected statuses included (under `Exceptions`); ab leaves non-2xx
///   answers out of it and counts them only in `Non-2xx responses`, which
///   is printed too;
/// - `Keep-Alive requests` counts requests that went on a connection
///   already open (ab counts answers that let the connection stay open);
/// - in the open model (`--rate`) a note line says so, and `Time per
///   request (mean)` is the mean corrected latency, not ab's closed-model
///   formula (concurrency × time ÷ requests), which would describe the
///   schedule rather than the server.
pub fn ab_report(run: &Run) -> String {
    let f = HttpFigures::of(run, None);
    let rec = &f.record;
    let mut out = String::new();
    let (host, port, path) = split_url(&rec.url);
    let responses = f.responses;
    // A run always has a connection; 0 is a record without the field.
    let concurrency = if rec.connections == 0 {
        1
    } else {
        rec.connections
    };
    ab_server(&mut out, run, rec, &host, port);
    let _ = writeln!(out, "Document Path:          {path}");
    let doc_len = (f.body_bytes.round() as u64)
        .checked_div(responses)
        .unwrap_or(0);
    let _ = writeln!(out, "Document Length:        {doc_len} bytes\n");
    let _ = writeln!(out, "Concurrency Level:      {concurrency}");
    if f.open {
        let _ = writeln!(
            out,
            "Open model:             {} [#/sec] requested on a fixed schedule (dyno --rate); latency counted from due times",
            rec.rate_per_sec.unwrap_or(0.0)
        );
    }
    let secs = f.measured_ns / 1e9;
    let _ = writeln!(out, "Time taken for tests:   {secs:.3} seconds");
    ab_counts(&mut out, &f);
    ab_rates(&mut out, &f, concurrency);
    ab_connection_times(&mut out, &f);
    out
}

/// ab's banner and what it says of the server: its software, host and
/// port, and over TLS the session.
fn ab_server(out: &mut String, run: &Run, rec: &HttpRecord, host: &str, port: u16) {
    let _ = writeln!(
        out,
        "This is dyno {}, reporting in the layout of ApacheBench, Version 2.3\n",
        run.environment.dyno.version.as_deref().unwrap_or("")
    );
    let server = rec.observed.server_software.as_deref().unwrap_or("");
    let _ = writeln!(out, "Server Software:        {server}");
    let _ = writeln!(out, "Server Hostname:        {host}");
    let _ = writeln!(out, "Server Port:            {port}");
    if let Some((protocol, cipher, kx)) = tls_session(rec) {
        let _ = writeln!(out, "SSL/TLS Protocol:       {protocol},{cipher}");
        if let Some(kx) = kx {
            let _ = writeln!(out, "Server Temp Key:        {kx}");
        }
        let _ = writeln!(out, "TLS Server Name:        {host}");
    }
    out.push('\n');
}

/// ab's counts: complete and failed requests (failures in ab's four
/// kinds), non-2xx answers, keep-alive requests and the bytes moved.
fn ab_counts(out: &mut String, f: &HttpFigures) {
    let _ = writeln!(out, "Complete requests:      {}", f.requests);
    let failed = f.errors;
    let _ = writeln!(out, "Failed requests:        {failed}");
    if failed > 0 {
        // Every connect class (refused, timeout, too many open files …).
        let connect = f.connect_errors();
        let length = f.errors_of(class::BODY_LENGTH_MISMATCH);
        let receive = f.errors_of(class::READ_TIMEOUT)
            + f.errors_of(class::RESET)
            + f.errors_of(class::CLOSED_EARLY);
        let exceptions = failed - connect - length - receive;
        let _ = writeln!(
            out,
            "   (Connect: {connect}, Receive: {receive}, Length: {length}, Exceptions: {exceptions})"
        );
    }
    let non2xx: u64 = f
        .statuses()
        .filter(|(code, _)| !code.starts_with('2'))
        .map(|(_, n)| n)
        .sum();
    if non2xx > 0 {
        let _ = writeln!(out, "Non-2xx responses:      {non2xx}");
    }
    if f.record.keep_alive {
        // A request that went on an open connection records a connect
        // time of exactly 0; one that opened its own took microseconds.
        let reused = f.connect.as_ref().map_or(0, |h| h.count_at(0));
        let _ = writeln!(out, "Keep-Alive requests:    {reused}");
    }
    let _ = writeln!(
        out,
        "Total transferred:      {} bytes",
        f.bytes_read.round() as u64
    );
    let _ = writeln!(
        out,
        "HTML transferred:       {} bytes",
        f.body_bytes.round() as u64
    );
}

/// ab's rates: requests per second, time per request (for an open-model
/// run the mean corrected latency) and the transfer rate.
fn ab_rates(out: &mut String, f: &HttpFigures, concurrency: u64) {
    let responses = f.responses;
    let secs = f.measured_ns / 1e9;
    let rps = if secs > 0.0 {
        responses as f64 / secs
    } else {
        0.0
    };
    let _ = writeln!(out, "Requests per second:    {rps:.2} [#/sec] (mean)");
    let per = if responses > 0 {
        secs * 1e3 / responses as f64
    } else {
        0.0
    };
    let per_user = if f.open {
        f.latency.as_ref().map_or(0.0, |h| ms(h.mean()))
    } else {
        per * concurrency as f64
    };
    let _ = writeln!(out, "Time per request:       {per_user:.3} [ms] (mean)");
    let _ = writeln!(
        out,
        "Time per request:       {per:.3} [ms] (mean, across all concurrent requests)"
    );
    let kbps = if secs > 0.0 {
        f.bytes_read / 1024.0 / secs
    } else {
        0.0
    };
    let _ = writeln!(
        out,
        "Transfer rate:          {kbps:.2} [Kbytes/sec] received\n"
    );
}

/// ab's connection times in ms, then the share of requests served within
/// each time.
fn ab_connection_times(out: &mut String, f: &HttpFigures) {
    let _ = writeln!(out, "Connection Times (ms)");
    let _ = writeln!(out, "              min  mean[+/-sd] median   max");
    for (label, h) in ab_split(f) {
        let label = format!("{label}:");
        let (min, mean, sd, median, max) = h.map_or((0.0, 0.0, 0.0, 0.0, 0.0), |h| {
            (
                ms(h.min() as f64),
                ms(h.mean()),
                ms(h.stdev()),
                ms(dyno_stats::hdr::value_at_percentile(h, 50.0) as f64),
                ms(h.max() as f64),
            )
        });
        let _ = writeln!(
            out,
            // ab's widths: %5d %4d %5.1f %6d %7d.
            "{label:<12}{min:>5.0} {mean:>4.0} {sd:>5.1} {median:>6.0} {max:>7.0}"
        );
    }
    if let Some(h) = &f.latency {
        let _ = writeln!(
            out,
            "\nPercentage of the requests served within a certain time (ms)"
        );
        for p in [50u8, 66, 75, 80, 90, 95, 98, 99] {
            let v = ms(dyno_stats::hdr::value_at_percentile(h, f64::from(p)) as f64);
            let _ = writeln!(out, "  {p}% {v:>6.0}");
        }
        let _ = writeln!(out, " 100% {:>6.0} (longest request)", ms(h.max() as f64));
    }
}

/// Host, port and path of an http:// or https:// URL, as ab prints them.
fn split_url(url: &str) -> (String, u16, String) {
    let (rest, default_port) = match url.strip_prefix("https://") {
        Some(rest) => (rest, 443),
        None => (url.strip_prefix("http://").unwrap_or(url), 80),
    };
    let (authority, path) = rest
        .find('/')
        .map_or((rest, "/"), |i| (&rest[..i], &rest[i..]));
    let (host, port) = match authority.rfind(':') {
        Some(i) if !authority[i..].contains(']') => (
            &authority[..i],
            authority[i + 1..].parse().unwrap_or(default_port),
        ),
        _ => (authority, default_port),
    };
    (host.to_owned(), port, path.to_owned())
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use dyno_model::{Direction, Kind, Unit};

    /// A latency metric of `values_ns`, with its histogram.
    pub(crate) fn histogram_metric(name: &str, values_ns: &[u64]) -> Metric {
        let mut h = hdr::latency_histogram();
        for &v in values_ns {
            h.record(v).unwrap();
        }
        let mut m = Metric::new(name, Unit::Ns, Direction::LowerIsBetter, h.mean());
        m.histogram = Some(hdr::to_model(&h));
        m
    }

    /// A count.
    pub(crate) fn counted(name: &str, value: f64) -> Metric {
        Metric::new(name, Unit::Count, Direction::LowerIsBetter, value)
    }

    /// Ten requests on two keep-alive connections, with `settings`.
    fn http_run(settings: serde_json::Value) -> Run {
        let mut run = Run::new(Kind::Http, "GET http://127.0.0.1:8080/hello c=2");
        run.environment = crate::fixture::environment();
        run.settings = settings;
        run.metrics = ten_requests();
        run
    }

    /// The figures of ten requests on two keep-alive connections (1 to 10
    /// ms): two opened them (1.5 ms and 2.5 ms), eight went on them; three
    /// answers were 503s, expected to be 2xx or 3xx; in half a second.
    pub(crate) fn ten_requests() -> Vec<Metric> {
        let mut connect = vec![0; 8];
        connect.extend([1_500_000, 2_500_000]);
        let latency: Vec<u64> = (1..=10).map(|i| i * 1_000_000).collect();
        let waiting: Vec<u64> = latency.iter().map(|v| v / 2).collect();
        vec![
            histogram_metric("latency_ns", &latency),
            histogram_metric("connect_ns", &connect),
            histogram_metric("waiting_ns", &waiting),
            histogram_metric("processing_ns", &latency),
            counted("requests", 10.0),
            counted("responses", 10.0),
            counted("errors", 3.0),
            counted("errors_status", 3.0),
            counted("status_200", 7.0),
            counted("status_503", 3.0),
            counted("bytes_read", 2000.0),
            counted("bytes_written", 800.0),
            counted("body_bytes", 920.0),
            counted("connections_opened", 2.0),
            Metric::new("measured_ns", Unit::Ns, Direction::LowerIsBetter, 0.5e9),
            Metric::new(
                "requests_per_sec",
                Unit::RequestsPerSec,
                Direction::HigherIsBetter,
                20.0,
            ),
            Metric::new(
                "client_cpu_percent",
                Unit::Percent,
                Direction::LowerIsBetter,
                3.0,
            ),
        ]
    }

    fn closed_settings() -> serde_json::Value {
        serde_json::json!({
            "url": "http://127.0.0.1:8080/hello",
            "builtin_server": false,
            "model": "closed",
            "requests": 10,
            "warmup_ns": 0,
            "connections": 2,
            "threads": 1,
            "pipeline": 1,
            "keep_alive": true,
            "tls": false,
            "expect_status": "200-399",
            "server_software": "nginx/1.25.3",
        })
    }

    #[test]
    fn ab_layout_of_a_closed_run() {
        insta::assert_snapshot!(ab_report(&http_run(closed_settings())));
    }

    #[test]
    fn ab_layout_of_an_open_run_says_so() {
        let mut settings = closed_settings();
        settings["model"] = "open".into();
        settings["rate_per_sec"] = 20.0.into();
        let text = ab_report(&http_run(settings));
        assert!(
            text.contains("Open model:             20 [#/sec] requested on a fixed schedule"),
            "{text}"
        );
        // The mean corrected latency (5.5 ms), not 2 × 0.5 s ÷ 10 = 100 ms.
        assert!(
            text.contains("Time per request:       5.50") && !text.contains("100.000"),
            "{text}"
        );
    }

    #[test]
    fn human_report_of_a_pipelined_run() {
        let mut settings = closed_settings();
        settings["pipeline"] = 8.into();
        insta::assert_snapshot!(http_report(&http_run(settings)));
    }

    #[test]
    fn human_report_without_responses_shows_dashes() {
        let mut run = http_run(closed_settings());
        for m in &mut run.metrics {
            if m.histogram.is_some() {
                *m = histogram_metric(&m.name, &[]);
            }
        }
        let text = http_report(&run);
        assert!(!text.contains("0.000ns"), "{text}");
        assert!(
            text.contains("Connect             –        –        –        –        –\n"),
            "{text}"
        );
        assert!(
            text.lines()
                .any(|l| l.starts_with("latency") && l.contains('–'))
        );
    }

    #[test]
    fn rates_below_ten_keep_their_decimals() {
        assert_eq!(rate(0.5), "0.50");
        assert_eq!(rate(2.4), "2.40");
        assert_eq!(rate(1000.4), "1000");
    }

    #[test]
    fn urls_split_like_ab() {
        for (url, host, port, path) in [
            ("http://127.0.0.1:8080/hello", "127.0.0.1", 8080, "/hello"),
            ("http://example.com", "example.com", 80, "/"),
            ("http://[::1]:81/a?b", "[::1]", 81, "/a?b"),
            ("http://[::1]/x", "[::1]", 80, "/x"),
            ("https://example.com/a", "example.com", 443, "/a"),
            ("https://127.0.0.1:8443", "127.0.0.1", 8443, "/"),
        ] {
            assert_eq!(split_url(url), (host.into(), port, path.into()), "{url}");
        }
    }
}
