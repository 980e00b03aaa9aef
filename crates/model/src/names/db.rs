//! The names of the metrics a `db` run writes.
//!
//! Its latency, measured window, client CPU, per-second p99 and stages are
//! [`super::common`]'s; a figure of one script carries the label
//! [`super::label::SCRIPT`], a failure or retry count of one SQLSTATE
//! [`super::label::SQLSTATE`].

/// Committed transactions per second over the measured window, the
/// connections' time left out (pgbench's "without initial connection
/// time"): the run's headline.
pub const TRANSACTIONS_PER_SEC: &str = "transactions_per_sec";
/// The same commits over a window that includes connecting (pgbench's
/// second tps line); absent from a run merged from segments.
pub const TRANSACTIONS_PER_SEC_WITH_CONNECTIONS: &str = "transactions_per_sec_with_connections";
/// Open model: the rate asked for (`-R`), in transactions per second.
pub const REQUESTED_TRANSACTIONS_PER_SEC: &str = "requested_transactions_per_sec";
/// Transactions that committed.
pub const TRANSACTIONS: &str = "transactions";
/// Transactions given up after their retries.
pub const FAILED_TRANSACTIONS: &str = "failed_transactions";
/// Retries of a transaction, all of them.
pub const RETRIES: &str = "retries";
/// Transactions retried at least once, committed or failed in the end
/// (pgbench's "number of transactions retried").
pub const RETRIED_TRANSACTIONS: &str = "retried_transactions";
/// Clients stopped by an error that is not retried.
pub const ABORTED_CLIENTS: &str = "aborted_clients";
/// Transactions under way when the run was cut at its deadline (or
/// stopped); written only when there were any.
pub const UNFINISHED_TRANSACTIONS: &str = "unfinished_transactions";
/// Open model: transactions due in the measured window that never started
/// (every client was busy until the end); written only when there were any.
pub const DROPPED_SENDS: &str = "dropped_sends";
/// With a latency limit: committed transactions slower than it.
pub const LATE_TRANSACTIONS: &str = "late_transactions";
/// Open model with a latency limit: transactions skipped for being later
/// than the limit before they started.
pub const SKIPPED_TRANSACTIONS: &str = "skipped_transactions";
/// The time it took to connect every client (one value, not a
/// distribution).
pub const CONNECT: &str = "connect_ns";
/// Open model: from each transaction's due time to its real start.
pub const SCHEDULE_LAG: &str = "schedule_lag_ns";
/// With `-C` (a connection per transaction): the connection time of each
/// transaction.
pub const RECONNECT: &str = "reconnect_ns";
/// With `-r`: the latency of one command of a script (labels
/// [`super::label::SCRIPT`], [`super::label::LINE`] and
/// [`super::label::COMMAND`]).
pub const STATEMENT_LATENCY: &str = "statement_latency_ns";
/// The client threads' CPU time per committed transaction; written only
/// when one committed.
pub const CLIENT_CPU_PER_TRANSACTION: &str = "client_cpu_per_transaction_ns";
/// Each second's commits, as samples (`dyno_load::timeline`).
pub const TIMELINE_TRANSACTIONS_PER_SEC: &str = "timeline_transactions_per_sec";
