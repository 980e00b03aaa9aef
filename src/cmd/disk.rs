//! `dyno disk`: flags → the test file → passes → Run → store and table.
//!
//! The test file (or the meta directory) is dropped — and so removed —
//! as soon as the measuring ends, before anything is printed or saved, and
//! on every early return: an error, a full disk or an interrupt.

use std::io::{IsTerminal, Write};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use anyhow::{Context, Result, bail};
use dyno_disk::engine::EngineKind;
use dyno_disk::meta::{MetaDir, run_meta_tests};
use dyno_disk::run::run_block_tests;
use dyno_disk::sync::run_sync_tests;
use dyno_disk::target::format_bytes;
use dyno_disk::warnings;
use dyno_disk::{
    BlockPlan, Fill, IoMode, Measurement, Op, Passes, Preset, Profile, Progress, TargetKind,
    TargetSpec, TestFile, TestSpec,
};
use dyno_model::{Kind, Run};
use serde_json::json;

use super::interrupt::{Interrupt, Second};
use super::{environment, finish, store_for};
use crate::ExitStatus;
use crate::cli::{DiskArgs, DiskEngineArg, FillArg, ProfileArg};

/// The default size of the test file, and for `--preset sync`.
const DEFAULT_SIZE: u64 = 1 << 30;
const SYNC_SIZE: u64 = 16 << 20;

