//! What every CLI test module shares: the `dyno` command on a temporary
//! store, the Run schema check, JSON and exit-code helpers, `dyno serve`
//! as a child, and interrupting a run.

pub(crate) use std::io::{BufRead, BufReader, Read, Write};
pub(crate) use std::net::TcpStream;
pub(crate) use std::path::{Path, PathBuf};
pub(crate) use std::process::{Command as StdCommand, Stdio};
pub(crate) use std::time::{Duration, Instant};

pub(crate) use assert_cmd::Command;
pub(crate) use predicates::prelude::*;
pub(crate) use serde_json::Value;

/// The engine tests' HTTPS server (rustls, self-signed certificate).
pub(crate) use dyno_testutil::tls as tls_server;

/// Size-limited tmpfs mounts, shared with the disk engine's tests.
pub(crate) use dyno_testutil::tmpfs;

/// A `dyno` command with its store in `home`.
pub(crate) fn dyno(home: &Path) -> Command {
    let mut cmd = Command::cargo_bin("dyno").unwrap();
    cmd.env("DYNO_HOME", home).env_remove("XDG_DATA_HOME");
    // A server named in the tester's own environment must not reach the
    // tests (dyno quick would load it); the db tests name theirs.
    for v in [
        "PGHOST",
        "PGPORT",
        "PGDATABASE",
        "PGSERVICE",
        "PGUSER",
        "PGPASSWORD",
    ] {
        cmd.env_remove(v);
    }
    cmd
}

/// A quick run small enough for a test but still checked.
pub(crate) const SMALL_QUICK: [&str; 9] = [
    "quick",
    "--int64-iterations",
    "200000",
    "--repetitions",
    "2",
    "--http-duration",
    "0",
    "--disk-duration",
    "0",
];

pub(crate) fn schema() -> Value {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("schema/run.schema.json");
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// Validates `instance` against `schema`, naming every violation.
pub(crate) fn assert_matches_schema(schema: &Value, instance: &Value) {
    let validator = jsonschema::validator_for(schema).expect("the schema compiles");
    let errors: Vec<String> = validator
        .iter_errors(instance)
        .map(|e| format!("{} at {}", e, e.instance_path()))
        .collect();
    assert!(
        errors.is_empty(),
        "schema violations: {errors:#?}\n{instance:#}"
    );
}

/// Validates `instance` against the Run schema, or against one of its
/// `$defs` when `def` is given.
pub(crate) fn assert_valid(instance: &Value, def: Option<&str>) {
    let mut schema = schema();
    if let Some(def) = def {
        schema["$ref"] = Value::String(format!("#/$defs/{def}"));
        let obj = schema.as_object_mut().unwrap();
        for key in [
            "properties",
            "required",
            "additionalProperties",
            "type",
            "title",
            "allOf",
        ] {
            obj.remove(key);
        }
    }
    assert_matches_schema(&schema, instance);
    if def.is_none() {
        assert_record_round_trips(instance);
    }
}

/// A Run's settings read as its kind's typed record and write back the
/// very same JSON: no key the engine writes is unknown to the record.
pub(crate) fn assert_record_round_trips(instance: &Value) {
    use dyno_model::record::*;
    fn back<R: Record>(run: &dyno_model::Run) -> Value {
        serde_json::to_value(
            run.record::<R>()
                .expect("the settings read as the kind's record"),
        )
        .unwrap()
    }
    let run: dyno_model::Run = serde_json::from_value(instance.clone()).expect("a Run");
    let back = match run.kind {
        dyno_model::Kind::Http => back::<HttpRecord>(&run),
        dyno_model::Kind::Disk => back::<DiskRecord>(&run),
        dyno_model::Kind::Db => back::<DbRecord>(&run),
        dyno_model::Kind::Exec => back::<ExecRecord>(&run),
        dyno_model::Kind::Scale => back::<ScaleRecord>(&run),
        dyno_model::Kind::Quick => back::<QuickRecord>(&run),
        dyno_model::Kind::Compare => back::<CompareRecord>(&run),
        dyno_model::Kind::Figures => back::<FiguresRecord>(&run),
        dyno_model::Kind::Cpu => return,
    };
    assert_eq!(
        back, run.settings,
        "the {} record does not write back the settings it read",
        run.kind
    );
}

pub(crate) fn stdout_json(out: &std::process::Output) -> Value {
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "stdout is not JSON ({e}): {}",
            String::from_utf8_lossy(&out.stdout)
        )
    })
}

