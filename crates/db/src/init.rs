//! `dyno db init`: pgbench's four tables, with pgbench's schema and row
//! counts, so that pgbench runs on a database dyno made and dyno on one
//! pgbench made. The rows go in with `COPY` in the transaction that
//! truncated the tables (so `FREEZE` spares the first vacuum a pass), the
//! primary keys are built after the load, then every table is vacuumed and
//! analysed.

use std::io::Write;
use std::time::{Duration, Instant};

use futures_util::SinkExt;
use tokio_postgres::Client;

use crate::target::{Target, TargetError};

/// Rows per unit of scale, as pgbench has them.
pub const BRANCHES: u64 = 1;
pub const TELLERS: u64 = 10;
pub const ACCOUNTS: u64 = 100_000;

/// The tables, in the order pgbench drops them.
pub const TABLES: [&str; 4] = [
    "pgbench_accounts",
    "pgbench_branches",
    "pgbench_history",
    "pgbench_tellers",
];

/// From this scale on, account numbers pass 2^31 and need `bigint`.
const BIGINT_SCALE: u32 = 20_000;
/// Bytes of `COPY` data sent at a time.
const CHUNK: usize = 256 << 10;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct InitSettings {
    pub scale: u32,
    /// Percent of each page filled by the load (10–100), leaving room for
    /// updates on the same page.
    pub fillfactor: u8,
    pub foreign_keys: bool,
}

/// The steps, in order, and what each took.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    Drop,
    Create,
    Load,
    Vacuum,
    PrimaryKeys,
    ForeignKeys,
}

impl Step {
    pub fn name(self) -> &'static str {
        match self {
            Step::Drop => "drop tables",
            Step::Create => "create tables",
            Step::Load => "load (COPY)",
            Step::Vacuum => "vacuum analyze",
            Step::PrimaryKeys => "primary keys",
            Step::ForeignKeys => "foreign keys",
        }
    }
}

/// What `init` did.
#[derive(Debug, Clone)]
pub struct InitOutcome {
    pub steps: Vec<(Step, Duration)>,
    pub accounts: u64,
    pub server_version: String,
}

/// Why init failed.
#[derive(Debug, thiserror::Error)]
pub enum InitError {
    #[error(transparent)]
    Target(#[from] TargetError),
    #[error("{step} failed: {why}")]
    Sql { step: &'static str, why: String },
}

impl InitSettings {
    /// A clear message for a value out of range.
    pub fn validate(&self) -> Result<(), String> {
        if self.scale == 0 {
            return Err("--scale must be at least 1 (100,000 accounts per unit)".into());
        }
        if !(10..=100).contains(&self.fillfactor) {
            return Err(format!(
                "--fillfactor is {}, but PostgreSQL takes 10 to 100 (percent of each page the load fills)",
                self.fillfactor
            ));
        }
        Ok(())
    }
}

/// Makes the tables on `target`, calling `progress(accounts_loaded,
/// accounts_total)` while loading.
pub fn init(
    target: &Target,
    settings: InitSettings,
    progress: impl FnMut(u64, u64),
) -> Result<InitOutcome, InitError> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| InitError::Sql {
            step: "start",
            why: e.to_string(),
        })?;
    runtime.block_on(async {
        let client = target.connect().await?;
        init_on(&client, settings, progress).await
    })
}

fn sql(step: Step) -> impl Fn(tokio_postgres::Error) -> InitError {
    move |e| InitError::Sql {
        step: step.name(),
        why: e
            .as_db_error()
            .map_or_else(|| e.to_string(), |d| d.message().to_owned()),
    }
}

