//! Points from a file: read here, so that the messages name it; the CSV
//! and JSON readers of `dyno_scale::file` take its text.

use std::path::Path;

use anyhow::{Context, Result, anyhow};
use dyno_scale::Curve;
use dyno_scale::file::{Columns, FileError, read_text};

use crate::cmd::build;

/// Reads the points of `path` ([`read_text`] decides JSON or CSV).
pub(super) fn read(path: &Path, columns: &Columns) -> Result<Curve> {
    let shown = path.display().to_string();
    let text =
        std::fs::read_to_string(path).with_context(|| format!("could not read '{shown}'"))?;
    let points = read_text(&shown, &text, columns).map_err(|e| naming(&shown, e))?;
    let name = path
        .file_name()
        .map_or_else(|| shown.clone(), |n| n.to_string_lossy().into_owned());
    Ok(points.curve(&shown, &name, build()))
}

/// The error, after the file's name: `'a.csv' line 4, column 'n': …` or
/// `'a.csv': it is not valid CSV: …`.
fn naming(shown: &str, e: FileError) -> anyhow::Error {
    if e.follows_name() {
        anyhow!("'{shown}' {e}")
    } else {
        anyhow::Error::new(e).context(format!("'{shown}'"))
    }
}