pub fn run(args: DiskArgs) -> Result<ExitStatus> {
    let DiskArgs {
        path,
        preset,
        profile,
        tests,
        mix,
        size,
        fill,
        runs,
        duration,
        interval,
        warmup,
        files,
        engine,
        buffered,
        force,
        device,
        seed,
        save,
    } = args;
    let block_preset = !matches!(preset, Preset::Sync | Preset::Meta);
    if !block_preset {
        let flag = if !tests.is_empty() {
            Some("--test")
        } else if mix.is_some() {
            Some("--mix")
        } else if profile != ProfileArg::All {
            Some("--profile")
        } else {
            None
        };
        if let Some(flag) = flag {
            bail!(
                "{flag} applies to block tests, not to --preset {}: drop {flag} or choose cdm8, nvme or cdm3",
                preset.name()
            );
        }
    }
    if device && !force {
        bail!("--device overwrites the device's data and needs --force too");
    }
    let profile = match profile {
        ProfileArg::All => Profile::All,
        ProfileArg::Peak => Profile::Peak,
        ProfileArg::Real => Profile::Real,
    };
    let chosen: Vec<TestSpec> = if tests.is_empty() {
        profile.select(&preset.tests())
    } else {
        profile.select(&tests)
    };
    if block_preset && chosen.is_empty() {
        bail!(
            "--profile {profile:?} leaves none of the tests given: drop --profile or add tests it keeps"
        );
    }
    let size = size.unwrap_or(if preset == Preset::Sync {
        SYNC_SIZE
    } else {
        DEFAULT_SIZE
    });
    // Every I/O in flight needs a block of its own: a smaller file has
    // several I/Os at the same offset, which measures nothing real.
    let smallest = chosen.iter().map(least_size).max().unwrap_or(0);
    if let Some(t) = chosen.iter().find(|t| least_size(t) > size) {
        bail!(
            "{t} needs a file of at least {} (one {} block for each of its {} I/Os in flight per thread × {} thread{}), and --size is {}; raise --size to {} or more",
            format_bytes(least_size(t)),
            format_bytes(t.block_bytes),
            t.queue_depth,
            t.threads,
            if t.threads == 1 { "" } else { "s" },
            format_bytes(size),
            size_flag(smallest),
        );
    }
    let mut ops = vec![Op::Read, Op::Write];
    if let Some(read_percent) = mix {
        ops.push(Op::Mix { read_percent });
    }
    let seed = seed.unwrap_or_else(|| fastrand::u64(..));
    let fill = match fill {
        FillArg::Random => Fill::Random,
        FillArg::Zero => Fill::Zero,
    };
    let passes = Passes {
        runs,
        duration,
        interval,
        warmup,
    };
    let path = match path {
        Some(p) => p,
        None => std::env::current_dir().context("could not read the current directory")?,
    };
    // `auto` is decided once the file says whether direct I/O is in effect.
    let asked_engine = match engine {
        DiskEngineArg::Auto => None,
        DiskEngineArg::Threads => Some(EngineKind::Threads {
            reason: "--engine threads was asked for".into(),
        }),
        DiskEngineArg::IoUring => match EngineKind::detect() {
            EngineKind::IoUring => Some(EngineKind::IoUring),
            EngineKind::Threads { reason } => {
                bail!("--engine io_uring: {reason}; use --engine threads or auto")
            }
        },
    };
    // (What meta records, which moves no blocks; a file replaces it below.)
    let mut engine = asked_engine.clone().unwrap_or_else(EngineKind::detect);
    // How the file's data moves; meta has no file.
    let mut mode = None;

    let mut run = Run::new(Kind::Disk, String::new());
    run.environment = environment();
    run.environment.storage = Some(dyno_env::storage(&path));
    let mut settings = json!({
        "path": path.display().to_string(),
        // --test replaces the preset: "custom", the tests listed below.
        "preset": if tests.is_empty() { preset.name() } else { "custom" },
        "profile": format!("{profile:?}").to_lowercase(),
        "tests": chosen.iter().map(ToString::to_string).collect::<Vec<_>>(),
        "ops": ops.iter().map(Op::name).collect::<Vec<_>>(),
        "size_bytes": size,
        "fill": match fill { Fill::Random => "random", Fill::Zero => "zero" },
        "runs": runs,
        "duration_ns": duration.as_nanos() as u64,
        "interval_ns": interval.as_nanos() as u64,
        "warmup_ns": warmup.as_nanos() as u64,
        "seed": seed,
    });
    // The safety rules first: a refused path costs nothing, not even a
    // store. From here on, dropping `target` removes what dyno created.
    let target = if preset == Preset::Meta {
        if !path.is_dir() {
            bail!(
                "--preset meta needs a directory to make its files in, and '{}' is not one",
                path.display()
            );
        }
        let dir = MetaDir::create(&path)?;
        settings["files"] = json!(files);
        settings["file"] = json!(dir.path().display().to_string());
        run.description = format!("disk meta: {files} files in {}", path.display());
        Target::Meta(dir)
    } else {
        let file = TestFile::open(&TargetSpec {
            path: path.clone(),
            size_bytes: size,
            force,
            device,
            direct: !buffered,
        })?;
        let (chosen_engine, why) = match asked_engine {
            Some(EngineKind::IoUring) => (
                EngineKind::IoUring,
                "--engine io_uring was asked for".to_owned(),
            ),
            Some(e @ EngineKind::Threads { .. }) => {
                (e, "--engine threads was asked for".to_owned())
            }
            None => EngineKind::auto(file.mode()),
        };
        engine = chosen_engine;
        mode = Some(file.mode().clone());
        record_file(&mut run, &mut settings, &file, &engine, &why);
        // --test replaces the preset's tests: name them, not the preset.
        let what = if tests.is_empty() {
            preset.name().to_owned()
        } else {
            chosen
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        };
        run.description = format!("disk {what}: {} on {}", format_bytes(size), path.display());
        Target::File(file)
    };
    let store = store_for(&save)?;
    // An interrupt (Ctrl-C, SIGTERM, SIGHUP) stops the passes at once; the
    // file is removed and what was measured is printed and saved. No exit
    // on a second one: that would leave the file behind, and every loop
    // here checks the flag often.
    let interrupt = Interrupt::install(Second::Waits)?;
    let stop = interrupt.flag();

    let tty = std::io::stderr().is_terminal();
    let show = |p: &Progress| {
        if tty {
            progress_line(p);
        }
    };
    let started = Instant::now();
    let measured: Result<Vec<Measurement>> = match &target {
        Target::Meta(dir) => {
            super::progress(&format!(
                "creating, stating and unlinking {files} files in {}",
                dir.path().display()
            ));
            run_meta_tests(dir, files, &passes, &stop, show).map_err(Into::into)
        }
        Target::File(file) => {
            if file.kind() == TargetKind::Device {
                eprintln!(
                    "dyno: warning: overwriting {} of the block device {} (--device --force): its data there is lost",
                    format_bytes(size),
                    path.display()
                );
            }
            super::progress(&format!(
                "filling the {} test file {}",
                format_bytes(size),
                file.path().display()
            ));
            file.fill(fill, seed, &|| stop.load(Ordering::Relaxed))
                .map_err(anyhow::Error::from)
                .and_then(|()| {
                    let measured = if preset == Preset::Sync {
                        run_sync_tests(file, &passes, &stop, show)
                    } else {
                        let plan = BlockPlan {
                            tests: chosen.clone(),
                            ops: ops.clone(),
                            passes,
                            seed,
                        };
                        run_block_tests(file, &engine, &plan, &stop, show)
                    };
                    measured.map_err(Into::into)
                })
        }
    };
    drop(target);
    if tty {
        eprint!("\r\x1b[2K");
    }
    let interrupted = interrupt.is_set();
    // An interrupt during the fill surfaces as the fill's error; either way
    // nothing was measured, and the exit code says interrupted, not misused.
    if interrupted
        && measured
            .as_ref()
            .map_or(true, |m| m.iter().all(|m| m.passes.is_empty()))
    {
        eprintln!(
            "dyno: interrupted before any pass was measured; the test file was removed and nothing was saved"
        );
        return Ok(ExitStatus::Interrupted);
    }
    let measured = measured?;
    run.settings = settings;
    run.duration_ns = started.elapsed().as_nanos() as u64;
    run.metrics = dyno_disk::outcome::metrics(&measured);
    run.headline = Some(
        if preset == Preset::Meta {
            "files_per_sec"
        } else if preset == Preset::Sync {
            "iops"
        } else {
            "throughput_bytes_per_sec"
        }
        .into(),
    );
    run.warnings.extend(dyno_env::preflight(&run.environment));
    let cpus = dyno_env::available_cpus();
    run.warnings.extend(
        warnings::judge(mode.as_ref(), &engine, fill, &measured, interrupted, cpus)
            .into_iter()
            .chain(block_preset.then(|| warnings::small_file(size)).flatten())
            .map(dyno_model::Warning::from),
    );
    let run = finish(run, &save, store, dyno_report::disk_report)?;
    if interrupted {
        eprintln!("dyno: interrupted; the partial run {} was kept", run.id);
        return Ok(ExitStatus::Interrupted);
    }
    Ok(ExitStatus::Success)
}

