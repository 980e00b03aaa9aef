//! The disk engine on real files: both engines move exactly what they
//! count, writes reach the file, mixes mix, Ctrl-C ends a pass, tmpfs falls
//! back to buffered I/O, and a full disk removes the test file.

// Tests may say on stderr what they skipped and why.
#![allow(clippy::print_stderr)]

use std::os::unix::fs::FileExt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use dyno_disk::engine::{EngineKind, Job, PassStats, run_pass};
use dyno_disk::run::{BlockPlan, run_block_tests};
use dyno_disk::{Fill, IoMode, Op, Passes, Pattern, TargetError, TargetSpec, TestFile, TestSpec};
use dyno_testutil::tmpfs::Tmpfs;

const SIZE: u64 = 8 << 20;

fn spec(dir: &std::path::Path, size: u64) -> TargetSpec {
    TargetSpec {
        path: dir.to_path_buf(),
        size_bytes: size,
        force: false,
        device: false,
        direct: true,
    }
}

/// A test file of [`SIZE`] in `dir`, filled with `fill`.
fn filled(dir: &std::path::Path, fill: Fill) -> TestFile {
    let file = TestFile::open(&spec(dir, SIZE)).unwrap();
    file.fill(fill, 1, &|| false).unwrap();
    file
}

/// One pass of `job` by `engine` over `file`, run to its end.
fn pass(engine: &EngineKind, file: &TestFile, job: &Job) -> PassStats {
    let align = file.mode().memory_align();
    run_pass(engine, file.file(), align, job, &AtomicBool::new(false)).unwrap()
}

/// Opening a test file of `size` bytes on a new tmpfs of `mount_size`
/// (read-only if `read_only`) fails: the tmpfs and what the error says;
/// `None` where no tmpfs can be mounted.
fn refused_on_tmpfs(mount_size: &str, read_only: bool, size: u64) -> Option<(Tmpfs, String)> {
    let tmpfs = Tmpfs::mount(mount_size, read_only)?;
    let err = TestFile::open(&spec(tmpfs.path(), size))
        .unwrap_err()
        .to_string();
    Some((tmpfs, err))
}

fn engines() -> Vec<EngineKind> {
    let mut engines = vec![EngineKind::Threads {
        reason: "test".into(),
    }];
    match EngineKind::detect() {
        EngineKind::IoUring => engines.push(EngineKind::IoUring),
        EngineKind::Threads { reason } => eprintln!("SKIPPED io_uring: {reason}"),
    }
    engines
}

fn job(pattern: Pattern, block: u64, qd: u32, threads: u32, op: Op) -> Job {
    Job {
        spec: TestSpec::new(pattern, block, qd, threads),
        op,
        duration: Duration::from_millis(150),
        span: SIZE,
        seed: 3,
    }
}

#[test]
fn both_engines_count_exactly_what_they_move() {
    let dir = tempfile::tempdir().unwrap();
    let file = filled(dir.path(), Fill::Random);
    for engine in engines() {
        for (pattern, block, qd, threads) in [
            (Pattern::Sequential, 1 << 20, 4, 2),
            (Pattern::Random, 4096, 8, 1),
            (Pattern::Random, 4096, 1, 1),
        ] {
            let j = job(pattern, block, qd, threads, Op::Read);
            let p = pass(&engine, &file, &j);
            let what = format!("{engine:?} {}", j.spec);
            assert!(p.reads > 0, "{what}");
            assert_eq!(p.writes, 0, "{what}");
            assert_eq!(p.bytes_read, p.reads * block, "{what}: whole blocks");
            assert_eq!(p.short, 0, "{what}");
            assert_eq!(p.latency.len(), p.reads, "{what}: one latency per I/O");
            assert!(p.elapsed >= Duration::from_millis(150), "{what}");
            assert!(p.cpu > Duration::ZERO, "{what}");
        }
    }
}

