//! The files of a database directory, behind a trait so that tests can put
//! a file system under the database that loses, at a simulated power cut,
//! every write not yet fsynced ([`crate::crashfs`] in tests).

use std::fmt::Debug;
use std::fs::{File, OpenOptions};
use std::io::{self, Read};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

/// One directory of files, named without a path.
pub trait Fs: Send + Sync + Debug {
    /// The names of the files in the directory.
    fn list(&self) -> io::Result<Vec<String>>;
    /// The whole content of `name`.
    fn read(&self, name: &str) -> io::Result<Vec<u8>>;
    /// Makes `name` empty (creating it), to write from the start.
    fn create(&self, name: &str) -> io::Result<Box<dyn FsFile>>;
    /// Opens `name` to write from byte `at` on (what follows is
    /// overwritten).
    fn write_from(&self, name: &str, at: u64) -> io::Result<Box<dyn FsFile>>;
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

/// A file open for writing at a position.
pub trait FsFile: Send + Debug {
    /// Writes `bytes` at the position and moves it past them.
    fn write_all(&mut self, bytes: &[u8]) -> io::Result<()>;
    /// Makes the file at least `len` bytes long by writing zeros after its
    /// end; the position stays. The log writes its records over zeros laid
    /// down ahead of them, so that an fsync need not also commit a new
    /// file size (a journal write on most file systems) each time.
    fn zero_fill(&mut self, len: u64) -> io::Result<()>;
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
        Ok(Box::new(OsFile {
            file,
            at: 0,
            len: 0,
        }))
    }

    fn write_from(&self, name: &str, at: u64) -> io::Result<Box<dyn FsFile>> {
        let file = OpenOptions::new().write(true).open(self.path(name))?;
        let len = file.metadata()?.len();
        Ok(Box::new(OsFile { file, at, len }))
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
struct OsFile {
    file: File,
    /// Where the next write goes.
    at: u64,
    /// The file's length, as far as this handle has made it.
    len: u64,
}

/// Zeros written per call when filling.
static ZEROS: [u8; 64 << 10] = [0; 64 << 10];

impl FsFile for OsFile {
    fn write_all(&mut self, bytes: &[u8]) -> io::Result<()> {
        self.file.write_all_at(bytes, self.at)?;
        self.at += bytes.len() as u64;
        self.len = self.len.max(self.at);
        Ok(())
    }

    fn zero_fill(&mut self, len: u64) -> io::Result<()> {
        // Real zeros: space set aside with fallocate(2) or a hole left by
        // set_len is marked unwritten, and the first write to it changes
        // the file's metadata all the same.
        while self.len < len {
            let n = (len - self.len).min(ZEROS.len() as u64) as usize;
            self.file.write_all_at(&ZEROS[..n], self.len)?;
            self.len += n as u64;
        }
        Ok(())
    }

    fn sync(&mut self) -> io::Result<()> {
        self.file.sync_data()
    }
}
