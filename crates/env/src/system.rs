//! The operating system: host name, kernel release, OS release name and load
//! average, from `/proc/sys/kernel`, `/etc/os-release` and `/proc/loadavg`.

use crate::root::Root;

/// The host name (`/proc/sys/kernel/hostname`).
pub(crate) fn hostname(root: Root<'_>) -> Option<String> {
    root.read_value("proc/sys/kernel/hostname")
}

/// The kernel release, as `uname -r` prints it.
pub(crate) fn kernel(root: Root<'_>) -> Option<String> {
    root.read_value("proc/sys/kernel/osrelease")
}

/// `PRETTY_NAME` from `/etc/os-release`, or from `/usr/lib/os-release` when
/// the former cannot be read (the order os-release(5) prescribes).
pub(crate) fn os(root: Root<'_>) -> Option<String> {
    let text = root
        .read("etc/os-release")
        .or_else(|| root.read("usr/lib/os-release"))?;
    os_release_value(&text, "PRETTY_NAME")
}

/// The value of `key` in an os-release file: shell-style `KEY=value` lines
/// whose value may be single- or double-quoted, with backslash escapes inside
/// double quotes.
pub(crate) fn os_release_value(text: &str, key: &str) -> Option<String> {
    let raw = text.lines().find_map(|line| {
        let (k, v) = line.trim().split_once('=')?;
        (k.trim() == key).then_some(v.trim())
    })?;
    let value = if let Some(inner) = raw.strip_prefix('"').and_then(|r| r.strip_suffix('"')) {
        let mut out = String::with_capacity(inner.len());
        let mut chars = inner.chars();
        while let Some(c) = chars.next() {
            match c {
                '\\' => out.extend(chars.next()),
                c => out.push(c),
            }
        }
        out
    } else if let Some(inner) = raw.strip_prefix('\'').and_then(|r| r.strip_suffix('\'')) {
        inner.to_owned()
    } else {
        raw.to_owned()
    };
    (!value.is_empty()).then_some(value)
}

/// The 1, 5 and 15 minute load averages (`/proc/loadavg`).
pub(crate) fn load_average(root: Root<'_>) -> Option<[f64; 3]> {
    parse_loadavg(&root.read("proc/loadavg")?)
}

/// The first three fields of `/proc/loadavg` (`0.72 1.33 0.78 1/83 7337`).
pub(crate) fn parse_loadavg(text: &str) -> Option<[f64; 3]> {
    let mut fields = text.split_ascii_whitespace().map(|f| {
        let value: f64 = f.parse().ok()?;
        (value.is_finite() && value >= 0.0).then_some(value)
    });
    Some([fields.next()??, fields.next()??, fields.next()??])
}

#[cfg(test)]
mod tests {
    use super::*;

    const DEBIAN: &str = r#"PRETTY_NAME="Debian GNU/Linux 12 (bookworm)"
NAME="Debian GNU/Linux"
VERSION_ID="12"
VERSION="12 (bookworm)"
VERSION_CODENAME=bookworm
ID=debian
HOME_URL="https://www.debian.org/"
"#;

    #[test]
    fn os_release_values() {
        assert_eq!(
            os_release_value(DEBIAN, "PRETTY_NAME").as_deref(),
            Some("Debian GNU/Linux 12 (bookworm)")
        );
        assert_eq!(os_release_value(DEBIAN, "ID").as_deref(), Some("debian"));
        assert_eq!(os_release_value(DEBIAN, "VARIANT"), None);
        assert_eq!(
            os_release_value("PRETTY_NAME='Alpine Linux v3.20'\n", "PRETTY_NAME").as_deref(),
            Some("Alpine Linux v3.20")
        );
        assert_eq!(
            os_release_value(r#"PRETTY_NAME="Say \"hi\" \\ \$HOME""#, "PRETTY_NAME").as_deref(),
            Some(r#"Say "hi" \ $HOME"#)
        );
        assert_eq!(os_release_value("PRETTY_NAME=\"\"\n", "PRETTY_NAME"), None);
        // A key that merely ends like the one asked for does not match.
        assert_eq!(os_release_value("X_PRETTY_NAME=x\n", "PRETTY_NAME"), None);
    }

    #[test]
    fn os_release_falls_back_to_usr_lib() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("usr/lib")).unwrap();
        std::fs::write(
            dir.path().join("usr/lib/os-release"),
            "PRETTY_NAME=\"Fedora Linux 40\"\n",
        )
        .unwrap();
        assert_eq!(
            os(Root::new(dir.path())).as_deref(),
            Some("Fedora Linux 40")
        );
        std::fs::create_dir_all(dir.path().join("etc")).unwrap();
        std::fs::write(dir.path().join("etc/os-release"), DEBIAN).unwrap();
        assert_eq!(
            os(Root::new(dir.path())).as_deref(),
            Some("Debian GNU/Linux 12 (bookworm)")
        );
    }

    #[test]
    fn loadavg() {
        assert_eq!(
            parse_loadavg("0.72 1.33 0.78 1/83 7337\n"),
            Some([0.72, 1.33, 0.78])
        );
        assert_eq!(parse_loadavg("12.00 8.50 4.25"), Some([12.0, 8.5, 4.25]));
        assert_eq!(parse_loadavg("0.72 1.33\n"), None);
        assert_eq!(parse_loadavg("0.72 high 0.78 1/83 7337"), None);
        assert_eq!(parse_loadavg("nan 0 0"), None);
        assert_eq!(parse_loadavg(""), None);
    }
}
