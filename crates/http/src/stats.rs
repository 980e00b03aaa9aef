//! Per-thread accumulators: each worker thread owns one, records into it
//! without locks, and they are merged once per second (the timeline) and
//! once at the end.

use std::ops::AddAssign;
use std::time::Duration;

use hdrhistogram::Histogram;

use dyno_model::names::http::class;
use dyno_stats::hdr::latency_histogram;

/// Why a request failed. Per-request failures are data, counted by class.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ErrorClass {
    ConnectRefused,
    ConnectTimeout,
    /// Connecting failed for another reason than those named below.
    ConnectOther,
    /// The TLS handshake failed: the certificate is not trusted or names
    /// another host, no protocol version or cipher in common, or the
    /// server does not speak TLS on that port.
    Tls,
    ReadTimeout,
    /// The peer reset the connection.
    Reset,
    /// The connection closed before the response was complete.
    ClosedEarly,
    /// The response could not be parsed.
    Malformed,
    /// The body was shorter than its Content-Length.
    BodyLengthMismatch,
    /// A status outside the expected set (default: 2xx and 3xx).
    Status,
    /// Writing the request failed.
    Write,
    /// No socket could be opened: the process ran out of file descriptors
    /// (EMFILE) or the system did (ENFILE). Raise `ulimit -n`.
    ConnectTooManyFiles,
    /// Nothing at the Unix socket's path (ENOENT), or it is not a socket
    /// (ENOTSOCK).
    ConnectNoSocket,
    /// No local port or address was free (EADDRNOTAVAIL): typically the
    /// ephemeral ports are used up by connections in TIME_WAIT.
    ConnectNoLocalPort,
    /// No route to the network or host (ENETUNREACH, EHOSTUNREACH).
    ConnectUnreachable,
    /// Not allowed (EACCES, EPERM): socket permissions or a firewall.
    ConnectDenied,
    /// HTTP/2: the server sent GOAWAY, and the request was not (or no
    /// longer) going to be answered on that connection.
    GoAway,
    /// HTTP/2: the server reset the request's stream (RST_STREAM).
    StreamReset,
    /// HTTP/2: the server broke the protocol (a malformed or unexpected
    /// frame, a flow-control violation); the connection is closed.
    H2Protocol,
    /// HTTP/3: the server sent GOAWAY, and the request was not (or no
    /// longer) going to be answered on that connection.
    H3GoAway,
    /// HTTP/3: the server reset the request's stream.
    H3StreamReset,
    /// HTTP/3 or QUIC: the server broke the protocol (a malformed frame,
    /// a QPACK or stream error), or the connection could not become an
    /// HTTP/3 one; the connection is closed.
    H3Protocol,
    /// A scenario step's answer failed its check: its status is not one
    /// the step accepts, or its body lacks what the step looks for.
    Check,
    /// A scenario step's extraction found nothing in the answer.
    Extract,
    /// A scenario step's request could not be made: a value extracted
    /// earlier cannot go where the step puts it (a line break in a header
    /// value, or `url = "${loc}"` holding a URL on another server).
    /// Nothing was sent.
    Unsendable,
}

impl ErrorClass {
    pub const ALL: [ErrorClass; 25] = [
        ErrorClass::ConnectRefused,
        ErrorClass::ConnectTimeout,
        ErrorClass::ConnectOther,
        ErrorClass::Tls,
        ErrorClass::ReadTimeout,
        ErrorClass::Reset,
        ErrorClass::ClosedEarly,
        ErrorClass::Malformed,
        ErrorClass::BodyLengthMismatch,
        ErrorClass::Status,
        ErrorClass::Write,
        ErrorClass::ConnectTooManyFiles,
        ErrorClass::ConnectNoSocket,
        ErrorClass::ConnectNoLocalPort,
        ErrorClass::ConnectUnreachable,
        ErrorClass::ConnectDenied,
        ErrorClass::GoAway,
        ErrorClass::StreamReset,
        ErrorClass::H2Protocol,
        ErrorClass::H3GoAway,
        ErrorClass::H3StreamReset,
        ErrorClass::H3Protocol,
        ErrorClass::Check,
        ErrorClass::Extract,
        ErrorClass::Unsendable,
    ];

    /// The target had no answer for it: the server is gone, stuck, or
    /// broke the connection (not an answer that failed its check, nor a
    /// request dyno could not make).
    pub fn unanswered(self) -> bool {
        !matches!(
            self,
            ErrorClass::Status
                | ErrorClass::Check
                | ErrorClass::Extract
                | ErrorClass::Unsendable
                | ErrorClass::ConnectTooManyFiles
                | ErrorClass::ConnectNoLocalPort
        )
    }

