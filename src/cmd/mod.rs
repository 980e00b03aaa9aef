//! One module per subcommand, each wiring settings → engine → store →
//! exporter. Helpers shared by several subcommands live here.

mod capacity;
mod changes;
mod compare;
mod completions;
mod db;
mod disk;
mod doctor;
mod history;
mod http;
pub(crate) mod interrupt;
mod k8s;
mod quick;
mod report;
mod run;
mod scale;
pub(crate) mod segment;
mod serve;
mod sysinfo;
mod watch;

use std::io::{IsTerminal, Write};

use anyhow::Result;
use dyno_model::{DynoBuild, Environment, Run};

use dyno_stats::merge::Arrived;
use dyno_store::{
    Filter, Kept, Listing, NotSaved, PgStore, SkipReason, Skipped, SqliteStore, Store, StoreError,
};

use crate::ExitStatus;
use crate::cli::{Cli, Command, SaveArgs};

/// What every subcommand runs with, passed down rather than kept in a
/// global: where runs are kept (`--store` or DYNO_STORE; without either,
/// the local store under $DYNO_HOME).
pub(crate) struct Context {
    store: Option<String>,
}

/// Runs the subcommand the user asked for.
pub(crate) fn run(cli: Cli) -> Result<ExitStatus> {
    let store = cli
        .store
        .as_deref()
        .map(crate::cli::store_spec)
        .transpose()
        .map_err(anyhow::Error::msg)?;
    let ctx = &Context { store };
    match cli.command {
        Command::Quick(args) => quick::run(ctx, args),
        Command::Http(args) => http::run(ctx, *args),
        Command::Run(args) => run::run(ctx, *args),
        Command::Scale(args) => scale::run(ctx, *args),
        Command::Disk(args) => disk::run(ctx, *args),
        Command::Sysinfo(args) => sysinfo::run(args),
        Command::Doctor(args) => doctor::run(args),
        Command::Serve(args) => serve::run(args),
        Command::History(args) => history::history(ctx, args),
        Command::Changes(args) => changes::run(ctx, *args),
        Command::Show(args) => history::show(ctx, args),
        Command::Merge(args) => history::merge(ctx, args),
        Command::Export(args) => history::export(ctx, args),
        Command::Import(args) => history::import(ctx, args),
        Command::Rm(args) => history::rm(ctx, args),
        Command::Completions(args) => completions::completions(args),
        Command::Man(args) => completions::man(args),
        Command::Compare(args) => compare::run(ctx, *args),
        Command::Report(args) => report::run(ctx, *args),
        Command::Db(args) => db::run(ctx, args),
        Command::K8s(args) => k8s::run(args),
    }
}

/// This build, as recorded in every run.
pub(crate) fn build() -> DynoBuild {
    DynoBuild {
        version: Some(env!("CARGO_PKG_VERSION").to_owned()),
        git_revision: Some(env!("DYNO_GIT_REVISION").to_owned()),
    }
}

/// The machine, as every run records it.
pub(crate) fn environment() -> Environment {
    dyno_env::capture(build())
}

impl Context {
    /// The result store: the one `--store` (or DYNO_STORE) names, else the
    /// local one ($DYNO_HOME/dyno.db).
    pub(crate) fn open_store(&self) -> Result<Box<dyn Store>> {
        match self.store.as_deref() {
            Some(url) if dyno_store::is_postgres_url(url) => Ok(Box::new(PgStore::open(url)?)),
            Some(path) => Ok(Box::new(SqliteStore::open(std::path::Path::new(path))?)),
            None => open_local(),
        }
    }

    /// The result store, for a subcommand that only reads it: a store file
    /// this user may not write is still read (see
    /// [`SqliteStore::open_to_read`]).
    pub(crate) fn read_store(&self) -> Result<Box<dyn Store>> {
        let path = match self.store.as_deref() {
            Some(url) if dyno_store::is_postgres_url(url) => return self.open_store(),
            Some(path) => std::path::PathBuf::from(path),
            None => dyno_store::default_path()?,
        };
        Ok(Box::new(SqliteStore::open_to_read(&path)?))
    }

