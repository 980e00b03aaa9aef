//! What makes an HTTP run's figures less trustworthy, judged from the
//! settings before the run ([`preflight`], [`missing_content_type`]) and
//! from the outcome after it ([`judge`]).
//!
//! Each warning is an [`HttpWarning`] with a stable code ([`dyno_model::Judgement`])
//! and a message for people (its `Display`); the binary turns them into
//! the run's [`dyno_model::Warning`]s. Nothing here prints.

use std::fmt;
use std::time::Duration;

use dyno_load::silence::{Lost, target_lost_words};
use dyno_model::Environment;

use crate::engine::{GIVE_UP_AFTER_REFUSALS, GIVE_UP_AFTER_SILENT_TIMEOUTS_PER_SLOT};
use crate::request::Scheme;
use crate::{ErrorClass, Outcome, Settings, StatusSet};

/// One warning about an HTTP run.
#[derive(Debug, Clone, PartialEq)]
pub enum HttpWarning {
    /// `--insecure` against an `https://` URL: the certificate was not
    /// verified.
    TlsInsecure,
    /// More connections than `net.core.somaxconn`.
    ListenBacklog { connections: usize, backlog: u32 },
    /// A body without a Content-Type header.
    NoContentType,
    /// The worker threads were busy at least 90% of the time.
    ClientSaturated {
        cpu_percent: f64,
        threads: usize,
        /// Over HTTP/3: what QUIC asked of the client.
        quic: Option<QuicLoad>,
    },
    /// The first connection attempts were all refused.
    ConnectionRefused { endpoint: String },
    /// The server accepted connections and answered nothing.
    NoAnswer { endpoint: String, timeouts: u64 },
    /// An interrupt stopped the run early.
    Interrupted,
    /// Open model: under 99% of the asked rate was achieved; `per`: what
    /// the rates count (`req/s`, or a scenario's `flows/s`).
    RateNotReached {
        achieved: f64,
        requested: f64,
        per: &'static str,
    },
    /// Open model: requests (or a scenario's flows, `flows`) fell due and
    /// were never sent.
    DroppedSends { dropped: u64, flows: bool },
    /// Responses with a status outside `--expect-status`: the codes and
    /// how many of each.
    UnexpectedStatus {
        unexpected: Vec<(u16, u64)>,
        responses: u64,
        expected: StatusSet,
    },
    /// TLS handshakes failed; `first` is the first failure's words.
    TlsHandshakeFailed {
        failed: u64,
        first: Option<String>,
        insecure: bool,
    },
    /// `--h2`: HTTP/2 connections or requests failed.
    H2HandshakeFailed { failed: u64, first: String },
    /// Requests failed for an HTTP/3 or QUIC protocol error, with how the
    /// first malformed answer broke the rules.
    H3ProtocolErrors { failed: u64, first: String },
    /// No request was answered.
    NoResponses,
    /// A scenario's answers failed their checks, or its extractions found
    /// nothing: `(flow/step, checks failed, extractions failed, the
    /// variables the step extracts)`, the steps with most first.
    ScenarioFailures {
        steps: Vec<(String, u64, u64, Vec<String>)>,
    },
    /// More requests failed than `--max-error-rate` allows.
    ErrorRateExceeded { percent: f64, max: f64 },
    /// Keep-alive was asked, and the server closed the connection after
    /// most answers (it answers `Connection: close`, or drops idle ones
    /// at once): a connection per request was measured. Over HTTP/2
    /// (`streams` per connection), the server ended each connection with
    /// GOAWAY after a few answers: after two streams' worth at most.
    ServerClosesConnections {
        opened: u64,
        responses: u64,
        streams: Option<usize>,
    },
    /// The target answered nothing for a spell while requests failed or
    /// waited: the server went away (or hung) during the run.
    TargetLost {
        lost: Vec<Lost>,
        /// The measured run's length.
        length: Duration,
        /// The failures' classes, most first, with their counts.
        failures: Vec<(ErrorClass, u64)>,
    },
    /// `--replay --methods` with methods that may change the target's data.
    ReplayUnsafeMethods { methods: Vec<String> },
    /// `--replay`: lines of the log that could not be read or sent.
    ReplayBadLines { bad: u64, first: Option<String> },
    /// `--replay`: requests whose method has a body went without one.
    ReplayWithoutBody { requests: u64 },
    /// `--replay`: the target answered a status far more (or less) often
    /// than the log says the logged system did: `(status, the log's share,
    /// the target's share)`, in percent.
    ReplayStatusMix { differs: Vec<(u16, f64, f64)> },
}