    /// The snake_case name used in metric names (after
    /// [`dyno_model::names::http::ERRORS_PREFIX`]) and JSON.
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorClass::ConnectRefused => class::CONNECT_REFUSED,
            ErrorClass::ConnectTimeout => class::CONNECT_TIMEOUT,
            ErrorClass::ConnectOther => class::CONNECT_OTHER,
            ErrorClass::Tls => class::TLS_HANDSHAKE,
            ErrorClass::ReadTimeout => class::READ_TIMEOUT,
            ErrorClass::Reset => class::RESET,
            ErrorClass::ClosedEarly => class::CLOSED_EARLY,
            ErrorClass::Malformed => class::MALFORMED_RESPONSE,
            ErrorClass::BodyLengthMismatch => class::BODY_LENGTH_MISMATCH,
            ErrorClass::Status => class::STATUS,
            ErrorClass::Write => class::WRITE,
            ErrorClass::ConnectTooManyFiles => class::CONNECT_TOO_MANY_OPEN_FILES,
            ErrorClass::ConnectNoSocket => class::CONNECT_NO_SUCH_SOCKET,
            ErrorClass::ConnectNoLocalPort => class::CONNECT_NO_LOCAL_PORT,
            ErrorClass::ConnectUnreachable => class::CONNECT_UNREACHABLE,
            ErrorClass::ConnectDenied => class::CONNECT_PERMISSION_DENIED,
            ErrorClass::GoAway => class::H2_GOAWAY,
            ErrorClass::StreamReset => class::H2_RST_STREAM,
            ErrorClass::H2Protocol => class::H2_PROTOCOL_ERROR,
            ErrorClass::H3GoAway => class::H3_GOAWAY,
            ErrorClass::H3StreamReset => class::H3_STREAM_RESET,
            ErrorClass::H3Protocol => class::H3_PROTOCOL_ERROR,
            ErrorClass::Check => class::CHECK_FAILED,
            ErrorClass::Extract => class::EXTRACT_FAILED,
            ErrorClass::Unsendable => class::VALUE_UNSENDABLE,
        }
    }

    /// Words for people.
    pub fn label(self) -> &'static str {
        match self {
            ErrorClass::ConnectRefused => "connect refused",
            ErrorClass::ConnectTimeout => "connect timeout",
            ErrorClass::ConnectOther => "connect failed",
            ErrorClass::Tls => "TLS handshake failed",
            ErrorClass::ReadTimeout => "read timeout",
            ErrorClass::Reset => "reset",
            ErrorClass::ClosedEarly => "closed early",
            ErrorClass::Malformed => "malformed response",
            ErrorClass::BodyLengthMismatch => "body length mismatch",
            ErrorClass::Status => "unexpected status",
            ErrorClass::Write => "write failed",
            ErrorClass::ConnectTooManyFiles => "connect failed: too many open files",
            ErrorClass::ConnectNoSocket => "connect failed: no such socket",
            ErrorClass::ConnectNoLocalPort => "connect failed: no free local port",
            ErrorClass::ConnectUnreachable => "connect failed: unreachable",
            ErrorClass::ConnectDenied => "connect failed: permission denied",
            ErrorClass::GoAway => "HTTP/2 GOAWAY from the server",
            ErrorClass::StreamReset => "HTTP/2 stream reset by the server (RST_STREAM)",
            ErrorClass::H2Protocol => "HTTP/2 protocol error",
            ErrorClass::H3GoAway => "HTTP/3 GOAWAY from the server",
            ErrorClass::H3StreamReset => "HTTP/3 stream reset by the server",
            ErrorClass::H3Protocol => "HTTP/3 or QUIC protocol error",
            ErrorClass::Check => "check failed",
            ErrorClass::Extract => "extraction found nothing",
            ErrorClass::Unsendable => {
                "request not sent: a value cannot go where the step puts it (a line break in a header, a URL on another server)"
            }
        }
    }

    pub(crate) fn index(self) -> usize {
        self as usize
    }

    /// An error of an answered request: the answer came, and was not the
    /// one wanted (its status, a check, an extraction).
    pub fn is_answered(self) -> bool {
        matches!(
            self,
            ErrorClass::Status | ErrorClass::Check | ErrorClass::Extract
        )
    }
}

