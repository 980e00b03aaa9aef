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
        h3,
    } = args;
    // HTTP/3 runs over TLS 1.3 only; the TCP side offers the same
    // certificate, so that a client can start there and follow alt-svc.
    let tls = tls || h3;
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
    let listen_hint = || {
        format!(
            "could not listen on {addr}: pick another address with --addr (port 0 picks a free port)"
        )
    };
    let (listener, udp) = match h3 {
        false => (
            std::net::TcpListener::bind(addr).with_context(listen_hint)?,
            None,
        ),
        true => {
            let (tcp, udp) = dyno_serve::bind_tcp_udp(addr).with_context(listen_hint)?;
            (tcp, Some(udp))
        }
    };
    listener
        .set_nonblocking(true)
        .context("could not make the listening socket non-blocking")?;
    runtime.block_on(async {
        let listener = tokio::net::TcpListener::from_std(listener)
            .context("could not hand the listening socket to the runtime")?;
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
        let (scheme, also, note) = match (&tls, &udp) {
            (None, _) => ("http", String::new(), ""),
            (Some(_), None) => (
                "https",
                String::new(),
                "TLS with a self-signed certificate, ALPN h2 and http/1.1: load it with `dyno http --insecure` (add --h2 for HTTP/2)\n",
            ),
            (Some(_), Some(_)) => (
                "https",
                format!(", and HTTP/3 on udp {local}"),
                "TLS with a self-signed certificate, ALPN h2 and http/1.1 over TCP, h3 (TLS 1.3) over QUIC: load it with `dyno http --insecure` (add --h2 for HTTP/2)\n",
            ),
        };
        if let Some(udp) = &udp {
            quic_buffer_warning(udp);
        }
        print(&format!(
            "dyno serve: listening on {scheme}://{local} with {threads} threads{also}\n{note}\
             endpoints: /hello  /blob/<size>  /status/<code>  /delay/<ms>  /cpu/<us>   (Ctrl-C stops)\n\
             {banner}"
        ))?;
        let shutdown = async {
            // If the signal handler cannot be installed, serve until killed.
            if tokio::signal::ctrl_c().await.is_err() {
                std::future::pending::<()>().await;
            }
        };
        match (&tls, udp) {
            (None, _) => dyno_serve::serve_app(listener, shutdown, app).await,
            (Some(tls), None) => dyno_serve::serve_tls(listener, shutdown, app, tls).await,
            (Some(tls), Some(udp)) => dyno_serve::serve_h3(listener, udp, shutdown, app, tls).await,
        }
        .context("the server stopped with an error")?;
        eprintln!("dyno serve: stopped");
        anyhow::Ok(())
    })?;
    Ok(ExitStatus::Success)
}

/// Says on stderr when the kernel granted the QUIC socket less buffer than
/// the server asked for: datagrams past a full receive buffer are dropped
/// and QUIC slows down for them, which would pass for the server's limit.
fn quic_buffer_warning(udp: &std::net::UdpSocket) {
    let wanted = dyno_serve::QUIC_SOCKET_BUFFER;
    match dyno_serve::grow_udp_buffers(udp) {
        Ok(granted) if granted.recv < wanted || granted.send < wanted => eprintln!(
            "dyno serve: warning: the kernel granted UDP buffers of {} KiB (receive) and {} KiB (send) of the {} KiB asked for, \
             so HTTP/3 may drop packets under load: raise the ceilings with \
             `sysctl -w net.core.rmem_max=16777216 net.core.wmem_max=16777216` (`dyno doctor http` checks them)",
            granted.recv >> 10,
            granted.send >> 10,
            wanted >> 10
        ),
        Ok(_) => {}
        Err(err) => {
            eprintln!("dyno serve: warning: could not size the UDP socket's buffers: {err}")
        }
    }
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
