//! Size-limited file systems for the disk tests: a tmpfs of a given size
//! (for full disks and for the buffered fallback), mounted for one test and
//! unmounted when dropped. Mounting needs root with CAP_SYS_ADMIN, as in
//! CI here; elsewhere the test says it skipped that part.

use std::path::Path;
use std::process::Command;

#[derive(Debug)]
pub struct Tmpfs {
    dir: tempfile::TempDir,
}

impl Tmpfs {
    /// Mounts a tmpfs of `size` (e.g. "80m"), read-only with `read_only`.
    pub fn mount(size: &str, read_only: bool) -> Option<Tmpfs> {
        let dir = tempfile::tempdir().unwrap();
        let options = format!("size={size}{}", if read_only { ",ro" } else { "" });
        let status = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &options, "tmpfs"])
            .arg(dir.path())
            .status();
        match status {
            Ok(s) if s.success() => Some(Tmpfs { dir }),
            _ => {
                eprintln!("SKIPPED: cannot mount a tmpfs here (needs root with CAP_SYS_ADMIN)");
                None
            }
        }
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// Entries left in the file system.
    pub fn entries(&self) -> Vec<String> {
        std::fs::read_dir(self.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect()
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount")
            .arg("-l")
            .arg(self.dir.path())
            .status();
    }
}