/// A status whose share of the answers differs from the log's by more
/// than this many percentage points is named (with at least
/// [`STATUS_MIX_MIN`] answers of it on one side).
pub const STATUS_MIX_POINTS: f64 = 5.0;
const STATUS_MIX_MIN: u64 = 10;

impl dyno_model::Judgement for HttpWarning {
    /// The stable, machine-readable code.
    fn code(&self) -> &'static str {
        match self {
            HttpWarning::TlsInsecure => "tls_insecure",
            HttpWarning::ListenBacklog { .. } => "listen_backlog",
            HttpWarning::NoContentType => "no_content_type",
            HttpWarning::ClientSaturated { .. } => "client_saturated",
            HttpWarning::ConnectionRefused { .. } => "connection_refused",
            HttpWarning::NoAnswer { .. } => "no_answer",
            HttpWarning::Interrupted => "interrupted",
            HttpWarning::ReplayUnsafeMethods { .. } => "replay_unsafe_methods",
            HttpWarning::ReplayBadLines { .. } => "replay_bad_lines",
            HttpWarning::ReplayWithoutBody { .. } => "replay_without_body",
            HttpWarning::ReplayStatusMix { .. } => "replay_status_mix",
            HttpWarning::RateNotReached { .. } => "rate_not_reached",
            HttpWarning::DroppedSends { .. } => "dropped_sends",
            HttpWarning::UnexpectedStatus { .. } => "unexpected_status",
            HttpWarning::TlsHandshakeFailed { .. } => "tls_handshake_failed",
            HttpWarning::H2HandshakeFailed { .. } => "h2_handshake_failed",
            HttpWarning::H3ProtocolErrors { .. } => "h3_protocol_errors",
            HttpWarning::NoResponses => "no_responses",
            HttpWarning::TargetLost { .. } => "target_lost",
            HttpWarning::ScenarioFailures { .. } => "checks_failed",
            HttpWarning::ErrorRateExceeded { .. } => "error_rate_exceeded",
            HttpWarning::ServerClosesConnections { .. } => "server_closes_connections",
        }
    }
}

/// What QUIC asked of a saturated client: its connections, and the UDP
/// datagrams each receive call brought (1.0: no GRO batching, a system
/// call per datagram).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct QuicLoad {
    pub connections: usize,
    pub datagrams_per_receive: Option<f64>,
}

