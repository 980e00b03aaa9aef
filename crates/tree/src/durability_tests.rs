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

/// Posts `seqs` to `tree` as writer `writer`, one commit each ([`post`]).
fn post_each(tree: &Tree, writer: usize, seqs: std::ops::Range<usize>) {
    for seq in seqs {
        post(tree, writer, seq);
    }
}

/// The `seq` of each of `root`'s children, in order.
fn seqs_of(root: &Node) -> Vec<usize> {
    root.children().iter().map(|c| number(c, "seq")).collect()
}

/// A database on `fs` with the default options, and its tree `t` holding
/// `posts` posts of writer 0, each acknowledged on its own.
fn posted_on(fs: &CrashFs, posts: usize) -> (Database, Arc<Tree>) {
    let db = open_fs(Arc::new(fs.clone()), Options::default()).unwrap();
    let t = db.create_tree("t").unwrap();
    post_each(&t, 0, 0..posts);
    (db, t)
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
        post_each(&a, 0, 0..20);
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
    assert_eq!(seqs_of(a.root()), (0..20).collect::<Vec<_>>());
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
        let (db, t) = checkpointed(dir.path(), 10, 15);
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
    let (db, _t) = posted_on(&fs, 5);
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
    // The hole of zeros is in the middle: the record's length fits in the
    // file, so it is a full record whose checksum does not match, and is
    // said to be one; its bytes are kept beside the log.
    let dropped = recovery.dropped.clone().unwrap();
    assert!(dropped.full_length);
    let warning = recovery.warning().unwrap();
    assert!(
        warning.contains("full record whose checksum does not match")
            && !warning.contains("cut short"),
        "{warning}"
    );
    let kept = crate::fs::Fs::read(&after, &dropped.kept).unwrap();
    assert_eq!(kept.len(), cut);
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
        let (_db, _t) = posted_on(&fs, 5);
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
    let (db, t) = posted_on(&fs, 3);
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
        let seqs = seqs_of(root.root());
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

/// The files of `dir` and their bytes, to show that a refusal changed
/// nothing.
fn files(dir: &std::path::Path) -> Vec<(String, Vec<u8>)> {
    let mut files: Vec<(String, Vec<u8>)> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| {
            let e = e.unwrap();
            let name = e.file_name().into_string().unwrap();
            (name, std::fs::read(e.path()).unwrap())
        })
        .filter(|(name, _)| name != "LOCK")
        .collect();
    files.sort();
    files
}

/// A database in `dir` with tree `t` holding `posts` posts, each
/// acknowledged on its own (one batch each), and no snapshot.
fn posted(dir: &std::path::Path, posts: usize) {
    let db = Database::open(dir).unwrap();
    let t = db.create_tree("t").unwrap();
    post_each(&t, 0, 0..posts);
}

/// [`posted`], and then log 0: its path and its bytes.
fn posted_log(dir: &std::path::Path, posts: usize) -> (std::path::PathBuf, Vec<u8>) {
    posted(dir, posts);
    let log = dir.join("log-0000000000");
    let bytes = std::fs::read(&log).unwrap();
    (log, bytes)
}

/// A database in `dir` with tree `t` holding posts `0..posts` of writer
/// 0: the first `snapshotted` in a checkpoint's snapshot, the rest in the
/// log after it.
fn checkpointed(dir: &std::path::Path, snapshotted: usize, posts: usize) -> (Database, Arc<Tree>) {
    let db = Database::open(dir).unwrap();
    let t = db.create_tree("t").unwrap();
    post_each(&t, 0, 0..snapshotted);
    db.checkpoint().unwrap();
    post_each(&t, 0, snapshotted..posts);
    (db, t)
}

/// What log 0's header is: the file a database opened and closed at
/// once leaves (21 bytes).
fn log_header() -> Vec<u8> {
    let dir = tempfile::tempdir().unwrap();
    drop(Database::open(dir.path()).unwrap());
    std::fs::read(dir.path().join("log-0000000000")).unwrap()
}

