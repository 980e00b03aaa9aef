//! Every example in the README and the guide, run: each ```sh block that
//! calls dyno runs under bash, in order, file by file, and must succeed.
//!
//! The world the examples assume is made here: a temporary store, dyno's
//! own server (plain and TLS) for every URL they name, a database on the
//! throwaway PostgreSQL (scripts/pg, `DYNO_TEST_PG`) for every conninfo, a
//! real node_exporter and postgres_exporter for every `--watch URL`, and
//! a work folder with the files they use (a Makefile and its C program in a
//! git repository with a `main` and a `pr-42` branch, a pgbench script, a
//! sweep's CSV and JSON, a file to compress). `tests/examples/bin` comes
//! first on PATH: its `dyno` runs the real binary with the example's flags,
//! changed only where they name what this machine lacks or would take
//! minutes (it says what, at its top), and it stands in for what cannot
//! exist here (a Kubernetes cluster, another machine over ssh, clang).
//! Lines that build or test dyno itself (`cargo …`, `scripts/test`) are
//! what CI runs anyway, and are skipped.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const ROOT: &str = env!("CARGO_MANIFEST_DIR");
const DYNO: &str = env!("CARGO_BIN_EXE_dyno");

/// The most one block may take before it is called hung.
const BLOCK_LIMIT: Duration = Duration::from_secs(180);

/// One ```sh block of a document.
struct Block {
    file: String,
    line: usize,
    text: String,
}

/// The README's blocks, then each chapter's in the order SUMMARY.md lists
/// them.
fn blocks() -> Vec<Block> {
    let mut files = vec![PathBuf::from(ROOT).join("README.md")];
    let summary = std::fs::read_to_string(Path::new(ROOT).join("docs/src/SUMMARY.md")).unwrap();
    for line in summary.lines() {
        if let Some(start) = line.find("](") {
            let rest = &line[start + 2..];
            let name = &rest[..rest.find(')').unwrap()];
            files.push(Path::new(ROOT).join("docs/src").join(name));
        }
    }
    let mut out = Vec::new();
    for file in files {
        let text = std::fs::read_to_string(&file).unwrap();
        let shown = file.strip_prefix(ROOT).unwrap().display().to_string();
        let mut open: Option<(usize, String)> = None;
        for (i, line) in text.lines().enumerate() {
            match &mut open {
                None if line.trim_start() == "```sh" => open = Some((i + 2, String::new())),
                None => {}
                Some(_) if line.trim_start() == "```" => {
                    let (start, body) = open.take().unwrap();
                    if body.contains("dyno ") {
                        out.push(Block {
                            file: shown.clone(),
                            line: start,
                            text: body,
                        });
                    }
                }
                Some((_, body)) => {
                    body.push_str(line);
                    body.push('\n');
                }
            }
        }
    }
    out
}