/// The smallest file `t` can run on: block × queue depth × threads.
fn least_size(t: &TestSpec) -> u64 {
    t.block_bytes * u64::from(t.queue_depth) * u64::from(t.threads)
}

/// A size as --size takes it: whole MiB, rounded up (at least 1m).
fn size_flag(bytes: u64) -> String {
    format!("{}m", bytes.div_ceil(1 << 20).max(1))
}

/// What the run writes to; dropping it removes what dyno created.
enum Target {
    Meta(MetaDir),
    File(TestFile),
}

/// What the file turned out to be: where, direct or not, which engine.
fn record_file(
    run: &mut Run,
    settings: &mut serde_json::Value,
    file: &TestFile,
    engine: &EngineKind,
    why: &str,
) {
    if let Some(storage) = &mut run.environment.storage {
        storage.direct_io = Some(file.mode().is_direct());
    }
    settings["file"] = json!(file.path().display().to_string());
    settings["target"] = json!(match file.kind() {
        TargetKind::Created => "created",
        TargetKind::Existing => "existing",
        TargetKind::Device => "device",
    });
    settings["engine"] = json!(engine.name());
    settings["engine_reason"] = json!(why);
    match file.mode() {
        IoMode::Direct { offset_align, .. } => {
            settings["direct_io"] = json!(true);
            settings["alignment_bytes"] = json!(offset_align);
        }
        IoMode::Buffered { reason } => {
            settings["direct_io"] = json!(false);
            settings["buffered_reason"] = json!(reason);
        }
    }
}

