//! A file system in memory that can lose power: [`CrashFs::crash`] keeps
//! of every file only what was fsynced (and, of the bytes written after,
//! a prefix of random length: a torn write), and of the directory only the
//! entries that were synced. What `kill -9` cannot test, since the page
//! cache survives the process.

use std::collections::HashMap;
use std::io;
use std::sync::{Arc, Mutex};

use crate::fs::{Fs, FsFile};

#[derive(Debug, Default)]
struct Content {
    /// The file as the running system reads it.
    written: Vec<u8>,
    /// The file as a power cut would leave it, before any torn write.
    durable: Vec<u8>,
    /// The writes (position, bytes) since the last fsync, in order.
    unsynced: Vec<(usize, Vec<u8>)>,
}

impl Content {
    fn write(&mut self, at: usize, bytes: &[u8]) {
        put(&mut self.written, at, bytes);
        self.unsynced.push((at, bytes.to_vec()));
    }
}

/// Writes `bytes` into `file` at `at`, growing it (with zeros) as needed.
fn put(file: &mut Vec<u8>, at: usize, bytes: &[u8]) {
    let end = at + bytes.len();
    if file.len() < end {
        file.resize(end, 0);
    }
    file[at..end].copy_from_slice(bytes);
}

#[derive(Debug, Default)]
struct State {
    /// Name to file, as the running system sees it.
    entries: HashMap<String, Arc<Mutex<Content>>>,
    /// Name to file, as a power cut would leave it.
    synced_entries: HashMap<String, Arc<Mutex<Content>>>,
    /// When set, writes fail with "no space" once a file would pass it.
    capacity: Option<usize>,
    /// How long an fsync takes: the bytes written while it runs are not
    /// part of it, and a commit acknowledged too early shows in the gap.
    sync_time: std::time::Duration,
}

/// See the module's documentation.
#[derive(Debug, Default, Clone)]
pub(crate) struct CrashFs {
    state: Arc<Mutex<State>>,
}

impl CrashFs {
    pub(crate) fn new() -> CrashFs {
        CrashFs::default()
    }

    /// The files as a power cut now would leave them, as a new file
    /// system (this one goes on undisturbed): the directory as it was at
    /// its last sync, and each file with what was fsynced plus, of the `n`
    /// bytes written after that, the first `torn(n)` in the order they
    /// were written.
    pub(crate) fn after_power_cut(&self, mut torn: impl FnMut(usize) -> usize) -> CrashFs {
        let state = self.lock();
        let mut entries = HashMap::new();
        for (name, content) in &state.synced_entries {
            let c = content.lock().unwrap();
            let unsynced = c.unsynced.iter().map(|(_, b)| b.len()).sum();
            let mut keep = torn(unsynced).min(unsynced);
            let mut file = c.durable.clone();
            for (at, bytes) in &c.unsynced {
                let n = keep.min(bytes.len());
                put(&mut file, *at, &bytes[..n]);
                keep -= n;
            }
            let copy = Content {
                durable: file.clone(),
                written: file,
                unsynced: Vec::new(),
            };
            entries.insert(name.clone(), Arc::new(Mutex::new(copy)));
        }
        CrashFs {
            state: Arc::new(Mutex::new(State {
                synced_entries: entries.clone(),
                entries,
                capacity: None,
                sync_time: std::time::Duration::ZERO,
            })),
        }
    }

    /// Makes every fsync take `time` (none by default).
    pub(crate) fn set_sync_time(&self, time: std::time::Duration) {
        self.lock().sync_time = time;
    }

    /// Makes writes fail with "no space left" past `bytes` per file.
    pub(crate) fn set_capacity(&self, bytes: Option<usize>) {
        self.lock().capacity = bytes;
    }

    /// Changes byte `at` of `name`, durably (damage on the medium).
    pub(crate) fn flip(&self, name: &str, at: usize) {
        let state = self.lock();
        let mut c = state.entries[name].lock().unwrap();
        c.written[at] ^= 0x40;
        c.durable[at] ^= 0x40;
    }

    pub(crate) fn len(&self, name: &str) -> usize {
        self.lock().entries[name].lock().unwrap().written.len()
    }

