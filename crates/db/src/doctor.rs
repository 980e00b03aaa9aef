//! `dyno doctor db`'s checks of the PostgreSQL server itself, as
//! findings of the doctor's checklist ([`dyno_env::doctor`]): reachable,
//! max_connections against the clients, fsync, synchronous_commit and
//! pgbench's tables.

use dyno_env::doctor::{Finding, Kind, Verdict};

use crate::Target;

const DB: &[Kind] = &[Kind::Db];

/// `doctor db`'s checks of the server itself: reachable, max_connections
/// against `clients`, fsync, synchronous_commit, pgbench's tables.
pub fn server(conninfo: Option<&str>, clients: u32) -> Vec<Finding> {
    let reach = |verdict, found: String, why, fix: Vec<String>| {
        Finding::judged_elsewhere(
            "db_reachable",
            "PostgreSQL server",
            DB,
            verdict,
            found,
            "reachable, as dyno db run will reach it".into(),
            why,
            fix,
        )
    };
    let named = conninfo.is_some() || crate::quick::configured(|v| std::env::var(v).ok());
    let target = match Target::from_env(conninfo.unwrap_or("")) {
        Ok(t) => t,
        Err(e) => {
            return vec![reach(
                Verdict::Blocks,
                e.to_string(),
                "dyno db run cannot use this connection string or environment",
                vec!["correct the connection string or the environment as the message says".into()],
            )];
        }
    };
    let facts = match crate::inspect::inspect(&target) {
        Ok(facts) => facts,
        Err(e) if !named => {
            return vec![reach(
                Verdict::Unknown,
                format!("no server named, and none at libpq's default ({e})"),
                "give the server: dyno doctor db CONNINFO, or set PGHOST, PGPORT and PGDATABASE",
                Vec::new(),
            )];
        }
        Err(e) => {
            return vec![reach(
                Verdict::Blocks,
                e.to_string(),
                "dyno db run would fail to connect in the same way",
                vec![
                    "start the server, or name the one to use: dyno doctor db CONNINFO (or PGHOST, PGPORT, PGDATABASE, PGUSER, PGPASSWORD)".into(),
                ],
            )];
        }
    };
    let mut out = vec![reach(
        Verdict::Ok,
        format!("PostgreSQL {} at {target}", facts.version),
        "",
        Vec::new(),
    )];
    // Each client is a connection; the server keeps some for superusers,
    // and other sessions hold theirs.
    let usable = facts
        .max_connections
        .saturating_sub(facts.reserved_connections);
    let free = usable.saturating_sub(facts.other_connections);
    let needed = u64::from(clients)
        + u64::from(facts.reserved_connections)
        + u64::from(facts.other_connections);
    let (verdict, why) = if clients > usable {
        (
            Verdict::Blocks,
            "each client is a connection: the server refuses those beyond max_connections (less the superusers' reserve), and the run stops with \"too many clients\"",
        )
    } else if clients > free {
        (
            Verdict::Advice,
            "each client is a connection, and other sessions hold some of them now: the run may be refused connections unless they close",
        )
    } else {
        (Verdict::Ok, "")
    };
    out.push(Finding::judged_elsewhere(
        "db_max_connections",
        "max_connections",
        DB,
        verdict,
        format!(
            "{} ({} reserved, {} in use by other sessions)",
            facts.max_connections, facts.reserved_connections, facts.other_connections
        ),
        format!(
            "at least {needed} for -c {clients} ({clients} clients, {} reserved, {} in use by other sessions)",
            facts.reserved_connections, facts.other_connections
        ),
        why,
        // The fix sets what is wanted with ten to spare for sessions
        // that come and go, and never below PostgreSQL's default.
        vec![format!(
            "ALTER SYSTEM SET max_connections = {}; then restart the server (the {needed} wanted, and 10 to spare)",
            (needed + 10).max(100)
        )],
    ));
    out.push(durability(
        "db_fsync",
        "fsync",
        &facts.fsync,
        facts.fsync == "on",
        "with fsync off, a commit never waits for the disk: write transactions run far faster than on a durable server, and a crash can corrupt the cluster; fine to study the CPU, not to compare with production or to publish",
    ));
    out.push(durability(
        "db_synchronous_commit",
        "synchronous_commit",
        &facts.synchronous_commit,
        matches!(facts.synchronous_commit.as_str(), "on" | "remote_apply"),
        "below on, a commit returns before its WAL is flushed (off, local) or applied on a standby (remote_write): write tps is higher and latency lower than on a durable setup, so say so beside the figures",
    ));
    let missing: Vec<&str> = crate::inspect::PGBENCH_TABLES
        .iter()
        .copied()
        .filter(|t| !facts.tables.iter().any(|have| have == t))
        .collect();
    let found = if missing.is_empty() {
        format!("all four, scale {}", facts.scale.unwrap_or(0))
    } else {
        format!("missing {}", missing.join(", "))
    };
    out.push(Finding::judged_elsewhere(
        "db_pgbench_tables",
        "pgbench tables",
        DB,
        if missing.is_empty() {
            Verdict::Ok
        } else {
            Verdict::Advice
        },
        found,
        "pgbench_accounts, _branches, _history and _tellers".into(),
        "the built-in scripts (tpcb-like, simple-update, select-only) need them; scripts of your own (-f) may not",
        vec![format!("dyno db init {}", conninfo.unwrap_or("")).trim_end().to_owned()],
    ));
    out
}

/// The finding on `setting`, which a durable server has `on`: found as
/// `value`, advice with `why` unless `durable`, and the fix that turns it
/// on.
fn durability(
    id: &'static str,
    setting: &'static str,
    value: &str,
    durable: bool,
    why: &'static str,
) -> Finding {
    Finding::judged_elsewhere(
        id,
        setting,
        DB,
        if durable {
            Verdict::Ok
        } else {
            Verdict::Advice
        },
        value.to_owned(),
        "on".into(),
        why,
        vec![format!(
            "ALTER SYSTEM SET {setting} = on; SELECT pg_reload_conf();"
        )],
    )
}
