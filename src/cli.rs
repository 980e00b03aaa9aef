//! The command line: clap-derive argument types, one per subcommand. Doc
//! comments are the help text. Each `XxxArgs` is resolved into plain settings
//! by its module under `cmd/`; engines never see these types.

use std::net::SocketAddr;
use std::path::PathBuf;

use clap::{ArgGroup, Args, Parser, Subcommand, ValueEnum};
use dyno_model::Kind;

/// `0.1.0 (git 1a2b3c4d5e6f)`: the version with the revision it was built from.
pub(crate) const LONG_VERSION: &str = concat!(
    env!("CARGO_PKG_VERSION"),
    " (git ",
    env!("DYNO_GIT_REVISION"),
    ")"
);

/// dyno: one honest benchmark workbench for HTTP servers, disks, commands and
/// whole machines.
///
/// Every measuring subcommand records the machine it ran on and saves a
/// self-describing result in the local store ($DYNO_HOME/dyno.db, by default
/// under the XDG data directory), so any two runs can be compared later.
///
/// Exit codes: 0 success; 1 the measurement ran but failed its checks;
/// 2 usage or configuration error; 130 interrupted (Ctrl-C, SIGTERM or
/// SIGHUP ended the run early: what was measured is printed and saved).
#[derive(Debug, Parser)]
#[command(
    name = "dyno",
    version = LONG_VERSION,
    propagate_version = true,
    max_term_width = HELP_WIDTH,
    after_help = "Examples:\n  dyno quick                 benchmark this machine and save the result\n  dyno history               list saved runs\n  dyno show 01JD             show a run by id prefix\n  dyno serve --addr 127.0.0.1:8080"
)]
pub(crate) struct Cli {
    #[command(subcommand)]
    pub command: Command,

    /// The result store every subcommand reads and saves runs in: a
    /// PostgreSQL URL (postgres://USER:PASSWORD@HOST:PORT/DATABASE) for a
    /// store that many machines share, or the path of an SQLite file
    /// [default: $DYNO_HOME/dyno.db]. A measuring subcommand that cannot
    /// reach the server still prints its run and saves it in the local
    /// store, with a warning.
    #[arg(
        long,
        global = true,
        env = "DYNO_STORE",
        hide_env_values = true,
        value_name = "URL|PATH"
    )]
    pub store: Option<String>,
}

/// The subcommands in `dyno --help`, grouped by the task they serve, in
/// the order they are listed. Every subcommand is in exactly one group (a
/// test checks it).
pub(crate) const GROUPS: &[(&str, &[&str])] = &[
    ("Measure", &["quick", "http", "db", "disk", "run", "scale"]),
    (
        "Analyse",
        &["compare", "report", "show", "history", "changes", "merge"],
    ),
    ("Store", &["export", "import", "rm"]),
    ("Set up", &["sysinfo", "doctor", "serve", "k8s"]),
    ("Shell", &["completions", "man"]),
];

/// The width help text is wrapped to (clap's `max_term_width`).
const HELP_WIDTH: usize = 100;

/// The command line with `dyno --help` listing the subcommands by
/// [`GROUPS`] instead of clap's single alphabetical-by-declaration list.
pub(crate) fn command() -> clap::Command {
    use clap::CommandFactory;
    let command = Cli::command();
    let width = command
        .get_subcommands()
        .map(|c| c.get_name().len())
        .max()
        .unwrap_or(0);
    let mut listing = String::new();
    for (group, names) in GROUPS {
        listing.push_str(&format!("{group}:\n"));
        for name in *names {
            let about = command
                .find_subcommand(name)
                .and_then(clap::Command::get_about)
                .map(ToString::to_string)
                .unwrap_or_default();
            listing.push_str(&format!("  {name:<width$}"));
            // Wrapped to the help's width, continued under the text.
            let indent = width + 4;
            let mut column = indent - 2;
            for word in about.split_whitespace() {
                if column + 1 + word.chars().count() > HELP_WIDTH && column > indent {
                    listing.push_str(&format!("\n{:indent$}{word}", ""));
                    column = indent + word.chars().count();
                } else {
                    let gap = if column == indent - 2 { "  " } else { " " };
                    listing.push_str(gap);
                    listing.push_str(word);
                    column += gap.len() + word.chars().count();
                }
            }
            listing.push('\n');
        }
        listing.push('\n');
    }
    let template = format!(
        "{{before-help}}{{about-with-newline}}\n{{usage-heading}} {{usage}}\n\n{listing}Options:\n{{options}}{{after-help}}"
    );
    command.help_template(template)
}

/// `--store`: a PostgreSQL URL or a file path, not empty and not another
/// kind of URL. Checked here, not by clap, whose error would repeat the
/// value and the password in it.
pub(crate) fn store_spec(s: &str) -> Result<String, String> {
    let t = s.trim();
    if t.is_empty() {
        return Err(
            "give a PostgreSQL URL (postgres://USER@HOST/DATABASE) or the path of an SQLite file"
                .into(),
        );
    }
    if !dyno_store::is_postgres_url(t) && t.contains("://") {
        return Err("--store (or DYNO_STORE) is neither a PostgreSQL URL nor a file path: write postgres://USER:PASSWORD@HOST:PORT/DATABASE, or a path such as ./results.db".into());
    }
    Ok(t.to_owned())
}

#[derive(Debug, Subcommand)]
pub(crate) enum Command {
    Quick(QuickArgs),
    Http(Box<HttpArgs>),
    Run(Box<RunArgs>),
    Scale(Box<ScaleArgs>),
    Disk(Box<DiskArgs>),
    Sysinfo(SysinfoArgs),
    Doctor(DoctorArgs),
    Serve(ServeArgs),
    History(HistoryArgs),
    Changes(Box<ChangesArgs>),
    Show(ShowArgs),
    Merge(MergeArgs),
    Export(ExportArgs),
    Import(ImportArgs),
    Rm(RmArgs),
    Completions(CompletionsArgs),
    Man(ManArgs),
    Compare(Box<CompareArgs>),
    Report(Box<ReportArgs>),
    Db(DbArgs),
    K8s(K8sArgs),
}

/// Launch segmented runs on Kubernetes: print the manifests that run one
/// dyno command as N segments on N nodes, for `kubectl apply -f -`.
#[derive(Debug, Args)]
pub(crate) struct K8sArgs {
    #[command(subcommand)]
    pub command: K8sCommand,
}

#[derive(Debug, Subcommand)]
pub(crate) enum K8sCommand {
    Job(Box<K8sJobArgs>),
}

/// Print a Kubernetes Indexed Job that runs the dyno command after `--` as
/// N segments (`--segment $INDEX/N --group NAME`), one pod per node, each
/// meeting the others in the PostgreSQL store named by a Secret; with
/// --merge, also a Job that waits for them and prints the merged run
/// (`kubectl logs job/dyno-NAME-merge`). Nothing is sent to a cluster:
/// pipe it to `kubectl apply -f -`. The command is checked here first, as
/// each segment would check it (its share of -c and -n, its files); the
/// local files it names (--url-file, --body-file, --scenario, --replay, db run -f) travel in a
/// ConfigMap mounted in the pods, and a db run conninfo with a password,
/// or none (this machine's PG* variables), is refused: see --db-secret.
#[derive(Debug, Args)]
#[command(
    after_help = "Example (a cluster, and a PostgreSQL the pods reach):\n  kubectl create secret generic dyno-store --from-literal=url=postgres://dyno:PW@db:5432/dyno\n  dyno k8s job --segments 5 --image registry.example/dyno:0.1 --group web1 --merge -- \\\n      http http://web.default.svc/ -n 1000000 -c 500 | kubectl apply -f -\n  kubectl logs -f job/dyno-web1-merge"
)]
pub(crate) struct K8sJobArgs {
    /// How many segments (pods, on as many nodes).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=i64::from(dyno_model::MAX_SEGMENTS)))]
    pub segments: u32,

    /// The container image with dyno on its PATH.
    #[arg(long, value_name = "IMAGE", value_parser = parse_image)]
    pub image: String,

    /// The run's group name (and the Job's, as dyno-NAME) [default:
    /// dyno-YYYYMMDD-HHMMSS, now].
    #[arg(long, value_name = "NAME", value_parser = parse_group)]
    pub group: Option<String>,

    /// The Secret that holds the store's postgres:// URL.
    #[arg(long, value_name = "NAME", default_value = "dyno-store", value_parser = parse_k8s_name)]
    pub store_secret: String,

    /// The key of the URL in that Secret.
    #[arg(long, value_name = "KEY", default_value = "url")]
    pub store_secret_key: String,

    /// The namespace of the Jobs [default: kubectl's].
    #[arg(long, value_name = "NAME", value_parser = parse_k8s_name)]
    pub namespace: Option<String>,

    /// CPU each segment's pod requests (and is limited to), e.g. 2 or 500m.
    #[arg(long, value_name = "QUANTITY", default_value = "1", value_parser = parse_quantity)]
    pub cpu: String,

    /// Memory each segment's pod requests (and is limited to), e.g. 1Gi.
    #[arg(long, value_name = "QUANTITY", default_value = "512Mi", value_parser = parse_quantity)]
    pub memory: String,

    /// Also print a Job that waits for the segments and prints the merged
    /// run in its log.
    #[arg(long)]
    pub merge: bool,

    /// For `db run`: a Secret of libpq's variables (PGHOST, PGUSER,
    /// PGPASSWORD, PGDATABASE, …) that each pod reads as its environment,
    /// so no password sits in the pods' args. Without it the command must
    /// name the server's host in its conninfo, and no password.
    #[arg(long, value_name = "NAME", value_parser = parse_k8s_name)]
    pub db_secret: Option<String>,

    /// The dyno command each segment runs: `http URL …` or `db run …`,
    /// without --segment, --group or --store, which the Job sets.
    #[arg(last = true, required = true, value_name = "COMMAND")]
    pub command: Vec<String>,
}

/// The help heading of [`SegmentArgs`]' flags.
const SEGMENTS: &str = "Segments (one run from many machines)";

/// Running one segment of a run split over several processes or machines.
#[derive(Debug, Clone, Args)]
pub(crate) struct SegmentArgs {
    /// Run segment I of N (I counted from 0) of the run the rest of the
    /// command describes: its share of -n, -c, -t and --rate, so that the N
    /// segments together make exactly that run (docs/src/scale-out.md says how
    /// it is split). Needs --group and a store all segments share (--store
    /// postgres://…, or one file on one machine).
    #[arg(long, help_heading = SEGMENTS, value_name = "I/N", requires = "group", value_parser = parse_segment)]
    pub segment: Option<dyno_model::Segment>,

    /// The name the segments of one run share: they wait for each other
    /// under it, save their runs with the tag group:NAME, and `dyno merge
    /// NAME` (or show, compare, report) gives the combined run.
    #[arg(long, help_heading = SEGMENTS, value_name = "NAME", requires = "segment", value_parser = parse_group)]
    pub group: Option<String>,

    /// Start at this time (RFC 3339, e.g. 2026-11-23T20:00:00Z) instead of
    /// when all segments have arrived: for launchers that start the
    /// machines themselves. The machines' clocks must agree. A time that
    /// has passed, or more than 24 hours ahead, is refused.
    #[arg(long, help_heading = SEGMENTS, value_name = "TIME", requires = "segment", value_parser = parse_start_at)]
    pub start_at: Option<jiff::Timestamp>,

    /// How long a segment waits for the others before the whole run is
    /// called off (no segment starts a partial test).
    #[arg(long, help_heading = SEGMENTS, value_name = "DURATION", default_value = "60s", allow_hyphen_values = true, value_parser = pass_duration)]
    pub barrier_timeout: std::time::Duration,
}

/// Flags every measuring subcommand shares.
#[derive(Debug, Clone, Args)]
pub(crate) struct SaveArgs {
    /// Do not save the run in the store.
    #[arg(long)]
    pub no_save: bool,

    /// Label the run (repeatable): `--tag baseline --tag laptop`.
    #[arg(long = "tag", value_name = "NAME", value_parser = parse_tag)]
    pub tags: Vec<String>,

    /// Print the run as JSON (the versioned Run record) instead of a table.
    #[arg(long)]
    pub json: bool,
}

/// Benchmark this machine on built-in defaults and print one summary table.
///
/// Records the environment, runs the `int64` CPU workload (a 64-bit integer
/// loop of 100,000,000 iterations whose final state is checked) on one
/// thread and on all cores, five times each after a warm-up (the all-cores
/// line runs one copy per thread, so its speedup is of throughput, shown
/// with the Amdahl parallel fraction that would explain it), then loads
/// dyno's built-in HTTP server on loopback for three seconds, and saves the
/// run. Takes about twelve seconds on a 2-core machine. More threads than
/// CPUs, a single repetition and an efficiency above 100% are warned.
#[derive(Debug, Args)]
#[command(
    after_help = "Examples:\n  dyno quick\n  dyno quick --tag before-upgrade\n  dyno quick --json --no-save > quick.json"
)]
pub(crate) struct QuickArgs {
    #[command(flatten)]
    pub save: SaveArgs,

    /// Timed repetitions of each workload.
    #[arg(long, default_value_t = 5, allow_negative_numbers = true, value_parser = repetitions)]
    pub repetitions: u32,

    /// Threads for the all-cores line [default: the CPUs this process may use].
    #[arg(long, allow_negative_numbers = true, value_parser = threads)]
    pub threads: Option<u32>,

    /// Iterations of the int64 loop. Fewer than the standard 100,000,000 give
    /// a quicker smoke test that is still checked, but is not comparable with
    /// standard runs.
    #[arg(long, value_name = "N", allow_negative_numbers = true, default_value_t = dyno_cpu::int64::STANDARD_ITERATIONS,
          value_parser = at_least_one)]
    pub int64_iterations: u64,

    /// Length of the HTTP line (dyno's client against its built-in server on
    /// loopback); 0 skips it.
    #[arg(allow_hyphen_values = true, long, value_name = "DURATION", default_value = "3s", value_parser = parse_duration)]
    pub http_duration: std::time::Duration,

    /// Length of each pass of the disk line (SEQ1M Q8T1 and RND4K Q1T1, read
    /// and write, on a 64 MiB file in the current directory); 0 skips it.
    #[arg(allow_hyphen_values = true, long, value_name = "DURATION", default_value = "1s", value_parser = parse_duration)]
    pub disk_duration: std::time::Duration,

    /// Length of the db line (select-only, 8 clients, -M prepared, on the
    /// PostgreSQL server that PGHOST, PGPORT and PGDATABASE name; read
    /// only, on tables `dyno db init` made); 0 skips it. Without those
    /// variables there is no db line, and quick says how to add one.
    #[arg(allow_hyphen_values = true, long, value_name = "DURATION", default_value = "3s", value_parser = parse_duration)]
    pub db_duration: std::time::Duration,

    /// What is watched is judged over each line apart: its figures are
    /// labelled with the line as their part (server_cpu_per_op_ns{part=db}),
    /// its verdict names the line. A bare --pg-stats reads the db line's
    /// server.
    #[command(flatten)]
    pub watch: WatchArgs,
}

