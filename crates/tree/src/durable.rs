//! A database in a directory: opening it (recovery), snapshots and the
//! files' names.
//!
//! The directory holds `log-N` files of records ([`crate::codec::Record`])
//! and `snapshot-N` files, each the whole database as it was when log file
//! `N` began; `LOCK` keeps a second process out. Recovery reads the newest
//! snapshot and replays the logs from its number on. A checkpoint starts
//! log `N + 1`, writes `snapshot-(N+1).tmp`, fsyncs it, renames it into
//! place, and only then removes the files before it; a crash at any step
//! leaves an older snapshot and every log after it.
//!
//! Recovery changes a file only where a crash explains what it finds, and
//! then loses nothing acknowledged: a last record of the last log that does
//! not read is dropped, its bytes first kept in `log-N.dropped-at-BYTE`
//! (a torn write, or damage to the last record: the bytes cannot tell
//! which); a newest log holding no more than its header cut short is made
//! anew ([`torn_header`]). Everything else that does not read is refused,
//! with the file and byte named, and nothing changed.

use std::collections::HashMap;
use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, RwLock};
use std::thread::JoinHandle;

use serde::{Deserialize, Serialize};

use crate::codec::{self, Image, Record, Tail};
use crate::db::{Options, Shared};
use crate::fs::{Fs, FsFile, OsFs};
use crate::log::Log;
use crate::{Database, Node, Tree, TreeError};

/// The format written in every file's header; a file with another is
/// refused, never guessed at.
const FORMAT: u32 = 1;
const LOCK: &str = "LOCK";
/// Bytes of a snapshot written per write call.
const WRITE_CHUNK: usize = 1 << 20;

/// The first record of every file: what it is and its number.
#[derive(Debug, Serialize, Deserialize, PartialEq, Eq)]
struct Header {
    magic: [u8; 8],
    format: u32,
    generation: u64,
    /// Snapshots: how many tree images follow, and the next tree number.
    trees: u64,
    next_tree: u64,
}

const LOG_MAGIC: [u8; 8] = *b"dynolog\0";
const SNAPSHOT_MAGIC: [u8; 8] = *b"dynosnap";

fn log_name(generation: u64) -> String {
    format!("log-{generation:010}")
}

fn snapshot_name(generation: u64) -> String {
    format!("snapshot-{generation:010}")
}

/// Why a database directory could not be opened.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum OpenError {
    #[error("could not {what}: {source}")]
    Io {
        what: String,
        #[source]
        source: io::Error,
    },
    #[error(
        "{0} is in use by another process (its LOCK is held); stop that one first, or use another directory"
    )]
    Locked(PathBuf),
    /// A file is damaged somewhere other than at the end of the last log;
    /// nothing is changed, so that it can be inspected or restored.
    #[error(
        "{file} is damaged at byte {offset}: {why}. Nothing was changed; restore the directory from a backup, or move the file away to open what comes before it"
    )]
    Damaged {
        file: String,
        offset: usize,
        why: String,
    },
}

/// What opening found and did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Recovery {
    /// The snapshot read, by number.
    pub snapshot: Option<u64>,
    /// Log records replayed after it.
    pub replayed: u64,
    /// The last record of the last log did not read, and was dropped: the
    /// file and how many bytes were dropped (to the last that is not
    /// zero).
    pub torn: Option<(String, usize)>,
    /// What the dropped record looked like, and where its bytes were kept.
    pub dropped: Option<Dropped>,
    /// The newest log held no more than a header cut short (the file and
    /// its length), as a crash while the file was made leaves it; it was
    /// made anew.
    pub torn_header: Option<(String, usize)>,
}

/// The record dropped from the end of the last log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Dropped {
    /// Where it began in the log.
    pub at: usize,
    /// Its length field fit in the file, and the bytes it covers are there
    /// but their checksum does not match; otherwise the file ends before
    /// the record does (cut short).
    pub full_length: bool,
    /// The file beside the log that keeps its bytes, as they were.
    pub kept: String,
}

