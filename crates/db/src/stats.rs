//! `--pg-stats`: PostgreSQL's own statistics views read during a run, on
//! a connection of their own — `pg_stat_database` (the run's database),
//! `pg_stat_bgwriter`, `pg_stat_checkpointer` (PostgreSQL 17 and later)
//! and `pg_stat_wal` as counters, and `pg_stat_activity` as a sample of
//! what each of the run's sessions was doing (running, waiting on a lock,
//! on I/O, on the client).
//!
//! Every reading is one simple query of several statements, which the
//! server runs as one transaction: the probe's own commits are counted
//! (`pg/probe/xacts`) so that they are left out of the run's, and its own
//! session is left out of the activity. The views' columns are read by
//! name, whatever the server's version has, into the keys
//! `pg/db/COLUMN`, `pg/bgwriter/COLUMN`, `pg/checkpointer/COLUMN` and
//! `pg/wal/COLUMN`; what they say of a run is
//! [`dyno_env::scrape::ScrapeSeries::findings`].

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use dyno_env::scrape::Scrape;
use dyno_env::watch::Probe;
use tokio_postgres::{Client, SimpleQueryMessage};

use crate::target::{Target, TargetError};

/// The counter views, by the short name their keys carry.
const VIEWS: [(&str, &str); 4] = [
    ("db", "pg_stat_database"),
    ("bgwriter", "pg_stat_bgwriter"),
    ("checkpointer", "pg_stat_checkpointer"),
    ("wal", "pg_stat_wal"),
];

/// Columns that are numbers but no counters.
const NOT_COUNTERS: [&str; 2] = ["datid", "numbackends"];

/// How long the last reading waits for the load's sessions to end, and
/// so to publish what they did.
const SETTLE: Duration = Duration::from_secs(2);

/// How many activity samples per `--watch-interval`: a session's state is
/// a snapshot, so more of them give its shares more precisely.
const SAMPLES_PER_INTERVAL: u32 = 5;

/// A PostgreSQL server's statistics, as the watcher reads them.
pub struct PgStats {
    runtime: tokio::runtime::Runtime,
    client: Client,
    url: String,
    role: String,
    /// The statements of one reading, in order: `(key prefix, SQL)`;
    /// the activity's prefix is empty.
    statements: Vec<(&'static str, String)>,
    query: String,
    timeout: Duration,
    probes: u64,
    samples: u64,
    sessions: u64,
    hidden: u64,
    waits: BTreeMap<String, u64>,
    notes: Vec<String>,
    /// How many of the load's sessions are left (when they are known).
    remaining: Option<String>,
}

impl std::fmt::Debug for PgStats {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PgStats")
            .field("url", &self.url)
            .field("role", &self.role)
            .field("query", &self.query)
            .finish_non_exhaustive()
    }
}

/// The name the probe's own session goes by in `pg_stat_activity`.
pub const PROBE_NAME: &str = "dyno pg-stats";

