//! [`dyno_http::record`]: the engine's run against a loopback server,
//! turned into a Run whose settings read back as an [`HttpRecord`] with
//! what was asked and what was observed of the server.

/// The fault tests' servers and settings; this binary uses a few.
#[allow(dead_code)]
mod common;

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use dyno_http::{Asked, Stop, TlsSettings};
use dyno_model::record::{HttpRecord, LoadModel};
use dyno_model::{Environment, Kind};

use dyno_testutil::tls::{After, TlsServer};

/// A small valid answer that names its server.
const ANSWER: &[u8] = b"HTTP/1.1 200 OK\r\nServer: record-test\r\nContent-Length: 5\r\n\r\nhello";

#[test]
fn an_https_run_records_its_settings_its_tls_session_and_its_server() {
    let server = TlsServer::start(ANSWER, After::KeepAlive);
    let url = format!("https://{}/tls", server.addr());
    let mut settings = common::settings(&url, Stop::Requests(40), 2, Duration::from_secs(5));
    settings.tls = TlsSettings { insecure: true };
    settings.seed = 7;
    let outcome =
        dyno_http::run(settings.clone(), Arc::new(AtomicBool::new(false)), |_| {}).expect("runs");
    assert_eq!(outcome.stats.responses, 40, "{:?}", outcome.stats.errors);
    let asked = Asked {
        url: url.clone(),
        url_file: None,
        builtin_server: false,
        // The whole run's -c: a segment of it runs 2 of these 4.
        connections: 4,
        max_error_rate_percent: 1.5,
        headers: vec![("X-Test".into(), "1".into())],
        body_bytes: None,
    };
    let env = Environment::default();

    let run = dyno_http::record(&settings, &outcome, env.clone(), &asked);

    assert_eq!(run.kind, Kind::Http);
    assert_eq!(run.environment, env);
    // Described as the whole run, recorded as what this process ran.
    assert_eq!(run.description, format!("GET {url} c=4"));
    let rec: HttpRecord = run.record().expect("an http record");
    assert_eq!(rec.url, url);
    assert_eq!(rec.urls, 1);
    assert_eq!(rec.url_file, None);
    assert!(!rec.builtin_server);
    assert_eq!(rec.method, "GET");
    assert_eq!(rec.model, LoadModel::Closed);
    assert_eq!(rec.requests, Some(40));
    assert_eq!(rec.duration_ns, None);
    assert_eq!(rec.connections, 2);
    assert_eq!(rec.threads, 1);
    assert!(rec.tls);
    assert!(rec.insecure);
    assert_eq!(rec.timeout_ns, 5_000_000_000);
    assert_eq!(rec.max_error_rate_percent, 1.5);
    assert_eq!(rec.seed, 7);
    assert_eq!(rec.headers, 1);
    assert_eq!(rec.body_bytes, 0);
    // What was observed of the server, as the outcome has it.
    let session = outcome.tls_session.as_ref().expect("a handshake completed");
    let observed = rec
        .observed
        .tls_session
        .expect("the TLS session is recorded");
    assert_eq!(observed.protocol, session.protocol);
    assert_eq!(observed.cipher, session.cipher);
    assert_eq!(observed.key_exchange, session.key_exchange);
    assert_eq!(observed.alpn, session.alpn);
    assert_eq!(rec.observed.server_software.as_deref(), Some("record-test"));
    // The metrics are the outcome's, and the headline names one of them.
    assert_eq!(run.metrics, outcome.metrics(&settings));
    let headline = run.headline_metric().expect("the headline is a metric");
    assert_eq!(headline.name, "requests_per_sec");
    // --insecure against https:// is judged before the run.
    let codes: Vec<&str> = run.warnings.iter().map(|w| w.code.as_str()).collect();
    assert!(codes.contains(&"tls_insecure"), "{codes:?}");
}

#[test]
fn a_url_file_run_is_described_by_its_first_url_and_its_file() {
    let server = common::ok();
    let base = format!("http://{}", server.addr());
    let (target, first) = dyno_http::request::parse_url(&format!("{base}/a")).expect("a URL");
    let mut settings = common::settings(
        &format!("{base}/a"),
        Stop::Requests(10),
        1,
        Duration::from_secs(5),
    );
    let spec = dyno_http::request::RequestSpec {
        path: "/b".into(),
        ..dyno_http::request::RequestSpec::default()
    };
    settings
        .requests
        .push(dyno_http::request::RequestTemplate::new(&target, &spec).expect("a request"));
    settings.schedule.rate_per_sec = Some(50.0);
    let outcome =
        dyno_http::run(settings.clone(), Arc::new(AtomicBool::new(false)), |_| {}).expect("runs");
    let asked = Asked {
        url: format!("{target}{first}"),
        url_file: Some(PathBuf::from("some/dir/urls.txt")),
        connections: 1,
        // A body without a Content-Type is judged before the run.
        body_bytes: Some(0),
        ..Asked::default()
    };

    let run = dyno_http::record(&settings, &outcome, Environment::default(), &asked);

    assert_eq!(
        run.description,
        format!("GET {base}/a +1 more (from urls.txt) 50 req/s")
    );
    let rec: HttpRecord = run.record().expect("an http record");
    assert_eq!(rec.url, format!("{base}/a"));
    assert_eq!(rec.urls, 2);
    assert_eq!(rec.url_file.as_deref(), Some("some/dir/urls.txt"));
    assert_eq!(rec.model, LoadModel::Open);
    assert_eq!(rec.rate_per_sec, Some(50.0));
    assert_eq!(rec.body_bytes, 0);
    assert_eq!(rec.observed.tls_session, None);
    let codes: Vec<&str> = run.warnings.iter().map(|w| w.code.as_str()).collect();
    assert!(codes.contains(&"no_content_type"), "{codes:?}");
}

#[test]
fn the_quick_line_loads_the_built_in_server_and_labels_its_metrics_part_http() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let server = dyno_serve::spawn(listener, 1).unwrap();
    let url = format!("http://{}/hello", server.local_addr());
    let settings = dyno_http::quick::settings(&url, Duration::from_millis(300), 1).unwrap();
    assert_eq!(settings.connections, dyno_http::quick::CONNECTIONS);
    let line = dyno_http::quick::measure(&settings, Arc::new(AtomicBool::new(false))).unwrap();
    assert_eq!(line.part.duration_ns, 300_000_000);
    assert_eq!(line.part.warmup_ns, 500_000_000);
    assert_eq!(line.part.connections, 16);
    assert_eq!(line.part.model, LoadModel::Closed);
    assert_eq!(line.part.expect_status, "200-399");
    let rate = line
        .metrics
        .iter()
        .find(|m| m.name == "requests_per_sec")
        .expect("a rate");
    assert!(rate.value > 0.0);
    // The engine's names and references, each labelled with the part.
    assert_eq!(rate.rate_of.as_deref(), Some("responses"));
    assert!(
        line.metrics.iter().all(|m| m.part() == Some("http")),
        "{:?}",
        line.metrics
    );
    assert!(line.metrics.iter().all(|m| !m.name.starts_with("http_")));
    // A URL that is not one is refused before anything runs.
    assert!(dyno_http::quick::settings("not a url", Duration::from_secs(1), 1).is_err());
}