impl Recovery {
    /// A line for the user when something was dropped or made anew.
    pub fn warning(&self) -> Option<String> {
        let mut lines = Vec::new();
        if let Some((file, bytes)) = &self.torn_header {
            lines.push(format!(
                "{file} held {bytes} bytes, no more than its header cut short (a crash while the file was made, before anything was written to it): made anew"
            ));
        }
        if let Some((file, bytes)) = &self.torn {
            let (at, kept) = self.dropped.as_ref().map_or((0, String::new()), |d| {
                (d.at, format!("; its bytes are kept in {}", d.kept))
            });
            lines.push(match &self.dropped {
                Some(d) if d.full_length => format!(
                    "{file} ended in a full record whose checksum does not match ({bytes} bytes at byte {at}): either a write a crash tore before it was acknowledged (the log lays its zeros down ahead, so a torn write keeps its length) or damage to the last record, which may have been acknowledged. It was dropped from the log{kept}"
                ),
                _ => format!(
                    "{file} ended in a record cut short ({bytes} bytes at byte {at}, the file ends before the record does: a write torn by a crash, never acknowledged): dropped{kept}"
                ),
            });
        }
        (!lines.is_empty()).then(|| lines.join("\n"))
    }
}

/// The durable part of an open database.
#[derive(Debug)]
pub(crate) struct Durable {
    pub(crate) recovery: Recovery,
    checkpointer: Option<(Arc<Wake>, JoinHandle<()>)>,
    /// Held while the database is open (released when the file closes).
    _lock: Option<File>,
}

#[derive(Debug, Default)]
struct Wake {
    stop: Mutex<bool>,
    cond: Condvar,
}

impl Drop for Durable {
    fn drop(&mut self) {
        if let Some((wake, handle)) = self.checkpointer.take() {
            *wake.stop.lock().unwrap_or_else(|e| e.into_inner()) = true;
            wake.cond.notify_all();
            let _ = handle.join();
        }
    }
}

impl Database {
    /// Opens the database in `dir` (made when missing), recovering every
    /// acknowledged commit; takes the directory's lock.
    pub fn open(dir: &Path) -> Result<Database, OpenError> {
        Database::open_with_options(dir, Options::default())
    }

    pub fn open_with_options(dir: &Path, options: Options) -> Result<Database, OpenError> {
        std::fs::create_dir_all(dir).map_err(|source| OpenError::Io {
            what: format!("make the directory {}", dir.display()),
            source,
        })?;
        let lock_path = dir.join(LOCK);
        let lock = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&lock_path)
            .map_err(|source| OpenError::Io {
                what: format!("open {}", lock_path.display()),
                source,
            })?;
        match lock.try_lock() {
            Ok(()) => {}
            Err(std::fs::TryLockError::WouldBlock) => {
                return Err(OpenError::Locked(dir.to_path_buf()));
            }
            Err(std::fs::TryLockError::Error(source)) => {
                return Err(OpenError::Io {
                    what: format!("lock {}", lock_path.display()),
                    source,
                });
            }
        }
        let mut db = open_fs(Arc::new(OsFs::new(dir)), options)?;
        if let Some(durable) = db.durable_mut() {
            durable._lock = Some(lock);
        }
        Ok(db)
    }

    /// What opening found, for a durable database.
    pub fn recovery(&self) -> Option<&Recovery> {
        self.durable().map(|d| &d.recovery)
    }

    /// Writes a snapshot of every tree and starts a new log file, so that
    /// reopening reads the snapshot instead of replaying the log; then
    /// removes the files it replaces. Commits go on meanwhile. Done by
    /// itself once the log passes [`Options::checkpoint_bytes`]. Does
    /// nothing in memory.
    pub fn checkpoint(&self) -> Result<(), TreeError> {
        match &self.shared.log {
            Some(log) => checkpoint(&self.shared, log).map(drop),
            None => Ok(()),
        }
    }
}

