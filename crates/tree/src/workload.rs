//! The thesis's two experiments on this database.
//!
//! Parallel read: one tree of depth 8 and about 800,000 nodes; 1,000
//! tasks, each handed the version of that moment, count every node of it
//! on a pool of threads; before each task is handed its version, a random
//! node is added to the tree, so that every task reads a different version
//! while the writer goes on, and every count is checked against the
//! version's own size.
//!
//! Parallel write: 1,000 tasks on a pool of threads each build a tree of
//! depth 6 and about 10,000 nodes node by node, register it in the
//! database durably (one record, one shared fsync), and count its nodes
//! back.

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, mpsc};
use std::thread;
use std::time::{Duration, Instant};

use crate::{Database, Edit, LogStats, Node, Version};

/// The thesis's shape: depth 8, about 800,000 nodes, 1,000 tasks.
pub const DEFAULT_DEPTH: u32 = 8;
pub const DEFAULT_NODES: u64 = 800_000;
pub const DEFAULT_TASKS: usize = 1_000;

/// What to run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReadSettings {
    /// Levels below the root.
    pub depth: u32,
    /// About how many nodes the tree starts with (the fan-out is chosen to
    /// come close at that depth).
    pub nodes: u64,
    pub tasks: usize,
    pub threads: usize,
    /// Seeds the shape of the tree and where nodes are added.
    pub seed: u64,
}

/// What a run did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReadOutcome {
    /// From handing out the first task to the last task's count.
    pub wall: Duration,
    /// Node visits in all (the sum of every task's count).
    pub visits: u64,
    /// Tasks whose count was not the size of their version.
    pub wrong: usize,
}

/// The tree the read experiment reads: `depth` levels below the root, each
/// inner node with `fanout` or `fanout + 1` children (chosen so the total
/// comes near `nodes`), leaves carrying one attribute. Returns the root and
/// its node count.
pub fn read_tree(depth: u32, nodes: u64, seed: u64) -> (Node, u64) {
    let fanout = fanout_for(depth, nodes);
    let (base, extra) = (fanout.floor() as usize, fanout.fract());
    let mut rng = fastrand_like(seed);
    let mut count = 0u64;
    let root = build(depth, base, extra, &mut rng, &mut count);
    (root, count)
}

fn build(
    depth: u32,
    base: usize,
    extra: f64,
    rng: &mut impl FnMut() -> f64,
    count: &mut u64,
) -> Node {
    *count += 1;
    if depth == 0 {
        return Node::with_attributes([("leaf", &b"1"[..])]);
    }
    let n = base + usize::from(rng() < extra);
    let children = (0..n)
        .map(|_| build(depth - 1, base, extra, rng, count))
        .collect();
    Node::new().with_children(children)
}

/// The mean fan-out f with 1 + f + … + f^depth = nodes.
fn fanout_for(depth: u32, nodes: u64) -> f64 {
    let total = |f: f64| (0..=depth).map(|d| f.powi(d as i32)).sum::<f64>();
    let (mut lo, mut hi) = (1.0f64, 2.0f64);
    while total(hi) < nodes as f64 && hi < 1e6 {
        hi *= 2.0;
    }
    for _ in 0..60 {
        let mid = (lo + hi) / 2.0;
        if total(mid) < nodes as f64 {
            lo = mid
        } else {
            hi = mid
        }
    }
    lo.max(1.0)
}

