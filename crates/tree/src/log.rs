//! The write-ahead log: framed records appended in commit order, made
//! durable by group commit.
//!
//! After its header, a log file is a sequence of batches (framed like a
//! record, with a flag): the records one fsync made durable. A committer
//! appends its record to a buffer in memory under a short
//! lock, the same lock under which its version is published, so the log's
//! order is the order of the versions. Then it waits until its record is
//! durable. The first waiter to find no write under way becomes the
//! leader: it takes everything buffered so far, writes it and fsyncs once,
//! and wakes every committer whose record that covered; the records
//! appended meanwhile go out with the next leader's fsync. Many concurrent
//! committers thus share one fsync.
//!
//! A leader writes over zeros laid down ahead of the records (as
//! PostgreSQL fills its WAL segments): an fsync that finds the file's size
//! unchanged need not commit the file system's journal as well
//! (`bench/tree-write.sh` shows what that is worth). Recovery reads a log's
//! zeros as space not yet used ([`crate::codec::Tail::Unused`]).

use std::sync::{Arc, Condvar, Mutex, MutexGuard};

use crate::codec;
use crate::fs::{Fs, FsFile};

/// How far beyond its records a log file is filled with zeros when they
/// reach its end: as far again as it is long, from 64 KiB up to 4 MiB, so
/// that a small database keeps a small file and a busy one fills rarely.
fn fill_step(len: u64) -> u64 {
    len.clamp(64 << 10, 4 << 20)
}

/// A position in the log: bytes appended since the database was opened.
pub(crate) type Lsn = u64;

/// Counts of the log's work since the database was opened.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct LogStats {
    /// Records appended (commits and trees made).
    pub records: u64,
    /// fsyncs of the log (group commit makes this fewer than records).
    pub fsyncs: u64,
    /// Bytes written to the log.
    pub bytes: u64,
    /// Snapshots written (each starts a new log file).
    pub checkpoints: u64,
}

#[derive(Debug)]
pub(crate) struct Log {
    pub(crate) fs: Arc<dyn Fs>,
    state: Mutex<State>,
    durable: Condvar,
}

#[derive(Debug)]
struct State {
    /// Records appended and not yet handed to a leader.
    pending: Vec<u8>,
    appended: Lsn,
    synced: Lsn,
    /// The file being written; a leader takes it while it writes.
    file: Option<Box<dyn FsFile>>,
    /// The number of the current log file.
    generation: u64,
    /// Bytes in the current log file, written or pending.
    file_bytes: u64,
    /// The current file's length: where its records end, then zeros.
    filled: u64,
    /// Set by the first write or fsync that failed: from then on nothing
    /// is acknowledged (what the file holds is no longer known).
    failed: Option<String>,
    stats: LogStats,
}

/// Why a record could not be made durable.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the database's log could not be written: {0}")]
pub struct LogError(pub String);

