//! `dyno db run`: pgbench's closed-model load. `-c` clients, each on its
//! own connection, spread over `-j` threads; each thread drives its clients
//! on a single-threaded tokio runtime (the connections' I/O included), so
//! a thread's CPU time is everything its clients cost. Every client runs a
//! script chosen by weight, one transaction after another, until the
//! duration ends or it has run its count; each transaction's latency goes
//! into an HDR histogram, failures are counted by SQLSTATE, and a
//! serialization failure or deadlock is retried up to `max_tries` times
//! with the same random draws, as pgbench does.
//!
//! With a rate (`-R`), the model is open, as pgbench's: each thread draws
//! due times for its share of the rate, and a client that is free takes
//! the next one and waits for it; latency counts from the due time, so a
//! server that stalls cannot hide its stall behind clients that wait for
//! it, and the schedule lag (due time to real start) is the client's own
//! share. The due times are a Poisson process's arrivals, as pgbench's are,
//! but with their number fixed: R × T of them over `-T` (each thread's
//! share placed as sorted uniform draws, which is a Poisson process given
//! its count), so the requested rate is the scheduled one exactly rather
//! than within ±1/√(RT).
//!
//! Its rooms, as http's: [`settings`] (what a run is asked to do),
//! [`engine`] (the clients on the pool: the schedule, the transaction and
//! its retries), [`outcome`] (what it measured, and its metrics); the
//! record is [`crate::record`]'s.

mod engine;
mod outcome;
mod progress;
mod settings;

pub use engine::run_gated;
pub use outcome::*;
pub use settings::*;

use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use crate::target::TargetError;

/// The settings a run records beside its figures.
const SETTINGS: [&str; 5] = [
    "shared_buffers",
    "synchronous_commit",
    "max_connections",
    "fsync",
    "default_transaction_isolation",
];

#[derive(Debug, thiserror::Error)]
pub enum RunError {
    #[error(transparent)]
    Target(#[from] TargetError),
    #[error(
        "the pgbench tables are missing in {0} (pgbench_branches does not exist): run `dyno db init` (or `pgbench -i`) first, or run a script of your own (-f) that does not need them"
    )]
    NoTables(String),
    #[error("{0}")]
    Setup(String),
}

/// Runs the load; `stop` ends it early (what was measured is kept);
/// `progress` is called about once a second.
pub fn run(
    settings: &RunSettings,
    stop: Arc<AtomicBool>,
    progress: impl FnMut(Progress),
) -> Result<Outcome, RunError> {
    run_gated(settings, stop, progress, || Ok(None))
}

/// The server's version and settings, the scale, and what the clean-up
/// before the run did.
fn probe(settings: &RunSettings) -> Result<(Server, i64, Vec<String>), RunError> {
    let runtime = runtime()?;
    runtime.block_on(async {
        let client = settings.target.connect().await?;
        let setup = |e: tokio_postgres::Error| RunError::Setup(message(&e));
        let version: String = client
            .query_one("SHOW server_version", &[])
            .await
            .map_err(setup)?
            .get(0);
        let rows = client
            .query(
                "SELECT name, current_setting(name) FROM pg_settings WHERE name = ANY($1) ORDER BY name",
                &[&SETTINGS.as_slice()],
            )
            .await
            .map_err(setup)?;
        let server = Server {
            version,
            settings: rows.iter().map(|r| (r.get(0), r.get(1))).collect(),
        };
        let scale = match settings.scale {
            Some(s) => s,
            None => match client
                .query_one("SELECT count(*) FROM pgbench_branches", &[])
                .await
            {
                Ok(row) => row.get::<_, i64>(0),
                Err(e) if e.code().is_some_and(|c| c.code() == "42P01") => {
                    return Err(RunError::NoTables(settings.target.to_string()));
                }
                Err(e) => return Err(setup(e)),
            },
        };
        if scale < 1 {
            return Err(RunError::Setup(format!(
                "pgbench_branches has {scale} rows, so the scale would be {scale}: run `dyno db init` again"
            )));
        }
        // The segments of a run share one database: the first cleans up.
        let vacuum = if settings.vacuum && settings.segment.index == 0 {
            clean_up(&client).await?
        } else {
            Vec::new()
        };
        Ok((server, scale, vacuum))
    })
}

/// pgbench's clean-up before a run: `vacuum pgbench_branches`, `vacuum
/// pgbench_tellers`, `truncate pgbench_history`, each on a table that
/// exists (pgbench tries each one and reports the error of a missing
/// table; dyno says which were missing). What was done, in words.
async fn clean_up(client: &tokio_postgres::Client) -> Result<Vec<String>, RunError> {
    let setup = |e: tokio_postgres::Error| {
        RunError::Setup(format!(
            "the clean-up before the run failed: {} (-n / --no-vacuum skips it)",
            message(&e)
        ))
    };
    let mut done = Vec::new();
    let mut missing = Vec::new();
    for (table, statement) in [
        ("pgbench_branches", "VACUUM pgbench_branches"),
        ("pgbench_tellers", "VACUUM pgbench_tellers"),
        ("pgbench_history", "TRUNCATE pgbench_history"),
    ] {
        if crate::inspect::table_exists(client, table)
            .await
            .map_err(setup)?
        {
            client.batch_execute(statement).await.map_err(setup)?;
            done.push(statement.to_ascii_lowercase());
        } else {
            missing.push(table);
        }
    }
    if !missing.is_empty() {
        done.push(format!("{} missing", missing.join(", ")));
    }
    Ok(done)
}

fn runtime() -> Result<tokio::runtime::Runtime, RunError> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| RunError::Setup(format!("could not start a runtime: {e}")))
}

/// What a failed statement says, in the server's words when it has them.
fn message(e: &tokio_postgres::Error) -> String {
    match e.as_db_error() {
        Some(db) => format!("{} (SQLSTATE {})", db.message(), db.code().code()),
        None => {
            let source = std::error::Error::source(e).map(|s| format!(": {s}"));
            format!("{e}{}", source.unwrap_or_default())
        }
    }
}