/// Failed requests counted by class: a run's, a scenario step's.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ErrorCounts([u64; ErrorClass::ALL.len()]);

impl ErrorCounts {
    /// Counts one failed request.
    pub fn record(&mut self, class: ErrorClass) {
        self.0[class.index()] += 1;
    }

    /// Failed requests of one class.
    pub fn of(&self, class: ErrorClass) -> u64 {
        self.0[class.index()]
    }

    /// Failed requests of every class.
    pub fn total(&self) -> u64 {
        self.0.iter().sum()
    }

    /// Adds another's counts, class by class.
    pub fn add(&mut self, other: &ErrorCounts) {
        for (mine, theirs) in self.0.iter_mut().zip(other.0) {
            *mine += theirs;
        }
    }

    /// Sets one class's count (a test's figures).
    #[cfg(test)]
    pub fn set(&mut self, class: ErrorClass, n: u64) {
        self.0[class.index()] = n;
    }
}

/// Everything one thread measured.
#[derive(Debug, Clone)]
pub struct Stats {
    /// Request latency: from the due time in the open model (corrected),
    /// from the first byte written in the closed model.
    pub latency: Histogram<u64>,
    /// Open model only: latency from the moment the request was really sent.
    pub uncorrected: Histogram<u64>,
    /// Connection set-up time of each request (0 when it reused one).
    pub connect: Histogram<u64>,
    /// From sending to the first byte of the answer.
    pub waiting: Histogram<u64>,
    /// From sending to the last byte of the answer.
    pub processing: Histogram<u64>,
    /// Completed responses (any status).
    pub responses: u64,
    /// Failed requests by class.
    pub errors: ErrorCounts,
    /// Responses by status code.
    pub status: Vec<(u16, u64)>,
    pub bytes_read: u64,
    pub bytes_written: u64,
    /// Body bytes of completed responses (ab's "HTML transferred").
    pub body_bytes: u64,
    /// Connections opened.
    pub connects: u64,
    /// Open model: requests sent more than [`LATE_AFTER`] after their due time.
    pub late_sends: u64,
    /// Open model: the send lag of every measured request — when it was
    /// really written minus when it was due. The client's own delay (timer
    /// wake-up, a busy thread) and waiting for a busy connection both show
    /// here; the corrected latency includes it, the uncorrected does not.
    pub send_lag: Histogram<u64>,
    pub max_lateness: Duration,
    /// Open model: requests that were due before the end but never sent.
    pub dropped: u64,
    /// Requests written but neither answered nor failed when a duration run
    /// reached its end (or was interrupted): the run ends on time instead of
    /// waiting for them, and they are counted here, as wrk and oha do. Not
    /// errors, and not in [`Stats::requests`].
    pub unfinished: u64,
    /// HTTP/2 only: header compression and the server's stream limit.
    pub h2: H2Stats,
    /// HTTP/3 only: what QUIC did under the requests.
    pub h3: H3Stats,
}

/// What an HTTP/2 run adds: header-block bytes on the wire (HEADERS and
/// CONTINUATION payloads, counted from the frames) against the plain size
/// of the same header fields (name and value bytes, pseudo-fields
/// included), each way, and the lowest limit of concurrent streams a
/// server's SETTINGS gave.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct H2Stats {
    pub header_block_written: u64,
    pub header_block_read: u64,
    pub plain_header_written: u64,
    pub plain_header_read: u64,
    /// `None` until a connection's handshake is done.
    pub max_concurrent_streams: Option<usize>,
    /// Requests sent on a connection whose GOAWAY then said the server
    /// had not processed them (streams above its last stream id), and
    /// sent again on a new connection: not errors, and each request is
    /// still answered or failed exactly once.
    pub goaway_retried: u64,
}

impl H2Stats {
    /// HPACK's savings on the received (response) header bytes, as a
    /// fraction: h2load's "space savings", which counts received headers
    /// only, so a long request header does not move it. `None` without
    /// HTTP/2 response headers.
    pub fn header_savings(&self) -> Option<f64> {
        let plain = self.plain_header_read;
        let wire = self.header_block_read;
        (plain > 0).then(|| 1.0 - wire as f64 / plain as f64)
    }
}