impl Log {
    pub(crate) fn new(
        fs: Arc<dyn Fs>,
        file: Box<dyn FsFile>,
        generation: u64,
        file_bytes: u64,
        filled: u64,
    ) -> Log {
        Log {
            fs,
            state: Mutex::new(State {
                pending: Vec::new(),
                appended: 0,
                synced: 0,
                file: Some(file),
                generation,
                file_bytes,
                filled,
                failed: None,
                stats: LogStats::default(),
            }),
            durable: Condvar::new(),
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // Every change to the state is made whole before anything that
        // could panic, so a poisoned lock holds a consistent state.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Runs `publish` under the log's lock and, when it says yes, appends
    /// `record` (one framed record) in the same breath, so records are in
    /// the order their versions were published. Returns `publish`'s answer
    /// and, when appended, the position to wait for.
    pub(crate) fn append_if<T>(
        &self,
        record: &[u8],
        publish: impl FnOnce() -> Result<T, T>,
    ) -> Result<Result<(T, Lsn), T>, LogError> {
        let mut state = self.lock();
        if let Some(failed) = &state.failed {
            return Err(LogError(failed.clone()));
        }
        Ok(match publish() {
            Ok(t) => {
                state.pending.extend_from_slice(record);
                state.appended += record.len() as u64;
                state.file_bytes += record.len() as u64;
                state.stats.records += 1;
                Ok((t, state.appended))
            }
            Err(t) => Err(t),
        })
    }

    /// Waits until every record up to `lsn` is durable, writing and
    /// fsyncing them itself when no other committer is.
    pub(crate) fn wait(&self, lsn: Lsn) -> Result<(), LogError> {
        let mut state = self.lock();
        loop {
            if state.synced >= lsn {
                return Ok(());
            }
            if let Some(failed) = &state.failed {
                return Err(LogError(failed.clone()));
            }
            match state.file.take() {
                // Another committer is writing: its fsync may cover us.
                None => {
                    state = self.durable.wait(state).unwrap_or_else(|e| e.into_inner());
                }
                Some(mut file) => {
                    let batch = std::mem::take(&mut state.pending);
                    let upto = state.appended;
                    state.file_bytes += codec::FRAME_HEADER as u64;
                    let fill = (state.file_bytes > state.filled).then(|| {
                        state.filled = state.file_bytes + fill_step(state.filled);
                        state.filled
                    });
                    drop(state);
                    let mut framed = Vec::with_capacity(codec::FRAME_HEADER + batch.len());
                    codec::frame_batch(&batch, &mut framed);
                    let written = fill
                        .map_or(Ok(()), |len| file.zero_fill(len))
                        .and_then(|()| file.write_all(&framed))
                        .and_then(|()| file.sync());
                    state = self.lock();
                    state.file = Some(file);
                    match written {
                        Ok(()) => {
                            state.synced = upto;
                            state.stats.fsyncs += 1;
                            state.stats.bytes += batch.len() as u64;
                        }
                        Err(e) => state.failed = Some(e.to_string()),
                    }
                    self.durable.notify_all();
                }
            }
        }
    }

    /// Starts log file `generation + 1`: waits for any write under way,
    /// writes and fsyncs what is pending to the current file, then makes
    /// the new one (`open(generation)` writes its header and says its
    /// length) current. `under`
    /// runs under the lock once the new file is current, so what it sees of
    /// the trees is exactly what the old files hold. Returns the new
    /// generation and `under`'s answer.
    pub(crate) fn rotate<T>(
        &self,
        open: impl FnOnce(&dyn Fs, u64) -> std::io::Result<(Box<dyn FsFile>, u64)>,
        under: impl FnOnce() -> T,
    ) -> Result<(u64, T), LogError> {
        let mut state = self.lock();
        let mut file = loop {
            if let Some(failed) = &state.failed {
                return Err(LogError(failed.clone()));
            }
            match state.file.take() {
                Some(file) => break file,
                None => state = self.durable.wait(state).unwrap_or_else(|e| e.into_inner()),
            }
        };
        let batch = std::mem::take(&mut state.pending);
        let next = state.generation + 1;
        let mut framed = Vec::with_capacity(codec::FRAME_HEADER + batch.len());
        if !batch.is_empty() {
            codec::frame_batch(&batch, &mut framed);
        }
        let switched = file
            .write_all(&framed)
            .and_then(|()| file.sync())
            .and_then(|()| open(&*self.fs, next));
        let result = match switched {
            Ok((new, len)) => {
                state.synced = state.appended;
                state.stats.fsyncs += 1;
                state.stats.bytes += batch.len() as u64;
                state.stats.checkpoints += 1;
                state.generation = next;
                state.file_bytes = len;
                state.filled = len;
                state.file = Some(new);
                Ok((next, under()))
            }
            Err(e) => {
                state.file = Some(file);
                state.failed = Some(e.to_string());
                Err(LogError(e.to_string()))
            }
        };
        self.durable.notify_all();
        result
    }

    /// Bytes in the current log file (its records, not the zeros after).
    pub(crate) fn file_bytes(&self) -> u64 {
        self.lock().file_bytes
    }

    pub(crate) fn stats(&self) -> LogStats {
        self.lock().stats
    }
}
