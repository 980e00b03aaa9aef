//! `dyno serve`: the reference server through the real binary.

use crate::common::*;

#[test]
fn serve_answers_on_the_printed_address_and_stops_on_ctrl_c() {
    let (mut child, addr) = spawn_serve("127.0.0.1:0", 2);

    let (status, body) = get(&addr, "/hello");
    assert_eq!((status, body.len()), (200, 92));
    let (status, body) = get(&addr, "/blob/64k");
    assert_eq!((status, body.len()), (200, 65_536));
    assert_eq!(get(&addr, "/status/503").0, 503);
    assert_eq!(get(&addr, "/blob/1x").0, 400);

    // SAFETY: kill(2) with a valid pid of our own child.
    let rc = unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGINT) };
    assert_eq!(rc, 0);
    let deadline = Instant::now() + Duration::from_secs(20);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        assert!(
            Instant::now() < deadline,
            "dyno serve did not stop on SIGINT"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(status.success(), "{status:?}");
    assert!(
        TcpStream::connect(&addr).is_err(),
        "the port must be closed"
    );
}

#[test]
fn serve_tls_speaks_h2_and_http1_by_alpn() {
    let home = temp();
    let (mut child, addr) = spawn_serve_with("127.0.0.1:0", 1, &["--tls"], "https://");
    let url = format!("https://{addr}/hello");
    for (extra, alpn) in [(&["--h2", "-m", "4"][..], "h2"), (&[][..], "http/1.1")] {
        let mut args = vec![url.as_str(), "--insecure", "-c", "2", "-n", "400"];
        args.extend_from_slice(extra);
        let run = http_json(home.path(), &args);
        assert_eq!(metric(&run, "responses"), Some(400.0), "{alpn}");
        assert_eq!(metric(&run, "errors"), Some(0.0), "{alpn}");
        assert_eq!(run["settings"]["tls_session"]["alpn"], alpn);
    }
    child.kill().unwrap();
    child.wait().unwrap();
}

#[test]
fn serve_h3_answers_http3_on_the_printed_address_and_https_beside_it() {
    let home = temp();
    let mut child = StdCommand::new(assert_cmd::cargo::cargo_bin("dyno"))
        .args(["serve", "--h3", "--addr", "127.0.0.1:0", "--threads", "1"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut first = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut first)
        .unwrap();
    let addr = first
        .split("https://")
        .nth(1)
        .and_then(|rest| rest.split_whitespace().next())
        .unwrap_or_else(|| panic!("no address in {first:?}"))
        .to_owned();
    assert!(
        first.contains(&format!("HTTP/3 on udp {addr}")),
        "{first:?}"
    );

    let mut h3 = dyno_testutil::h3::H3Client::connect(addr.parse().unwrap()).unwrap();
    let hello = h3.get("/hello").unwrap();
    assert_eq!(
        (hello.status, hello.body.as_slice()),
        (200, dyno_serve::HELLO)
    );
    assert_eq!(h3.get("/blob/64k").unwrap().body.len(), 65_536);
    assert_eq!(h3.get("/status/503").unwrap().status, 503);

    // --h3 implies --tls: HTTPS on the TCP port of the same number.
    let url = format!("https://{addr}/hello");
    let run = http_json(home.path(), &[&url, "--insecure", "-n", "50"]);
    assert_eq!(metric(&run, "responses"), Some(50.0));
    assert_eq!(metric(&run, "errors"), Some(0.0));

    // SAFETY: kill(2) with a valid pid of our own child.
    let rc = unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGINT) };
    assert_eq!(rc, 0);
    assert_eq!(
        h3.close_code(Duration::from_secs(20)),
        Ok(0x100),
        "Ctrl-C closes QUIC connections with H3_NO_ERROR"
    );
    let deadline = Instant::now() + Duration::from_secs(20);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        assert!(
            Instant::now() < deadline,
            "dyno serve --h3 did not stop on SIGINT"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(status.success(), "{status:?}");
}