/// A small deterministic generator of floats in [0, 1) (splitmix64).
fn fastrand_like(seed: u64) -> impl FnMut() -> f64 {
    let mut state = seed;
    move || {
        state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^= z >> 31;
        (z >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// The tree a read experiment starts from, built once and shared by every
/// run of it: runs at different thread counts then read the very same
/// nodes at the very same addresses, so that the allocator's layout of a
/// tree built later (in memory another run freed) cannot pass for a
/// difference in scaling.
#[derive(Debug, Clone)]
pub struct ReadTree {
    root: Node,
    nodes: u64,
}

impl ReadTree {
    /// The tree `settings` describes (its depth, size and seed).
    pub fn build(settings: &ReadSettings) -> ReadTree {
        let (root, nodes) = read_tree(settings.depth, settings.nodes, settings.seed);
        ReadTree { root, nodes }
    }

    /// How many nodes it has.
    pub fn nodes(&self) -> u64 {
        self.nodes
    }
}

/// Runs the read experiment on `settings.threads` threads over `start`
/// (built with the same settings): a new database whose tree holds `start`,
/// shared, not copied; the writer (this thread) adds one random leaf before
/// handing out each task's version. The clock starts at the first hand-out.
pub fn parallel_read(settings: &ReadSettings, start: &ReadTree) -> ReadOutcome {
    let db = Database::new();
    let tree = db
        .create_tree("read")
        .expect("a fresh database has no trees");
    let (root, nodes) = (&start.root, start.nodes);
    tree.update(|t| {
        t.edit(Edit::AddChild {
            path: vec![],
            at: 0,
            node: root.clone(),
        })?;
        Ok(())
    })
    .expect("a fresh tree takes any child");
    // The tree's own root holds the built tree as its only child.
    let mut size = nodes + 1;
    let mut rng = fastrand_like(settings.seed ^ 0x5EED);
    let (send, receive) = mpsc::sync_channel::<(Arc<Version>, u64)>(settings.threads.max(1) * 2);
    let receive = Mutex::new(receive);
    let visits = std::sync::atomic::AtomicU64::new(0);
    let wrong = std::sync::atomic::AtomicUsize::new(0);
    let began = Instant::now();
    thread::scope(|s| {
        for _ in 0..settings.threads.max(1) {
            s.spawn(|| {
                loop {
                    let task = receive.lock().unwrap_or_else(|e| e.into_inner()).recv();
                    let Ok((version, expected)) = task else { break };
                    let counted = version.root().count();
                    visits.fetch_add(counted, std::sync::atomic::Ordering::Relaxed);
                    if counted != expected {
                        wrong.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    }
                }
            });
        }
        for _ in 0..settings.tasks {
            let path = random_path(tree.snapshot().root(), &mut rng);
            tree.update(|t| {
                let at = t.root().at(&path).map_or(0, |n| n.children().len());
                t.edit(Edit::AddChild {
                    path: path.clone(),
                    at,
                    node: Node::new(),
                })?;
                Ok(())
            })
            .expect("the path was read from the current version");
            size += 1;
            if send.send((tree.snapshot(), size)).is_err() {
                break;
            }
        }
        drop(send);
    });
    ReadOutcome {
        wall: began.elapsed(),
        visits: visits.into_inner(),
        wrong: wrong.into_inner(),
    }
}

/// The thesis's write shape: 1,000 trees of depth 6 and about 10,000 nodes.
pub const DEFAULT_WRITE_DEPTH: u32 = 6;
pub const DEFAULT_WRITE_NODES: u64 = 10_000;

/// What to run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WriteSettings {
    /// Levels below each tree's root.
    pub depth: u32,
    /// About how many nodes each tree gets.
    pub nodes: u64,
    pub tasks: usize,
    pub threads: usize,
    pub seed: u64,
    /// The database's directory (made empty for the run, removed after);
    /// `None` keeps it in memory.
    pub dir: Option<PathBuf>,
}

/// What a write run did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WriteOutcome {
    /// From the first task's start to the last task's check.
    pub wall: Duration,
    /// Nodes written in all (every tree's, its root included).
    pub nodes: u64,
    /// Tasks whose tree counted back its own number of nodes.
    pub correct: usize,
    /// Commits that replayed their edits on a newer version first.
    pub retries: u64,
    /// The log's work: records, fsyncs, bytes (zero in memory).
    pub log: LogStats,
}

/// Why a write run could not run.
#[derive(Debug, thiserror::Error)]
pub enum WriteError {
    #[error("could not prepare the database directory {0}: {1}")]
    Dir(PathBuf, #[source] std::io::Error),
    #[error(transparent)]
    Open(#[from] crate::OpenError),
    #[error("task {task} could not commit: {source}")]
    Commit {
        task: usize,
        #[source]
        source: crate::TreeError,
    },
}

/// Calls `apply` with each edit that builds one tree of the write
/// experiment from an empty root, in pre-order (each node added as the last
/// child of its parent); returns the number of nodes they add, or `apply`'s
/// first error. One edit is reused, its path changed in place, so that
/// making the edits costs no memory of its own beside the tree's.
pub fn write_edits<E>(
    depth: u32,
    nodes: u64,
    seed: u64,
    mut apply: impl FnMut(&Edit) -> Result<(), E>,
) -> Result<u64, E> {
    let fanout = fanout_for(depth, nodes.saturating_sub(1).max(1));
    let (base, extra) = (fanout.floor() as usize, fanout.fract());
    let mut rng = fastrand_like(seed);
    // Every leaf is the same immutable node; sharing it is what a
    // persistent tree allows (each is still added by its own edit).
    let leaf = Node::with_attributes([("leaf", &b"1"[..])]);
    let inner = Node::new();
    let mut edit = Edit::AddChild {
        path: Vec::with_capacity(depth as usize),
        at: 0,
        node: Node::new(),
    };
    let mut added = 0u64;
    // Depth-first, with an explicit stack of (children added, children to
    // add, levels below): the root's children come first. The edit's path
    // is the path of the node whose children are being added.
    let mut todo: Vec<(usize, usize, u32)> = vec![(0, base + usize::from(rng() < extra), depth)];
    while let Some((next, count, below)) = todo.last_mut() {
        let Edit::AddChild { path, at, node } = &mut edit else {
            unreachable!("the edit is made an AddChild above")
        };
        if *next == *count {
            todo.pop();
            path.pop();
            continue;
        }
        *at = *next;
        *next += 1;
        let below = *below - 1;
        *node = if below == 0 {
            leaf.clone()
        } else {
            inner.clone()
        };
        let at = *at;
        apply(&edit)?;
        added += 1;
        if below > 0 {
            let children = base + usize::from(rng() < extra);
            if let Edit::AddChild { path, .. } = &mut edit {
                path.push(at);
            }
            todo.push((0, children, below));
        }
    }
    Ok(added)
}

/// Runs the write experiment on `threads` threads.
pub fn parallel_write(settings: &WriteSettings) -> Result<WriteOutcome, WriteError> {
    let db = match &settings.dir {
        Some(dir) => {
            match std::fs::remove_dir_all(dir) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(WriteError::Dir(dir.clone(), e)),
            }
            Database::open(dir)?
        }
        None => Database::new(),
    };
    let next = AtomicUsize::new(0);
    let correct = AtomicUsize::new(0);
    let nodes = AtomicU64::new(0);
    let failed = Mutex::new(None);
    let start = Instant::now();
    thread::scope(|s| {
        for _ in 0..settings.threads.max(1) {
            s.spawn(|| {
                loop {
                    let task = next.fetch_add(1, Ordering::Relaxed);
                    if task >= settings.tasks {
                        break;
                    }
                    // Build the tree node by node, apart, then register
                    // it: one durable record per task, as Jungle's tasks
                    // built a tree and registered it.
                    // The tree's nodes when it counts back right.
                    let commit = || -> Result<Option<u64>, crate::TreeError> {
                        let mut root = Node::new();
                        let added = write_edits(
                            settings.depth,
                            settings.nodes,
                            settings.seed.wrapping_add(task as u64),
                            |edit| edit.apply_in_place(&mut root),
                        )
                        .map_err(|source| crate::TreeError::Conflict { version: 0, source })?;
                        db.create_tree_with(&format!("task-{task}"), root)?;
                        let counted = db
                            .tree(&format!("task-{task}"))
                            .map(|t| t.snapshot().root().count());
                        Ok((counted == Some(added + 1)).then_some(added + 1))
                    };
                    match commit() {
                        Ok(None) => {}
                        Ok(Some(written)) => {
                            nodes.fetch_add(written, Ordering::Relaxed);
                            correct.fetch_add(1, Ordering::Relaxed);
                        }
                        Err(source) => {
                            failed
                                .lock()
                                .unwrap_or_else(|e| e.into_inner())
                                .get_or_insert(WriteError::Commit { task, source });
                            // Stop handing out tasks.
                            next.store(settings.tasks, Ordering::Relaxed);
                        }
                    }
                }
            });
        }
    });
    let wall = start.elapsed();
    if let Some(e) = failed.into_inner().unwrap_or_else(|e| e.into_inner()) {
        return Err(e);
    }
    let retries = db
        .names()
        .iter()
        .filter_map(|n| db.tree(n))
        .map(|t| t.stats().retries)
        .sum();
    let outcome = WriteOutcome {
        wall,
        nodes: nodes.into_inner(),
        correct: correct.into_inner(),
        retries,
        log: db.log_stats(),
    };
    drop(db);
    if let Some(dir) = &settings.dir {
        std::fs::remove_dir_all(dir).map_err(|e| WriteError::Dir(dir.clone(), e))?;
    }
    Ok(outcome)
}

/// A path from the root to a random inner node (where a leaf is added).
fn random_path(root: &Node, rng: &mut impl FnMut() -> f64) -> Vec<usize> {
    let mut path = Vec::new();
    let mut node = root;
    while !node.children().is_empty() && (path.is_empty() || rng() < 0.85) {
        let i = (rng() * node.children().len() as f64) as usize;
        let i = i.min(node.children().len() - 1);
        path.push(i);
        node = &node.children()[i];
    }
    path
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tree_comes_near_the_asked_size_at_the_asked_depth() {
        let (root, count) = read_tree(8, 800_000, 1);
        assert_eq!(root.count(), count);
        assert!((700_000..900_000).contains(&count), "{count}");
        let mut depth = 0;
        let mut node = &root;
        while let Some(first) = node.children().first() {
            depth += 1;
            node = first;
        }
        assert_eq!(depth, 8);
    }

    #[test]
    fn a_write_tree_has_the_asked_depth_and_about_the_asked_size() {
        // Applied one by one as new versions, and in place: the same tree.
        let mut versions = Node::new();
        let mut in_place = Node::new();
        let added = write_edits(6, 10_000, 3, |e| {
            versions = e.apply(&versions)?;
            e.apply_in_place(&mut in_place)
        })
        .unwrap();
        assert_eq!(versions, in_place);
        let root = versions;
        assert_eq!(root.count(), added + 1);
        assert!((8_000..12_500).contains(&added), "{added}");
        let mut depth = 0;
        let mut node = &root;
        while let Some(first) = node.children().first() {
            depth += 1;
            node = first;
        }
        assert_eq!(depth, 6);
    }

    #[test]
    fn durable_writers_on_several_threads_all_write_correctly_and_share_fsyncs() {
        let dir = tempfile::tempdir().unwrap();
        let settings = WriteSettings {
            depth: 3,
            nodes: 200,
            tasks: 40,
            threads: 4,
            seed: 1,
            dir: Some(dir.path().join("db")),
        };
        let outcome = parallel_write(&settings).unwrap();
        assert_eq!(outcome.correct, 40);
        assert_eq!(outcome.retries, 0, "every task writes its own tree");
        // One tree registered per task, each acknowledged durable.
        assert_eq!(outcome.log.records, 40);
        assert!(outcome.log.fsyncs >= 1 && outcome.log.fsyncs <= 40);
        assert!(
            !dir.path().join("db").exists(),
            "the run removes its database"
        );
    }

    #[test]
    fn every_task_counts_its_own_version_on_several_threads() {
        let settings = ReadSettings {
            depth: 4,
            nodes: 2_000,
            tasks: 50,
            threads: 3,
            seed: 7,
        };
        let start = ReadTree::build(&settings);
        // Twice over the same start: a run adds to its own database's
        // tree, never to the shared start.
        for _ in 0..2 {
            let outcome = parallel_read(&settings, &start);
            assert_eq!(outcome.wrong, 0);
            // Task k reads the tree with k + 1 leaves added, the root on top.
            let n = start.nodes() + 1;
            let expected: u64 = (1..=50).map(|k| n + k).sum();
            assert_eq!(outcome.visits, expected);
        }
        assert_eq!(start.root.count(), start.nodes());
    }
}