/// The block as bash runs it: lines that build or test dyno itself are
/// skipped, and a `dyno serve … &` tells the shim it runs in the
/// background (so it keeps serving for the lines after it).
fn script(block: &str) -> String {
    block
        .lines()
        .map(|line| {
            let t = line.trim_start();
            if t.starts_with("cargo ") || t.starts_with("scripts/test") {
                format!(": skipped, CI runs it: {t}")
            } else if t.starts_with("dyno serve") && t.contains(" &") {
                format!("DYNO_EXAMPLES_BACKGROUND=1 {line}")
            } else {
                line.to_owned()
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn run(cmd: &mut Command) -> String {
    let out = cmd.output().unwrap();
    assert!(
        out.status.success(),
        "{cmd:?}: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// A `dyno serve` of the test's own; its address. Killed when dropped.
struct Server(std::process::Child, String);

impl Server {
    fn start(extra: &[&str]) -> Server {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let addr = format!("127.0.0.1:{port}");
        let child = Command::new(DYNO)
            .args(["serve", "--threads", "1", "--addr", &addr])
            .args(extra)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let started = Instant::now();
        while std::net::TcpStream::connect(&addr).is_err() {
            assert!(
                started.elapsed() < Duration::from_secs(10),
                "dyno serve did not start"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        Server(child, addr)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The files the examples use, in `work`.
fn work_folder(work: &Path) {
    let write = |name: &str, text: &str| std::fs::write(work.join(name), text).unwrap();
    write(
        "Makefile",
        "CC ?= cc\nbench: main.c\n\t$(CC) -O2 -o bench main.c\nclean:\n\trm -f bench\n.PHONY: clean\n",
    );
    write(
        "main.c",
        "int main(void) { volatile unsigned long s = 0; for (unsigned long i = 0; i < 1000000; i++) s += i; return 0; }\n",
    );
    write(
        ".gitignore",
        "bench\nroot/\n*.json\n*.html\n*.csv\n*.sql\nbig\nbbs-data/\n.served\n",
    );
    let git = |args: &[&str]| {
        run(Command::new("git")
            .current_dir(work)
            .args(["-c", "user.name=dyno", "-c", "user.email=dyno@localhost"])
            .args(args))
    };
    git(&["init", "-q", "-b", "main"]);
    git(&["add", "."]);
    git(&["commit", "-q", "-m", "bench"]);
    git(&["branch", "pr-42"]);
    write(
        "mix.sql",
        "\\set aid random(1, 100000 * :scale)\nSELECT abalance FROM pgbench_accounts WHERE aid = :aid;\n",
    );
    write("sweep.csv", "threads,seconds\n1,8.0\n2,4.3\n4,2.5\n8,1.7\n");
    write(
        "rps.json",
        r#"[{"clients": 1, "rps": 1000}, {"clients": 2, "rps": 1900}, {"clients": 4, "rps": 3500}]"#,
    );
    write("big", &"dyno ".repeat(50_000));
    write("notes.txt", "foo, for the grep and rg examples\n");
    // The repository's example files, where the examples name them.
    std::fs::create_dir_all(work.join("examples")).unwrap();
    for entry in std::fs::read_dir(Path::new(ROOT).join("examples")).unwrap() {
        let from = entry.unwrap().path();
        std::fs::copy(&from, work.join("examples").join(from.file_name().unwrap())).unwrap();
    }
    std::fs::create_dir_all(work.join("root")).unwrap();
    for dir in [
        "mnt/ssd",
        "srv",
        "var/lib/postgresql",
        "usr/local/share/man/man1",
        "etc/bash_completion.d",
        "tmp",
    ] {
        std::fs::create_dir_all(work.join("root").join(dir)).unwrap();
    }
}

#[test]
fn every_example_runs() {
    let home = tempfile::tempdir().unwrap();
    // Each block gets a work folder of its own (what one writes, another
    // would refuse to overwrite); the store is shared, as a user's is.
    let work = home.path().join("work");
    let fresh = |work: &Path| {
        let _ = std::fs::remove_dir_all(work);
        std::fs::create_dir_all(work).unwrap();
        work_folder(work);
    };
    fresh(&work);
    let pg = dyno_testutil::pg::Pg::from_env();
    let examples = pg.database();
    let examples_db = pg.url_of(&examples);
    let store_db = pg.url_of(&pg.database());
    let plain = Server::start(&[]);
    // HTTPS over TCP and HTTP/3 over UDP on the same port (`--h3` implies
    // `--tls`), for the examples of either.
    let tls = Server::start(&["--h3"]);
    // The exporters `--watch URL` names: the target machine's
    // node_exporter, and a postgres_exporter (port 9187 in the examples)
    // reading the examples' database.
    let exporter = dyno_testutil::exporter::Exporter::node();
    let pg_exporter =
        dyno_testutil::exporter::Exporter::postgres(&format!("{examples_db}?sslmode=disable"));
    let bin = Path::new(ROOT).join("tests/examples/bin");
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let env = |cmd: &mut Command| {
        cmd.current_dir(&work)
            .env("PATH", &path)
            .env("DYNO_HOME", home.path().join("dyno"))
            .env_remove("DYNO_STORE")
            .env("DYNO_EXAMPLES_REAL", DYNO)
            .env("DYNO_EXAMPLES_WORK", &work)
            .env("DYNO_EXAMPLES_HTTP", &plain.1)
            .env("DYNO_EXAMPLES_HTTPS", &tls.1)
            .env("DYNO_EXAMPLES_EXPORTER", &exporter.url)
            .env("DYNO_EXAMPLES_PG_EXPORTER", &pg_exporter.url)
            .env("DYNO_EXAMPLES_PG_URL", &examples_db)
            .env("DYNO_EXAMPLES_STORE_URL", &store_db)
            .envs(pg.env.iter().map(|(k, v)| (k, v)))
            .env("PGDATABASE", &examples)
            .stdin(Stdio::null());
    };
    // What the examples read before they make it: runs tagged for the
    // comparisons and trends they draw, and pgbench's tables.
    for args in [
        &["quick", "--tag", "opteron"][..],
        &["quick", "--tag", "opteron"],
        &["http", "http://127.0.0.1:8080/", "--tag", "nightly"],
        &["http", "http://127.0.0.1:8080/", "--tag", "nightly"],
        &["disk", "--test", "rnd:4k:q1:t1"],
        &["disk", "--test", "rnd:4k:q1:t1"],
        &["db", "init"],
    ] {
        let mut cmd = Command::new(bin.join("dyno"));
        env(&mut cmd);
        run(cmd.args(args));
    }

    let mut failed = Vec::new();
    let mut took = Vec::new();
    for block in blocks() {
        fresh(&work);
        let mut cmd = Command::new("bash");
        env(&mut cmd);
        // Files, not pipes: a server the block leaves in the background
        // would hold a pipe open.
        let stdout = home.path().join("stdout");
        let stderr = home.path().join("stderr");
        let script = script(&block.text);
        if script.contains("DYNO_EXAMPLES_BACKGROUND=1") {
            cmd.env("DYNO_EXAMPLES_SERVES", "1");
        }
        cmd.args(["-euo", "pipefail", "-c", &script])
            .stdout(std::fs::File::create(&stdout).unwrap())
            .stderr(std::fs::File::create(&stderr).unwrap());
        // Its own process group, so what it leaves running is stopped with
        // it, and a hung block is killed whole.
        std::os::unix::process::CommandExt::process_group(&mut cmd, 0);
        let started = Instant::now();
        let mut child = cmd.spawn().unwrap();
        let pid = child.id() as i32;
        let status = loop {
            if let Some(status) = child.try_wait().unwrap() {
                break Some(status);
            }
            if started.elapsed() > BLOCK_LIMIT {
                break None;
            }
            std::thread::sleep(Duration::from_millis(50));
        };
        // SAFETY: signals to the block's own process group only.
        unsafe { libc::kill(-pid, libc::SIGKILL) };
        let _ = child.wait();
        took.push((started.elapsed(), format!("{}:{}", block.file, block.line)));
        if status.is_none_or(|s| !s.success()) {
            let tail = |path: &Path| {
                let s = std::fs::read_to_string(path).unwrap_or_default();
                let lines: Vec<&str> = s.lines().collect();
                lines[lines.len().saturating_sub(15)..].join("\n")
            };
            failed.push(format!(
                "{}:{} ({}, {:.1} s):\n{}\n--- stdout\n{}\n--- stderr\n{}",
                block.file,
                block.line,
                status.map_or_else(|| "hung: killed".to_owned(), |s| s.to_string()),
                started.elapsed().as_secs_f64(),
                block.text,
                tail(&stdout),
                tail(&stderr)
            ));
        }
    }
    // The slowest blocks, for whoever wants the test quicker.
    took.sort();
    for (time, block) in took.iter().rev().take(8) {
        println!("{:>6.1} s  {block}", time.as_secs_f64());
    }
    assert!(
        failed.is_empty(),
        "{} examples failed:\n\n{}",
        failed.len(),
        failed.join("\n\n")
    );
}
