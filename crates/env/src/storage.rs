//! The file system and device under a path, for disk runs: the mount
//! (`proc/self/mountinfo`: type, options, source) and the block device
//! (`sys/dev/block/MAJ:MIN`, its whole disk for a partition: model,
//! rotational, I/O scheduler). Whatever cannot be read stays `None`.

use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::Path;

use dyno_model::Storage;

use crate::root::Root;

/// The storage under `path` (or under its parent, if it does not exist
/// yet), read from `root`.
pub(crate) fn capture(root: Root<'_>, path: &Path) -> Storage {
    let existing = path
        .ancestors()
        .find(|p| p.exists())
        .unwrap_or(Path::new("/"));
    let canonical = existing.canonicalize().unwrap_or(existing.to_path_buf());
    let Ok(meta) = std::fs::metadata(&canonical) else {
        return Storage {
            path: Some(path.display().to_string()),
            ..Storage::default()
        };
    };
    let dev = if meta.file_type().is_block_device() {
        meta.rdev()
    } else {
        meta.dev()
    };
    let mut storage = from_device(
        root,
        &canonical,
        (libc::major(dev), libc::minor(dev)),
        meta.file_type().is_block_device(),
    );
    storage.path = Some(path.display().to_string());
    storage
}

/// The storage for device `major:minor` holding `path`.
pub(crate) fn from_device(
    root: Root<'_>,
    path: &Path,
    (major, minor): (u32, u32),
    is_device: bool,
) -> Storage {
    let mut storage = Storage::default();
    let id = format!("{major}:{minor}");
    if !is_device && let Some(info) = root.read("proc/self/mountinfo") {
        // Several mounts may share a device (bind mounts): the deepest
        // mount point above the path is the one in effect.
        let best = info
            .lines()
            .filter_map(Mount::parse)
            .filter(|m| m.device == id && path.starts_with(&m.mount_point))
            .max_by_key(|m| m.mount_point.len());
        if let Some(m) = best {
            storage.filesystem = Some(m.fstype);
            storage.mount_point = Some(m.mount_point);
            storage.mount_options = Some(m.options);
            storage.source = Some(m.source);
        }
    }
    let block = root.path(&format!("sys/dev/block/{id}"));
    if let Ok(mut disk) = block.canonicalize() {
        // A partition's model and queue are its disk's.
        if disk.join("partition").exists() {
            disk.pop();
        }
        let read = |rel: &str| {
            std::fs::read_to_string(disk.join(rel))
                .ok()
                .map(|s| s.trim().to_owned())
                .filter(|s| !s.is_empty())
        };
        storage.device = disk.file_name().map(|n| n.to_string_lossy().into_owned());
        storage.model = read("device/model");
        storage.rotational = read("queue/rotational").map(|r| r == "1");
        storage.scheduler = read("queue/scheduler").map(|s| active_scheduler(&s));
    }
    storage
}

/// "mq-deadline" from "[mq-deadline] kyber none"; the whole text when
/// nothing is bracketed (a single scheduler).
fn active_scheduler(text: &str) -> String {
    text.split_whitespace()
        .find_map(|w| w.strip_prefix('[').and_then(|w| w.strip_suffix(']')))
        .unwrap_or(text)
        .to_owned()
}

/// One line of `/proc/self/mountinfo`.
struct Mount {
    device: String,
    mount_point: String,
    options: String,
    fstype: String,
    source: String,
}

impl Mount {
    /// `ID PARENT MAJ:MIN ROOT MOUNT_POINT OPTIONS [OPTIONAL…] - TYPE SOURCE SUPER_OPTIONS`
    fn parse(line: &str) -> Option<Mount> {
        let (left, right) = line.split_once(" - ")?;
        let left: Vec<&str> = left.split(' ').collect();
        let mut right = right.split(' ');
        Some(Mount {
            device: (*left.get(2)?).to_owned(),
            mount_point: unescape(left.get(4)?),
            options: (*left.get(5)?).to_owned(),
            fstype: right.next()?.to_owned(),
            source: unescape(right.next()?),
        })
    }
}

/// mountinfo writes space, tab, newline and backslash as `\NNN` (octal).
fn unescape(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'\\'
            && i + 4 <= bytes.len()
            && let Ok(code) = u8::from_str_radix(&s[i + 1..i + 4], 8)
        {
            out.push(code);
            i += 4;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tests::write;

    #[test]
    fn a_partition_reports_its_mount_and_its_disk() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        write(
            root,
            "proc/self/mountinfo",
            "22 1 259:2 / / rw,relatime - ext4 /dev/nvme0n1p2 rw\n\
             30 22 259:2 /srv /mnt/my\\040data rw,noatime,discard - ext4 /dev/nvme0n1p2 rw\n\
             31 22 0:40 / /dev/shm rw - tmpfs tmpfs rw\n",
        );
        write(
            root,
            "sys/devices/pci/nvme/nvme0n1/device/model",
            "Samsung SSD 980 PRO 1TB  \n",
        );
        write(root, "sys/devices/pci/nvme/nvme0n1/queue/rotational", "0\n");
        write(
            root,
            "sys/devices/pci/nvme/nvme0n1/queue/scheduler",
            "[none] mq-deadline\n",
        );
        write(
            root,
            "sys/devices/pci/nvme/nvme0n1/nvme0n1p2/partition",
            "2\n",
        );
        std::fs::create_dir_all(root.join("sys/dev/block")).unwrap();
        std::os::unix::fs::symlink(
            "../../devices/pci/nvme/nvme0n1/nvme0n1p2",
            root.join("sys/dev/block/259:2"),
        )
        .unwrap();
        let s = from_device(
            Root::new(root),
            Path::new("/mnt/my data/x"),
            (259, 2),
            false,
        );
        assert_eq!(s.filesystem.as_deref(), Some("ext4"));
        assert_eq!(
            s.mount_point.as_deref(),
            Some("/mnt/my data"),
            "the deepest mount"
        );
        assert_eq!(s.mount_options.as_deref(), Some("rw,noatime,discard"));
        assert_eq!(s.source.as_deref(), Some("/dev/nvme0n1p2"));
        assert_eq!(s.device.as_deref(), Some("nvme0n1"), "the partition's disk");
        assert_eq!(s.model.as_deref(), Some("Samsung SSD 980 PRO 1TB"));
        assert_eq!(s.rotational, Some(false));
        assert_eq!(s.scheduler.as_deref(), Some("none"));

        // A memory file system has a mount and no block device.
        let s = from_device(Root::new(root), Path::new("/dev/shm"), (0, 40), false);
        assert_eq!(s.filesystem.as_deref(), Some("tmpfs"));
        assert_eq!(s.device, None);
        assert_eq!(s.rotational, None);
    }

    #[test]
    fn this_machine_has_a_file_system_under_its_temp_dir() {
        let dir = tempfile::tempdir().unwrap();
        let s = capture(Root::new(Path::new("/")), &dir.path().join("not-yet"));
        assert_eq!(
            s.path.as_deref(),
            Some(dir.path().join("not-yet").to_str().unwrap())
        );
        assert!(s.filesystem.is_some(), "{s:?}");
    }

    #[test]
    fn schedulers_and_escapes() {
        assert_eq!(active_scheduler("mq-deadline kyber [bfq] none"), "bfq");
        assert_eq!(active_scheduler("none"), "none");
        assert_eq!(unescape("/a\\040b\\134c"), "/a b\\c");
        assert_eq!(unescape("/plain"), "/plain");
    }
}
