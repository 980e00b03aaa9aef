//! `dyno serve`: the reference HTTP target in the foreground until Ctrl-C.

use anyhow::{Context, Result};

use super::print;
use crate::ExitStatus;
use crate::cli::ServeArgs;

pub fn run(args: ServeArgs) -> Result<ExitStatus> {
    let ServeArgs { addr, threads } = args;
    let threads = threads.map_or_else(dyno_env::available_cpus, |t| t as usize);
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
        print(&format!(
            "dyno serve: listening on http://{local} with {threads} threads\n\
             endpoints: /hello  /blob/<size>  /status/<code>  /delay/<ms>   (Ctrl-C stops)\n"
        ))?;
        let shutdown = async {
            // If the signal handler cannot be installed, serve until killed.
            if tokio::signal::ctrl_c().await.is_err() {
                std::future::pending::<()>().await;
            }
        };
        dyno_serve::serve(listener, shutdown)
            .await
            .context("the server stopped with an error")?;
        eprintln!("dyno serve: stopped");
        anyhow::Ok(())
    })?;
    Ok(ExitStatus::Success)
}
