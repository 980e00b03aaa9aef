//! The names of the metrics watching adds to any run: the watched server's
//! processes and cgroups (`--watch-pid`, `--watch-cgroup` …, labelled
//! [`label::WATCHED`] with their name, or unlabelled for the sum of
//! several), the target machine and PostgreSQL scraped over the measured
//! window (`--watch URL`, `--pg-stats`, labelled [`label::WATCHED`] with
//! the source), and this machine's own state while the run went on.
//!
//! [`label::WATCHED`]: super::label::WATCHED

// The watched server's processes and cgroups (dyno_env::watch), or an
// exporter's own process metrics.

/// The server's CPU in percent of one core.
pub const SERVER_CPU_PERCENT: &str = "server_cpu_percent";
/// The server's CPU time per operation (request or transaction).
pub const SERVER_CPU_PER_OP: &str = "server_cpu_per_op_ns";
/// The kernel's share of the server's CPU, in percent.
pub const SERVER_CPU_SYSTEM_PERCENT: &str = "server_cpu_system_percent";
/// The server's context switches per second.
pub const SERVER_CONTEXT_SWITCHES_PER_SEC: &str = "server_context_switches_per_sec";
/// The server's context switches per operation.
pub const SERVER_CONTEXT_SWITCHES_PER_OP: &str = "server_context_switches_per_op";
/// The bytes the server read from storage per second.
pub const SERVER_READ_BYTES_PER_SEC: &str = "server_read_bytes_per_sec";
/// The bytes the server wrote to storage per second.
pub const SERVER_WRITTEN_BYTES_PER_SEC: &str = "server_written_bytes_per_sec";
/// The share of the time a cgroup's CPU limit held the server back, in
/// percent.
pub const SERVER_CPU_THROTTLED_PERCENT: &str = "server_cpu_throttled_percent";
/// The server's peak memory (the sum of each process's peak).
pub const SERVER_MEMORY_PEAK: &str = "server_memory_peak";
/// The server's CPU in each second, in percent of one core, as samples.
pub const TIMELINE_SERVER_CPU_PERCENT: &str = "timeline_server_cpu_percent";
/// The CPU time this client spent watching (reading /proc, scraping).
pub const WATCH_CLIENT_CPU: &str = "watch_client_cpu_ns";

// The target machine, scraped (node_exporter; dyno_env::scrape).

/// The target machine's CPU busy share, in percent of all its cores.
pub const TARGET_CPU_BUSY_PERCENT: &str = "target_cpu_busy_percent";
/// The target machine's CPU time in one mode (label `mode`), in percent.
pub const TARGET_CPU_MODE_PERCENT: &str = "target_cpu_mode_percent";
/// The busy share of the target's busiest core (label `core`), in percent.
pub const TARGET_CPU_BUSIEST_CORE_PERCENT: &str = "target_cpu_busiest_core_percent";
/// The target machine's CPU busy share in each second, as samples.
pub const TIMELINE_TARGET_CPU_BUSY_PERCENT: &str = "timeline_target_cpu_busy_percent";
/// The least memory the target machine had available.
pub const TARGET_MEMORY_AVAILABLE_MIN: &str = "target_memory_available_min";
/// The share of the time a disk of the target (label `device`) was busy,
/// in percent.
pub const TARGET_DISK_UTIL_PERCENT: &str = "target_disk_util_percent";
/// The bytes a disk of the target read per second.
pub const TARGET_DISK_READ_BYTES_PER_SEC: &str = "target_disk_read_bytes_per_sec";
/// The bytes a disk of the target wrote per second.
pub const TARGET_DISK_WRITTEN_BYTES_PER_SEC: &str = "target_disk_written_bytes_per_sec";
/// The bytes a network device of the target received per second.
pub const TARGET_NET_RECEIVE_BYTES_PER_SEC: &str = "target_net_receive_bytes_per_sec";
/// The bytes a network device of the target sent per second.
pub const TARGET_NET_TRANSMIT_BYTES_PER_SEC: &str = "target_net_transmit_bytes_per_sec";
/// The TCP segments the target retransmitted over the run.
pub const TARGET_TCP_RETRANSMITS: &str = "target_tcp_retransmits";
/// The target's TCP retransmits per thousand operations.
pub const TARGET_RETRANSMITS_PER_1K_OPS: &str = "target_retransmits_per_1k_ops";
/// The connections the target dropped at a full listen queue.
pub const TARGET_LISTEN_DROPS: &str = "target_listen_drops";
/// The target's clock minus this machine's (the best estimate of the run).
pub const TARGET_CLOCK_OFFSET: &str = "target_clock_offset_ns";

