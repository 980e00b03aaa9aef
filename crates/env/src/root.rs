//! Read-only access to the files of a machine, relative to a root directory.
//!
//! Every other module reads `/proc`, `/sys` and `/etc` through [`Root`], so a
//! test can point it at a fake tree in a temporary directory. Each reader
//! turns "missing", "unreadable" and "not text" into `None`: capture never
//! fails, it only knows less.

use std::path::{Path, PathBuf};
use std::str::FromStr;

/// A directory that stands in for `/`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Root<'a> {
    path: &'a Path,
}

impl<'a> Root<'a> {
    /// Reads files under `path` instead of `/`.
    pub(crate) fn new(path: &'a Path) -> Self {
        Root { path }
    }

    fn join(&self, relative: &str) -> PathBuf {
        self.path.join(relative)
    }

    /// The real path of `relative` under this root.
    pub(crate) fn path(&self, relative: &str) -> PathBuf {
        self.join(relative)
    }

    /// Whether `relative` exists (a file, directory or anything else).
    pub(crate) fn exists(&self, relative: &str) -> bool {
        // `symlink_metadata` so a marker that is a dangling link still counts.
        std::fs::symlink_metadata(self.join(relative)).is_ok()
    }

    /// The raw bytes of a file.
    pub(crate) fn read_bytes(&self, relative: &str) -> Option<Vec<u8>> {
        std::fs::read(self.join(relative)).ok()
    }

    /// The whole text of a file.
    pub(crate) fn read(&self, relative: &str) -> Option<String> {
        std::fs::read_to_string(self.join(relative)).ok()
    }

    /// The text of a one-value file (most of `/proc/sys` and `/sys`) without
    /// surrounding whitespace; `None` when it is empty.
    pub(crate) fn read_value(&self, relative: &str) -> Option<String> {
        let text = self.read(relative)?;
        let value = text.trim();
        (!value.is_empty()).then(|| value.to_owned())
    }

    /// A one-value file parsed as `T`.
    pub(crate) fn parse<T: FromStr>(&self, relative: &str) -> Option<T> {
        self.read_value(relative)?.parse().ok()
    }

    /// The names of the entries of a directory, sorted; empty when it cannot
    /// be read.
    pub(crate) fn list(&self, relative: &str) -> Vec<String> {
        let Ok(entries) = std::fs::read_dir(self.join(relative)) else {
            return Vec::new();
        };
        let mut names: Vec<String> = entries
            .filter_map(|entry| entry.ok()?.file_name().into_string().ok())
            .collect();
        names.sort();
        names
    }
}

/// The number in a name such as `cpu12` or `index3` after `prefix`, if the
/// rest is all digits.
pub(crate) fn numbered(name: &str, prefix: &str) -> Option<u32> {
    let rest = name.strip_prefix(prefix)?;
    if rest.is_empty() || !rest.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    rest.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_values_relative_to_the_root() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("proc/sys/net/core")).unwrap();
        std::fs::write(dir.path().join("proc/sys/net/core/somaxconn"), "4096\n").unwrap();
        std::fs::write(dir.path().join("blank"), " \n").unwrap();
        let root = Root::new(dir.path());

        assert_eq!(root.parse::<u32>("proc/sys/net/core/somaxconn"), Some(4096));
        assert_eq!(
            root.read_value("proc/sys/net/core/somaxconn").as_deref(),
            Some("4096")
        );
        assert_eq!(root.read_value("blank"), None);
        assert_eq!(root.read("missing"), None);
        assert_eq!(root.parse::<u32>("blank"), None);
        assert!(root.exists("proc/sys"));
        assert!(!root.exists("missing"));
        assert_eq!(root.list("proc/sys/net"), vec!["core".to_owned()]);
        assert!(root.list("missing").is_empty());
    }

    #[test]
    fn numbered_names() {
        assert_eq!(numbered("cpu12", "cpu"), Some(12));
        assert_eq!(numbered("index0", "index"), Some(0));
        assert_eq!(numbered("cpufreq", "cpu"), None);
        assert_eq!(numbered("cpu", "cpu"), None);
        assert_eq!(numbered("node0", "cpu"), None);
    }
}