impl PgStats {
    /// Connects to `target` and checks which views its role may read (a
    /// view it may not is left out, with a note that says which grant
    /// would let it); the activity counted is that of the sessions named
    /// `sessions` (`application_name`), or of every session of the
    /// database when `None`. An unreachable server is `Err`.
    pub fn connect(target: &Target, sessions: Option<&str>) -> Result<PgStats, TargetError> {
        let runtime = target.runtime()?;
        let probe = target.named(PROBE_NAME);
        let client = runtime.block_on(probe.connect())?;
        let failed = |e: tokio_postgres::Error| TargetError::Connect {
            target: target.to_string(),
            why: message(&e),
        };
        let role: String = runtime
            .block_on(client.query_one("SELECT current_user::text", &[]))
            .map_err(failed)?
            .get(0);
        // Which views this version has (pg_stat_checkpointer from 17,
        // pg_stat_wal from 14) and this role may read, asked without an
        // error: a failed statement would count as a rollback of the run.
        let names: Vec<&str> = VIEWS
            .iter()
            .map(|(_, v)| *v)
            .chain(["pg_stat_activity"])
            .collect();
        let rows = runtime
            .block_on(client.query(
                "SELECT v, to_regclass(v) IS NOT NULL, \
                 to_regclass(v) IS NOT NULL AND has_table_privilege(v, 'SELECT') \
                 FROM unnest($1::text[]) AS v",
                &[&names],
            ))
            .map_err(failed)?;
        let readable = |view: &str| {
            rows.iter()
                .find(|r| r.get::<_, &str>(0) == view)
                .map(|r| (r.get::<_, bool>(1), r.get::<_, bool>(2)))
                .unwrap_or((false, false))
        };
        let mut notes = Vec::new();
        let mut statements = Vec::new();
        for (key, view) in VIEWS {
            match readable(view) {
                (true, true) => {
                    let sql = if key == "db" {
                        format!("SELECT * FROM {view} WHERE datname = current_database()")
                    } else {
                        format!("SELECT * FROM {view}")
                    };
                    statements.push((key, sql));
                }
                (true, false) => notes.push(format!(
                    "{view} could not be read (permission denied), so its figures are missing: GRANT pg_read_all_stats TO {role}, or GRANT SELECT ON {view} TO {role}"
                )),
                (false, _) => {}
            }
        }
        let mut activity = String::from(
            "SELECT state, wait_event_type, wait_event FROM pg_stat_activity \
             WHERE backend_type = 'client backend' AND datname = current_database() \
             AND pid <> pg_backend_pid()",
        );
        let remaining = sessions.map(|name| {
            let only = format!(" AND application_name = '{}'", name.replace('\'', "''"));
            activity.push_str(&only);
            format!(
                "SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'client backend' \
                 AND datname = current_database() AND pid <> pg_backend_pid(){only}"
            )
        });
        if readable("pg_stat_activity").1 {
            statements.push(("", activity));
        } else {
            notes.push(format!(
                "pg_stat_activity could not be read (permission denied), so the sessions' wait events are missing: GRANT SELECT ON pg_stat_activity TO {role}"
            ));
        }
        let query = statements
            .iter()
            .map(|(_, sql)| sql.as_str())
            .collect::<Vec<_>>()
            .join("; ");
        Ok(PgStats {
            runtime,
            client,
            url: target.url(),
            role,
            statements,
            query,
            timeout: Duration::from_secs(2),
            probes: 0,
            samples: 0,
            sessions: 0,
            hidden: 0,
            waits: BTreeMap::new(),
            notes,
            remaining,
        })
    }

    /// What a session was doing: `idle` (waiting for its client between
    /// transactions), `CPU` (running, no wait event), or the wait event
    /// as `Type:Event` (`Lock:transactionid`, `IO:WALSync`,
    /// `Client:ClientRead` in a transaction).
    fn doing(state: &str, kind: Option<&str>, event: Option<&str>) -> String {
        match (state, kind, event) {
            ("idle", _, _) => "idle".into(),
            (_, Some(kind), Some(event)) => format!("{kind}:{event}"),
            (_, Some(kind), None) => kind.into(),
            _ => "CPU".into(),
        }
    }
}

/// A server error's own message, else the client's.
fn message(e: &tokio_postgres::Error) -> String {
    e.as_db_error()
        .map_or_else(|| e.to_string(), |d| d.message().to_owned())
}

impl Probe for PgStats {
    fn url(&self) -> String {
        self.url.clone()
    }

    fn interval(&self, watch: Duration) -> Duration {
        (watch / SAMPLES_PER_INTERVAL).max(Duration::from_millis(20))
    }

