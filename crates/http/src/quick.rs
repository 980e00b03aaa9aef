//! `dyno quick`'s HTTP line: dyno's own client against a server on
//! loopback (the binary starts its built-in one), closed model, keep-alive,
//! for a few seconds after half a second of warm-up.

use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use dyno_model::Warning;
use dyno_model::record::{LoadModel, QuickHttp, QuickLine};

use crate::engine::{self, EngineError};
use crate::request::{RequestSpec, RequestTemplate, parse_url};
use crate::settings::{Schedule, Segment, Settings, Stop, TlsSettings};
use crate::status::StatusSet;
use crate::warnings;

/// Connections of the HTTP line.
pub const CONNECTIONS: usize = 16;

/// Warm-up before the line's figures count.
const WARMUP: Duration = Duration::from_millis(500);

/// What the record says the line loaded.
const TARGET: &str = "built-in server, GET /hello, loopback";

/// The line's settings: GET `url` on `threads` threads for `duration`.
pub fn settings(url: &str, duration: Duration, threads: usize) -> Result<Settings, EngineError> {
    let invalid = |e: crate::request::RequestError| EngineError::Settings(e.to_string());
    let (target, path) = parse_url(url).map_err(invalid)?;
    let template = RequestTemplate::new(
        &target,
        &RequestSpec {
            path,
            ..RequestSpec::default()
        },
    )
    .map_err(invalid)?;
    Ok(Settings {
        target,
        requests: vec![template],
        schedule: Schedule {
            stop: Stop::Duration(duration),
            rate_per_sec: None,
            warmup: WARMUP,
            plan: None,
            grace: Duration::ZERO,
        },
        connections: CONNECTIONS,
        threads,
        pipeline: 1,
        http2: false,
        http3: false,
        zero_rtt: false,
        streams: 1,
        alpn: Vec::new(),
        keep_alive: true,
        timeout: Duration::from_secs(10),
        connect_timeout: Duration::from_secs(5),
        expect_status: StatusSet::default(),
        seed: 0,
        unix_socket: None,
        tls: TlsSettings::default(),
        source_addr: None,
        segment: Segment::WHOLE,
        scenario: None,
        replay: None,
    })
}

/// The line's part of quick's record, for `duration` (also when the line
/// is skipped: 0 s).
pub fn part(duration: Duration) -> QuickHttp {
    QuickHttp {
        target: TARGET.into(),
        duration_ns: duration.as_nanos() as u64,
        warmup_ns: WARMUP.as_nanos() as u64,
        connections: CONNECTIONS as u64,
        model: LoadModel::Closed,
        expect_status: StatusSet::default().to_string(),
    }
}

/// Measures the line ([`settings`]); `interrupted` ends it early.
pub fn measure(
    settings: &Settings,
    interrupted: Arc<AtomicBool>,
) -> Result<QuickLine<QuickHttp>, EngineError> {
    let outcome = engine::run(settings.clone(), interrupted, |_| {})?;
    let duration = match settings.schedule.stop {
        Stop::Duration(d) => d,
        Stop::Requests(_) | Stop::LogEnds => Duration::ZERO,
    };
    Ok(QuickLine {
        part: part(duration),
        metrics: outcome
            .metrics(settings)
            .into_iter()
            .map(|m| m.of_part(dyno_model::names::quick::HTTP))
            .collect(),
        warnings: warnings::judge(&outcome, settings)
            .into_iter()
            .map(Warning::from)
            .collect(),
    })
}