impl fmt::Display for HttpWarning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HttpWarning::TlsInsecure => f.write_str(
                "--insecure: the server's certificate was not verified, so nothing shows this was the intended server; drop --insecure once it has a trusted certificate",
            ),
            HttpWarning::ListenBacklog {
                connections,
                backlog,
            } => write!(
                f,
                "{connections} connections exceed net.core.somaxconn ({backlog}): a local server may drop connection attempts; raise it with sysctl -w net.core.somaxconn={connections}",
            ),
            // curl -d would add application/x-www-form-urlencoded; a guess is
            // wrong for the JSON most load tests send, so dyno sends none and says so.
            HttpWarning::NoContentType => f.write_str(
                "the body was sent without a Content-Type header: many servers answer such requests with 415 or parse them as something else; add one, e.g. -H 'Content-Type: application/json'",
            ),
            HttpWarning::ClientSaturated {
                cpu_percent: cpu,
                threads,
                quic: None,
            } => write!(
                f,
                "dyno used {cpu:.0}% of its {threads} worker thread{}: the client may be the bottleneck, so the figures are a lower bound for the server; add threads or a second client machine",
                if *threads == 1 { "" } else { "s" }
            ),
            HttpWarning::ClientSaturated {
                cpu_percent: cpu,
                threads,
                quic: Some(quic),
            } => {
                write!(
                    f,
                    "dyno used {cpu:.0}% of its {threads} worker thread{}: the client may be the bottleneck, so the figures are a lower bound for the server. Over HTTP/3 the client does in user space what the kernel does for TCP: it encrypts each packet and",
                    if *threads == 1 { "" } else { "s" }
                )?;
                match quic.datagrams_per_receive {
                    Some(per) if per < 1.5 => write!(
                        f,
                        " makes a system call for each datagram it receives ({per:.1} a call: the server's datagrams come unbatched, so GRO cannot join them)"
                    )?,
                    Some(per) => write!(f, " receives {per:.1} datagrams a system call (GRO)")?,
                    None => f.write_str(" moves each batch of datagrams with a system call")?,
                }
                if quic.connections > *threads {
                    write!(
                        f,
                        "; a QUIC connection is one thread's work, so add threads (-t up to -c {}), or a second client machine",
                        quic.connections
                    )
                } else {
                    write!(
                        f,
                        "; a QUIC connection is one thread's work, so add connections and threads together (-c and -t), or a second client machine"
                    )
                }
            }
            HttpWarning::ConnectionRefused { endpoint } => write!(
                f,
                "the first {GIVE_UP_AFTER_REFUSALS} connection attempts were all refused and none succeeded: nothing listens at {endpoint}, so the run was stopped",
            ),
            HttpWarning::NoAnswer { endpoint, timeouts } => write!(
                f,
                "the server at {endpoint} accepted connections but answered none of the first {timeouts} requests within the timeout ({GIVE_UP_AFTER_SILENT_TIMEOUTS_PER_SLOT} timeouts a connection, stream or pipelined request, none ever answered), so the run was stopped",
            ),
            HttpWarning::Interrupted => f.write_str(
                "the run was stopped early by an interrupt (Ctrl-C, SIGTERM or SIGHUP); figures cover the part that ran",
            ),
            HttpWarning::ReplayUnsafeMethods { methods } => write!(
                f,
                "--methods replays {} requests, which may change the target's data: replay against a copy, never production",
                methods.join(", ")
            ),
            HttpWarning::ReplayBadLines { bad, first } => write!(
                f,
                "{bad} lines of the log could not be read or sent and were not replayed{}",
                first
                    .as_ref()
                    .map_or(String::new(), |first| format!("; the first: {first}"))
            ),
            HttpWarning::ReplayWithoutBody { requests } => write!(
                f,
                "{requests} requests whose method carries a body were sent without one: the log keeps no bodies (HAR and JSON lines with a body field do), so the target may answer them differently than it did"
            ),
            HttpWarning::ReplayStatusMix { differs } => {
                let parts: Vec<String> = differs
                    .iter()
                    .map(|(code, log, target)| {
                        format!("{code}: {target:.1}% of answers, {log:.1}% in the log")
                    })
                    .collect();
                write!(
                    f,
                    "the target's statuses differ from the log's ({}): it may not be the system that was logged, or not in the same state (data, configuration)",
                    parts.join("; ")
                )
            }
            HttpWarning::RateNotReached {
                achieved,
                requested: rate,
                per,
            } => write!(
                f,
                "achieved {achieved:.prec$} {per} of the {rate} requested: the server (or the client) could not keep up; latency counts from the due times",
                prec = if *achieved < 10.0 { 2 } else { 0 }
            ),
            HttpWarning::DroppedSends { dropped, flows } => dropped_sends(f, *dropped, *flows),
            HttpWarning::UnexpectedStatus {
                unexpected,
                responses,
                expected,
            } => unexpected_status(f, unexpected, *responses, expected),
            HttpWarning::TlsHandshakeFailed {
                failed,
                first,
                insecure,
            } => tls_handshake_failed(f, *failed, first.as_deref(), *insecure),
            HttpWarning::H2HandshakeFailed { failed, first } => write!(
                f,
                "{failed} HTTP/2 connections or requests failed; the first handshake that failed: {first}"
            ),
            HttpWarning::H3ProtocolErrors { failed, first } => write!(
                f,
                "{failed} HTTP/3 requests failed for a protocol error; the first malformed answer: {first}"
            ),
            HttpWarning::NoResponses => {
                f.write_str("no request was answered: is the server up and the URL right?")
            }
            HttpWarning::ScenarioFailures { steps } => scenario_failures(f, steps),
            HttpWarning::ErrorRateExceeded { percent, max } => write!(
                f,
                "{percent:.2}% of requests failed, above --max-error-rate {max}%: the run failed its check"
            ),
            HttpWarning::ServerClosesConnections {
                opened,
                responses,
                streams,
            } => server_closes_connections(f, *opened, *responses, *streams),
            HttpWarning::TargetLost {
                lost,
                length,
                failures,
            } => target_lost(f, lost, *length, failures),
        }
    }
}

/// [`HttpWarning::DroppedSends`] in words: requests, or a scenario's
/// flows (`flows`).
fn dropped_sends(f: &mut fmt::Formatter<'_>, dropped: u64, flows: bool) -> fmt::Result {
    if flows {
        write!(
            f,
            "{dropped} flows fell due but could not start before the end: every virtual user was busy in a flow; raise -c",
        )
    } else {
        write!(
            f,
            "{dropped} requests fell due but could not be sent before the end: all connections were busy; raise -c",
        )
    }
}

