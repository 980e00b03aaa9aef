//! dyno against a real web app: httpbin (Flask) under gunicorn's sync
//! workers, which answer `Connection: close`, compress on request and echo
//! what they were sent. The app itself says what dyno sent.

use dyno_testutil::httpbin::Httpbin;

use crate::common::warning_codes as codes;
use crate::common::*;

/// A flow as a browser would make it: a gzip answer checked decoded, a
/// cookie set and then cleared by an `Expires` in the past (as Express's
/// clearCookie does), and a POST without a body that still says
/// `Content-Length: 0`; what the app saw is read from its access log
/// (real-clients 8, 9, 15).
#[test]
fn a_flow_against_httpbin_is_read_and_sent_as_a_browser_would() {
    let (home, dir) = (temp(), temp());
    let app = Httpbin::start(2);
    let file = dir.path().join("flow.toml");
    std::fs::write(
        &file,
        format!(
            r#"base = "{base}"
cookies = true
[[flow]]
name = "f"
[[flow.step]]
name = "gzip"
url = "/gzip"
headers = ["Accept-Encoding: gzip"]
check = {{ status = 200, contains = '"gzipped":true' }}
[[flow.step]]
name = "set"
url = "/cookies/set?a=1&b=2"
check = {{ status = 302 }}
[[flow.step]]
name = "clear"
url = "/response-headers?Set-Cookie=b%3D%3B%20Expires%3DThu,%2001%20Jan%201970%2000:00:00%20GMT%3B%20Path%3D/"
[[flow.step]]
name = "jar"
url = "/cookies"
extract = [{{ regex = '"cookies":(\{{[^}}]*\}})', as = "jar" }}]
[[flow.step]]
name = "show"
url = "/anything/jar?${{jar}}"
[[flow.step]]
name = "post"
method = "POST"
url = "/post"
check = {{ status = 200, contains = '"Content-Length":"0"' }}
"#,
            base = app.base
        ),
    )
    .unwrap();
    let (run, stderr) = json_run(
        home.path(),
        &[
            "http",
            "--scenario",
            &file.display().to_string(),
            "-n",
            "3",
            "-c",
            "1",
            "--no-save",
        ],
        0,
    );
    assert_eq!(metric(&run, "errors"), Some(0.0), "{stderr}");
    assert!(!codes(&run).contains(&"checks_failed"), "{stderr}");
    // The jar the app saw after the clearing step: a, without b.
    let shown: Vec<String> = app
        .logged()
        .into_iter()
        .filter(|l| l.contains("/anything/jar?"))
        .collect();
    assert_eq!(shown.len(), 3, "{shown:?}");
    for line in &shown {
        assert!(
            line.contains("%22a%22") && !line.contains("%22b%22"),
            "{line}"
        );
    }
}

/// gunicorn's sync workers close the connection after every answer:
/// the run says it measured a connection per request; the same run
/// against a server that keeps connections says nothing (real-clients 18).
#[test]
fn a_server_that_closes_every_connection_is_named() {
    let home = temp();
    let app = Httpbin::start(2);
    let (run, stderr) = json_run(
        home.path(),
        &[
            "http",
            &format!("{}/get", app.base),
            "-n",
            "200",
            "-c",
            "2",
            "--no-save",
        ],
        0,
    );
    assert!(
        codes(&run).contains(&"server_closes_connections"),
        "{stderr}"
    );
    let opened = metric(&run, "connections_opened").unwrap();
    assert!(opened >= 190.0, "{opened} connections for 200 requests");
    let (_server, base) = crate::http::reference_server();
    let (run, _) = json_run(
        home.path(),
        &[
            "http",
            &format!("{base}/hello"),
            "-n",
            "200",
            "-c",
            "2",
            "--no-save",
        ],
        0,
    );
    assert!(!codes(&run).contains(&"server_closes_connections"));
}
