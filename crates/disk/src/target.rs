//! The test file: where it goes, the safety rules that guard it, how it is
//! filled, whether direct I/O is in effect, and its removal.
//!
//! dyno writes only to a file it created itself (removed when the
//! [`TestFile`] is dropped: after success, an error, a full disk or
//! Ctrl-C), or, with `--force`, to an existing file or (with `--device`
//! too) a block device the user named.

use std::fs::{File, OpenOptions};
use std::io;
use std::os::fd::AsRawFd;
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use crate::buffer::AlignedBuf;

/// Free space kept on top of the test file.
pub const SPACE_MARGIN: u64 = 64 << 20;

/// Where to put the test file and what may be overwritten.
#[derive(Debug, Clone)]
pub struct TargetSpec {
    /// A directory (dyno creates its own file there), a new file name, or
    /// with `force` an existing file or block device.
    pub path: PathBuf,
    pub size_bytes: u64,
    /// Overwrite an existing file (or device, with `device`).
    pub force: bool,
    /// Allow a block device.
    pub device: bool,
    /// Try direct I/O (O_DIRECT); false asks for buffered I/O.
    pub direct: bool,
}

/// What the test file is filled with before any test.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fill {
    /// Incompressible bytes, different in every block (seeded).
    Random,
    /// Zeros, which compressing or deduplicating storage stores for free.
    Zero,
}

/// What the test file is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TargetKind {
    /// A file dyno created; removed at the end.
    Created,
    /// An existing file named with `--force`; overwritten and left in place.
    Existing,
    /// A block device named with `--device --force`; overwritten.
    Device,
}

/// How the file's data moves.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum IoMode {
    /// O_DIRECT: offsets and lengths must be multiples of `offset_align`,
    /// buffers aligned to `memory_align`.
    Direct {
        offset_align: u64,
        memory_align: u64,
    },
    /// Through the page cache, dropped for the file before each pass where
    /// the kernel allows (`posix_fadvise(DONTNEED)`).
    Buffered { reason: String },
}

impl IoMode {
    pub fn is_direct(&self) -> bool {
        matches!(self, IoMode::Direct { .. })
    }

    /// The alignment of I/O offsets and lengths.
    pub fn offset_align(&self) -> u64 {
        match self {
            IoMode::Direct { offset_align, .. } => *offset_align,
            IoMode::Buffered { .. } => 1,
        }
    }

    /// The alignment of I/O buffers (at least a page, for any mode).
    pub fn memory_align(&self) -> usize {
        match self {
            IoMode::Direct { memory_align, .. } => (*memory_align as usize).max(4096),
            IoMode::Buffered { .. } => 4096,
        }
    }
}

/// Why the test file could not be made or used.
#[derive(Debug, thiserror::Error)]
pub enum TargetError {
    #[error(
        "'{0}' exists and dyno did not create it: give a directory (dyno makes its own file there), a new file name, or add --force to overwrite it"
    )]
    Exists(PathBuf),
    #[error(
        "'{0}' is a block device: testing it overwrites its data. Add --device --force if that is what you want"
    )]
    Device(PathBuf),
    #[error("'{0}' is neither a directory, a regular file nor a block device")]
    NotAFile(PathBuf),
    // The cause is the source, which the error chain prints after this
    // (`{:#}`): naming it here too printed it twice.
    #[error("could not create the test file '{path}'{hint}")]
    Create {
        path: PathBuf,
        #[source]
        source: io::Error,
        hint: &'static str,
    },
    #[error(
        "not enough free space in '{dir}': the test needs {need} (the {size} file plus a {margin} margin) and {free} is free; use a smaller --size or another directory"
    )]
    NoSpace {
        dir: PathBuf,
        need: String,
        size: String,
        margin: String,
        free: String,
    },
    #[error(
        "the file system ran out of space (ENOSPC) while {what}; the test file was removed. Use a smaller --size or another directory"
    )]
    Full { what: String },
    #[error("{what}")]
    Io {
        what: String,
        #[source]
        source: io::Error,
    },
    #[error("--size {0} bytes is too small: it must hold at least one {1}-byte block per thread")]
    TooSmall(u64, u64),
}

