//! What `dyno doctor db` reads from a server: the settings that decide
//! whether a database benchmark can run and what its figures mean.

use crate::target::{Target, TargetError};

/// The four tables pgbench's built-in scripts use.
pub const PGBENCH_TABLES: [&str; 4] = [
    "pgbench_accounts",
    "pgbench_branches",
    "pgbench_history",
    "pgbench_tellers",
];

/// A server's facts, as read over one connection.
#[derive(Debug, Clone, Default)]
pub struct Facts {
    pub version: String,
    pub max_connections: u32,
    /// Connections kept for superusers (and `pg_use_reserved_connections`).
    pub reserved_connections: u32,
    /// Other sessions connected now.
    pub other_connections: u32,
    pub fsync: String,
    pub synchronous_commit: String,
    /// Which of [`PGBENCH_TABLES`] exist.
    pub tables: Vec<String>,
    /// Rows of pgbench_branches, when it exists.
    pub scale: Option<i64>,
}

/// Connects to `target` and reads its [`Facts`].
pub fn inspect(target: &Target) -> Result<Facts, TargetError> {
    let runtime = target.runtime()?;
    runtime.block_on(async {
        let client = target.connect().await?;
        let failed = |e: tokio_postgres::Error| TargetError::Connect {
            target: target.to_string(),
            why: e
                .as_db_error()
                .map_or_else(|| e.to_string(), |d| d.message().to_owned()),
        };
        let row = client
            .query_one(
                "SELECT current_setting('server_version'), \
                 current_setting('max_connections')::int, \
                 current_setting('superuser_reserved_connections')::int \
                   + coalesce((SELECT setting::int FROM pg_settings WHERE name = 'reserved_connections'), 0), \
                 (SELECT count(*)::int FROM pg_stat_activity WHERE backend_type = 'client backend' AND pid <> pg_backend_pid()), \
                 current_setting('fsync'), \
                 current_setting('synchronous_commit')",
                &[],
            )
            .await
            .map_err(failed)?;
        let mut facts = Facts {
            version: row.get(0),
            max_connections: row.get::<_, i32>(1).max(0) as u32,
            reserved_connections: row.get::<_, i32>(2).max(0) as u32,
            other_connections: row.get::<_, i32>(3).max(0) as u32,
            fsync: row.get(4),
            synchronous_commit: row.get(5),
            ..Facts::default()
        };
        for table in PGBENCH_TABLES {
            if table_exists(&client, table).await.map_err(failed)? {
                facts.tables.push(table.to_owned());
            }
        }
        if facts.tables.iter().any(|t| t == "pgbench_branches") {
            facts.scale = client
                .query_one("SELECT count(*) FROM pgbench_branches", &[])
                .await
                .ok()
                .map(|r| r.get(0));
        }
        Ok(facts)
    })
}

/// Whether the server has a table called `table` (on its search path).
pub(crate) async fn table_exists(
    client: &tokio_postgres::Client,
    table: &str,
) -> Result<bool, tokio_postgres::Error> {
    let row = client
        .query_one("SELECT to_regclass($1) IS NOT NULL", &[&table])
        .await?;
    Ok(row.get(0))
}
