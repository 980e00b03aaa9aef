//! The CLI integration tests: the real `dyno` binary, real engines, a real
//! store in a temporary DYNO_HOME, and the real reference server on loopback.

// Tests may say on stderr what they skipped and why.
#![allow(clippy::print_stderr)]

mod common;

/// Version, help, usage errors, completions and man pages.
mod basics;
/// `dyno serve --app bbs`: the bulletin board through the real binary.
mod bbs;
/// `dyno changes`: change points over a history, and the CI gate.
mod changes;
/// `dyno compare`'s tests.
mod compare;
/// `dyno db`'s tests, on the throwaway PostgreSQL of `scripts/pg`.
mod db;
/// `dyno db run`'s script language against pgbench itself.
mod db_script;
/// `dyno disk`'s tests.
mod disk;
/// `dyno doctor`: the checklist, on this machine and on fake /proc trees.
mod doctor;
/// `dyno http --h3` against Caddy and `dyno serve --h3`.
mod h3;
/// `dyno http`'s flags, checks and reports.
mod http;
/// `dyno http`'s engine: deadlines, rates, latency logs, connecting.
mod http_engine;
/// `dyno http`'s plain runs: exact counts, the report's layout, refused
/// connections, bad input, TLS, the open model, URL files.
mod http_run;
/// `dyno http` against httpbin under gunicorn, a real web app.
mod httpbin;
/// Interrupts (SIGINT, SIGTERM, SIGHUP) in the middle of a run.
mod interrupt;
/// Value parsers shared by subcommands, `serve --addr`, `man --dir` and
/// `quick`'s warnings.
mod misc;
/// `dyno quick` and `dyno sysinfo`.
mod quick;
/// `dyno http --replay`: access logs replayed against nginx.
mod replay;
/// `dyno report`'s pages, files and the page in a browser.
mod report;
/// `dyno run`: real child processes timed through the binary.
mod run;
/// `dyno scale`'s tests.
mod scale;
/// `dyno http --scenario`: multi-step flows.
mod scenario;
/// Segments of one run from several processes, and their merged run.
mod segment;
/// `dyno serve`: the reference server through the real binary.
mod serve;
/// The store's subcommands, and the store under every subcommand.
mod store;