impl TargetError {
    /// An I/O error while doing `what`; a full disk gets its own message.
    pub fn io(what: impl Into<String>, source: io::Error) -> TargetError {
        let what = what.into();
        if source.raw_os_error() == Some(libc::ENOSPC) {
            TargetError::Full { what }
        } else {
            TargetError::Io { what, source }
        }
    }
}

/// 1073741824 → "1.00 GiB".
pub fn format_bytes(bytes: u64) -> String {
    const UNITS: [&str; 5] = ["bytes", "KiB", "MiB", "GiB", "TiB"];
    let mut value = bytes as f64;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{bytes} bytes")
    } else {
        format!("{value:.2} {}", UNITS[unit])
    }
}

/// The open test file. Dropping it removes a file dyno created.
#[derive(Debug)]
pub struct TestFile {
    file: File,
    path: PathBuf,
    kind: TargetKind,
    size: u64,
    mode: IoMode,
}

impl Drop for TestFile {
    fn drop(&mut self) {
        if self.kind == TargetKind::Created {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

impl TestFile {
    /// Applies the safety rules, creates (or opens) the file, checks the
    /// free space and decides between direct and buffered I/O. The file is
    /// not filled yet: see [`TestFile::fill`].
    pub fn open(spec: &TargetSpec) -> Result<TestFile, TargetError> {
        let meta = std::fs::metadata(&spec.path);
        let (path, kind) = match &meta {
            Ok(m) if m.is_dir() => (unique_name(&spec.path), TargetKind::Created),
            Ok(m) if m.file_type().is_block_device() => {
                if !(spec.device && spec.force) {
                    return Err(TargetError::Device(spec.path.clone()));
                }
                (spec.path.clone(), TargetKind::Device)
            }
            Ok(m) if m.is_file() => {
                if !spec.force {
                    return Err(TargetError::Exists(spec.path.clone()));
                }
                (spec.path.clone(), TargetKind::Existing)
            }
            Ok(_) => return Err(TargetError::NotAFile(spec.path.clone())),
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                (spec.path.clone(), TargetKind::Created)
            }
            Err(e) => {
                return Err(TargetError::io(
                    format!("could not look at '{}'", spec.path.display()),
                    clone_error(e),
                ));
            }
        };
        let mut options = OpenOptions::new();
        options.read(true).write(true);
        match kind {
            // O_EXCL: never open a file that appeared meanwhile.
            TargetKind::Created => options.create_new(true).mode(0o600),
            TargetKind::Existing | TargetKind::Device => &mut options,
        };
        let file = options.open(&path).map_err(|source| TargetError::Create {
            hint: create_hint(&source, &path),
            path: path.clone(),
            source,
        })?;
        // From here on, dropping `test` removes a created file.
        let mut test = TestFile {
            file,
            path,
            kind,
            size: spec.size_bytes,
            mode: IoMode::Buffered {
                reason: "not decided yet".into(),
            },
        };
        test.check_space(spec)?;
        test.mode = if spec.direct {
            direct_io(&test.file)
        } else {
            IoMode::Buffered {
                reason: "buffered I/O was asked for (--buffered)".into(),
            }
        };
        Ok(test)
    }

    /// Refuses to start when the file system cannot hold the file and the
    /// margin. A device holds what it holds: the test must fit on it.
    fn check_space(&mut self, spec: &TargetSpec) -> Result<(), TargetError> {
        if self.kind == TargetKind::Device {
            let capacity = device_size(&self.file)
                .map_err(|e| TargetError::io("could not read the device's size", e))?;
            if capacity < self.size {
                return Err(TargetError::NoSpace {
                    dir: self.path.clone(),
                    need: format_bytes(self.size),
                    size: format_bytes(self.size),
                    margin: format_bytes(0),
                    free: format_bytes(capacity),
                });
            }
            return Ok(());
        }
        let have = self.file.metadata().map(|m| m.len()).unwrap_or(0);
        let need = spec.size_bytes.saturating_sub(have) + SPACE_MARGIN;
        // SAFETY: fstatvfs only writes the struct we hand it.
        let mut vfs: libc::statvfs = unsafe { std::mem::zeroed() };
        if unsafe { libc::fstatvfs(self.file.as_raw_fd(), &mut vfs) } != 0 {
            return Ok(()); // Unknown: the fill will report a full disk.
        }
        let free = vfs.f_bavail * vfs.f_frsize;
        if free < need {
            return Err(TargetError::NoSpace {
                dir: self.path.parent().unwrap_or(Path::new(".")).to_path_buf(),
                need: format_bytes(need),
                size: format_bytes(spec.size_bytes),
                margin: format_bytes(SPACE_MARGIN),
                free: format_bytes(free),
            });
        }
        Ok(())
    }

    /// Writes the whole file once, so reads touch real data and writes
    /// overwrite allocated blocks: random bytes that differ from block to
    /// block (nothing to compress or deduplicate), or zeros. `stop` ends it
    /// early (the caller then removes the file).
    pub fn fill(&self, fill: Fill, seed: u64, stop: &dyn Fn() -> bool) -> Result<(), TargetError> {
        const CHUNK: u64 = 1 << 20;
        let mut buf = AlignedBuf::new(CHUNK as usize, self.mode.memory_align());
        let mut rng = fastrand::Rng::with_seed(seed);
        let mut offset = 0;
        while offset < self.size {
            if stop() {
                return Ok(());
            }
            let len = CHUNK.min(self.size - offset) as usize;
            if fill == Fill::Random {
                buf.fill_random(&mut rng);
            }
            // A direct write must be aligned: the last piece of a size
            // that is not a multiple of the alignment goes in whole blocks.
            let len = round_up(len as u64, self.mode.offset_align()).min(CHUNK) as usize;
            write_all_at(&self.file, &buf.as_slice()[..len], offset)
                .map_err(|e| TargetError::io("filling the test file", e))?;
            offset += len as u64;
        }
        self.file
            .sync_all()
            .map_err(|e| TargetError::io("flushing the test file", e))?;
        self.drop_cache();
        Ok(())
    }

    /// Buffered I/O only: asks the kernel to forget the file's cached
    /// pages, so a pass starts from the device (where the file system
    /// allows it; tmpfs keeps everything in memory regardless).
    pub fn drop_cache(&self) {
        if !self.mode.is_direct() {
            let fd = self.file.as_raw_fd();
            // SAFETY: plain syscalls on a descriptor we own.
            unsafe {
                libc::fdatasync(fd);
                libc::posix_fadvise(fd, 0, 0, libc::POSIX_FADV_DONTNEED);
            }
        }
    }

    pub fn file(&self) -> &File {
        &self.file
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn kind(&self) -> TargetKind {
        self.kind
    }

    pub fn size(&self) -> u64 {
        self.size
    }

    pub fn mode(&self) -> &IoMode {
        &self.mode
    }
}

fn round_up(n: u64, align: u64) -> u64 {
    n.div_ceil(align) * align
}

fn write_all_at(file: &File, mut buf: &[u8], mut offset: u64) -> io::Result<()> {
    use std::os::unix::fs::FileExt;
    while !buf.is_empty() {
        let n = file.write_at(buf, offset)?;
        if n == 0 {
            return Err(io::Error::from_raw_os_error(libc::ENOSPC));
        }
        buf = &buf[n..];
        offset += n as u64;
    }
    Ok(())
}

/// `dir/dyno-disk-PID-RANDOM.tmp`: a name no other run picks.
fn unique_name(dir: &Path) -> PathBuf {
    dir.join(format!(
        "dyno-disk-{}-{:08x}.tmp",
        std::process::id(),
        fastrand::u32(..)
    ))
}

/// What to do about a failed create or mkdir.
pub(crate) fn create_hint(e: &io::Error, path: &Path) -> &'static str {
    let parent_is_dir = path
        .parent()
        .map(|p| {
            if p.as_os_str().is_empty() {
                Path::new(".")
            } else {
                p
            }
        })
        .is_some_and(Path::is_dir);
    match e.raw_os_error() {
        // /proc, /sys and other virtual file systems say ENOENT for a new
        // file in a directory that exists.
        Some(libc::ENOENT) if parent_is_dir => {
            " (the file system there does not allow new files, as /proc and /sys: choose a directory on a disk)"
        }
        Some(libc::EACCES | libc::EPERM) => {
            " (no permission to write there: choose a directory you can write to)"
        }
        Some(libc::EROFS) => " (the file system is read-only: choose a writable directory)",
        Some(libc::ENOENT) => " (its directory does not exist)",
        Some(libc::EEXIST) => " (it appeared meanwhile; run again)",
        _ => "",
    }
}

fn clone_error(e: &io::Error) -> io::Error {
    match e.raw_os_error() {
        Some(code) => io::Error::from_raw_os_error(code),
        None => io::Error::new(e.kind(), e.to_string()),
    }
}

/// Decides whether direct I/O is in effect, and with which alignment:
///
/// 1. `statx` with `STATX_DIOALIGN` (Linux 6.1+): the file system states
///    its alignment, or 0 for "no direct I/O here";
/// 2. memory-backed file systems (tmpfs, ramfs) have no device to bypass
///    the cache for, whatever `open(O_DIRECT)` says;
/// 3. otherwise O_DIRECT is switched on with `fcntl`, which fails where the
///    file system cannot do it; the alignment is then the device's logical
///    block size, or 4096 when unknown.
///
/// On success the file descriptor is left in O_DIRECT mode.
fn direct_io(file: &File) -> IoMode {
    let fd = file.as_raw_fd();
    let statx = dio_align(fd);
    if let Some((0, _)) = statx {
        return IoMode::Buffered {
            reason: "the file system does not support direct I/O (statx reports no alignment)"
                .into(),
        };
    }
    if let Some(name) = memory_fs(fd) {
        return IoMode::Buffered {
            reason: format!(
                "{name} keeps files in memory: there is no device under it, so direct I/O cannot bypass a cache"
            ),
        };
    }
    // SAFETY: fcntl on a descriptor we own.
    let flags = unsafe { libc::fcntl(fd, libc::F_GETFL) };
    if flags < 0 || unsafe { libc::fcntl(fd, libc::F_SETFL, flags | libc::O_DIRECT) } != 0 {
        return IoMode::Buffered {
            reason: format!(
                "the file system refused O_DIRECT ({})",
                io::Error::last_os_error()
            ),
        };
    }
    let (memory_align, offset_align) = statx.unwrap_or_else(|| {
        let block = logical_block_size(file).unwrap_or(4096);
        (block, block)
    });
    IoMode::Direct {
        offset_align: offset_align.max(1),
        memory_align: memory_align.max(1),
    }
}

/// `(memory, offset)` alignment from `statx(STATX_DIOALIGN)`, or `None`
/// when the kernel or file system does not say.
fn dio_align(fd: libc::c_int) -> Option<(u64, u64)> {
    // SAFETY: statx only writes the struct we hand it; the path is empty
    // and AT_EMPTY_PATH makes it describe `fd`.
    let mut stx: libc::statx = unsafe { std::mem::zeroed() };
    let rc = unsafe {
        libc::statx(
            fd,
            c"".as_ptr(),
            libc::AT_EMPTY_PATH,
            libc::STATX_DIOALIGN,
            &mut stx,
        )
    };
    if rc != 0 || stx.stx_mask & libc::STATX_DIOALIGN == 0 {
        return None;
    }
    if stx.stx_dio_offset_align == 0 {
        return Some((0, 0));
    }
    Some((
        u64::from(stx.stx_dio_mem_align),
        u64::from(stx.stx_dio_offset_align),
    ))
}

/// "tmpfs" or "ramfs" when the file lives in memory.
fn memory_fs(fd: libc::c_int) -> Option<&'static str> {
    // SAFETY: fstatfs only writes the struct we hand it.
    let mut fs: libc::statfs = unsafe { std::mem::zeroed() };
    if unsafe { libc::fstatfs(fd, &mut fs) } != 0 {
        return None;
    }
    const RAMFS_MAGIC: i64 = 0x8584_58f6;
    match fs.f_type as i64 {
        t if t == libc::TMPFS_MAGIC => Some("tmpfs"),
        RAMFS_MAGIC => Some("ramfs"),
        _ => None,
    }
}

/// The logical block size of the device under the file, from sysfs.
fn logical_block_size(file: &File) -> Option<u64> {
    use std::os::unix::fs::MetadataExt;
    let meta = file.metadata().ok()?;
    let dev = if meta.file_type().is_block_device() {
        meta.rdev()
    } else {
        meta.dev()
    };
    let (major, minor) = (libc::major(dev), libc::minor(dev));
    let base = PathBuf::from(format!("/sys/dev/block/{major}:{minor}"));
    // A partition's queue is its parent's.
    [base.join("queue"), base.join("../queue")]
        .iter()
        .find_map(|q| std::fs::read_to_string(q.join("logical_block_size")).ok())
        .and_then(|s| s.trim().parse().ok())
}

/// The size of a block device in bytes (BLKGETSIZE64).
fn device_size(file: &File) -> io::Result<u64> {
    const BLKGETSIZE64: libc::c_ulong = 0x8008_1272;
    let mut size: u64 = 0;
    // SAFETY: BLKGETSIZE64 writes one u64 to the pointer.
    if unsafe { libc::ioctl(file.as_raw_fd(), BLKGETSIZE64, &mut size) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(size)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(path: &Path) -> TargetSpec {
        TargetSpec {
            path: path.to_path_buf(),
            size_bytes: 1 << 20,
            force: false,
            device: false,
            direct: true,
        }
    }

    #[test]
    fn a_directory_gets_a_new_file_that_is_removed_on_drop() {
        let dir = tempfile::tempdir().unwrap();
        let test = TestFile::open(&spec(dir.path())).unwrap();
        assert_eq!(test.kind(), TargetKind::Created);
        let path = test.path().to_path_buf();
        assert!(path.starts_with(dir.path()) && path.exists());
        test.fill(Fill::Random, 1, &|| false).unwrap();
        assert_eq!(std::fs::metadata(&path).unwrap().len(), 1 << 20);
        drop(test);
        assert!(!path.exists(), "the created file is removed");
    }

    #[test]
    fn an_existing_file_is_refused_without_force_and_kept_with_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("precious");
        std::fs::write(&path, b"keep me").unwrap();
        let err = TestFile::open(&spec(&path)).unwrap_err().to_string();
        assert!(
            err.contains("did not create") && err.contains("--force"),
            "{err}"
        );
        assert_eq!(std::fs::read(&path).unwrap(), b"keep me", "untouched");
        let mut forced = spec(&path);
        forced.force = true;
        let test = TestFile::open(&forced).unwrap();
        assert_eq!(test.kind(), TargetKind::Existing);
        drop(test);
        assert!(path.exists(), "a file dyno did not create is never removed");
    }

    #[test]
    fn random_fill_differs_block_to_block_and_zero_fill_is_zero() {
        let dir = tempfile::tempdir().unwrap();
        let test = TestFile::open(&spec(dir.path())).unwrap();
        test.fill(Fill::Random, 1, &|| false).unwrap();
        let data = std::fs::read(test.path()).unwrap();
        let blocks: std::collections::HashSet<&[u8]> = data.chunks(4096).collect();
        assert_eq!(blocks.len(), data.len() / 4096, "no 4 KiB block repeats");
        let zeros = data.iter().filter(|&&b| b == 0).count();
        assert!(zeros < data.len() / 100, "random, not sparse: {zeros}");
        test.fill(Fill::Zero, 1, &|| false).unwrap();
        assert!(std::fs::read(test.path()).unwrap().iter().all(|&b| b == 0));
    }

    #[test]
    fn missing_directories_and_unwritable_places_say_so() {
        let err = TestFile::open(&spec(Path::new("/nonexistent-dir/x")))
            .unwrap_err()
            .to_string();
        assert!(err.contains("does not exist"), "{err}");
        let err = TestFile::open(&spec(Path::new("/proc/x")))
            .unwrap_err()
            .to_string();
        assert!(err.contains("could not create"), "{err}");
        // Defect 23: /proc exists; it just takes no files.
        let err = TestFile::open(&spec(Path::new("/proc")))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("does not allow new files") && !err.contains("does not exist"),
            "{err}"
        );
    }

    #[test]
    fn too_little_space_is_refused_before_writing() {
        let dir = tempfile::tempdir().unwrap();
        let mut huge = spec(dir.path());
        huge.size_bytes = 1 << 60;
        let err = TestFile::open(&huge).unwrap_err().to_string();
        assert!(
            err.contains("not enough free space") && err.contains("--size"),
            "{err}"
        );
        assert_eq!(
            std::fs::read_dir(dir.path()).unwrap().count(),
            0,
            "nothing is left behind"
        );
    }

    #[test]
    fn sizes_are_binary() {
        assert_eq!(format_bytes(512), "512 bytes");
        assert_eq!(format_bytes(1 << 30), "1.00 GiB");
        assert_eq!(format_bytes(64 << 20), "64.00 MiB");
    }
}