/// Opens the database whose files `fs` holds (no lock: the caller's job).
pub(crate) fn open_fs(fs: Arc<dyn Fs>, options: Options) -> Result<Database, OpenError> {
    let io = |what: String| move |source| OpenError::Io { what, source };
    let names = fs.list().map_err(io("list the database's files".into()))?;
    let numbered = |prefix: &str| {
        let mut found: Vec<u64> = names
            .iter()
            .filter_map(|n| n.strip_prefix(prefix)?.parse().ok())
            .collect();
        found.sort_unstable();
        found
    };
    // A snapshot that never got its final name was never used.
    for name in names
        .iter()
        .filter(|n| n.starts_with("snapshot-") && n.ends_with(".tmp"))
    {
        fs.remove(name).map_err(io(format!("remove {name}")))?;
    }
    let snapshots = numbered("snapshot-");
    let logs = numbered("log-");
    let start = snapshots.last().copied();
    let mut state = match start {
        Some(generation) => read_snapshot(&*fs, generation)?,
        None => Restored::default(),
    };
    let first = start.unwrap_or(0);
    let replay: Vec<u64> = logs.iter().copied().filter(|&g| g >= first).collect();
    for (i, &g) in replay.iter().enumerate() {
        if g != first + i as u64 {
            return Err(OpenError::Damaged {
                file: log_name(first + i as u64),
                offset: 0,
                why: "the file is missing between the snapshot and the newest log".into(),
            });
        }
    }
    if start.is_some() && replay.is_empty() {
        return Err(damaged(
            &log_name(first),
            0,
            "the log that follows the newest snapshot is missing",
        ));
    }
    let mut recovery = Recovery {
        snapshot: start,
        ..Recovery::default()
    };
    let mut last_len = None;
    for (i, &g) in replay.iter().enumerate() {
        let last = i + 1 == replay.len();
        // Only the newest log can have been left by a crash while it was
        // made, and never the snapshot's own: log N's header is durable
        // before snapshot N is begun.
        let may_be_torn = last && start != Some(g);
        last_len = Some(replay_log(
            &*fs,
            g,
            last,
            may_be_torn,
            &mut state,
            &mut recovery,
        )?);
    }
    // The files before the snapshot are replaced by it.
    for &g in logs.iter().filter(|&&g| g < first) {
        fs.remove(&log_name(g))
            .map_err(io(format!("remove {}", log_name(g))))?;
    }
    for &g in snapshots.iter().filter(|&&g| g < first) {
        let name = snapshot_name(g);
        fs.remove(&name).map_err(io(format!("remove {name}")))?;
    }
    let (generation, file, file_bytes, filled) = match (replay.last(), last_len) {
        (Some(&g), Some(Some((intact, len)))) => {
            let file = fs
                .write_from(&log_name(g), intact as u64)
                .map_err(io(format!("open {}", log_name(g))))?;
            (g, file, intact as u64, len as u64)
        }
        // No log yet, or a newest log whose header never became durable
        // (nothing after it: see `torn_header`).
        (g, _) => {
            let g = g.copied().unwrap_or(first);
            let (file, len) = new_log(&*fs, g).map_err(io(format!("make {}", log_name(g))))?;
            (g, file, len, len)
        }
    };
    let log = Arc::new(Log::new(fs, file, generation, file_bytes, filled));
    let shared = Arc::new(Shared {
        trees: RwLock::new(HashMap::new()),
        next_id: AtomicU64::new(state.next_tree),
        options,
        log: Some(log.clone()),
    });
    {
        let mut trees = shared.trees.write().unwrap_or_else(|e| e.into_inner());
        for (id, (name, version, root)) in state.trees {
            let tree = Tree::restore(id, &name, version, root, options.history, Some(log.clone()));
            for root in state.pending.remove(&id).unwrap_or_default() {
                tree.replayed(root);
            }
            trees.insert(name.into(), Arc::new(tree));
        }
    }
    let wake = Arc::new(Wake::default());
    let handle = {
        let (shared, wake) = (shared.clone(), wake.clone());
        std::thread::Builder::new()
            .name("dyno-tree-checkpoint".into())
            .spawn(move || checkpoint_loop(&shared, &wake))
            .map_err(io("start the checkpoint thread".into()))?
    };
    Ok(Database::from_parts(
        shared,
        Some(Durable {
            recovery,
            checkpointer: Some((wake, handle)),
            _lock: None,
        }),
    ))
}

/// What recovery has rebuilt so far.
#[derive(Debug, Default)]
struct Restored {
    /// Tree number to its name, version number and root as of the
    /// snapshot (or its creation).
    trees: HashMap<u64, (String, u64, Node)>,
    /// Roots replayed after that, oldest first, kept as versions.
    pending: HashMap<u64, Vec<Node>>,
    next_tree: u64,
}

impl Restored {
    /// The newest root and number of tree `id`.
    fn current(&self, id: u64) -> Option<(u64, &Node)> {
        let (_, number, root) = self.trees.get(&id)?;
        match self.pending.get(&id).and_then(|p| p.last()) {
            Some(last) => Some((number + self.pending[&id].len() as u64, last)),
            None => Some((*number, root)),
        }
    }
}

