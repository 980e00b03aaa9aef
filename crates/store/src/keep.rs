//! A measured run is never lost: when its store will not take it, it goes
//! to the local store (the shared one went away), else to a JSON file
//! beside (a full disk, a read-only store).

use std::path::PathBuf;

use dyno_model::Run;

use crate::{SqliteStore, Store, StoreError, default_path};

/// Where a run went.
#[derive(Debug)]
pub enum Kept {
    /// Into the store it was meant for.
    Saved,
    /// The store was unreachable (`why`): into the local store at
    /// `local` instead.
    Local { why: StoreError, local: String },
}

/// Why a run is in no store, and where it went instead.
#[derive(Debug)]
pub struct NotSaved {
    /// Why its store refused it.
    pub why: StoreError,
    /// When that store was unreachable: why the local store did not take
    /// it either.
    pub local_why: Option<String>,
    /// The JSON file it was written to, or why it could not be.
    pub beside: Result<PathBuf, String>,
}

/// Saves `run` in `store`, or where it can go instead.
pub fn keep(store: &mut dyn Store, run: &Run) -> Result<Kept, Box<NotSaved>> {
    let why = match store.save(run) {
        Ok(()) => return Ok(Kept::Saved),
        Err(why) => why,
    };
    let mut local_why = None;
    if why.is_unreachable() {
        match save_locally(run) {
            Ok(local) => return Ok(Kept::Local { why, local }),
            Err(e) => local_why = Some(e),
        }
    }
    Err(Box::new(NotSaved {
        why,
        local_why,
        beside: write_beside(run),
    }))
}

/// Saves `run` in the local store; its location.
fn save_locally(run: &Run) -> Result<String, String> {
    let path = default_path().map_err(|e| e.to_string())?;
    let mut local = SqliteStore::open(&path).map_err(|e| e.to_string())?;
    local
        .save(run)
        .map_err(|e| format!("{}: {e}", local.location()))?;
    Ok(local.location())
}

/// Writes `run` as JSON where it can go when its store would not take it:
/// `dyno-run-ID.json` in the current folder, else in the temporary one.
fn write_beside(run: &Run) -> Result<PathBuf, String> {
    let json = serde_json::to_string_pretty(run).map_err(|e| e.to_string())? + "\n";
    let name = format!("dyno-run-{}.json", run.id);
    let mut why = String::new();
    for dir in [PathBuf::from("."), std::env::temp_dir()] {
        let path = dir.join(&name);
        match std::fs::write(&path, &json) {
            Ok(()) => return Ok(std::fs::canonicalize(&path).unwrap_or(path)),
            Err(e) => {
                let _ = std::fs::remove_file(&path);
                why = format!("{}: {e}", path.display());
            }
        }
    }
    Err(why)
}
