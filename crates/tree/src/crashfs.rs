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
    /// Every byte written.
    written: Vec<u8>,
    /// How many of them are durable.
    synced: usize,
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
    /// its last sync, and each file with what was fsynced plus the first
    /// `torn(n)` of the `n` bytes written after that.
    pub(crate) fn after_power_cut(&self, mut torn: impl FnMut(usize) -> usize) -> CrashFs {
        let state = self.lock();
        let mut entries = HashMap::new();
        for (name, content) in &state.synced_entries {
            let c = content.lock().unwrap();
            let unsynced = c.written.len() - c.synced;
            let keep = c.synced + torn(unsynced).min(unsynced);
            let copy = Content {
                written: c.written[..keep].to_vec(),
                synced: keep,
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
    }

    pub(crate) fn len(&self, name: &str) -> usize {
        self.lock().entries[name].lock().unwrap().written.len()
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
            fs: self.clone(),
        }))
    }

    fn append(&self, name: &str) -> io::Result<Box<dyn FsFile>> {
        Ok(Box::new(CrashFile {
            content: self.file(name)?,
            fs: self.clone(),
        }))
    }

    fn truncate(&self, name: &str, len: u64) -> io::Result<()> {
        let file = self.file(name)?;
        let mut c = file.lock().unwrap();
        c.written.truncate(len as usize);
        c.synced = c.synced.min(len as usize);
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
    fs: CrashFs,
}

impl FsFile for CrashFile {
    fn write_all(&mut self, bytes: &[u8]) -> io::Result<()> {
        let capacity = self.fs.lock().capacity;
        let mut c = self.content.lock().unwrap();
        if capacity.is_some_and(|cap| c.written.len() + bytes.len() > cap) {
            return Err(io::Error::new(
                io::ErrorKind::StorageFull,
                "no space left on device",
            ));
        }
        c.written.extend_from_slice(bytes);
        Ok(())
    }

    fn sync(&mut self) -> io::Result<()> {
        // What was written when the fsync began is what it makes durable.
        let upto = self.content.lock().unwrap().written.len();
        let time = self.fs.lock().sync_time;
        if !time.is_zero() {
            std::thread::sleep(time);
        }
        let mut c = self.content.lock().unwrap();
        c.synced = c.synced.max(upto);
        Ok(())
    }
}
