//! A disk run as a [`Run`]: its settings record ([`DiskRecord`], or
//! quick's [`QuickDisk`]), metrics, warnings, description and headline.
//!
//! Data flow: the binary resolves flags into [`Settings`]; it opens the
//! test file with [`Settings::target_spec`], picks the engine with
//! [`Settings::engine_for`], records what the file turned out to be with
//! [`observed_file`] (or [`observed_meta`]), measures, and hands the
//! [`Outcome`] to [`record`] (or [`quick`]). Nothing here prints or saves.

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use std::sync::atomic::{AtomicBool, Ordering};

use dyno_model::record::{DiskObserved, DiskRecord, QuickDisk, QuickLine};
use dyno_model::{Environment, Kind, Run, Warning};

use crate::engine::EngineKind;
use crate::run::{BlockPlan, Measurement, Passes, RunError, run_block_tests};
use crate::spec::{Op, Pattern, Preset, Profile, TestSpec};
use crate::target::{Fill, IoMode, TargetKind, TargetSpec, TestFile, format_bytes};
use crate::warnings;

/// What a disk run is asked to do: the flags, resolved.
#[derive(Debug, Clone)]
pub struct Settings {
    /// The file, the directory to make one in, or the device.
    pub path: PathBuf,
    pub preset: Preset,
    /// Whether `--test` replaced the preset's tests.
    pub custom: bool,
    pub profile: Profile,
    /// The tests run, after the profile chose among them.
    pub tests: Vec<TestSpec>,
    /// The operations each block test runs.
    pub ops: Vec<Op>,
    pub size_bytes: u64,
    pub fill: Fill,
    pub passes: Passes,
    pub seed: u64,
    /// `--preset meta`: the files to make.
    pub files: u64,
    /// The engine asked for; `None` decides once the file says whether
    /// direct I/O is in effect.
    pub engine: Option<EngineKind>,
    pub force: bool,
    pub device: bool,
    /// Whether to ask for direct I/O (not `--buffered`).
    pub direct: bool,
}

/// The size of `dyno quick`'s disk file.
pub(crate) const QUICK_SIZE: u64 = 64 << 20;

impl Settings {
    /// `dyno quick`'s disk line: SEQ1M Q8T1 and RND4K Q1T1, read and
    /// write, one pass of `duration` each on a 64 MiB file in `dir`
    /// (direct I/O where the file system has it).
    pub fn quick(dir: PathBuf, duration: Duration, seed: u64) -> Settings {
        Settings {
            path: dir,
            preset: Preset::Cdm8,
            custom: true,
            profile: Profile::All,
            tests: vec![
                TestSpec::new(Pattern::Sequential, 1 << 20, 8, 1),
                TestSpec::new(Pattern::Random, 4096, 1, 1),
            ],
            ops: vec![Op::Read, Op::Write],
            size_bytes: QUICK_SIZE,
            fill: Fill::Random,
            passes: Passes {
                runs: 1,
                duration,
                interval: Duration::ZERO,
                warmup: Duration::ZERO,
            },
            seed,
            files: 0,
            engine: None,
            force: false,
            device: false,
            direct: true,
        }
    }

    /// Whether the run is of block tests (not `sync` or `meta`).
    pub fn is_block(&self) -> bool {
        !matches!(self.preset, Preset::Sync | Preset::Meta)
    }

    /// The test file to open.
    pub fn target_spec(&self) -> TargetSpec {
        TargetSpec {
            path: self.path.clone(),
            size_bytes: self.size_bytes,
            force: self.force,
            device: self.device,
            direct: self.direct,
        }
    }

    /// The engine for a file whose data moves as `mode` (`None`: the meta
    /// tests, which move no blocks), and why.
    pub fn engine_for(&self, mode: Option<&IoMode>) -> (EngineKind, String) {
        match (&self.engine, mode) {
            (Some(EngineKind::IoUring), _) => (
                EngineKind::IoUring,
                "--engine io_uring was asked for".to_owned(),
            ),
            (Some(e @ EngineKind::Threads { .. }), _) => {
                (e.clone(), "--engine threads was asked for".to_owned())
            }
            (None, Some(mode)) => EngineKind::auto(mode),
            (None, None) => (EngineKind::detect(), String::new()),
        }
    }

    /// The block tests' plan.
    pub fn block_plan(&self) -> BlockPlan {
        BlockPlan {
            tests: self.tests.clone(),
            ops: self.ops.clone(),
            passes: self.passes,
            seed: self.seed,
        }
    }