async fn init_on(
    client: &Client,
    settings: InitSettings,
    mut progress: impl FnMut(u64, u64),
) -> Result<InitOutcome, InitError> {
    let server_version = client
        .query_one("SHOW server_version", &[])
        .await
        .map_err(sql(Step::Drop))?
        .get::<_, String>(0);
    let mut steps = Vec::new();
    let mut timed = |step: Step, started: Instant| steps.push((step, started.elapsed()));

    let started = Instant::now();
    client
        .batch_execute(&format!("DROP TABLE IF EXISTS {}", TABLES.join(", ")))
        .await
        .map_err(sql(Step::Drop))?;
    timed(Step::Drop, started);

    let started = Instant::now();
    let ff = settings.fillfactor;
    let aid = if settings.scale >= BIGINT_SCALE {
        "bigint"
    } else {
        "int"
    };
    client
        .batch_execute(&format!(
            "CREATE TABLE pgbench_history (tid int, bid int, aid {aid}, delta int, mtime timestamp, filler char(22));
             CREATE TABLE pgbench_tellers (tid int NOT NULL, bid int, tbalance int, filler char(84)) WITH (fillfactor = {ff});
             CREATE TABLE pgbench_accounts (aid {aid} NOT NULL, bid int, abalance int, filler char(84)) WITH (fillfactor = {ff});
             CREATE TABLE pgbench_branches (bid int NOT NULL, bbalance int, filler char(88)) WITH (fillfactor = {ff});"
        ))
        .await
        .map_err(sql(Step::Create))?;
    timed(Step::Create, started);

    let started = Instant::now();
    let scale = u64::from(settings.scale);
    let accounts = scale * ACCOUNTS;
    client
        .batch_execute(&format!("BEGIN; TRUNCATE {}", TABLES.join(", ")))
        .await
        .map_err(sql(Step::Load))?;
    // Balances start at 0; the accounts' fillers are empty (blank-padded
    // to 84 bytes) and the others' NULL, as pgbench loads them, so the
    // tables have pgbench's sizes.
    copy(
        client,
        "pgbench_branches",
        scale * BRANCHES,
        |i, out| {
            let _ = writeln!(out, "{i}\t0\t\\N");
        },
        |_| {},
    )
    .await?;
    copy(
        client,
        "pgbench_tellers",
        scale * TELLERS,
        |i, out| {
            let _ = writeln!(out, "{i}\t{}\t0\t\\N", (i - 1) / TELLERS + 1);
        },
        |_| {},
    )
    .await?;
    progress(0, accounts);
    copy(
        client,
        "pgbench_accounts",
        accounts,
        |i, out| {
            let _ = writeln!(out, "{i}\t{}\t0\t", (i - 1) / ACCOUNTS + 1);
        },
        |done| progress(done, accounts),
    )
    .await?;
    client
        .batch_execute("COMMIT")
        .await
        .map_err(sql(Step::Load))?;
    timed(Step::Load, started);

    let started = Instant::now();
    for table in TABLES {
        client
            .batch_execute(&format!("VACUUM ANALYZE {table}"))
            .await
            .map_err(sql(Step::Vacuum))?;
    }
    timed(Step::Vacuum, started);

    let started = Instant::now();
    client
        .batch_execute(
            "ALTER TABLE pgbench_branches ADD PRIMARY KEY (bid);
             ALTER TABLE pgbench_tellers ADD PRIMARY KEY (tid);
             ALTER TABLE pgbench_accounts ADD PRIMARY KEY (aid);",
        )
        .await
        .map_err(sql(Step::PrimaryKeys))?;
    timed(Step::PrimaryKeys, started);

    if settings.foreign_keys {
        let started = Instant::now();
        client
            .batch_execute(
                "ALTER TABLE pgbench_tellers ADD CONSTRAINT pgbench_tellers_bid_fkey FOREIGN KEY (bid) REFERENCES pgbench_branches;
                 ALTER TABLE pgbench_accounts ADD CONSTRAINT pgbench_accounts_bid_fkey FOREIGN KEY (bid) REFERENCES pgbench_branches;
                 ALTER TABLE pgbench_history ADD CONSTRAINT pgbench_history_bid_fkey FOREIGN KEY (bid) REFERENCES pgbench_branches;
                 ALTER TABLE pgbench_history ADD CONSTRAINT pgbench_history_tid_fkey FOREIGN KEY (tid) REFERENCES pgbench_tellers;
                 ALTER TABLE pgbench_history ADD CONSTRAINT pgbench_history_aid_fkey FOREIGN KEY (aid) REFERENCES pgbench_accounts;",
            )
            .await
            .map_err(sql(Step::ForeignKeys))?;
        timed(Step::ForeignKeys, started);
    }
    Ok(InitOutcome {
        steps,
        accounts,
        server_version,
    })
}

/// Loads rows `1..=rows` of `table`, each written by `row`, with `COPY`,
/// calling `done(rows so far)` after each chunk.
async fn copy(
    client: &Client,
    table: &str,
    rows: u64,
    row: impl Fn(u64, &mut Vec<u8>),
    mut done: impl FnMut(u64),
) -> Result<(), InitError> {
    let sink = client
        .copy_in::<_, bytes::Bytes>(&format!("COPY {table} FROM STDIN (FREEZE ON)"))
        .await
        .map_err(sql(Step::Load))?;
    let mut sink = std::pin::pin!(sink);
    let mut buffer = Vec::with_capacity(CHUNK + 256);
    for i in 1..=rows {
        row(i, &mut buffer);
        if buffer.len() >= CHUNK || i == rows {
            let chunk = bytes::Bytes::from(std::mem::replace(
                &mut buffer,
                Vec::with_capacity(CHUNK + 256),
            ));
            sink.send(chunk).await.map_err(sql(Step::Load))?;
            done(i);
        }
    }
    sink.finish().await.map_err(sql(Step::Load))?;
    Ok(())
}