/// Load-test an HTTP or HTTPS server over HTTP/1.1, HTTP/2 or HTTP/3.
///
/// As fast as wrk, honest about latency, and able to print ApacheBench's
/// report. HTTP/1.1, HTTP/2 with --h2, or HTTP/3 with --h3 (-m N streams
/// per connection, as h2load's -m).
///
/// Closed model (default): each of -c connections sends its next request as
/// soon as the previous answer is in, for -d DURATION or -n N requests in
/// total (exactly N, in-flight ones included). Open model (--rate R): R
/// requests per second on a fixed schedule, latency counted from each
/// request's due time, so a stalled server cannot hide its stall
/// (coordinated omission); both corrected and uncorrected latency are shown.
///
/// With no URL, dyno starts its built-in server on a loopback port and loads
/// /hello. The run is saved; exit code 1 when errors (answers outside
/// --expect-status included) exceed --max-error-rate.
#[derive(Debug, Args)]
#[command(
    after_help = "Examples:\n  dyno http                                   # built-in server, 10 s\n  dyno http http://127.0.0.1:8080/ -c 100 -d 30s\n  dyno http http://127.0.0.1:8080/hello -n 100000 -c 50 --format ab\n  dyno http http://127.0.0.1:8080/ --rate 20000 -d 60s --warmup 5s\n  dyno http 'http://127.0.0.1:8080/item?id={rand:1-100000}' -m GET -c 64\n  dyno http https://localhost:8443/ -n 10000 --insecure      # self-signed test server\n  dyno http --h2 -c 10 -m 10 -n 100000 http://127.0.0.1:8080/  # h2c, 10 streams a connection\n  dyno http --h3 -c 2 -m 8 -n 100000 https://127.0.0.1:8443/ --insecure  # HTTP/3 over QUIC (dyno serve --h3)\n  dyno http --scenario examples/bbs.toml http://127.0.0.1:8080 -c 8 -d 30s  # flows: post, then edit that post\n  dyno http http://127.0.0.1:8080/ -c 50 --find-max --slo 'p99<=20ms,errors<=0.1%'  # capacity search\n  dyno http http://127.0.0.1:8080/ -c 50 --rate-plan '1000@30s,0..5000/60s'  # stages and a ramp\n  dyno http http://127.0.0.1:8080/ -c 1..256 --find-max --slo 'p99<=20ms'    # closed-model sweep\n  dyno --store postgres://dyno@db/dyno http http://web/ -n 1000000 -c 300 --segment 0/3 --group g1  # one of 3 machines (dyno merge g1)"
)]
pub(crate) struct HttpArgs {
    /// The URL to load (http:// or https://); may hold {seq} and
    /// {rand:MIN-MAX}, filled per request. Omit it to load dyno's built-in
    /// server.
    pub url: Option<String>,

    /// Send exactly N measured requests in total.
    #[arg(short = 'n', long = "requests", value_name = "N", conflicts_with = "duration", allow_negative_numbers = true, value_parser = at_least_one)]
    pub requests: Option<u64>,

    /// Measure for this long (10s, 500ms, 2m; at least 10ms) [default: 10s
    /// unless -n]. The run ends then: requests still under way are counted
    /// as unfinished, not waited for, and rates divide by this duration.
    #[arg(short = 'd', long, value_name = "DURATION", allow_hyphen_values = true, value_parser = pass_duration)]
    pub duration: Option<std::time::Duration>,

    /// Open connections (in total, across threads). With --find-max, a
    /// range FROM..TO sweeps the closed model over the connections instead
    /// of searching rates: FROM, doubling, up to TO.
    #[arg(short = 'c', long, default_value = "10", allow_negative_numbers = true, value_parser = connections_or_range)]
    pub connections: ConnectionsArg,

    /// Worker threads, each with its own event loop, at most one per
    /// connection (more would sit idle: -t above -c uses -c threads, with a
    /// note) [default: the CPUs this process may use; half of them when the
    /// built-in server runs beside].
    #[arg(short = 't', long, allow_negative_numbers = true, value_parser = threads)]
    pub threads: Option<u32>,

    /// Open model: this many requests per second in total. Every connection
    /// is opened before the schedule starts; the report shows the send lag
    /// (due time to real send) beside the corrected latency.
    #[arg(long, value_name = "R", allow_negative_numbers = true, value_parser = parse_rate)]
    pub rate: Option<f64>,

    /// Open model whose rate changes: stages joined by commas, each
    /// RATE@DURATION (hold a rate) or FROM..TO/DURATION (a linear ramp),
    /// e.g. '1000@30s,2000@30s' or '0..5000/60s,5000@2m'. The run lasts the
    /// plan; connections stay open across stages; each stage gets its own
    /// percentiles, achieved rate, errors and send lag (a request belongs
    /// to the stage it was due in). Instead of --rate, -n, -d and --warmup.
    #[arg(long, value_name = "PLAN", value_parser = parse_rate_plan)]
    pub rate_plan: Option<dyno_load::plan::RatePlan>,

    /// Run this long first without measuring (excluded from every figure);
    /// none by default. Under --find-max, each step's warm-up (1s when not
    /// given; --warmup 0s for none).
    #[arg(long, value_name = "DURATION", allow_hyphen_values = true, value_parser = parse_duration)]
    pub warmup: Option<std::time::Duration>,

    /// Open a new connection for every request (ab without -k).
    #[arg(long)]
    pub no_keepalive: bool,

    /// Keep connections alive (the default; accepted for ab and weighttp habits).
    #[arg(short = 'k', long = "keepalive", conflicts_with = "no_keepalive")]
    pub keepalive: bool,

    /// HTTP/1.1 pipelining (closed model only): each connection writes DEPTH
    /// requests back to back, then sends the next DEPTH once all are
    /// answered. When a connection fails, the unanswered requests of its
    /// batch are counted under that failure's class.
    #[arg(long, value_name = "DEPTH", default_value_t = 1, allow_negative_numbers = true, value_parser = pipeline,
          conflicts_with = "rate")]
    pub pipeline: u32,

    /// Request method. The standard ones (GET, HEAD, POST, PUT, DELETE,
    /// CONNECT, OPTIONS, TRACE, PATCH) are sent in upper case however they
    /// are typed (`-m post` sends POST); any other is sent as given. With
    /// --h2, `-m N` (a number) is h2load's streams per connection, and
    /// may stand beside the method: `--method POST -m 4`.
    #[arg(short = 'm', long, value_name = "METHOD", action = clap::ArgAction::Append)]
    pub method: Vec<String>,

    /// Speak HTTP/2: h2c with prior knowledge for http:// URLs, h2 chosen
    /// by ALPN for https:// (a server that picks anything else is an
    /// error that names what it picked). Every mode works over it: -n, -d,
    /// --rate, --warmup, templates, --url-file, methods, bodies, headers.
    #[arg(long = "h2")]
    pub h2: bool,

    /// Speak HTTP/3 over QUIC to the URL's port on UDP (https:// only:
    /// QUIC is always TLS 1.3, ALPN h3). -c connections × -m streams as
    /// with --h2; a server that does not answer QUIC there is refused at
    /// the first connection, with what it announces (Alt-Svc) named.
    #[arg(long = "h3", conflicts_with_all = ["h2", "alpn", "pipeline"])]
    pub h3: bool,

    /// With --h3: resume QUIC connections with 0-RTT. Before the clock,
    /// dyno makes full handshakes to collect the server's session tickets
    /// (one a connection); each of the run's connections then sends its
    /// first requests as early data, at once, without waiting for the
    /// handshake. Any method goes early (a server may answer 425 Too
    /// Early). A server that rejects early data gets the requests again
    /// once the handshake ends, uncounted, and the run's later connections
    /// stop offering it; the report counts 0-RTT handshakes and
    /// rejections.
    #[arg(long = "0rtt", requires = "h3")]
    pub zero_rtt: bool,

    /// HTTP/2 and HTTP/3: requests under way at once on each connection
    /// (h2load's -m; `-m N` says the same with --h2 or --h3). The server's
    /// SETTINGS (HTTP/2) or stream limit (QUIC) may lower it.
    #[arg(long, value_name = "N", value_parser = streams)]
    pub streams: Option<u32>,

    /// https://: the protocols ALPN offers, preferred first, and the server
    /// chooses (h2,http/1.1); each connection then speaks what was chosen,
    /// and the run records it. -m applies to HTTP/2 connections.
    #[arg(
        long,
        value_name = "LIST",
        value_delimiter = ',',
        conflicts_with = "h2"
    )]
    pub alpn: Vec<String>,

    /// Add a header (repeatable): -H 'Accept: text/html'.
    #[arg(short = 'H', long = "header", value_name = "'NAME: VALUE'")]
    pub headers: Vec<String>,

    /// Request body. No Content-Type is added (curl -d would add
    /// application/x-www-form-urlencoded, wrong for JSON): give one with -H,
    /// or the run warns.
    #[arg(short = 'b', long, conflicts_with = "body_file")]
    pub body: Option<String>,

    /// Request body read from a file.
    #[arg(long, value_name = "FILE")]
    pub body_file: Option<PathBuf>,

    /// URLs to load round-robin, one per line (all on one server); replaces URL.
    #[arg(long, value_name = "FILE", conflicts_with = "url")]
    pub url_file: Option<PathBuf>,

    /// Run the flows of a scenario file (TOML): each connection is a
    /// virtual user making multi-step flows, with values extracted from
    /// answers into later requests, checks, think times, per-user data and
    /// cookies; results per step and per flow. -n counts flows, --rate is
    /// flows per second. With --h2 or --h3, -m virtual users share each
    /// connection. The URL, if given, replaces the file's `base`. See
    /// the guide's "Scenarios" chapter.
    #[arg(long, value_name = "FILE", conflicts_with_all = ["url_file", "body", "body_file"])]
    pub scenario: Option<PathBuf>,

    /// Connect to this Unix domain socket; the URL still gives the Host
    /// header and the path (e.g. http://localhost/status). A path with no
    /// socket is refused before the run.
    #[arg(long, value_name = "PATH", requires = "url")]
    pub unix_socket: Option<PathBuf>,

    /// Give up on a response after this long without progress (at least 1ms).
    /// A run of -n requests that never got an answer stops once every
    /// connection (× streams × pipeline depth) timed out twice.
    #[arg(long, value_name = "DURATION", allow_hyphen_values = true, default_value = "10s", value_parser = http_timeout)]
    pub timeout: std::time::Duration,

    /// Give up on connecting (with https://, the TLS handshake included)
    /// after this long (at least 1ms).
    #[arg(long, value_name = "DURATION", allow_hyphen_values = true, default_value = "5s", value_parser = http_timeout)]
    pub connect_timeout: std::time::Duration,

    /// Skip TLS certificate verification (self-signed test servers); the
    /// run records that it did. Only for https:// URLs.
    #[arg(long)]
    pub insecure: bool,

    /// The statuses that count as answered, as codes, classes or ranges:
    /// `--expect-status 2xx,404`, `--expect-status 503`, `--expect-status
    /// any`. Any other status is counted as a failed request ("unexpected
    /// status"), warned about, and fails the run above --max-error-rate, so
    /// a server answering every request with 503 cannot pass as fast.
    #[arg(long, value_name = "LIST", default_value = "2xx,3xx", value_parser = expect_status)]
    pub expect_status: dyno_http::StatusSet,

    /// Kept for old scripts: statuses of 400 and above are already counted
    /// as errors by default (see --expect-status).
    #[arg(long)]
    pub fail_status: bool,

    /// Exit with code 1 when more than this percentage of requests failed.
    #[arg(long, value_name = "PERCENT", default_value_t = 1.0, allow_negative_numbers = true, value_parser = percent)]
    pub max_error_rate: f64,

    /// Report layout: dyno's own, or ApacheBench 2.3's (for scripts that
    /// parse ab). Not with --json, which prints the Run instead of any table.
    #[arg(long, value_enum, default_value_t = HttpFormat::Human, conflicts_with = "json")]
    pub format: HttpFormat,

    /// Write per-second latency histograms in the HdrHistogram log format.
    #[arg(long, value_name = "FILE")]
    pub latency_log: Option<PathBuf>,

    /// Seed for {rand:…} values (recorded in the run) [default: random].
    #[arg(long)]
    pub seed: Option<u64>,

    /// Connect from this local address (as ab's -B): one of this machine's
    /// own, e.g. 127.0.0.2 so that processes on one machine reach a
    /// loopback server as different hosts.
    #[arg(short = 'B', long, value_name = "IP")]
    pub source_addr: Option<std::net::IpAddr>,

    #[command(flatten)]
    pub replay: ReplayArgs,

    #[command(flatten)]
    pub find_max: FindMaxArgs,

    #[command(flatten)]
    pub watch: WatchArgs,

    #[command(flatten)]
    pub segments: SegmentArgs,

    #[command(flatten)]
    pub save: SaveArgs,
}

/// `dyno http --replay`: real traffic from an access log.
#[derive(Debug, Clone, clap::Args)]
#[command(next_help_heading = "Replaying an access log")]
pub(crate) struct ReplayArgs {
    /// Replay the requests of an access log (nginx or Apache combined or
    /// common format, an nginx log_format, JSON lines, HAR; gzip read as
    /// it is) against URL's server, each at its logged time ÷ --speed from
    /// the start. An open model: latency counts from each request's due
    /// time. Runs until the log ends (-d or -n end it sooner). The file is
    /// read as it is sent, never held whole.
    #[arg(long, value_name = "FILE", requires = "url",
          conflicts_with_all = ["url_file", "scenario", "rate", "rate_plan", "body", "body_file", "pipeline"])]
    pub replay: Option<PathBuf>,

    /// The log's format: combined, common, json (fields
    /// time,method,path,status…; json:time=ts,path=uri to rename), har, or
    /// an nginx log_format string ('$remote_addr - [$time_local]
    /// "$request" $status'). Told from the file when not given.
    #[arg(long, value_name = "FORMAT", requires = "replay", value_parser = parse_log_format)]
    pub log_format: Option<dyno_http::replay::LogFormat>,

    /// Replay at this multiple of the log's pace: 2 sends a minute's
    /// requests in 30 s, 0.5 in two minutes.
    #[arg(long, value_name = "X", requires = "replay", default_value_t = 1.0, value_parser = parse_speed)]
    pub speed: f64,

    /// Replay only this part of the log, as times from its first request:
    /// 5m..10m, ..90s, 1h..
    #[arg(long, value_name = "FROM..TO", requires = "replay", value_parser = parse_window)]
    pub window: Option<dyno_http::replay::Window>,

    /// When the log (its window) ends, replay it again, and again, until
    /// -d or -n.
    #[arg(long = "loop", requires = "replay")]
    pub looped: bool,

    /// How requests logged in the same second (or millisecond) are placed
    /// within it: even (evenly apart) or poisson (at random, as
    /// independent arrivals would be; --seed repeats it).
    #[arg(long, value_name = "HOW", requires = "replay", default_value = "even", value_parser = ["even", "poisson"])]
    pub spread: String,

    /// The methods replayed [default: GET,HEAD]; requests of others are
    /// left out and counted. Naming others (POST, DELETE…) replays
    /// requests that may change the target's data: do it on a copy.
    #[arg(long, value_name = "LIST", requires = "replay", value_delimiter = ',', value_parser = parse_replay_method)]
    pub methods: Vec<String>,

    /// Request headers a log kept (HAR, JSON) that are not sent
    /// [default: cookie,authorization]; 'none' sends them all.
    #[arg(long, value_name = "LIST", requires = "replay", value_delimiter = ',')]
    pub scrub: Vec<String>,

    /// Path templates the per-endpoint figures group by, tried in order
    /// (/users/{id},/items/{sku}/reviews); paths no template matches are
    /// folded by themselves (numbers and ids become {id}).
    #[arg(long, value_name = "LIST", requires = "replay", value_delimiter = ',')]
    pub templates: Vec<String>,
}

/// Watching the system under test while it is loaded.
#[derive(Debug, Clone, Args)]
#[command(next_help_heading = "Watching the target")]
pub(crate) struct WatchArgs {
    /// Watch this process of the server (repeatable): its CPU time, memory
    /// and threads from /proc on the run's clock, its CPU in percent of a
    /// core and per request (derived), and a verdict on whether it was
    /// CPU-bound. A PID that does not exist is refused before the run; one
    /// that exits mid-run is recorded up to then.
    #[arg(long, value_name = "PID")]
    pub watch_pid: Vec<u32>,

    /// Watch every process of this name (as pgrep matches /proc/PID/comm,
    /// e.g. nginx), each as --watch-pid would.
    #[arg(long, value_name = "NAME")]
    pub watch_name: Vec<String>,