/// Runs `dyno args…` with its store in `home`, expects success, returns stdout.
pub(crate) fn ok(home: &Path, args: &[&str]) -> String {
    let out = dyno(home)
        .args(args)
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    String::from_utf8(out).unwrap()
}

/// Runs `dyno args…`, expects exit code 2 and returns stderr.
pub(crate) fn fails(home: &Path, args: &[&str]) -> String {
    let out = dyno(home)
        .args(args)
        .assert()
        .code(2)
        .get_output()
        .stderr
        .clone();
    String::from_utf8(out).unwrap()
}

/// Each command must exit 2 with every needle in its message, and none may
/// create a store.
pub(crate) fn assert_refused(home: &Path, cases: &[(&[&str], &[&str])]) {
    for (args, needles) in cases {
        let stderr = fails(home, args);
        for needle in *needles {
            assert!(
                stderr.contains(needle),
                "{args:?}: no {needle:?} in {stderr}"
            );
        }
    }
    assert!(
        !home.join("dyno.db").exists(),
        "bad input must not create a store"
    );
}

pub(crate) fn quick_json(home: &Path, extra: &[&str]) -> Value {
    let out = dyno(home)
        .args(SMALL_QUICK)
        .arg("--json")
        .args(extra)
        .assert()
        .success()
        .get_output()
        .clone();
    stdout_json(&out)
}

pub(crate) fn temp() -> tempfile::TempDir {
    tempfile::tempdir().unwrap()
}

/// The words of a command line, split at white space as a shell splits
/// one without quotes: `words("db run -c 4")` is `["db", "run", "-c", "4"]`.
pub(crate) fn words(line: &str) -> Vec<&str> {
    line.split_whitespace().collect()
}

/// Every one of `needles` is in `text`.
pub(crate) fn assert_contains_all(text: &str, needles: &[&str]) {
    for needle in needles {
        assert!(text.contains(needle), "no {needle:?} in\n{text}");
    }
}

/// Writes `text` to the file `name` in `dir` and returns its path.
pub(crate) fn write_file(dir: &Path, name: &str, text: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path
}

/// What `cmd` printed on stdout; it must succeed.
pub(crate) fn stdout_of(cmd: &mut Command) -> String {
    String::from_utf8(cmd.assert().success().get_output().stdout.clone()).unwrap()
}

/// The metrics of a Run in JSON.
pub(crate) fn metrics(run: &Value) -> std::slice::Iter<'_, Value> {
    run["metrics"].as_array().expect("a Run has metrics").iter()
}

/// The value of the Run's metric `name` without labels; there must be one.
pub(crate) fn unlabelled_metric(run: &Value, name: &str) -> f64 {
    metrics(run)
        .find(|m| m["name"] == name && m["labels"].as_object().is_none_or(|l| l.is_empty()))
        .unwrap_or_else(|| panic!("no metric {name}"))["value"]
        .as_f64()
        .unwrap()
}

/// The first metric of a Run named `name`; there must be one.
pub(crate) fn find_metric<'a>(run: &'a Value, name: &str) -> &'a Value {
    metrics(run)
        .find(|m| m["name"] == name)
        .unwrap_or_else(|| panic!("no metric {name}: {}", run["metrics"]))
}

/// The metric `name` of a quick run's part `part` (`http`, `db`, `disk`):
/// the first with that name and that `part` label.
pub(crate) fn find_part_metric<'a>(run: &'a Value, part: &str, name: &str) -> &'a Value {
    metrics(run)
        .find(|m| m["name"] == name && m["labels"]["part"] == part)
        .unwrap_or_else(|| panic!("no metric {name}{{part={part}}}: {}", run["metrics"]))
}