    /// The length of `name` without the zeros at its end.
    pub(crate) fn used(&self, name: &str) -> usize {
        let state = self.lock();
        let c = state.entries[name].lock().unwrap();
        c.written.iter().rposition(|&b| b != 0).map_or(0, |i| i + 1)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap()
    }

    fn file(&self, name: &str) -> io::Result<Arc<Mutex<Content>>> {
        self.lock()
            .entries
            .get(name)
            .cloned()
            .ok_or_else(|| io::Error::new(io::ErrorKind::NotFound, format!("no file {name}")))
    }
}

impl Fs for CrashFs {
    fn list(&self) -> io::Result<Vec<String>> {
        Ok(self.lock().entries.keys().cloned().collect())
    }

    fn read(&self, name: &str) -> io::Result<Vec<u8>> {
        Ok(self.file(name)?.lock().unwrap().written.clone())
    }

    fn create(&self, name: &str) -> io::Result<Box<dyn FsFile>> {
        let content = Arc::new(Mutex::new(Content::default()));
        let mut state = self.lock();
        state.entries.insert(name.to_owned(), content.clone());
        Ok(Box::new(CrashFile {
            content,
            at: 0,
            fs: self.clone(),
        }))
    }

    fn write_from(&self, name: &str, at: u64) -> io::Result<Box<dyn FsFile>> {
        Ok(Box::new(CrashFile {
            content: self.file(name)?,
            at: at as usize,
            fs: self.clone(),
        }))
    }

    fn truncate(&self, name: &str, len: u64) -> io::Result<()> {
        // Cut and synced, as OsFs does.
        let file = self.file(name)?;
        let mut c = file.lock().unwrap();
        c.written.truncate(len as usize);
        c.durable = c.written.clone();
        c.unsynced.clear();
        Ok(())
    }

    fn rename(&self, from: &str, to: &str) -> io::Result<()> {
        let mut state = self.lock();
        let content = state
            .entries
            .remove(from)
            .ok_or_else(|| io::Error::new(io::ErrorKind::NotFound, format!("no file {from}")))?;
        state.entries.insert(to.to_owned(), content);
        Ok(())
    }

    fn remove(&self, name: &str) -> io::Result<()> {
        self.lock()
            .entries
            .remove(name)
            .map(drop)
            .ok_or_else(|| io::Error::new(io::ErrorKind::NotFound, format!("no file {name}")))
    }

    fn sync_dir(&self) -> io::Result<()> {
        let mut state = self.lock();
        state.synced_entries = state.entries.clone();
        Ok(())
    }
}

#[derive(Debug)]
struct CrashFile {
    content: Arc<Mutex<Content>>,
    /// Where the next write goes.
    at: usize,
    fs: CrashFs,
}

impl CrashFile {
    fn write_at(&mut self, at: usize, bytes: &[u8]) -> io::Result<()> {
        let capacity = self.fs.lock().capacity;
        let mut c = self.content.lock().unwrap();
        if capacity.is_some_and(|cap| c.written.len().max(at + bytes.len()) > cap) {
            return Err(io::Error::new(
                io::ErrorKind::StorageFull,
                "no space left on device",
            ));
        }
        c.write(at, bytes);
        Ok(())
    }
}

impl FsFile for CrashFile {
    fn write_all(&mut self, bytes: &[u8]) -> io::Result<()> {
        self.write_at(self.at, bytes)?;
        self.at += bytes.len();
        Ok(())
    }

    fn zero_fill(&mut self, len: u64) -> io::Result<()> {
        let end = self.content.lock().unwrap().written.len();
        let len = len as usize;
        if end < len {
            self.write_at(end, &vec![0; len - end])?;
        }
        Ok(())
    }

    fn sync(&mut self) -> io::Result<()> {
        // What was written when the fsync began is what it makes durable.
        let upto = self.content.lock().unwrap().unsynced.len();
        let time = self.fs.lock().sync_time;
        if !time.is_zero() {
            std::thread::sleep(time);
        }
        let mut c = self.content.lock().unwrap();
        let done: Vec<_> = c.unsynced.drain(..upto).collect();
        for (at, bytes) in done {
            put(&mut c.durable, at, &bytes);
        }
        Ok(())
    }
}