    /// Watch a cgroup (v2, e.g. /sys/fs/cgroup/system.slice/nginx.service;
    /// or v1, e.g. /sys/fs/cgroup/cpu/system.slice/nginx.service): the CPU
    /// of every process in it, its throttling and its memory.
    #[arg(long, value_name = "PATH")]
    pub watch_cgroup: Vec<PathBuf>,

    /// Scrape this Prometheus text endpoint (repeatable), on this machine
    /// or another: node_exporter gives the target machine's CPU by mode and
    /// core, memory, disk busy time and throughput, network bytes, TCP
    /// retransmits and listen drops; postgres_exporter PostgreSQL's
    /// commits and cache hits; any other exporter its own process's CPU.
    /// An endpoint that is down, slow or answers garbage is warned of and
    /// the run goes on.
    #[arg(long = "watch", value_name = "URL")]
    pub watch_url: Vec<String>,

    /// How often the watched sources are sampled.
    #[arg(long, value_name = "DURATION", default_value = "1s", allow_hyphen_values = true, value_parser = pass_duration)]
    pub watch_interval: std::time::Duration,

    /// Read PostgreSQL's statistics views during the run, on a connection
    /// of their own: pg_stat_database (commits, cache hits, rows), WAL
    /// bytes per transaction, checkpoints, and what the sessions were
    /// doing (pg_stat_activity, five samples per --watch-interval: running,
    /// waiting on locks or I/O, idle), with a verdict when they mostly
    /// waited. `dyno db run` reads its own server with a bare --pg-stats;
    /// elsewhere give the server behind the application:
    /// --pg-stats='host=/var/run/postgresql dbname=app'. dyno's own probe
    /// is left out of the counts.
    #[arg(long, value_name = "CONNINFO", num_args = 0..=1, require_equals = true, default_missing_value = "")]
    pub pg_stats: Option<String>,
}

/// Capacity search (`--find-max`): the highest rate that still meets an
/// objective; `dyno http` and `dyno db run` share these flags, and each
/// checks what they cannot go with.
#[derive(Debug, Clone, Args)]
#[command(next_help_heading = "Capacity search")]
pub(crate) struct FindMaxArgs {
    /// Find the highest request rate that still meets --slo: open-model
    /// steps at fixed rates, doubling from --start until one fails, then
    /// halving the bracket to --precision; the last pass and the first fail
    /// are run again before the answer. A step passes when the objective
    /// holds, at least 99% of the rate is achieved, at most 0.1% of sends
    /// are late or dropped, latency does not rise within the step (a
    /// growing queue) and the client is not saturated (which ends the
    /// search: "client-bound"). Exit 1 when no rate meets the objective.
    /// Not with a fixed rate, count or duration. With --segment, every
    /// step is split over the segments, which judge it together.
    #[arg(long, requires = "slo")]
    pub find_max: bool,

    /// The objective each step must meet: pNN<=DURATION targets on the
    /// corrected latency and errors<=PCT%, joined by commas, e.g.
    /// 'p99<=20ms,errors<=0.1%'. Without an error target, errors may be at
    /// most --max-error-rate.
    #[arg(long, value_name = "OBJECTIVE", requires = "find_max", value_parser = parse_slo)]
    pub slo: Option<String>,

    /// The first rate tried, per second [default: half the rate of a 2 s
    /// closed-model probe with the same connections or clients]. With
    /// --replay, the first multiple of the log's pace [default: 1].
    /// The search's steps each replay the log's window once (with --loop,
    /// for --step each).
    #[arg(long, value_name = "RATE", requires = "find_max", allow_negative_numbers = true, value_parser = parse_rate)]
    pub start: Option<f64>,

    /// How long each step measures (each also has a warm-up: --warmup, or
    /// 1s when none is given). A replay's step is the log's window, once,
    /// unless --loop.
    #[arg(long, value_name = "DURATION", default_value = "10s", allow_hyphen_values = true, value_parser = pass_duration)]
    pub step: std::time::Duration,

    /// Stop bisecting once the bracket is this narrow, in percent of its
    /// lower end.
    #[arg(long, value_name = "PERCENT", default_value_t = 5.0, allow_negative_numbers = true, value_parser = positive_percent)]
    pub precision: f64,

    /// The longest the search may take; it answers with what it has then.
    #[arg(long, value_name = "DURATION", default_value = "3m", allow_hyphen_values = true, value_parser = pass_duration)]
    pub budget: std::time::Duration,
}

/// `--slo`: checked here, so a mistake is a usage error before any load.
fn parse_slo(s: &str) -> Result<String, String> {
    s.parse::<dyno_load::Slo>()
        .map(|_| s.trim().to_owned())
        .map_err(|e| e.to_string())
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum HttpFormat {
    /// dyno's report: latency percentiles, connection times, errors by class.
    Human,
    /// ApacheBench 2.3's layout and labels, with dyno's counts: the banner
    /// names dyno (it is not ab); "Failed requests" includes unexpected
    /// statuses (ab counts them only under "Non-2xx responses", also
    /// printed); "Keep-Alive requests" counts requests sent on an already
    /// open connection; with --rate a line says the model is open and "Time
    /// per request (mean)" is the mean corrected latency.
    Ab,
}

/// Time commands, like hyperfine, with a verdict for every comparison.
///
/// Each run's own CPU time, CPU% and peak memory, confidence intervals and
/// a verdict for every comparison.
///
/// Each run is one child process in its own process group, waited for with
/// wait4, so user time, system time and peak RSS are that run's own. Under a
/// shell (the default, `sh -c`), the shell's start-up time is measured first
/// and subtracted. Commands take turns (A B C A B C …) unless
/// --no-interleave, and every run gets a random-length environment variable
/// (DYNO_RANDOM_PAD) so no single memory layout biases the result.
///
/// Without --runs, each command runs at least --min-runs times, then until
/// the relative standard error of its mean is at most --target-rse, its runs
/// have used --max-time, or --max-runs is reached; the output says which.
///
/// Parameters: -P NAME MIN MAX [--step S] and -L NAME a,b,c; several form
/// their cross product (all -P first, then all -L, each in the order given).
/// {NAME} is replaced in the commands, --name and the setup, prepare,
/// conclude and cleanup commands; a {word} that is not a parameter is an
/// error ({{ and }} are literal braces). A parameter no command uses, a
/// repeated -L value, an empty command and a repeated --name are refused;
/// the same command given twice is numbered ("sleep 0.01 (2)").
///
/// The interval of the mean is Student t below 10 runs, bootstrap from 10.
/// Each command is compared with the fastest: ratio, Mann–Whitney p and a
/// verdict; with 3 runs or fewer per command no test can reach p < 0.05, so
/// the verdict is "too few runs to test" (use --runs 4 or more).
///
/// CPU% is total user + system time over total wall time, both after the
/// shell's start-up is subtracted; n/a for a command shorter than that
/// start-up, where both are mostly calibration noise.
///
/// Exit codes: 1 when a command fails (without --ignore-failure) or the
/// outputs differ under --check-output; 2 for bad flags; 130 when
/// interrupted (the partial run is printed and saved).
#[derive(Debug, Args)]
#[command(
    after_help = "Examples:\n  dyno run 'sleep 0.1'\n  dyno run -N --warmup 3 'grep -r foo .' 'rg foo'\n  dyno run -P j 1 4 --prepare 'make clean' 'make -j {j}'      # then: dyno scale --last\n  dyno run -L cc gcc,clang '{cc} -O2 -o /tmp/a main.c' --check-output\n  dyno run --runs 20 --export-hyperfine-json out.json 'xz -9 -k -c big > /dev/null'"
)]
pub(crate) struct RunArgs {
    /// The commands to time (run by --shell; quote each one).
    #[arg(required = true, value_name = "COMMAND")]
    pub commands: Vec<String>,

    /// Run commands through this shell (its start-up time is subtracted), or
    /// directly, split into words as sh would, with `none`.
    #[arg(short = 'S', long, value_enum, default_value_t = ShellArg::Sh)]
    pub shell: ShellArg,

    /// The same as --shell none.
    #[arg(short = 'N', conflicts_with = "shell")]
    pub no_shell: bool,

    /// Untimed runs of each command first (fills caches).
    #[arg(short = 'w', long, value_name = "N", default_value_t = 0, allow_negative_numbers = true, value_parser = warmup_runs)]
    pub warmup: u32,

    /// Exactly this many timed runs of each command.
    #[arg(short = 'r', long, value_name = "N", conflicts_with_all = ["min_runs", "max_runs", "target_rse", "max_time"],
          allow_negative_numbers = true, value_parser = run_count)]
    pub runs: Option<u32>,

    /// Adaptive mode: at least this many timed runs (2 or more).
    #[arg(short = 'm', long, value_name = "N", default_value_t = 10, allow_negative_numbers = true, value_parser = min_runs)]
    pub min_runs: u32,

    /// Adaptive mode: at most this many timed runs.
    #[arg(short = 'M', long, value_name = "N", default_value_t = 1000, allow_negative_numbers = true, value_parser = min_runs)]
    pub max_runs: u32,

    /// Adaptive mode: stop once the relative standard error of the mean is
    /// at most this (percent).
    #[arg(long, value_name = "PERCENT", default_value_t = 1.0, allow_negative_numbers = true, value_parser = positive_percent)]
    pub target_rse: f64,

    /// Adaptive mode: stop adding runs to a command once its timed runs have
    /// taken this long (after --min-runs). Must be above zero.
    #[arg(long, value_name = "DURATION", allow_hyphen_values = true, default_value = "10s", value_parser = run_limit)]
    pub max_time: std::time::Duration,

    /// Run this once per command before its first run (warm-up included).
    #[arg(short = 's', long, value_name = "CMD")]
    pub setup: Option<String>,

    /// Run this before every run, untimed (e.g. 'make clean').
    #[arg(short = 'p', long, value_name = "CMD")]
    pub prepare: Option<String>,

    /// Run this after every run, untimed.
    #[arg(long, value_name = "CMD")]
    pub conclude: Option<String>,

    /// Run this once per command after its last run. With interleaving, all
    /// setups run before the first round and all cleanups after the last.
    /// It also runs after an interrupt, for every command whose setup ran.
    #[arg(short = 'c', long, value_name = "CMD")]
    pub cleanup: Option<String>,

    /// Run the commands in this directory.
    #[arg(long, value_name = "DIR")]
    pub cwd: Option<PathBuf>,

    /// Set an environment variable for the commands (repeatable): --env LC_ALL=C.
    #[arg(long = "env", value_name = "NAME=VALUE", value_parser = parse_env)]
    pub env: Vec<(String, String)>,

    /// Give the commands this file on stdin [default: /dev/null].
    #[arg(long, value_name = "FILE")]
    pub input: Option<PathBuf>,

    /// Where the commands' output goes: null (discard), pipe (read by dyno
    /// and discarded, like a terminal), inherit (show it), or a FILE
    /// (truncated at each run).
    #[arg(long, value_name = "WHERE", default_value = "null")]
    pub output: String,

    /// Kill a run (its whole process group) after this long; it counts as
    /// failed. Must be above zero.
    #[arg(long, value_name = "DURATION", allow_hyphen_values = true, value_parser = run_limit)]
    pub timeout: Option<std::time::Duration>,

    /// Keep timing a command that exits non-zero (its exit codes are kept).
    #[arg(short = 'i', long)]
    pub ignore_failure: bool,

    /// A range parameter: -P NAME MIN MAX, in steps of --step (default 1).
    #[arg(short = 'P', long = "parameter-scan", num_args = 3, value_names = ["NAME", "MIN", "MAX"], allow_negative_numbers = true)]
    pub scans: Vec<String>,

    /// Step of the -P ranges: one for all, or one per -P in order.
    #[arg(
        short = 'D',
        long = "step",
        value_name = "S",
        allow_negative_numbers = true
    )]
    pub steps: Vec<String>,

    /// A list parameter: -L NAME a,b,c.
    #[arg(short = 'L', long = "parameter-list", num_args = 2, value_names = ["NAME", "VALUES"])]
    pub lists: Vec<String>,

    /// A name for each command, in order (may hold {NAME}).
    #[arg(short = 'n', long = "name", value_name = "NAME")]
    pub names: Vec<String>,

    /// Require every command and parameter value to print the same stdout
    /// (hashed); a mismatch shows the differing commands and exits 1.
    #[arg(long)]
    pub check_output: bool,

    /// Run each command's runs together instead of taking turns. Taking
    /// turns (the default) spreads drift of the machine over every command
    /// alike, but times each run in the wake of the previous command: when
    /// the commands differ more than 10× in length the run warns, and this
    /// flag times the short one more faithfully.
    #[arg(long)]
    pub no_interleave: bool,

    /// Compare against this command (its number from 1, or its name)
    /// instead of the fastest.
    #[arg(long, value_name = "COMMAND")]
    pub reference: Option<String>,

    /// Differences smaller than this (percent) are not called faster or
    /// slower.
    #[arg(long, value_name = "PERCENT", default_value_t = 2.0, allow_negative_numbers = true, value_parser = percent)]
    pub noise_band: f64,

    /// Seed for the environment padding (recorded in the run) [default: random].
    #[arg(long)]
    pub seed: Option<u64>,

    /// Also write the results in hyperfine's JSON layout. Like hyperfine,
    /// the --export-* flags replace an existing FILE (and say so on
    /// stderr).
    #[arg(long, value_name = "FILE")]
    pub export_hyperfine_json: Option<PathBuf>,

    /// Also write one CSV row per command (hyperfine's columns).
    #[arg(long, value_name = "FILE")]
    pub export_csv: Option<PathBuf>,

    /// Also write a Markdown table of the results.
    #[arg(long, value_name = "FILE")]
    pub export_markdown: Option<PathBuf>,

    #[command(flatten)]
    pub watch: WatchArgs,

    #[command(flatten)]
    pub save: SaveArgs,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum ShellArg {
    Sh,
    Bash,
    None,
}

/// Explain how a program scales with threads, jobs or processors N.
///
/// Speedup, efficiency, Amdahl's parallel fraction, the Karp–Flatt serial
/// fraction and the Universal Scalability Law.
///
/// The points (N, time) or (N, throughput) come from exactly one of:
///
/// - a saved `dyno run` sweep (RUN_ID or --last): N is its parameter (name it
///   with --param when the run has several) and the value the mean wall time
///   of each N. A run that timed several commands, or swept other parameters
///   too, holds several curves: pick one with --command and --where.
///
/// - a CSV or JSON file (--file): a header naming an N column (n, threads,
///   jobs, concurrency, clients, cpus, processes or load, in any case, or
///   --n-column) and a time column in seconds (seconds,
///   time, time_s) or a throughput column (throughput, ops_per_sec, rate), or
///   --value-column with --measure; JSON is an array of objects with the
///   same keys.
///
/// - a built-in workload measured now (--workload int64): strong scaling, a
///   fixed total of loop iterations cut into tasks that N threads share, each
///   task's result checked.
///
/// Per N: the time or throughput, speedup against N = 1 (or the smallest N),
/// efficiency, and the Amdahl and Karp–Flatt fractions; then the best N, the
/// Amdahl fit (p and the ceiling 1/(1 − p); p, wherever shown, has the
/// digits that keep three significant figures of 1 − p) and the USL fit (σ, κ, λ, R²,
/// what bounds scaling, the peak N* and X(N*)). Model values outside the
/// measured range are marked "(predicted)". Two points give the per-point
/// figures and the Amdahl fit only; the USL needs three, and six or more are
/// recommended (fewer are warned about). One point is refused.
#[derive(Debug, Args)]
#[command(
    group(ArgGroup::new("input").required(true).args(["run", "last", "file", "workload"])),
    group(ArgGroup::new("saved").args(["run", "last"])),
    after_help = "Examples:\n  dyno run -P j 1 8 --prepare 'make clean' 'make -j {j}' && dyno scale --last\n  dyno scale 01JDX3K2 --param j --where cc=gcc\n  dyno scale --file sweep.csv                       # columns: threads,seconds\n  dyno scale --file rps.json --n-column clients --value-column rps --measure throughput\n  dyno scale --workload int64 --threads 1,2,4,8 --repetitions 5\n  dyno scale --workload tree-read --threads 1,2\n  dyno scale --workload tree-write --threads 1,2 --dir /mnt/ssd/tmp"
)]
pub(crate) struct ScaleArgs {
    /// A saved `dyno run` sweep: its id or a unique prefix.
    #[arg(value_name = "RUN_ID")]
    pub run: Option<String>,