    /// The settings as a disk run records them, before anything was
    /// observed.
    pub fn asked(&self) -> DiskRecord {
        let nanos = |d: Duration| d.as_nanos() as u64;
        DiskRecord {
            path: self.path.display().to_string(),
            // --test replaces the preset: "custom", the tests listed.
            preset: if self.custom {
                "custom".into()
            } else {
                self.preset.name().into()
            },
            profile: format!("{:?}", self.profile).to_lowercase(),
            tests: self.tests.iter().map(ToString::to_string).collect(),
            ops: self.ops.iter().map(Op::name).collect(),
            size_bytes: self.size_bytes,
            fill: match self.fill {
                Fill::Random => "random",
                Fill::Zero => "zero",
            }
            .into(),
            runs: u64::from(self.passes.runs),
            duration_ns: nanos(self.passes.duration),
            interval_ns: nanos(self.passes.interval),
            warmup_ns: nanos(self.passes.warmup),
            seed: self.seed,
            files: (self.preset == Preset::Meta).then_some(self.files),
            observed: DiskObserved::default(),
        }
    }

    fn description(&self) -> String {
        if self.preset == Preset::Meta {
            return format!("disk meta: {} files in {}", self.files, self.path.display());
        }
        // --test replaces the preset's tests: name them, not the preset.
        let what = if self.custom {
            self.tests
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        } else {
            self.preset.name().to_owned()
        };
        format!(
            "disk {what}: {} on {}",
            format_bytes(self.size_bytes),
            self.path.display()
        )
    }

    fn headline(&self) -> &'static str {
        match self.preset {
            Preset::Meta => dyno_model::names::disk::FILES_PER_SEC,
            Preset::Sync => dyno_model::names::disk::IOPS,
            _ => dyno_model::names::disk::THROUGHPUT_BYTES_PER_SEC,
        }
    }
}

/// What the test file turned out to be: where, direct or not, and the
/// engine chosen for it and why.
pub fn observed_file(file: &TestFile, engine: &EngineKind, why: &str) -> DiskObserved {
    let (alignment_bytes, buffered_reason) = match file.mode() {
        IoMode::Direct { offset_align, .. } => (Some(*offset_align), None),
        IoMode::Buffered { reason } => (None, Some(reason.clone())),
    };
    DiskObserved {
        file: Some(file.path().display().to_string()),
        target: Some(
            match file.kind() {
                TargetKind::Created => "created",
                TargetKind::Existing => "existing",
                TargetKind::Device => "device",
            }
            .into(),
        ),
        engine: Some(engine.name().into()),
        engine_reason: Some(why.into()),
        direct_io: Some(file.mode().is_direct()),
        alignment_bytes,
        buffered_reason,
    }
}

/// What the meta tests observed: only the directory they made their
/// files in.
pub fn observed_meta(dir: &Path) -> DiskObserved {
    DiskObserved {
        file: Some(dir.display().to_string()),
        ..DiskObserved::default()
    }
}

/// What a disk run observed and measured.
#[derive(Debug, Clone)]
pub struct Outcome {
    /// What the file (or the meta directory) turned out to be.
    pub observed: DiskObserved,
    /// How the file's data moved; `None` for meta, which has no file.
    pub mode: Option<IoMode>,
    /// The engine that drove the passes.
    pub engine: EngineKind,
    pub measured: Vec<Measurement>,
    /// Whether an interrupt cut the passes short.
    pub interrupted: bool,
    /// When the run started: before the file was opened.
    pub started_at: SystemTime,
    /// From the start of the fill to the end of the last pass.
    pub duration: Duration,
}

impl Outcome {
    /// The warnings the engine judges, in their order (no preflight).
    fn warnings(&self, fill: Fill) -> Vec<warnings::DiskWarning> {
        warnings::judge(
            self.mode.as_ref(),
            &self.engine,
            fill,
            &self.measured,
            self.interrupted,
            dyno_env::available_cpus(),
        )
    }
}

/// The run of `settings` that ended as `outcome`, on the machine
/// `environment` (whose storage, if captured, learns whether the page
/// cache was bypassed).
pub fn record(settings: &Settings, outcome: &Outcome, mut environment: Environment) -> Run {
    if let (Some(storage), Some(mode)) = (&mut environment.storage, &outcome.mode) {
        storage.direct_io = Some(mode.is_direct());
    }
    let mut run = Run::new(Kind::Disk, settings.description());
    run.started_at = jiff::Timestamp::try_from(outcome.started_at).unwrap_or(run.started_at);
    run.environment = environment;
    run.set_record(&DiskRecord {
        observed: outcome.observed.clone(),
        ..settings.asked()
    });
    run.duration_ns = outcome.duration.as_nanos() as u64;
    run.metrics = crate::outcome::metrics(&outcome.measured);
    run.headline = Some(settings.headline().into());
    run.warnings.extend(dyno_env::preflight(&run.environment));
    run.warnings.extend(
        outcome
            .warnings(settings.fill)
            .into_iter()
            .chain(
                settings
                    .is_block()
                    .then(|| warnings::small_file(settings.size_bytes))
                    .flatten(),
            )
            .map(Warning::from),
    );
    run
}

