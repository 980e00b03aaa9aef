//! Turns settings and an [`Outcome`] into the [`Run`] of `dyno http`: its
//! description, its settings record ([`HttpRecord`], with what was observed
//! of the server), its metrics, its warnings and its headline.
//!
//! What the run was asked for beyond the engine's [`Settings`] (the URL as
//! given, the URL file, the built-in server, the error threshold, the
//! headers and body as given) comes in as [`Asked`]. The binary adds what
//! only it knows afterwards: the wall-clock start and length of the whole
//! command, and a segment's place in its group.

use std::path::PathBuf;

use dyno_model::record::{self, HttpObserved, HttpRecord, LoadModel};
use dyno_model::{Environment, Kind, Run};

use crate::engine::Outcome;
use crate::request::Scheme;
use crate::settings::{Settings, Stop};
use crate::warnings;

/// What an HTTP run was asked for that the engine's [`Settings`] do not
/// hold.
#[derive(Debug, Clone, Default)]
pub struct Asked {
    /// The URL as given, or the built-in server's; with a URL file, its
    /// first URL.
    pub url: String,
    /// The URL file the URLs were read from (`--url-file`).
    pub url_file: Option<PathBuf>,
    /// Whether the target is dyno's built-in server.
    pub builtin_server: bool,
    /// The whole run's connections (`-c`): a segment runs a share of them,
    /// and is described as the whole run it is part of.
    pub connections: u32,
    /// `--max-error-rate`, in percent.
    pub max_error_rate_percent: f64,
    /// The request headers as given with `-H`.
    pub headers: Vec<(String, String)>,
    /// The request body's length in bytes, if a body was given (an empty
    /// body is still a body).
    pub body_bytes: Option<u64>,
}

/// The Run of an HTTP measurement: `settings` ran, `outcome` is what they
/// measured, on the machine `environment` describes.
///
/// Its warnings come in this order: the machine's
/// ([`dyno_env::preflight`]), the settings' ([`warnings::preflight`],
/// [`warnings::missing_content_type`]), then the results'
/// ([`warnings::judge`]). Its headline is `requests_per_sec`.
pub fn record(
    settings: &Settings,
    outcome: &Outcome,
    environment: Environment,
    asked: &Asked,
) -> Run {
    let mut run = Run::new(Kind::Http, description(settings, asked));
    run.warnings.extend(dyno_env::preflight(&environment));
    run.warnings.extend(
        warnings::preflight(&environment, settings)
            .into_iter()
            .chain(warnings::missing_content_type(
                asked.body_bytes.is_some(),
                &asked.headers,
            ))
            .map(Into::into),
    );
    run.environment = environment;
    run.set_record(&http_record(settings, outcome, asked));
    run.metrics = outcome.metrics(settings);
    run.headline = Some(dyno_model::names::http::REQUESTS_PER_SEC.into());
    run.warnings.extend(
        warnings::judge(outcome, settings)
            .into_iter()
            .chain(warnings::error_rate(outcome, asked.max_error_rate_percent))
            .map(dyno_model::Warning::from),
    );
    run
}

/// The settings record: what was asked ([`asked_record`]), and what was
/// observed of the server.
fn http_record(settings: &Settings, outcome: &Outcome, asked: &Asked) -> HttpRecord {
    HttpRecord {
        observed: HttpObserved {
            // What the server agreed to, as ab shows it: part of what was
            // measured (TLS 1.2 and 1.3, or two ciphers, cost differently).
            tls_session: outcome
                .tls_session
                .as_ref()
                .map(|session| record::TlsSession {
                    protocol: session.protocol.clone(),
                    cipher: session.cipher.clone(),
                    key_exchange: session.key_exchange.clone(),
                    alpn: session.alpn.clone(),
                }),
            // The server's own name for itself (ab's "Server Software").
            server_software: outcome.server.clone(),
        },
        rate_plan: settings
            .schedule
            .plan
            .as_ref()
            .map(|plan| dyno_load::stages::record(plan, &outcome.stages)),
        replay: settings.replay.as_ref().map(|r| {
            let mut record = replay_record(r);
            if let Some(replayed) = &outcome.replay {
                let log = &replayed.log;
                record.format = log.format.clone();
                record.lines = log.lines;
                record.requests = log.requests;
                record.bad_lines = log.bad;
                record.bad_quoted = log.quoted.clone();
                record.skipped_methods = log.skipped_methods.clone();
                record.outside_window = log.outside_window;
                record.other_segments = log.other_segments;
                record.without_body = log.without_body;
                record.log_statuses = log.statuses.clone();
                record.log_per_second = log.per_second.clone();
                record.log_span_s = log.span_s;
                record.passes = log.passes;
                record.cut = log.cut;
                record.endpoints = log.endpoints.clone();
            }
            record
        }),
        ..asked_record(settings, asked)
    }
}

