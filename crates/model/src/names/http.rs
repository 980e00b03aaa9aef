//! The names of the metrics a `http` run writes.
//!
//! Its latency (corrected, and uncorrected in the open model), measured
//! window, client CPU, target-lost time, per-second p99 and rate plan's
//! stages are [`super::common`]'s. Counts of error classes and status
//! codes are prefix-built ([`ERRORS_PREFIX`], [`STATUS_PREFIX`]) and
//! written only when non-zero; a scenario's figures carry the labels
//! [`super::label::FLOW`] and [`super::label::STEP`].

/// Answers per second over the measured window: the run's headline.
pub const REQUESTS_PER_SEC: &str = "requests_per_sec";
/// The bytes read per second over the measured window: the same answers
/// counted in bytes.
pub const TRANSFER_BYTES_PER_SEC: &str = "transfer_bytes_per_sec";
/// ApacheBench's split of the latency: each request's connection set-up
/// (0 when it reused one).
pub const CONNECT: &str = "connect_ns";
/// ApacheBench's split of the latency: from sending to the first byte of
/// the answer.
pub const WAITING: &str = "waiting_ns";
/// ApacheBench's split of the latency: from sending to the last byte of
/// the answer.
pub const PROCESSING: &str = "processing_ns";

/// Requests that ended: answered or failed.
pub const REQUESTS: &str = "requests";
/// Requests answered.
pub const RESPONSES: &str = "responses";
/// Requests failed, every class together (by class: [`ERRORS_PREFIX`]).
pub const ERRORS: &str = "errors";
/// Connections opened.
pub const CONNECTIONS_OPENED: &str = "connections_opened";
/// Requests written but not answered when the run reached its end (or was
/// interrupted): cut, not waited for.
pub const UNFINISHED_REQUESTS: &str = "unfinished_requests";
/// Bytes read from the server.
pub const BYTES_READ: &str = "bytes_read";
/// Bytes written to the server.
pub const BYTES_WRITTEN: &str = "bytes_written";
/// Body bytes of the completed answers (ab's "HTML transferred").
pub const BODY_BYTES: &str = "body_bytes";

/// Open model: the rate asked for (`--rate`) of this segment, in requests
/// (or a scenario's flows) per second.
pub const REQUESTED_RATE_PER_SEC: &str = "requested_rate_per_sec";
/// Open model: requests sent more than 1 ms after their due time.
pub const LATE_SENDS: &str = "late_sends";
/// Open model: from each request's due time to its send, the client's own
/// share of the corrected latency.
pub const SEND_LAG: &str = "send_lag_ns";
/// Open model: the latest a request was sent after its due time.
pub const MAX_LATENESS: &str = "max_lateness_ns";
/// Open model: requests (or flows) that fell due and were never sent.
pub const DROPPED_SENDS: &str = "dropped_sends";

/// HTTP/2: the received header blocks' bytes on the wire (HPACK-coded).
pub const H2_HEADER_BYTES_WIRE: &str = "h2_header_bytes_wire";
/// HTTP/2: the received header blocks' bytes decoded.
pub const H2_HEADER_BYTES_PLAIN: &str = "h2_header_bytes_plain";
/// HTTP/2: the sent header blocks' bytes on the wire.
pub const H2_REQUEST_HEADER_BYTES_WIRE: &str = "h2_request_header_bytes_wire";
/// HTTP/2: the sent header blocks' bytes before coding.
pub const H2_REQUEST_HEADER_BYTES_PLAIN: &str = "h2_request_header_bytes_plain";
/// HTTP/2: the share of the received header bytes HPACK saved, recomputed
/// by a merge from [`H2_HEADER_BYTES_WIRE`] and [`H2_HEADER_BYTES_PLAIN`].
pub const H2_HEADER_SAVINGS_PERCENT: &str = "h2_header_savings_percent";
/// HTTP/2: requests refused unprocessed by a GOAWAY and sent again on a
/// new connection (not errors).
pub const H2_GOAWAY_RETRIED: &str = "h2_goaway_retried";
/// HTTP/2: the concurrent streams the server allows (the fewest, merged).
pub const H2_SERVER_MAX_CONCURRENT_STREAMS: &str = "h2_server_max_concurrent_streams";