/// The connection counts of a capacity sweep's steps (`cap` is a Run's
/// `settings.capacity`), in order; a level that failed while the machine
/// was busy runs once more, and counts once.
pub(crate) fn sweep_levels(cap: &Value) -> Vec<u64> {
    let mut levels: Vec<u64> = cap["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["connections"].as_u64().unwrap())
        .collect();
    levels.dedup();
    levels
}

/// The warnings of a Run in JSON.
pub(crate) fn warnings(run: &Value) -> std::slice::Iter<'_, Value> {
    run["warnings"]
        .as_array()
        .expect("a Run has warnings")
        .iter()
}

/// The codes of a Run's warnings, in order.
pub(crate) fn warning_codes(run: &Value) -> Vec<&str> {
    warnings(run)
        .map(|w| w["code"].as_str().expect("a warning has a code"))
        .collect()
}

/// Whether the Run has a warning with `code`.
pub(crate) fn has_warning(run: &Value, code: &str) -> bool {
    warnings(run).any(|w| w["code"] == code)
}

/// The message of the Run's first warning with `code`, if it has one.
pub(crate) fn warning<'a>(run: &'a Value, code: &str) -> Option<&'a str> {
    warnings(run)
        .find(|w| w["code"] == code)
        .and_then(|w| w["message"].as_str())
}

/// The messages of a Run's warnings with `code`.
pub(crate) fn warning_messages<'a>(run: &'a Value, code: &str) -> Vec<&'a str> {
    warnings(run)
        .filter(|w| w["code"] == code)
        .filter_map(|w| w["message"].as_str())
        .collect()
}

/// Sends `dyno serve` (a child of this test) Ctrl-C and waits, at most 20 s,
/// for it to stop.
pub(crate) fn stop_server(child: &mut std::process::Child) {
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

/// Reads one HTTP/1.1 response with a Content-Length body.
pub(crate) fn get(addr: &str, path: &str) -> (u16, Vec<u8>) {
    let mut stream = TcpStream::connect(addr).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: test\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw).unwrap();
    let split = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .expect("a header end");
    let head = String::from_utf8_lossy(&raw[..split]).to_string();
    let status = head.split_whitespace().nth(1).unwrap().parse().unwrap();
    (status, raw[split + 4..].to_vec())
}

/// Starts `dyno serve --addr ADDR --threads N` and reads the address it
/// printed on its first line.
pub(crate) fn spawn_serve(addr: &str, threads: u32) -> (Served, String) {
    spawn_serve_with(addr, threads, &[], "http://")
}

/// [`spawn_serve`] with more flags, its URL starting with `scheme`.
pub(crate) fn spawn_serve_with(
    addr: &str,
    threads: u32,
    extra: &[&str],
    scheme: &str,
) -> (Served, String) {
    spawn_serve_from(
        &assert_cmd::cargo::cargo_bin("dyno"),
        addr,
        threads,
        extra,
        scheme,
    )
}

/// [`spawn_serve_with`] of the dyno binary at `bin` (a copy under another
/// name, as `--watch-name` tests need).
pub(crate) fn spawn_serve_from(
    bin: &Path,
    addr: &str,
    threads: u32,
    extra: &[&str],
    scheme: &str,
) -> (Served, String) {
    let mut child = StdCommand::new(bin)
        .args(["serve", "--addr", addr, "--threads", &threads.to_string()])
        .args(extra)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut first = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut first)
        .unwrap();
    let addr = first
        .split(scheme)
        .nth(1)
        .and_then(|rest| rest.split_whitespace().next())
        .unwrap_or_else(|| panic!("no address in {first:?}"))
        .to_owned();
    (Served(child), addr)
}

/// A `dyno serve` a test started, killed when dropped: a test that fails
/// before it stops its server leaves no server behind.
pub(crate) struct Served(std::process::Child);

impl std::ops::Deref for Served {
    type Target = std::process::Child;
    fn deref(&self) -> &Self::Target {
        &self.0
    }
}

