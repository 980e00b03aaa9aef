//! `dyno disk`'s flags resolved into the disk engine's settings.

use anyhow::{Context as _, Result, bail};
use dyno_disk::engine::EngineKind;
use dyno_disk::target::format_bytes;
use dyno_disk::{Fill, Op, Passes, Preset, Profile, TestSpec};

use crate::cli::{DiskArgs, DiskEngineArg, FillArg, ProfileArg, SaveArgs};

/// The default size of the test file, and for `--preset sync`.
const DEFAULT_SIZE: u64 = 1 << 30;
const SYNC_SIZE: u64 = 16 << 20;

/// What `dyno disk` runs: the engine's settings, and where the run goes.
pub(crate) struct DiskPlan {
    pub engine: dyno_disk::Settings,
    /// `--watch-*`: what is watched while the disk is measured.
    pub watch: Option<super::Watch>,
    pub save: SaveArgs,
}

/// What of this machine `dyno disk`'s settings need, read by the command.
pub(crate) struct DiskInputs {
    /// The current directory, where the test file goes without a PATH.
    pub cwd: std::io::Result<std::path::PathBuf>,
    /// The engine the kernel offers, io_uring or why not: probed only for
    /// `--engine io_uring` (`auto` decides later, with the file's I/O
    /// mode, and probes then).
    pub kernel: Option<EngineKind>,
}

/// `dyno disk`'s flags, checked together and resolved.
pub(crate) fn disk(args: DiskArgs, machine: DiskInputs) -> Result<DiskPlan> {
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
        watch,
        save,
    } = args;
    let watch = super::watch::watch(watch, None, None)?;
    let block_preset = !matches!(preset, Preset::Sync | Preset::Meta);
    if !block_preset {
        check_block_flags(preset, &tests, mix, profile)?;
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
    check_size(&chosen, size)?;
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
        None => machine
            .cwd
            .context("could not read the current directory")?,
    };
    let engine = engine_kind(engine, machine.kernel)?;
    Ok(DiskPlan {
        engine: dyno_disk::Settings {
            path,
            preset,
            // --test replaces the preset's tests.
            custom: !tests.is_empty(),
            profile,
            tests: chosen,
            ops,
            size_bytes: size,
            fill,
            passes,
            seed,
            files,
            engine,
            force,
            device,
            direct: !buffered,
        },
        watch,
        save,
    })
}

/// The flags of block tests, refused with a preset that has none (sync,
/// meta).
fn check_block_flags(
    preset: Preset,
    tests: &[TestSpec],
    mix: Option<u8>,
    profile: ProfileArg,
) -> Result<()> {
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
    Ok(())
}

/// Every I/O in flight needs a block of its own: a smaller file has
/// several I/Os at the same offset, which measures nothing real.
fn check_size(chosen: &[TestSpec], size: u64) -> Result<()> {
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
    Ok(())
}

/// `--engine`: `auto` (`None`) is decided once the file says whether
/// direct I/O is in effect; `io_uring` is refused where the `kernel` has
/// none.
fn engine_kind(engine: DiskEngineArg, kernel: Option<EngineKind>) -> Result<Option<EngineKind>> {
    Ok(match engine {
        DiskEngineArg::Auto => None,
        DiskEngineArg::Threads => Some(EngineKind::Threads {
            reason: "--engine threads was asked for".into(),
        }),
        DiskEngineArg::IoUring => match kernel {
            Some(EngineKind::Threads { reason }) => {
                bail!("--engine io_uring: {reason}; use --engine threads or auto")
            }
            // Not probed: the ring's own set-up says what is wrong.
            Some(EngineKind::IoUring) | None => Some(EngineKind::IoUring),
        },
    })
}

/// The smallest file `t` can run on: block × queue depth × threads.
fn least_size(t: &TestSpec) -> u64 {
    t.block_bytes * u64::from(t.queue_depth) * u64::from(t.threads)
}

/// A size as --size takes it: whole MiB, rounded up (at least 1m).
fn size_flag(bytes: u64) -> String {
    format!("{}m", bytes.div_ceil(1 << 20).max(1))
}