    /// Analyse the most recent saved `dyno run`.
    #[arg(long)]
    pub last: bool,

    /// The parameter of the run that is N [default: the run's only
    /// parameter].
    #[arg(long, value_name = "NAME", requires = "saved")]
    pub param: Option<String>,

    /// The command of the run to analyse, when it timed several: its number
    /// from 1, or its command line as given to `dyno run` (with {NAME}).
    #[arg(long, value_name = "COMMAND", requires = "saved")]
    pub command: Option<String>,

    /// Keep only the runs where another parameter has this value
    /// (repeatable), when the run swept more than N: --where cc=gcc.
    #[arg(long = "where", value_name = "NAME=VALUE", requires = "saved", value_parser = parse_where)]
    pub wheres: Vec<(String, String)>,

    /// Read the points from a CSV or JSON file.
    #[arg(long, value_name = "FILE")]
    pub file: Option<PathBuf>,

    /// The file's N column [default: the one named n, threads, jobs,
    /// concurrency, clients, cpus, processes or load, in any case].
    #[arg(long, value_name = "NAME", conflicts_with_all = ["run", "last", "workload"])]
    pub n_column: Option<String>,

    /// The file's value column [default: seconds, time, time_s, throughput,
    /// ops_per_sec or rate].
    #[arg(long, value_name = "NAME", conflicts_with_all = ["run", "last", "workload"])]
    pub value_column: Option<String>,

    /// What the value column holds [default: from its name].
    #[arg(long, value_enum, conflicts_with_all = ["run", "last", "workload"])]
    pub measure: Option<MeasureArg>,

    /// Measure a built-in workload now.
    #[arg(long, value_enum)]
    pub workload: Option<WorkloadArg>,

    /// Thread counts to measure: 1,2,4,8 [default: 1, 2, … up to the CPUs
    /// this process may use].
    #[arg(long, value_name = "N,…", value_delimiter = ',', conflicts_with_all = ["run", "last", "file"], allow_negative_numbers = true, value_parser = threads)]
    pub threads: Vec<u32>,

    /// Iterations of the int64 loop in total at every N (shared out among
    /// the threads) [default: 150,000,000, about a second on one thread].
    #[arg(long, value_name = "N", conflicts_with_all = ["run", "last", "file"], allow_negative_numbers = true, value_parser = at_least_one)]
    pub iterations: Option<u64>,

    /// tree-read, tree-write: tasks that each count every node of their
    /// version, or build and register one tree [default: 1,000, the
    /// thesis's].
    #[arg(long, value_name = "N", conflicts_with_all = ["run", "last", "file"], allow_negative_numbers = true, value_parser = at_least_one)]
    pub tasks: Option<u64>,

    /// tree-read, tree-write: levels of a tree below its root [default: 8
    /// for tree-read, 6 for tree-write].
    #[arg(long, value_name = "LEVELS", conflicts_with_all = ["run", "last", "file"], allow_negative_numbers = true, value_parser = tree_depth)]
    pub depth: Option<u32>,

    /// tree-read: about how many nodes the tree starts with [default:
    /// 800,000]; tree-write: about how many nodes each task's tree gets
    /// [default: 10,000].
    #[arg(long, value_name = "N", conflicts_with_all = ["run", "last", "file"], allow_negative_numbers = true, value_parser = at_least_one)]
    pub nodes: Option<u64>,

    /// tree-write: the directory the database is kept in during the run
    /// (made for it and removed after; its file system's fsync is what is
    /// measured) [default: a new directory in the current one].
    #[arg(long, value_name = "DIR", conflicts_with_all = ["run", "last", "file"])]
    pub dir: Option<PathBuf>,

    /// Timed repetitions of each N, taken in turns after one warm-up
    /// [default: 3].
    #[arg(long, conflicts_with_all = ["run", "last", "file"], allow_negative_numbers = true, value_parser = repetitions)]
    pub repetitions: Option<u32>,

    #[command(flatten)]
    pub save: SaveArgs,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum MeasureArg {
    /// Seconds for the same work at every N: lower is better.
    Time,
    /// Work per unit of time: higher is better.
    Throughput,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum WorkloadArg {
    /// The int64 loop of `dyno quick`, its iterations cut into tasks.
    Int64,
    /// The thesis's parallel read on dyno's tree database: --tasks tasks
    /// each count every node of the version they are handed (a tree of
    /// --depth levels and about --nodes nodes) while a writer adds a node
    /// before each hand-out; every count is checked.
    TreeRead,
    /// The thesis's parallel write on dyno's tree database, durable: --tasks
    /// tasks each build a tree node by node (--depth levels, about --nodes
    /// nodes), register it in the database (fsynced) and count it back;
    /// commits/s, fsyncs per commit and retries are reported.
    TreeWrite,
}

fn tree_depth(s: &str) -> Result<u32, String> {
    match s.parse::<u32>() {
        Ok(d) if (1..=64).contains(&d) => Ok(d),
        _ => Err(format!(
            "'{s}' is not a tree depth: give a number of levels from 1 to 64"
        )),
    }
}

/// Show the machine: CPU, caches, memory, OS, limits and kernel settings.
///
/// Every field that cannot be read here (common in VMs and containers) shows
/// as "unknown". This is the environment that every saved run embeds.
#[derive(Debug, Args)]
#[command(after_help = "Examples:\n  dyno sysinfo\n  dyno sysinfo --json | jq .cpu")]
pub(crate) struct SysinfoArgs {
    /// Print JSON instead of a table.
    #[arg(long)]
    pub json: bool,
}

/// Check this machine before a benchmark: what would make it measure its
/// own limits instead of its target.
///
/// Each check shows what it found, the value wanted, why it matters for
/// that kind of benchmark, and the commands that fix it now (sysctl -w,
/// ulimit -n) and across reboots (/etc/sysctl.d, /etc/security/limits.d).
/// The same checks give the warnings every run carries. Read only unless
/// --fix. Exit 0 when nothing blocks a valid run of the kinds asked for, 1
/// otherwise; a value that cannot be read is "unknown", never an error.
#[derive(Debug, Args)]
#[command(
    after_help = "Examples:\n  dyno doctor http       # before a web-server benchmark\n  dyno doctor            # every kind\n  dyno doctor db --json | jq '.checks[] | select(.verdict != \"ok\")'\n  dyno doctor db postgres://bench@db1/bench -c 64   # the server too"
)]
pub(crate) struct DoctorArgs {
    /// The kind of benchmark to check for.
    #[arg(value_enum, default_value = "all")]
    pub kind: DoctorKind,

    /// With db: the server to check, as `dyno db run` takes it (a URL, a
    /// key=value string or a database name) [default: libpq's
    /// environment]. `doctor db` checks that it is reachable, its
    /// max_connections against -c, fsync and synchronous_commit, and
    /// pgbench's tables.
    #[arg(value_name = "CONNINFO")]
    pub conninfo: Option<String>,

    /// With db: the clients (-c) the benchmark will run, checked against
    /// the server's max_connections and the open-file limit.
    #[arg(short = 'c', long = "clients", default_value_t = 1, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=10_000))]
    pub clients: u32,

    /// Print JSON instead of a table.
    #[arg(long, conflicts_with = "fix")]
    pub json: bool,

    /// Apply the runtime fixes that need no reboot (kernel settings under
    /// /proc/sys and /sys; not the open-file limit, which belongs to your
    /// shell), asking before each. Needs root; without it, prints the
    /// commands to run instead. Each change and the value it replaced go
    /// to $DYNO_HOME/doctor-changes.log, so it can be undone.
    #[arg(long)]
    pub fix: bool,

    /// With --fix: apply without asking.
    #[arg(long, requires = "fix")]
    pub yes: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum DoctorKind {
    Http,
    Disk,
    Run,
    Db,
    All,
}

/// Load a PostgreSQL server the way pgbench does.
///
/// The server is named by a connection string (a URL such as
/// postgres://user@host:5432/db, or libpq's key=value form), and what the
/// string leaves out comes from libpq's environment (PGHOST, PGPORT,
/// PGUSER, PGDATABASE, PGPASSWORD) and libpq's defaults (the Unix socket in
/// /var/run/postgresql, port 5432, your user name): the server psql and
/// pgbench would reach from the same shell.
#[derive(Debug, Args)]
pub(crate) struct DbArgs {
    #[command(subcommand)]
    pub command: DbCommand,
}

#[derive(Debug, Subcommand)]
pub(crate) enum DbCommand {
    Init(DbInitArgs),
    Run(Box<DbRunArgs>),
}

/// How statements go to the server (pgbench's -M).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum DbProtocol {
    /// Text with the values written in: one round trip, parsed each time.
    Simple,
    /// An unnamed statement parsed, bound and run in one round trip.
    Extended,
    /// Each statement parsed once per connection, then bound and run.
    Prepared,
}

/// Load the server with pgbench's scripts and report tps and latency.
///
/// pgbench's closed model: -c clients, each on its own connection, over -j
/// threads; each client runs a transaction, waits for it, and starts the
/// next, until -T seconds have passed or it has run -t transactions. The
/// built-in scripts are pgbench's (tpcb-like by default, simple-update,
/// select-only); -f runs a script in pgbench's language (\set with
/// random(), random_exponential(), random_gaussian(), random_zipfian() and
/// arithmetic, :variables in SQL, \sleep); NAME@WEIGHT mixes several.
/// Every transaction's latency goes into an HDR histogram, reported from
/// p50 to p99.99 and max; failures are counted by SQLSTATE; a serialization
/// failure or deadlock is retried up to --max-tries times with the same
/// random draws. With -R the model is open, as pgbench's: transactions
/// are due at random times at that rate, latency counts from the due time
/// and the schedule lag is shown; -L counts (and with -R skips) late ones;
/// -r times every command; -C connects for every transaction; --pipeline
/// sends a script's consecutive statements at once. The run is saved with
/// the server's version and the settings that decide what it measured.
/// Exit 1 when a client stopped on an error or a transaction failed.
#[derive(Debug, Args)]
#[command(
    group(ArgGroup::new("length").args(["time", "transactions"])),
    after_help = "Examples:\n  dyno db run -c 8 -j 2 -T 10                 # tpcb-like on the server of PGHOST/PGPORT\n  dyno db run -S -c 16 -j 2 -M prepared       # select-only\n  dyno db run -f mix.sql@9 -b simple-update@1 'postgres://bench@db1/bench'\n  dyno db run -c 8 -T 30 --max-tries 10 --tag after-tuning\n  dyno db run -c 16 -j 2 -T 60 -R 2000 -L 50 -P 5      # open model, 50 ms limit\n  dyno db run -M prepared --pipeline -T 10     # a transaction's statements sent at once\n  dyno db run -r -T 10                        # each command's latency\n  dyno db run -S -c 16 -j 2 --rate-plan '200@30s,0..1000/60s'   # stages and a ramp\n  dyno db run -S -c 1..128 -j 2 --find-max --slo 'p99<=50ms'    # closed-model sweep of clients"
)]
pub(crate) struct DbRunArgs {
    /// The server: a URL, a key=value connection string, or a bare
    /// database name as pgbench's DBNAME [default: libpq's environment and
    /// defaults].
    #[arg(value_name = "CONNINFO")]
    pub conninfo: Option<String>,

    /// Concurrent clients (connections). With --find-max, a range
    /// FROM..TO sweeps the closed model over the clients instead of
    /// searching rates: FROM, doubling, up to TO.
    #[arg(short = 'c', long = "client", default_value = "1", value_name = "N", value_parser = clients_or_range)]
    pub clients: ConnectionsArg,

    /// Threads the clients are spread over.
    #[arg(short = 'j', long = "jobs", default_value_t = 1, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=1024))]
    pub jobs: u32,

    /// How long to run (seconds, or 30s, 2m) [default: 10s unless -t].
    #[arg(short = 'T', long, value_name = "DURATION", value_parser = parse_duration)]
    pub time: Option<std::time::Duration>,

    /// Transactions each client runs, instead of a duration.
    #[arg(short = 't', long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub transactions: Option<u64>,

    /// A built-in script, NAME or NAME@WEIGHT: tpcb-like, simple-update,
    /// select-only (a unique prefix will do) [default: tpcb-like].
    #[arg(short = 'b', long = "builtin", value_name = "NAME[@WEIGHT]")]
    pub builtins: Vec<String>,

    /// A script in pgbench's language, FILE or FILE@WEIGHT (repeatable).
    #[arg(short = 'f', long = "file", value_name = "FILE[@WEIGHT]")]
    pub files: Vec<String>,

    /// Stop the whole run when a client stops on an error (as pgbench's
    /// --exit-on-abort), instead of letting the others go on; what was
    /// measured is printed and saved, and the exit status is 1.
    #[arg(long)]
    pub exit_on_abort: bool,

    /// Log every transaction to a file per thread, in pgbench's -l format
    /// (PREFIX.PID, PREFIX.PID.N for thread N): client, transaction,
    /// latency µs (or failed/skipped), script, epoch s, µs [, lag µs with
    /// -R] [, retries with --max-tries]. The run's figures stay in dyno's
    /// report and store; the log is for tools that read pgbench's.
    #[arg(short = 'l', long)]
    pub log: bool,