/// The replay record of a run merged from its segments' `parts`, exact:
/// every segment reads the whole log and sends every N-th request, so
/// what each sent (requests, statuses, bodiless ones, the log's seconds)
/// adds up, a bad line is counted by one segment (the one its line falls
/// to), and what every segment sees alike (lines, left out by method or
/// window, templates) is the same in each (the most of them, should one
/// have been cut short). `None` without parts.
pub fn merged_replay(parts: &[record::ReplayRecord]) -> Option<record::ReplayRecord> {
    let first = parts.first()?;
    let sum = |f: fn(&record::ReplayRecord) -> u64| parts.iter().map(f).sum::<u64>();
    let most = |f: fn(&record::ReplayRecord) -> u64| parts.iter().map(f).max().unwrap_or(0);
    let requests = sum(|p| p.requests);
    let mut merged = record::ReplayRecord {
        lines: most(|p| p.lines),
        requests,
        bad_lines: sum(|p| p.bad_lines),
        outside_window: most(|p| p.outside_window),
        // Those of segments that are missing from the merge.
        other_segments: most(|p| p.requests + p.other_segments).saturating_sub(requests),
        without_body: sum(|p| p.without_body),
        log_span_s: parts.iter().map(|p| p.log_span_s).fold(0.0, f64::max),
        passes: parts.iter().map(|p| p.passes).max().unwrap_or(0),
        cut: parts.iter().any(|p| p.cut),
        ..first.clone()
    };
    merged.skipped_methods.clear();
    merged.log_statuses.clear();
    merged.log_per_second.clear();
    merged.endpoints.clear();
    let mut quoted: Vec<&String> = Vec::new();
    for p in parts {
        for (method, &n) in &p.skipped_methods {
            let kept = merged.skipped_methods.entry(method.clone()).or_default();
            *kept = (*kept).max(n);
        }
        for (&status, &n) in &p.log_statuses {
            *merged.log_statuses.entry(status).or_default() += n;
        }
        // The same timetable in every segment: second i is second i.
        if merged.log_per_second.len() < p.log_per_second.len() {
            merged.log_per_second.resize(p.log_per_second.len(), 0);
        }
        for (all, n) in merged.log_per_second.iter_mut().zip(&p.log_per_second) {
            *all += n;
        }
        for name in &p.endpoints {
            if name != crate::replay::OTHER_ENDPOINT && !merged.endpoints.contains(name) {
                merged.endpoints.push(name.clone());
            }
        }
        quoted.extend(&p.bad_quoted);
    }
    if parts.iter().any(|p| {
        p.endpoints
            .iter()
            .any(|n| n == crate::replay::OTHER_ENDPOINT)
    }) {
        merged
            .endpoints
            .push(crate::replay::OTHER_ENDPOINT.to_owned());
    }
    // Each segment quotes its first few bad lines: the whole log's first
    // few are among them.
    quoted.sort_by_key(|q| quoted_line(q));
    merged.bad_quoted = quoted
        .into_iter()
        .take(crate::replay::QUOTED_BAD_LINES)
        .cloned()
        .collect();
    Some(merged)
}

/// The line number a quoted bad line starts with ("line 12: …", "line 12
/// is …"); the end for one without.
fn quoted_line(quoted: &str) -> u64 {
    quoted
        .strip_prefix("line ")
        .and_then(|rest| {
            let digits = rest
                .find(|c: char| !c.is_ascii_digit())
                .unwrap_or(rest.len());
            rest[..digits].parse().ok()
        })
        .unwrap_or(u64::MAX)
}

/// What `--replay` asked, before the log is read.
fn replay_record(r: &crate::replay::Replay) -> record::ReplayRecord {
    record::ReplayRecord {
        file: r.path.display().to_string(),
        format: r.format.as_ref().map_or("", |f| f.name()).to_owned(),
        speed: r.speed,
        spread: match r.spread {
            crate::replay::Spread::Even => "even",
            crate::replay::Spread::Poisson { .. } => "poisson",
        }
        .to_owned(),
        window_from_s: r.window.from_s,
        window_to_s: r.window.to_s,
        looped: r.looped,
        methods: r.methods.clone(),
        scrub: r.scrub.clone(),
        ..record::ReplayRecord::default()
    }
}

