//! The figures of an HTTP run, typed: read once from the run's metrics by
//! name ([`HttpFigures::of`]), then read as fields by the text report, the
//! ApacheBench layout and the HTML page alike (as hyperfine's exporters
//! read `BenchmarkResult`'s fields). Each run-wide figure an HTTP view
//! shows is looked up by name here and nowhere else, so the views cannot
//! derive one figure two ways (the open model was: the text report from
//! the record, the page from the uncorrected latency). Still read by name
//! where they are drawn: a scenario's figures of each flow and step
//! (`crate::http::ByPlace`) and the per-second timeline, whose page code
//! a database run shares.

use dyno_model::names::common;
use dyno_model::names::http::{self, class};
use dyno_model::record::{HttpRecord, LoadModel};
use dyno_model::{Metric, Run};
use dyno_stats::hdr;
use hdrhistogram::Histogram;

/// What an HTTP run (or the HTTP part of a quick run) measured, as the
/// views show it. A figure the run did not write is `None`, or 0 where
/// the views have always shown a missing count or rate as 0.
#[derive(Debug, Clone)]
pub(crate) struct HttpFigures {
    /// The run's settings as its record; the defaults for a quick run's
    /// part (a quick run holds no HTTP record) or a record that does not
    /// read.
    pub record: HttpRecord,
    /// Open model (`--rate`): the record says so, or the run wrote the
    /// uncorrected latency only the open model has (a quick part, a run
    /// saved before its record named its model).
    pub open: bool,
    /// The latency (in the open model corrected: from each due time).
    pub latency: Option<Histogram<u64>>,
    /// Whether the run wrote a latency figure at all, even one without a
    /// histogram that decodes.
    pub latency_written: bool,
    /// Open model: the latency from each real send.
    pub latency_uncorrected: Option<Histogram<u64>>,
    /// Open model: from each due time to the real send.
    pub send_lag: Option<Histogram<u64>>,
    /// ApacheBench's split of the latency: connection set-up (0 for a
    /// request on an open connection).
    pub connect: Option<Histogram<u64>>,
    /// ApacheBench's split: from the send to the last byte.
    pub processing: Option<Histogram<u64>>,
    /// ApacheBench's split: from the send to the first byte.
    pub waiting: Option<Histogram<u64>>,
    /// Requests that ended, answered or failed.
    pub requests: u64,
    /// Requests answered.
    pub responses: u64,
    /// Requests failed, every class together.
    pub errors: u64,
    /// Requests cut, not waited for, at the run's end.
    pub unfinished: u64,
    /// The measured window, in ns.
    pub measured_ns: f64,
    /// Answers per second over the measured window.
    pub requests_per_sec: f64,
    /// Bytes read per second over the measured window.
    pub transfer_bytes_per_sec: f64,
    /// Bytes read, written and of answer bodies.
    pub bytes_read: f64,
    pub bytes_written: f64,
    pub body_bytes: f64,
    /// The client's CPU, in percent of its worker threads.
    pub client_cpu_percent: f64,
    /// How long the target answered nothing, in ns, where the run wrote it.
    pub target_lost_ns: Option<f64>,
    /// Open model: the rate asked for.
    pub requested_rate_per_sec: f64,
    /// Open model: a scenario's completed flows per second, its flows'
    /// together.
    pub flows_per_sec: f64,
    /// Open model: requests (or flows) sent late, the latest, and those
    /// never sent.
    pub late_sends: u64,
    pub max_lateness_ns: f64,
    pub dropped_sends: u64,
    /// HTTP/2's figures, where the run went over HTTP/2.
    pub h2: Option<H2Figures>,
    /// QUIC's figures, where the run went over HTTP/3.
    pub h3: Option<H3Figures>,
    /// Answers by status code and failures by error class, in the run's
    /// order.
    pub tallies: Vec<Tally>,
}

