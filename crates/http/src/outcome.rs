//! Turns an [`Outcome`] into the metrics of a Run, so every view (the
//! human report, ab's layout, JSON, comparisons) reads one record.

use dyno_model::names::{common, http, label};
use dyno_model::{Direction, Merge, Metric, Run, Unit};
use dyno_stats::hdr;

use crate::engine::Outcome;
use crate::settings::Settings;
use crate::stats::ErrorClass;

/// A volume in bytes: context, summed across segments.
fn bytes(name: &str, value: u64) -> Metric {
    Metric::new(name, Unit::Bytes, Direction::HigherIsBetter, value as f64)
        .context()
        .merged(Merge::Sum)
}

/// Header bytes (HPACK- or QPACK-coded, or plain): fewer is better.
fn header_bytes(name: &str, n: u64) -> Metric {
    Metric::new(name, Unit::Bytes, Direction::LowerIsBetter, n as f64)
}

/// HPACK's or QPACK's savings (metric `name`), `saved` a fraction of the
/// plain header bytes: a merge recomputes it from the summed bytes
/// ([`recompute_merged`]).
fn header_savings(name: &str, saved: f64) -> Metric {
    Metric::new(
        name,
        Unit::Percent,
        Direction::HigherIsBetter,
        100.0 * saved,
    )
    .diagnostic()
    .merged(Merge::Recompute)
}

impl Outcome {
    /// Requests per second over the measured window ([`Outcome::elapsed`]:
    /// the scheduled duration of a `-d` run, not the time to its last answer).
    pub fn requests_per_sec(&self) -> f64 {
        self.per_sec(self.stats.responses)
    }

    /// A scenario's flows that ended (completed or failed) per second of
    /// the measured window; `None` for a run without a scenario.
    pub fn flows_per_sec(&self) -> Option<f64> {
        let figures = self.scenario.as_ref()?;
        let ended: u64 = figures.flows.iter().map(|f| f.completed + f.failed).sum();
        let secs = self.elapsed.as_secs_f64();
        Some(if secs > 0.0 { ended as f64 / secs } else { 0.0 })
    }

    /// Share of the generator's threads the whole process kept busy, in
    /// percent: near 100 the client, not the server, set the pace.
    pub fn client_cpu_percent(&self, threads: usize) -> f64 {
        dyno_load::pool::busy_percent(self.cpu, self.wall, threads)
    }

    /// The run's metrics. Counts of error classes and status codes are
    /// included only when non-zero; absent means zero.
    pub fn metrics(&self, settings: &Settings) -> Vec<Metric> {
        let mut metrics = self.load_metrics(settings);
        if let Some(rate) = settings.schedule.rate_per_sec {
            metrics.extend(self.open_model_metrics(settings, rate));
        }
        if let Some(replayed) = &self.replay {
            // The log's rate over the measured window: what fell due in
            // it (answered, failed, cut or never sent), the whole run's
            // (a segment sends every N-th request).
            let s = &self.stats;
            let due = s.requests() + s.unfinished + s.dropped;
            let rate = self.per_sec(due) * f64::from(settings.segment.count);
            metrics.extend(self.open_model_metrics(settings, rate));
            metrics.extend(self.replay_metrics(replayed));
        }
        metrics.extend(dyno_load::silence::lost_metric(&self.lost));
        // With --alpn, connections the server took to HTTP/2 have these too.
        if settings.http2 || self.stats.h2.plain_header_written > 0 {
            metrics.extend(self.h2_metrics());
        }
        if settings.http3 {
            metrics.extend(self.h3_metrics());
        }
        if settings.zero_rtt {
            let h = &self.stats.h3;
            metrics.push(Metric::count(http::H3_HANDSHAKES_0RTT, h.handshakes_0rtt));
            metrics.push(Metric::count(
                http::H3_EARLY_DATA_REJECTED,
                h.early_data_rejected,
            ));
        }
        metrics.extend(self.tally_metrics());
        metrics.extend(self.timeline_metrics(settings));
        if let Some(plan) = &settings.schedule.plan {
            metrics.extend(dyno_load::stages::metrics(plan, &self.stages));
        }
        metrics.extend(self.scenario_metrics(settings));
        metrics
    }