#[test]
fn a_last_log_whose_header_does_not_read_is_refused_unless_a_crash_could_have_left_it() {
    let header = log_header();
    assert_eq!(header.len(), 21);
    let mut random = vec![0u8; 100 << 10];
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    for b in &mut random {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        *b = x as u8;
    }
    let mut torn_then_junk = header[..10].to_vec();
    torn_then_junk.push(b'x');
    let mut zeroed_in_place = header.clone();
    zeroed_in_place[4..12].fill(0);
    // (what the file holds, whether a crash while making it can leave it)
    let cases: Vec<(&str, Vec<u8>, bool)> = vec![
        ("nothing: made, never written", vec![], true),
        ("the header's first bytes", header[..9].to_vec(), true),
        ("the header's length, its bytes zeros", vec![0; 21], true),
        ("the header with a hole of zeros", zeroed_in_place, true),
        ("junk", b"junk\n".to_vec(), false),
        ("100 KB of random bytes", random, false),
        ("a header cut short, then a byte", torn_then_junk, false),
        ("zeros past the header's length", vec![0; 64 << 10], false),
        (
            "the header with a bit flipped, then zeros",
            {
                let mut b = header.clone();
                b[0] ^= 1;
                b.resize(64 << 10, 0);
                b
            },
            false,
        ),
    ];
    for (what, bytes, crash) in cases {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("log-0000000000");
        std::fs::write(&log, &bytes).unwrap();
        match Database::open(dir.path()) {
            Ok(db) => {
                assert!(crash, "{what}: opened");
                let warning = db.recovery().unwrap().warning().unwrap_or_default();
                assert!(
                    warning.contains("log-0000000000") && warning.contains("header"),
                    "{what}: {warning}"
                );
                assert!(db.names().is_empty(), "{what}");
                drop(db);
                assert_eq!(std::fs::read(&log).unwrap(), header, "{what}: made anew");
            }
            Err(err) => {
                let message = err.to_string();
                assert!(!crash, "{what}: refused: {message}");
                assert!(
                    message.contains("log-0000000000 is damaged at byte 0")
                        && message.contains("Nothing was changed"),
                    "{what}: {message}"
                );
                assert_eq!(std::fs::read(&log).unwrap(), bytes, "{what}: changed");
            }
        }
    }
}

#[test]
fn a_real_log_with_a_flipped_header_bit_is_refused_and_kept() {
    let dir = tempfile::tempdir().unwrap();
    let (log, mut bytes) = posted_log(dir.path(), 20);
    bytes[0] ^= 0x08;
    std::fs::write(&log, &bytes).unwrap();
    let before = files(dir.path());
    let err = Database::open(dir.path()).unwrap_err().to_string();
    assert!(err.contains("log-0000000000 is damaged at byte 0"), "{err}");
    assert_eq!(files(dir.path()), before);
}

#[test]
fn an_empty_or_torn_log_is_made_anew_only_where_nothing_acknowledged_could_be() {
    // After a checkpoint, log 1 began before snapshot 1 was written, so
    // its header was durable before the snapshot existed: an empty log 1
    // beside snapshot 1 is damage, not a crash.
    let dir = tempfile::tempdir().unwrap();
    {
        let db = Database::open(dir.path()).unwrap();
        post(&db.create_tree("t").unwrap(), 0, 0);
        db.checkpoint().unwrap();
        post(&db.tree("t").unwrap(), 0, 1);
    }
    let log = dir.path().join("log-0000000001");
    std::fs::write(&log, b"").unwrap();
    let before = files(dir.path());
    let err = Database::open(dir.path()).unwrap_err().to_string();
    assert!(err.contains("log-0000000001 is damaged at byte 0"), "{err}");
    assert_eq!(files(dir.path()), before);
    // A log after the snapshot's, left empty by a crash in the middle of a
    // checkpoint (before snapshot 2 was written): made anew, every post
    // kept.
    let log1 = {
        let dir2 = tempfile::tempdir().unwrap();
        let db = Database::open(dir2.path()).unwrap();
        db.checkpoint().unwrap();
        drop(db);
        std::fs::read(dir2.path().join("log-0000000001")).unwrap()
    };
    std::fs::write(&log, &log1).unwrap();
    std::fs::write(dir.path().join("log-0000000002"), b"").unwrap();
    let db = Database::open(dir.path()).unwrap();
    assert_eq!(db.tree("t").unwrap().snapshot().root().children().len(), 1);
    assert!(
        db.recovery()
            .unwrap()
            .warning()
            .unwrap()
            .contains("log-0000000002")
    );
}