    /// Opens the store unless `--no-save` was given. A shared store that
    /// cannot be reached costs the sharing, not the run: the local store is
    /// opened instead, with a warning. A store that refuses (not a dyno
    /// store, or a newer one) stops the subcommand before it measures.
    pub(crate) fn store_for(&self, save: &SaveArgs) -> Result<Option<Box<dyn Store>>> {
        if save.no_save {
            return Ok(None);
        }
        match self.open_store() {
            Ok(store) => Ok(Some(store)),
            Err(e) => match e.downcast_ref::<StoreError>() {
                Some(err) if err.is_unreachable() => {
                    let local = open_local()?;
                    eprintln!(
                        "dyno: warning: {err}\ndyno: the run will be saved in the local store {}",
                        local.location()
                    );
                    Ok(Some(local))
                }
                _ => Err(e),
            },
        }
    }
}

/// The local store, at its default place.
fn open_local() -> Result<Box<dyn Store>> {
    let path = dyno_store::default_path()?;
    Ok(Box::new(SqliteStore::open(&path)?))
}

/// The runs `filter` matches, oldest first, for every subcommand that lists
/// saved runs.
///
/// A stored record that cannot be read does not fail the listing: it is
/// skipped and named on stderr with what to do about it (see
/// [`report_skipped`]), and the rest are returned.
pub(crate) fn list_runs<S: Store + ?Sized>(store: &S, filter: &Filter) -> Result<Vec<Run>> {
    let Listing { runs, skipped } = store.list(filter)?;
    report_skipped(&skipped);
    Ok(runs)
}

/// A run by id (or unique prefix), or, given a group's name, the merged
/// run of its segments: what `show`, `compare` and `report` take.
pub(crate) fn get_run(store: &dyn Store, id_or_group: &str) -> Result<Run> {
    if let Some(run) = merged_group(store, id_or_group)? {
        return Ok(run);
    }
    Ok(store.get(id_or_group)?)
}

/// The merged run of group `group`, if the store holds runs of it.
pub(crate) fn merged_group(store: &dyn Store, group: &str) -> Result<Option<Run>> {
    if crate::cli::parse_group(group).is_err() {
        return Ok(None);
    }
    let filter = Filter {
        tags: vec![crate::settings::segment::group_tag(group)],
        ..Filter::default()
    };
    // A merged run saved with `merge --save` is not one of the segments.
    let runs: Vec<Run> = list_runs(store, &filter)?
        .into_iter()
        .filter(|r| !r.tags.iter().any(|t| t == "merged"))
        .collect();
    if runs.is_empty() {
        return Ok(None);
    }
    let arrived: Vec<Arrived> = store
        .group(group)?
        .arrivals
        .into_iter()
        .map(|a| Arrived {
            index: a.segment.index,
            host: a.host,
        })
        .collect();
    let mut merged = dyno_stats::merge::merge(group, &runs, &arrived)?;
    // What the engine declared it recomputes from the merged metrics.
    match merged.kind {
        dyno_model::Kind::Http => dyno_http::recompute_merged(&mut merged, &runs),
        dyno_model::Kind::Db => dyno_db::run::recompute_merged(&mut merged),
        _ => {}
    }
    Ok(Some(merged))
}

/// Names each skipped record on stderr, one line each.
pub(crate) fn report_skipped(skipped: &[Skipped]) {
    for s in skipped {
        eprintln!("skipped {}", unreadable(s));
    }
}

/// "run ID: why it cannot be read; the way out", for a record
/// [`Store::list`] skipped. A damaged record will never read again, so
/// removing it loses nothing; one from a newer dyno is data, so the way out
/// is an upgrade, not `rm`.
pub(crate) fn unreadable(skipped: &Skipped) -> String {
    let Skipped { id, reason } = skipped;
    match reason {
        SkipReason::Damaged { .. } => {
            format!("run {id}: its record is damaged ({reason}); `dyno rm {id}` removes it")
        }
        SkipReason::Newer { .. } => {
            format!("run {id}: it was saved by a newer dyno ({reason}); upgrade dyno to read it")
        }
        _ => format!("run {id}: its record cannot be read ({reason})"),
    }
}

