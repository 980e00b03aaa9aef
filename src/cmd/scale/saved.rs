//! Points from a saved `dyno run` sweep: the run is fetched from the store
//! here; `dyno_scale::saved` picks the curve out of it.

use anyhow::{Context as _, Result, bail};
use dyno_model::{Environment, Kind, Run};
use dyno_scale::Curve;
use dyno_scale::saved::{self, Selection};
use dyno_store::{Filter, Listing, Store};

use crate::cmd::{Context, build};

/// The curve of a saved sweep: RUN_ID, or the latest exec run with --last.
pub(super) fn curve(ctx: &Context, id: Option<String>, selection: &Selection) -> Result<Curve> {
    let store = ctx.open_store()?;
    // No id: --last (the "input" group leaves no other way here).
    let source = match id {
        Some(id) => store
            .get(&id)
            .with_context(|| format!("cannot analyse run '{id}'"))?,
        None => last_exec(&*store)?,
    };
    let mut curve = saved::curve(&source, selection)?;
    // The figures were measured on the source run's machine.
    curve.environment = Environment {
        dyno: build(),
        ..source.environment.clone()
    };
    Ok(curve)
}

/// The most recent run of kind exec.
fn last_exec(store: &dyn Store) -> Result<Run> {
    let filter = Filter {
        kind: Some(Kind::Exec),
        limit: Some(1),
        ..Filter::default()
    };
    let Listing { mut runs, skipped } = store.list(&filter)?;
    if let Some(run) = runs.pop() {
        return Ok(run);
    }
    // --last means the newest sweep; analysing an older one instead would
    // be a quiet substitution, so an unreadable newest one is an error.
    if let Some(newest) = skipped.last() {
        bail!(
            "cannot analyse the most recent `dyno run` (--last): {}. To analyse an older sweep, give its id (`dyno history --kind run` lists them)",
            crate::cmd::unreadable(newest)
        );
    }
    bail!(
        "there is no saved `dyno run` in the store to analyse: time a sweep first, e.g. dyno run -P n 1 8 'cmd --threads {{n}}'"
    )
}