/// What an HTTP/3 run adds: QUIC's own figures, summed over the run's
/// connections as each ends (quinn's `Connection::stats`), so that a
/// report can show beside the latency what the transport did: handshakes,
/// datagrams and the system calls that carried them (GSO and GRO put
/// many datagrams in one), packets lost, congestion events, the path's
/// round trip, and how often the server's stream limit held a request
/// back (STREAMS_BLOCKED frames the client sent).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct H3Stats {
    /// QUIC connections whose handshake completed, and their handshake
    /// times (from the first datagram to the handshake's end), summed and
    /// the longest.
    pub handshakes: u64,
    pub handshake_ns_sum: u64,
    pub handshake_ns_max: u64,
    /// Of them, 0-RTT ones (the server took early data), and those whose
    /// early data the server rejected (`--0rtt`).
    pub handshakes_0rtt: u64,
    pub early_data_rejected: u64,
    /// UDP datagrams and bytes each way, and the system calls that moved
    /// them.
    pub datagrams_sent: u64,
    pub datagrams_received: u64,
    pub udp_bytes_sent: u64,
    pub udp_bytes_received: u64,
    pub send_calls: u64,
    pub receive_calls: u64,
    /// QUIC packets the client sent, and those it declared lost (whose
    /// frames QUIC sends again in new packets: QUIC retransmits frames,
    /// not packets).
    pub packets_sent: u64,
    pub packets_lost: u64,
    pub bytes_lost: u64,
    /// Congestion events (the window cut for loss or ECN).
    pub congestion_events: u64,
    /// The smoothed round trip each connection ended with, summed, and
    /// the least and most seen.
    pub rtt_ns_sum: u64,
    pub rtt_ns_min: Option<u64>,
    pub rtt_ns_max: u64,
    /// STREAMS_BLOCKED frames the client sent: a request waited for the
    /// server to allow another stream (its stream limit is below -m).
    pub stream_limit_stalls: u64,
    /// Requests sent again on a new connection after the server's GOAWAY
    /// or H3_REQUEST_REJECTED said it had not processed them.
    pub goaway_retried: u64,
    /// Field-section bytes on the wire (QPACK-coded) and plain (names and
    /// values, pseudo-fields included), each way, as [`H2Stats`] counts
    /// HPACK's.
    pub header_block_written: u64,
    pub header_block_read: u64,
    pub plain_header_written: u64,
    pub plain_header_read: u64,
}

impl H3Stats {
    /// QPACK's savings on the received header bytes, as a fraction, as
    /// [`H2Stats::header_savings`] reckons HPACK's.
    pub fn header_savings(&self) -> Option<f64> {
        let plain = self.plain_header_read;
        (plain > 0).then(|| 1.0 - self.header_block_read as f64 / plain as f64)
    }

    /// Adds the figures of one ended connection: what it did after
    /// `from` (its figures when the measured part began).
    pub(crate) fn add_connection(
        &mut self,
        s: &quinn::ConnectionStats,
        from: &quinn::ConnectionStats,
    ) {
        self.datagrams_sent += s.udp_tx.datagrams - from.udp_tx.datagrams;
        self.datagrams_received += s.udp_rx.datagrams - from.udp_rx.datagrams;
        self.udp_bytes_sent += s.udp_tx.bytes - from.udp_tx.bytes;
        self.udp_bytes_received += s.udp_rx.bytes - from.udp_rx.bytes;
        self.send_calls += s.udp_tx.ios - from.udp_tx.ios;
        self.receive_calls += s.udp_rx.ios - from.udp_rx.ios;
        self.packets_sent += s.path.sent_packets - from.path.sent_packets;
        self.packets_lost += s.path.lost_packets - from.path.lost_packets;
        self.bytes_lost += s.path.lost_bytes - from.path.lost_bytes;
        self.congestion_events += s.path.congestion_events - from.path.congestion_events;
        let rtt = u64::try_from(s.path.rtt.as_nanos()).unwrap_or(u64::MAX);
        self.rtt_ns_sum += rtt;
        self.rtt_ns_min = Some(self.rtt_ns_min.map_or(rtt, |m| m.min(rtt)));
        self.rtt_ns_max = self.rtt_ns_max.max(rtt);
        self.stream_limit_stalls +=
            s.frame_tx.streams_blocked_bidi - from.frame_tx.streams_blocked_bidi;
    }

    /// A completed handshake that took `took`.
    pub(crate) fn handshake(&mut self, took: Duration, zero_rtt: bool) {
        let ns = u64::try_from(took.as_nanos()).unwrap_or(u64::MAX);
        self.handshakes += 1;
        self.handshake_ns_sum += ns;
        self.handshake_ns_max = self.handshake_ns_max.max(ns);
        self.handshakes_0rtt += u64::from(zero_rtt);
    }

