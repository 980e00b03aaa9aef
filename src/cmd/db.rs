//! `dyno db`: pgbench's job on a real PostgreSQL server.

use std::fmt::Write as _;
use std::io::IsTerminal;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use dyno_db::init::{InitSettings, init};
use dyno_db::run::{Outcome, Progress, Protocol, RunSettings, Stop, Weighted};
use dyno_db::script::{self, Script};
use dyno_db::{Target, warnings};
use dyno_model::{Kind, Run, Warning};
use serde_json::json;

use super::interrupt::{Interrupt, Second};
use super::segment::{self, Plan};
use super::{environment, finish, open_store, print, store_for};
use crate::ExitStatus;
use crate::cli::{DbArgs, DbCommand, DbInitArgs, DbProtocol, DbRunArgs};

pub fn run(args: DbArgs) -> Result<ExitStatus> {
    match args.command {
        DbCommand::Init(args) => init_tables(args),
        DbCommand::Run(args) => run_load(*args),
    }
}

fn init_tables(args: DbInitArgs) -> Result<ExitStatus> {
    let settings = InitSettings {
        scale: args.scale,
        fillfactor: args.fillfactor,
        foreign_keys: args.foreign_keys,
    };
    if let Err(why) = settings.validate() {
        bail!(why);
    }
    let target = Target::from_env(args.conninfo.as_deref().unwrap_or(""))?;
    let tty = std::io::stderr().is_terminal();
    let started = Instant::now();
    let mut shown = Instant::now();
    let outcome = init(&target, settings, |done, total| {
        if tty && (shown.elapsed().as_millis() >= 200 || done == total) {
            shown = Instant::now();
            eprint!(
                "\r\x1b[2Kloading pgbench_accounts: {} of {} rows ({:.0}%)",
                group(done),
                group(total),
                100.0 * done as f64 / total.max(1) as f64
            );
        }
    });
    if tty {
        eprint!("\r\x1b[2K");
    }
    let outcome = outcome?;
    let steps: Vec<String> = outcome
        .steps
        .iter()
        .map(|(step, took)| format!("{} {:.2} s", step.name(), took.as_secs_f64()))
        .collect();
    print(&format!(
        "dyno db init: scale {} ({} accounts) on {target}, PostgreSQL {}: done in {:.2} s ({})\n",
        args.scale,
        group(outcome.accounts),
        outcome.server_version,
        started.elapsed().as_secs_f64(),
        steps.join(", ")
    ))?;
    Ok(ExitStatus::Success)
}