/// [`HttpWarning::UnexpectedStatus`] in words: wrk's "Non-2xx or 3xx
/// responses", as a warning that says what to do.
fn unexpected_status(
    f: &mut fmt::Formatter<'_>,
    unexpected: &[(u16, u64)],
    responses: u64,
    expected: &StatusSet,
) -> fmt::Result {
    let n: u64 = unexpected.iter().map(|&(_, n)| n).sum();
    let share = 100.0 * n as f64 / responses.max(1) as f64;
    let codes: Vec<String> = unexpected.iter().map(|(c, _)| c.to_string()).collect();
    write!(
        f,
        "{n} of {responses} responses ({share:.1}%) had a status outside {expected} (got {}): they count as failed requests; if the server is meant to answer so, say so with --expect-status {expected},{}",
        codes.join(", "),
        codes.join(","),
    )
}

/// [`HttpWarning::TlsHandshakeFailed`] in words, with what to try.
fn tls_handshake_failed(
    f: &mut fmt::Formatter<'_>,
    failed: u64,
    first: Option<&str>,
    insecure: bool,
) -> fmt::Result {
    let why = first.map_or(String::new(), |e| format!(" (first: {e})"));
    let hint = tls_hint(first.unwrap_or(""), insecure);
    write!(f, "{failed} TLS handshakes failed{why}: {hint}")
}

/// [`HttpWarning::ScenarioFailures`] in words: the totals, then each step's
/// failed checks and the variables its extractions did not find.
fn scenario_failures(
    f: &mut fmt::Formatter<'_>,
    steps: &[(String, u64, u64, Vec<String>)],
) -> fmt::Result {
    let (checks, extractions) = steps.iter().fold((0, 0), |(c, e), s| (c + s.1, e + s.2));
    let each: Vec<String> = steps
        .iter()
        .map(|(step, c, e, vars)| {
            let mut parts = Vec::new();
            if *c > 0 {
                parts.push(format!("{c} check{}", if *c == 1 { "" } else { "s" }));
            }
            if *e > 0 {
                let vars: Vec<String> = vars.iter().map(|v| format!("`{v}`")).collect();
                parts.push(format!(
                    "{} found nothing {e} time{}",
                    vars.join(" or "),
                    if *e == 1 { "" } else { "s" },
                ));
            }
            format!("{step}: {}", parts.join(", "))
        })
        .collect();
    write!(
        f,
        "{checks} answer{} failed their checks and {extractions} extraction{} found nothing ({}): the flows that met them failed; see the Step table",
        if checks == 1 { "" } else { "s" },
        if extractions == 1 { "" } else { "s" },
        each.join("; ")
    )
}

/// [`HttpWarning::ServerClosesConnections`] in words: over HTTP/1.1
/// (`streams` is `None`) a connection per request, over HTTP/2 a GOAWAY
/// after a few streams.
fn server_closes_connections(
    f: &mut fmt::Formatter<'_>,
    opened: u64,
    responses: u64,
    streams: Option<usize>,
) -> fmt::Result {
    match streams {
        None => write!(
            f,
            "the server closed the connection after most answers ({opened} connections opened for {responses} answers, keep-alive asked): each request paid for a new connection, so these are figures of a connection per request (the server answers `Connection: close`, as gunicorn's sync workers do, or its keep-alive is off)"
        ),
        Some(streams) => write!(
            f,
            "the server ended each connection (GOAWAY) after a few answers ({opened} connections opened for {responses} answers, {streams} streams each): connection setup is in these figures; a server's limit of requests per connection does this (nginx's keepalive_requests), raise it to measure the requests alone"
        ),
    }
}

/// [`HttpWarning::TargetLost`] in words: the spells of silence, and the
/// failures that came with them.
fn target_lost(
    f: &mut fmt::Formatter<'_>,
    lost: &[Lost],
    length: Duration,
    failures: &[(ErrorClass, u64)],
) -> fmt::Result {
    let failures = failures
        .iter()
        .map(|(class, n)| format!("{} {n}", class.as_str().replace('_', " ")))
        .collect::<Vec<_>>();
    let why = if failures.is_empty() {
        "requests went unanswered".to_owned()
    } else {
        format!("requests failed ({})", failures.join(", "))
    };
    f.write_str(&target_lost_words(lost, length, &why))
}

/// Warnings known before the run: limits that would cap it, and settings
/// that make it less trustworthy. (The machine's own, from
/// `dyno_env::preflight`, come first; [`crate::record()`] adds both.)
pub fn preflight(env: &Environment, settings: &Settings) -> Vec<HttpWarning> {
    let mut warnings = Vec::new();
    if settings.tls.insecure && settings.target.scheme == Scheme::Https {
        warnings.push(HttpWarning::TlsInsecure);
    }
    if let Some(replay) = &settings.replay {
        let methods: Vec<String> = replay
            .methods
            .iter()
            .filter(|m| !crate::replay::SAFE_METHODS.contains(&m.as_str()) && *m != "OPTIONS")
            .cloned()
            .collect();
        if !methods.is_empty() {
            warnings.push(HttpWarning::ReplayUnsafeMethods { methods });
        }
    }
    if let Some(backlog) = env.network.somaxconn
        && settings.connections as u64 > u64::from(backlog)
    {
        warnings.push(HttpWarning::ListenBacklog {
            connections: settings.connections,
            backlog,
        });
    }
    warnings
}