    /// Sums another thread's figures.
    fn add(&mut self, o: &H3Stats) {
        self.handshakes += o.handshakes;
        self.handshake_ns_sum += o.handshake_ns_sum;
        self.handshake_ns_max = self.handshake_ns_max.max(o.handshake_ns_max);
        self.handshakes_0rtt += o.handshakes_0rtt;
        self.early_data_rejected += o.early_data_rejected;
        self.datagrams_sent += o.datagrams_sent;
        self.datagrams_received += o.datagrams_received;
        self.udp_bytes_sent += o.udp_bytes_sent;
        self.udp_bytes_received += o.udp_bytes_received;
        self.send_calls += o.send_calls;
        self.receive_calls += o.receive_calls;
        self.packets_sent += o.packets_sent;
        self.packets_lost += o.packets_lost;
        self.bytes_lost += o.bytes_lost;
        self.congestion_events += o.congestion_events;
        self.rtt_ns_sum += o.rtt_ns_sum;
        self.rtt_ns_min = match (self.rtt_ns_min, o.rtt_ns_min) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        self.rtt_ns_max = self.rtt_ns_max.max(o.rtt_ns_max);
        self.stream_limit_stalls += o.stream_limit_stalls;
        self.goaway_retried += o.goaway_retried;
        self.header_block_written += o.header_block_written;
        self.header_block_read += o.header_block_read;
        self.plain_header_written += o.plain_header_written;
        self.plain_header_read += o.plain_header_read;
    }
}

/// A send this much behind its due time counts as late.
pub const LATE_AFTER: Duration = Duration::from_millis(1);

impl Default for Stats {
    fn default() -> Self {
        Stats {
            latency: latency_histogram(),
            uncorrected: latency_histogram(),
            connect: latency_histogram(),
            waiting: latency_histogram(),
            processing: latency_histogram(),
            responses: 0,
            errors: ErrorCounts::default(),
            status: Vec::new(),
            bytes_read: 0,
            bytes_written: 0,
            body_bytes: 0,
            connects: 0,
            late_sends: 0,
            send_lag: latency_histogram(),
            max_lateness: Duration::ZERO,
            dropped: 0,
            unfinished: 0,
            h2: H2Stats::default(),
            h3: H3Stats::default(),
        }
    }
}

fn record(h: &mut Histogram<u64>, d: Duration) {
    // `auto(true)` histograms grow instead of failing; saturate just in case.
    let _ = h.record(u64::try_from(d.as_nanos()).unwrap_or(u64::MAX));
}

/// The timings of one completed response.
#[derive(Debug, Clone, Copy)]
pub struct Timing {
    pub connect: Duration,
    pub waiting: Duration,
    pub processing: Duration,
    /// Open model: from the due time to the last byte.
    pub corrected: Option<Duration>,
}

impl Timing {
    /// The latency this response counts with: from the due time in the open
    /// model (never less than the round trip), connect plus processing in
    /// the closed model.
    pub fn latency(&self) -> Duration {
        let total = self.connect + self.processing;
        self.corrected.map_or(total, |c| c.max(total))
    }
}

impl Stats {
    /// Records one completed response.
    pub fn response(&mut self, status: u16, body_bytes: u64, t: Timing) {
        self.responses += 1;
        self.body_bytes += body_bytes;
        match self.status.iter_mut().find(|(code, _)| *code == status) {
            Some((_, n)) => *n += 1,
            None => self.status.push((status, 1)),
        }
        record(&mut self.connect, t.connect);
        record(&mut self.waiting, t.waiting);
        record(&mut self.processing, t.processing);
        record(&mut self.latency, t.latency());
        if t.corrected.is_some() {
            record(&mut self.uncorrected, t.connect + t.processing);
        }
    }

    /// Requests accounted for: answered or failed. (A response counted as
    /// a status error is in both, so it is subtracted once.)
    pub fn requests(&self) -> u64 {
        let answered: u64 = ErrorClass::ALL
            .iter()
            .filter(|c| c.is_answered())
            .map(|&c| self.errors.of(c))
            .sum();
        self.responses + self.errors.total() - answered
    }

    /// Records how late a send was against its due time.
    pub fn lateness(&mut self, late: Duration) {
        if late > LATE_AFTER {
            self.late_sends += 1;
        }
        record(&mut self.send_lag, late);
        self.max_lateness = self.max_lateness.max(late);
    }
}

