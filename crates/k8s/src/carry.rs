//! The local files a segmented command names (`--url-file`, `--body-file`,
//! `--scenario` and its data, `--replay`, `db run -f`), read here to travel to the
//! pods in a ConfigMap, and the command with their paths pointed at the
//! mounted copies.

use std::path::{Component, Path};

use crate::{Carried, FILES_DIR};

/// The most a ConfigMap holds (Kubernetes refuses more).
pub const CONFIGMAP_MAX: usize = 1024 * 1024;

/// The command as the pods run it: local file paths replaced by the
/// mounted copies, and those files.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PodCommand {
    pub args: Vec<String>,
    pub files: Vec<Carried>,
}

/// Reads each local file in `files`, which `command` names as the value of
/// one of `flags` (`--url-file PATH`, `--url-file=PATH`, `-fPATH`), and
/// points that value at the pods' copy.
pub fn carry(command: &[String], flags: &[&str], files: &[String]) -> Result<PodCommand, String> {
    let mut carried = PodCommand {
        args: command.to_vec(),
        files: Vec::new(),
    };
    for (i, path) in files.iter().enumerate() {
        let data = std::fs::read(path).map_err(|e| {
            format!(
                "could not read '{path}' ({e}): the pods get the files the command names from this machine (in a ConfigMap), so each must be here; check the path"
            )
        })?;
        carried.check_room(data.len(), &format!("'{path}'"))?;
        let key = format!("f{i}-{}", key_name(path));
        let mounted = format!("{FILES_DIR}/{key}");
        if !point_at(&mut carried.args, flags, path, &mounted) {
            return Err(format!(
                "could not find where the command names '{path}' to point the pods at their copy: give it as {} PATH",
                flags[0]
            ));
        }
        carried.files.push(Carried {
            path: key.clone(),
            key,
            data,
        });
    }
    Ok(carried)
}

impl PodCommand {
    /// Carries a scenario's data file too (the command does not name it),
    /// to `named`, the path the scenario names it by from its own folder
    /// (see [`scenario_data_path`]).
    pub fn add_data(&mut self, path: &Path, named: String) -> Result<(), String> {
        let data = std::fs::read(path)
            .map_err(|e| format!("could not read '{}' ({e})", path.display()))?;
        self.check_room(
            data.len(),
            &format!("the scenario's data '{}'", path.display()),
        )?;
        if self.files.iter().any(|f| f.path == named) {
            return Err(format!(
                "the scenario's data file '{named}' has the name dyno gives another carried file: rename it"
            ));
        }
        self.files.push(Carried {
            key: format!("f{}-data", self.files.len()),
            path: named,
            data,
        });
        Ok(())
    }

    /// Refuses `more` bytes (of `what`) that would take the files past
    /// what a ConfigMap holds.
    fn check_room(&self, more: usize, what: &str) -> Result<(), String> {
        let total = self.files.iter().map(|f| f.data.len()).sum::<usize>() + more;
        if total > CONFIGMAP_MAX {
            return Err(format!(
                "the files the command names come to {total} bytes with {what}, more than a ConfigMap holds (1 MiB): put them in the image or a volume of your own, and give the paths the pods see"
            ));
        }
        Ok(())
    }
}

/// A file's name as a ConfigMap key takes it: letters, digits, `-`, `_`
/// and `.`, every other character a `-`, no leading dot.
fn key_name(path: &str) -> String {
    let name: String = Path::new(path)
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.') {
                c
            } else {
                '-'
            }
        })
        .collect();
    name.trim_start_matches('.').to_owned()
}

/// Replaces `path`, where `args` gives it as the value of one of `flags`,
/// with `mounted`; whether it was found.
fn point_at(args: &mut [String], flags: &[&str], path: &str, mounted: &str) -> bool {
    let mut next_is_value = false;
    for arg in args {
        let value_at = if next_is_value {
            Some(0)
        } else {
            flags.iter().find_map(|flag| {
                let long = format!("{flag}=");
                if arg.starts_with(&long) {
                    Some(long.len())
                } else if flag.len() == 2 && arg.starts_with(flag) && arg.len() > 2 {
                    Some(2)
                } else {
                    None
                }
            })
        };
        next_is_value = flags.contains(&arg.as_str());
        if let Some(at) = value_at
            && arg[at..].starts_with(path)
        {
            *arg = format!("{}{mounted}{}", &arg[..at], &arg[at + path.len()..]);
            return true;
        }
    }
    false
}

