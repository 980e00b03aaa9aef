//! Turns an [`Outcome`] into the metrics of a Run, so every view (the
//! human report, ab's layout, JSON, comparisons) reads one record.

use dyno_model::{Direction, Merge, Metric, Run, Unit};
use dyno_stats::hdr;

use crate::engine::Outcome;
use crate::settings::Settings;
use crate::stats::ErrorClass;

/// A count of the run: context (it grows with the run's length), summed
/// across segments.
fn count(name: impl Into<String>, value: u64) -> Metric {
    Metric::new(name, Unit::Count, Direction::LowerIsBetter, value as f64)
        .context()
        .merged(Merge::Sum)
}

impl Outcome {
    /// Requests per second over the measured window ([`Outcome::elapsed`]:
    /// the scheduled duration of a `-d` run, not the time to its last answer).
    pub fn requests_per_sec(&self) -> f64 {
        let secs = self.elapsed.as_secs_f64();
        if secs > 0.0 {
            self.stats.responses as f64 / secs
        } else {
            0.0
        }
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
        let s = &self.stats;
        let secs = self.elapsed.as_secs_f64();
        let mut metrics = vec![
            // What a load test exists for: the rate it got answers at and
            // their latency. A merged run's rate is its answers over the
            // merged window.
            Metric::new(
                "requests_per_sec",
                Unit::RequestsPerSec,
                Direction::HigherIsBetter,
                self.requests_per_sec(),
            )
            .primary()
            .rate_of("responses"),
            // The same answers counted in bytes: a view, never scored twice.
            Metric::new(
                "transfer_bytes_per_sec",
                Unit::BytesPerSec,
                Direction::HigherIsBetter,
                if secs > 0.0 {
                    s.bytes_read as f64 / secs
                } else {
                    0.0
                },
            )
            .derived_of("requests_per_sec")
            .rate_of("bytes_read"),
            hdr::latency_metric("latency_ns", &s.latency).primary(),
            // ApacheBench's split of latency_ns, for its layout.
            hdr::latency_metric("connect_ns", &s.connect).context(),
            hdr::latency_metric("waiting_ns", &s.waiting).context(),
            hdr::latency_metric("processing_ns", &s.processing).context(),
            count("requests", s.requests()),
            count("responses", s.responses),
            count("errors", s.total_errors()),
            count("connections_opened", s.connects),
            // Written but not answered when a duration run reached its end
            // (or was interrupted): cut, not waited for.
            count("unfinished_requests", s.unfinished),
            Metric::new(
                "bytes_read",
                Unit::Bytes,
                Direction::HigherIsBetter,
                s.bytes_read as f64,
            )
            .context()
            .merged(Merge::Sum),
            Metric::new(
                "bytes_written",
                Unit::Bytes,
                Direction::HigherIsBetter,
                s.bytes_written as f64,
            )
            .context()
            .merged(Merge::Sum),
            Metric::new(
                "body_bytes",
                Unit::Bytes,
                Direction::HigherIsBetter,
                s.body_bytes as f64,
            )
            .context()
            .merged(Merge::Sum),
            Metric::new(
                "measured_ns",
                Unit::Ns,
                Direction::LowerIsBetter,
                self.elapsed.as_nanos() as f64,
            )
            .context()
            .merged(Merge::Window),
            // The client's own load: it says whether the figures are the
            // server's or a lower bound, it is not the server's figure.
            Metric::new(
                "client_cpu_percent",
                Unit::Percent,
                Direction::LowerIsBetter,
                self.client_cpu_percent(settings.threads),
            )
            .diagnostic()
            .merged(Merge::Max),
        ];
        if let Some(rate) = settings.schedule.rate_per_sec {
            metrics
                .push(hdr::latency_metric("latency_uncorrected_ns", &s.uncorrected).diagnostic());
            // A segment makes every N-th request of the timetable.
            metrics.push(
                Metric::new(
                    "requested_rate_per_sec",
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
            );
            metrics.push(count("late_sends", s.late_sends));
            // The client's own share of the corrected latency: a reader can
            // tell it from the server's queueing.
            metrics.push(hdr::latency_metric("send_lag_ns", &s.send_lag).context());
            metrics.push(
                Metric::new(
                    "max_lateness_ns",
                    Unit::Ns,
                    Direction::LowerIsBetter,
                    s.max_lateness.as_nanos() as f64,
                )
                .context()
                .merged(Merge::Max),
            );
            metrics.push(count("dropped_sends", s.dropped));
        }
        metrics.extend(dyno_load::silence::lost_metric(&self.lost));
        // With --alpn, connections the server took to HTTP/2 have these too.
        if settings.http2 || s.h2.plain_header_written > 0 {
            let h = &s.h2;
            let bytes = |name: &str, n: u64| {
                Metric::new(name, Unit::Bytes, Direction::LowerIsBetter, n as f64)
            };
            // Received (response) header blocks, as h2load's "headers"
            // and "space savings" count them; what was sent, apart.
            metrics.push(bytes("h2_header_bytes_wire", h.header_block_read));
            metrics.push(bytes("h2_header_bytes_plain", h.plain_header_read));
            metrics.push(bytes(
                "h2_request_header_bytes_wire",
                h.header_block_written,
            ));
            metrics.push(bytes(
                "h2_request_header_bytes_plain",
                h.plain_header_written,
            ));
            if let Some(saved) = h.header_savings() {
                metrics.push(
                    Metric::new(
                        "h2_header_savings_percent",
                        Unit::Percent,
                        Direction::HigherIsBetter,
                        100.0 * saved,
                    )
                    .diagnostic()
                    .merged(Merge::Recompute),
                );
            }
            // Sent, refused unprocessed by a GOAWAY, and sent again on a
            // new connection (RFC 9113 §6.8): not errors.
            metrics.push(count("h2_goaway_retried", h.goaway_retried));
            if let Some(max) = h.max_concurrent_streams {
                let mut m =
                    count("h2_server_max_concurrent_streams", max as u64).merged(Merge::Min);
                m.direction = Direction::HigherIsBetter;
                metrics.push(m);
            }
        }
        for class in ErrorClass::ALL {
            let n = s.errors_of(class);
            if n > 0 {
                metrics.push(count(format!("errors_{}", class.as_str()), n));
            }
        }
        for &(code, n) in &s.status {
            let mut m = count(format!("status_{code}"), n);
            m.direction = Direction::HigherIsBetter;
            metrics.push(m);
        }
        metrics.extend(dyno_load::timeline::metrics(
            self.elapsed,
            self.timeline.iter().map(|s| (s.responses, &s.latency)),
            "timeline_requests_per_sec",
            Unit::RequestsPerSec,
        ));
        if !settings.segment.is_whole() {
            metrics.extend(dyno_load::timeline::histograms(
                self.timeline.iter().map(|s| &s.latency),
            ));
        }
        if let Some(plan) = &settings.schedule.plan {
            metrics.extend(dyno_load::stages::metrics(plan, &self.stages));
        }
        metrics.extend(self.scenario_metrics(settings));
        metrics
    }

    /// `--scenario`: each step's figures labelled with its flow and step,
    /// and each flow's. Latencies and rates are compared (as diagnostics:
    /// the run's own `requests_per_sec` and `latency_ns` stay its primary
    /// figures); counts are context.
    fn scenario_metrics(&self, settings: &Settings) -> Vec<Metric> {
        let (Some(scenario), Some(figures)) = (&settings.scenario, &self.scenario) else {
            return Vec::new();
        };
        let secs = self.elapsed.as_secs_f64();
        let per_sec = |n: u64| if secs > 0.0 { n as f64 / secs } else { 0.0 };
        let mut metrics = Vec::new();
        for (flow, step) in scenario.steps() {
            let s = &figures.steps[step.index];
            let label = |m: Metric| {
                m.with_label("flow", flow.name.as_str())
                    .with_label("step", step.name.as_str())
            };
            metrics.push(label(
                Metric::new(
                    "step_requests_per_sec",
                    Unit::RequestsPerSec,
                    Direction::HigherIsBetter,
                    per_sec(s.responses),
                )
                .diagnostic()
                .rate_of("step_responses"),
            ));
            metrics.push(label(
                hdr::latency_metric("step_latency_ns", &s.latency).diagnostic(),
            ));
            metrics.push(label(count("step_responses", s.responses)));
            metrics.push(label(count("step_errors", s.total_errors())));
            metrics.push(label(count("step_unfinished", s.unfinished)));
            metrics.push(label(
                Metric::new(
                    "step_body_bytes",
                    Unit::Bytes,
                    Direction::HigherIsBetter,
                    s.body_bytes as f64,
                )
                .context()
                .merged(Merge::Sum),
            ));
            for class in ErrorClass::ALL {
                let n = s.errors_of(class);
                if n > 0 {
                    metrics.push(
                        label(count("step_errors_by_class", n)).with_label("class", class.as_str()),
                    );
                }
            }
        }
        for (flow, f) in scenario.flows.iter().zip(&figures.flows) {
            let label = |m: Metric| m.with_label("flow", flow.name.as_str());
            metrics.push(label(
                Metric::new(
                    "flows_per_sec",
                    Unit::OpsPerSec,
                    Direction::HigherIsBetter,
                    per_sec(f.completed),
                )
                .diagnostic()
                .rate_of("flows_completed"),
            ));
            metrics.push(label(
                hdr::latency_metric("flow_duration_ns", &f.duration).diagnostic(),
            ));
            metrics.push(label(count("flows_completed", f.completed)));
            metrics.push(label(count("flows_failed", f.failed)));
            metrics.push(label(count("flows_unfinished", f.unfinished())));
        }
        metrics
    }
}

/// Recomputes, in a run merged from segments, the metrics this engine
/// declared [`Merge::Recompute`], from the merged metrics they are made
/// of: HPACK's savings from the summed header bytes, and the per-second
/// p99 from the merged per-second histograms (`timeline_latency_ns`
/// labelled with its aligned second). A merge of one segment keeps its own
/// (it has no per-second histograms), so a figure already present is left
/// as it is.
pub fn recompute_merged(run: &mut Run) {
    let has = |run: &Run, name: &str| run.metrics.iter().any(|m| m.name == name);
    let value = |run: &Run, name: &str| {
        run.metrics
            .iter()
            .find(|m| m.name == name && m.labels.is_empty())
            .map(|m| m.value)
    };
    if !has(run, "h2_header_savings_percent")
        && let (Some(wire), Some(plain)) = (
            value(run, "h2_header_bytes_wire"),
            value(run, "h2_header_bytes_plain"),
        )
        && plain > 0.0
    {
        run.metrics.push(
            Metric::new(
                "h2_header_savings_percent",
                Unit::Percent,
                Direction::HigherIsBetter,
                100.0 * (1.0 - wire / plain),
            )
            .diagnostic()
            .merged(Merge::Recompute),
        );
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
    if has(run, "timeline_latency_p99_ns") {
        return;
    }
    run.metrics.extend(dyno_stats::merge::per_second_percentile(
        &run.metrics,
        "timeline_latency_p99_ns",
        "timeline_requests_per_sec",
        "timeline_latency_ns",
        99.0,
    ));
}
