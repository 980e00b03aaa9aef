//! The durable database: reopening, power cuts, torn and damaged files,
//! a full disk, the directory's lock.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;

use proptest::prelude::*;

use crate::crashfs::CrashFs;
use crate::durable::open_fs;
use crate::*;

fn leaf(writer: usize, seq: usize) -> Node {
    Node::with_attributes([
        ("writer", writer.to_string().as_bytes()),
        ("seq", seq.to_string().as_bytes()),
    ])
}

fn number(node: &Node, name: &str) -> usize {
    std::str::from_utf8(node.attribute(name).expect("the attribute is there"))
        .unwrap()
        .parse()
        .unwrap()
}

/// Appends `leaf(writer, seq)` to `tree` and sets the root's `count` in the
/// same commit.
fn post(tree: &Tree, writer: usize, seq: usize) -> Commit {
    tree.update(|t| {
        let n = t.root().children().len();
        t.edit(Edit::AddChild {
            path: vec![],
            at: n,
            node: leaf(writer, seq),
        })?
        .edit(Edit::PutAttribute {
            path: vec![],
            name: "count".into(),
            value: (n + 1).to_string().into_bytes(),
        })?;
        Ok(())
    })
    .expect("a post always fits")
    .0
}

/// A snapshot is never a partial commit: the root's `count` is its number
/// of children.
fn consistent(root: &Node) -> bool {
    match root.attribute("count") {
        None => root.children().is_empty(),
        Some(_) => number(root, "count") == root.children().len(),
    }
}

fn small_checkpoints() -> Options {
    Options {
        checkpoint_bytes: 4 << 10,
        ..Options::default()
    }
}

#[test]
fn a_reopened_database_holds_every_tree_and_version() {
    let dir = tempfile::tempdir().unwrap();
    {
        let db = Database::open(dir.path()).unwrap();
        let a = db.create_tree("a").unwrap();
        let b = db.create_tree("b").unwrap();
        for seq in 0..20 {
            post(&a, 0, seq);
        }
        post(&b, 1, 0);
        let built = Node::new().with_children(vec![leaf(7, 0), leaf(7, 1)]);
        db.create_tree_with("c", built).unwrap();
        assert_eq!(db.log_stats().records, 24);
        assert!(db.log_stats().fsyncs >= 1);
    }
    let db = Database::open(dir.path()).unwrap();
    assert_eq!(db.names(), ["a", "b", "c"]);
    let c = db.tree("c").unwrap().snapshot();
    assert_eq!((c.number(), c.root().count()), (0, 3));
    let a = db.tree("a").unwrap().snapshot();
    assert_eq!(a.number(), 20);
    assert_eq!(number(a.root(), "count"), 20);
    let seqs: Vec<usize> = a
        .root()
        .children()
        .iter()
        .map(|c| number(c, "seq"))
        .collect();
    assert_eq!(seqs, (0..20).collect::<Vec<_>>());
    assert_eq!(db.tree("b").unwrap().snapshot().number(), 1);
    assert_eq!(db.recovery().unwrap().replayed, 24);
    // The versions replayed are kept, by number.
    assert_eq!(
        db.tree("a")
            .unwrap()
            .version(7)
            .unwrap()
            .root()
            .children()
            .len(),
        7
    );
    // A made tree keeps its name after reopening, and new commits go on
    // from the recovered version.
    assert!(matches!(db.create_tree("a"), Err(TreeError::Exists(_))));
    assert_eq!(post(&db.tree("a").unwrap(), 0, 20).version, 21);
}

#[test]
fn the_log_writes_over_zeros_laid_down_ahead_and_reopening_goes_on_from_its_records() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("log-0000000000");
    let len = || std::fs::metadata(&log).unwrap().len();
    let mut filled = 0;
    for round in 0..3 {
        let db = Database::open(dir.path()).unwrap();
        assert_eq!(db.recovery().unwrap().torn, None, "round {round}");
        let t = match round {
            0 => db.create_tree("t").unwrap(),
            _ => db.tree("t").unwrap(),
        };
        assert_eq!(t.snapshot().root().children().len(), 10 * round);
        for seq in 0..10 {
            post(&t, 0, 10 * round + seq);
        }
        if round == 0 {
            filled = len();
        }
    }
    // Thirty small commits fit in the first fill: the file's size never
    // changed after it, so no later fsync had a new size to commit.
    let bytes = std::fs::read(&log).unwrap();
    let used = bytes.iter().rposition(|&b| b != 0).unwrap() + 1;
    assert!(filled > 64 << 10, "{filled}");
    assert_eq!(len(), filled);
    assert!(used < 8 << 10, "{used} bytes of records");
    let db = Database::open(dir.path()).unwrap();
    assert_eq!(db.recovery().unwrap().replayed, 31);
}

