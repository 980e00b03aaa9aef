//! `dyno serve --app bbs`: its flags, its banner, and the board loaded by
//! `dyno http` as the README shows, reads and writes through URL templates.

use crate::common::*;

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
pub(super) fn spawn_bbs(data: &Path) -> (std::process::Child, String, String) {
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

    stop_server(&mut child);
}

/// One GET on a new connection; `None` when the server is gone or the
/// answer is cut off.
fn try_get(addr: &str, path: &str) -> Option<(u16, String)> {
    let mut stream = TcpStream::connect(addr).ok()?;
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .ok()?;
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: test\r\nConnection: close\r\n\r\n"
    )
    .ok()?;
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw).ok()?;
    let text = String::from_utf8(raw).ok()?;
    let (head, body) = text.split_once("\r\n\r\n")?;
    let status = head.split_whitespace().nth(1)?.parse().ok()?;
    let length: usize = head.lines().find_map(|l| {
        l.to_ascii_lowercase()
            .strip_prefix("content-length:")
            .map(|v| v.trim().parse().ok())
    })??;
    (body.len() == length).then(|| (status, body.to_owned()))
}

/// Every message of board `bname` as (id, text), read page by page.
fn all_messages(addr: &str, bname: &str) -> Vec<(u64, String)> {
    let mut out = Vec::new();
    let mut before = String::new();
    loop {
        let (status, body) = try_get(
            addr,
            &format!("/showBoardMessage?bname={bname}&limit=1000{before}"),
        )
        .unwrap();
        assert_eq!(status, 200, "{body}");
        let page: Vec<(u64, String)> = body
            .lines()
            .skip(1)
            .filter_map(|l| {
                let mut fields = l.split('\t');
                let id = fields.next()?.parse().ok()?;
                Some((id, fields.nth(1)?.to_owned()))
            })
            .collect();
        let Some(&(oldest, _)) = page.last() else {
            break;
        };
        out.extend(page);
        if oldest <= 1 {
            break;
        }
        before = format!("&before={oldest}");
    }
    out
}

fn kill9(child: &mut std::process::Child) {
    child.kill().unwrap();
    child.wait().unwrap();
}

/// The board on `data` with the board `bname` (its first message `first`)
/// and `posts` more messages posted to it; the server and its address.
fn board_with_posts(
    data: &Path,
    bname: &str,
    first: &str,
    posts: u32,
) -> (std::process::Child, String) {
    let (child, addr, _) = spawn_bbs(data);
    try_get(
        &addr,
        &format!("/createBoard?bname={bname}&author=a&msg={first}&key=k"),
    )
    .unwrap();
    for i in 0..posts {
        try_get(
            &addr,
            &format!("/createBoardMessage?bname={bname}&author=a&msg=m{i}&key=k"),
        )
        .unwrap();
    }
    (child, addr)
}

/// `dyno serve --app bbs --data DATA`, which must refuse to start (exit 2).
fn serve_refused(home: &Path, data: &Path) -> assert_cmd::assert::Assert {
    dyno(home)
        .args(["serve", "--addr", "127.0.0.1:0", "--app", "bbs", "--data"])
        .arg(data)
        .assert()
        .code(2)
}

#[test]
fn kill_9_in_the_middle_of_a_write_load_loses_no_acknowledged_post() {
    let data = temp();
    let (mut child, addr, _) = spawn_bbs(data.path());
    let (status, _) = try_get(&addr, "/createBoard?bname=load&author=a&msg=first&key=k").unwrap();
    assert_eq!(status, 200);
    // Eight posters, each keeping the posts the server acknowledged.
    let acknowledged = std::sync::Mutex::new(Vec::new());
    let stop = std::sync::atomic::AtomicBool::new(false);
    std::thread::scope(|s| {
        for writer in 0..8 {
            let (addr, acknowledged, stop) = (&addr, &acknowledged, &stop);
            s.spawn(move || {
                for seq in 0.. {
                    if stop.load(std::sync::atomic::Ordering::Relaxed) {
                        break;
                    }
                    let msg = format!("w{writer}-{seq}");
                    let path =
                        format!("/createBoardMessage?bname=load&author=w{writer}&msg={msg}&key=k");
                    match try_get(addr, &path) {
                        Some((200, body)) => {
                            let id: u64 = body
                                .strip_prefix("posted message ")
                                .and_then(|r| r.split_whitespace().next())
                                .and_then(|id| id.parse().ok())
                                .unwrap_or_else(|| panic!("{body}"));
                            acknowledged.lock().unwrap().push((id, msg));
                        }
                        Some((status, body)) => panic!("{status}: {body}"),
                        // The server was killed under this request.
                        None => break,
                    }
                }
            });
        }
        // Kill it once a few hundred posts are in, with the load running.
        let deadline = Instant::now() + Duration::from_secs(60);
        while acknowledged.lock().unwrap().len() < 300 {
            assert!(Instant::now() < deadline, "the posts did not come");
            std::thread::sleep(Duration::from_millis(5));
        }
        kill9(&mut child);
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
    });
    let acknowledged = acknowledged.into_inner().unwrap();
    // A new server on the same directory (the lock died with the process).
    let (mut child, addr, _) = spawn_bbs(data.path());
    let stored: std::collections::HashMap<u64, String> =
        all_messages(&addr, "load").into_iter().collect();
    for (id, msg) in &acknowledged {
        assert_eq!(
            stored.get(id),
            Some(msg),
            "acknowledged post {id} ({msg}) was lost"
        );
    }
    // Ids stay unique and the board goes on after recovery.
    let (status, body) = try_get(
        &addr,
        "/createBoardMessage?bname=load&author=a&msg=after&key=k",
    )
    .unwrap();
    assert_eq!(status, 200, "{body}");
    let next: u64 = body["posted message ".len()..]
        .split_whitespace()
        .next()
        .unwrap()
        .parse()
        .unwrap();
    assert_eq!(next, stored.keys().max().unwrap() + 1);
    kill9(&mut child);
}