/// A body sent without a Content-Type header among `headers` (as given
/// with -H).
pub fn missing_content_type(body: bool, headers: &[(String, String)]) -> Option<HttpWarning> {
    (body
        && !headers
            .iter()
            .any(|(name, _)| name.eq_ignore_ascii_case("content-type")))
    .then_some(HttpWarning::NoContentType)
}

/// `--max-error-rate` broken: the run's exit says so, and its record too.
pub fn error_rate(outcome: &Outcome, max_percent: f64) -> Option<HttpWarning> {
    let requests = outcome.stats.requests().max(1);
    let percent = 100.0 * outcome.stats.errors.total() as f64 / requests as f64;
    (percent > max_percent).then_some(HttpWarning::ErrorRateExceeded {
        percent,
        max: max_percent,
    })
}

/// Warnings only the results can tell.
pub fn judge(outcome: &Outcome, settings: &Settings) -> Vec<HttpWarning> {
    let mut warnings = Vec::new();
    let cpu = outcome.client_cpu_percent(settings.threads);
    if dyno_load::judge::client_saturated(cpu, outcome.wall) {
        let h3 = &outcome.stats.h3;
        warnings.push(HttpWarning::ClientSaturated {
            cpu_percent: cpu,
            threads: settings.threads,
            quic: settings.http3.then(|| QuicLoad {
                connections: settings.connections,
                datagrams_per_receive: (h3.receive_calls > 0)
                    .then(|| h3.datagrams_received as f64 / h3.receive_calls as f64),
            }),
        });
    }
    if outcome.refused {
        warnings.push(HttpWarning::ConnectionRefused {
            endpoint: outcome.endpoint.to_string(),
        });
    }
    if outcome.silent {
        warnings.push(HttpWarning::NoAnswer {
            endpoint: outcome.endpoint.to_string(),
            timeouts: outcome.stats.errors.of(ErrorClass::ReadTimeout),
        });
    }
    if outcome.interrupted {
        warnings.push(HttpWarning::Interrupted);
    }
    if let (Some(scenario), Some(figures)) = (&settings.scenario, &outcome.scenario) {
        let mut steps: Vec<(String, u64, u64, Vec<String>)> = scenario
            .steps()
            .filter_map(|(flow, step)| {
                let stats = figures.steps.get(step.index?)?;
                let checks = stats.errors.of(ErrorClass::Check);
                let extractions = stats.errors.of(ErrorClass::Extract);
                let vars = step
                    .extract
                    .iter()
                    .map(|e| scenario.variables[e.slot].clone())
                    .collect();
                (checks + extractions > 0).then(|| {
                    (
                        format!("{}/{}", flow.name, step.name),
                        checks,
                        extractions,
                        vars,
                    )
                })
            })
            .collect();
        if !steps.is_empty() {
            steps.sort_by_key(|s| std::cmp::Reverse(s.1 + s.2));
            warnings.push(HttpWarning::ScenarioFailures { steps });
        }
    }
    if !outcome.lost.is_empty() {
        let mut failures: Vec<(ErrorClass, u64)> = ErrorClass::ALL
            .into_iter()
            .filter(|c| c.unanswered())
            .map(|c| (c, outcome.stats.errors.of(c)))
            .filter(|&(_, n)| n > 0)
            .collect();
        failures.sort_by_key(|&(_, n)| std::cmp::Reverse(n));
        failures.truncate(3);
        warnings.push(HttpWarning::TargetLost {
            lost: outcome.lost.clone(),
            length: outcome.elapsed,
            failures,
        });
    }
    if let Some(rate) = settings.schedule.rate_per_sec {
        // A segment is asked for its share of the rate.
        let rate = rate / f64::from(settings.segment.count);
        // Like with like: a scenario's rate is of flows, each of which
        // ends (completed or failed) once.
        let (achieved, per) = match outcome.flows_per_sec() {
            Some(flows) => (flows, "flows/s"),
            None => (outcome.requests_per_sec(), "req/s"),
        };
        if dyno_load::judge::rate_not_reached(achieved, rate) {
            warnings.push(HttpWarning::RateNotReached {
                achieved,
                requested: rate,
                per,
            });
        }
        if outcome.stats.dropped > 0 {
            warnings.push(HttpWarning::DroppedSends {
                dropped: outcome.stats.dropped,
                flows: outcome.scenario.is_some(),
            });
        }
    }
    if let Some(replayed) = &outcome.replay {
        warnings.extend(replay_warnings(outcome, &replayed.log));
    }
    let unexpected: Vec<(u16, u64)> = outcome
        .stats
        .status
        .iter()
        .copied()
        .filter(|&(code, _)| !settings.expect_status.contains(code))
        .collect();
    if !unexpected.is_empty() {
        warnings.push(HttpWarning::UnexpectedStatus {
            unexpected,
            responses: outcome.stats.responses,
            expected: settings.expect_status,
        });
    }
    let handshakes = outcome.stats.errors.of(ErrorClass::Tls);
    if handshakes > 0 {
        warnings.push(HttpWarning::TlsHandshakeFailed {
            failed: handshakes,
            first: outcome.tls_failure.clone(),
            insecure: settings.tls.insecure,
        });
    }
    let h2_failures = outcome.stats.errors.of(ErrorClass::H2Protocol);
    if let Some(why) = &outcome.protocol_failure
        && h2_failures > 0
    {
        warnings.push(HttpWarning::H2HandshakeFailed {
            failed: h2_failures,
            first: why.clone(),
        });
    }
    let h3_failures = outcome.stats.errors.of(ErrorClass::H3Protocol);
    if let Some(first) = &outcome.malformed
        && h3_failures > 0
    {
        warnings.push(HttpWarning::H3ProtocolErrors {
            failed: h3_failures,
            first: first.clone(),
        });
    }
    if outcome.stats.responses == 0 {
        warnings.push(HttpWarning::NoResponses);
    }
    if let Some(closes) = server_closes(outcome, settings) {
        warnings.push(closes);
    }
    warnings
}