fn damaged(file: &str, offset: usize, why: impl Into<String>) -> OpenError {
    OpenError::Damaged {
        file: file.to_owned(),
        offset,
        why: why.into(),
    }
}

fn read_snapshot(fs: &dyn Fs, generation: u64) -> Result<Restored, OpenError> {
    let name = snapshot_name(generation);
    let bytes = fs.read(&name).map_err(|source| OpenError::Io {
        what: format!("read {name}"),
        source,
    })?;
    let (records, tail) = codec::records(&bytes, false);
    if let Tail::Torn { at } | Tail::Damaged { at } | Tail::Unused { at } = tail {
        // A snapshot is fsynced before it gets its name: it is whole or
        // it is damage.
        return Err(damaged(&name, at, "a record's checksum does not match"));
    }
    let header = header(&name, &records, SNAPSHOT_MAGIC, generation)?;
    if records.len() as u64 != header.trees + 1 {
        return Err(damaged(
            &name,
            bytes.len(),
            format!(
                "it holds {} trees where its header says {}",
                records.len() - 1,
                header.trees
            ),
        ));
    }
    let mut restored = Restored {
        next_tree: header.next_tree,
        ..Restored::default()
    };
    let mut offset = 0;
    for payload in &records[1..] {
        offset += codec::FRAME_HEADER + payload.len();
        let image: Image = codec::decode(payload)
            .map_err(|e| damaged(&name, offset, format!("a tree image does not decode: {e}")))?;
        restored.next_tree = restored.next_tree.max(image.tree + 1);
        restored
            .trees
            .insert(image.tree, (image.name, image.version, image.root));
    }
    Ok(restored)
}

/// The header record of `name`, checked.
fn header(
    name: &str,
    records: &[&[u8]],
    magic: [u8; 8],
    generation: u64,
) -> Result<Header, OpenError> {
    let first = records
        .first()
        .ok_or_else(|| damaged(name, 0, "the file has no header"))?;
    let header: Header = codec::decode(first)
        .map_err(|e| damaged(name, 0, format!("the header does not decode: {e}")))?;
    if header.magic != magic {
        return Err(damaged(name, 0, "the header is not a dyno tree database's"));
    }
    if header.format != FORMAT {
        return Err(damaged(
            name,
            0,
            format!(
                "the file has format {}, this dyno reads format {FORMAT}",
                header.format
            ),
        ));
    }
    if header.generation != generation {
        return Err(damaged(
            name,
            0,
            format!("the header says file number {}", header.generation),
        ));
    }
    Ok(header)
}