/// The path a scenario (the file `scenario`) names its data file `data`
/// by, from the scenario's own folder. The pods find the data there beside
/// their copy of the scenario, so it must be below that folder.
pub fn scenario_data_path(scenario: &Path, data: &Path) -> Result<String, String> {
    let folder = scenario.parent().unwrap_or(Path::new(""));
    data.strip_prefix(folder)
        .ok()
        .filter(|p| p.components().all(|c| matches!(c, Component::Normal(_))))
        .map(|p| p.to_string_lossy().into_owned())
        .ok_or_else(|| {
            format!(
                "the scenario's data file '{}' is not below the scenario's folder: the pods get both in a ConfigMap, the data where the scenario names it from its copy; move the data beside the scenario (data = \"users.csv\")",
                data.display()
            )
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(s: &str) -> Vec<String> {
        s.split(' ').map(str::to_owned).collect()
    }

    #[test]
    fn each_form_of_a_file_flag_is_pointed_at_the_copy_and_only_the_value() {
        let dir = tempfile::tempdir().unwrap();
        let a = dir.path().join(".hidden list");
        std::fs::write(&a, "x").unwrap();
        let a = a.display().to_string();
        for (given, pods) in [
            (
                format!("db run -f {a}@2 -c 3"),
                "db run -f /etc/dyno/files/f0-hidden-list@2 -c 3",
            ),
            (
                format!("db run -f{a} -c 3"),
                "db run -f/etc/dyno/files/f0-hidden-list -c 3",
            ),
            (
                format!("db run --file={a} -c 3"),
                "db run --file=/etc/dyno/files/f0-hidden-list -c 3",
            ),
        ] {
            // A space in the path: split on the marker, not on it.
            let args: Vec<String> = given
                .replace(&a, "\u{1}")
                .split(' ')
                .map(|w| w.replace('\u{1}', &a))
                .collect();
            let carried = carry(&args, &["-f", "--file"], std::slice::from_ref(&a)).unwrap();
            assert_eq!(carried.args, words(pods), "{given}");
            assert_eq!(carried.files[0].key, "f0-hidden-list");
            assert_eq!(carried.files[0].path, "f0-hidden-list");
            assert_eq!(carried.files[0].data, b"x");
        }
        let e = carry(&words("db run -c 3"), &["-f"], std::slice::from_ref(&a)).unwrap_err();
        assert!(e.contains("give it as -f PATH"), "{e}");
        let e = carry(&words("db run -f /no/such"), &["-f"], &["/no/such".into()]).unwrap_err();
        assert!(e.contains("could not read '/no/such'"), "{e}");
    }

    #[test]
    fn the_files_must_fit_a_config_map() {
        let dir = tempfile::tempdir().unwrap();
        let big = dir.path().join("big");
        std::fs::write(&big, vec![0u8; CONFIGMAP_MAX / 2 + 1]).unwrap();
        let big = big.display().to_string();
        let mut carried = carry(
            &words(&format!("http --body-file {big}")),
            &["--body-file"],
            std::slice::from_ref(&big),
        )
        .unwrap();
        let e = carried.add_data(Path::new(&big), "users.csv".into());
        assert!(e.unwrap_err().contains("more than a ConfigMap holds"));
        let e = carry(
            &words(&format!("http --body-file {big} --url-file {big}")),
            &["--body-file", "--url-file"],
            &[big.clone(), big.clone()],
        )
        .unwrap_err();
        assert!(e.contains("more than a ConfigMap holds"), "{e}");
    }

    #[test]
    fn a_scenario_s_data_must_be_below_its_folder() {
        let at = |s: &str, d: &str| scenario_data_path(Path::new(s), Path::new(d));
        assert_eq!(
            at("/w/s.toml", "/w/data/users.csv").unwrap(),
            "data/users.csv"
        );
        assert_eq!(at("s.toml", "users.csv").unwrap(), "users.csv");
        assert!(at("/w/s.toml", "/other/users.csv").is_err());
        assert!(at("/w/s.toml", "/w/../users.csv").is_err());
    }
}