#[test]
fn a_checkpoint_replaces_the_log_and_reopening_reads_the_snapshot() {
    let dir = tempfile::tempdir().unwrap();
    {
        let db = Database::open(dir.path()).unwrap();
        let t = db.create_tree("t").unwrap();
        for seq in 0..10 {
            post(&t, 0, seq);
        }
        db.checkpoint().unwrap();
        for seq in 10..15 {
            post(&t, 0, seq);
        }
        db.checkpoint().unwrap();
        post(&t, 0, 15);
        assert_eq!(db.log_stats().checkpoints, 2);
    }
    let mut files: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    files.sort();
    assert_eq!(files, ["LOCK", "log-0000000002", "snapshot-0000000002"]);
    let db = Database::open(dir.path()).unwrap();
    let recovery = db.recovery().unwrap();
    assert_eq!((recovery.snapshot, recovery.replayed), (Some(2), 1));
    let root = db.tree("t").unwrap().snapshot();
    assert_eq!((root.number(), root.root().children().len()), (16, 16));
}

#[test]
fn a_second_process_cannot_open_a_directory_in_use() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open(dir.path()).unwrap();
    let err = Database::open(dir.path()).unwrap_err();
    assert!(matches!(err, OpenError::Locked(_)), "{err}");
    assert!(
        err.to_string().contains("in use by another process"),
        "{err}"
    );
    drop(db);
    Database::open(dir.path()).unwrap();
}

#[test]
fn a_torn_last_record_is_dropped_with_a_warning_and_the_log_goes_on() {
    let fs = CrashFs::new();
    let db = open_fs(Arc::new(fs.clone()), Options::default()).unwrap();
    let t = db.create_tree("t").unwrap();
    for seq in 0..5 {
        post(&t, 0, seq);
    }
    // A batch of two more records when the power goes, appended by hand
    // over the zeros after the records, as a leader whose fsync never came
    // would leave it: its first record's pages never reached the disk
    // (zeros), its last did.
    let len = fs.used("log-0000000000");
    assert!(fs.len("log-0000000000") > len, "zeros follow the records");
    let cut = {
        let mut file = crate::fs::Fs::write_from(&fs, "log-0000000000", len as u64).unwrap();
        let mut records = Vec::new();
        for tree in [98, 99] {
            codec::frame(
                &codec::RecordRef::Create {
                    tree,
                    name: "never acknowledged",
                    root: &Node::new(),
                },
                &mut records,
            )
            .unwrap();
        }
        let mut batch = Vec::new();
        codec::frame_batch(&records, &mut batch);
        batch[codec::FRAME_HEADER..codec::FRAME_HEADER + records.len() / 2].fill(0);
        file.write_all(&batch).unwrap();
        // Counted to its last byte that is not zero.
        batch.iter().rposition(|&b| b != 0).unwrap() + 1
    };
    let after = fs.after_power_cut(|n| n);
    drop(db);
    let db = open_fs(Arc::new(after.clone()), Options::default()).unwrap();
    let recovery = db.recovery().unwrap();
    assert_eq!(recovery.torn, Some(("log-0000000000".into(), cut)));
    assert!(recovery.warning().unwrap().contains("cut short"));
    assert_eq!(
        after.len("log-0000000000"),
        len,
        "the torn bytes are cut off, with the zeros after them"
    );
    assert_eq!(db.names(), ["t"]);
    let t = db.tree("t").unwrap();
    post(&t, 0, 5);
    drop(db);
    let db = open_fs(Arc::new(after), Options::default()).unwrap();
    assert_eq!(db.tree("t").unwrap().snapshot().root().children().len(), 6);
    assert_eq!(db.recovery().unwrap().torn, None);
}