/// Whether the server, asked to keep connections alive, closed one after
/// most answers: at least one connection opened again per two answers
/// (over HTTP/2, per two answers on each stream), over enough answers to
/// tell (a pool of connections that each served many requests opens
/// few beyond its first).
fn server_closes(outcome: &Outcome, settings: &Settings) -> Option<HttpWarning> {
    let (opened, responses) = (outcome.stats.connects, outcome.stats.responses);
    let again = opened.saturating_sub(settings.connections as u64);
    let (asked, streams) = if settings.http2 {
        (true, Some(settings.streams.max(1)))
    } else {
        (settings.keep_alive, None)
    };
    let per_connection = 2 * streams.unwrap_or(1) as u64;
    (asked && responses >= 50 && again.saturating_mul(per_connection) >= responses).then_some(
        HttpWarning::ServerClosesConnections {
            opened,
            responses,
            streams,
        },
    )
}

/// What to try after a failed TLS handshake, from the first failure's
/// words (rustls' and tokio-rustls' messages): a certificate problem, or a
/// server that does not speak TLS at all — a plain-HTTP server closes the
/// connection on a ClientHello ("tls handshake eof") or answers in plain
/// text ("corrupt message", "InvalidContentType").
pub(crate) fn tls_hint(failure: &str, insecure: bool) -> &'static str {
    let lower = failure.to_ascii_lowercase();
    let not_tls = [
        "eof",
        "corrupt message",
        "invalidcontenttype",
        "invalid content type",
    ]
    .iter()
    .any(|w| lower.contains(w));
    if not_tls {
        "the server may not speak TLS on this port (a plain-HTTP server closes or answers in plain text): try the URL with http://"
    } else if insecure {
        "does the server speak TLS on this port, with a protocol version and cipher dyno offers (TLS 1.2 or 1.3)?"
    } else if lower.contains("certificate") || lower.contains("cert") {
        "is the certificate trusted (Mozilla's roots) and issued for this host? For a self-signed test server add --insecure"
    } else {
        "is the certificate trusted (Mozilla's roots) and issued for this host, and does the server speak TLS 1.2 or 1.3 on this port? For a self-signed test server add --insecure"
    }
}

