//! `dyno db`: pgbench's job on a real PostgreSQL server.

use std::io::IsTerminal;
use std::time::Instant;

use anyhow::{Result, bail};
use dyno_db::Target;
use dyno_db::init::{InitSettings, init};

use super::print;
use crate::ExitStatus;
use crate::cli::{DbArgs, DbCommand, DbInitArgs};

pub fn run(args: DbArgs) -> Result<ExitStatus> {
    match args.command {
        DbCommand::Init(args) => init_tables(args),
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
