//! Where the embedded store lives when the user has not said: `$DYNO_HOME`,
//! else the XDG data directory.

use std::ffi::OsString;
use std::path::PathBuf;

/// The environment variable that names dyno's data directory.
pub const DYNO_HOME: &str = "DYNO_HOME";

/// The name of the SQLite store file inside the data directory.
pub const FILE_NAME: &str = "dyno.db";

/// Neither `DYNO_HOME`, `XDG_DATA_HOME` nor `HOME` is set, so there is no
/// default place for the store.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "there is no default place for the result store: none of DYNO_HOME, XDG_DATA_HOME or HOME is set. Set DYNO_HOME to a writable directory, or use --no-save."
)]
pub struct NoDefaultPath;

/// The default store file, from the environment: see [`resolve_path`].
pub fn default_path() -> Result<PathBuf, NoDefaultPath> {
    resolve_path(
        std::env::var_os(DYNO_HOME),
        std::env::var_os("XDG_DATA_HOME"),
        std::env::var_os("HOME"),
    )
}

/// The default store file given the values of `DYNO_HOME`, `XDG_DATA_HOME`
/// and `HOME`: `$DYNO_HOME/dyno.db`, else `$XDG_DATA_HOME/dyno/dyno.db`, else
/// `$HOME/.local/share/dyno/dyno.db`.
///
/// An empty value counts as unset. A relative `XDG_DATA_HOME` is ignored, as
/// the XDG Base Directory specification asks; `DYNO_HOME` is taken as given,
/// relative or not, since the user set it for dyno alone.
pub fn resolve_path(
    dyno_home: Option<OsString>,
    xdg_data_home: Option<OsString>,
    home: Option<OsString>,
) -> Result<PathBuf, NoDefaultPath> {
    let set = |value: Option<OsString>| value.filter(|v| !v.is_empty()).map(PathBuf::from);
    if let Some(dir) = set(dyno_home) {
        return Ok(dir.join(FILE_NAME));
    }
    if let Some(dir) = set(xdg_data_home).filter(|d| d.is_absolute()) {
        return Ok(dir.join("dyno").join(FILE_NAME));
    }
    if let Some(dir) = set(home) {
        return Ok(dir.join(".local/share/dyno").join(FILE_NAME));
    }
    Err(NoDefaultPath)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn resolve(dyno: Option<&str>, xdg: Option<&str>, home: Option<&str>) -> Option<PathBuf> {
        resolve_path(
            dyno.map(Into::into),
            xdg.map(Into::into),
            home.map(Into::into),
        )
        .ok()
    }

    #[test]
    fn dyno_home_wins_over_everything() {
        assert_eq!(
            resolve(Some("/srv/dyno"), Some("/xdg"), Some("/home/u")),
            Some(PathBuf::from("/srv/dyno/dyno.db"))
        );
        assert_eq!(
            resolve(Some("results"), None, None),
            Some(PathBuf::from("results/dyno.db"))
        );
    }

    #[test]
    fn xdg_data_home_comes_next_then_home() {
        assert_eq!(
            resolve(None, Some("/xdg"), Some("/home/u")),
            Some(PathBuf::from("/xdg/dyno/dyno.db"))
        );
        assert_eq!(
            resolve(None, None, Some("/home/u")),
            Some(PathBuf::from("/home/u/.local/share/dyno/dyno.db"))
        );
    }

    #[test]
    fn empty_values_count_as_unset_and_relative_xdg_is_ignored() {
        assert_eq!(
            resolve(Some(""), Some(""), Some("/home/u")),
            Some(PathBuf::from("/home/u/.local/share/dyno/dyno.db"))
        );
        assert_eq!(
            resolve(None, Some("relative/data"), Some("/home/u")),
            Some(PathBuf::from("/home/u/.local/share/dyno/dyno.db"))
        );
    }

    #[test]
    fn nothing_set_is_an_error_that_says_what_to_set() {
        let err = resolve_path(None, Some("".into()), Some("".into())).unwrap_err();
        assert!(err.to_string().contains("Set DYNO_HOME"), "{err}");
        assert_eq!(resolve(None, None, None), None);
    }
}
