//! `dyno serve`: the reference HTTP target in the foreground until Ctrl-C,
//! with the bulletin board on the tree database when `--app bbs` asks.

use std::path::PathBuf;
use std::sync::Arc;

use anyhow::{Context, Result, bail};
use dyno_serve::App;

use super::print;
use crate::ExitStatus;
use crate::cli::{ServeApp, ServeArgs};

pub(super) fn run(args: ServeArgs) -> Result<ExitStatus> {
    let ServeArgs {
        addr,
        threads,
        app,
        data,
        tls,
    } = args;
    let threads = threads.map_or_else(dyno_env::available_cpus, |t| t as usize);
    let data = app_data(app, data)?;
    let (app, banner) = match data {
        None => (App::Plain, String::new()),
        Some(data) => {
            let db = dyno_tree::Database::open(&data).with_context(|| {
                format!(
                    "could not open the bulletin board's data in {}",
                    data.display()
                )
            })?;
            if let Some(warning) = db.recovery().and_then(|r| r.warning()) {
                eprintln!("dyno serve: warning: {warning}");
            }
            (
                App::Bbs(Arc::new(db)),
                format!(
                    "bbs: /showBoard  /createBoard  /showBoardMessage  /createBoardMessage  /editMessage\n\
                     bbs: JSON under /api/boards, pages at /bbs; kept in {} (every post fsynced before it is answered)\n",
                    data.display()
                ),
            )
        }
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(threads)
        .thread_name("dyno-serve")
        .enable_all()
        .build()
        .context("could not start the server's runtime")?;
    runtime.block_on(async {
        let listener = tokio::net::TcpListener::bind(addr).await.with_context(|| {
            format!("could not listen on {addr}: pick another address with --addr (port 0 picks a free port)")
        })?;
        let local = listener.local_addr()?;
        let tls = match tls {
            false => None,
            true => Some(
                dyno_serve::Tls::self_signed(&[
                    "localhost".to_owned(),
                    local.ip().to_string(),
                ])
                .context("could not set up TLS")?,
            ),
        };
        let (scheme, note) = match tls {
            None => ("http", ""),
            Some(_) => (
                "https",
                "TLS with a self-signed certificate, ALPN h2 and http/1.1: load it with `dyno http --insecure` (add --h2 for HTTP/2)\n",
            ),
        };
        print(&format!(
            "dyno serve: listening on {scheme}://{local} with {threads} threads\n{note}\
             endpoints: /hello  /blob/<size>  /status/<code>  /delay/<ms>  /cpu/<us>   (Ctrl-C stops)\n\
             {banner}"
        ))?;
        let shutdown = async {
            // If the signal handler cannot be installed, serve until killed.
            if tokio::signal::ctrl_c().await.is_err() {
                std::future::pending::<()>().await;
            }
        };
        match &tls {
            None => dyno_serve::serve_app(listener, shutdown, app).await,
            Some(tls) => dyno_serve::serve_tls(listener, shutdown, app, tls).await,
        }
        .context("the server stopped with an error")?;
        eprintln!("dyno serve: stopped");
        anyhow::Ok(())
    })?;
    Ok(ExitStatus::Success)
}

/// The data directory of the app asked for, if any: `--app` and `--data`
/// come together.
fn app_data(app: Option<ServeApp>, data: Option<PathBuf>) -> Result<Option<PathBuf>> {
    match (app, data) {
        (None, None) => Ok(None),
        (Some(ServeApp::Bbs), Some(data)) => Ok(Some(data)),
        (Some(ServeApp::Bbs), None) => bail!(
            "--app bbs keeps its boards in a directory: give it with --data DIR (e.g. --data ./bbs-data)"
        ),
        (None, Some(data)) => bail!(
            "--data {} is the directory of an app, and no app was asked for: add --app bbs, or leave --data out",
            data.display()
        ),
    }
}
