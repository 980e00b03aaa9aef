//! The settings record of an HTTP run (`dyno http`).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{CapacityRecord, GroupRecord, RatePlanRecord, Record, SegmentRecord};
use crate::Kind;

/// How load is offered.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum LoadModel {
    /// Each connection (or stream) sends its next request when the last is
    /// answered.
    #[default]
    Closed,
    /// Requests are due on a fixed schedule, answered or not; latency is
    /// counted from the due time.
    Open,
}

/// What `dyno http` was asked to do, and what it observed of the server.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default)]
pub struct HttpRecord {
    /// The URL loaded (with `--url-file`, its first URL).
    pub url: String,
    /// How many URLs were loaded round-robin.
    pub urls: u64,
    pub url_file: Option<String>,
    pub unix_socket: Option<String>,
    /// Whether the target was dyno's built-in server.
    pub builtin_server: bool,
    pub method: String,
    pub model: LoadModel,
    /// `-n`: the requests asked for, when the run was given by count.
    pub requests: Option<u64>,
    /// `-d`: the measured duration, when the run was given by time.
    pub duration_ns: Option<u64>,
    /// `--rate`: the open model's requests per second.
    pub rate_per_sec: Option<f64>,
    pub warmup_ns: u64,
    pub connections: u64,
    pub threads: u64,
    /// HTTP/1.1 pipelining depth (1: none).
    pub pipeline: u64,
    pub http2: bool,
    /// HTTP/3 over QUIC (`--h3`); written only when true, so that the
    /// records of HTTP/1.1 and HTTP/2 runs read as they were written.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub http3: bool,
    /// `--0rtt`: QUIC connections resumed with 0-RTT early data; written
    /// only when true.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub zero_rtt: bool,
    /// HTTP/2 and HTTP/3 streams per connection.
    pub streams: u64,
    /// The ALPN protocols offered, in order.
    pub alpn: Vec<String>,
    pub keep_alive: bool,
    pub tls: bool,
    /// Whether the certificate was left unverified (`--insecure`).
    pub insecure: bool,
    pub timeout_ns: u64,
    pub connect_timeout_ns: u64,
    /// The statuses counted as success, e.g. `200-399`.
    pub expect_status: String,
    pub max_error_rate_percent: f64,
    pub seed: u64,
    /// How many request headers were added (`-H`).
    pub headers: u64,
    pub body_bytes: u64,
    #[serde(flatten)]
    pub observed: HttpObserved,
    /// This run's place in a split run, if it is a segment.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub segment: Option<SegmentRecord>,
    /// The segments merged into this run, if it is a group's merged run.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub group: Option<GroupRecord>,
    /// `--find-max`: the capacity search; the run's figures are its step
    /// at the answer's rate.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub capacity: Option<CapacityRecord>,
    /// `--rate-plan`: the plan and each stage's own figures.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rate_plan: Option<RatePlanRecord>,
    /// `--scenario`: the flows and steps the virtual users made.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scenario: Option<ScenarioRecord>,
    /// `--replay`: the log, how it was replayed, and what it held. The
    /// figures of each path template are the run's metrics labelled
    /// `endpoint`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub replay: Option<ReplayRecord>,
}