    /// What every run has: the rate and latency it got answers at, what
    /// was sent and read, the measured window and the client's own load.
    fn load_metrics(&self, settings: &Settings) -> Vec<Metric> {
        let s = &self.stats;
        vec![
            // What a load test exists for: the rate it got answers at and
            // their latency. A merged run's rate is its answers over the
            // merged window.
            Metric::new(
                http::REQUESTS_PER_SEC,
                Unit::RequestsPerSec,
                Direction::HigherIsBetter,
                self.requests_per_sec(),
            )
            .primary()
            .rate_of(http::RESPONSES),
            // The same answers counted in bytes: a view, never scored twice.
            Metric::new(
                http::TRANSFER_BYTES_PER_SEC,
                Unit::BytesPerSec,
                Direction::HigherIsBetter,
                self.per_sec(s.bytes_read),
            )
            .derived_of(http::REQUESTS_PER_SEC)
            .rate_of(http::BYTES_READ),
            hdr::latency_metric(common::LATENCY, &s.latency).primary(),
            // ApacheBench's split of latency_ns, for its layout.
            hdr::latency_metric(http::CONNECT, &s.connect).context(),
            hdr::latency_metric(http::WAITING, &s.waiting).context(),
            hdr::latency_metric(http::PROCESSING, &s.processing).context(),
            Metric::count(http::REQUESTS, s.requests()),
            Metric::count(http::RESPONSES, s.responses),
            Metric::count(http::ERRORS, s.errors.total()),
            Metric::count(http::CONNECTIONS_OPENED, s.connects),
            // Written but not answered when a duration run reached its end
            // (or was interrupted): cut, not waited for.
            Metric::count(http::UNFINISHED_REQUESTS, s.unfinished),
            bytes(http::BYTES_READ, s.bytes_read),
            bytes(http::BYTES_WRITTEN, s.bytes_written),
            bytes(http::BODY_BYTES, s.body_bytes),
            dyno_load::judge::window_metric(self.elapsed),
            dyno_load::judge::client_cpu_metric(self.client_cpu_percent(settings.threads)),
        ]
    }

    /// The open model's (`rate` asked for): the uncorrected latency, this
    /// segment's share of the rate, and how the client kept the schedule.
    fn open_model_metrics(&self, settings: &Settings, rate: f64) -> Vec<Metric> {
        let s = &self.stats;
        vec![
            hdr::latency_metric(common::LATENCY_UNCORRECTED, &s.uncorrected).diagnostic(),
            // A segment makes every N-th request of the timetable.
            Metric::new(
                http::REQUESTED_RATE_PER_SEC,
                // A scenario's rate is of flows.
                if settings.scenario.is_some() {
                    Unit::FlowsPerSec
                } else {
                    Unit::RequestsPerSec
                },
                Direction::HigherIsBetter,
                rate / f64::from(settings.segment.count),
            )
            .context()
            .merged(Merge::Sum),
            Metric::count(http::LATE_SENDS, s.late_sends),
            // The client's own share of the corrected latency: a reader can
            // tell it from the server's queueing.
            hdr::latency_metric(http::SEND_LAG, &s.send_lag).context(),
            Metric::new(
                http::MAX_LATENESS,
                Unit::Ns,
                Direction::LowerIsBetter,
                s.max_lateness.as_nanos() as f64,
            )
            .context()
            .merged(Merge::Max),
            Metric::count(http::DROPPED_SENDS, s.dropped),
        ]
    }

    /// HTTP/2's header bytes and HPACK's savings, GOAWAY retries and the
    /// server's stream limit.
    fn h2_metrics(&self) -> Vec<Metric> {
        let h = &self.stats.h2;
        // Received (response) header blocks, as h2load's "headers"
        // and "space savings" count them; what was sent, apart.
        let mut metrics = vec![
            header_bytes(http::H2_HEADER_BYTES_WIRE, h.header_block_read),
            header_bytes(http::H2_HEADER_BYTES_PLAIN, h.plain_header_read),
            header_bytes(http::H2_REQUEST_HEADER_BYTES_WIRE, h.header_block_written),
            header_bytes(http::H2_REQUEST_HEADER_BYTES_PLAIN, h.plain_header_written),
        ];
        if let Some(saved) = h.header_savings() {
            metrics.push(header_savings(http::H2_HEADER_SAVINGS_PERCENT, saved));
        }
        // Sent, refused unprocessed by a GOAWAY, and sent again on a
        // new connection (RFC 9113 §6.8): not errors.
        metrics.push(Metric::count(http::H2_GOAWAY_RETRIED, h.goaway_retried));
        if let Some(max) = h.max_concurrent_streams {
            let mut m = Metric::count(http::H2_SERVER_MAX_CONCURRENT_STREAMS, max as u64)
                .merged(Merge::Min);
            m.direction = Direction::HigherIsBetter;
            metrics.push(m);
        }
        metrics
    }

