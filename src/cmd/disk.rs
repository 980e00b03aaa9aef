//! `dyno disk`: flags → the test file → passes → Run → store and table.
//!
//! The test file (or the meta directory) is dropped — and so removed —
//! as soon as the measuring ends, before anything is printed or saved, and
//! on every early return: an error, a full disk or an interrupt.

use std::io::{IsTerminal, Write};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Instant, SystemTime};

use anyhow::{Result, bail};
use dyno_disk::engine::EngineKind;
use dyno_disk::meta::{MetaDir, run_meta_tests};
use dyno_disk::record::{self, observed_file, observed_meta};
use dyno_disk::run::run_block_tests;
use dyno_disk::sync::run_sync_tests;
use dyno_disk::target::format_bytes;
use dyno_disk::{Measurement, Outcome, Preset, Progress, Settings, TargetKind, TestFile};
use dyno_model::record::DiskObserved;

use super::interrupt::{Interrupt, Second};
use super::{Context, environment, finish};
use crate::ExitStatus;
use crate::cli::DiskArgs;
use crate::settings::{self, DiskPlan};

pub(super) fn run(ctx: &Context, args: DiskArgs) -> Result<ExitStatus> {
    let kernel = (args.engine == crate::cli::DiskEngineArg::IoUring).then(EngineKind::detect);
    let DiskPlan {
        engine: settings,
        watch,
        save,
    } = settings::disk(
        args,
        settings::DiskInputs {
            cwd: std::env::current_dir(),
            kernel,
        },
    )?;
    let watch = super::watch::check(watch)?;
    let started_at = SystemTime::now();
    let mut environment = environment();
    environment.storage = Some(dyno_env::storage(&settings.path));
    // The safety rules first: a refused path costs nothing, not even a
    // store. From here on, dropping `target` removes what dyno created.
    let Opened {
        target,
        observed,
        engine,
    } = open(&settings)?;
    let store = ctx.store_for(&save)?;
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
    let watcher = super::watch::start(watch)?;
    let measuring_from = SystemTime::now();
    let started = Instant::now();
    let measured = measure(&settings, &target, &engine, &stop, show);
    // The whole table (its fills and passes), and no count per operation:
    // a table's tests differ too much for one.
    let window = super::watch::Window::since(measuring_from, 0);
    let watched = watcher.stop();
    let mode = match &target {
        Target::File(file) => Some(file.mode().clone()),
        Target::Meta(_) => None,
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
    let outcome = Outcome {
        observed,
        mode,
        engine,
        measured: measured?,
        interrupted,
        started_at,
        duration: started.elapsed(),
    };
    let mut run = record::record(&settings, &outcome, environment);
    super::watch::record(&mut run, &watched, window);
    let run = finish(run, &save, store, dyno_report::disk_report)?;
    if interrupted {
        super::say_interrupted(&run, &save);
        return Ok(ExitStatus::Interrupted);
    }
    Ok(ExitStatus::Success)
}

/// What the run writes to; dropping it removes what dyno created.
enum Target {
    Meta(MetaDir),
    File(TestFile),
}

/// The target made, what it turned out to be, and the engine for it.
struct Opened {
    target: Target,
    observed: DiskObserved,
    engine: EngineKind,
}

/// Makes the meta directory or opens the test file, under the safety
/// rules.
fn open(settings: &Settings) -> Result<Opened> {
    if settings.preset == Preset::Meta {
        if !settings.path.is_dir() {
            bail!(
                "--preset meta needs a directory to make its files in, and '{}' is not one",
                settings.path.display()
            );
        }
        let dir = MetaDir::create(&settings.path)?;
        // (What meta records, which moves no blocks.)
        let (engine, _) = settings.engine_for(None);
        return Ok(Opened {
            observed: observed_meta(dir.path()),
            target: Target::Meta(dir),
            engine,
        });
    }
    let file = TestFile::open(&settings.target_spec())?;
    let (engine, why) = settings.engine_for(Some(file.mode()));
    Ok(Opened {
        observed: observed_file(&file, &engine, &why),
        target: Target::File(file),
        engine,
    })
}

/// The passes on `target`: the meta tests, or the fill and then the sync
/// or block tests.
fn measure(
    settings: &Settings,
    target: &Target,
    engine: &EngineKind,
    stop: &Arc<AtomicBool>,
    show: impl FnMut(&Progress),
) -> Result<Vec<Measurement>> {
    let file = match target {
        Target::Meta(dir) => {
            super::progress(&format!(
                "creating, stating and unlinking {} files in {}",
                settings.files,
                dir.path().display()
            ));
            return run_meta_tests(dir, settings.files, &settings.passes, stop, show)
                .map_err(Into::into);
        }
        Target::File(file) => file,
    };
    let size = settings.size_bytes;
    if file.kind() == TargetKind::Device {
        eprintln!(
            "dyno: warning: overwriting {} of the block device {} (--device --force): its data there is lost",
            format_bytes(size),
            settings.path.display()
        );
    }
    super::progress(&format!(
        "filling the {} test file {}",
        format_bytes(size),
        file.path().display()
    ));
    file.fill(settings.fill, settings.seed, &|| {
        stop.load(Ordering::Relaxed)
    })?;
    let measured = if settings.preset == Preset::Sync {
        run_sync_tests(file, &settings.passes, stop, show)
    } else {
        run_block_tests(file, engine, &settings.block_plan(), stop, show)
    };
    Ok(measured?)
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
