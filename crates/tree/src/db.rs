//! Named trees of immutable versions: readers take a snapshot without a
//! lock, writers commit optimistically by compare-and-swap of the root.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};

use arc_swap::ArcSwap;

use crate::codec::{self, RecordRef};
use crate::durable::Durable;
use crate::log::{Log, LogError, LogStats};
use crate::{Edit, EditError, Node};

/// How many old versions of each tree are kept by default, besides the
/// current one; older ones are compacted away as new ones come (readers
/// holding one keep it alive). [`Options::history`] changes it.
pub const DEFAULT_HISTORY: usize = 1_000;

/// How a database keeps its trees.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Options {
    /// Old versions kept per tree, besides the current one; `usize::MAX`
    /// keeps every one (until [`Tree::compact`]).
    pub history: usize,
    /// A durable database writes a snapshot and starts a new log file once
    /// the log passes this many bytes, or the last snapshot's size if that
    /// is larger, so that reopening replays a bounded log.
    pub checkpoint_bytes: u64,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            history: DEFAULT_HISTORY,
            checkpoint_bytes: 64 << 20,
        }
    }
}

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
    /// Versions count from 0 (the tree as made, empty unless made by
    /// [`Database::create_tree_with`]) up by one per commit.
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
    /// The commit is not durable and was not acknowledged; the database
    /// takes no more commits (restart it: reopening recovers every commit
    /// that was acknowledged).
    #[error(transparent)]
    Log(#[from] LogError),
    /// A record could not be encoded (a value past the size a record can
    /// hold).
    #[error("the commit could not be written as a record: {0}")]
    Encode(String),
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
    /// The tree's number in the log.
    id: u64,
    name: Arc<str>,
    current: ArcSwap<Version>,
    /// Every committed version still kept, by number.
    history: Mutex<BTreeMap<u64, Arc<Version>>>,
    /// Old versions kept besides the current one.
    keep: usize,
    /// Where commits are made durable; `None` in memory.
    log: Option<Arc<Log>>,
    commits: AtomicU64,
    retries: AtomicU64,
}

impl Tree {
    /// Tree `id`, with `version` (numbered `number`) as its current one.
    pub(crate) fn restore(
        id: u64,
        name: &str,
        number: u64,
        root: Node,
        keep: usize,
        log: Option<Arc<Log>>,
    ) -> Tree {
        let version = Arc::new(Version { number, root });
        Tree {
            id,
            name: name.into(),
            current: ArcSwap::new(version.clone()),
            history: Mutex::new(BTreeMap::from([(number, version)])),
            keep,
            log,
            commits: AtomicU64::new(0),
            retries: AtomicU64::new(0),
        }
    }

    pub(crate) fn id(&self) -> u64 {
        self.id
    }