    fn read(&mut self) -> Result<Scrape, String> {
        if self.statements.is_empty() {
            return Err("no statistics view could be read".into());
        }
        let sent = Instant::now();
        let answer = self.runtime.block_on(async {
            tokio::time::timeout(self.timeout, self.client.simple_query(&self.query)).await
        });
        let at = sent + sent.elapsed() / 2;
        let messages = match answer {
            Ok(Ok(m)) => m,
            Ok(Err(e)) => return Err(message(&e)),
            Err(_) => return Err(format!("no answer within {:?}", self.timeout)),
        };
        // The probe's transaction committed, whatever it read.
        self.probes += 1;
        let mut values = BTreeMap::new();
        let mut statement = 0;
        self.samples += 1;
        for m in &messages {
            let row = match m {
                SimpleQueryMessage::CommandComplete(_) => {
                    statement += 1;
                    continue;
                }
                SimpleQueryMessage::Row(row) => row,
                _ => continue,
            };
            let Some((prefix, _)) = self.statements.get(statement) else {
                continue;
            };
            if prefix.is_empty() {
                // A session of the activity: hidden from this role when
                // its state is.
                let Some(state) = row.get(0) else {
                    self.hidden += 1;
                    continue;
                };
                self.sessions += 1;
                *self
                    .waits
                    .entry(PgStats::doing(state, row.get(1), row.get(2)))
                    .or_default() += 1;
                continue;
            }
            for (i, column) in row.columns().iter().enumerate() {
                let name = column.name();
                if NOT_COUNTERS.contains(&name) {
                    continue;
                }
                if let Some(v) = row.get(i).and_then(|v| v.parse::<f64>().ok()) {
                    *values.entry(format!("pg/{prefix}/{name}")).or_insert(0.0) += v;
                }
            }
        }
        values.insert("pg/probe/xacts".into(), self.probes as f64);
        if self.statements.iter().any(|(p, _)| p.is_empty()) {
            values.insert("pg/activity/samples".into(), self.samples as f64);
            values.insert("pg/activity/sessions".into(), self.sessions as f64);
            for (event, n) in &self.waits {
                values.insert(format!("pg/activity/wait/{event}"), *n as f64);
            }
        }
        Ok(Scrape {
            at,
            values,
            skipped_lines: 0,
            clock: None,
        })
    }

    /// PostgreSQL publishes a session's counters about once a second,
    /// and the rest when the session ends: when the load's sessions are
    /// known (`dyno db run`'s), waits until they have gone (at most
    /// [`SETTLE`]), and reads then: the reading is placed at the stop and
    /// marked [`dyno_env::scrape::SETTLED`], as what the load had done by
    /// its end.
    fn last(&mut self) -> Result<Scrape, String> {
        let stopped = Instant::now();
        if let Some(count) = &self.remaining {
            while stopped.elapsed() < SETTLE {
                let left = self
                    .runtime
                    .block_on(self.client.query_one(count.as_str(), &[]))
                    .map(|row| row.get::<_, i64>(0));
                if !matches!(left, Ok(n) if n > 0) {
                    break;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
        }
        let mut reading = self.read()?;
        if self.remaining.is_some() {
            reading.at = stopped;
            reading.values.insert(dyno_env::scrape::SETTLED.into(), 1.0);
        }
        Ok(reading)
    }

    fn notes(&mut self) -> Vec<String> {
        let mut out = self.notes.clone();
        if self.hidden > 0 {
            out.push(format!(
                "{} of {} session samples belonged to other roles and were hidden from {} (their state and wait events are shown only to their own role, superusers and pg_read_all_stats): GRANT pg_read_all_stats TO {}",
                self.hidden,
                self.hidden + self.sessions,
                self.role,
                self.role
            ));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sessions_state_and_wait_event_name_what_it_was_doing() {
        assert_eq!(
            PgStats::doing("idle", Some("Client"), Some("ClientRead")),
            "idle"
        );
        assert_eq!(PgStats::doing("active", None, None), "CPU");
        assert_eq!(
            PgStats::doing("active", Some("Lock"), Some("transactionid")),
            "Lock:transactionid"
        );
        assert_eq!(
            PgStats::doing("idle in transaction", Some("Client"), Some("ClientRead")),
            "Client:ClientRead"
        );
    }
}