/// The settings record of what the run was asked, before it runs: nothing
/// observed of the server, a rate plan's stages without figures. A
/// segment publishes it at the start barrier (less what differs per
/// segment), so that every segment of a group runs the same run.
pub fn asked_record(settings: &Settings, asked: &Asked) -> HttpRecord {
    let (requests, duration_ns) = match settings.schedule.stop {
        Stop::Requests(n) => (Some(n), None),
        Stop::Duration(d) => (None, Some(d.as_nanos() as u64)),
        Stop::LogEnds => (None, None),
    };
    HttpRecord {
        url: asked.url.clone(),
        urls: settings.requests.len() as u64,
        url_file: asked.url_file.as_ref().map(|p| p.display().to_string()),
        unix_socket: settings
            .unix_socket
            .as_ref()
            .map(|p| p.display().to_string()),
        builtin_server: asked.builtin_server,
        method: method(settings).to_owned(),
        model: if settings.open_model() {
            LoadModel::Open
        } else {
            LoadModel::Closed
        },
        requests,
        duration_ns,
        rate_per_sec: settings.schedule.rate_per_sec,
        warmup_ns: settings.schedule.warmup.as_nanos() as u64,
        connections: settings.connections as u64,
        threads: settings.threads as u64,
        pipeline: settings.pipeline as u64,
        http2: settings.http2,
        http3: settings.http3,
        zero_rtt: settings.zero_rtt,
        streams: settings.streams as u64,
        alpn: settings.alpn.clone(),
        keep_alive: settings.keep_alive,
        tls: settings.target.scheme == Scheme::Https,
        insecure: settings.tls.insecure,
        timeout_ns: settings.timeout.as_nanos() as u64,
        connect_timeout_ns: settings.connect_timeout.as_nanos() as u64,
        expect_status: settings.expect_status.to_string(),
        max_error_rate_percent: asked.max_error_rate_percent,
        seed: settings.seed,
        headers: asked.headers.len() as u64,
        body_bytes: asked.body_bytes.unwrap_or(0),
        observed: HttpObserved::default(),
        segment: None,
        group: None,
        capacity: None,
        rate_plan: settings
            .schedule
            .plan
            .as_ref()
            .map(|plan| dyno_load::stages::record(plan, &[])),
        scenario: settings
            .scenario
            .as_deref()
            .map(|s| record::ScenarioRecord {
                file: s.path.display().to_string(),
                flows: s
                    .flows
                    .iter()
                    .map(|f| record::FlowRecord {
                        name: f.name.clone(),
                        weight: f.weight,
                        steps: f
                            .steps
                            .iter()
                            .map(|st| record::StepRecord {
                                name: st.name.clone(),
                                method: st.method.clone(),
                                url: st.url.clone(),
                            })
                            .collect(),
                    })
                    .collect(),
                setup_steps: s.setup.len() as u64,
                cookies: s.cookies,
                data: s.data.as_ref().map(|d| d.path.display().to_string()),
            }),
        replay: settings.replay.as_ref().map(replay_record),
    }
}

/// The method the run's record names: the request's, or `SCENARIO` for
/// a scenario's many.
pub(crate) fn method(settings: &Settings) -> &str {
    match settings.requests.first() {
        _ if settings.replay.is_some() => "REPLAY",
        Some(r) if settings.scenario.is_none() => r.method(),
        _ => "SCENARIO",
    }
}

/// `METHOD URL MODEL`: the URL as given (with a URL file: its first URL,
/// how many more it holds and the file's name), the model as `c=N` (the
/// whole run's connections) or `R req/s`.
fn description(settings: &Settings, asked: &Asked) -> String {
    let per = if settings.scenario.is_some() {
        "flows"
    } else {
        "req"
    };
    if let Some(r) = &settings.replay {
        return format!("{} ×{}", subject(settings, asked), r.speed);
    }
    let model = match settings.schedule.rate_per_sec {
        // A plan's mean rate (857.142857…) reads as 857.1.
        Some(r) if r.fract() == 0.0 => format!("{r} {per}/s"),
        Some(r) => format!("{r:.prec$} {per}/s", prec = if r >= 100.0 { 1 } else { 3 }),
        None => format!("c={}", asked.connections),
    };
    format!("{} {model}", subject(settings, asked))
}

/// What a run loads, in its description: `GET URL` (with `--url-file`,
/// how many more), or `scenario FILE at TARGET`.
pub(crate) fn subject(settings: &Settings, asked: &Asked) -> String {
    if let Some(s) = &settings.scenario {
        let name = s.path.file_name().map_or_else(
            || s.path.display().to_string(),
            |n| n.to_string_lossy().into_owned(),
        );
        return format!("scenario {name} at {}", s.target);
    }
    if let Some(r) = &settings.replay {
        let name = r.path.file_name().map_or_else(
            || r.path.display().to_string(),
            |n| n.to_string_lossy().into_owned(),
        );
        return format!("replay {name} at {}", settings.target);
    }
    let url = match &asked.url_file {
        Some(path) => {
            let name = path.file_name().map_or_else(
                || path.display().to_string(),
                |n| n.to_string_lossy().into_owned(),
            );
            match settings.requests.len().saturating_sub(1) {
                0 => format!("{} (from {name})", asked.url),
                more => format!("{} +{more} more (from {name})", asked.url),
            }
        }
        None => asked.url.clone(),
    };
    let method = settings.requests[0].method();
    format!("{method} {url}")
}