    /// What QUIC did under an HTTP/3 run: handshakes, datagrams and the
    /// system calls that carried them, losses, congestion, the path's
    /// round trip, stream-limit stalls and GOAWAY retries.
    fn h3_metrics(&self) -> Vec<Metric> {
        let h = &self.stats.h3;
        let ns = |name: &str, v: u64, merge: Merge| {
            Metric::new(name, Unit::Ns, Direction::LowerIsBetter, v as f64)
                .context()
                .merged(merge)
        };
        let mut metrics = vec![
            Metric::count(http::H3_HANDSHAKES, h.handshakes),
            ns(http::H3_HANDSHAKE_NS_SUM, h.handshake_ns_sum, Merge::Sum),
            ns(http::H3_HANDSHAKE_NS_MAX, h.handshake_ns_max, Merge::Max),
            Metric::count(http::H3_DATAGRAMS_SENT, h.datagrams_sent),
            Metric::count(http::H3_DATAGRAMS_RECEIVED, h.datagrams_received),
            Metric::count(http::H3_SEND_CALLS, h.send_calls),
            Metric::count(http::H3_RECEIVE_CALLS, h.receive_calls),
            Metric::count(http::H3_PACKETS_SENT, h.packets_sent),
            Metric::count(http::H3_PACKETS_LOST, h.packets_lost),
            Metric::new(
                http::H3_BYTES_LOST,
                Unit::Bytes,
                Direction::LowerIsBetter,
                h.bytes_lost as f64,
            )
            .context()
            .merged(Merge::Sum),
            Metric::count(http::H3_CONGESTION_EVENTS, h.congestion_events),
            Metric::count(http::H3_STREAM_LIMIT_STALLS, h.stream_limit_stalls),
            Metric::count(http::H3_GOAWAY_RETRIED, h.goaway_retried),
            header_bytes(http::H3_HEADER_BYTES_WIRE, h.header_block_read),
            header_bytes(http::H3_HEADER_BYTES_PLAIN, h.plain_header_read),
            header_bytes(http::H3_REQUEST_HEADER_BYTES_WIRE, h.header_block_written),
            header_bytes(http::H3_REQUEST_HEADER_BYTES_PLAIN, h.plain_header_written),
        ];
        if let Some(saved) = h.header_savings() {
            metrics.push(header_savings(http::H3_QPACK_SAVINGS_PERCENT, saved));
        }
        if let Some(min) = h.rtt_ns_min {
            metrics.push(ns(http::H3_RTT_MIN_NS, min, Merge::Min));
            metrics.push(ns(http::H3_RTT_MAX_NS, h.rtt_ns_max, Merge::Max));
        }
        metrics
    }

    /// Failed requests by class and answers by status code, each written
    /// only when non-zero.
    fn tally_metrics(&self) -> Vec<Metric> {
        let s = &self.stats;
        let mut metrics = Vec::new();
        for class in ErrorClass::ALL {
            let n = s.errors.of(class);
            if n > 0 {
                metrics.push(Metric::count(
                    format!("{}{}", http::ERRORS_PREFIX, class.as_str()),
                    n,
                ));
            }
        }
        for &(code, n) in &s.status {
            let mut m = Metric::count(format!("{}{code}", http::STATUS_PREFIX), n);
            m.direction = Direction::HigherIsBetter;
            metrics.push(m);
        }
        metrics
    }

    /// The per-second timeline, and a segment's per-second histograms for
    /// its merge.
    fn timeline_metrics(&self, settings: &Settings) -> Vec<Metric> {
        dyno_load::timeline::of(
            self.elapsed,
            self.timeline.iter().map(|s| (s.responses, &s.latency)),
            http::TIMELINE_REQUESTS_PER_SEC,
            Unit::RequestsPerSec,
            !settings.segment.is_whole(),
        )
    }

    /// `--scenario`: each step's figures labelled with its flow and step,
    /// and each flow's. Latencies and rates are compared (as diagnostics:
    /// the run's own `requests_per_sec` and `latency_ns` stay its primary
    /// figures); counts are context.
    fn scenario_metrics(&self, settings: &Settings) -> Vec<Metric> {
        let (Some(scenario), Some(figures)) = (&settings.scenario, &self.scenario) else {
            return Vec::new();
        };
        let mut metrics = Vec::new();
        for (flow, step) in scenario.steps() {
            metrics.extend(
                self.step_metrics(&figures.steps[step.index.expect("a flow's step is numbered")])
                    .into_iter()
                    .map(|m| {
                        m.with_label(label::FLOW, flow.name.as_str())
                            .with_label(label::STEP, step.name.as_str())
                    }),
            );
        }
        for (flow, f) in scenario.flows.iter().zip(&figures.flows) {
            metrics.extend(
                self.flow_metrics(f)
                    .into_iter()
                    .map(|m| m.with_label(label::FLOW, flow.name.as_str())),
            );
        }
        metrics
    }

