//! `--preset meta`: how fast the file system creates, looks up and removes
//! files — where file systems differ most and block tests see nothing.
//! Each pass creates `files` empty files in a new directory of dyno's own,
//! then stats each, then unlinks each; each phase is one measurement in
//! files per second, with the latency of every call.

use std::fs::OpenOptions;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use crate::engine::{IoFailure, PassStats};
use crate::run::{Measurement, Passes, Progress, RunError};
use crate::target::TargetError;

/// The three phases, in order.
pub const META_OPS: [&str; 3] = ["create", "stat", "unlink"];

/// A directory dyno made for the files; removed with all it holds when
/// dropped (it is dyno's own: created new, with a name no one else uses).
#[derive(Debug)]
pub struct MetaDir {
    path: PathBuf,
}

impl MetaDir {
    /// Creates `parent/dyno-meta-PID-RANDOM`.
    pub fn create(parent: &Path) -> Result<MetaDir, TargetError> {
        let path = parent.join(format!(
            "dyno-meta-{}-{:08x}",
            std::process::id(),
            fastrand::u32(..)
        ));
        std::fs::create_dir(&path).map_err(|source| TargetError::Create {
            hint: crate::target::create_hint(&source, &path),
            path: path.clone(),
            source,
        })?;
        Ok(MetaDir { path })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for MetaDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.path);
    }
}

/// Runs `passes` of create, stat and unlink over `files` files.
pub fn run_meta_tests(
    dir: &MetaDir,
    files: u64,
    settings: &Passes,
    stop: &AtomicBool,
    mut progress: impl FnMut(&Progress),
) -> Result<Vec<Measurement>, RunError> {
    let names: Vec<PathBuf> = (0..files)
        .map(|i| dir.path().join(format!("f{i:07}")))
        .collect();
    let mut kept: [Vec<PassStats>; 3] = Default::default();
    let total = settings.runs + u32::from(!settings.warmup.is_zero());
    for pass in 0..total {
        if stop.load(Ordering::Relaxed) {
            break;
        }
        if pass > 0 {
            crate::run::pause(settings.interval, stop);
        }
        let index = if settings.warmup.is_zero() {
            pass + 1
        } else {
            pass
        };
        let phases = one_pass(&names, stop).map_err(|(op, e)| {
            if e.source.raw_os_error() == Some(libc::ENOSPC) {
                RunError::Target(TargetError::Full {
                    what: "creating files".into(),
                })
            } else {
                RunError::Io {
                    test: "meta".into(),
                    op: op.into(),
                    source: e,
                }
            }
        })?;
        for (k, stats) in phases.into_iter().enumerate() {
            progress(&Progress::of(
                "files",
                META_OPS[k],
                index,
                settings.runs,
                &stats,
            ));
            if index > 0 && stats.ios() > 0 {
                kept[k].push(stats);
            }
        }
    }
    Ok(META_OPS
        .iter()
        .zip(kept)
        .map(|(op, passes)| Measurement {
            test: "files".into(),
            spec: None,
            op: (*op).into(),
            passes,
        })
        .collect())
}

/// Creates, stats and unlinks every file once; whatever stops it, no file
/// is left behind.
fn one_pass(
    names: &[PathBuf],
    stop: &AtomicBool,
) -> Result<Vec<PassStats>, (&'static str, IoFailure)> {
    let mut created = 0;
    let result = (|| {
        let mut phases = Vec::with_capacity(3);
        let create = time_each(names, stop, |p| {
            OpenOptions::new().write(true).create_new(true).open(p)?;
            created += 1;
            Ok(())
        })
        .map_err(|e| ("create", e))?;
        let made = create.ios() as usize;
        phases.push(create);
        phases.push(
            time_each(&names[..made], stop, |p| std::fs::metadata(p).map(drop))
                .map_err(|e| ("stat", e))?,
        );
        let unlink = time_each(&names[..made], &AtomicBool::new(false), |p| {
            std::fs::remove_file(p)
        })
        .map_err(|e| ("unlink", e))?;
        created -= unlink.ios() as usize;
        phases.push(unlink);
        Ok(phases)
    })();
    if created > 0 {
        for p in names {
            let _ = std::fs::remove_file(p);
        }
    }
    result
}

/// Calls `op` on each path in turn, timing each call.
fn time_each(
    names: &[PathBuf],
    stop: &AtomicBool,
    mut op: impl FnMut(&Path) -> std::io::Result<()>,
) -> Result<PassStats, IoFailure> {
    let mut stats = crate::engine::empty_pass();
    let start = Instant::now();
    let mut last = start;
    for (i, p) in names.iter().enumerate() {
        if stop.load(Ordering::Relaxed) {
            stats.interrupted = true;
            break;
        }
        let began = Instant::now();
        op(p).map_err(|source| IoFailure {
            op: "file",
            offset: i as u64,
            source,
        })?;
        let done = Instant::now();
        stats.writes += 1;
        let _ = stats.latency.record(
            u64::try_from((done - began).as_nanos())
                .unwrap_or(u64::MAX)
                .max(1),
        );
        last = done;
    }
    stats.elapsed = last - start;
    Ok(stats)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn meta_passes_count_every_file_and_leave_nothing() {
        let parent = tempfile::tempdir().unwrap();
        let dir = MetaDir::create(parent.path()).unwrap();
        let settings = Passes {
            runs: 2,
            duration: Duration::from_secs(1),
            interval: Duration::ZERO,
            warmup: Duration::from_millis(1),
        };
        let mut events = Vec::new();
        let m = run_meta_tests(&dir, 200, &settings, &AtomicBool::new(false), |p| {
            events.push((p.op.clone(), p.pass))
        })
        .unwrap();
        assert_eq!(
            m.iter().map(|m| m.op.as_str()).collect::<Vec<_>>(),
            META_OPS
        );
        for m in &m {
            assert_eq!(m.passes.len(), 2, "the warm-up pass is not kept");
            assert!(m.passes.iter().all(|p| p.ios() == 200), "{}", m.op);
        }
        assert_eq!(events.len(), 9);
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
        let path = dir.path().to_path_buf();
        drop(dir);
        assert!(!path.exists());
    }
}
