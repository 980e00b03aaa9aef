//! Named trees of immutable versions: readers take a snapshot without a
//! lock, writers commit optimistically by compare-and-swap of the root.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};

use arc_swap::ArcSwap;

use crate::{Edit, EditError, Node};

/// How many times a commit replays its edits on a newer version before it
/// gives up: far beyond what any contention short of a livelock needs.
pub const MAX_RETRIES: u32 = 10_000;

/// One immutable version of a tree.
#[derive(Debug)]
pub struct Version {
    number: u64,
    root: Node,
}

impl Version {
    /// Versions count from 0 (the empty tree) up by one per commit.
    pub fn number(&self) -> u64 {
        self.number
    }

    pub fn root(&self) -> &Node {
        &self.root
    }
}

/// Why a tree could not be made or a commit not be made.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TreeError {
    #[error("a tree named '{0}' exists already")]
    Exists(String),
    #[error(
        "the commit conflicts with version {version}, committed meanwhile: {source} (the transaction's edits no longer fit the tree)"
    )]
    Conflict { version: u64, source: EditError },
    #[error("the commit was retried {0} times without getting in: give up")]
    Starved(u32),
}

/// Commits and retries of one tree so far.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct TreeStats {
    pub commits: u64,
    /// Times a commit found a newer version than its own base and replayed
    /// its edits on it (what capped Jungle's write scaling).
    pub retries: u64,
}

/// A named tree: its current version, the older ones kept, and its counts.
#[derive(Debug)]
pub struct Tree {
    name: Arc<str>,
    current: ArcSwap<Version>,
    /// Every committed version still kept, by number.
    history: Mutex<BTreeMap<u64, Arc<Version>>>,
    commits: AtomicU64,
    retries: AtomicU64,
}

impl Tree {
    fn new(name: &str) -> Tree {
        let empty = Arc::new(Version {
            number: 0,
            root: Node::new(),
        });
        Tree {
            name: name.into(),
            current: ArcSwap::new(empty.clone()),
            history: Mutex::new(BTreeMap::from([(0, empty)])),
            commits: AtomicU64::new(0),
            retries: AtomicU64::new(0),
        }
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    /// The current version, to read for as long as the caller likes: no
    /// lock is taken, and no commit waits for it or changes it.
    pub fn snapshot(&self) -> Arc<Version> {
        self.current.load_full()
    }

    /// Version `number`, while it is kept (see [`Tree::compact`]).
    pub fn version(&self, number: u64) -> Option<Arc<Version>> {
        self.history().get(&number).cloned()
    }

    /// The numbers of the versions kept, oldest first.
    pub fn versions(&self) -> Vec<u64> {
        self.history().keys().copied().collect()
    }

    /// Drops the versions older than `keep_from` (the current one is always
    /// kept); readers holding one keep it alive until they let go. Returns
    /// how many were dropped.
    pub fn compact(&self, keep_from: u64) -> usize {
        let keep_from = keep_from.min(self.snapshot().number);
        let mut history = self.history();
        let kept = history.split_off(&keep_from);
        let dropped = history.len();
        *history = kept;
        dropped
    }

    /// A transaction on the current version.
    pub fn transaction(&self) -> Transaction<'_> {
        let base = self.snapshot();
        Transaction {
            tree: self,
            root: base.root.clone(),
            base,
            edits: Vec::new(),
        }
    }

