//! `dyno quick`'s db line: select-only, prepared, for a few seconds on the
//! PostgreSQL server that libpq's environment names. It only reads: a
//! database without the pgbench tables is an error that says how to make
//! them, never a reason to make them.

use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use dyno_model::record::{DbRecord, QuickLine};

use crate::Target;
use crate::record;
use crate::run::{Protocol, RunError, RunSettings, Stop, Weighted};
use crate::script::{self, Script};

/// Clients of the db line.
pub const CLIENTS: usize = 8;

/// The variables of libpq's environment that name a server; `dyno quick`
/// has a db line only when one of them is set.
const SERVER_VARIABLES: [&str; 4] = ["PGHOST", "PGPORT", "PGDATABASE", "PGSERVICE"];

/// What `dyno quick` says when no server is configured.
pub const NOT_CONFIGURED: &str = "no PostgreSQL server is configured, so there is no db line: set PGHOST, PGPORT and PGDATABASE (libpq's environment) to a server whose database `dyno db init` has prepared, and quick adds a select-only line";

/// Whether an environment (`var` looks a variable up) names a PostgreSQL
/// server for `dyno quick`.
pub fn configured(var: impl Fn(&str) -> Option<String>) -> bool {
    SERVER_VARIABLES
        .iter()
        .any(|v| var(v).is_some_and(|s| !s.is_empty()))
}

/// The db line's settings against `target`, on at most `cpus` threads.
pub fn settings(target: Target, duration: Duration, seed: u64, cpus: usize) -> RunSettings {
    let (name, text) = script::builtin("select-only").expect("select-only is built in");
    let script = Script::parse(name, text).expect("a built-in script parses");
    RunSettings {
        plan: None,
        share: 1.0,
        target,
        scripts: vec![Weighted { script, weight: 1 }],
        clients: CLIENTS,
        threads: cpus.clamp(1, CLIENTS),
        stop: Stop::Duration(duration),
        protocol: Protocol::Prepared,
        scale: None,
        vacuum: false,
        max_tries: 1,
        seed,
        default_seed: script::default_seed(seed, CLIENTS as u64),
        rate: None,
        warmup: Duration::ZERO,
        grace: Duration::ZERO,
        latency_limit: None,
        per_statement: false,
        reconnect: false,
        pipeline: false,
        exit_on_abort: false,
        log: None,
        progress_every: Duration::from_secs(1),
        segment: dyno_model::Segment::WHOLE,
    }
}

/// Measures the db line; `stop` ends it early. A client the server
/// aborted fails the line with the server's reason.
pub fn measure(
    settings: &RunSettings,
    stop: Arc<AtomicBool>,
) -> Result<QuickLine<DbRecord>, RunError> {
    let outcome = crate::run::run(settings, stop, |_| {})?;
    if let Some(why) = outcome.aborted.first() {
        return Err(RunError::Setup(why.clone()));
    }
    Ok(record::quick(settings, &outcome))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_server_is_configured_by_any_non_empty_libpq_variable() {
        assert!(!configured(|_| None));
        assert!(!configured(|_| Some(String::new())));
        assert!(configured(|v| (v == "PGSERVICE").then(|| "bench".into())));
        assert!(configured(|v| (v == "PGHOST").then(|| "/tmp".into())));
        assert!(!configured(|v| (v == "PGUSER").then(|| "me".into())));
    }

    #[test]
    fn the_line_is_select_only_prepared_on_at_most_its_clients_threads() {
        let target = Target::new("host=localhost dbname=bench", |_| None).unwrap();
        let s = settings(target, Duration::from_secs(2), 7, 64);
        assert_eq!((s.clients, s.threads, s.seed), (CLIENTS, CLIENTS, 7));
        assert_eq!(s.scripts[0].script.name(), "select-only");
        assert!(matches!(s.protocol, Protocol::Prepared));
        assert!(matches!(s.stop, Stop::Duration(d) if d == Duration::from_secs(2)));
        let one = settings(
            Target::new("host=localhost", |_| None).unwrap(),
            Duration::from_secs(1),
            0,
            0,
        );
        assert_eq!(one.threads, 1);
    }
}