    /// Makes `root` the next version without logging it: replay of a
    /// record that is on disk already.
    pub(crate) fn replayed(&self, root: Node) {
        let base = self.snapshot();
        self.install(&base, root)
            .expect("nothing else commits while a database is opened");
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
            match self.publish(&t.base, t.root, &t.edits)? {
                Ok(version) => return Ok((Commit { version, retries }, out)),
                Err(_) => {
                    self.retries.fetch_add(1, Ordering::Relaxed);
                }
            }
        }
        Err(TreeError::Starved(MAX_RETRIES))
    }

    /// Makes `root` (`edits` of `base`) the version after `base` if `base`
    /// is still current, and returns its number once it is durable;
    /// otherwise returns the version that is current.
    fn publish(
        &self,
        base: &Arc<Version>,
        root: Node,
        edits: &[Edit],
    ) -> Result<Result<u64, Arc<Version>>, TreeError> {
        let Some(log) = &self.log else {
            return Ok(self.install(base, root).map(|v| v.number));
        };
        let mut record = Vec::new();
        codec::frame(
            &RecordRef::Commit {
                tree: self.id,
                version: base.number + 1,
                edits,
            },
            &mut record,
        )
        .map_err(|e| TreeError::Encode(e.to_string()))?;
        match log.append_if(&record, || self.install(base, root))? {
            Ok((version, lsn)) => {
                log.wait(lsn)?;
                Ok(Ok(version.number))
            }
            Err(newer) => Ok(Err(newer)),
        }
    }

    /// Compare-and-swap of the current version: `root` becomes the version
    /// after `base` if `base` is still current (the new version is
    /// returned), otherwise the current one is returned.
    fn install(&self, base: &Arc<Version>, root: Node) -> Result<Arc<Version>, Arc<Version>> {
        let next = Arc::new(Version {
            number: base.number + 1,
            root,
        });
        let previous = self.current.compare_and_swap(base, next.clone());
        if Arc::ptr_eq(&*previous, base) {
            let mut history = self.history();
            history.insert(next.number, next.clone());
            while history.len() > self.keep.saturating_add(1) {
                history.pop_first();
            }
            drop(history);
            self.commits.fetch_add(1, Ordering::Relaxed);
            Ok(next)
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
        edit.apply_in_place(&mut self.root)?;
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
            match tree.publish(&base, root, &edits)? {
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
    let mut root = version.root.clone();
    for edit in edits {
        edit.apply_in_place(&mut root)
            .map_err(|source| TreeError::Conflict {
                version: version.number,
                source,
            })?;
    }
    Ok(root)
}

/// Named trees. Writers of different trees never wait for each other:
/// looking a tree up takes a shared lock for an instant, and a commit
/// touches only its own tree (and, when durable, appends to the shared log
/// under a lock held for a copy of its record).
///
/// [`Database::new`] keeps everything in memory; [`Database::open`] keeps
/// it in a directory, where every acknowledged commit is durable.
#[derive(Debug)]
pub struct Database {
    pub(crate) shared: Arc<Shared>,
    /// The directory's lock and the checkpoint thread, when durable.
    durable: Option<Durable>,
}

#[derive(Debug)]
pub(crate) struct Shared {
    pub(crate) trees: RwLock<HashMap<Arc<str>, Arc<Tree>>>,
    pub(crate) next_id: AtomicU64,
    pub(crate) options: Options,
    pub(crate) log: Option<Arc<Log>>,
}

impl Default for Database {
    fn default() -> Database {
        Database::with_options(Options::default())
    }
}

impl Database {
    /// An empty database in memory.
    pub fn new() -> Database {
        Database::default()
    }

    /// An empty database in memory that keeps history as `options` say.
    pub fn with_options(options: Options) -> Database {
        Database {
            shared: Arc::new(Shared {
                trees: RwLock::default(),
                next_id: AtomicU64::new(0),
                options,
                log: None,
            }),
            durable: None,
        }
    }

    pub(crate) fn from_parts(shared: Arc<Shared>, durable: Option<Durable>) -> Database {
        Database { shared, durable }
    }

    pub(crate) fn durable(&self) -> Option<&Durable> {
        self.durable.as_ref()
    }

    pub(crate) fn durable_mut(&mut self) -> Option<&mut Durable> {
        self.durable.as_mut()
    }

    /// Makes an empty tree named `name` (durably, in a durable database).
    pub fn create_tree(&self, name: &str) -> Result<Arc<Tree>, TreeError> {
        self.create_tree_with(name, Node::new())
    }

    /// Makes a tree named `name` whose version 0 is `root`: a tree built
    /// apart and registered whole, in one record and one fsync.
    pub fn create_tree_with(&self, name: &str, root: Node) -> Result<Arc<Tree>, TreeError> {
        let shared = &self.shared;
        let id = shared.next_id.fetch_add(1, Ordering::Relaxed);
        let tree = Arc::new(Tree::restore(
            id,
            name,
            0,
            root,
            shared.options.history,
            shared.log.clone(),
        ));
        let insert = || {
            let mut trees = shared.trees.write().unwrap_or_else(|e| e.into_inner());
            if trees.contains_key(name) {
                return Err(());
            }
            trees.insert(tree.name.clone(), tree.clone());
            Ok(())
        };
        let exists = || TreeError::Exists(name.to_owned());
        match &shared.log {
            None => insert().map_err(|()| exists())?,
            Some(log) => {
                let mut record = Vec::new();
                codec::frame(
                    &RecordRef::Create {
                        tree: id,
                        name,
                        root: tree.snapshot().root(),
                    },
                    &mut record,
                )
                .map_err(|e| TreeError::Encode(e.to_string()))?;
                // The log's lock is taken before the trees' (as a
                // checkpoint does), and the record goes in only if the
                // name was free.
                let ((), lsn) = log.append_if(&record, insert)?.map_err(|()| exists())?;
                log.wait(lsn)?;
            }
        }
        Ok(tree)
    }

    /// The tree named `name`.
    pub fn tree(&self, name: &str) -> Option<Arc<Tree>> {
        self.shared
            .trees
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .get(name)
            .cloned()
    }

    /// The names of the trees, sorted.
    pub fn names(&self) -> Vec<String> {
        let mut names: Vec<String> = self
            .shared
            .trees
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .keys()
            .map(|k| k.to_string())
            .collect();
        names.sort();
        names
    }

    /// What the log has done since the database was opened (all zero in
    /// memory).
    pub fn log_stats(&self) -> LogStats {
        self.shared
            .log
            .as_ref()
            .map(|l| l.stats())
            .unwrap_or_default()
    }
}