    /// `n` per second of the measured window.
    fn per_sec(&self, n: u64) -> f64 {
        let secs = self.elapsed.as_secs_f64();
        if secs > 0.0 { n as f64 / secs } else { 0.0 }
    }

    /// The diagnostic metric `name`: the count `of` (`n`) per second of
    /// the measured window, in `unit`.
    fn diagnostic_rate(&self, name: &str, unit: Unit, (of, n): (&str, u64)) -> Metric {
        Metric::new(name, unit, Direction::HigherIsBetter, self.per_sec(n))
            .diagnostic()
            .rate_of(of)
    }

    /// `--replay`: each path template's figures (labelled `endpoint`),
    /// the log's own status mix, and what of the log was sent.
    fn replay_metrics(&self, replayed: &crate::engine::Replayed) -> Vec<Metric> {
        let log = &replayed.log;
        let mut metrics = Vec::new();
        for (name, s) in log.endpoints.iter().zip(&replayed.endpoints) {
            metrics.extend(
                self.part_metrics(s, &ENDPOINT_NAMES)
                    .into_iter()
                    .map(|m| m.with_label(label::ENDPOINT, name.as_str())),
            );
        }
        for (&code, &n) in &log.statuses {
            metrics.push(Metric::count(format!("{}{code}", http::LOG_STATUS_PREFIX), n).context());
        }
        metrics.push(Metric::count(http::REPLAY_REQUESTS, log.requests).context());
        metrics.push(Metric::count(http::REPLAY_BAD_LINES, log.bad).context());
        metrics.push(Metric::count(http::REPLAY_WITHOUT_BODY, log.without_body).context());
        metrics.push(log_peak_metric(log.peak_rate()));
        metrics
    }

    /// One scenario step's figures, not yet labelled with its place.
    fn step_metrics(&self, s: &crate::scenario::StepStats) -> Vec<Metric> {
        self.part_metrics(s, &STEP_NAMES)
    }

    /// The figures of one part of a run's requests (a scenario's step, a
    /// replay's path template), under `names`.
    fn part_metrics(&self, s: &crate::scenario::StepStats, names: &PartNames) -> Vec<Metric> {
        let mut metrics = vec![
            self.diagnostic_rate(
                names.rate,
                Unit::RequestsPerSec,
                (names.responses, s.responses),
            ),
            hdr::latency_metric(names.latency, &s.latency).diagnostic(),
            Metric::count(names.responses, s.responses),
            Metric::count(names.errors, s.errors.total()),
            Metric::count(names.unfinished, s.unfinished),
            bytes(names.body_bytes, s.body_bytes),
        ];
        for class in ErrorClass::ALL {
            let n = s.errors.of(class);
            if n > 0 {
                metrics.push(
                    Metric::count(names.errors_by_class, n)
                        .with_label(label::CLASS, class.as_str()),
                );
            }
        }
        metrics
    }

    /// One scenario flow's figures, not yet labelled with its name.
    fn flow_metrics(&self, f: &crate::scenario::FlowFigures) -> Vec<Metric> {
        vec![
            self.diagnostic_rate(
                http::FLOWS_PER_SEC,
                Unit::OpsPerSec,
                (http::FLOWS_COMPLETED, f.completed),
            ),
            hdr::latency_metric(http::FLOW_DURATION, &f.duration).diagnostic(),
            Metric::count(http::FLOWS_COMPLETED, f.completed),
            Metric::count(http::FLOWS_FAILED, f.failed),
            Metric::count(http::FLOWS_UNFINISHED, f.unfinished()),
        ]
    }
}

/// The log's busiest second of replay time. Each segment's is of its
/// share of the log; a merged run's is recomputed from the whole log's
/// seconds ([`recompute_merged`]).
fn log_peak_metric(peak: u64) -> Metric {
    Metric::new(
        http::REPLAY_LOG_PEAK_RATE,
        Unit::RequestsPerSec,
        Direction::HigherIsBetter,
        peak as f64,
    )
    .context()
    .merged(Merge::Recompute)
}