/// HTTP/3: QUIC handshakes completed in the measured part, and the
/// longest and the summed handshake times (the mean is the sum over the
/// count; a merge recomputes nothing from it).
pub const H3_HANDSHAKES: &str = "h3_handshakes";
pub const H3_HANDSHAKE_NS_SUM: &str = "h3_handshake_ns_sum";
pub const H3_HANDSHAKE_NS_MAX: &str = "h3_handshake_ns_max";
/// HTTP/3: UDP datagrams sent and received, and the system calls that
/// moved them (fewer calls than datagrams: GSO and GRO at work).
pub const H3_DATAGRAMS_SENT: &str = "h3_datagrams_sent";
pub const H3_DATAGRAMS_RECEIVED: &str = "h3_datagrams_received";
pub const H3_SEND_CALLS: &str = "h3_send_calls";
pub const H3_RECEIVE_CALLS: &str = "h3_receive_calls";
/// HTTP/3: QUIC packets the client sent, and those it declared lost
/// (their frames went again in new packets) with their bytes.
pub const H3_PACKETS_SENT: &str = "h3_packets_sent";
pub const H3_PACKETS_LOST: &str = "h3_packets_lost";
pub const H3_BYTES_LOST: &str = "h3_bytes_lost";
/// HTTP/3: congestion events (the congestion window cut).
pub const H3_CONGESTION_EVENTS: &str = "h3_congestion_events";
/// HTTP/3: the smoothed path round trip the connections ended with, the
/// least and the most.
pub const H3_RTT_MIN_NS: &str = "h3_rtt_min_ns";
pub const H3_RTT_MAX_NS: &str = "h3_rtt_max_ns";
/// HTTP/3: STREAMS_BLOCKED frames the client sent (a request waited for
/// the server's stream limit).
pub const H3_STREAM_LIMIT_STALLS: &str = "h3_stream_limit_stalls";
/// HTTP/3: requests the server refused unprocessed (GOAWAY,
/// H3_REQUEST_REJECTED) and sent again on a new connection (not errors).
pub const H3_GOAWAY_RETRIED: &str = "h3_goaway_retried";
/// HTTP/3 with `--0rtt`: handshakes whose early data the server took
/// (0-RTT), and those whose early data it rejected (their requests went
/// again after the handshake).
pub const H3_HANDSHAKES_0RTT: &str = "h3_handshakes_0rtt";
pub const H3_EARLY_DATA_REJECTED: &str = "h3_early_data_rejected";
/// HTTP/3: the received field sections' bytes on the wire (QPACK-coded,
/// static table only: dyno gives the server no dynamic table).
pub const H3_HEADER_BYTES_WIRE: &str = "h3_header_bytes_wire";
/// HTTP/3: the received field sections' bytes decoded.
pub const H3_HEADER_BYTES_PLAIN: &str = "h3_header_bytes_plain";
/// HTTP/3: the sent field sections' bytes on the wire.
pub const H3_REQUEST_HEADER_BYTES_WIRE: &str = "h3_request_header_bytes_wire";
/// HTTP/3: the sent field sections' bytes before coding.
pub const H3_REQUEST_HEADER_BYTES_PLAIN: &str = "h3_request_header_bytes_plain";
/// HTTP/3: the share of the received header bytes QPACK saved,
/// recomputed by a merge from [`H3_HEADER_BYTES_WIRE`] and
/// [`H3_HEADER_BYTES_PLAIN`].
pub const H3_QPACK_SAVINGS_PERCENT: &str = "h3_qpack_savings_percent";

/// Failed requests of one class: this prefix and the class
/// ([`class`]), `errors_reset`.
pub const ERRORS_PREFIX: &str = "errors_";
/// Answers with one status code: this prefix and the code, `status_200`.
pub const STATUS_PREFIX: &str = "status_";

/// Each second's answers per second, as samples (`dyno_load::timeline`).
pub const TIMELINE_REQUESTS_PER_SEC: &str = "timeline_requests_per_sec";

/// A scenario step's answers per second.
pub const STEP_REQUESTS_PER_SEC: &str = "step_requests_per_sec";
/// A scenario step's latency.
pub const STEP_LATENCY: &str = "step_latency_ns";
/// A scenario step's answers.
pub const STEP_RESPONSES: &str = "step_responses";
/// A scenario step's failed requests.
pub const STEP_ERRORS: &str = "step_errors";
/// A scenario step's failed requests of one class (label
/// [`super::label::CLASS`]).
pub const STEP_ERRORS_BY_CLASS: &str = "step_errors_by_class";
/// A scenario step's requests cut at the run's end.
pub const STEP_UNFINISHED: &str = "step_unfinished";
/// A scenario step's bytes of answer bodies.
pub const STEP_BODY_BYTES: &str = "step_body_bytes";
/// `--replay`: a path template's answers per second (label
/// [`super::label::ENDPOINT`]).
pub const ENDPOINT_REQUESTS_PER_SEC: &str = "endpoint_requests_per_sec";
/// `--replay`: a path template's latency.
pub const ENDPOINT_LATENCY: &str = "endpoint_latency_ns";
/// `--replay`: a path template's answers.
pub const ENDPOINT_RESPONSES: &str = "endpoint_responses";
/// `--replay`: a path template's failed requests.
pub const ENDPOINT_ERRORS: &str = "endpoint_errors";
/// `--replay`: a path template's failed requests of one class (label
/// [`super::label::CLASS`]).
pub const ENDPOINT_ERRORS_BY_CLASS: &str = "endpoint_errors_by_class";
/// `--replay`: a path template's requests cut at the run's end.
pub const ENDPOINT_UNFINISHED: &str = "endpoint_unfinished";
/// `--replay`: a path template's bytes of answer bodies.
pub const ENDPOINT_BODY_BYTES: &str = "endpoint_body_bytes";
/// `--replay`: the log's own answers with one status code, for the
/// requests replayed: this prefix and the code, `log_status_404`, beside
/// the run's [`STATUS_PREFIX`] counts.
pub const LOG_STATUS_PREFIX: &str = "log_status_";
/// `--replay`: requests the log held that were sent.
pub const REPLAY_REQUESTS: &str = "replay_requests";
/// `--replay`: lines that could not be read as requests or sent.
pub const REPLAY_BAD_LINES: &str = "replay_bad_lines";
/// `--replay`: requests whose method has a body, sent without one.
pub const REPLAY_WITHOUT_BODY: &str = "replay_without_body";
/// `--replay`: the log's busiest second, at the replay's pace.
pub const REPLAY_LOG_PEAK_RATE: &str = "replay_log_peak_requests_per_sec";
/// A scenario flow's completed flows per second.
pub const FLOWS_PER_SEC: &str = "flows_per_sec";
/// A scenario flow's time from its start to its last answer.
pub const FLOW_DURATION: &str = "flow_duration_ns";
/// A scenario flow's flows that completed.
pub const FLOWS_COMPLETED: &str = "flows_completed";
/// A scenario flow's flows that failed.
pub const FLOWS_FAILED: &str = "flows_failed";
/// A scenario flow's flows started and not ended when the run did.
pub const FLOWS_UNFINISHED: &str = "flows_unfinished";

