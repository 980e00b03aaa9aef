//! `dyno db`: pgbench's job on a real PostgreSQL server.

use std::io::IsTerminal;
use std::time::Instant;

use anyhow::{Context, Result, bail};
use dyno_db::Target;
use dyno_db::init::{InitSettings, init};
use dyno_db::run::{Outcome, Protocol, RunSettings, Stop, Weighted};
use dyno_db::script::{self, Script};
use dyno_model::{Kind, Run, Warning};
use serde_json::json;

use super::interrupt::{Interrupt, Second};
use super::{environment, finish, print, store_for};
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
    let (scripts, builtin) = scripts(&args)?;
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
        (None, None) => Stop::Duration(std::time::Duration::from_secs(10)),
    };
    let protocol = match args.protocol {
        DbProtocol::Simple => Protocol::Simple,
        DbProtocol::Extended => Protocol::Extended,
        DbProtocol::Prepared => Protocol::Prepared,
    };
    let seed = args.seed.unwrap_or_else(|| fastrand::u64(..));
    let settings = RunSettings {
        target: target.clone(),
        scripts,
        clients,
        threads,
        stop,
        protocol,
        // As pgbench: the built-ins' scale is counted from the tables; a
        // custom script's is --scale, or 1.
        scale: if builtin {
            args.scale
        } else {
            Some(args.scale.unwrap_or(1))
        },
        max_tries: args.max_tries,
        seed,
    };
    let env = environment();
    let store = store_for(&args.save)?;
    let interrupt = Interrupt::install(Second::Exits)?;
    let tty = std::io::stderr().is_terminal();
    let started = Instant::now();
    let outcome = dyno_db::run::run(&settings, interrupt.flag(), |p| {
        if tty {
            eprint!(
                "\r\x1b[2K{:.0} s: {} transactions ({:.0} tps), {} failed",
                p.elapsed.as_secs_f64(),
                group(p.transactions),
                p.transactions as f64 / p.elapsed.as_secs_f64().max(1e-9),
                p.failed
            );
        }
    });
    if tty {
        eprint!("\r\x1b[2K");
    }
    let outcome = outcome?;
    if outcome.interrupted && outcome.transactions == 0 && outcome.failed_total() == 0 {
        eprintln!("dyno: interrupted before any transaction ended; nothing was saved");
        return Ok(ExitStatus::Interrupted);
    }
    let mut run = Run::new(Kind::Db, description(&settings));
    run.environment = env;
    run.duration_ns = started.elapsed().as_nanos() as u64;
    run.settings = json!({
        "target": target.to_string(),
        "server_version": outcome.server.version,
        "server_settings": outcome.server.settings.iter().map(|(k, v)| (k.clone(), json!(v))).collect::<serde_json::Map<_, _>>(),
        "scripts": settings.scripts.iter().map(|w| json!({"name": w.script.name(), "weight": w.weight})).collect::<Vec<_>>(),
        "scale": outcome.scale,
        "clients": clients,
        "threads": threads,
        "transactions": match stop { Stop::Transactions(n) => Some(n), Stop::Duration(_) => None },
        "duration_ns": match stop { Stop::Duration(d) => Some(d.as_nanos() as u64), Stop::Transactions(_) => None },
        "protocol": protocol.name(),
        "model": "closed",
        "max_tries": settings.max_tries,
        "seed": seed,
        "aborted": outcome.aborted,
    });
    let names: Vec<&str> = settings.scripts.iter().map(|w| w.script.name()).collect();
    run.metrics = outcome.metrics(threads, &names);
    run.headline = Some("transactions_per_sec".into());
    run.warnings.extend(dyno_env::preflight(&run.environment));
    run.warnings.extend(judge(&outcome, threads));
    let run = finish(run, &args.save, store, dyno_report::db_report)?;
    if outcome.interrupted {
        eprintln!("dyno: interrupted; the partial run {} was kept", run.id);
        return Ok(ExitStatus::Interrupted);
    }
    if !outcome.aborted.is_empty() || outcome.failed_total() > 0 {
        eprintln!(
            "dyno: {} of {clients} clients stopped on an error and {} transactions failed: see above",
            outcome.aborted.len(),
            outcome.failed_total()
        );
        return Ok(ExitStatus::ChecksFailed);
    }
    Ok(ExitStatus::Success)
}

/// The scripts the flags name, parsed (tpcb-like when none), and whether a
/// built-in is among them.
fn scripts(args: &DbRunArgs) -> Result<(Vec<Weighted>, bool)> {
    let builtin = |spec: &str| -> Result<Weighted> {
        let (name, weight) = script::weighted(spec).map_err(anyhow::Error::msg)?;
        let (name, text) = script::builtin(name).map_err(anyhow::Error::msg)?;
        let script = Script::parse(name, text).context("a built-in script does not parse")?;
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
        let script = Script::parse(path, &text)?;
        scripts.push(Weighted { script, weight });
    }
    if scripts.is_empty() {
        scripts.push(builtin("tpcb-like")?);
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

fn description(settings: &RunSettings) -> String {
    let names: Vec<&str> = settings.scripts.iter().map(|w| w.script.name()).collect();
    format!(
        "{} on {}, -c {} -j {}",
        names.join(" + "),
        settings.target,
        settings.clients,
        settings.threads
    )
}

/// Warnings about what the figures mean.
fn judge(outcome: &Outcome, threads: usize) -> Vec<Warning> {
    let mut warnings = Vec::new();
    let cpu = outcome.client_cpu_percent(threads);
    if cpu >= 90.0 {
        warnings.push(Warning {
            code: "client_saturated".into(),
            message: format!(
                "dyno used {cpu:.0}% of its {threads} thread{}: the client may be the bottleneck, so the figures are a lower bound for the server; add threads (-j) or a second client machine",
                if threads == 1 { "" } else { "s" }
            ),
        });
    }
    warnings
}