/// What a run over HTTP/2 adds.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct H2Figures {
    /// The received header blocks' bytes on the wire and decoded.
    pub header_bytes_wire: f64,
    pub header_bytes_plain: f64,
    /// The share of the received header bytes HPACK saved.
    pub header_savings_percent: Option<f64>,
    /// The concurrent streams the server allows.
    pub server_max_concurrent_streams: Option<f64>,
    /// Requests a GOAWAY refused unprocessed and sent again.
    pub goaway_retried: f64,
}

/// What a run over HTTP/3 adds: QUIC's own figures.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct H3Figures {
    pub handshakes: f64,
    pub handshake_ns_sum: f64,
    pub handshake_ns_max: f64,
    pub datagrams_sent: f64,
    pub datagrams_received: f64,
    pub send_calls: f64,
    pub receive_calls: f64,
    pub packets_sent: f64,
    pub packets_lost: f64,
    pub congestion_events: f64,
    pub rtt_min_ns: Option<f64>,
    pub rtt_max_ns: Option<f64>,
    pub stream_limit_stalls: f64,
    pub goaway_retried: f64,
    /// The received field sections' bytes on the wire and decoded, and
    /// the share QPACK saved.
    pub header_bytes_wire: Option<f64>,
    pub header_bytes_plain: f64,
    pub qpack_savings_percent: Option<f64>,
    /// `--0rtt`: handshakes whose early data the server took, and those
    /// whose early data it rejected; `None` without `--0rtt`.
    pub zero_rtt: Option<(f64, f64)>,
}

/// A count of answers with one status code or of failures of one class.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Tally {
    /// Answers with this status code (`200`).
    Status(String, f64),
    /// Failures of this class ([`class`]).
    Error(String, f64),
}