    /// The log files' names start with this, a path (pgbench's
    /// --log-prefix).
    #[arg(
        long,
        value_name = "PREFIX",
        default_value = "pgbench_log",
        requires = "log"
    )]
    pub log_prefix: String,

    /// With -l: one line per this many seconds instead of one per
    /// transaction, in pgbench's aggregated format: start, count, sum,
    /// sum of squares, min and max of the latencies (µs), failures [, the
    /// lag's four with -R [, skipped with -L]] [, retried, retries].
    #[arg(long, value_name = "SECONDS", requires = "log", conflicts_with = "sampling_rate", value_parser = clap::value_parser!(u64).range(1..))]
    pub aggregate_interval: Option<u64>,

    /// With -l: log this share of the transactions, drawn at random
    /// (0 < RATE <= 1; e.g. 0.01 for one in a hundred).
    #[arg(long, value_name = "RATE", requires = "log", value_parser = parse_sampling_rate)]
    pub sampling_rate: Option<f64>,

    /// With -l: a failed transaction's kind (serialization, deadlock) in
    /// place of `failed`, and in aggregated lines the two counts apart.
    /// The report always names failures by SQLSTATE.
    #[arg(long)]
    pub failures_detailed: bool,

    /// Print a built-in script (NAME, or a unique prefix of it) and exit,
    /// as pgbench's --show-script does: the text to start a -f script from.
    #[arg(long, value_name = "NAME")]
    pub show_script: Option<String>,

    /// The select-only built-in (as -b select-only).
    #[arg(short = 'S', long)]
    pub select_only: bool,

    /// The simple-update built-in (as -b simple-update).
    #[arg(short = 'N', long)]
    pub skip_some_updates: bool,

    /// How statements go to the server.
    #[arg(short = 'M', long, value_enum, default_value_t = DbProtocol::Simple)]
    pub protocol: DbProtocol,

    /// The scale custom scripts (-f) see as :scale [default: 1]. As in
    /// pgbench, the built-in scripts always use the count of rows in
    /// pgbench_branches, and -s with one of them is ignored with a warning.
    #[arg(short = 's', long, value_name = "N", value_parser = clap::value_parser!(i64).range(1..))]
    pub scale: Option<i64>,

    /// Skip pgbench's clean-up before the run (vacuum pgbench_branches and
    /// pgbench_tellers, truncate pgbench_history; done by default on those
    /// that exist).
    #[arg(short = 'n', long)]
    pub no_vacuum: bool,

    /// Tries of a transaction that meets a serialization failure or a
    /// deadlock (1: no retry; 0: no limit, as pgbench's, which needs -T or
    /// -L to end the retries).
    #[arg(long, default_value_t = 1, value_name = "N", allow_negative_numbers = true, value_parser = parse_max_tries)]
    pub max_tries: u32,

    /// Seed of the random draws, to repeat a run exactly: an integer, or
    /// `time` or `rand` (a new seed, recorded with the run), as pgbench's
    /// --random-seed [default: random]. --seed is the same flag.
    #[arg(long = "random-seed", visible_alias = "seed", value_name = "N|time|rand", value_parser = parse_random_seed)]
    pub seed: Option<u64>,

    /// Defines a script variable, as pgbench's -D: NAME=VALUE, VALUE read
    /// as pgbench reads it (an integer, a double, a boolean, or else
    /// text, which SQL gets as written). Repeatable; it may set scale.
    #[arg(short = 'D', long = "define", value_name = "NAME=VALUE", value_parser = parse_definition)]
    pub define: Vec<(String, dyno_db::script::Value)>,

    /// Open model: this many transactions per second in total, at random
    /// due times (a Poisson process, as pgbench's -R, with exactly R × T of
    /// them over -T); latency counts from each due time, and the schedule
    /// lag (due time to real start) is shown beside it.
    #[arg(short = 'R', long, value_name = "TPS", value_parser = parse_tps)]
    pub rate: Option<f64>,

    /// Open model whose rate changes: stages joined by commas, each
    /// TPS@DURATION (hold a rate) or FROM..TO/DURATION (a linear ramp),
    /// e.g. '200@30s,400@30s' or '0..1000/60s'. Due times are a Poisson
    /// process following the plan; the run lasts the plan; connections
    /// stay open across stages; each stage gets its own percentiles,
    /// achieved rate, failures and schedule lag (a transaction belongs to
    /// the stage it was due in). Instead of -R, -T, -t and --warmup.
    #[arg(long, value_name = "PLAN", value_parser = parse_rate_plan)]
    pub rate_plan: Option<dyno_load::plan::RatePlan>,

    /// Count transactions slower than this as late (milliseconds, as
    /// pgbench's -L, or 50ms, 1s); with -R, a transaction already this late
    /// when its turn comes is skipped and counted.
    #[arg(short = 'L', long, value_name = "MS", value_parser = parse_latency_limit)]
    pub latency_limit: Option<std::time::Duration>,

    /// Report each command's latency percentiles, per script (pgbench's -r).
    #[arg(short = 'r', long = "report-per-command", conflicts_with = "pipeline")]
    pub per_command: bool,

    /// A new connection for every transaction, its time counted in the
    /// transaction's latency and shown apart (pgbench's -C).
    #[arg(short = 'C', long)]
    pub connect: bool,

    /// Send each run of consecutive SQL statements of a script at once
    /// and read the answers after: one round trip for the run, as
    /// pgbench's \startpipeline, with every protocol.
    #[arg(long)]
    pub pipeline: bool,

    /// A progress line on stderr every this many seconds (or 500ms, 1m),
    /// also when stderr is not a terminal [default: a line updated every
    /// second on a terminal].
    #[arg(short = 'P', long, value_name = "SECONDS", value_parser = parse_progress)]
    pub progress: Option<std::time::Duration>,

    /// Run this long first without measuring (transactions that end in it
    /// are in no figure; with -R the schedule covers it too). With -T (or
    /// the default duration), not with -t; none by default. Under
    /// --find-max, each step's warm-up (1s when not given; --warmup 0s for
    /// none).
    #[arg(long, value_name = "DURATION", allow_hyphen_values = true, value_parser = parse_duration)]
    pub warmup: Option<std::time::Duration>,

    #[command(flatten)]
    pub find_max: FindMaxArgs,

    #[command(flatten)]
    pub watch: WatchArgs,

    #[command(flatten)]
    pub segments: SegmentArgs,

    #[command(flatten)]
    pub save: SaveArgs,
}

/// Make pgbench's four tables and fill them (what `pgbench -i` does).
///
/// Drops pgbench_accounts, pgbench_branches, pgbench_history and
/// pgbench_tellers if they exist, makes them with pgbench's schema, loads
/// --scale × 100,000 accounts, 10 tellers and 1 branch per unit with COPY,
/// vacuums and analyses them, then adds the primary keys (and, with
/// --foreign-keys, the foreign keys). pgbench runs on a database dyno made,
/// and dyno on one pgbench made.
#[derive(Debug, Args)]
#[command(
    after_help = "Examples:\n  dyno db init --scale 10                     # on the server of PGHOST/PGPORT\n  dyno db init 'postgres://bench@db1/bench' -s 100 --fillfactor 90\n  pgbench -c 8 -j 2 -T 10                     # pgbench runs on the same tables"
)]
pub(crate) struct DbInitArgs {
    /// The server: a URL, a key=value connection string, or a bare
    /// database name as pgbench's DBNAME [default: libpq's environment and
    /// defaults].
    #[arg(value_name = "CONNINFO")]
    pub conninfo: Option<String>,

    /// Units of 100,000 accounts (pgbench's scale factor).
    #[arg(short = 's', long, default_value_t = 1, value_name = "N")]
    pub scale: u32,

    /// Percent of each page the load fills (10–100): room left for updates
    /// on the same page.
    #[arg(short = 'F', long, default_value_t = 100, value_name = "PERCENT")]
    pub fillfactor: u8,

    /// Also add the foreign keys between the tables (adds f to the steps).
    #[arg(long)]
    pub foreign_keys: bool,

    /// The steps, in order, as pgbench's letters: d drop, t create tables,
    /// g load with COPY, G load on the server (INSERT … generate_series),
    /// v vacuum, p primary keys, f foreign keys [default: dtgvp].
    #[arg(short = 'I', long = "init-steps", value_name = "STEPS")]
    pub init_steps: Option<String>,

    /// Create the tables UNLOGGED: faster to load and write, no WAL, and
    /// emptied by a crash.
    #[arg(long)]
    pub unlogged_tables: bool,

    /// Split pgbench_accounts into N partitions of aid (0: none).
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub partitions: u32,

    /// How --partitions splits pgbench_accounts: ranges of aid, or its
    /// hash.
    #[arg(long, value_enum, default_value_t = PartitionMethodArg::Range, value_name = "METHOD")]
    pub partition_method: PartitionMethodArg,
}

/// `--partition-method`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum PartitionMethodArg {
    Range,
    Hash,
}

/// Run the built-in reference HTTP server, the target for load tests.
///
/// HTTP/1.1, and HTTP/2 h2c with prior knowledge on the same port; with
/// --tls, HTTPS (HTTP/2 or HTTP/1.1 by ALPN); with --h3, HTTPS and HTTP/3
/// over QUIC on the same port number in UDP, so that one machine compares
/// h1, h2 and h3 against one server.
///
/// Endpoints: GET /hello (a 92-byte HTML page), /blob/<size> (exactly <size>
/// bytes: 512, 64k, 1m), /status/<code> (answers with that status),
/// /delay/<ms> (answers after a delay), /cpu/<us> (answers after <us>
/// microseconds of CPU, one request at a time: a server of known capacity,
/// 1,000,000/<us> requests per second). Keep-alive and pipelining are
/// supported. Ctrl-C stops it gracefully.
///
/// With --app bbs it also serves the bulletin board of the Jungle thesis,
/// kept in the tree database: the five functions /showBoard,
/// /createBoard, /showBoardMessage, /createBoardMessage and /editMessage,
/// whose parameters bname (board), author, msg, key (the poster's edit key)
/// and id (the message to edit) come in the query string, so that a load
/// generator that only GETs can write, or in a form body; a JSON API under
/// /api/boards; and pages for a browser at /bbs. /hello on the same server
/// is the HTTP-only ceiling to compare the board's rates with.
#[derive(Debug, Args)]
#[command(
    after_help = "Examples:\n  dyno serve\n  dyno serve --addr 0.0.0.0:8080 --threads 4\n  dyno serve --addr 127.0.0.1:0    # any free port; the address is printed\n  dyno serve --app bbs --data ./bbs-data --threads 1\n  dyno serve --h3 --addr 0.0.0.0:8443    # HTTPS on tcp/8443 and HTTP/3 on udp/8443\n  dyno http https://127.0.0.1:8443/hello --insecure -n 100000 -c 50\n  dyno http 'http://127.0.0.1:8080/showBoardMessage?bname=hello' -n 1000000 -c 100"
)]
pub(crate) struct ServeArgs {
    /// Address to listen on, HOST:PORT (127.0.0.1:8080, localhost:8080,
    /// [::1]:8080; a host name is resolved and its first address used);
    /// port 0 picks a free port.
    #[arg(long, default_value = "127.0.0.1:8080", value_parser = listen_addr)]
    pub addr: SocketAddr,

    /// Worker threads [default: the CPUs this process may use].
    #[arg(long, allow_negative_numbers = true, value_parser = threads)]
    pub threads: Option<u32>,

    /// Serve an app besides the fixed endpoints: bbs, the bulletin board
    /// (needs --data).
    #[arg(long, value_enum, value_name = "APP")]
    pub app: Option<ServeApp>,

    /// The directory the app keeps its data in (with --app bbs): made when
    /// missing, locked while the server runs; every write is on disk
    /// before it is answered.
    #[arg(long, value_name = "DIR")]
    pub data: Option<PathBuf>,

    /// Serve HTTPS: a certificate for localhost and the listening address is
    /// made at start-up and signed by itself; ALPN offers h2 and http/1.1.
    /// Clients skip the certificate check (`dyno http --insecure`).
    #[arg(long)]
    pub tls: bool,

    /// Serve HTTP/3 too, over QUIC on UDP at the same port as the TCP
    /// listener; implies --tls. HTTP/3 is always TLS 1.3 (ALPN h3), with
    /// the same self-signed certificate: clients skip its check (`dyno http
    /// --insecure`). TLS answers carry `alt-svc: h3=":PORT"` to announce
    /// it. QUIC's throughput needs large UDP socket buffers: `dyno doctor
    /// http` checks the kernel's ceilings.
    #[arg(long)]
    pub h3: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum ServeApp {
    /// The Jungle thesis's bulletin board on the tree database.
    Bbs,
}

/// Compare saved runs: is B faster than A, and by how much?
///
/// Each SIDE is a run (its id or a unique prefix), or a named group of runs
/// NAME=SELECTOR; the first side is the baseline, every other side is
/// compared with it. A SELECTOR is run ids joined by commas
/// (`old=01JD3,01JD4`), or filters joined by commas that must all hold:
/// `@tag:T`, `@host:H`, `@kind:K`, `@since:WHEN`, `@last:N` (`xeon=@tag:xeon`,
/// `a=@host:box1,@kind:http`). The filters --kind, --tag, --host, --since
/// and --limit apply to every side; --last N compares the N most recent
/// runs that match them, oldest first.
///
/// Metrics are matched by kind, name and labels (a disk test with the same
/// test, an exec command with the same command or parameter values). What
/// each metric declared decides what is done with it: primary figures (the
/// wall time, req/s, latency, tps, a disk test's throughput) are compared,
/// judged and scored; diagnostics (CPU time, client CPU) and views of
/// another metric (ops/s beside ns, IOPS beside MB/s) are compared but
/// never judged or scored; context (counts, bytes, the requested rate) is
/// not compared. For each match: both values with their intervals, the
/// ratio candidate / baseline with its 95% interval, and a verdict: better,
/// worse or ~ where repeated runs a side could be tested (Mann–Whitney U,
/// the same code as `dyno run`; 4 runs a side are needed at α = 0.05), else
/// "untested": one run a side of a latency percentile (its interval is
/// within-run: how precisely the run pinned it, not what a repeat would
/// give) or one value a side. The score is the geometric mean of the tested
/// primary figures, each once; with none there is no score. Settings and
/// machines that differ are listed, and so are metrics without a partner.
///
/// The comparison is saved (kind compare; `dyno show` reprints it) unless
/// --no-save. Exit 1 when --fail-if-worse finds a regression; 2 on bad
/// input, or when --fail-if-worse could test nothing (one run a side).
#[derive(Debug, Args)]
#[command(after_help = "Examples:
  dyno compare 01JD3 01JD7                      # two runs
  dyno compare --last 2                         # the two most recent runs
  dyno compare xeon=@tag:xeon opteron=@tag:opteron --kind http
  dyno compare --baseline @tag:main @tag:pr-42 --fail-if-worse 5
  dyno compare before=01JD3,01JD4,01JD5 after=@since:1h --format markdown")]
pub(crate) struct CompareArgs {
    /// Runs or groups to compare, the baseline first: ID, NAME=ID,ID… or
    /// NAME=@tag:T,@host:H,@kind:K,@since:WHEN,@last:N.
    #[arg(value_name = "SIDE")]
    pub sides: Vec<String>,

    /// The baseline side (a SIDE as above), put before the others: for CI,
    /// `--baseline @tag:main`.
    #[arg(long, value_name = "SIDE")]
    pub baseline: Option<String>,

    /// Compare the N most recent runs that match the filters, each its own
    /// side, the oldest as baseline.
    #[arg(long, value_name = "N", allow_negative_numbers = true, value_parser = at_least_two)]
    pub last: Option<usize>,

    #[command(flatten)]
    pub filter: FilterArgs,

    /// Relative differences below this many percent are never called.
    #[arg(long, value_name = "PCT", default_value = "2", allow_negative_numbers = true, value_parser = noise_percent)]
    pub noise: f64,

    /// Seed of the bootstrap resampling (the same runs and seed always give
    /// the same intervals).
    #[arg(long)]
    pub seed: Option<u64>,

    /// Output layout.
    #[arg(long, value_enum, default_value_t = CompareFormat::Text)]
    pub format: CompareFormat,

    /// Exit 1 when a tested primary figure is significantly worse than the
    /// baseline by more than PCT percent: worse, and its whole 95% interval
    /// beyond PCT (with --score: the geomean's).
    /// Figures it could not test are named on stderr; when it could test
    /// none (one run a side), it refuses with exit 2: save at least 4 runs
    /// a side under one tag each and compare the tags.
    #[arg(long, value_name = "PCT", allow_negative_numbers = true, value_parser = worse_percent)]
    pub fail_if_worse: Option<f64>,

    /// With --fail-if-worse: judge only the geometric-mean score.
    #[arg(long, requires = "fail_if_worse")]
    pub score: bool,

    /// Do not save the comparison in the store.
    #[arg(long)]
    pub no_save: bool,

    /// Print the comparison as JSON (the same as --format json).
    #[arg(long, conflicts_with = "format")]
    pub json: bool,