#[test]
fn a_data_directory_in_use_damaged_or_impossible_is_refused_and_kept() {
    let (home, data) = (temp(), temp());
    let (mut child, _) = board_with_posts(data.path(), "b", "one", 20);
    // A second server on the same directory.
    serve_refused(home.path(), data.path())
        .stderr(predicate::str::contains("in use by another process"));
    kill9(&mut child);
    // Damage in the middle of the log's records (zeros laid down for
    // records to come follow them): refused, and the file kept as it was.
    let log = data.path().join("log-0000000000");
    let mut bytes = std::fs::read(&log).unwrap();
    let used = bytes.iter().rposition(|&b| b != 0).unwrap() + 1;
    assert!(used < bytes.len(), "zeros follow the records");
    let middle = used / 2;
    bytes[middle] ^= 0x55;
    std::fs::write(&log, &bytes).unwrap();
    serve_refused(home.path(), data.path())
        .stderr(predicate::str::contains("log-0000000000 is damaged"))
        .stderr(predicate::str::contains("Nothing was changed"));
    assert_eq!(std::fs::read(&log).unwrap(), bytes);
    // A directory that cannot be made: its parent is a file.
    let file = write_file(data.path(), "a-file", "x");
    serve_refused(home.path(), &file.join("data")).stderr(predicate::str::contains(
        "could not open the bulletin board's data",
    ));
}

/// A bit flipped in the log's header, a log of junk: `dyno serve --app
/// bbs` refuses with exit 2 naming the file and byte 0, and every file is
/// left as it was (it used to take such a log for one a crash left
/// unwritten and make it anew, wiping every board).
#[test]
fn a_log_whose_header_does_not_read_is_refused_and_kept() {
    let (home, data) = (temp(), temp());
    let (mut child, _) = board_with_posts(data.path(), "k9", "first", 10);
    kill9(&mut child);
    let log = data.path().join("log-0000000000");
    let real = std::fs::read(&log).unwrap();
    let mut flipped = real.clone();
    flipped[0] ^= 0x04;
    for (what, bytes) in [
        ("a bit flipped in byte 0", flipped),
        ("junk", b"junk\n".to_vec()),
    ] {
        std::fs::write(&log, &bytes).unwrap();
        serve_refused(home.path(), data.path())
            .stderr(predicate::str::contains(
                "log-0000000000 is damaged at byte 0",
            ))
            .stderr(predicate::str::contains("Nothing was changed"));
        assert_eq!(std::fs::read(&log).unwrap(), bytes, "{what}");
    }
    // Put back, every post is there.
    std::fs::write(&log, &real).unwrap();
    let (mut child, addr, _) = spawn_bbs(data.path());
    assert_eq!(all_messages(&addr, "k9").len(), 11);
    kill9(&mut child);
}

/// A person's view: the board page opened in headless Chromium (in a
/// network namespace of its own, with the server beside it on its
/// loopback), a hostile message shown as text, the post form there.
#[test]
fn a_board_page_opens_in_chromium_with_hostile_text_shown_not_run() {
    let data = temp();
    let bin: PathBuf = assert_cmd::cargo::cargo_bin("dyno");
    let script = r#"
ip link set lo up || exit 9
"$DYNO" serve --addr 127.0.0.1:18181 --threads 1 --app bbs --data "$DATA" >/dev/null 2>&1 &
server=$!
for _ in $(seq 100); do
  curl -sf http://127.0.0.1:18181/hello >/dev/null && break
  sleep 0.05
done
curl -sf 'http://127.0.0.1:18181/createBoard?bname=demo&author=%3Ci%3Eeve&msg=%3Cscript%3Ealert(1)%3C%2Fscript%3E&key=k' >/dev/null || exit 8
profile=$(mktemp -d)
chromium --headless --no-sandbox --disable-gpu --user-data-dir="$profile" \
  --dump-dom 'http://127.0.0.1:18181/bbs/board?bname=demo' 2>/dev/null
status=$?
kill $server
rm -rf "$profile"
exit $status
"#;
    let out = StdCommand::new("unshare")
        .args(["-n", "sh", "-c", script])
        .env("DYNO", &bin)
        .env("DATA", data.path())
        .stdin(Stdio::null())
        .output()
        .expect(
            "this test needs unshare (util-linux), curl and Chromium; scripts/test installs them",
        );
    let dom = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{out:?}");
    assert!(dom.contains("<h1>demo</h1>"), "{dom}");
    // The message is a text node: escaped in the serialised DOM, and no
    // script element came of it.
    assert!(
        dom.contains("&lt;script&gt;alert(1)&lt;/script&gt;"),
        "{dom}"
    );
    assert!(dom.contains("&lt;i&gt;eve"), "{dom}");
    assert!(!dom.contains("<script"), "{dom}");
    assert!(
        dom.contains(r#"<form method="post" action="/bbs/board">"#),
        "{dom}"
    );
}