/// What `--replay` was asked, and what the log held.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default)]
pub struct ReplayRecord {
    /// The log as given.
    pub file: String,
    /// The format it was read in (`combined`, `nginx`, `json`, `har`…).
    pub format: String,
    /// The multiple of the log's pace it was sent at.
    pub speed: f64,
    /// How requests of one stamp were placed in it: `even` or `poisson`.
    pub spread: String,
    /// `--window`, in seconds from the log's first request.
    pub window_from_s: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub window_to_s: Option<f64>,
    /// `--loop`: the log was sent again when it ended.
    pub looped: bool,
    /// The methods sent.
    pub methods: Vec<String>,
    /// The header names not taken from the log.
    pub scrub: Vec<String>,
    /// Lines read (HAR: entries), blank and bad ones included.
    pub lines: u64,
    /// Requests of this segment that fell due in the run (sent, or
    /// dropped at its end); a run cut short does not count what the
    /// reader had read ahead.
    pub requests: u64,
    /// Lines that could not be read or sent, and the first few of them.
    pub bad_lines: u64,
    pub bad_quoted: Vec<String>,
    /// Requests left out for their method, by method.
    pub skipped_methods: std::collections::BTreeMap<String, u64>,
    /// Requests outside the window (at least: reading stops at its end).
    pub outside_window: u64,
    /// Requests of other segments' lines.
    pub other_segments: u64,
    /// Requests whose method has a body, sent without one: the log kept
    /// none.
    pub without_body: u64,
    /// The log's own statuses of the requests replayed.
    pub log_statuses: std::collections::BTreeMap<u16, u64>,
    /// The log's requests in each second of the replay (its time ÷
    /// speed), from the window's start.
    pub log_per_second: Vec<u64>,
    /// From the window's first request to its last, in the log's own time
    /// (one pass), in seconds.
    pub log_span_s: f64,
    /// Times the log was read.
    pub passes: u32,
    /// The run ended before the log did.
    pub cut: bool,
    /// The path templates, in the order first seen; the last is `other`
    /// when there were more than the run keeps apart.
    pub endpoints: Vec<String>,
}

/// A scenario run's flows and steps, as the file gave them. Their figures
/// are the run's metrics labelled `flow` and `step`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(default)]
pub struct ScenarioRecord {
    /// The scenario file as given.
    pub file: String,
    pub flows: Vec<FlowRecord>,
    /// Setup steps made once before the load (not measured).
    pub setup_steps: u64,
    /// Each virtual user kept its cookies.
    pub cookies: bool,
    /// The data file whose rows the virtual users took, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub data: Option<String>,
}

/// One flow of a scenario.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(default)]
pub struct FlowRecord {
    pub name: String,
    pub weight: u64,
    pub steps: Vec<StepRecord>,
}

/// One step of a flow.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(default)]
pub struct StepRecord {
    pub name: String,
    pub method: String,
    /// The URL as written, placeholders and all.
    pub url: String,
}

impl Default for HttpRecord {
    fn default() -> Self {
        HttpRecord {
            url: String::new(),
            urls: 1,
            url_file: None,
            unix_socket: None,
            builtin_server: false,
            method: "GET".into(),
            model: LoadModel::Closed,
            requests: None,
            duration_ns: None,
            rate_per_sec: None,
            warmup_ns: 0,
            connections: 0,
            threads: 0,
            pipeline: 1,
            http2: false,
            http3: false,
            zero_rtt: false,
            streams: 1,
            alpn: Vec::new(),
            keep_alive: true,
            tls: false,
            insecure: false,
            timeout_ns: 0,
            connect_timeout_ns: 0,
            expect_status: String::new(),
            max_error_rate_percent: 0.0,
            seed: 0,
            headers: 0,
            body_bytes: 0,
            observed: HttpObserved::default(),
            segment: None,
            group: None,
            capacity: None,
            rate_plan: None,
            scenario: None,
            replay: None,
        }
    }
}

impl Record for HttpRecord {
    const KIND: Kind = Kind::Http;
}

/// What an HTTP run found out about the server while running.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(default)]
pub struct HttpObserved {
    /// What the TLS handshake settled, where TLS was used.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tls_session: Option<TlsSession>,
    /// The server's own name for itself (its `Server` header).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub server_software: Option<String>,
}

/// What the server agreed to in the TLS handshake.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(default)]
pub struct TlsSession {
    /// e.g. `TLSv1.3`.
    pub protocol: String,
    pub cipher: String,
    pub key_exchange: Option<String>,
    /// The protocol ALPN chose, if any.
    pub alpn: Option<String>,
}