impl HttpFigures {
    /// The figures of `run`'s own metrics (`part` `None`), or of those of
    /// a quick run's part `part`.
    pub(crate) fn of(run: &Run, part: Option<&str>) -> HttpFigures {
        let metric = |name: &str| run.metric_of(part, name);
        let value = |name: &str| metric(name).map_or(0.0, |m| m.value);
        let count = |name: &str| value(name).round() as u64;
        let histogram = |name: &str| decoded(metric(name));
        let record: HttpRecord = match part {
            None => run.record().unwrap_or_default(),
            Some(_) => HttpRecord::default(),
        };
        let latency_uncorrected = histogram(common::LATENCY_UNCORRECTED);
        let open = record.model == LoadModel::Open || metric(common::LATENCY_UNCORRECTED).is_some();
        let mine = || run.metrics.iter().filter(move |m| m.part() == part);
        let tallies = mine()
            .filter_map(|m: &Metric| {
                if let Some(code) = m.name.strip_prefix(http::STATUS_PREFIX) {
                    Some(Tally::Status(code.to_owned(), m.value))
                } else {
                    m.name
                        .strip_prefix(http::ERRORS_PREFIX)
                        .map(|class| Tally::Error(class.to_owned(), m.value))
                }
            })
            .collect();
        let h2 = metric(http::H2_HEADER_BYTES_WIRE).map(|wire| H2Figures {
            header_bytes_wire: wire.value,
            header_bytes_plain: value(http::H2_HEADER_BYTES_PLAIN),
            header_savings_percent: metric(http::H2_HEADER_SAVINGS_PERCENT).map(|m| m.value),
            server_max_concurrent_streams: metric(http::H2_SERVER_MAX_CONCURRENT_STREAMS)
                .map(|m| m.value),
            goaway_retried: value(http::H2_GOAWAY_RETRIED),
        });
        let h3 = metric(http::H3_HANDSHAKES).map(|handshakes| H3Figures {
            handshakes: handshakes.value,
            handshake_ns_sum: value(http::H3_HANDSHAKE_NS_SUM),
            handshake_ns_max: value(http::H3_HANDSHAKE_NS_MAX),
            datagrams_sent: value(http::H3_DATAGRAMS_SENT),
            datagrams_received: value(http::H3_DATAGRAMS_RECEIVED),
            send_calls: value(http::H3_SEND_CALLS),
            receive_calls: value(http::H3_RECEIVE_CALLS),
            packets_sent: value(http::H3_PACKETS_SENT),
            packets_lost: value(http::H3_PACKETS_LOST),
            congestion_events: value(http::H3_CONGESTION_EVENTS),
            rtt_min_ns: metric(http::H3_RTT_MIN_NS).map(|m| m.value),
            rtt_max_ns: metric(http::H3_RTT_MAX_NS).map(|m| m.value),
            stream_limit_stalls: value(http::H3_STREAM_LIMIT_STALLS),
            goaway_retried: value(http::H3_GOAWAY_RETRIED),
            header_bytes_wire: metric(http::H3_HEADER_BYTES_WIRE).map(|m| m.value),
            header_bytes_plain: value(http::H3_HEADER_BYTES_PLAIN),
            qpack_savings_percent: metric(http::H3_QPACK_SAVINGS_PERCENT).map(|m| m.value),
            zero_rtt: metric(http::H3_HANDSHAKES_0RTT)
                .map(|m| (m.value, value(http::H3_EARLY_DATA_REJECTED))),
        });
        HttpFigures {
            h3,
            open,
            latency: histogram(common::LATENCY),
            latency_written: metric(common::LATENCY).is_some(),
            latency_uncorrected,
            send_lag: histogram(http::SEND_LAG),
            connect: histogram(http::CONNECT),
            processing: histogram(http::PROCESSING),
            waiting: histogram(http::WAITING),
            requests: count(http::REQUESTS),
            responses: count(http::RESPONSES),
            errors: count(http::ERRORS),
            unfinished: count(http::UNFINISHED_REQUESTS),
            measured_ns: value(common::MEASURED),
            requests_per_sec: value(http::REQUESTS_PER_SEC),
            transfer_bytes_per_sec: value(http::TRANSFER_BYTES_PER_SEC),
            bytes_read: value(http::BYTES_READ),
            bytes_written: value(http::BYTES_WRITTEN),
            body_bytes: value(http::BODY_BYTES),
            client_cpu_percent: value(common::CLIENT_CPU_PERCENT),
            target_lost_ns: metric(common::TARGET_LOST).map(|m| m.value),
            requested_rate_per_sec: value(http::REQUESTED_RATE_PER_SEC),
            // Each flow of a scenario writes its own.
            flows_per_sec: mine()
                .filter(|m| m.name == http::FLOWS_PER_SEC)
                .map(|m| m.value)
                .sum(),
            late_sends: count(http::LATE_SENDS),
            max_lateness_ns: value(http::MAX_LATENESS),
            dropped_sends: count(http::DROPPED_SENDS),
            h2,
            tallies,
            record,
        }
    }

    /// The answers by status code: (code, count).
    pub(crate) fn statuses(&self) -> impl Iterator<Item = (&str, u64)> {
        self.tallies.iter().filter_map(|t| match t {
            Tally::Status(code, n) => Some((code.as_str(), n.round() as u64)),
            Tally::Error(..) => None,
        })
    }

    /// The failures by error class: (class, count).
    pub(crate) fn errors_by_class(&self) -> impl Iterator<Item = (&str, u64)> {
        self.tallies.iter().filter_map(|t| match t {
            Tally::Error(class, n) => Some((class.as_str(), n.round() as u64)),
            Tally::Status(..) => None,
        })
    }

    /// The failures of one error class ([`class`]), 0 where none.
    pub(crate) fn errors_of(&self, class: &str) -> u64 {
        self.errors_by_class()
            .find(|(c, _)| *c == class)
            .map_or(0, |(_, n)| n)
    }