#[test]
fn writes_reach_the_file_and_mixes_mix() {
    let dir = tempfile::tempdir().unwrap();
    let file = filled(dir.path(), Fill::Zero);
    for engine in engines() {
        let w = job(Pattern::Sequential, 64 << 10, 2, 1, Op::Write);
        let p = pass(&engine, &file, &w);
        assert!(p.writes > 0 && p.reads == 0);
        assert_eq!(p.bytes_written, p.writes * (64 << 10));
        // The first block was written over: it is no longer zeros.
        // (Read through a buffered descriptor: the test file's is O_DIRECT.)
        let mut first = vec![0u8; 4096];
        std::fs::File::open(file.path())
            .unwrap()
            .read_exact_at(&mut first, 0)
            .unwrap();
        assert!(
            first.iter().any(|&b| b != 0),
            "{engine:?}: the write landed"
        );

        let m = job(Pattern::Random, 4096, 4, 1, Op::Mix { read_percent: 70 });
        let p = pass(&engine, &file, &m);
        let share = p.reads as f64 / p.ios() as f64;
        assert!(
            (0.6..0.8).contains(&share),
            "{engine:?}: {} reads of {} I/Os",
            p.reads,
            p.ios()
        );
    }
}

#[test]
fn stop_ends_a_long_pass_promptly() {
    let dir = tempfile::tempdir().unwrap();
    let file = filled(dir.path(), Fill::Random);
    for engine in engines() {
        let stop = AtomicBool::new(false);
        let mut j = job(Pattern::Random, 4096, 4, 2, Op::Read);
        j.duration = Duration::from_secs(120);
        let started = Instant::now();
        let p = std::thread::scope(|s| {
            s.spawn(|| {
                std::thread::sleep(Duration::from_millis(200));
                stop.store(true, Ordering::Relaxed);
            });
            run_pass(&engine, file.file(), file.mode().memory_align(), &j, &stop).unwrap()
        });
        assert!(p.interrupted, "{engine:?}");
        assert!(p.reads > 0);
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "{engine:?}: the pass ignored the stop"
        );
    }
}

#[test]
fn a_run_of_block_tests_keeps_every_pass() {
    let dir = tempfile::tempdir().unwrap();
    let file = filled(dir.path(), Fill::Random);
    let plan = BlockPlan {
        tests: vec![
            TestSpec::new(Pattern::Sequential, 1 << 20, 2, 1),
            TestSpec::new(Pattern::Random, 4096, 1, 1),
        ],
        ops: vec![Op::Read, Op::Write],
        passes: Passes {
            runs: 2,
            duration: Duration::from_millis(50),
            interval: Duration::ZERO,
            warmup: Duration::from_millis(20),
        },
        seed: 5,
    };
    let mut seen = 0;
    let m = run_block_tests(
        &file,
        &EngineKind::detect(),
        &plan,
        &AtomicBool::new(false),
        |_| seen += 1,
    )
    .unwrap();
    assert_eq!(
        m.iter()
            .map(|m| format!("{} {}", m.test, m.op))
            .collect::<Vec<_>>(),
        [
            "SEQ1M Q2T1 read",
            "SEQ1M Q2T1 write",
            "RND4K Q1T1 read",
            "RND4K Q1T1 write"
        ]
    );
    assert!(m.iter().all(|m| m.passes.len() == 2), "warm-up not kept");
    assert_eq!(seen, 4 * 3, "progress for every pass, warm-up included");
}