/// The error classes a failed request counts under: the rest of an
/// [`ERRORS_PREFIX`] name, and the [`super::label::CLASS`] of a
/// [`STEP_ERRORS_BY_CLASS`].
pub mod class {
    /// What every class of a failed connection attempt starts with.
    pub const CONNECT_PREFIX: &str = "connect_";
    /// The connection was refused.
    pub const CONNECT_REFUSED: &str = "connect_refused";
    /// Connecting took longer than its timeout.
    pub const CONNECT_TIMEOUT: &str = "connect_timeout";
    /// Connecting failed for a reason no other class names.
    pub const CONNECT_OTHER: &str = "connect_other";
    /// No socket could be opened: out of file descriptors.
    pub const CONNECT_TOO_MANY_OPEN_FILES: &str = "connect_too_many_open_files";
    /// Nothing at the Unix socket's path, or it is not a socket.
    pub const CONNECT_NO_SUCH_SOCKET: &str = "connect_no_such_socket";
    /// No local port or address was free.
    pub const CONNECT_NO_LOCAL_PORT: &str = "connect_no_local_port";
    /// No route to the network or host.
    pub const CONNECT_UNREACHABLE: &str = "connect_unreachable";
    /// Connecting was not allowed (socket permissions or a firewall).
    pub const CONNECT_PERMISSION_DENIED: &str = "connect_permission_denied";
    /// The TLS handshake failed.
    pub const TLS_HANDSHAKE: &str = "tls_handshake";
    /// No answer within the timeout.
    pub const READ_TIMEOUT: &str = "read_timeout";
    /// The peer reset the connection.
    pub const RESET: &str = "reset";
    /// The server closed the connection before the answer ended.
    pub const CLOSED_EARLY: &str = "closed_early";
    /// An answer that could not be parsed.
    pub const MALFORMED_RESPONSE: &str = "malformed_response";
    /// A body shorter than its Content-Length.
    pub const BODY_LENGTH_MISMATCH: &str = "body_length_mismatch";
    /// An answer with a status outside `--expect-status`.
    pub const STATUS: &str = "status";
    /// Writing the request failed.
    pub const WRITE: &str = "write";
    /// HTTP/2: the server's GOAWAY left the request unanswered.
    pub const H2_GOAWAY: &str = "h2_goaway";
    /// HTTP/2: the server reset the stream.
    pub const H2_RST_STREAM: &str = "h2_rst_stream";
    /// HTTP/2: the server broke the protocol.
    pub const H2_PROTOCOL_ERROR: &str = "h2_protocol_error";
    /// HTTP/3: the server's GOAWAY left the request unanswered.
    pub const H3_GOAWAY: &str = "h3_goaway";
    /// HTTP/3: the server reset the request's stream (RESET_STREAM or
    /// STOP_SENDING).
    pub const H3_STREAM_RESET: &str = "h3_stream_reset";
    /// HTTP/3 or QUIC: the server broke the protocol, or the connection
    /// could not be set up as HTTP/3.
    pub const H3_PROTOCOL_ERROR: &str = "h3_protocol_error";
    /// A scenario step's answer failed its checks.
    pub const CHECK_FAILED: &str = "check_failed";
    /// A scenario step's extraction found nothing.
    pub const EXTRACT_FAILED: &str = "extract_failed";
    /// A scenario step's request could not be made from an extracted value.
    pub const VALUE_UNSENDABLE: &str = "value_unsendable";
}
