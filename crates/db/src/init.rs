//! `dyno db init`: pgbench's four tables, with pgbench's schema and row
//! counts, so that pgbench runs on a database dyno made and dyno on one
//! pgbench made. The steps are pgbench's `-I` letters, `dtgvp` by
//! default: drop, create (unlogged, and pgbench_accounts partitioned, when
//! asked), load (with `COPY` in the transaction that truncated the tables,
//! so that `FREEZE` spares the first vacuum a pass; or on the server with
//! `G`), vacuum and analyse, primary keys, and the foreign keys with `f`.

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

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InitSettings {
    pub scale: u32,
    /// Percent of each page filled by the load (10–100), leaving room for
    /// updates on the same page.
    pub fillfactor: u8,
    /// The steps, in the order they run (pgbench's `-I`): by default
    /// drop, create, load, vacuum, primary keys (`dtgvp`).
    pub steps: Vec<Step>,
    /// `CREATE UNLOGGED TABLE`: no WAL, lost in a crash.
    pub unlogged: bool,
    /// pgbench_accounts split into this many partitions of `aid` (0: not
    /// partitioned), by `partition_method`.
    pub partitions: u32,
    pub partition_method: PartitionMethod,
}

/// How `--partitions` splits pgbench_accounts, as pgbench's
/// `--partition-method`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PartitionMethod {
    /// Consecutive ranges of `aid`, the first from MINVALUE, the last to
    /// MAXVALUE.
    Range,
    /// `aid`'s hash modulo the partitions.
    Hash,
}

/// One step of `init`, by pgbench's `-I` letter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// `d`: drop the tables.
    Drop,
    /// `t`: create them.
    Create,
    /// `g`: generate the rows here and send them with COPY.
    Load,
    /// `G`: generate the rows on the server (INSERT … generate_series).
    ServerLoad,
    /// `v`: vacuum and analyse.
    Vacuum,
    /// `p`: the primary keys.
    PrimaryKeys,
    /// `f`: the foreign keys.
    ForeignKeys,
}

impl Step {
    pub fn name(self) -> &'static str {
        match self {
            Step::Drop => "drop tables",
            Step::Create => "create tables",
            Step::Load => "load (COPY)",
            Step::ServerLoad => "load (server-side)",
            Step::Vacuum => "vacuum analyze",
            Step::PrimaryKeys => "primary keys",
            Step::ForeignKeys => "foreign keys",
        }
    }

    /// pgbench's `-I` steps (`dtgvp`, `dtGvpf` …), in order; a letter
    /// that is none is an error that lists them. Spaces are skipped, as
    /// pgbench skips them.
    pub fn parse_all(letters: &str) -> Result<Vec<Step>, String> {
        let mut out = Vec::new();
        for c in letters.chars().filter(|c| !c.is_whitespace()) {
            out.push(match c {
                'd' => Step::Drop,
                't' => Step::Create,
                'g' => Step::Load,
                'G' => Step::ServerLoad,
                'v' => Step::Vacuum,
                'p' => Step::PrimaryKeys,
                'f' => Step::ForeignKeys,
                other => {
                    return Err(format!(
                        "-I: '{other}' is no initialization step; the steps are d (drop), t (create tables), g (load with COPY), G (load on the server), v (vacuum), p (primary keys), f (foreign keys), e.g. -I dtgvp"
                    ));
                }
            });
        }
        if out.is_empty() {
            return Err("-I needs at least one step, e.g. -I dtgvp".into());
        }
        Ok(out)
    }
}