/// Replays log `generation` into `state`. Returns the length of its intact
/// part and of the file (zeros laid down for records to come follow the
/// intact part), or `None` for a log whose header itself never became
/// durable (see [`torn_header`]), allowed only when `may_be_torn`.
fn replay_log(
    fs: &dyn Fs,
    generation: u64,
    last: bool,
    may_be_torn: bool,
    state: &mut Restored,
    recovery: &mut Recovery,
) -> Result<Option<(usize, usize)>, OpenError> {
    let name = log_name(generation);
    let bytes = fs.read(&name).map_err(|source| OpenError::Io {
        what: format!("read {name}"),
        source,
    })?;
    // The header, then batches of records.
    let Some((first, start, false)) = codec::unframe(&bytes) else {
        let header = log_header(generation);
        if may_be_torn && torn_header(&bytes, &header) {
            recovery.torn_header = Some((name, bytes.len()));
            return Ok(None);
        }
        let why = if may_be_torn {
            format!(
                "its header does not read, and the file ({} bytes) is not what a crash while it was made can leave: no more than the {}-byte header, each byte written or still zero",
                bytes.len(),
                header.len()
            )
        } else {
            "the file has no intact header".into()
        };
        return Err(damaged(&name, 0, why));
    };
    header(&name, &[first], LOG_MAGIC, generation)?;
    let (batches, tail) = codec::records(&bytes[start..], true);
    let (intact, len) = match tail {
        Tail::Clean => (bytes.len(), bytes.len()),
        Tail::Unused { at } => (start + at, bytes.len()),
        Tail::Torn { at } if last => {
            let at = start + at;
            // The zeros after the torn bytes were never a record.
            let used = bytes.iter().rposition(|&b| b != 0).map_or(at, |i| i + 1);
            let full_length = bytes
                .get(at..at + codec::FRAME_HEADER)
                .map(|h| u32::from_le_bytes([h[0], h[1], h[2], h[3]]) & !codec::BATCH)
                .is_some_and(|len| at + codec::FRAME_HEADER + len as usize <= bytes.len());
            // Its bytes are kept beside the log before it is cut: if it was
            // damage to an acknowledged record rather than a torn write,
            // nothing is lost for good.
            let kept = format!("{name}.dropped-at-{at}");
            keep(fs, &kept, &bytes[at..used]).map_err(|source| OpenError::Io {
                what: format!("keep the record dropped from {name} in {kept}"),
                source,
            })?;
            fs.truncate(&name, at as u64)
                .map_err(|source| OpenError::Io {
                    what: format!("cut the torn record off {name}"),
                    source,
                })?;
            recovery.torn = Some((name.clone(), used - at));
            recovery.dropped = Some(Dropped {
                at,
                full_length,
                kept,
            });
            (at, at)
        }
        Tail::Torn { at } => {
            return Err(damaged(
                &name,
                start + at,
                "a record is cut short, but a newer log follows this one",
            ));
        }
        Tail::Damaged { at } => {
            return Err(damaged(
                &name,
                start + at,
                "a record's checksum does not match and intact records follow it",
            ));
        }
    };
    let mut offset = start;
    for batch in batches {
        let (records, tail) = codec::records(batch, false);
        if tail != Tail::Clean {
            return Err(damaged(
                &name,
                offset,
                "a batch holds a record that is not whole",
            ));
        }
        let mut at = offset + codec::FRAME_HEADER;
        for payload in records {
            let record: Record = codec::decode(payload)
                .map_err(|e| damaged(&name, at, format!("a record does not decode: {e}")))?;
            apply(record, state).map_err(|why| damaged(&name, at, why))?;
            recovery.replayed += 1;
            at += codec::FRAME_HEADER + payload.len();
        }
        offset += codec::FRAME_HEADER + batch.len();
    }
    Ok(Some((intact, len)))
}

/// One log record replayed. A record the snapshot already holds (written
/// to the old log while the snapshot was taken) is skipped.
fn apply(record: Record, state: &mut Restored) -> Result<(), String> {
    match record {
        Record::Create { tree, name, root } => {
            state.next_tree = state.next_tree.max(tree + 1);
            if let Some((held, _, _)) = state.trees.get(&tree) {
                return if *held == name {
                    Ok(())
                } else {
                    Err(format!("tree {tree} is made as '{name}' but is '{held}'"))
                };
            }
            state.trees.insert(tree, (name, 0, root));
            Ok(())
        }
        Record::Commit {
            tree,
            version,
            edits,
        } => {
            let (current, root) = state
                .current(tree)
                .ok_or_else(|| format!("a commit to tree {tree}, which was never made"))?;
            if version <= current {
                return Ok(());
            }
            if version != current + 1 {
                return Err(format!(
                    "version {version} of tree {tree} follows version {current}: the ones between are missing"
                ));
            }
            let mut root = root.clone();
            for edit in &edits {
                edit.apply_in_place(&mut root)
                    .map_err(|e| format!("version {version} of tree {tree} does not apply: {e}"))?;
            }
            state.pending.entry(tree).or_default().push(root);
            Ok(())
        }
    }
}

/// The header record log file `generation` begins with.
fn log_header(generation: u64) -> Vec<u8> {
    let mut bytes = Vec::new();
    codec::frame(
        &Header {
            magic: LOG_MAGIC,
            format: FORMAT,
            generation,
            trees: 0,
            next_tree: 0,
        },
        &mut bytes,
    )
    .expect("a header always encodes");
    bytes
}

/// Whether `bytes`, a log whose header does not read, is what a crash
/// while [`new_log`] made the file can leave. `new_log` writes the header
/// and fsyncs it before anything else is written to the file (the log's
/// zeros are laid down by the first commit after), so such a crash leaves
/// the file no longer than `header`, each byte the header's or still zero
/// (not written): 0 bytes when the crash came between making the file and
/// writing it. No commit is ever written to a log before its header is
/// durable, so nothing acknowledged can be in such a file, and making it
/// anew loses nothing. Anything else (junk, a damaged header followed by
/// records or zeros) is damage, and is refused.
fn torn_header(bytes: &[u8], header: &[u8]) -> bool {
    bytes.len() <= header.len()
        && bytes
            .iter()
            .zip(header)
            .all(|(&found, &meant)| found == 0 || found == meant)
}