/// `dyno quick`'s disk line from its outcome: its part of quick's
/// settings, its metrics (its part `disk`) and its warnings.
pub fn quick(settings: &Settings, outcome: &Outcome) -> QuickLine<QuickDisk> {
    let part = QuickDisk {
        path: settings.path.display().to_string(),
        size_bytes: settings.size_bytes,
        tests: settings.tests.iter().map(ToString::to_string).collect(),
        duration_ns: settings.passes.duration.as_nanos() as u64,
        seed: settings.seed,
        observed: outcome.observed.clone(),
    };
    let metrics = crate::outcome::metrics(&outcome.measured)
        .into_iter()
        .map(|m| m.of_part(dyno_model::names::quick::DISK))
        .collect();
    let warnings = outcome
        .warnings(settings.fill)
        .into_iter()
        .map(Warning::from)
        .collect();
    QuickLine {
        part,
        metrics,
        warnings,
    }
}

/// Measures `dyno quick`'s disk line ([`Settings::quick`]): the file is
/// made, filled, measured and removed again (also when `stop` cuts the
/// passes short, or a pass fails).
pub fn measure_quick(
    settings: &Settings,
    stop: &AtomicBool,
) -> Result<QuickLine<QuickDisk>, RunError> {
    let started_at = SystemTime::now();
    let file = TestFile::open(&settings.target_spec())?;
    let (engine, why) = settings.engine_for(Some(file.mode()));
    let measured = file
        .fill(Fill::Random, settings.seed, &|| {
            stop.load(Ordering::Relaxed)
        })
        .map_err(RunError::from)
        .and_then(|()| run_block_tests(&file, &engine, &settings.block_plan(), stop, |_| {}));
    let observed = observed_file(&file, &engine, &why);
    let mode = file.mode().clone();
    drop(file);
    let outcome = Outcome {
        observed,
        mode: Some(mode),
        engine,
        measured: measured?,
        interrupted: stop.load(Ordering::Relaxed),
        started_at,
        duration: Duration::ZERO,
    };
    Ok(quick(settings, &outcome))
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::AtomicBool;

    use super::*;
    use crate::meta::{MetaDir, run_meta_tests};
    use crate::run::run_block_tests;

    /// RND4K Q1T1, read and write, one short pass each on a 1 MiB file.
    fn settings(dir: &Path) -> Settings {
        Settings {
            path: dir.to_owned(),
            preset: Preset::Cdm8,
            custom: true,
            profile: Profile::Real,
            tests: vec![TestSpec::new(Pattern::Random, 4096, 1, 1)],
            ops: vec![Op::Read, Op::Write, Op::Mix { read_percent: 70 }],
            size_bytes: 1 << 20,
            fill: Fill::Zero,
            passes: Passes {
                runs: 1,
                duration: Duration::from_millis(20),
                interval: Duration::ZERO,
                warmup: Duration::ZERO,
            },
            seed: 7,
            files: 10,
            engine: Some(EngineKind::Threads {
                reason: "--engine threads was asked for".into(),
            }),
            force: false,
            device: false,
            direct: false,
        }
    }

    /// Opens the test file of `s`, measures it and returns the outcome.
    fn measure(s: &Settings) -> Outcome {
        let started_at = SystemTime::now();
        let file = TestFile::open(&s.target_spec()).unwrap();
        let (engine, why) = s.engine_for(Some(file.mode()));
        file.fill(s.fill, s.seed, &|| false).unwrap();
        let stop = AtomicBool::new(false);
        let measured = run_block_tests(&file, &engine, &s.block_plan(), &stop, |_| {}).unwrap();
        Outcome {
            observed: observed_file(&file, &engine, &why),
            mode: Some(file.mode().clone()),
            engine,
            measured,
            interrupted: false,
            started_at,
            duration: Duration::from_secs(1),
        }
    }

    #[test]
    fn the_record_round_trips_the_settings_and_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let s = settings(dir.path());
        let outcome = measure(&s);
        let environment = Environment {
            storage: Some(dyno_model::Storage::default()),
            ..Environment::default()
        };
        let run = record(&s, &outcome, environment);
        let rec: DiskRecord = run.record().unwrap();
        assert_eq!(rec.path, dir.path().display().to_string());
        assert_eq!(rec.preset, "custom");
        assert_eq!(rec.profile, "real");
        assert_eq!(rec.tests, ["RND4K Q1T1"]);
        assert_eq!(rec.ops, ["read", "write", "mix70"]);
        assert_eq!(rec.size_bytes, 1 << 20);
        assert_eq!(rec.fill, "zero");
        assert_eq!(rec.runs, 1);
        assert_eq!(
            (rec.duration_ns, rec.interval_ns, rec.warmup_ns),
            (20_000_000, 0, 0)
        );
        assert_eq!(rec.seed, 7);
        assert_eq!(rec.files, None);
        // Observed: the file made in the directory, driven by the pool,
        // buffered as asked.
        let file = rec.observed.file.as_deref().unwrap();
        assert!(file.starts_with(&rec.path) && file != rec.path);
        assert!(!Path::new(file).exists(), "the test file is removed");
        assert_eq!(rec.observed.target.as_deref(), Some("created"));
        assert_eq!(rec.observed.engine.as_deref(), Some("threads"));
        assert_eq!(
            rec.observed.engine_reason.as_deref(),
            Some("--engine threads was asked for")
        );
        assert_eq!(rec.observed.direct_io, Some(false));
        assert_eq!(rec.observed.alignment_bytes, None);
        assert!(rec.observed.buffered_reason.is_some());
        assert_eq!(
            rec,
            DiskRecord {
                observed: outcome.observed.clone(),
                ..s.asked()
            }
        );
        let storage = run.environment.storage.as_ref().unwrap();
        assert_eq!(storage.direct_io, Some(false));
        assert_eq!(
            run.description,
            format!("disk RND4K Q1T1: 1.00 MiB on {}", dir.path().display())
        );
        assert_eq!(run.duration_ns, 1_000_000_000);
        assert_eq!(run.headline.as_deref(), Some("throughput_bytes_per_sec"));
        assert!(run.headline_metric().is_some());
        // The engine's judgement, then the small file, in that order.
        let codes: Vec<&str> = run.warnings.iter().map(|w| w.code.as_str()).collect();
        let zero = codes.iter().position(|c| *c == "zero_fill").unwrap();
        let small = codes.iter().position(|c| *c == "small_file").unwrap();
        assert!(zero < small, "{codes:?}");
    }

    #[test]
    fn meta_records_its_directory_and_files_only() {
        let dir = tempfile::tempdir().unwrap();
        let s = Settings {
            preset: Preset::Meta,
            custom: false,
            profile: Profile::All,
            tests: Vec::new(),
            ..settings(dir.path())
        };
        let meta = MetaDir::create(dir.path()).unwrap();
        let (engine, _) = s.engine_for(None);
        let stop = AtomicBool::new(false);
        let measured = run_meta_tests(&meta, s.files, &s.passes, &stop, |_| {}).unwrap();
        let outcome = Outcome {
            observed: observed_meta(meta.path()),
            mode: None,
            engine,
            measured,
            interrupted: false,
            started_at: SystemTime::now(),
            duration: Duration::ZERO,
        };
        let run = record(&s, &outcome, Environment::default());
        let rec: DiskRecord = run.record().unwrap();
        assert_eq!(rec.preset, "meta");
        assert_eq!(rec.files, Some(10));
        assert_eq!(
            rec.observed,
            DiskObserved {
                file: Some(meta.path().display().to_string()),
                ..DiskObserved::default()
            }
        );
        assert_eq!(
            run.description,
            format!("disk meta: 10 files in {}", dir.path().display())
        );
        assert_eq!(run.headline.as_deref(), Some("files_per_sec"));
    }

    #[test]
    fn quick_records_its_part_and_labels_its_metrics_part_disk() {
        let dir = tempfile::tempdir().unwrap();
        let s = Settings {
            size_bytes: 16 << 20,
            engine: None,
            ..Settings::quick(dir.path().to_owned(), Duration::from_millis(20), 9)
        };
        let QuickLine { part, metrics, .. } = measure_quick(&s, &AtomicBool::new(false)).unwrap();
        assert_eq!(part.path, dir.path().display().to_string());
        assert_eq!(part.tests, ["SEQ1M Q8T1", "RND4K Q1T1"]);
        assert_eq!((part.duration_ns, part.seed), (20_000_000, 9));
        assert!(part.observed.file.is_some() && part.observed.direct_io.is_some());
        assert!(
            metrics.iter().all(|m| m.part() == Some("disk")),
            "{metrics:?}"
        );
        let iops = metrics
            .iter()
            .find(|m| m.name == "iops" && m.value > 0.0)
            .unwrap_or_else(|| panic!("{metrics:?}"));
        // It names the throughput it follows by the engine's name.
        assert_eq!(iops.of.as_deref(), Some("throughput_bytes_per_sec"));
        // The file is gone again.
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
        let back: QuickDisk = serde_json::from_value(serde_json::to_value(&part).unwrap()).unwrap();
        assert_eq!(back, part);
    }
}