#[test]
fn direct_io_on_a_disk_and_buffered_on_tmpfs() {
    let dir = tempfile::tempdir().unwrap();
    let on_disk = TestFile::open(&spec(dir.path(), SIZE)).unwrap();
    let fs = std::process::Command::new("stat")
        .args(["-f", "-c", "%T"])
        .arg(dir.path())
        .output()
        .unwrap();
    if String::from_utf8_lossy(&fs.stdout).trim() != "tmpfs" {
        match on_disk.mode() {
            IoMode::Direct { offset_align, .. } => {
                assert!(offset_align.is_power_of_two() && *offset_align >= 512);
            }
            other => panic!("a disk file system without direct I/O? {other:?}"),
        }
    }
    let Some(tmpfs) = Tmpfs::mount("200m", false) else {
        return;
    };
    let file = TestFile::open(&spec(tmpfs.path(), SIZE)).unwrap();
    match file.mode() {
        IoMode::Buffered { reason } => assert!(reason.contains("tmpfs"), "{reason}"),
        other => panic!("tmpfs cannot do direct I/O: {other:?}"),
    }
    file.fill(Fill::Random, 1, &|| false).unwrap();
    let stop = AtomicBool::new(false);
    let j = job(Pattern::Random, 4096, 1, 1, Op::Read);
    let p = run_pass(&EngineKind::detect(), file.file(), 4096, &j, &stop).unwrap();
    assert!(p.reads > 0, "buffered I/O still measures");
    drop(file);
    assert!(tmpfs.entries().is_empty());
}

#[test]
fn a_full_disk_during_the_fill_removes_the_file() {
    let Some(tmpfs) = Tmpfs::mount("80m", false) else {
        return;
    };
    // 10 MiB plus the 64 MiB margin fits in 80 MiB: the check passes …
    let file = TestFile::open(&spec(tmpfs.path(), 10 << 20)).unwrap();
    // … then something else takes the space.
    let hog = tmpfs.path().join("hog");
    let chunk = vec![1u8; 1 << 20];
    let mut out = std::fs::File::create(&hog).unwrap();
    while std::io::Write::write_all(&mut out, &chunk).is_ok() {}
    drop(out);
    let err = file.fill(Fill::Random, 1, &|| false).unwrap_err();
    assert!(matches!(err, TargetError::Full { .. }), "{err:?}");
    let message = err.to_string();
    assert!(
        message.contains("ENOSPC") && message.contains("removed"),
        "{message}"
    );
    drop(file);
    assert_eq!(tmpfs.entries(), ["hog"], "the test file is gone");
}

#[test]
fn too_little_space_is_refused_before_writing_anything() {
    let Some((tmpfs, err)) = refused_on_tmpfs("16m", false, 8 << 20) else {
        return;
    };
    assert!(
        err.contains("not enough free space") && err.contains("72.00 MiB"),
        "{err}"
    );
    assert!(tmpfs.entries().is_empty());
}

#[test]
fn a_read_only_file_system_says_so() {
    let Some((_tmpfs, err)) = refused_on_tmpfs("16m", true, 1 << 20) else {
        return;
    };
    assert!(err.contains("read-only"), "{err}");
}

/// Defect 10: on tmpfs io_uring runs buffered I/O ~50× slower than pread,
/// so `auto` picks the thread pool there, and io_uring where direct I/O is
/// in effect (a disk file system), each with its reason.
#[test]
fn auto_picks_threads_on_tmpfs_and_io_uring_with_direct_io() {
    let dir = tempfile::tempdir().unwrap();
    let on_disk = TestFile::open(&spec(dir.path(), SIZE)).unwrap();
    if on_disk.mode().is_direct() {
        let (engine, why) = EngineKind::auto(on_disk.mode());
        match EngineKind::detect() {
            EngineKind::IoUring => {
                assert_eq!(engine, EngineKind::IoUring, "{why}");
                assert!(why.contains("direct I/O"), "{why}");
            }
            EngineKind::Threads { .. } => {
                assert_eq!(engine.name(), "threads");
                assert!(why.contains("io_uring is unavailable"), "{why}");
            }
        }
    } else {
        eprintln!("SKIPPED the direct-I/O half: {:?}", on_disk.mode());
    }
    let Some(tmpfs) = Tmpfs::mount("100m", false) else {
        return;
    };
    let file = TestFile::open(&spec(tmpfs.path(), SIZE)).unwrap();
    let (engine, why) = EngineKind::auto(file.mode());
    assert_eq!(engine.name(), "threads", "{why}");
    assert!(why.contains("buffered I/O"), "{why}");
}