/// Writes `bytes` to a new file `name`, durably.
fn keep(fs: &dyn Fs, name: &str, bytes: &[u8]) -> io::Result<()> {
    let mut file = fs.create(name)?;
    file.write_all(bytes)?;
    file.sync()?;
    fs.sync_dir()
}

/// Makes log file `generation` with its header, durably, entry included.
fn new_log(fs: &dyn Fs, generation: u64) -> io::Result<(Box<dyn FsFile>, u64)> {
    let bytes = log_header(generation);
    let mut file = fs.create(&log_name(generation))?;
    file.write_all(&bytes)?;
    file.sync()?;
    fs.sync_dir()?;
    Ok((file, bytes.len() as u64))
}

/// Waits until the log passes its threshold, then checkpoints; until the
/// database closes.
fn checkpoint_loop(shared: &Shared, wake: &Wake) {
    let Some(log) = &shared.log else { return };
    let mut last_snapshot = 0u64;
    loop {
        let threshold = shared.options.checkpoint_bytes.max(last_snapshot);
        {
            let stop = wake.stop.lock().unwrap_or_else(|e| e.into_inner());
            let (stop, _) = wake
                .cond
                .wait_timeout(stop, std::time::Duration::from_millis(50))
                .unwrap_or_else(|e| e.into_inner());
            if *stop {
                return;
            }
        }
        if log.file_bytes() < threshold {
            continue;
        }
        match checkpoint(shared, log) {
            Ok(bytes) => last_snapshot = bytes,
            // The old files stay, so nothing is lost; the next try comes
            // when the log has grown again.
            Err(_) => last_snapshot = last_snapshot.saturating_mul(2).max(threshold),
        }
    }
}

/// See [`Database::checkpoint`]. Returns the snapshot's size.
fn checkpoint(shared: &Shared, log: &Log) -> Result<u64, TreeError> {
    let (generation, (images, next_tree)) = log.rotate(new_log, || {
        let trees = shared.trees.read().unwrap_or_else(|e| e.into_inner());
        let images: Vec<_> = trees
            .values()
            .map(|t| (t.id(), t.name().to_owned(), t.snapshot()))
            .collect();
        (images, shared.next_id.load(Ordering::Relaxed))
    })?;
    let fs = &*log.fs;
    let io = |e: io::Error| TreeError::Log(crate::log::LogError(format!("snapshot: {e}")));
    let name = snapshot_name(generation);
    let tmp = format!("{name}.tmp");
    let mut file = fs.create(&tmp).map_err(io)?;
    let mut buffer = Vec::with_capacity(WRITE_CHUNK * 2);
    let encode = |e: postcard::Error| TreeError::Encode(e.to_string());
    codec::frame(
        &Header {
            magic: SNAPSHOT_MAGIC,
            format: FORMAT,
            generation,
            trees: images.len() as u64,
            next_tree,
        },
        &mut buffer,
    )
    .map_err(encode)?;
    let mut size = 0u64;
    for (tree, name, version) in images {
        codec::frame(
            &ImageRef {
                tree,
                name: &name,
                version: version.number(),
                root: version.root(),
            },
            &mut buffer,
        )
        .map_err(encode)?;
        if buffer.len() >= WRITE_CHUNK {
            file.write_all(&buffer).map_err(io)?;
            size += buffer.len() as u64;
            buffer.clear();
        }
    }
    file.write_all(&buffer).map_err(io)?;
    size += buffer.len() as u64;
    file.sync().map_err(io)?;
    drop(file);
    fs.rename(&tmp, &name).map_err(io)?;
    fs.sync_dir().map_err(io)?;
    // Only now are the older files replaced; one left behind by a crash
    // here is removed at the next open.
    for old in fs.list().map_err(io)? {
        let older = |prefix: &str| {
            old.strip_prefix(prefix)
                .and_then(|g| g.parse::<u64>().ok())
                .is_some_and(|g| g < generation)
        };
        if older("log-") || older("snapshot-") {
            fs.remove(&old).map_err(io)?;
        }
    }
    Ok(size)
}

/// [`Image`] by reference.
#[derive(Serialize)]
struct ImageRef<'a> {
    tree: u64,
    name: &'a str,
    version: u64,
    root: &'a Node,
}