#[test]
fn damage_in_the_middle_refuses_to_open_and_changes_nothing() {
    let fs = CrashFs::new();
    {
        let db = open_fs(Arc::new(fs.clone()), Options::default()).unwrap();
        let t = db.create_tree("t").unwrap();
        for seq in 0..5 {
            post(&t, 0, seq);
        }
    }
    let name = "log-0000000000";
    fs.flip(name, fs.used(name) / 2);
    let before = crate::fs::Fs::read(&fs, name).unwrap();
    let err = open_fs(Arc::new(fs.clone()), Options::default()).unwrap_err();
    let message = err.to_string();
    assert!(matches!(err, OpenError::Damaged { .. }), "{message}");
    assert!(
        message.contains(name) && message.contains("Nothing was changed"),
        "{message}"
    );
    assert_eq!(crate::fs::Fs::read(&fs, name).unwrap(), before);
}

#[test]
fn a_damaged_snapshot_refuses_to_open() {
    let fs = CrashFs::new();
    {
        let db = open_fs(Arc::new(fs.clone()), Options::default()).unwrap();
        post(&db.create_tree("t").unwrap(), 0, 0);
        db.checkpoint().unwrap();
    }
    let name = "snapshot-0000000001";
    fs.flip(name, fs.len(name) - 2);
    let err = open_fs(Arc::new(fs), Options::default()).unwrap_err();
    assert!(err.to_string().contains(name), "{err}");
}

#[test]
fn a_full_disk_fails_the_commit_and_keeps_every_acknowledged_one() {
    let fs = CrashFs::new();
    let db = open_fs(Arc::new(fs.clone()), Options::default()).unwrap();
    let t = db.create_tree("t").unwrap();
    for seq in 0..3 {
        post(&t, 0, seq);
    }
    // The disk fills up: the log goes on over the zeros laid down ahead,
    // then fails when it needs more.
    fs.set_capacity(Some(fs.len("log-0000000000")));
    let mut acknowledged = 0;
    let err = loop {
        let put = t.update(|t| {
            t.edit(Edit::PutAttribute {
                path: vec![],
                name: format!("x{acknowledged}"),
                value: vec![1; 1000],
            })
            .map(drop)
        });
        match put {
            Ok(_) => acknowledged += 1,
            Err(e) => break e,
        }
        assert!(acknowledged < 10_000, "the disk never filled");
    };
    assert!(acknowledged > 0, "the zeros laid down ahead were used");
    assert!(err.to_string().contains("no space left"), "{err}");
    // Nothing more is acknowledged, not even what would fit.
    assert!(db.create_tree("u").is_err());
    drop(db);
    fs.set_capacity(None);
    let db = open_fs(Arc::new(fs.after_power_cut(|n| n)), Options::default()).unwrap();
    let root = db.tree("t").unwrap().snapshot();
    assert_eq!(root.root().children().len(), 3);
    for i in 0..acknowledged {
        assert!(
            root.root().attribute(&format!("x{i}")).is_some(),
            "x{i} lost"
        );
    }
    assert_eq!(root.root().attribute(&format!("x{acknowledged}")), None);
}

/// What the power-cut property test runs.
#[derive(Debug, Clone)]
struct Plan {
    writers: usize,
    readers: usize,
    /// Commits each writer tries.
    commits: usize,
    /// After how many acknowledged commits the power is cut.
    cut_after: usize,
    /// How much of each file's unsynced tail survives (per mille).
    torn: u16,
}

fn plans() -> impl Strategy<Value = Plan> {
    (1usize..4, 0usize..3, 5usize..40, 0u16..=1000).prop_flat_map(
        |(writers, readers, commits, torn)| {
            (0..=writers * commits * 2).prop_map(move |cut_after| Plan {
                writers,
                readers,
                commits,
                cut_after,
                torn,
            })
        },
    )
}