/// Recomputes, in a run merged from segments, the metrics this engine
/// declared [`Merge::Recompute`], from the merged metrics they are made
/// of: HPACK's savings from the summed header bytes, and the per-second
/// p99 from the merged per-second histograms (`timeline_latency_ns`
/// labelled with its aligned second). A merge of one segment keeps its own
/// (it has no per-second histograms), so a figure already present is left
/// as it is.
///
/// `segments` are the group's runs (those merged are found by the ids the
/// merged record names): a replay's record is theirs put together
/// ([`crate::record::merged_replay`]).
pub fn recompute_merged(run: &mut Run, segments: &[Run]) {
    let has = |run: &Run, name: &str| run.metrics.iter().any(|m| m.name == name);
    if let Ok(mut record) = run.record::<dyno_model::record::HttpRecord>()
        && record.replay.is_some()
        && let Some(group) = &record.group
    {
        let parts: Vec<dyno_model::record::ReplayRecord> = group
            .segments
            .iter()
            .filter_map(|g| segments.iter().find(|r| r.id.to_string() == g.run_id))
            .filter_map(|r| r.record::<dyno_model::record::HttpRecord>().ok()?.replay)
            .collect();
        if let Some(replay) = crate::record::merged_replay(&parts) {
            if !has(run, http::REPLAY_LOG_PEAK_RATE) {
                let peak = replay.log_per_second.iter().copied().max().unwrap_or(0);
                run.metrics.push(log_peak_metric(peak));
            }
            record.replay = Some(replay);
            run.set_record(&record);
        }
    }
    let value = |run: &Run, name: &str| {
        run.metrics
            .iter()
            .find(|m| m.name == name && m.labels.is_empty())
            .map(|m| m.value)
    };
    for (savings, wire, plain) in [
        (
            http::H2_HEADER_SAVINGS_PERCENT,
            http::H2_HEADER_BYTES_WIRE,
            http::H2_HEADER_BYTES_PLAIN,
        ),
        (
            http::H3_QPACK_SAVINGS_PERCENT,
            http::H3_HEADER_BYTES_WIRE,
            http::H3_HEADER_BYTES_PLAIN,
        ),
    ] {
        if !has(run, savings)
            && let (Some(wire), Some(plain)) = (value(run, wire), value(run, plain))
            && plain > 0.0
        {
            run.metrics
                .push(header_savings(savings, 1.0 - wire / plain));
        }
    }
    // Each stage of a plan: the segments' stages summed.
    if let Ok(mut record) = run.record::<dyno_model::record::HttpRecord>()
        && let Some(plan) = record
            .rate_plan
            .as_ref()
            .and_then(|r| r.plan.parse::<dyno_load::plan::RatePlan>().ok())
    {
        record.rate_plan = Some(dyno_load::stages::rebuild(&plan, &run.metrics));
        run.set_record(&record);
    }
    if has(run, common::TIMELINE_LATENCY_P99) {
        return;
    }
    run.metrics.extend(dyno_stats::merge::per_second_percentile(
        &run.metrics,
        common::TIMELINE_LATENCY_P99,
        http::TIMELINE_REQUESTS_PER_SEC,
        common::TIMELINE_LATENCY,
        99.0,
    ));
}

/// The metric names of one part of a run's requests.
struct PartNames {
    rate: &'static str,
    latency: &'static str,
    responses: &'static str,
    errors: &'static str,
    errors_by_class: &'static str,
    unfinished: &'static str,
    body_bytes: &'static str,
}

const STEP_NAMES: PartNames = PartNames {
    rate: http::STEP_REQUESTS_PER_SEC,
    latency: http::STEP_LATENCY,
    responses: http::STEP_RESPONSES,
    errors: http::STEP_ERRORS,
    errors_by_class: http::STEP_ERRORS_BY_CLASS,
    unfinished: http::STEP_UNFINISHED,
    body_bytes: http::STEP_BODY_BYTES,
};

const ENDPOINT_NAMES: PartNames = PartNames {
    rate: http::ENDPOINT_REQUESTS_PER_SEC,
    latency: http::ENDPOINT_LATENCY,
    responses: http::ENDPOINT_RESPONSES,
    errors: http::ENDPOINT_ERRORS,
    errors_by_class: http::ENDPOINT_ERRORS_BY_CLASS,
    unfinished: http::ENDPOINT_UNFINISHED,
    body_bytes: http::ENDPOINT_BODY_BYTES,
};
