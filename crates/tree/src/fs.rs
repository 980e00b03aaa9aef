//! The files of a database directory, behind a trait so that tests can put
//! a file system under the database that loses, at a simulated power cut,
//! every write not yet fsynced ([`crate::crashfs`] in tests).

use std::fmt::Debug;
use std::fs::{File, OpenOptions};
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};

/// One directory of files, named without a path.
pub trait Fs: Send + Sync + Debug {
    /// The names of the files in the directory.
    fn list(&self) -> io::Result<Vec<String>>;
    /// The whole content of `name`.
    fn read(&self, name: &str) -> io::Result<Vec<u8>>;
    /// Makes `name` empty (creating it), to write from the start.
    fn create(&self, name: &str) -> io::Result<Box<dyn FsFile>>;
    /// Opens `name` to write after its last byte.
    fn append(&self, name: &str) -> io::Result<Box<dyn FsFile>>;
    /// Cuts `name` to its first `len` bytes, durably.
    fn truncate(&self, name: &str, len: u64) -> io::Result<()>;
    /// Renames `from` to `to`, replacing `to` (durable after
    /// [`Fs::sync_dir`]).
    fn rename(&self, from: &str, to: &str) -> io::Result<()>;
    fn remove(&self, name: &str) -> io::Result<()>;
    /// Makes the directory's entries (files made, renamed, removed)
    /// durable.
    fn sync_dir(&self) -> io::Result<()>;
}

/// A file open for writing.
pub trait FsFile: Send + Debug {
    fn write_all(&mut self, bytes: &[u8]) -> io::Result<()>;
    /// Makes every byte written so far durable (fdatasync).
    fn sync(&mut self) -> io::Result<()>;
}

/// The operating system's files in `dir`.
#[derive(Debug)]
pub struct OsFs {
    dir: PathBuf,
}

impl OsFs {
    pub fn new(dir: &Path) -> OsFs {
        OsFs {
            dir: dir.to_path_buf(),
        }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }
}

impl Fs for OsFs {
    fn list(&self) -> io::Result<Vec<String>> {
        let mut names = Vec::new();
        for entry in std::fs::read_dir(&self.dir)? {
            let entry = entry?;
            if let Ok(name) = entry.file_name().into_string() {
                names.push(name);
            }
        }
        Ok(names)
    }

    fn read(&self, name: &str) -> io::Result<Vec<u8>> {
        let mut bytes = Vec::new();
        File::open(self.path(name))?.read_to_end(&mut bytes)?;
        Ok(bytes)
    }

    fn create(&self, name: &str) -> io::Result<Box<dyn FsFile>> {
        let file = OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .open(self.path(name))?;
        Ok(Box::new(OsFile(file)))
    }

    fn append(&self, name: &str) -> io::Result<Box<dyn FsFile>> {
        let file = OpenOptions::new().append(true).open(self.path(name))?;
        Ok(Box::new(OsFile(file)))
    }

    fn truncate(&self, name: &str, len: u64) -> io::Result<()> {
        let file = OpenOptions::new().write(true).open(self.path(name))?;
        file.set_len(len)?;
        file.sync_all()
    }

    fn rename(&self, from: &str, to: &str) -> io::Result<()> {
        std::fs::rename(self.path(from), self.path(to))
    }

    fn remove(&self, name: &str) -> io::Result<()> {
        std::fs::remove_file(self.path(name))
    }

    fn sync_dir(&self) -> io::Result<()> {
        File::open(&self.dir)?.sync_all()
    }
}

#[derive(Debug)]
struct OsFile(File);

impl FsFile for OsFile {
    fn write_all(&mut self, bytes: &[u8]) -> io::Result<()> {
        self.0.write_all(bytes)
    }

    fn sync(&mut self) -> io::Result<()> {
        self.0.sync_data()
    }
}