/// What a replay's log and answers say about the replay itself.
fn replay_warnings(outcome: &Outcome, log: &crate::replay::Summary) -> Vec<HttpWarning> {
    let mut warnings = Vec::new();
    if outcome.stats.dropped > 0 {
        warnings.push(HttpWarning::DroppedSends {
            dropped: outcome.stats.dropped,
            flows: false,
        });
    }
    if log.bad > 0 {
        warnings.push(HttpWarning::ReplayBadLines {
            bad: log.bad,
            first: log.quoted.first().cloned(),
        });
    }
    if log.without_body > 0 {
        warnings.push(HttpWarning::ReplayWithoutBody {
            requests: log.without_body,
        });
    }
    let logged: u64 = log.statuses.values().sum();
    let answered = outcome.stats.responses;
    if logged > 0 && answered > 0 {
        let target = |code: u16| {
            outcome
                .stats
                .status
                .iter()
                .find(|&&(c, _)| c == code)
                .map_or(0, |&(_, n)| n)
        };
        let mut codes: Vec<u16> = log.statuses.keys().copied().collect();
        codes.extend(outcome.stats.status.iter().map(|&(c, _)| c));
        codes.sort_unstable();
        codes.dedup();
        let differs: Vec<(u16, f64, f64)> = codes
            .into_iter()
            .filter_map(|code| {
                let (in_log, at_target) =
                    (log.statuses.get(&code).copied().unwrap_or(0), target(code));
                let log_share = in_log as f64 * 100.0 / logged as f64;
                let target_share = at_target as f64 * 100.0 / answered as f64;
                ((log_share - target_share).abs() > STATUS_MIX_POINTS
                    && in_log.max(at_target) >= STATUS_MIX_MIN)
                    .then_some((code, log_share, target_share))
            })
            .collect();
        if !differs.is_empty() {
            warnings.push(HttpWarning::ReplayStatusMix { differs });
        }
    }
    warnings
}

#[cfg(test)]
mod tests {
    use dyno_model::Judgement as _;
    use std::time::{Duration, SystemTime};

    use super::*;
    use crate::{Endpoint, Segment, Stats};

    /// `dyno quick`'s HTTP settings for `url`, on 4 connections and 2
    /// threads for one second without warm-up.
    fn settings(url: &str) -> Settings {
        let mut s = crate::quick::settings(url, Duration::from_secs(1), 2).unwrap();
        s.connections = 4;
        s.schedule.warmup = Duration::ZERO;
        s
    }

    /// A run of one second that answered 1000 requests with 200 and kept
    /// its threads 10% busy: nothing to say about it.
    fn outcome() -> Outcome {
        Outcome {
            lost: Vec::new(),
            stages: Vec::new(),
            stats: Stats {
                responses: 1000,
                status: vec![(200, 1000)],
                ..Stats::default()
            },
            timeline: Vec::new(),
            elapsed: Duration::from_secs(1),
            wall: Duration::from_secs(1),
            cpu: Duration::from_millis(200),
            cpu_wait: Duration::ZERO,
            interrupted: false,
            refused: false,
            silent: false,
            scenario: None,
            replay: None,
            endpoint: Endpoint::Tcp("127.0.0.1:8080".parse().unwrap(), None),
            tls_failure: None,
            tls_session: None,
            started_at: SystemTime::UNIX_EPOCH,
            server: None,
            protocol_failure: None,
            malformed: None,
        }
    }