/// 1234567 as "1,234,567".
fn group(n: u64) -> String {
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

fn run_load(args: DbRunArgs) -> Result<ExitStatus> {
    let env = environment();
    let mut plan = Plan::from_args(&args.segments, env.hostname.as_deref())?;
    if plan.is_some() && args.save.no_save {
        bail!(
            "--segment meets the other segments in the store and saves its run there for `dyno merge`: drop --no-save"
        );
    }
    let settings = run_settings(&args, plan.as_ref())?;
    if let Some(plan) = &mut plan {
        plan.publish(published(&args, &settings));
    }
    // A segment's store is where the segments meet: never the local
    // fallback, where it would wait alone.
    let mut store = match &plan {
        Some(_) => Some(open_store()?),
        None => store_for(&args.save)?,
    };
    let interrupt = Interrupt::install(Second::Exits)?;
    let started = Instant::now();
    let mut progress = ProgressLine::new(args.progress);
    let mut met = None;
    let outcome = dyno_db::run::run_gated(
        &settings,
        interrupt.flag(),
        |p| progress.show(p),
        || segment::gate(plan.as_ref(), store.as_deref_mut(), &mut met),
    );
    progress.clear();
    let outcome = match outcome {
        Err(dyno_db::run::RunError::Setup(why)) if plan.is_some() && met.is_none() => {
            bail!("{why}; nothing was run")
        }
        other => other?,
    };
    if outcome.interrupted && outcome.transactions == 0 && outcome.failed_total() == 0 {
        eprintln!("dyno: interrupted before any transaction ended; nothing was saved");
        return Ok(ExitStatus::Interrupted);
    }
    // A segment is described as the whole run it is part of.
    let jobs = args.jobs.min(args.clients);
    let mut run = Run::new(Kind::Db, description(&settings, args.clients, jobs));
    run.environment = env;
    run.duration_ns = started.elapsed().as_nanos() as u64;
    run.settings = recorded(&settings, &outcome);
    run.metrics = outcome.metrics(&settings);
    run.headline = Some("transactions_per_sec".into());
    run.warnings.extend(dyno_env::preflight(&run.environment));
    run.warnings.extend(
        warnings::judge(&outcome, &settings, args.scale)
            .into_iter()
            .map(Warning::from),
    );
    let mut save = args.save.clone();
    if let (Some(plan), Some(met)) = (&plan, &met) {
        plan.record(&mut run, met, outcome.started_at);
        save.tags.push(plan.tag());
    }
    let run = finish(run, &save, store, dyno_report::db_report)?;
    if outcome.interrupted {
        eprintln!("dyno: interrupted; the partial run {} was kept", run.id);
        return Ok(ExitStatus::Interrupted);
    }
    if !outcome.aborted.is_empty() || outcome.failed_total() > 0 {
        eprintln!(
            "dyno: {} of {} clients stopped on an error and {} transactions failed: see above",
            outcome.aborted.len(),
            settings.clients,
            outcome.failed_total()
        );
        return Ok(ExitStatus::ChecksFailed);
    }
    Ok(ExitStatus::Success)
}

/// The engine's settings from the flags; a segment's share of them with
/// `plan`.
fn run_settings(args: &DbRunArgs, plan: Option<&Plan>) -> Result<RunSettings> {
    let (scripts, builtin) = scripts(args)?;
    let target = Target::from_env(args.conninfo.as_deref().unwrap_or(""))?;
    let clients = args.clients as usize;
    let threads = if args.jobs > args.clients {
        eprintln!(
            "dyno: -j {} is more than -c {}: using {} thread{} (a thread without a client would sit idle)",
            args.jobs,
            args.clients,
            args.clients,
            if args.clients == 1 { "" } else { "s" }
        );
        clients
    } else {
        args.jobs as usize
    };
    let stop = match (args.transactions, args.time) {
        (Some(n), _) => Stop::Transactions(n),
        (None, Some(d)) => Stop::Duration(d),
        (None, None) => Stop::Duration(Duration::from_secs(10)),
    };
    if args.max_tries == 0 && matches!(stop, Stop::Transactions(_)) && args.latency_limit.is_none()
    {
        bail!(
            "--max-tries 0 (no limit on the tries) with -t has nothing to end the retries: add a duration (-T) or a latency limit (-L), or give a number of tries"
        );
    }
    // A segment takes its share of the clients and threads, and the rate
    // in proportion to its clients (as pgbench shares a rate out over its
    // threads); -t stays per client.
    let (clients, threads, rate, segment) = match plan {
        Some(plan) => {
            // -t is per client: every segment's clients run it whole.
            let (c, t) = plan.share(args.clients, threads, None)?;
            let rate = args
                .rate
                .map(|r| r * f64::from(c) / f64::from(args.clients));
            (c as usize, t, rate, plan.segment)
        }
        None => (clients, threads, args.rate, dyno_model::Segment::WHOLE),
    };
    let protocol = match args.protocol {
        DbProtocol::Simple => Protocol::Simple,
        DbProtocol::Extended => Protocol::Extended,
        DbProtocol::Prepared => Protocol::Prepared,
    };
    if let (Some(rate), Stop::Duration(d)) = (rate, stop)
        && rate * d.as_secs_f64() < 0.5
    {
        bail!(
            "-R {rate} over -T {:.3} s schedules no transaction at all: raise the rate or the duration",
            d.as_secs_f64()
        );
    }
    Ok(RunSettings {
        target,
        scripts,
        clients,
        threads,
        stop,
        protocol,
        // As pgbench: the built-ins' scale is counted from the tables; a
        // custom script's is --scale, or 1.
        // (-s with a built-in is ignored with pgbench's warning: see
        // dyno_db::warnings::judge).
        scale: if builtin {
            None
        } else {
            Some(args.scale.unwrap_or(1))
        },
        vacuum: !args.no_vacuum,
        max_tries: args.max_tries,
        seed: args.seed.unwrap_or_else(|| fastrand::u64(..)),
        rate,
        latency_limit: args.latency_limit,
        per_statement: args.per_command,
        reconnect: args.connect,
        pipeline: args.pipeline,
        progress_every: args.progress.unwrap_or(Duration::from_secs(1)),
        segment,
    })
}

/// What every segment of a `db run` must share, published at the
/// barrier: the server, the scripts (their parsed text, hashed), the whole
/// run's -c and -j, the end, the rate and the protocol's flags.
fn published(args: &DbRunArgs, settings: &RunSettings) -> segment::Settings {
    let mut s = segment::Settings::new("db run");
    s.put("target", settings.target.to_string())
        .put(
            "scripts",
            settings
                .scripts
                .iter()
                .map(|w| format!("{}@{}", w.script.name(), w.weight))
                .collect::<Vec<_>>()
                .join(", "),
        )
        .hash(
            "script_text",
            format!(
                "{:?}",
                settings
                    .scripts
                    .iter()
                    .map(|w| &w.script)
                    .collect::<Vec<_>>()
            )
            .as_bytes(),
        )
        .put("clients", args.clients)
        .put("jobs", args.jobs)
        .opt("transactions", args.transactions)
        .opt("duration", args.time.map(|d| format!("{d:?}")))
        .opt("rate", args.rate)
        .opt(
            "latency_limit",
            args.latency_limit.map(|d| format!("{d:?}")),
        )
        .put("protocol", format!("{:?}", settings.protocol))
        .opt("scale", args.scale)
        .put("max_tries", args.max_tries)
        .put("report_per_command", args.per_command)
        .put("connect", args.connect)
        .put("pipeline", args.pipeline);
    s
}

/// The settings as the run records them, with the server's.
fn recorded(settings: &RunSettings, outcome: &Outcome) -> serde_json::Value {
    let nanos = |d: Duration| d.as_nanos() as u64;
    json!({
        "target": settings.target.to_string(),
        "server_version": outcome.server.version,
        "server_settings": outcome.server.settings.iter().map(|(k, v)| (k.clone(), json!(v))).collect::<serde_json::Map<_, _>>(),
        "scripts": settings.scripts.iter().map(|w| json!({"name": w.script.name(), "weight": w.weight})).collect::<Vec<_>>(),
        "scale": outcome.scale,
        "clients": settings.clients,
        "threads": settings.threads,
        "transactions": match settings.stop { Stop::Transactions(n) => Some(n), Stop::Duration(_) => None },
        "duration_ns": match settings.stop { Stop::Duration(d) => Some(nanos(d)), Stop::Transactions(_) => None },
        "protocol": settings.protocol.name(),
        "model": if settings.rate.is_some() { "open" } else { "closed" },
        "rate_per_sec": settings.rate,
        "latency_limit_ns": settings.latency_limit.map(nanos),
        "reconnect": settings.reconnect,
        "pipeline": settings.pipeline,
        "max_tries": settings.max_tries,
        "vacuum": settings.vacuum,
        "clean_up": outcome.vacuum,
        "seed": settings.seed,
        "aborted": outcome.aborted,
    })
}

/// The progress shown while a run goes on: with -P, a line every
/// interval with that interval's figures, as pgbench's; otherwise, on a
/// terminal, one line rewritten every second.
struct ProgressLine {
    every: Option<Duration>,
    tty: bool,
    last: Option<Progress>,
}

impl ProgressLine {
    fn new(every: Option<Duration>) -> ProgressLine {
        ProgressLine {
            every,
            tty: std::io::stderr().is_terminal(),
            last: None,
        }
    }

    fn show(&mut self, p: Progress) {
        let last = self.last.replace(p).unwrap_or_default();
        let done = p.transactions - last.transactions;
        let secs = (p.elapsed - last.elapsed).as_secs_f64().max(1e-9);
        let mut line = format!(
            "{:.1} s: {:.1} tps",
            p.elapsed.as_secs_f64(),
            done as f64 / secs
        );
        if done > 0 {
            let _ = write!(
                line,
                ", latency {:.3} ms",
                (p.latency_sum - last.latency_sum).as_secs_f64() * 1e3 / done as f64
            );
        }
        let started = p.started - last.started;
        if started > 0 && p.lag_sum > Duration::ZERO {
            let _ = write!(
                line,
                ", lag {:.3} ms",
                (p.lag_sum - last.lag_sum).as_secs_f64() * 1e3 / started as f64
            );
        }
        if p.skipped > 0 {
            let _ = write!(line, ", {} skipped", p.skipped - last.skipped);
        }
        let _ = write!(line, ", {} failed", p.failed - last.failed);
        if self.every.is_some() {
            eprintln!("progress: {line}");
        } else if self.tty {
            eprint!("\r\x1b[2K{line}");
        }
    }

    fn clear(&self) {
        if self.every.is_none() && self.tty {
            eprint!("\r\x1b[2K");
        }
    }
}

/// The scripts the flags name, parsed (tpcb-like when none), and whether a
/// built-in is among them.
fn scripts(args: &DbRunArgs) -> Result<(Vec<Weighted>, bool)> {
    let builtin = |spec: &str| -> Result<Weighted> {
        let (name, weight) = script::weighted(spec).map_err(anyhow::Error::msg)?;
        let (name, text) = script::builtin(name).map_err(anyhow::Error::msg)?;
        let script = Script::parse_with(name, text, &args.define)
            .context("a built-in script does not parse")?;
        Ok(Weighted { script, weight })
    };
    let mut scripts = Vec::new();
    if args.select_only {
        scripts.push(builtin("select-only")?);
    }
    if args.skip_some_updates {
        scripts.push(builtin("simple-update")?);
    }
    for spec in &args.builtins {
        scripts.push(builtin(spec)?);
    }
    for spec in &args.files {
        let (path, weight) = script::weighted(spec).map_err(anyhow::Error::msg)?;
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("could not read the script '{path}'"))?;
        let script = Script::parse_with(path, &text, &args.define)?;
        scripts.push(Weighted { script, weight });
    }
    if scripts.is_empty() {
        scripts.push(builtin("tpcb-like")?);
    }
    if args.protocol != DbProtocol::Simple {
        for w in &scripts {
            w.script.check_parameters()?;
        }
    }
    if scripts.iter().all(|w| w.weight == 0) {
        bail!("every script has weight 0: give at least one a weight above 0 (NAME@WEIGHT)");
    }
    // Given, or the default.
    let uses_builtin = args.select_only
        || args.skip_some_updates
        || !args.builtins.is_empty()
        || args.files.is_empty();
    Ok((scripts, uses_builtin))
}