fn progress_line(p: &Progress) {
    let mut err = std::io::stderr().lock();
    let pass = if p.pass == 0 {
        "warm-up".to_owned()
    } else {
        format!("pass {}/{}", p.pass, p.runs)
    };
    let _ = write!(
        err,
        "\r\x1b[2K{} {} {pass}: {:.1} MB/s, {:.0} IOPS",
        p.test,
        p.op,
        p.bytes_per_sec / 1e6,
        p.iops
    );
    let _ = err.flush();
}

/// The size of `dyno quick`'s disk file.
const QUICK_SIZE: u64 = 64 << 20;

/// `dyno quick`'s disk line: SEQ1M Q8T1 and RND4K Q1T1, read and write,
/// one pass of `duration` each on a 64 MiB file in the current directory
/// (direct I/O where the file system has it). Returns the metrics (named
/// `disk_…`), the warnings and the settings. Ctrl-C during it stops the
/// passes and still removes the file.
pub fn quick_measure(
    duration: std::time::Duration,
    stop: Arc<AtomicBool>,
) -> Result<(
    Vec<dyno_model::Metric>,
    Vec<dyno_model::Warning>,
    serde_json::Value,
)> {
    let dir = std::env::current_dir().context("could not read the current directory")?;
    let seed = fastrand::u64(..);
    let file = TestFile::open(&TargetSpec {
        path: dir.clone(),
        size_bytes: QUICK_SIZE,
        force: false,
        device: false,
        direct: true,
    })?;
    let (engine, why) = EngineKind::auto(file.mode());
    let plan = BlockPlan {
        tests: vec![
            TestSpec::new(dyno_disk::Pattern::Sequential, 1 << 20, 8, 1),
            TestSpec::new(dyno_disk::Pattern::Random, 4096, 1, 1),
        ],
        ops: vec![Op::Read, Op::Write],
        passes: Passes {
            runs: 1,
            duration,
            interval: std::time::Duration::ZERO,
            warmup: std::time::Duration::ZERO,
        },
        seed,
    };
    let measured = file
        .fill(Fill::Random, seed, &|| stop.load(Ordering::Relaxed))
        .map_err(anyhow::Error::from)
        .and_then(|()| run_block_tests(&file, &engine, &plan, &stop, |_| {}).map_err(Into::into));
    let mut run = Run::new(Kind::Disk, String::new());
    let mut settings = json!({
        "path": dir.display().to_string(),
        "size_bytes": QUICK_SIZE,
        "tests": plan.tests.iter().map(ToString::to_string).collect::<Vec<_>>(),
        "duration_ns": duration.as_nanos() as u64,
        "seed": seed,
    });
    record_file(&mut run, &mut settings, &file, &engine, &why);
    let mode = file.mode().clone();
    drop(file);
    let measured = measured?;
    run.settings = settings;
    let interrupted = stop.load(Ordering::Relaxed);
    let cpus = dyno_env::available_cpus();
    let warnings = warnings::judge(
        Some(&mode),
        &engine,
        Fill::Random,
        &measured,
        interrupted,
        cpus,
    );
    let metrics = dyno_disk::outcome::metrics(&measured)
        .into_iter()
        .map(|m| m.with_prefix("disk"))
        .collect();
    Ok((
        metrics,
        warnings.into_iter().map(Into::into).collect(),
        run.settings,
    ))
}
