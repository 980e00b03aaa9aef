//! `dyno serve --app bbs`: its flags, its banner, and the board loaded by
//! `dyno http` as the README shows, reads and writes through URL templates.

use super::*;

#[test]
fn app_and_data_come_together() {
    let home = temp();
    let cases: [(&[&str], &[&str]); 3] = [
        (&["serve", "--app", "bbs"], &["--app bbs", "--data DIR"]),
        (
            &["serve", "--data", "somewhere"],
            &["--data somewhere", "add --app bbs"],
        ),
        (
            &["serve", "--app", "wiki", "--data", "x"],
            &["'wiki'", "bbs"],
        ),
    ];
    assert_refused(home.path(), &cases);
}

/// Starts `dyno serve --app bbs` on a free port with one thread; returns
/// the child, its address and the banner it printed.
fn spawn_bbs(data: &Path) -> (std::process::Child, String, String) {
    let bin: PathBuf = assert_cmd::cargo::cargo_bin("dyno");
    let mut child = StdCommand::new(bin)
        .args([
            "serve",
            "--addr",
            "127.0.0.1:0",
            "--threads",
            "1",
            "--app",
            "bbs",
        ])
        .arg("--data")
        .arg(data)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let mut banner = String::new();
    // The banner's four lines: address, endpoints, and two of the board.
    for _ in 0..4 {
        out.read_line(&mut banner).unwrap();
    }
    let addr = banner
        .split("http://")
        .nth(1)
        .and_then(|rest| rest.split_whitespace().next())
        .unwrap_or_else(|| panic!("no address in {banner:?}"))
        .to_owned();
    (child, addr, banner)
}

#[test]
fn the_board_takes_reads_and_writes_from_dyno_http() {
    let home = temp();
    let data = temp();
    let (mut child, addr, banner) = spawn_bbs(data.path());
    assert!(
        banner.contains("/showBoardMessage") && banner.contains("/api/boards"),
        "{banner}"
    );
    let (status, body) = get(
        &addr,
        "/createBoard?bname=hello&author=dyno&msg=first&key=k",
    );
    assert_eq!(status, 200, "{}", String::from_utf8_lossy(&body));

    // Writes: every request a new message, numbered by {seq}.
    let write =
        format!("http://{addr}/createBoardMessage?bname=hello&author=bench&msg=post+{{seq}}&key=k");
    let (run, _) = json_run(
        home.path(),
        &["http", &write, "-n", "300", "-c", "4", "--no-save"],
        0,
    );
    assert_eq!(metric(&run, "status_200"), Some(300.0));
    assert_eq!(metric(&run, "errors"), Some(0.0));
    // Reads of the board.
    let read = format!("http://{addr}/showBoardMessage?bname=hello");
    let (run, _) = json_run(
        home.path(),
        &["http", &read, "-n", "500", "-c", "4", "--no-save"],
        0,
    );
    assert_eq!(metric(&run, "status_200"), Some(500.0));

    let (status, body) = get(&addr, "/showBoardMessage?bname=hello&limit=1000");
    let text = String::from_utf8(body).unwrap();
    assert_eq!(status, 200, "{text}");
    assert!(text.starts_with("board hello: 301 messages"), "{text}");
    let mut posts: Vec<u64> = text
        .lines()
        .filter_map(|l| l.split('\t').nth(2)?.strip_prefix("post ")?.parse().ok())
        .collect();
    posts.sort_unstable();
    posts.dedup();
    assert_eq!(posts.len(), 300, "every {{seq}} posted once: {text}");
    // The page a person opens.
    let (status, page) = get(&addr, "/bbs/board?bname=hello");
    assert_eq!(status, 200);
    assert!(String::from_utf8_lossy(&page).contains("post 299"));

    // SAFETY: kill(2) with a valid pid of our own child.
    assert_eq!(
        unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGINT) },
        0
    );
    let deadline = Instant::now() + Duration::from_secs(20);
    while child.try_wait().unwrap().is_none() {
        assert!(Instant::now() < deadline, "dyno serve did not stop");
        std::thread::sleep(Duration::from_millis(50));
    }
}