/// Writes `text` to stdout, so a closed pipe surfaces as an error the caller
/// can treat as success instead of a panic.
pub(crate) fn print(text: &str) -> Result<()> {
    let mut stdout = std::io::stdout().lock();
    stdout.write_all(text.as_bytes())?;
    stdout.flush()?;
    Ok(())
}

/// Prints a progress note on stderr when a person is watching.
pub(crate) fn progress(note: &str) {
    if std::io::stderr().is_terminal() {
        eprintln!("{note}");
    }
}

/// Says that the run was interrupted, and whether its partial record was
/// kept (`--no-save` keeps none).
pub(crate) fn say_interrupted(run: &Run, save: &SaveArgs) {
    if save.no_save {
        eprintln!("dyno: interrupted; the partial run was printed, not saved (--no-save)");
    } else {
        eprintln!("dyno: interrupted; the partial run {} was kept", run.id);
    }
}

/// The end of every measuring subcommand: label the run, print it (a table
/// or its JSON), then save it unless asked not to. A run its store will
/// not take is kept elsewhere ([`dyno_store::keep`]), never lost.
///
/// The store is opened by the caller *before* measuring, so a broken store
/// fails in a second rather than after a long measurement.
pub(crate) fn finish(
    mut run: Run,
    save: &SaveArgs,
    store: Option<Box<dyn Store>>,
    human: impl FnOnce(&Run) -> String,
) -> Result<Run> {
    run.tags.clone_from(&save.tags);
    if save.json {
        print(&(serde_json::to_string_pretty(&run)? + "\n"))?;
    } else {
        print(&human(&run))?;
    }
    let Some(mut store) = store else {
        return Ok(run);
    };
    match dyno_store::keep(&mut *store, &run) {
        Ok(Kept::Saved) if !save.json => eprintln!("saved as {} (dyno show {})", run.id, run.id),
        Ok(Kept::Saved) => {}
        // The shared store went away during the run.
        Ok(Kept::Local { why, local }) => eprintln!(
            "dyno: warning: {why}\ndyno: the run was saved in the local store {local} instead; `dyno show {} --json | dyno --store URL import -` moves it there later",
            run.id
        ),
        Err(not_saved) => {
            let NotSaved {
                why,
                local_why,
                beside,
            } = *not_saved;
            let nor_local =
                local_why.map_or_else(String::new, |e| format!(", nor in the local store ({e})"));
            let how = match &beside {
                Ok(path) => format!(
                    "; it was written to {path} instead: free space (or give another --store), then `dyno import {path}`",
                    path = path.display()
                ),
                Err(why) => format!(
                    "; nor could it be written as a file ({why}): run again with --json to keep the record in the output"
                ),
            };
            anyhow::bail!(
                "the run was measured but could not be saved in {}: {why}{nor_local}{how}",
                store.location()
            );
        }
    }
    Ok(run)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_skipped_record_is_named_with_the_way_out() {
        let id: dyno_model::RunId = "01J00000000000000000000007".parse().unwrap();
        let damaged = Skipped {
            id,
            reason: SkipReason::Damaged {
                detail: "expected value at line 1 column 1".into(),
            },
        };
        assert_eq!(
            unreadable(&damaged),
            "run 01J00000000000000000000007: its record is damaged \
             (expected value at line 1 column 1); `dyno rm 01J00000000000000000000007` removes it"
        );
        let newer = Skipped {
            id,
            reason: SkipReason::Newer {
                found: 9,
                supported: 1,
            },
        };
        let line = unreadable(&newer);
        assert!(
            line.contains("newer dyno") && line.contains("version 9") && line.contains("upgrade"),
            "{line}"
        );
        assert!(!line.contains("dyno rm"), "{line}");
    }
}