/// pgbench's default steps.
pub const DEFAULT_STEPS: &str = "dtgvp";

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
        if u64::from(self.partitions) > u64::from(self.scale) * ACCOUNTS {
            return Err(format!(
                "--partitions {} is more than the {} accounts of scale {}: give at most one partition per account",
                self.partitions,
                u64::from(self.scale) * ACCOUNTS,
                self.scale
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
    let scale = u64::from(settings.scale);
    let accounts = scale * ACCOUNTS;
    let mut steps = Vec::new();
    for &step in &settings.steps {
        let started = Instant::now();
        let statements = match step {
            Step::Drop => format!("DROP TABLE IF EXISTS {}", TABLES.join(", ")),
            Step::Create => create_tables(&settings),
            Step::Load => {
                load(client, &settings, &mut progress).await?;
                String::new()
            }
            Step::ServerLoad => {
                progress(0, accounts);
                format!(
                    "BEGIN; TRUNCATE {tables};
                     INSERT INTO pgbench_branches (bid, bbalance) SELECT bid, 0 FROM generate_series(1, {branches}) AS bid;
                     INSERT INTO pgbench_tellers (tid, bid, tbalance) SELECT tid, (tid - 1) / {TELLERS} + 1, 0 FROM generate_series(1, {tellers}) AS tid;
                     INSERT INTO pgbench_accounts (aid, bid, abalance, filler) SELECT aid, (aid - 1) / {ACCOUNTS} + 1, 0, '' FROM generate_series(1, {accounts}) AS aid;
                     COMMIT;",
                    tables = TABLES.join(", "),
                    branches = scale * BRANCHES,
                    tellers = scale * TELLERS,
                )
            }
            Step::Vacuum => {
                // VACUUM runs outside a transaction block: one at a time.
                for table in TABLES {
                    client
                        .batch_execute(&format!("VACUUM ANALYZE {table}"))
                        .await
                        .map_err(sql(step))?;
                }
                String::new()
            }
            Step::PrimaryKeys => "ALTER TABLE pgbench_branches ADD PRIMARY KEY (bid);
                 ALTER TABLE pgbench_tellers ADD PRIMARY KEY (tid);
                 ALTER TABLE pgbench_accounts ADD PRIMARY KEY (aid);"
                .to_owned(),
            Step::ForeignKeys => "ALTER TABLE pgbench_tellers ADD CONSTRAINT pgbench_tellers_bid_fkey FOREIGN KEY (bid) REFERENCES pgbench_branches;
                 ALTER TABLE pgbench_accounts ADD CONSTRAINT pgbench_accounts_bid_fkey FOREIGN KEY (bid) REFERENCES pgbench_branches;
                 ALTER TABLE pgbench_history ADD CONSTRAINT pgbench_history_bid_fkey FOREIGN KEY (bid) REFERENCES pgbench_branches;
                 ALTER TABLE pgbench_history ADD CONSTRAINT pgbench_history_tid_fkey FOREIGN KEY (tid) REFERENCES pgbench_tellers;
                 ALTER TABLE pgbench_history ADD CONSTRAINT pgbench_history_aid_fkey FOREIGN KEY (aid) REFERENCES pgbench_accounts;"
                .to_owned(),
        };
        if !statements.is_empty() {
            client.batch_execute(&statements).await.map_err(sql(step))?;
        }
        if step == Step::ServerLoad {
            progress(accounts, accounts);
        }
        steps.push((step, started.elapsed()));
    }
    Ok(InitOutcome {
        steps,
        accounts,
        server_version,
    })
}

/// The four tables' `CREATE`, pgbench's schema: unlogged, and
/// pgbench_accounts partitioned, when the settings say so.
fn create_tables(settings: &InitSettings) -> String {
    let ff = settings.fillfactor;
    let aid = if settings.scale >= BIGINT_SCALE {
        "bigint"
    } else {
        "int"
    };
    let create = if settings.unlogged {
        "CREATE UNLOGGED TABLE"
    } else {
        "CREATE TABLE"
    };
    let n = settings.partitions;
    let mut out = format!(
        "{create} pgbench_history (tid int, bid int, aid {aid}, delta int, mtime timestamp, filler char(22));
         {create} pgbench_tellers (tid int NOT NULL, bid int, tbalance int, filler char(84)) WITH (fillfactor = {ff});
         {create} pgbench_branches (bid int NOT NULL, bbalance int, filler char(88)) WITH (fillfactor = {ff});\n"
    );
    if n == 0 {
        out.push_str(&format!(
            "{create} pgbench_accounts (aid {aid} NOT NULL, bid int, abalance int, filler char(84)) WITH (fillfactor = {ff});"
        ));
        return out;
    }
    // A partitioned table has no storage of its own, so no fillfactor:
    // its partitions have it. It is unlogged with them, as pgbench makes
    // it (a logged one could not be referenced by the unlogged history).
    let method = match settings.partition_method {
        PartitionMethod::Range => "RANGE",
        PartitionMethod::Hash => "HASH",
    };
    out.push_str(&format!(
        "{create} pgbench_accounts (aid {aid} NOT NULL, bid int, abalance int, filler char(84)) PARTITION BY {method} (aid);\n"
    ));
    let accounts = u64::from(settings.scale) * ACCOUNTS;
    let part = accounts.div_ceil(u64::from(n));
    for p in 1..=u64::from(n) {
        let bounds = match settings.partition_method {
            PartitionMethod::Range => {
                let from = if p == 1 {
                    "MINVALUE".to_owned()
                } else {
                    ((p - 1) * part + 1).to_string()
                };
                let to = if p == u64::from(n) {
                    "MAXVALUE".to_owned()
                } else {
                    (p * part + 1).to_string()
                };
                format!("FROM ({from}) TO ({to})")
            }
            PartitionMethod::Hash => format!("WITH (MODULUS {n}, REMAINDER {})", p - 1),
        };
        out.push_str(&format!(
            "{create} pgbench_accounts_{p} PARTITION OF pgbench_accounts FOR VALUES {bounds} WITH (fillfactor = {ff});\n"
        ));
    }
    out
}

/// The `g` step: every table's rows, generated here and sent with COPY
/// in the transaction that truncated the tables (so that FREEZE spares the
/// first vacuum a pass; a partitioned table takes no FREEZE).
async fn load(
    client: &Client,
    settings: &InitSettings,
    progress: &mut impl FnMut(u64, u64),
) -> Result<(), InitError> {
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
        ("pgbench_branches", true),
        scale * BRANCHES,
        |i, out| {
            let _ = writeln!(out, "{i}\t0\t\\N");
        },
        |_| {},
    )
    .await?;
    copy(
        client,
        ("pgbench_tellers", true),
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
        ("pgbench_accounts", settings.partitions == 0),
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
    Ok(())
}

/// Loads rows `1..=rows` of `table`, each written by `row`, with `COPY`,
/// calling `done(rows so far)` after each chunk.
async fn copy(
    client: &Client,
    (table, freeze): (&str, bool),
    rows: u64,
    row: impl Fn(u64, &mut Vec<u8>),
    mut done: impl FnMut(u64),
) -> Result<(), InitError> {
    let sink = client
        .copy_in::<_, bytes::Bytes>(&format!(
            "COPY {table} FROM STDIN (FREEZE {})",
            if freeze { "ON" } else { "OFF" }
        ))
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

impl InitOutcome {
    /// The line `dyno db init` ends with: `dyno db init: scale 10
    /// (1,000,000 accounts) on TARGET, PostgreSQL 15.4: done in 3.20 s
    /// (drop 0.01 s, …)`.
    pub fn summary(&self, scale: u32, target: &Target, took: Duration) -> String {
        let steps: Vec<String> = self
            .steps
            .iter()
            .map(|(step, took)| format!("{} {:.2} s", step.name(), took.as_secs_f64()))
            .collect();
        format!(
            "dyno db init: scale {scale} ({} accounts) on {target}, PostgreSQL {}: done in {:.2} s ({})\n",
            grouped(self.accounts),
            self.server_version,
            took.as_secs_f64(),
            steps.join(", ")
        )
    }
}

/// The loading progress: `loading pgbench_accounts: 200,000 of 1,000,000
/// rows (20%)`.
pub fn loading_line(done: u64, total: u64) -> String {
    format!(
        "loading pgbench_accounts: {} of {} rows ({:.0}%)",
        grouped(done),
        grouped(total),
        100.0 * done as f64 / total.max(1) as f64
    )
}

/// 1234567 as "1,234,567".
fn grouped(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}