    /// Runs `f` on a transaction of the current version and commits it;
    /// when another commit got in first, runs `f` again on the newer
    /// version, as often as it takes (each time counts in
    /// [`TreeStats::retries`]). For edits that depend on what they read (a
    /// count, the next free position), which replaying recorded edits
    /// ([`Transaction::commit`]) would get wrong. An error from `f` ends it
    /// with nothing committed.
    pub fn update<R>(
        &self,
        mut f: impl FnMut(&mut Transaction<'_>) -> Result<R, EditError>,
    ) -> Result<(Commit, R), TreeError> {
        for retries in 0..=MAX_RETRIES {
            let mut t = self.transaction();
            let out = f(&mut t).map_err(|source| TreeError::Conflict {
                version: t.base.number,
                source,
            })?;
            match self.publish(&t.base, t.root) {
                Ok(version) => return Ok((Commit { version, retries }, out)),
                Err(_) => {
                    self.retries.fetch_add(1, Ordering::Relaxed);
                }
            }
        }
        Err(TreeError::Starved(MAX_RETRIES))
    }

    /// Makes `root` the version after `base` if `base` is still current;
    /// otherwise the version that is.
    fn publish(&self, base: &Arc<Version>, root: Node) -> Result<u64, Arc<Version>> {
        let next = Arc::new(Version {
            number: base.number + 1,
            root,
        });
        let previous = self.current.compare_and_swap(base, next.clone());
        if Arc::ptr_eq(&*previous, base) {
            self.history().insert(next.number, next);
            self.commits.fetch_add(1, Ordering::Relaxed);
            Ok(base.number + 1)
        } else {
            Err(arc_swap::Guard::into_inner(previous))
        }
    }

    pub fn stats(&self) -> TreeStats {
        TreeStats {
            commits: self.commits.load(Ordering::Relaxed),
            retries: self.retries.load(Ordering::Relaxed),
        }
    }

    fn history(&self) -> std::sync::MutexGuard<'_, BTreeMap<u64, Arc<Version>>> {
        // A panic elsewhere cannot leave the map half-changed: every
        // change is one insert or one swap.
        self.history.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// Edits to one tree that commit together or not at all.
#[derive(Debug)]
pub struct Transaction<'a> {
    tree: &'a Tree,
    base: Arc<Version>,
    root: Node,
    edits: Vec<Edit>,
}

/// A commit that got in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Commit {
    /// The version it made.
    pub version: u64,
    /// How many times it replayed its edits on a newer version first.
    pub retries: u32,
}

impl Transaction<'_> {
    /// Applies `edit` to the transaction's tree now, so a path that does
    /// not exist is an error here rather than at commit.
    pub fn edit(&mut self, edit: Edit) -> Result<&mut Self, EditError> {
        self.root = edit.apply(&self.root)?;
        self.edits.push(edit);
        Ok(self)
    }

    /// The tree as the transaction's edits have made it so far.
    pub fn root(&self) -> &Node {
        &self.root
    }

    /// The version the transaction started from.
    pub fn base(&self) -> u64 {
        self.base.number
    }

    /// Makes the edits the tree's next version. When another commit got in
    /// first, the recorded edits are replayed on the newer version (a
    /// rebase) and the commit tried again, as often as it takes
    /// ([`TreeStats::retries`] counts each time); an edit that no longer
    /// fits is a [`TreeError::Conflict`] and nothing is committed. Edits
    /// replay as recorded: one whose value came from reading the tree
    /// belongs in [`Tree::update`], which reads again.
    pub fn commit(self) -> Result<Commit, TreeError> {
        let Transaction {
            tree,
            mut base,
            mut root,
            edits,
        } = self;
        for retries in 0..=MAX_RETRIES {
            match tree.publish(&base, root) {
                Ok(version) => return Ok(Commit { version, retries }),
                Err(newer) => {
                    tree.retries.fetch_add(1, Ordering::Relaxed);
                    base = newer;
                    root = replay(&edits, &base)?;
                }
            }
        }
        Err(TreeError::Starved(MAX_RETRIES))
    }
}

/// `edits` applied in order to `version`'s root.
fn replay(edits: &[Edit], version: &Version) -> Result<Node, TreeError> {
    edits
        .iter()
        .try_fold(version.root.clone(), |root, edit| edit.apply(&root))
        .map_err(|source| TreeError::Conflict {
            version: version.number,
            source,
        })
}

/// Named trees. Writers of different trees never wait for each other:
/// looking a tree up takes a shared lock for an instant, and a commit
/// touches only its own tree.
#[derive(Debug, Default)]
pub struct Database {
    trees: RwLock<HashMap<Arc<str>, Arc<Tree>>>,
}

impl Database {
    pub fn new() -> Database {
        Database::default()
    }

    /// Makes an empty tree named `name`.
    pub fn create_tree(&self, name: &str) -> Result<Arc<Tree>, TreeError> {
        let mut trees = self.trees.write().unwrap_or_else(|e| e.into_inner());
        if trees.contains_key(name) {
            return Err(TreeError::Exists(name.to_owned()));
        }
        let tree = Arc::new(Tree::new(name));
        trees.insert(tree.name.clone(), tree.clone());
        Ok(tree)
    }

    /// The tree named `name`.
    pub fn tree(&self, name: &str) -> Option<Arc<Tree>> {
        self.trees
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .get(name)
            .cloned()
    }

    /// The names of the trees, sorted.
    pub fn names(&self) -> Vec<String> {
        let mut names: Vec<String> = self
            .trees
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .keys()
            .map(|k| k.to_string())
            .collect();
        names.sort();
        names
    }
}