    /// The failures of every class of a failed connection attempt
    /// (refused, timeout, too many open files …) and of the TLS handshake.
    pub(crate) fn connect_errors(&self) -> u64 {
        self.errors_by_class()
            .filter(|(c, _)| c.starts_with(class::CONNECT_PREFIX))
            .map(|(_, n)| n)
            .sum::<u64>()
            + self.errors_of(class::TLS_HANDSHAKE)
    }
}

/// The decoded histogram of `metric`, if it has one that decodes.
fn decoded(metric: Option<&Metric>) -> Option<Histogram<u64>> {
    metric
        .and_then(|m| m.histogram.as_ref())
        .and_then(|h| hdr::from_model(h).ok())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::http::tests::{counted, histogram_metric, ten_requests};
    use dyno_model::{Direction, Kind, Unit};

    /// A closed run's figures: ten requests, three answered 503, two
    /// cut at the end, three connects failed.
    fn closed_metrics() -> Vec<Metric> {
        let mut metrics = ten_requests();
        metrics.extend([
            counted("errors_connect_refused", 1.0),
            counted("errors_tls_handshake", 2.0),
            counted("unfinished_requests", 2.0),
        ]);
        metrics
    }

    fn http_run(model: &str, metrics: Vec<Metric>) -> Run {
        let mut run = Run::new(Kind::Http, "GET http://127.0.0.1:8080/hello c=2");
        run.settings = serde_json::json!({
            "url": "http://127.0.0.1:8080/hello",
            "model": model,
            "connections": 2,
            "threads": 1,
            "keep_alive": true,
        });
        run.metrics = metrics;
        run
    }

    #[test]
    fn a_closed_run() {
        let f = HttpFigures::of(&http_run("closed", closed_metrics()), None);
        assert!(!f.open);
        assert_eq!(f.record.connections, 2);
        assert_eq!(f.latency.as_ref().map(Histogram::len), Some(10));
        assert!(f.latency_written);
        assert!(f.latency_uncorrected.is_none() && f.send_lag.is_none());
        assert_eq!(f.connect.as_ref().map(|h| h.count_at(0)), Some(8));
        assert!(f.waiting.is_some() && f.processing.is_some());
        assert_eq!((f.requests, f.responses, f.errors), (10, 10, 3));
        assert_eq!(f.unfinished, 2);
        assert_eq!(f.measured_ns, 0.5e9);
        assert_eq!(f.requests_per_sec, 20.0);
        assert_eq!(
            (f.bytes_read, f.bytes_written, f.body_bytes),
            (2000.0, 800.0, 920.0)
        );
        assert_eq!(f.client_cpu_percent, 3.0);
        assert_eq!(f.statuses().collect::<Vec<_>>(), [("200", 7), ("503", 3)]);
        assert_eq!(
            f.errors_by_class().collect::<Vec<_>>(),
            [("status", 3), ("connect_refused", 1), ("tls_handshake", 2)]
        );
        // The run's order, statuses and errors interleaved, as the page
        // draws its bars.
        assert_eq!(f.tallies[0], Tally::Error("status".into(), 3.0));
        assert_eq!(f.errors_of(class::STATUS), 3);
        assert_eq!(f.errors_of(class::RESET), 0);
        assert_eq!(f.connect_errors(), 3);
        assert!(f.h2.is_none() && f.target_lost_ns.is_none());
    }

    #[test]
    fn an_open_run() {
        let mut metrics = closed_metrics();
        metrics.extend([
            histogram_metric("latency_uncorrected_ns", &[900_000, 1_000_000]),
            histogram_metric("send_lag_ns", &[1_000, 2_000]),
            Metric::new(
                "requested_rate_per_sec",
                Unit::RequestsPerSec,
                Direction::HigherIsBetter,
                25.0,
            ),
            counted("late_sends", 4.0),
            Metric::new("max_lateness_ns", Unit::Ns, Direction::LowerIsBetter, 3e6),
            counted("dropped_sends", 1.0),
            Metric::new("target_lost_ns", Unit::Ns, Direction::LowerIsBetter, 2.8e9),
            Metric::new(
                "h2_header_bytes_wire",
                Unit::Bytes,
                Direction::LowerIsBetter,
                100.0,
            ),
            Metric::new(
                "h2_header_bytes_plain",
                Unit::Bytes,
                Direction::LowerIsBetter,
                400.0,
            ),
            counted("h2_goaway_retried", 5.0),
        ]);
        let f = HttpFigures::of(&http_run("open", metrics.clone()), None);
        assert!(f.open);
        assert_eq!(f.latency_uncorrected.as_ref().map(Histogram::len), Some(2));
        assert_eq!(f.send_lag.as_ref().map(Histogram::len), Some(2));
        assert_eq!(f.requested_rate_per_sec, 25.0);
        assert_eq!((f.late_sends, f.dropped_sends), (4, 1));
        assert_eq!(f.max_lateness_ns, 3e6);
        assert_eq!(f.target_lost_ns, Some(2.8e9));
        assert_eq!(
            f.h2,
            Some(H2Figures {
                header_bytes_wire: 100.0,
                header_bytes_plain: 400.0,
                header_savings_percent: None,
                server_max_concurrent_streams: None,
                goaway_retried: 5.0,
            })
        );
        // A record that does not name its model: the uncorrected latency
        // says the run was open.
        let mut run = http_run("closed", metrics);
        run.settings = serde_json::json!({});
        assert!(HttpFigures::of(&run, None).open);
    }

    #[test]
    fn a_quick_runs_http_part() {
        let mut run = Run::new(Kind::Quick, "quick");
        run.metrics = closed_metrics()
            .into_iter()
            .map(|m| m.of_part("http"))
            .collect();
        // The db part's latency and counts are not the http part's.
        run.metrics.insert(
            0,
            histogram_metric("latency_ns", &[7, 8, 9, 10]).of_part("db"),
        );
        run.metrics
            .insert(0, counted("errors_status", 9.0).of_part("db"));
        run.metrics
            .insert(0, counted("flows_per_sec", 9.0).of_part("db"));
        let f = HttpFigures::of(&run, Some("http"));
        assert!(!f.open);
        assert_eq!(f.record, HttpRecord::default());
        assert_eq!(f.latency.as_ref().map(Histogram::len), Some(10));
        assert_eq!(f.errors_of(class::STATUS), 3);
        assert_eq!(f.flows_per_sec, 0.0);
        assert_eq!(f.responses, 10);
        // Its own metrics, of no part, are none of these.
        let own = HttpFigures::of(&run, None);
        assert!(own.latency.is_none() && own.tallies.is_empty());
        assert_eq!(own.responses, 0);
    }

    #[test]
    fn a_run_missing_figures_shows_none_or_zero() {
        let mut run = http_run("closed", vec![counted("responses", 4.0)]);
        run.metrics.push(Metric::new(
            "latency_ns",
            Unit::Ns,
            Direction::LowerIsBetter,
            1.0,
        ));
        let f = HttpFigures::of(&run, None);
        assert_eq!(f.responses, 4);
        // A latency figure without a histogram: written, nothing to draw.
        assert!(f.latency.is_none() && f.latency_written);
        assert!(f.connect.is_none() && f.send_lag.is_none());
        assert_eq!((f.requests, f.errors, f.unfinished), (0, 0, 0));
        assert_eq!(
            (f.measured_ns, f.requests_per_sec, f.bytes_read),
            (0.0, 0.0, 0.0)
        );
        assert!(f.h2.is_none() && f.target_lost_ns.is_none() && f.tallies.is_empty());
        assert!(!f.open);
        // Settings that do not read as a record: the defaults.
        run.settings = serde_json::json!({"connections": "many"});
        assert_eq!(HttpFigures::of(&run, None).record, HttpRecord::default());
    }
}