#[test]
fn a_last_record_damaged_after_it_was_acknowledged_is_called_so_and_kept() {
    let dir = tempfile::tempdir().unwrap();
    let (log, mut bytes) = posted_log(dir.path(), 5);
    let used = bytes.iter().rposition(|&b| b != 0).unwrap() + 1;
    // A byte of the last record, acknowledged before the database closed.
    bytes[used - 3] ^= 0x10;
    std::fs::write(&log, &bytes).unwrap();
    let db = Database::open(dir.path()).unwrap();
    let recovery = db.recovery().unwrap().clone();
    let dropped = recovery.dropped.clone().unwrap();
    let warning = recovery.warning().unwrap();
    assert!(dropped.full_length, "{warning}");
    assert!(
        warning.contains("log-0000000000 ended in a full record whose checksum does not match")
            && warning.contains("may have been acknowledged")
            && warning.contains(&dropped.kept)
            && !warning.contains("cut short")
            && !warning.contains("never acknowledged"),
        "{warning}"
    );
    assert_eq!(
        db.tree("t").unwrap().snapshot().root().children().len(),
        4,
        "the last post is out of the tree"
    );
    drop(db);
    // ... but not lost: its bytes, as they were, are beside the log.
    let kept = std::fs::read(dir.path().join(&dropped.kept)).unwrap();
    assert_eq!(kept, bytes[dropped.at..used]);

    // A log that ends before its last record does: cut short.
    let dir = tempfile::tempdir().unwrap();
    posted(dir.path(), 5);
    let bytes = std::fs::read(log_of(dir.path())).unwrap();
    let used = bytes.iter().rposition(|&b| b != 0).unwrap() + 1;
    std::fs::write(log_of(dir.path()), &bytes[..used - 3]).unwrap();
    let db = Database::open(dir.path()).unwrap();
    let recovery = db.recovery().unwrap();
    assert!(!recovery.dropped.as_ref().unwrap().full_length);
    let warning = recovery.warning().unwrap();
    assert!(warning.contains("cut short"), "{warning}");
}

fn log_of(dir: &std::path::Path) -> std::path::PathBuf {
    dir.join("log-0000000000")
}

/// Copies every file of `from` (but its LOCK) into a new directory.
fn copy_of(from: &std::path::Path) -> tempfile::TempDir {
    let to = tempfile::tempdir().unwrap();
    for (name, bytes) in files(from) {
        std::fs::write(to.path().join(name), bytes).unwrap();
    }
    to
}

/// Flips each bit of the first 64 bytes of `name` in `dir`, one at a time,
/// each on a fresh copy, and opens the copy as `dyno serve --app bbs` does:
/// every case must be refused (changing nothing) or open with every one of
/// the `posts` acknowledged posts, and no file may be shortened. Returns
/// how many were refused and how many opened.
fn sweep(dir: &std::path::Path, name: &str, posts: usize) -> (usize, usize) {
    let original = files(dir);
    let len = original.iter().find(|(n, _)| n == name).unwrap().1.len();
    assert!(len >= 64, "{name} is only {len} bytes");
    let (mut refused, mut opened) = (0, 0);
    for bit in 0..64 * 8 {
        let copy = copy_of(dir);
        let path = copy.path().join(name);
        let mut bytes = std::fs::read(&path).unwrap();
        bytes[bit / 8] ^= 1 << (bit % 8);
        std::fs::write(&path, &bytes).unwrap();
        let before = files(copy.path());
        let case = format!("{name}, byte {} bit {}", bit / 8, bit % 8);
        match Database::open(copy.path()) {
            Err(err) => {
                assert!(matches!(err, OpenError::Damaged { .. }), "{case}: {err}");
                assert!(err.to_string().contains(name), "{case}: {err}");
                assert_eq!(files(copy.path()), before, "{case}: changed");
                refused += 1;
            }
            Ok(db) => {
                let root = db.tree("t").map(|t| t.snapshot());
                let seqs: Vec<usize> = root.iter().flat_map(|v| seqs_of(v.root())).collect();
                assert_eq!(seqs, (0..posts).collect::<Vec<_>>(), "{case}: posts lost");
                drop(db);
                opened += 1;
            }
        }
        for (file, was) in &before {
            let now = std::fs::metadata(copy.path().join(file)).map_or(0, |m| m.len() as usize);
            assert!(
                now >= was.len(),
                "{case}: {file} cut from {} to {now} bytes",
                was.len()
            );
        }
    }
    (refused, opened)
}

#[test]
fn each_bit_flipped_in_a_logs_first_64_bytes_is_refused_or_loses_nothing() {
    let dir = tempfile::tempdir().unwrap();
    posted(dir.path(), 30);
    let (refused, _) = sweep(dir.path(), "log-0000000000", 30);
    // The header and the first batches: every flip is damage before
    // intact records.
    assert_eq!(refused, 64 * 8);
}

#[test]
fn each_bit_flipped_in_a_snapshots_first_64_bytes_is_refused_or_loses_nothing() {
    let dir = tempfile::tempdir().unwrap();
    {
        let (_db, _t) = checkpointed(dir.path(), 20, 30);
    }
    let (refused, _) = sweep(dir.path(), "snapshot-0000000001", 30);
    assert_eq!(refused, 64 * 8);
}