// PostgreSQL (--pg-stats, postgres_exporter; dyno_env::postgres).

/// The database's commits per second, less the probe's own.
pub const TARGET_PG_COMMITS_PER_SEC: &str = "target_pg_commits_per_sec";
/// The database's commits in each second, as samples.
pub const TIMELINE_TARGET_PG_COMMITS_PER_SEC: &str = "timeline_target_pg_commits_per_sec";
/// The database's rolled-back transactions.
pub const TARGET_PG_ROLLBACKS: &str = "target_pg_rollbacks";
/// The database's deadlocks.
pub const TARGET_PG_DEADLOCKS: &str = "target_pg_deadlocks";
/// The bytes the database wrote to temporary files.
pub const TARGET_PG_TEMP_BYTES: &str = "target_pg_temp_bytes";
/// The full-page images written to the WAL.
pub const TARGET_PG_WAL_FULL_PAGE_IMAGES: &str = "target_pg_wal_full_page_images";
/// The times the WAL buffers were full.
pub const TARGET_PG_WAL_BUFFERS_FULL: &str = "target_pg_wal_buffers_full";
/// The buffers backends had to write themselves.
pub const TARGET_PG_BACKEND_BUFFER_WRITES: &str = "target_pg_backend_buffer_writes";
/// The share of block reads the buffer cache served, in percent.
pub const TARGET_PG_CACHE_HIT_PERCENT: &str = "target_pg_cache_hit_percent";
/// The rows inserted, updated or deleted per operation.
pub const TARGET_PG_ROWS_WRITTEN_PER_OP: &str = "target_pg_rows_written_per_op";
/// The WAL bytes written per second.
pub const TARGET_PG_WAL_BYTES_PER_SEC: &str = "target_pg_wal_bytes_per_sec";
/// The WAL bytes written per operation.
pub const TARGET_PG_WAL_BYTES_PER_OP: &str = "target_pg_wal_bytes_per_op";
/// The checkpoints, timed and requested.
pub const TARGET_PG_CHECKPOINTS: &str = "target_pg_checkpoints";
/// The checkpoints that were requested (not timed).
pub const TARGET_PG_CHECKPOINTS_REQUESTED: &str = "target_pg_checkpoints_requested";
/// The mean number of sessions the activity samples saw.
pub const TARGET_PG_SESSIONS_MEAN: &str = "target_pg_sessions_mean";
/// The share of the sessions' sampled time spent in one wait event (label
/// `event`), in percent.
pub const TARGET_PG_WAIT_PERCENT: &str = "target_pg_wait_percent";

// This machine's own state while the run went on (dyno_env::state).

/// This machine's highest 1-minute load average.
pub const MACHINE_LOAD_MAX: &str = "machine_load_max";
/// The lowest clock frequency of this machine's cores.
pub const MACHINE_CPU_MHZ_MIN: &str = "machine_cpu_mhz_min";
/// The highest clock frequency of this machine's cores.
pub const MACHINE_CPU_MHZ_MAX: &str = "machine_cpu_mhz_max";
/// The times this machine's cores were throttled for heat.
pub const MACHINE_THROTTLE_EVENTS: &str = "machine_throttle_events";
/// What the names of this machine's load figures start with.
pub const MACHINE_LOAD_PREFIX: &str = "machine_load";
/// What the names of this machine's clock figures start with.
pub const MACHINE_CPU_MHZ_PREFIX: &str = "machine_cpu_mhz";