impl std::ops::DerefMut for Served {
    fn deref_mut(&mut self) -> &mut Self::Target {
        &mut self.0
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A metric's value from a Run in JSON.
pub(crate) fn metric(run: &Value, name: &str) -> Option<f64> {
    metrics(run)
        .find(|m| m["name"] == name)
        .and_then(|m| m["value"].as_f64())
}

/// The sum of the metrics `names` the run has (those it lacks count 0):
/// e.g. the error classes a test expects, to set beside `errors`.
pub(crate) fn metric_sum(run: &Value, names: &[&str]) -> f64 {
    names.iter().filter_map(|n| metric(run, n)).sum()
}

pub(crate) fn http_json(home: &Path, args: &[&str]) -> Value {
    http_json_exit(home, args, 0).0
}

/// Runs `dyno http args… --json --no-save`, expects exit `code`, and
/// returns the schema-checked Run with stderr.
pub(crate) fn http_json_exit(home: &Path, args: &[&str], code: i32) -> (Value, String) {
    json_run(home, &[&["http"], args, &["--no-save"]].concat(), code)
}

/// Runs `dyno args… --json`, expects exit `code`, and returns the
/// schema-checked Run with stderr.
pub(crate) fn json_run(home: &Path, args: &[&str], code: i32) -> (Value, String) {
    let out = dyno(home)
        .args(args)
        .arg("--json")
        .timeout(Duration::from_secs(120))
        .assert()
        .code(code)
        .get_output()
        .clone();
    let run = stdout_json(&out);
    assert_valid(&run, None);
    (run, String::from_utf8_lossy(&out.stderr).into_owned())
}

/// Starts `dyno args…` with its store in `home`, sends `signal` after
/// `after`, and gives back what it printed once it stopped, which it must
/// do promptly.
pub(crate) fn signalled(
    home: &Path,
    args: &[&str],
    after: Duration,
    signal: i32,
) -> std::process::Output {
    let bin = assert_cmd::cargo::cargo_bin("dyno");
    let child = StdCommand::new(bin)
        .args(args)
        .env("DYNO_HOME", home)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(after);
    // SAFETY: kill(2) with a valid pid of our own child.
    assert_eq!(unsafe { libc::kill(child.id() as libc::pid_t, signal) }, 0);
    let started = Instant::now();
    let out = child.wait_with_output().unwrap();
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "it must stop promptly"
    );
    out
}

/// [`signalled`] with SIGINT, SIGTERM or SIGHUP (all three interrupt
/// alike): a prompt exit with code 130 and a schema-valid Run on stdout
/// marked as interrupted.
pub(crate) fn interrupted_run(home: &Path, args: &[&str], after: Duration, signal: i32) -> Value {
    let out = signalled(home, args, after, signal);
    assert_eq!(
        out.status.code(),
        Some(130),
        "an interrupted run exits 130: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let run = stdout_json(&out);
    assert_valid(&run, None);
    assert!(has_warning(&run, "interrupted"), "{:?}", run["warnings"]);
    run
}

/// nginx (Debian's package; scripts/test installs it) in the foreground as
/// one process, with its own configuration, prefix, pid file and logs in a
/// temporary directory, serving `index.html` over h2c with prior knowledge
/// on a free loopback port, one access-log line a request; killed when
/// dropped.
pub(crate) struct Nginx {
    pub(crate) child: std::process::Child,
    pub(crate) port: u16,
    pub(crate) dir: tempfile::TempDir,
}

impl Nginx {
    /// Starts nginx with `directives` added to its `http` block, speaking
    /// h2c with prior knowledge.
    pub(crate) fn start(directives: &str) -> Nginx {
        Nginx::serving(directives, " http2", "")
    }

    /// Starts nginx speaking HTTP/1.1, logging each request in the
    /// `log_format` `format` (nginx's combined format when empty).
    pub(crate) fn http1(directives: &str, format: &str) -> Nginx {
        Nginx::serving(directives, "", format)
    }

    /// Starts nginx speaking h2c with prior knowledge, logging each request
    /// in the `log_format` `format`.
    pub(crate) fn h2c(directives: &str, format: &str) -> Nginx {
        Nginx::serving(directives, " http2", format)
    }

    /// Starts nginx with `directives` in its `http` block, `listen` added
    /// to its listen directive, and its access log in `format`.
    fn serving(directives: &str, listen: &str, format: &str) -> Nginx {
        let dir = temp();
        let d = dir.path();
        std::fs::create_dir_all(d.join("www")).unwrap();
        std::fs::write(d.join("www/index.html"), "hello from nginx\n").unwrap();
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        // As root, nginx would switch to a user that cannot read the
        // temporary directory; run as root, as bench/nginx-lib.sh's `chmod`
        // is not needed then.
        // SAFETY: geteuid(2) has no preconditions.
        let user = if unsafe { libc::geteuid() } == 0 {
            "user root;"
        } else {
            ""
        };
        let p = d.display();
        let log = if format.is_empty() {
            format!("access_log {p}/access.log;")
        } else {
            format!("log_format dyno '{format}'; access_log {p}/access.log dyno;")
        };
        let conf = format!(
            "{user}
worker_processes 1;
daemon off;
master_process off;
pid {p}/nginx.pid;
error_log {p}/error.log;
events {{ worker_connections 256; }}
http {{
  {log}
  client_body_temp_path {p}/body;
  proxy_temp_path {p}/proxy;
  fastcgi_temp_path {p}/fastcgi;
  uwsgi_temp_path {p}/uwsgi;
  scgi_temp_path {p}/scgi;
  {directives}
  server {{ listen 127.0.0.1:{port}{listen}; root {p}/www; }}
}}
"
        );
        std::fs::write(d.join("nginx.conf"), conf).unwrap();
        let nginx = ["/usr/sbin/nginx", "nginx"]
            .into_iter()
            .find(|n| {
                StdCommand::new(n)
                    .arg("-v")
                    .stderr(Stdio::null())
                    .status()
                    .is_ok()
            })
            .expect("this test needs nginx (Debian's `nginx`; scripts/test installs it)");
        let mut child = StdCommand::new(nginx)
            .arg("-e")
            .arg(d.join("error.log"))
            .arg("-p")
            .arg(d)
            .arg("-c")
            .arg(d.join("nginx.conf"))
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        // Up when it accepts; a bounded wait, and its own words if it died.
        for _ in 0..200 {
            if let Some(status) = child.try_wait().unwrap() {
                let mut err = String::new();
                let _ = child.stderr.take().unwrap().read_to_string(&mut err);
                let log = std::fs::read_to_string(d.join("error.log")).unwrap_or_default();
                panic!("nginx exited ({status}): {err}{log}");
            }
            if TcpStream::connect(("127.0.0.1", port)).is_ok() {
                return Nginx { child, port, dir };
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = child.kill();
        let _ = child.wait();
        panic!("nginx did not listen on 127.0.0.1:{port} within 10 s");
    }

    pub(crate) fn url(&self) -> String {
        format!("http://127.0.0.1:{}/index.html", self.port)
    }

    /// How many requests nginx has answered, by its access log: the judge
    /// of what a run says it sent.
    pub(crate) fn logged(&self) -> usize {
        std::fs::read_to_string(self.dir.path().join("access.log"))
            .unwrap_or_default()
            .lines()
            .count()
    }

    /// nginx's access log as it stands.
    pub(crate) fn access_log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("access.log")).unwrap_or_default()
    }
}

impl Drop for Nginx {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = &self.dir;
    }
}

/// The one bottleneck verdict of a watched search against `dyno serve`'s
/// `/cpu/5000` (about 5 ms of server CPU a request, which the run must
/// have measured).
pub(crate) fn knee_verdict(run: &Value) -> &str {
    let ns = find_metric(run, "server_cpu_per_op_ns")["value"]
        .as_f64()
        .unwrap();
    assert!(
        (3e6..=10e6).contains(&ns),
        "{ns} ns of server CPU a request"
    );
    let verdicts: Vec<&str> = warnings(run)
        .filter(|w| w["code"] == "server_cpu_bound" || w["code"] == "nothing_saturated")
        .filter_map(|w| w["message"].as_str())
        .collect();
    assert_eq!(verdicts.len(), 1, "{}", run["warnings"]);
    verdicts[0]
}