    /// Label the saved comparison (repeatable), as --tag labels a run in
    /// the subcommands that measure; here --tag is a filter every side
    /// must also match.
    #[arg(long = "label", value_name = "NAME", value_parser = parse_tag)]
    pub labels: Vec<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum CompareFormat {
    /// A table per compared side, benchstat's layout.
    Text,
    /// The same tables in Markdown.
    Markdown,
    /// One row per metric and side.
    Csv,
    /// The comparison's Run record.
    Json,
}

fn at_least_two(s: &str) -> Result<usize, String> {
    match s.parse::<usize>() {
        Ok(n) if n >= 2 => Ok(n),
        _ => Err(format!(
            "'{s}' is not a number of runs to compare: give 2 or more"
        )),
    }
}

/// A percentage from 0 to below 100, with or without a `%` sign.
fn percent_below_100(s: &str, what: &str) -> Result<f64, String> {
    match s.trim_end_matches('%').parse::<f64>() {
        Ok(v) if (0.0..100.0).contains(&v) => Ok(v),
        Ok(_) => Err(format!(
            "{what} takes a percentage from 0 to below 100, not {s}"
        )),
        Err(_) => Err(format!("'{s}' is not a percentage: give e.g. 2 or 0.5")),
    }
}

fn noise_percent(s: &str) -> Result<f64, String> {
    percent_below_100(s, "the noise band")
}

fn worse_percent(s: &str) -> Result<f64, String> {
    percent_below_100(s, "--fail-if-worse")
}

/// Parses `--since`: an RFC 3339 timestamp, a date (midnight, local time) or
/// an age such as `7d`, `12h` or `30m` counted back from now.
pub(crate) fn parse_since(s: &str) -> Result<jiff::Timestamp, String> {
    let s = s.trim();
    if let Ok(ts) = s.parse::<jiff::Timestamp>() {
        return Ok(ts);
    }
    if let Ok(date) = s.parse::<jiff::civil::Date>() {
        return date
            .to_zoned(jiff::tz::TimeZone::system())
            .map(|z| z.timestamp())
            .map_err(|e| e.to_string());
    }
    if let Ok(span) = s.parse::<jiff::Span>() {
        if span.is_negative() {
            return Err(format!(
                "'{s}' is a negative age; write it as 7d, 12h or 30m"
            ));
        }
        return jiff::Zoned::now()
            .checked_sub(span)
            .map(|z| z.timestamp())
            .map_err(|e| e.to_string());
    }
    Err(format!(
        "'{s}' is not a time: use a date (2026-11-01), a timestamp (2026-11-01T12:00:00Z) or an age (7d, 12h, 30m)"
    ))
}

/// Which saved runs to take.
#[derive(Debug, Clone, Args)]
pub(crate) struct FilterArgs {
    /// Only runs of this kind: quick, http, disk, run (`dyno run` results,
    /// stored and listed as kind exec; `exec` works too), scale, compare,
    /// db or figures (`import --figures`).
    #[arg(long, value_parser = parse_kind)]
    pub kind: Option<Kind>,

    /// Only runs carrying this tag (repeatable: all must match).
    #[arg(long = "tag", value_name = "NAME", value_parser = parse_tag)]
    pub tags: Vec<String>,

    /// Only runs made on this host name.
    #[arg(long)]
    pub host: Option<String>,

    /// Only runs started at or after this time: a date (2026-11-01), a
    /// timestamp (2026-11-01T12:00:00Z) or an age (7d, 12h, 30m).
    #[arg(long, value_name = "WHEN", value_parser = parse_since)]
    pub since: Option<jiff::Timestamp>,

    /// At most this many runs, the most recent (a skipped unreadable run
    /// counts among them).
    #[arg(long, allow_negative_numbers = true, value_parser = at_least_one)]
    pub limit: Option<u64>,
}

/// Draw saved runs as one self-contained HTML page of charts.
///
/// The page works offline and alone: charts are inline SVG drawn now from
/// the saved records, with the numbers behind each chart in a table below
/// it; it has no script and loads nothing (its Content-Security-Policy
/// forbids it). It reads well in light and dark viewers and printed.
///
/// Per run: http, the latency spectrum on a percentile axis (corrected and
/// uncorrected for --rate runs) and the answers by status; disk,
/// CrystalDiskMark's panel and the latency of each test; run, every run's
/// wall time per command (box and dots, outliers marked) and, for a sweep,
/// time against the parameter; scale, speedup with the ideal line, the
/// Amdahl and USL fits and the peak N*, then efficiency; compare, each
/// metric's improvement factor with its interval and the noise band, and
/// what differs between the sides; quick, its parts as above. More than 12
/// runs are drawn as an overview (each kind and description's headline over
/// time, and a table of the runs), so the page stays small.
///
/// --trend METRIC draws one metric of the selected runs over time, each
/// point with its interval; METRIC is written as `dyno show` displays it,
/// labels included.
///
/// The page is written to a temporary file next to FILE and renamed, so an
/// interrupted report never leaves half a file; an existing FILE is kept
/// unless --force.
#[derive(Debug, Args)]
#[command(after_help = "Examples:
  dyno report 01JD3 01JD7 -o report.html           # two runs, by id prefix
  dyno report --last 5 -o recent.html               # the five most recent runs
  dyno report --kind http --since 7d -o http.html
  dyno report --compare xeon=@tag:xeon opteron=@tag:opteron -o machines.html
  dyno report --trend requests_per_sec --tag nightly -o trend.html
  dyno report --trend 'iops{op=read, test=RND4K Q1T1}' --kind disk -o iops.html
  dyno report 01JD3 -o - > page.html               # to stdout")]
pub(crate) struct ReportArgs {
    /// Runs to draw: ids or unique prefixes (at least 4 characters), as
    /// `dyno show` takes them. Without any, the runs the filters select.
    #[arg(value_name = "RUN")]
    pub runs: Vec<String>,

    #[command(flatten)]
    pub filter: FilterArgs,

    /// The N most recent runs that match the filters (the same as --limit).
    #[arg(long, value_name = "N", conflicts_with = "limit", value_parser = at_least_one)]
    pub last: Option<u64>,

    /// Compare the runs first, as `dyno compare` does (the first RUN is the
    /// baseline; a RUN may also be a group, NAME=@tag:T or NAME=ID,ID, and
    /// --last N makes the N most recent runs the sides), and draw the
    /// comparison above the runs. The comparison is not saved; `dyno
    /// compare` saves one, and `dyno report ID` of it draws it too.
    #[arg(long, conflicts_with = "trend")]
    pub compare: bool,

    /// Draw this one metric across the selected runs over time, with each
    /// run's interval: a name as `dyno show` displays it, e.g.
    /// `requests_per_sec` or `disk_iops{op=read, test=RND4K Q1T1}`.
    #[arg(long, value_name = "METRIC")]
    pub trend: Option<String>,

    /// Where to write the page; `-` is stdout.
    #[arg(short, long, value_name = "FILE")]
    pub output: PathBuf,

    /// Replace FILE if it exists.
    #[arg(long)]
    pub force: bool,
}

/// List saved runs, oldest first: id, time, kind, host, description and
/// headline figure.
///
/// A run whose saved record cannot be read (damaged, or saved by a newer
/// dyno) is skipped and named on stderr with what to do: `dyno rm ID`
/// removes a damaged one.
#[derive(Debug, Args)]
#[command(
    after_help = "Examples:\n  dyno history\n  dyno history --kind quick --since 7d\n  dyno history --tag baseline --limit 10"
)]
pub(crate) struct HistoryArgs {
    #[command(flatten)]
    pub filter: FilterArgs,
}

/// Find where the figures of saved runs changed, and gate CI on it.
///
/// The saved runs (narrowed by the filters) fall into series: the runs of
/// one benchmark on one class of machine (the same kind and settings, less
/// seeds and what was observed, and the same CPU model, CPU count and
/// architecture), oldest first. Each primary figure of a series (each
/// label its own, and the 99th percentile of a latency) is searched for
/// change points by E-divisive means with a permutation test, as MongoDB's
/// CI and Apache Otava do: each change is named by its first run (time,
/// tags, the commit of a `rev:` tag), with its size and 95% interval and
/// its p-value, judged a regression or an improvement by the figure's
/// direction. A history too short or too noisy to show a change of
/// --min-change says so instead of "no change". Over 1,000 series of pure
/// noise, the share reporting a change is at most --alpha.
///
/// --gate judges each line's newest run: exit 1 when it starts a
/// regression (it differs from the runs since the last change by a t-test
/// at --alpha and by --min-change, the worse way) or continues one (the
/// last change is a regression), never for one run within the history's
/// own spread. Narrow the history with --since to accept a regression as
/// the new baseline.
#[derive(Debug, Args)]
#[command(
    after_help = "Examples:\n  dyno changes\n  dyno changes --kind run --since 30d\n  dyno changes --metric wall_ns --json\n  dyno changes --gate --tag nightly          # in CI: exit 1 on a regression\n  dyno changes --gate --format junit > changes.xml\n  dyno changes --gate --format github        # in a GitHub Actions step"
)]
pub(crate) struct ChangesArgs {
    #[command(flatten)]
    pub filter: FilterArgs,

    /// Only this figure (repeatable): a metric's name as `dyno show`
    /// prints it without labels (wall_ns, requests_per_sec), or a
    /// latency's percentile (`latency_ns p99`).
    #[arg(long, value_name = "NAME")]
    pub metric: Vec<String>,

    /// Significance level of each change and of the gate.
    #[arg(long, default_value_t = dyno_stats::changes::DEFAULT_ALPHA, value_parser = alpha)]
    pub alpha: f64,

    /// Smaller changes than this (percent) are not reported, nor gated.
    #[arg(long, value_name = "PERCENT", default_value_t = 100.0 * dyno_stats::changes::DEFAULT_MIN_CHANGE, value_parser = percent)]
    pub min_change: f64,

    /// The fewest runs on each side of a change.
    #[arg(long, value_name = "RUNS", default_value_t = dyno_stats::changes::DEFAULT_MIN_SEGMENT as u64, value_parser = clap::value_parser!(u64).range(2..=1000))]
    pub min_segment: u64,

    /// Judge each line's newest run: exit 1 when it starts or continues a
    /// regression.
    #[arg(long)]
    pub gate: bool,

    /// Order each series by the commits of its runs' `rev:` tags (a hash
    /// or a prefix of one, 4 characters at least), as the git repository
    /// of this directory orders them (`git rev-list --topo-order`), not by
    /// when the runs were made; a run without one is left out and counted.
    #[arg(long)]
    pub by_commit: bool,

    /// Seed of the permutation tests: the same seed, the same answer.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,

    /// Print the analysis as JSON (as --format json).
    #[arg(long, conflicts_with = "format")]
    pub json: bool,

    /// How to print it: text; json; markdown (a pull request's comment);
    /// junit (JUnit XML, for a CI's test report: a case per figure, failed
    /// when --gate finds it in a regression); github (GitHub Actions'
    /// ::error and ::notice annotations, and the Markdown added to
    /// $GITHUB_STEP_SUMMARY when it is set).
    #[arg(long, value_enum, default_value_t = ChangesFormat::Text)]
    pub format: ChangesFormat,
}

/// `dyno changes --format`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum ChangesFormat {
    Text,
    Json,
    Markdown,
    Junit,
    Github,
}

/// Show one saved run in full, or the merged run of a group.
///
/// Metrics with confidence intervals, warnings, machine and settings, then
/// the report its subcommand printed (http, run, disk, scale and quick
/// runs), rebuilt from the saved record. Given a group's name (`--group` of
/// segmented runs), the merged run of the group.
#[derive(Debug, Args)]
#[command(
    after_help = "Examples:\n  dyno show 01JDX3K2M8Q4\n  dyno show 01JDX3K2M8Q4 --json\n  dyno show 01JDX3K2M8Q4 --format ab   # an http run in ApacheBench's layout\n  dyno show g1                        # the merged run of the segments of group g1"
)]
pub(crate) struct ShowArgs {
    /// The run's id, or a unique prefix of at least 4 characters, or a
    /// group's name.
    pub id: String,

    /// Print the Run record as JSON.
    #[arg(long, conflicts_with = "format")]
    pub json: bool,

    /// Layout: `text` (dyno's) or `ab` (ApacheBench's, for http runs).
    #[arg(long, value_enum, default_value_t = ShowFormat::Text)]
    pub format: ShowFormat,
}

/// Merge the segments of one run into the run of the whole, and show it.
///
/// The segments are `--segment I/N --group NAME` on several machines:
/// counts and rates summed, latency histograms merged (percentiles of the whole, never
/// averages of percentiles), per-second timelines aligned by the wall
/// clock. A missing or failed segment is named and the run marked
/// incomplete; segments that started apart are warned about. `show`,
/// `compare` and `report` take the group's name as well.
#[derive(Debug, Args)]
#[command(
    after_help = "Examples:\n  dyno merge g1\n  dyno merge g1 --json > g1.json\n  dyno merge g1 --save          # keep the merged run as a run of its own\n  dyno --store postgres://dyno@db/dyno merge g1"
)]
pub(crate) struct MergeArgs {
    /// The group's name, as given to --group.
    #[arg(value_parser = parse_group)]
    pub group: String,

    /// Print the merged Run record as JSON.
    #[arg(long, conflicts_with = "format")]
    pub json: bool,

    /// Layout: `text` (dyno's) or `ab` (ApacheBench's, for http runs).
    #[arg(long, value_enum, default_value_t = ShowFormat::Text)]
    pub format: ShowFormat,

    /// Also save the merged run in the store, tagged `merged` (the
    /// segments' runs stay).
    #[arg(long)]
    pub save: bool,

    /// Wait up to this long for every segment to save its run before
    /// merging (a launcher's follow-up step); what has not come by then is
    /// named as missing.
    #[arg(long, value_name = "DURATION", value_parser = parse_duration)]
    pub wait: Option<std::time::Duration>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum ShowFormat {
    /// The run in full, then its subcommand's own report.
    Text,
    /// ApacheBench 2.3's layout (http runs only).
    Ab,
}

/// Write saved runs to stdout (or a file) as JSON, JSON Lines or CSV.
///
/// CSV has one row per metric of each run (run_id, kind, started_at, host,
/// description, tags, metric, labels, unit, direction, value, ci_low, ci_high,
/// ci_confidence, samples), ready for a spreadsheet pivot. `labels` is
/// `k=v;k=v` with `%`, `;` and `=` in keys and values percent-escaped (`%25`,
/// `%3B`, `%3D`); `tags` are joined with `;`, which no tag contains.
///
/// A run whose saved record cannot be read (damaged, or saved by a newer
/// dyno) is left out and named on stderr with what to do: `dyno rm ID`
/// removes a damaged one.
#[derive(Debug, Args)]
#[command(
    after_help = "Examples:\n  dyno export --format csv > runs.csv\n  dyno export --kind quick --since 30d --format jsonl -o quick.jsonl"
)]
pub(crate) struct ExportArgs {
    #[command(flatten)]
    pub filter: FilterArgs,

    /// Output format.
    #[arg(long, value_enum, default_value_t = ExportFormat::Json)]
    pub format: ExportFormat,

    /// Write to this file instead of stdout (it must not exist yet).
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum ExportFormat {
    /// A JSON array of Run records.
    Json,
    /// One Run record per line.
    Jsonl,
    /// One row per metric.
    Csv,
}

impl ExportFormat {
    pub(crate) fn name(self) -> &'static str {
        match self {
            ExportFormat::Json => "json",
            ExportFormat::Jsonl => "jsonl",
            ExportFormat::Csv => "csv",
        }
    }
}

/// Add runs from a file made by `dyno export` or `--json`.
///
/// One Run, an array of Runs, or JSON Lines. Runs already in the store are
/// skipped.
///
/// The whole file is read and checked before anything is saved: a file with
/// one bad record imports nothing.
///
/// With --figures, FILE holds figures measured outside dyno (a bench
/// script's ratios to its peers, any tool's numbers), saved as one run of
/// kind `figures` with this machine's environment, so that `dyno changes`
/// follows them like any run:
///
///   {"name": "bench/h2-vs-h2load.sh", "settings": {"rounds": 3},
///    "figures": [{"name": "rate_ratio", "labels": {"peer": "h2load"},
///                 "unit": "ratio", "direction": "higher_is_better",
///                 "samples": [1.02, 0.98, 1.01]}]}
///
/// A figure has samples (repeated rounds: its value is their mean, with a
/// 95% interval) or one value. Units: ns, bytes, bytes_per_sec,
/// ops_per_sec, requests_per_sec, count, ratio, percent.
#[derive(Debug, Args)]
#[command(
    after_help = "Examples:\n  dyno import runs.json\n  ssh lab1 dyno export --format jsonl | dyno import -\n  dyno import --figures ratios.json --tag rev:$(git rev-parse --short HEAD)"
)]
pub(crate) struct ImportArgs {
    /// The file to read, or `-` for stdin.
    pub file: PathBuf,