/// Writers post to their own tree and to a shared one, readers check
/// every snapshot they take, and at some moment the power is cut (the
/// files as they would be then are copied off). Every commit acknowledged
/// before the cut must be in the database reopened from the copy, and
/// every tree must still be whole.
fn power_cut(plan: &Plan) -> Result<(), TestCaseError> {
    let fs = CrashFs::new();
    // fsyncs that take time, so that fsyncs overlap and an acknowledgement
    // that comes before its fsync has returned is caught by the cut.
    fs.set_sync_time(std::time::Duration::from_micros(300));
    let db = open_fs(Arc::new(fs.clone()), small_checkpoints()).unwrap();
    let shared = db.create_tree("shared").unwrap();
    let own: Vec<_> = (0..plan.writers)
        .map(|w| db.create_tree(&format!("own-{w}")).unwrap())
        .collect();
    // Every acknowledged commit: (writer, seq), in the order acknowledged.
    let acked = Mutex::new(Vec::new());
    let done = AtomicBool::new(false);
    let cut = Mutex::new(None);
    let bad_reads = Mutex::new(Vec::new());
    // The power is cut by the writer whose acknowledgement is number
    // `cut_at`, the moment it has it (before any writer starts for 0), so
    // that an acknowledgement given before its fsync returned is caught.
    // Only what was acknowledged before the copy must survive; later
    // acknowledgements may or may not.
    let total = plan.writers * plan.commits;
    let cut_at = plan.cut_after.min(total);
    let power_cut = |acked: &[(usize, usize)]| {
        let torn = u64::from(plan.torn);
        let copy = fs.after_power_cut(|n| (n as u64 * torn / 1000) as usize);
        *cut.lock().unwrap() = Some((acked.to_vec(), copy));
    };
    if cut_at == 0 {
        power_cut(&[]);
    }
    thread::scope(|s| {
        for (w, tree) in own.iter().enumerate() {
            let (acked, shared, power_cut) = (&acked, &shared, &power_cut);
            s.spawn(move || {
                for seq in 0..plan.commits {
                    post(tree, w, seq);
                    post(shared, w, seq);
                    let mut acked = acked.lock().unwrap();
                    acked.push((w, seq));
                    if acked.len() == cut_at {
                        power_cut(&acked);
                    }
                }
            });
        }
        for _ in 0..plan.readers {
            let (done, bad_reads, own, shared) = (&done, &bad_reads, &own, &shared);
            s.spawn(move || {
                while !done.load(Ordering::Relaxed) {
                    for tree in own.iter().chain([shared]) {
                        let v = tree.snapshot();
                        if !consistent(v.root()) {
                            bad_reads.lock().unwrap().push(v.number());
                        }
                    }
                }
            });
        }
        // Let the writers finish before the readers stop.
        while acked.lock().unwrap().len() < total {
            thread::yield_now();
        }
        done.store(true, Ordering::Relaxed);
    });
    prop_assert_eq!(bad_reads.into_inner().unwrap(), Vec::<u64>::new());
    drop(db);
    let (before, copy) = cut.into_inner().unwrap().unwrap();
    let db = open_fs(Arc::new(copy), small_checkpoints())
        .map_err(|e| TestCaseError::fail(format!("reopening after the cut: {e}")))?;
    let shared = db.tree("shared").expect("made before the cut");
    let root = shared.snapshot();
    prop_assert!(consistent(root.root()));
    let in_shared: Vec<(usize, usize)> = root
        .root()
        .children()
        .iter()
        .map(|c| (number(c, "writer"), number(c, "seq")))
        .collect();
    for w in 0..plan.writers {
        let tree = db.tree(&format!("own-{w}")).expect("made before the cut");
        let root = tree.snapshot();
        prop_assert!(consistent(root.root()));
        let seqs: Vec<usize> = root
            .root()
            .children()
            .iter()
            .map(|c| number(c, "seq"))
            .collect();
        // A writer's own tree holds a prefix of its posts, in order.
        prop_assert_eq!(&seqs, &(0..seqs.len()).collect::<Vec<_>>());
        for &(writer, seq) in before.iter().filter(|(writer, _)| *writer == w) {
            prop_assert!(
                seq < seqs.len(),
                "writer {writer}'s post {seq} was acknowledged and lost"
            );
            prop_assert_eq!(
                in_shared.iter().filter(|&&p| p == (writer, seq)).count(),
                1,
                "post {:?} in the shared tree",
                (writer, seq)
            );
        }
    }
    // The reopened database takes commits and keeps them.
    post(&shared, 99, 0);
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn every_acknowledged_commit_survives_a_power_cut(plan in plans()) {
        power_cut(&plan)?;
    }
}