    fn codes(warnings: &[HttpWarning]) -> Vec<&'static str> {
        warnings.iter().map(HttpWarning::code).collect()
    }

    #[test]
    fn a_clean_run_has_no_warnings() {
        assert_eq!(
            judge(&outcome(), &settings("http://127.0.0.1:8080/")),
            vec![]
        );
    }

    #[test]
    fn busy_client_threads_are_a_saturated_client() {
        let mut o = outcome();
        o.cpu = Duration::from_millis(1900);
        let warnings = judge(&o, &settings("http://127.0.0.1:8080/"));
        assert_eq!(codes(&warnings), ["client_saturated"]);
        let w = dyno_model::Warning::from(warnings[0].clone());
        assert_eq!(w.code, "client_saturated");
        assert_eq!(
            w.message,
            "dyno used 95% of its 2 worker threads: the client may be the bottleneck, so the figures are a lower bound for the server; add threads or a second client machine"
        );
    }

    #[test]
    fn a_saturated_http3_client_names_what_quic_costs_and_the_fix() {
        let mut o = outcome();
        o.cpu = Duration::from_millis(1900);
        o.stats.h3.datagrams_received = 5000;
        o.stats.h3.receive_calls = 5000;
        let mut s = settings("https://127.0.0.1:8443/");
        s.http3 = true;
        let message =
            |o: &Outcome, s: &Settings| dyno_model::Warning::from(judge(o, s)[0].clone()).message;
        let m = message(&o, &s);
        assert!(
            m.starts_with("dyno used 95% of its 2 worker threads")
                && m.contains("a system call for each datagram it receives (1.0 a call")
                && m.contains("add threads (-t up to -c 4)"),
            "{m}"
        );
        // GRO at work, and as many threads as connections: the fix is
        // more of both.
        o.stats.h3.receive_calls = 1000;
        s.connections = 2;
        let m = message(&o, &s);
        assert!(
            m.contains("receives 5.0 datagrams a system call (GRO)")
                && m.contains("add connections and threads together"),
            "{m}"
        );
    }

    #[test]
    fn an_open_model_rate_under_99_percent_is_not_reached() {
        let mut s = settings("http://127.0.0.1:8080/");
        s.schedule.rate_per_sec = Some(1005.0);
        assert_eq!(codes(&judge(&outcome(), &s)), Vec::<&str>::new());
        s.schedule.rate_per_sec = Some(2000.0);
        let mut o = outcome();
        o.stats.dropped = 3;
        let warnings = judge(&o, &s);
        assert_eq!(codes(&warnings), ["rate_not_reached", "dropped_sends"]);
        assert!(
            warnings[0]
                .to_string()
                .starts_with("achieved 1000 req/s of the 2000 requested:")
        );
        // A segment is asked for its share of the rate.
        s.segment = Segment { index: 0, count: 2 };
        o.stats.dropped = 0;
        assert_eq!(codes(&judge(&o, &s)), Vec::<&str>::new());
    }

    #[test]
    fn statuses_outside_the_expected_set_are_named() {
        let mut o = outcome();
        o.stats.status = vec![(200, 980), (503, 20)];
        let warnings = judge(&o, &settings("http://127.0.0.1:8080/"));
        assert_eq!(codes(&warnings), ["unexpected_status"]);
        assert_eq!(
            warnings[0].to_string(),
            "20 of 1000 responses (2.0%) had a status outside 200-399 (got 503): they count as failed requests; if the server is meant to answer so, say so with --expect-status 200-399,503"
        );
    }

    #[test]
    fn stopped_runs_say_why() {
        let mut o = outcome();
        o.stats = Stats::default();
        o.refused = true;
        o.interrupted = true;
        let warnings = judge(&o, &settings("http://127.0.0.1:8080/"));
        assert_eq!(
            codes(&warnings),
            ["connection_refused", "interrupted", "no_responses"]
        );
        assert!(
            warnings[0]
                .to_string()
                .contains("nothing listens at 127.0.0.1:8080")
        );
    }

    #[test]
    fn failed_handshakes_carry_a_hint() {
        let mut o = outcome();
        o.stats.errors.set(ErrorClass::Tls, 4);
        o.tls_failure = Some("tls handshake eof".into());
        let warnings = judge(&o, &settings("https://127.0.0.1:8080/"));
        assert_eq!(codes(&warnings), ["tls_handshake_failed"]);
        assert!(warnings[0].to_string().starts_with(
            "4 TLS handshakes failed (first: tls handshake eof): the server may not speak TLS"
        ));
    }

    #[test]
    fn tls_hints_follow_the_failure() {
        let plain = tls_hint("tls handshake eof", false);
        assert!(plain.contains("http://") && !plain.contains("--insecure"));
        assert!(
            tls_hint("received corrupt message of type InvalidContentType", true)
                .contains("http://")
        );
        let cert = tls_hint("invalid peer certificate: UnknownIssuer", false);
        assert!(cert.contains("--insecure") && !cert.contains("http://"));
        assert!(tls_hint("peer is incompatible", true).contains("TLS 1.2 or 1.3"));
    }

    #[test]
    fn preflight_sees_insecure_tls_and_a_short_backlog() {
        let mut env = Environment::default();
        let mut s = settings("https://127.0.0.1:8080/");
        assert_eq!(preflight(&env, &s), vec![]);
        s.tls.insecure = true;
        env.network.somaxconn = Some(2);
        let warnings = preflight(&env, &s);
        assert_eq!(codes(&warnings), ["tls_insecure", "listen_backlog"]);
        assert_eq!(
            warnings[1].to_string(),
            "4 connections exceed net.core.somaxconn (2): a local server may drop connection attempts; raise it with sysctl -w net.core.somaxconn=4"
        );
        // --insecure means nothing to http://.
        let mut plain = settings("http://127.0.0.1:8080/");
        plain.tls.insecure = true;
        env.network.somaxconn = Some(4);
        assert_eq!(preflight(&env, &plain), vec![]);
    }

    #[test]
    fn a_body_needs_a_content_type() {
        let json = vec![("content-TYPE".to_owned(), "application/json".to_owned())];
        assert_eq!(
            missing_content_type(true, &[]).map(|w| w.code()),
            Some("no_content_type")
        );
        assert_eq!(missing_content_type(true, &json), None);
        assert_eq!(missing_content_type(false, &[]), None);
    }
}