    /// FILE holds figures measured outside dyno, to save as one run.
    #[arg(long)]
    pub figures: bool,

    /// Label the figures' run (repeatable): `--tag rev:1a2b3c4`.
    #[arg(long = "tag", value_name = "NAME", value_parser = parse_tag, requires = "figures")]
    pub tags: Vec<String>,
}

/// Remove saved runs by id (or unique prefix).
///
/// All or nothing: every id is resolved first, and if one matches no run
/// (or several), no run is removed.
#[derive(Debug, Args)]
#[command(after_help = "Examples:\n  dyno rm 01JDX3K2M8Q4")]
pub(crate) struct RmArgs {
    /// Ids or unique prefixes of the runs to remove.
    #[arg(required = true)]
    pub ids: Vec<String>,
}

/// Print shell completions for bash, zsh, fish, elvish or PowerShell.
#[derive(Debug, Args)]
#[command(
    after_help = "Examples:\n  dyno completions bash > /etc/bash_completion.d/dyno\n  dyno completions zsh > \"${fpath[1]}/_dyno\"\n  dyno completions fish > ~/.config/fish/completions/dyno.fish"
)]
pub(crate) struct CompletionsArgs {
    pub shell: clap_complete::Shell,
}

/// Print the man page (roff), or write one page per subcommand to a folder.
#[derive(Debug, Args)]
#[command(
    after_help = "Examples:\n  dyno man | man -l -\n  dyno man --dir /usr/local/share/man/man1   # dyno.1, dyno-quick.1, …"
)]
pub(crate) struct ManArgs {
    /// Write dyno.1 and a page per subcommand (dyno-quick.1, …) into this
    /// folder. Its parent must exist: only the last folder is created, so a
    /// typo does not leave a tree of stray folders.
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
}

/// Measure a disk like CrystalDiskMark, with fio's accuracy.
///
/// Creates a test file of --size in the directory (default: the current
/// one), fills it once with incompressible data that differs block to block
/// (or zeros with --fill zero), then runs each test as reads, then writes:
/// one discarded warm-up pass of --warmup, then --runs timed passes of
/// --duration, --interval apart. The table shows the best pass, as
/// CrystalDiskMark does, with the median; the saved run keeps every pass.
///
/// Tests are named like CrystalDiskMark's: SEQ1M Q8T1 is sequential 1 MiB
/// blocks, 8 I/Os in flight per thread, 1 thread (threads take disjoint
/// regions); RND4K Q32T1 is random 4 KiB blocks at uniform, aligned offsets
/// from a recorded seed. MB/s is 1,000,000 bytes per second; latency is per
/// I/O, from submission to completion, over all timed passes.
///
/// Presets: cdm8 (default: SEQ1M Q8T1, SEQ1M Q1T1, RND4K Q32T1, RND4K
/// Q1T1), nvme (SEQ1M Q8T1, SEQ128K Q32T1, RND4K Q32T16, RND4K Q1T1), cdm3
/// (SEQ1M Q1T1, RND512K Q1T1, RND4K Q1T1, RND4K Q32T1), sync (8 KiB writes
/// made durable with fdatasync, fsync and O_DSYNC, like pg_test_fsync) and
/// meta (create, stat and unlink of --files empty files, in files/s).
///
/// I/O is direct (O_DIRECT, aligned as statx's STATX_DIOALIGN or the
/// device's logical block size says) through io_uring with one ring per
/// thread. Where the file system has no direct I/O (tmpfs and others) the
/// run says so, uses buffered I/O, drops the file's cached pages before each
/// pass where it can, carries a warning, and moves the data with a
/// pread/pwrite thread pool (io_uring is far slower for buffered I/O);
/// where io_uring is unavailable the same pool keeps the same number of
/// I/Os in flight. The run records and prints the engine and why. CPU time per I/O counts the threads that issue
/// it, as fio does; a test with more I/O threads than CPUs, or whose I/O
/// threads were busy 90% of the time or more, is marked with a warning (the
/// CPU, not the storage, may have set its figures).
///
/// Safety: dyno writes only its own new file and removes it at the end, on
/// errors, on a full disk and on Ctrl-C. An existing file is refused unless
/// --force (it is then overwritten and left in place); a block device needs
/// --device --force. Free space for the file plus 64 MiB is checked first.
#[derive(Debug, Args)]
#[command(
    after_help = "Examples:\n  dyno disk                              # cdm8 in the current directory\n  dyno disk /mnt/ssd --profile peak --size 4g\n  dyno disk --preset nvme --runs 3 --duration 3s --interval 1s\n  dyno disk --test rnd:4k:q1:t1 --test rnd:4k:q32:t4 --mix 70\n  dyno disk /var/lib/postgresql --preset sync\n  dyno disk /srv --preset meta --files 20000"
)]
pub(crate) struct DiskArgs {
    /// A directory for the test file (default: the current directory), a
    /// new file name, or with --force an existing file (with --device
    /// --force, a block device).
    #[arg(value_name = "PATH")]
    pub path: Option<PathBuf>,

    /// Which table to run: cdm8, nvme, cdm3, sync or meta.
    #[arg(long, default_value = "cdm8", value_parser = parse_preset)]
    pub preset: dyno_disk::Preset,

    /// Run only the high-queue rows (peak) or the queue-depth-1 rows (real).
    #[arg(long, value_enum, default_value_t = ProfileArg::All)]
    pub profile: ProfileArg,

    /// A test of your own instead of the preset's (repeatable):
    /// PATTERN:BLOCK[:qDEPTH][:tTHREADS], e.g. seq:1m:q8:t1 or rnd:4k:q32.
    #[arg(long = "test", value_name = "SPEC", value_parser = parse_test_spec)]
    pub tests: Vec<dyno_disk::TestSpec>,

    /// Also run each test as a mix with this percentage of reads (e.g. 70
    /// for 70/30 read/write).
    #[arg(long, value_name = "READ_PERCENT", value_parser = mix_percent)]
    pub mix: Option<u8>,

    /// Size of the test file: 1g, 512m, 1.5g … (default: 1g; 16m for
    /// --preset sync). k, m, g and KiB, MiB, GiB count in 1024s; kB, MB, GB
    /// in 1000s, like MB/s (rounded down to a whole 4 KiB). It must hold block × queue depth × threads of every test;
    /// under 1 GiB the run warns that caches can hold the file.
    #[arg(allow_hyphen_values = true, long, value_name = "SIZE", value_parser = parse_file_size)]
    pub size: Option<u64>,

    /// What the test file is filled with: random (incompressible) or zero.
    #[arg(long, value_enum, default_value_t = FillArg::Random)]
    pub fill: FillArg,

    /// Timed passes per test and operation; the best is shown.
    #[arg(allow_negative_numbers = true, long, value_name = "N", default_value_t = 5, value_parser = disk_runs)]
    pub runs: u32,

    /// Length of each timed pass.
    #[arg(allow_hyphen_values = true, short = 'd', long, value_name = "DURATION", default_value = "5s", value_parser = pass_duration)]
    pub duration: std::time::Duration,

    /// Pause between passes and between tests.
    #[arg(allow_hyphen_values = true, long, value_name = "DURATION", default_value = "5s", value_parser = parse_duration)]
    pub interval: std::time::Duration,

    /// Length of the discarded warm-up pass before each test's timed
    /// passes; 0 skips it.
    #[arg(allow_hyphen_values = true, long, value_name = "DURATION", default_value = "1s", value_parser = parse_duration)]
    pub warmup: std::time::Duration,

    /// --preset meta: files created, stated and unlinked per pass.
    #[arg(allow_negative_numbers = true, long, value_name = "N", default_value_t = 10_000, value_parser = meta_files)]
    pub files: u64,

    /// The I/O engine: io_uring, threads (pread/pwrite), or auto: the
    /// thread pool where I/O is buffered (tmpfs, --buffered: io_uring hands
    /// buffered I/O to kernel workers and was 50× slower there), io_uring
    /// with direct I/O where the kernel allows it. The run says which and why.
    #[arg(long, value_enum, default_value_t = DiskEngineArg::Auto)]
    pub engine: DiskEngineArg,

    /// Use buffered I/O even where direct I/O is available.
    #[arg(long)]
    pub buffered: bool,

    /// Overwrite an existing file (or, with --device, a block device).
    #[arg(long)]
    pub force: bool,

    /// Allow PATH to be a block device (needs --force too): its data is
    /// overwritten.
    #[arg(long)]
    pub device: bool,

    /// Seed for the fill, random offsets and mixes (default: random; the
    /// run records it).
    #[arg(long)]
    pub seed: Option<u64>,

    #[command(flatten)]
    pub watch: WatchArgs,

    #[command(flatten)]
    pub save: SaveArgs,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum ProfileArg {
    All,
    Peak,
    Real,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum FillArg {
    Random,
    Zero,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum DiskEngineArg {
    Auto,
    #[value(name = "io_uring", alias = "io-uring", alias = "uring")]
    IoUring,
    Threads,
}

/// `serve --addr`: IP:PORT, or HOST:PORT resolved here (its first
/// address); a missing port is named, with an example.
fn listen_addr(s: &str) -> Result<SocketAddr, String> {
    use std::net::ToSocketAddrs;
    let t = s.trim();
    if let Ok(addr) = t.parse::<SocketAddr>() {
        return Ok(addr);
    }
    let example =
        "give HOST:PORT, e.g. 127.0.0.1:8080 or localhost:8080 (port 0 picks a free port)";
    let bare = t.trim_start_matches('[').trim_end_matches(']');
    let has_port = t
        .rsplit_once(':')
        .is_some_and(|(host, port)| !host.is_empty() && port.parse::<u16>().is_ok());
    if bare.parse::<std::net::IpAddr>().is_ok() || !has_port {
        return Err(format!("'{t}' has no port: {example}"));
    }
    match t.to_socket_addrs() {
        Ok(mut addrs) => addrs
            .next()
            .ok_or_else(|| format!("'{t}' resolves to no address: {example}")),
        Err(e) => Err(format!("cannot resolve '{t}' ({e}): {example}")),
    }
}

fn parse_preset(s: &str) -> Result<dyno_disk::Preset, String> {
    s.parse()
}

fn parse_test_spec(s: &str) -> Result<dyno_disk::TestSpec, String> {
    dyno_disk::TestSpec::parse(s).map_err(|e| e.to_string())
}

fn mix_percent(s: &str) -> Result<u8, String> {
    count(s.trim().trim_end_matches('%'), 1, 99)
        .map(|n| n as u8)
        .map_err(|e| format!("{e} (the read share of the mix, in percent)"))
}

fn parse_file_size(s: &str) -> Result<u64, String> {
    let n = dyno_model::size::parse_size(s).map_err(|e| e.to_string())?;
    if n < 1 << 20 {
        return Err(format!(
            "'{s}' is below 1m: the test file must hold at least 1 MiB"
        ));
    }
    // Direct I/O moves whole blocks: 1GB (10^9 bytes) becomes 999,997,440.
    Ok(n / 4096 * 4096)
}

fn disk_runs(s: &str) -> Result<u32, String> {
    count(s, 1, 100).map(|n| n as u32)
}

fn meta_files(s: &str) -> Result<u64, String> {
    count(s, 1, 10_000_000)
}

fn pass_duration(s: &str) -> Result<std::time::Duration, String> {
    let d = parse_duration(s)?;
    if d < std::time::Duration::from_millis(10) {
        return Err(format!("'{s}' is too short: give at least 10ms, e.g. 5s"));
    }
    Ok(d)
}

/// `dyno http --timeout` and `--connect-timeout`: 0 would fail every
/// request at once, so anything under a millisecond is a mistake.
fn http_timeout(s: &str) -> Result<std::time::Duration, String> {
    let d = parse_duration(s)?;
    if d < std::time::Duration::from_millis(1) {
        return Err(format!("'{s}' is too short: give at least 1ms, e.g. 10s"));
    }
    Ok(d)
}

fn expect_status(s: &str) -> Result<dyno_http::StatusSet, String> {
    dyno_http::StatusSet::parse(s).map_err(|e| e.to_string())
}

/// A whole number within `min..=max`, with a message that says which
/// numbers are allowed.
fn count(s: &str, min: u64, max: u64) -> Result<u64, String> {
    let range = if max == u64::MAX {
        format!("a whole number of at least {min}")
    } else {
        format!("a whole number from {min} to {max}")
    };
    let s = s.trim();
    if s.starts_with('-') {
        return Err(format!("'{s}' is negative: give {range}"));
    }
    let n: u64 = s
        .parse()
        .map_err(|_| format!("'{s}' is not a whole number: give {range}"))?;
    if n < min || n > max {
        return Err(format!("{n} is out of range: give {range}"));
    }
    Ok(n)
}

fn repetitions(s: &str) -> Result<u32, String> {
    count(s, 1, 1000).map(|n| n as u32)
}

fn threads(s: &str) -> Result<u32, String> {
    count(s, 1, 4096).map(|n| n as u32)
}

fn at_least_one(s: &str) -> Result<u64, String> {
    count(s, 1, u64::MAX)
}

/// `-c`: a number of connections, or a range of them to sweep.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ConnectionsArg {
    pub from: u32,
    pub to: u32,
    /// Written as FROM..TO.
    pub range: bool,
}

fn connections_or_range(s: &str) -> Result<ConnectionsArg, String> {
    range_of(s, connections)
}

fn clients_or_range(s: &str) -> Result<ConnectionsArg, String> {
    range_of(s, |t| count(t, 1, 10_000).map(|n| n as u32))
}

/// A number, or a range FROM..TO of them, each read by `one`.
fn range_of(s: &str, one: impl Fn(&str) -> Result<u32, String>) -> Result<ConnectionsArg, String> {
    match s.split_once("..") {
        None => one(s).map(|n| ConnectionsArg {
            from: n,
            to: n,
            range: false,
        }),
        Some((from, to)) => {
            let (from, to) = (one(from)?, one(to)?);
            if from > to {
                return Err(format!(
                    "'{s}': a range goes up, FROM..TO with FROM ≤ TO (e.g. 1..256)"
                ));
            }
            Ok(ConnectionsArg {
                from,
                to,
                range: true,
            })
        }
    }
}

fn connections(s: &str) -> Result<u32, String> {
    count(s, 1, 1_000_000).map(|n| n as u32)
}

fn streams(s: &str) -> Result<u32, String> {
    count(s, 1, 1_000_000).map(|n| n as u32)
}

fn pipeline(s: &str) -> Result<u32, String> {
    count(s, 1, 1024).map(|n| n as u32)
}

fn warmup_runs(s: &str) -> Result<u32, String> {
    count(s, 0, 100_000).map(|n| n as u32)
}

fn run_count(s: &str) -> Result<u32, String> {
    count(s, 1, 1_000_000).map(|n| n as u32)
}

fn min_runs(s: &str) -> Result<u32, String> {
    count(s, 2, 1_000_000).map(|n| n as u32)
}

fn positive_percent(s: &str) -> Result<f64, String> {
    match percent(s) {
        Ok(p) if p > 0.0 => Ok(p),
        _ => Err(format!("'{s}' is not a percentage above 0 and at most 100")),
    }
}

/// `NAME=VALUE` for --env.
fn parse_env(s: &str) -> Result<(String, String), String> {
    match s.split_once('=') {
        Some((name, value))
            if !name.is_empty() && !name.contains('\0') && !value.contains('\0') =>
        {
            Ok((name.to_owned(), value.to_owned()))
        }
        _ => Err(format!("'{s}' is not NAME=VALUE, e.g. --env LC_ALL=C")),
    }
}

/// `NAME=VALUE` for --where.
fn parse_where(s: &str) -> Result<(String, String), String> {
    match s.split_once('=') {
        Some((name, value)) if !name.trim().is_empty() => {
            Ok((name.trim().to_owned(), value.trim().to_owned()))
        }
        _ => Err(format!("'{s}' is not NAME=VALUE, e.g. --where cc=gcc")),
    }
}

/// A duration: `10s`, `500ms`, `2m`, `1h`, or a plain number of seconds.
/// A `dyno run` limit (--timeout, --max-time): a duration above zero. A zero
/// timeout would kill the shell before it starts, and a zero --max-time
/// would leave only --min-runs.
fn run_limit(s: &str) -> Result<std::time::Duration, String> {
    let d = parse_duration(s)?;
    if d.is_zero() {
        return Err(format!(
            "'{}' is zero: give a duration above zero, such as 10s or 500ms",
            s.trim()
        ));
    }
    Ok(d)
}

pub(crate) fn parse_duration(s: &str) -> Result<std::time::Duration, String> {
    let t = s.trim();
    let hint = "write it as 10s, 500ms, 2m or 1h";
    if t.starts_with('-') {
        return Err(format!(
            "'{t}' is negative: a duration must be positive; {hint}"
        ));
    }
    if let Ok(secs) = t.parse::<f64>() {
        return std::time::Duration::try_from_secs_f64(secs)
            .map_err(|_| format!("'{t}' is not a duration: {hint}"));
    }
    let d: jiff::SignedDuration = t
        .parse()
        .map_err(|_| format!("'{t}' is not a duration: {hint}"))?;
    std::time::Duration::try_from(d).map_err(|_| format!("'{t}' is not a duration: {hint}"))
}

/// `dyno db run -R`: transactions per second.
/// pgbench's --random-seed: an integer, `time` (the clock) or `rand` (a
/// random seed).
fn parse_random_seed(s: &str) -> Result<u64, String> {
    match s {
        "time" => Ok(std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64)),
        "rand" => Ok(fastrand::u64(..)),
        _ => s
            .parse()
            .map_err(|_| format!("'{s}' is not a seed: give a non-negative integer, time or rand")),
    }
}

/// pgbench's -D NAME=VALUE.
fn parse_definition(s: &str) -> Result<(String, dyno_db::script::Value), String> {
    dyno_db::script::definition(s)
}

fn parse_tps(s: &str) -> Result<f64, String> {
    parse_rate(s).map_err(|e| e.replace("requests per second", "transactions per second"))
}

/// `dyno db run --max-tries`: 0 (no limit) or more.
fn parse_max_tries(s: &str) -> Result<u32, String> {
    match s.trim().parse::<i64>() {
        Ok(n) if n < 0 => Err(format!(
            "'{n}' is negative: give the number of tries, 1 or more (1: no retry), or 0 for no limit with -T or -L"
        )),
        Ok(n) => {
            u32::try_from(n).map_err(|_| format!("'{n}' is too many: give at most {}", u32::MAX))
        }
        Err(_) => Err(format!(
            "'{s}' is not a whole number: give the number of tries, 1 or more (1: no retry), or 0 for no limit with -T or -L"
        )),
    }
}

/// `dyno db run -L`: a bare number is milliseconds, as pgbench's.
fn parse_sampling_rate(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(r) if r > 0.0 && r <= 1.0 => Ok(r),
        _ => Err(format!(
            "'{s}' is no sampling rate: give the share of transactions to log, above 0 and at most 1 (e.g. 0.01)"
        )),
    }
}

