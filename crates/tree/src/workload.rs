//! The thesis's parallel-read experiment on this database: one tree of
//! depth 8 and about 800,000 nodes; 1,000 tasks, each handed the version
//! of that moment, count every node of it on a pool of threads; before
//! each task is handed its version, a random node is added to the tree, so
//! that every task reads a different version while the writer goes on, and
//! every count is checked against the version's own size.

use std::sync::{Arc, Mutex, mpsc};
use std::thread;
use std::time::{Duration, Instant};

use crate::{Database, Edit, Node, Version};

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
    /// Nodes of the tree before the first task.
    pub nodes: u64,
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

/// Runs the read experiment on `threads` threads. The tree is built before
/// the clock starts; the writer (this thread) adds one random leaf before
/// handing out each task's version.
pub fn parallel_read(settings: &ReadSettings) -> ReadOutcome {
    let db = Database::new();
    let tree = db
        .create_tree("read")
        .expect("a fresh database has no trees");
    let (root, nodes) = read_tree(settings.depth, settings.nodes, settings.seed);
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
    let start = Instant::now();
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
        wall: start.elapsed(),
        nodes,
        visits: visits.into_inner(),
        wrong: wrong.into_inner(),
    }
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
    fn every_task_counts_its_own_version_on_several_threads() {
        let outcome = parallel_read(&ReadSettings {
            depth: 4,
            nodes: 2_000,
            tasks: 50,
            threads: 3,
            seed: 7,
        });
        assert_eq!(outcome.wrong, 0);
        // Task k reads the tree with k + 1 leaves added, the root on top.
        let n = outcome.nodes + 1;
        let expected: u64 = (1..=50).map(|k| n + k).sum();
        assert_eq!(outcome.visits, expected);
    }
}