impl AddAssign<&Stats> for Stats {
    fn add_assign(&mut self, other: &Stats) {
        let _ = self.latency.add(&other.latency);
        let _ = self.uncorrected.add(&other.uncorrected);
        let _ = self.connect.add(&other.connect);
        let _ = self.waiting.add(&other.waiting);
        let _ = self.processing.add(&other.processing);
        self.responses += other.responses;
        self.errors.add(&other.errors);
        for &(code, n) in &other.status {
            match self.status.iter_mut().find(|(c, _)| *c == code) {
                Some((_, m)) => *m += n,
                None => self.status.push((code, n)),
            }
        }
        self.status.sort_unstable();
        self.bytes_read += other.bytes_read;
        self.bytes_written += other.bytes_written;
        self.body_bytes += other.body_bytes;
        self.connects += other.connects;
        self.late_sends += other.late_sends;
        let _ = self.send_lag.add(&other.send_lag);
        self.max_lateness = self.max_lateness.max(other.max_lateness);
        self.dropped += other.dropped;
        self.unfinished += other.unfinished;
        let (h, o) = (&mut self.h2, &other.h2);
        h.header_block_written += o.header_block_written;
        h.header_block_read += o.header_block_read;
        h.plain_header_written += o.plain_header_written;
        h.plain_header_read += o.plain_header_read;
        h.goaway_retried += o.goaway_retried;
        h.max_concurrent_streams = match (h.max_concurrent_streams, o.max_concurrent_streams) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        self.h3.add(&other.h3);
    }
}

/// What one thread (or, merged, the run) finished in one second of the
/// timeline; its second is its place in the timeline.
#[derive(Debug, Clone)]
pub struct Interval {
    pub latency: Histogram<u64>,
    pub responses: u64,
    pub errors: u64,
}

impl Default for Interval {
    fn default() -> Self {
        Interval {
            latency: latency_histogram(),
            responses: 0,
            errors: 0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn timing(ms: u64) -> Timing {
        Timing {
            connect: Duration::ZERO,
            waiting: Duration::from_millis(ms / 2),
            processing: Duration::from_millis(ms),
            corrected: None,
        }
    }

    #[test]
    fn merging_adds_everything() {
        let mut a = Stats::default();
        a.response(200, 92, timing(2));
        a.errors.record(ErrorClass::Reset);
        let mut b = Stats::default();
        b.response(200, 92, timing(4));
        b.response(404, 10, timing(1));
        b.errors.record(ErrorClass::Status);
        a += &b;
        assert_eq!(a.responses, 3);
        assert_eq!(a.status, vec![(200, 2), (404, 1)]);
        assert_eq!(a.body_bytes, 194);
        assert_eq!(a.errors.of(ErrorClass::Reset), 1);
        assert_eq!(a.errors.total(), 2);
        assert_eq!(a.requests(), 4, "the 404 is one request, not two");
        assert_eq!(a.latency.len(), 3);
        assert_eq!(a.latency.max(), a.latency.highest_equivalent(4_000_000));
    }

    #[test]
    fn every_class_has_its_own_slot_and_name() {
        // `errors` is indexed by discriminant: ALL must list the classes
        // in declaration order, each once, each with a distinct name.
        for (i, class) in ErrorClass::ALL.into_iter().enumerate() {
            assert_eq!(class.index(), i, "{class:?}");
        }
        let mut names: Vec<&str> = ErrorClass::ALL.iter().map(|c| c.as_str()).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), ErrorClass::ALL.len());
        assert_eq!(ErrorClass::Tls.as_str(), "tls_handshake");
    }

    #[test]
    fn open_model_latency_counts_from_the_due_time() {
        let mut s = Stats::default();
        let mut t = timing(2);
        t.corrected = Some(Duration::from_millis(50));
        s.response(200, 0, t);
        assert_eq!(s.latency.max(), s.latency.highest_equivalent(50_000_000));
        assert_eq!(
            s.uncorrected.max(),
            s.uncorrected.highest_equivalent(2_000_000)
        );
        s.lateness(Duration::from_micros(10));
        s.lateness(Duration::from_millis(30));
        assert_eq!(s.late_sends, 1);
        assert_eq!(s.max_lateness, Duration::from_millis(30));
        // Every send's lag is kept, as a distribution.
        assert_eq!(s.send_lag.len(), 2);
        assert_eq!(
            dyno_stats::hdr::value_at_percentile(&s.send_lag, 50.0),
            s.send_lag.highest_equivalent(10_000)
        );
        let mut merged = Stats::default();
        merged += &s;
        assert_eq!(merged.send_lag.len(), 2);
    }
}
