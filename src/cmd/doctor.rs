//! `dyno doctor`: the machine checked against the checklist of
//! `dyno_env::doctor`, for one kind of benchmark or all.

use std::io::BufRead as _;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use dyno_env::doctor::{self, Extras, Finding, Kind, Verdict};
use serde_json::json;

use super::{environment, print};
use crate::ExitStatus;
use crate::cli::{DoctorArgs, DoctorKind};

/// Reads the machine under this directory instead of `/` (tests point it
/// at a fake tree, so `--fix` writes only there).
const SYSROOT: &str = "DYNO_SYSROOT";

pub(super) fn run(args: DoctorArgs) -> Result<ExitStatus> {
    let DoctorArgs {
        kind,
        conninfo,
        clients,
        json,
        fix,
        yes,
    } = args;
    if conninfo.is_some() && kind != DoctorKind::Db {
        bail!(
            "a CONNINFO names the server for `dyno doctor db`: give the kind db (dyno doctor db CONNINFO)"
        );
    }
    let kinds: Vec<Kind> = match kind {
        DoctorKind::Http => vec![Kind::Http],
        DoctorKind::Disk => vec![Kind::Disk],
        DoctorKind::Run => vec![Kind::Run],
        DoctorKind::Db => vec![Kind::Db],
        DoctorKind::All => Kind::ALL.to_vec(),
    };
    let root = std::env::var_os(SYSROOT).map(PathBuf::from);
    let (env, extras) = match &root {
        None => (environment(), Extras::capture()),
        Some(root) => (
            dyno_env::capture_from(root, Default::default()),
            Extras::from_root(root),
        ),
    };
    let mut findings: Vec<Finding> = doctor::doctor(&env, &extras)
        .into_iter()
        .filter(|f| kinds.iter().any(|k| f.concerns(*k)))
        .collect();
    if kind == DoctorKind::Db {
        // A database benchmark needs a file per client, not an HTTP load
        // test's tens of thousands.
        for f in findings.iter_mut().filter(|f| f.id == "open_files") {
            *f = doctor::open_files_for_db(&env, clients);
        }
        if !fix {
            findings.extend(dyno_db::doctor::server(conninfo.as_deref(), clients));
        }
    }
    let blocking = findings
        .iter()
        .filter(|f| f.verdict == Verdict::Blocks)
        .count();
    if fix {
        return apply(&findings, root.as_deref().unwrap_or(Path::new("/")), yes);
    }
    if json {
        let out = json!({
            "kinds": kinds,
            "blocking": blocking,
            "checks": findings,
        });
        print(&(serde_json::to_string_pretty(&out)? + "\n"))?;
    } else {
        let scope = match kind {
            DoctorKind::All => "any benchmark".to_owned(),
            k => format!("{k:?} benchmarks").to_lowercase(),
        };
        print(&dyno_report::doctor_report(&findings, &scope))?;
    }
    Ok(if blocking > 0 {
        ExitStatus::ChecksFailed
    } else {
        ExitStatus::Success
    })
}

/// `--fix`: writes each runtime fix of the checks that need one, asking
/// first unless `yes`, and logs what it changed and what was there.
fn apply(findings: &[Finding], root: &Path, yes: bool) -> Result<ExitStatus> {
    let todo: Vec<&Finding> = findings
        .iter()
        .filter(|f| matches!(f.verdict, Verdict::Advice | Verdict::Blocks) && !f.apply.is_empty())
        .collect();
    let by_hand: Vec<&Finding> = findings
        .iter()
        .filter(|f| f.verdict == Verdict::Blocks && f.apply.is_empty())
        .collect();
    if todo.is_empty() {
        eprintln!("dyno doctor: nothing that --fix can change needs changing");
    } else if root == Path::new("/") && !dyno_env::is_root() {
        let commands: Vec<&str> = todo
            .iter()
            .flat_map(|f| f.fix_now.iter().map(String::as_str))
            .collect();
        bail!(
            "--fix changes kernel settings and needs root; run dyno doctor --fix as root, or these yourself:\n  sudo {}",
            commands.join("\n  sudo ")
        );
    }
    let log_path = dyno_store::default_path()
        .ok()
        .and_then(|p| p.parent().map(|d| d.join("doctor-changes.log")));
    let mut changed = Vec::new();
    // The commands that put back what was there.
    let mut undo = Vec::new();
    let stdin = std::io::stdin();
    for f in &todo {
        if !yes {
            eprint!(
                "{} is {}: apply `{}`? [y/N] ",
                f.title,
                f.found,
                f.fix_now.join("; ")
            );
            let mut answer = String::new();
            stdin.lock().read_line(&mut answer)?;
            if !answer.trim().eq_ignore_ascii_case("y") {
                eprintln!("  left as it is");
                continue;
            }
        }
        for setting in &f.apply {
            let path = root.join(&setting.path);
            let old = std::fs::read_to_string(&path)
                .map(|s| s.trim().to_owned())
                .unwrap_or_default();
            std::fs::write(&path, format!("{}\n", setting.value))
                .with_context(|| format!("could not write {}", path.display()))?;
            eprintln!("  {}: {old} -> {}", path.display(), setting.value);
            undo.push(format!(
                "printf '%s\\n' '{}' > {}",
                old.replace('\'', "'\\''"),
                path.display()
            ));
            changed.push(format!(
                "{} {} {:?} -> {:?}",
                jiff::Timestamp::now(),
                path.display(),
                old,
                setting.value
            ));
        }
    }
    if !changed.is_empty()
        && let Some(log) = &log_path
    {
        if let Some(dir) = log.parent() {
            std::fs::create_dir_all(dir)?;
        }
        let mut file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(log)
            .with_context(|| format!("could not record the changes in {}", log.display()))?;
        for line in &changed {
            std::io::Write::write_all(&mut file, format!("{line}\n").as_bytes())?;
        }
        eprintln!(
            "dyno doctor: {} changed until the next reboot; recorded with {} old value{} in {}",
            match changed.len() {
                1 => "1 setting".to_owned(),
                n => format!("{n} settings"),
            },
            if changed.len() == 1 { "its" } else { "their" },
            if changed.len() == 1 { "" } else { "s" },
            log.display()
        );
    }
    if !undo.is_empty() {
        eprintln!("dyno doctor: to undo, as root:");
        for command in &undo {
            eprintln!("  {command}");
        }
    }
    for f in &by_hand {
        eprintln!(
            "dyno doctor: {} still blocks, and --fix cannot change it: {}",
            f.title,
            f.fix_now.join("; ")
        );
    }
    Ok(if by_hand.is_empty() {
        ExitStatus::Success
    } else {
        ExitStatus::ChecksFailed
    })
}
