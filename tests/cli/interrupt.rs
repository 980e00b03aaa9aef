//! Interrupts (SIGINT, SIGTERM, SIGHUP) in the middle of a run.

use crate::common::*;

/// Ctrl-C in the middle of a capacity search: exit 130, the `interrupted`
/// warning, no capacity claimed (its steps kept as diagnostics), `history`
/// marks it, and `compare` refuses it as a capacity, saying why.
#[test]
fn an_interrupted_search_claims_no_capacity() {
    let home = temp();
    let server = dyno_serve::spawn(std::net::TcpListener::bind("127.0.0.1:0").unwrap(), 1).unwrap();
    let url = format!("http://{}/hello", server.local_addr());
    let run = interrupted_run(
        home.path(),
        &[
            "http",
            &url,
            "-c",
            "4",
            "-t",
            "1",
            "--find-max",
            "--slo",
            "p99<=1s",
            "--start",
            "50",
            "--step",
            "400ms",
            "--warmup",
            "100ms",
            "--json",
        ],
        Duration::from_millis(2500),
        libc::SIGINT,
    );
    let cap = &run["settings"]["capacity"];
    assert_eq!(cap["answer"]["outcome"], "interrupted", "{cap}");
    assert!(!cap["steps"].as_array().unwrap().is_empty(), "{cap}");
    assert_eq!(metric(&run, "max_sustainable_rate"), None);
    assert_eq!(run["headline"], Value::Null);
    let id = run["id"].as_str().unwrap().to_owned();
    let history = ok(home.path(), &["history"]);
    let line = history
        .lines()
        .find(|l| l.starts_with(&id))
        .unwrap_or_else(|| panic!("{history}"));
    assert!(line.contains("interrupted; no capacity claimed"), "{line}");
    // Another run to compare it with: refused, naming the search.
    let (other, _) = json_run(home.path(), &["http", &url, "-n", "50", "-c", "1"], 0);
    let refused = fails(
        home.path(),
        &["compare", &id, other["id"].as_str().unwrap()],
    );
    assert!(
        refused.contains("an interrupt stopped") && refused.contains("claims no capacity"),
        "{refused}"
    );
}

#[test]
fn http_sighup_prints_and_saves_the_partial_run() {
    let home = temp();
    let run = interrupted_run(
        home.path(),
        &["http", "-d", "60s", "-c", "2", "--json"],
        Duration::from_millis(1500),
        libc::SIGHUP,
    );
    assert!(metric(&run, "responses").unwrap() > 0.0);
    let saved = ok(home.path(), &["export", "--format", "jsonl"]);
    assert!(
        saved.contains(run["id"].as_str().unwrap()),
        "the partial run is saved"
    );
}
