//! What a load test is asked to do, as plain values: the engine's only input.

use std::time::Duration;

use crate::request::{RequestTemplate, Target};

/// When a run ends.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Stop {
    /// After exactly this many measured requests (warm-up not counted).
    Requests(u64),
    /// After this long (warm-up not counted).
    Duration(Duration),
    /// `--replay`: once every request of the log (its window) has been
    /// sent and answered.
    LogEnds,
}

/// How requests are paced: one value drives the one driver loop.
#[derive(Debug, Clone, PartialEq)]
pub struct Schedule {
    pub stop: Stop,
    /// `None`: closed model — each connection sends its next request as
    /// soon as the previous answer is in. `Some(r)`: open model — `r`
    /// requests per second in total on a fixed schedule; latency counts from
    /// each request's due time, so a stalled server cannot hide its stall.
    pub rate_per_sec: Option<f64>,
    /// Time at the start whose requests are made but not measured.
    pub warmup: Duration,
    /// `--rate-plan`: the open model's rate changes by stages and ramps;
    /// `rate_per_sec` is then the plan's mean rate, the run lasts the
    /// plan's length, and each stage gets its own figures.
    pub plan: Option<RatePlan>,
    /// A duration run: how long requests under way at the deadline are
    /// waited for before they are cut (`dyno_load::pool::Settings::grace`);
    /// zero but for a capacity step.
    pub grace: Duration,
}

pub use dyno_load::plan::RatePlan;
pub use dyno_model::Segment;

/// Everything the engine needs.
#[derive(Debug, Clone)]
pub struct Settings {
    pub target: Target,
    /// Requests used round-robin (one unless `--url-file`).
    pub requests: Vec<RequestTemplate>,
    pub schedule: Schedule,
    /// Connections in total, spread evenly over the threads.
    pub connections: usize,
    pub threads: usize,
    /// Requests written back to back on a connection before reading the
    /// answers (HTTP/1.1 pipelining); 1 turns it off.
    pub pipeline: usize,
    /// Speak HTTP/2 (h2c with prior knowledge for `http://`, h2 by ALPN
    /// for `https://`) instead of HTTP/1.1.
    pub http2: bool,
    /// Speak HTTP/3 over QUIC (`https://` only: QUIC is always TLS 1.3,
    /// ALPN `h3`), to the URL's port over UDP.
    pub http3: bool,
    /// `--0rtt`: QUIC connections resume with a ticket of an earlier one
    /// and send their first requests as 0-RTT early data.
    pub zero_rtt: bool,
    /// HTTP/2: requests under way at once on each connection (h2load's
    /// `-m`); 1 for HTTP/1.1.
    pub streams: usize,
    /// `https://`: the protocols offered by ALPN, preferred first (`h2`,
    /// `http/1.1`), the server choosing; empty: the one `http2` says.
    pub alpn: Vec<String>,
    /// Reuse connections (the default); false opens one per request.
    pub keep_alive: bool,
    /// Longest wait for a response (or its next bytes) before giving up.
    pub timeout: Duration,
    pub connect_timeout: Duration,
    /// The statuses that count as answered; any other is an error of
    /// class [`crate::ErrorClass::Status`] (default: 2xx and 3xx).
    pub expect_status: crate::status::StatusSet,
    /// Seed of the random numbers filled into request templates.
    pub seed: u64,
    /// Connect to this Unix domain socket instead of the URL's host and
    /// port (the URL still gives the Host header and the path).
    pub unix_socket: Option<std::path::PathBuf>,
    /// How `https://` targets are verified; unused for `http://`.
    pub tls: TlsSettings,
    /// Connect from this local address (ab's `-B`), e.g. one of
    /// 127.0.0.0/8 so that processes on one machine look like different
    /// hosts to the server; `None` lets the kernel choose.
    pub source_addr: Option<std::net::IpAddr>,
    /// The part of a run split over several processes that this one runs
    /// (`--segment I/N`, see [`Segment`]). [`Settings::schedule`] is the
    /// whole run's (its `-n`, its rate); this process makes the requests
    /// whose number is its own, and `{seq}` fills in the whole run's
    /// number. [`Settings::connections`] and [`Settings::threads`] are
    /// this process's own, already shared out.
    pub segment: Segment,
    /// `--scenario`: each connection is a virtual user running the
    /// scenario's flows, and [`Settings::requests`] is unused.
    pub scenario: Option<std::sync::Arc<crate::scenario::Scenario>>,
    /// `--replay`: the requests and their due times come from an access
    /// log, and [`Settings::requests`] is unused. An open model: the due
    /// times are the log's, so `schedule.rate_per_sec` is unused too.
    pub replay: Option<crate::replay::Replay>,
}

/// TLS options. Whether TLS is used at all follows from the URL's scheme,
/// so a setting here can never contradict the target.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TlsSettings {
    /// Accept any server certificate (self-signed test servers). The
    /// handshake's signatures are still checked, so the connection is
    /// really TLS; only the certificate's trust and name are not.
    pub insecure: bool,
}

impl Settings {
    /// What ALPN offers: `alpn` when given, else `h2` or `http/1.1`.
    pub fn offered_alpn(&self) -> Vec<Vec<u8>> {
        if self.alpn.is_empty() {
            vec![if self.http3 {
                b"h3".to_vec()
            } else if self.http2 {
                b"h2".to_vec()
            } else {
                b"http/1.1".to_vec()
            }]
        } else {
            self.alpn.iter().map(|p| p.as_bytes().to_vec()).collect()
        }
    }

    /// Whether requests are sent on a timetable (`--rate`, `--replay`)
    /// rather than as answers come in.
    #[inline]
    pub(crate) fn open_model(&self) -> bool {
        self.schedule.rate_per_sec.is_some() || self.replay.is_some()
    }

    /// The threads the run uses: `threads`, but no more than there are
    /// connections, and at least one.
    #[inline]
    pub(crate) fn threads_used(&self) -> usize {
        self.threads.min(self.connections).max(1)
    }
}