fn parse_latency_limit(s: &str) -> Result<std::time::Duration, String> {
    let t = s.trim();
    let d = match t.parse::<f64>() {
        Ok(ms) if ms.is_finite() && ms > 0.0 => std::time::Duration::from_secs_f64(ms / 1000.0),
        Ok(_) => {
            return Err(format!(
                "'{t}' is out of range: give milliseconds above 0, e.g. 50"
            ));
        }
        Err(_) => parse_duration(t).map_err(|e| format!("{e} (a bare number is milliseconds)"))?,
    };
    if d < std::time::Duration::from_micros(1) {
        return Err(format!(
            "'{t}' is too short: give at least 1 µs, e.g. 50 (ms)"
        ));
    }
    Ok(d)
}

/// `dyno db run -P`: at least 100 ms between lines.
fn parse_progress(s: &str) -> Result<std::time::Duration, String> {
    let d = parse_duration(s)?;
    if d < std::time::Duration::from_millis(100) {
        return Err(format!(
            "'{s}' is too often: give at least 100ms, e.g. 5 (seconds)"
        ));
    }
    Ok(d)
}

fn parse_rate_plan(s: &str) -> Result<dyno_load::plan::RatePlan, String> {
    s.parse()
        .map_err(|e: dyno_load::plan::PlanError| e.to_string())
}

/// `--log-format`.
fn parse_log_format(s: &str) -> Result<dyno_http::replay::LogFormat, String> {
    dyno_http::replay::LogFormat::parse(s).map_err(|e| e.to_string())
}

/// `--speed`: a multiple above zero.
fn parse_speed(s: &str) -> Result<f64, String> {
    let t = s.trim().trim_end_matches(['x', '×']);
    match t.parse::<f64>() {
        Ok(x) if x.is_finite() && x > 0.0 && x <= 1e6 => Ok(x),
        Ok(_) => Err(format!(
            "'{s}' is out of range: give a multiple of the log's pace above 0, e.g. 2 or 0.5"
        )),
        Err(_) => Err(format!(
            "'{s}' is not a number: give a multiple of the log's pace, e.g. 2 or 0.5"
        )),
    }
}

/// `--window FROM..TO`.
fn parse_window(s: &str) -> Result<dyno_http::replay::Window, String> {
    dyno_http::replay::Window::parse(s, parse_duration)
}

/// `--methods`: HTTP tokens, upper-cased.
fn parse_replay_method(s: &str) -> Result<String, String> {
    let t = s.trim();
    if t.is_empty()
        || !t
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b))
    {
        return Err(format!(
            "'{s}' is not a method: give methods such as GET,HEAD,POST"
        ));
    }
    Ok(t.to_ascii_uppercase())
}

fn parse_rate(s: &str) -> Result<f64, String> {
    let t = s.trim();
    match t.parse::<f64>() {
        Ok(r) if r.is_finite() && r > 0.0 && r <= 1e9 => Ok(r),
        Ok(_) => Err(format!(
            "'{t}' is out of range: give requests per second above 0 (e.g. 5000)"
        )),
        Err(_) => Err(format!(
            "'{t}' is not a number: give requests per second, e.g. 5000"
        )),
    }
}

/// `--alpha`: a significance level, above 0 and at most 0.5.
fn alpha(s: &str) -> Result<f64, String> {
    match s.trim().parse::<f64>() {
        Ok(a) if a > 0.0 && a <= 0.5 => Ok(a),
        _ => Err(format!(
            "'{s}' is not a significance level: give a number above 0 and at most 0.5, e.g. 0.01"
        )),
    }
}

fn percent(s: &str) -> Result<f64, String> {
    let t = s.trim().trim_end_matches('%');
    match t.parse::<f64>() {
        Ok(p) if (0.0..=100.0).contains(&p) => Ok(p),
        _ => Err(format!("'{s}' is not a percentage from 0 to 100")),
    }
}

/// A tag is a short label without commas or spaces at either end.
/// `--kind`: a kind name as stored, or `run` for what `dyno run` makes
/// (kind exec). The model's kind cpu is accepted (imported runs may carry
/// it) but not offered: no command makes it.
pub(crate) fn parse_kind(s: &str) -> Result<Kind, String> {
    if s.trim().eq_ignore_ascii_case("run") {
        return Ok(Kind::Exec);
    }
    s.trim().parse().map_err(|_| {
        format!(
            "unknown run kind '{s}': expected one of quick, http, disk, run (`dyno run` results, also called exec), scale, compare, db, figures"
        )
    })
}

fn parse_segment(s: &str) -> Result<dyno_model::Segment, String> {
    s.parse()
        .map_err(|e: dyno_model::ParseSegmentError| e.to_string())
}

/// A group name: a word of letters, digits and `-_.`, so that it reads
/// the same in a tag, a Kubernetes name and a shell.
pub(crate) fn parse_group(s: &str) -> Result<String, String> {
    let name = s.trim();
    if name.is_empty() || name.len() > 48 {
        return Err(format!(
            "'{name}': a group name has 1 to 48 characters, e.g. g1 or xeon-vs-opteron"
        ));
    }
    if !name
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
    {
        return Err(format!(
            "'{name}': a group name is letters, digits, '-', '_' and '.', e.g. g1 or web-2026-11"
        ));
    }
    Ok(name.to_owned())
}

/// A Kubernetes object name (a DNS-1123 label: lower case, digits, '-').
fn parse_k8s_name(s: &str) -> Result<String, String> {
    let ok = !s.is_empty()
        && s.len() <= 63
        && s.chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
        && !s.starts_with('-')
        && !s.ends_with('-');
    if ok {
        Ok(s.to_owned())
    } else {
        Err(format!(
            "'{s}' is not a Kubernetes name: 1 to 63 lower-case letters, digits and '-', starting and ending with a letter or digit, e.g. dyno-store"
        ))
    }
}

/// A Kubernetes resource quantity: a number with an optional suffix
/// (m, k, M, G, T, Ki, Mi, Gi, Ti).
fn parse_quantity(s: &str) -> Result<String, String> {
    let number_end = s
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(s.len());
    let (number, suffix) = s.split_at(number_end);
    let number_ok = !number.is_empty() && number.parse::<f64>().is_ok_and(|n| n > 0.0);
    let suffix_ok = [
        "", "m", "k", "M", "G", "T", "P", "E", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei",
    ]
    .contains(&suffix);
    if number_ok && suffix_ok {
        Ok(s.to_owned())
    } else {
        Err(format!(
            "'{s}' is not a Kubernetes quantity: a positive number with an optional suffix, e.g. 2, 500m (CPU) or 512Mi, 1Gi (memory)"
        ))
    }
}

/// A container image reference: no spaces, not empty.
fn parse_image(s: &str) -> Result<String, String> {
    if s.is_empty() || s.chars().any(char::is_whitespace) {
        return Err(format!(
            "'{s}' is not an image reference: give one like registry.example/dyno:0.1"
        ));
    }
    Ok(s.to_owned())
}

fn parse_start_at(s: &str) -> Result<jiff::Timestamp, String> {
    s.trim().parse().map_err(|e| {
        format!(
            "'{s}' is not a time ({e}): write it as RFC 3339 with a zone, e.g. 2026-11-23T20:00:00Z"
        )
    })
}

fn parse_tag(s: &str) -> Result<String, String> {
    let tag = s.trim();
    if tag.is_empty() {
        return Err("a tag cannot be empty".into());
    }
    if tag.len() > 64 {
        return Err(format!("tag '{tag}' is longer than 64 characters"));
    }
    if tag.contains([',', ';']) || tag.chars().any(char::is_control) {
        return Err(format!(
            "tag '{tag}' contains a comma, semicolon or control character; repeat --tag for several tags"
        ));
    }
    Ok(tag.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn verify_cli() {
        Cli::command().debug_assert();
        command().debug_assert();
    }

    #[test]
    fn help_lists_every_subcommand_once_in_its_group() {
        let mut listed: Vec<&str> = GROUPS
            .iter()
            .flat_map(|(_, names)| names.iter().copied())
            .collect();
        let cli = Cli::command();
        let mut have: Vec<&str> = cli.get_subcommands().map(clap::Command::get_name).collect();
        listed.sort_unstable();
        let mut once = listed.clone();
        once.dedup();
        assert_eq!(once, listed, "a subcommand is in two groups");
        have.sort_unstable();
        assert_eq!(listed, have, "GROUPS and the subcommands differ");
        let help = command().render_long_help().to_string();
        let measure = help.find("Measure:").expect("a Measure group");
        let shell = help.find("Shell:").expect("a Shell group");
        assert!(measure < help.find("  quick ").unwrap() && shell < help.find("  man ").unwrap());
        assert!(help.contains("130 interrupted"), "{help}");
        assert!(
            help.contains("Options:") && help.contains("--store"),
            "{help}"
        );
    }

    #[test]
    fn counts_explain_their_range() {
        assert_eq!(repetitions("5").unwrap(), 5);
        assert!(repetitions("-5").unwrap_err().contains("negative"));
        assert!(repetitions("0").unwrap_err().contains("from 1 to 1000"));
        assert!(threads("x").unwrap_err().contains("not a whole number"));
        assert!(at_least_one("0").unwrap_err().contains("at least 1"));
    }

    #[test]
    fn durations_accept_units_and_plain_seconds() {
        use std::time::Duration;
        assert_eq!(parse_duration("10s").unwrap(), Duration::from_secs(10));
        assert_eq!(parse_duration("500ms").unwrap(), Duration::from_millis(500));
        assert_eq!(parse_duration("2m").unwrap(), Duration::from_secs(120));
        assert_eq!(parse_duration("1.5").unwrap(), Duration::from_millis(1500));
        assert!(parse_duration("-1s").unwrap_err().contains("negative"));
        assert!(parse_duration("soon").unwrap_err().contains("10s"));
        assert!(parse_rate("0").is_err() && parse_rate("x").is_err());
        assert_eq!(percent("5%").unwrap(), 5.0);
        assert!(percent("101").is_err());
    }

    #[test]
    fn kind_run_is_exec_and_unmade_kinds_are_not_offered() {
        assert_eq!(parse_kind("run").unwrap(), Kind::Exec);
        assert_eq!(parse_kind("Exec").unwrap(), Kind::Exec);
        assert_eq!(parse_kind("quick").unwrap(), Kind::Quick);
        let err = parse_kind("htttp").unwrap_err();
        assert!(
            err.contains("unknown run kind 'htttp'") && err.contains("run"),
            "{err}"
        );
        // db is made by `dyno db run`; cpu by no command.
        assert!(!err.contains("cpu") && err.contains("db"), "{err}");
        let help = Cli::command()
            .find_subcommand_mut("history")
            .unwrap()
            .render_long_help()
            .to_string();
        assert!(help.contains("run (`dyno run` results"), "{help}");
        assert!(!help.contains("cpu") && help.contains(" db"), "{help}");
    }

    #[test]
    fn tags_are_validated() {
        assert_eq!(parse_tag(" base ").unwrap(), "base");
        assert!(parse_tag("").is_err());
        assert!(parse_tag("a,b").unwrap_err().contains("repeat --tag"));
    }

    #[test]
    fn run_flags_are_validated() {
        assert_eq!(
            parse_env("LC_ALL=C").unwrap(),
            ("LC_ALL".into(), "C".into())
        );
        assert_eq!(parse_env("X=a=b").unwrap(), ("X".into(), "a=b".into()));
        assert!(parse_env("=C").unwrap_err().contains("NAME=VALUE"));
        assert!(parse_env("LC_ALL").is_err());
        assert!(
            min_runs("1").unwrap_err().contains("at least 2")
                || min_runs("1").unwrap_err().contains("from 2")
        );
        assert!(positive_percent("0").is_err());
        assert_eq!(warmup_runs("0").unwrap(), 0);
    }

    #[test]
    fn since_accepts_dates_timestamps_and_ages() {
        let ts = parse_since("2026-11-01T12:00:00Z").unwrap();
        assert_eq!(ts.to_string(), "2026-11-01T12:00:00Z");
        assert!(parse_since("2026-11-01").is_ok());
        let week = parse_since("7d").unwrap();
        let age = jiff::Timestamp::now().duration_since(week);
        assert!((age.as_secs() - 7 * 86_400).abs() < 3_700, "{age:?}");
        let hour = parse_since("90m").unwrap();
        let age = jiff::Timestamp::now().duration_since(hour);
        assert!((age.as_secs() - 5_400).abs() < 60, "{age:?}");
        let err = parse_since("yesterday-ish").unwrap_err();
        assert!(err.contains("7d"), "{err}");
    }
}