fn description(settings: &RunSettings, clients: u32, jobs: u32) -> String {
    let names: Vec<&str> = settings.scripts.iter().map(|w| w.script.name()).collect();
    format!(
        "{} on {}, -c {clients} -j {jobs}",
        names.join(" + "),
        settings.target,
    )
}

/// Clients of `dyno quick`'s db line.
pub const QUICK_CLIENTS: usize = 8;

/// The variables of libpq's environment that name a server; `dyno quick`
/// has a db line only when one of them is set.
const SERVER_VARIABLES: [&str; 4] = ["PGHOST", "PGPORT", "PGDATABASE", "PGSERVICE"];

/// Whether the environment names a PostgreSQL server for `dyno quick`.
pub fn configured() -> bool {
    SERVER_VARIABLES
        .iter()
        .any(|v| std::env::var_os(v).is_some_and(|s| !s.is_empty()))
}

/// What `dyno quick` says when no server is configured.
pub const NOT_CONFIGURED: &str = "no PostgreSQL server is configured, so there is no db line: set PGHOST, PGPORT and PGDATABASE (libpq's environment) to a server whose database `dyno db init` has prepared, and quick adds a select-only line";

/// `dyno quick`'s db line: select-only, prepared, on the server of libpq's
/// environment, for `duration`. It only reads: a database without the
/// pgbench tables is an error that says how to make them, never a reason
/// to make them. The metrics come named `db_…`.
pub fn quick_measure(
    duration: Duration,
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
) -> Result<(Vec<dyno_model::Metric>, Vec<Warning>, serde_json::Value)> {
    let (name, text) = script::builtin("select-only").map_err(anyhow::Error::msg)?;
    let script = Script::parse(name, text).context("a built-in script does not parse")?;
    let threads = dyno_env::available_cpus().clamp(1, QUICK_CLIENTS);
    let settings = RunSettings {
        target: Target::from_env("")?,
        scripts: vec![Weighted { script, weight: 1 }],
        clients: QUICK_CLIENTS,
        threads,
        stop: Stop::Duration(duration),
        protocol: Protocol::Prepared,
        scale: None,
        vacuum: false,
        max_tries: 1,
        seed: fastrand::u64(..),
        rate: None,
        latency_limit: None,
        per_statement: false,
        reconnect: false,
        pipeline: false,
        progress_every: Duration::from_secs(1),
        segment: dyno_model::Segment::WHOLE,
    };
    let outcome = dyno_db::run::run(&settings, stop, |_| {})?;
    if let Some(why) = outcome.aborted.first() {
        bail!("{why}");
    }
    let metrics = outcome
        .metrics(&settings)
        .into_iter()
        .map(|m| m.with_prefix("db"))
        .collect();
    Ok((
        metrics,
        warnings::judge(&outcome, &settings, None)
            .into_iter()
            .map(Into::into)
            .collect(),
        recorded(&settings, &outcome),
    ))
}
