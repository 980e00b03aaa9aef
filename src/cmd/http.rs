//! `dyno http`: resolve flags into engine settings, start the built-in
//! server when no URL is given, run the engine with a progress line and
//! interrupt handling (Ctrl-C, SIGTERM, SIGHUP), then print, save and judge the run.

use std::io::{IsTerminal, Write};
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::Instant;

use anyhow::{Context, Result, anyhow, bail};
use dyno_http::request::{
    RequestSpec, RequestTemplate, Scheme, parse_header, parse_url, parse_url_list,
};
use dyno_http::{
    ErrorClass, Outcome, Progress, Schedule, Segment, Settings, Stop, TlsSettings, warnings,
};
use dyno_model::{Environment, Kind, Run};
use serde_json::json;

use super::interrupt::{Interrupt, Second};
use super::segment::{self, Plan};
use super::{environment, finish, open_store, store_for};
use crate::ExitStatus;
use crate::cli::{HttpArgs, HttpFormat};

/// Where the load goes: a URL the user gave, or the built-in server.
struct Target {
    /// Keeps the built-in server alive for the run.
    _server: Option<dyno_serve::ServerHandle>,
    url: String,
}

pub fn run(args: HttpArgs) -> Result<ExitStatus> {
    let HttpArgs {
        url,
        requests,
        duration,
        connections,
        threads,
        rate,
        warmup,
        no_keepalive,
        keepalive: _,
        pipeline,
        method,
        h2,
        streams,
        alpn,
        headers,
        body,
        body_file,
        url_file,
        unix_socket,
        timeout,
        connect_timeout,
        insecure,
        expect_status,
        fail_status: _,
        max_error_rate,
        format,
        latency_log,
        seed,
        source_addr,
        segments,
        save,
    } = args;
    let cpus = dyno_env::available_cpus();
    let builtin = url.is_none() && url_file.is_none();
    // -t as given (the default depends on each machine's CPUs).
    let threads_given = threads;
    // Beside the built-in server, the client takes half the CPUs.
    let default_threads = if builtin { (cpus / 2).max(1) } else { cpus };
    // A thread gets whole connections: one beyond -c would sit idle and
    // dilute the client-CPU check. wrk refuses; dyno uses -c threads and
    // says so when -t asked for more.
    let threads = match threads {
        Some(t) if t > connections => {
            eprintln!(
                "dyno: -t {t} is more than -c {connections}: using {connections} worker thread{} (a thread without a connection would sit idle)",
                if connections == 1 { "" } else { "s" }
            );
            connections as usize
        }
        Some(t) => t as usize,
        None => default_threads.min(connections as usize),
    };

    let env = environment();
    let mut plan = Plan::from_args(&segments, env.hostname.as_deref())?;
    // A segment runs its share of the connections and threads (and its
    // record says so: the merged run adds them up again).
    let whole_connections = connections;
    let (connections, threads) = match &plan {
        Some(plan) => {
            if builtin {
                bail!(
                    "--segment needs the URL of the server the segments load together (with no URL, each would load a built-in server of its own)"
                );
            }
            if save.no_save {
                bail!(
                    "--segment meets the other segments in the store and saves its run there for `dyno merge`: drop --no-save"
                );
            }
            plan.share(connections, threads, requests)?
        }
        None => (connections, threads),
    };

    let body = match (body, body_file) {
        (Some(b), _) => Some(b.into_bytes()),
        (None, Some(path)) => Some(
            std::fs::read(&path)
                .with_context(|| format!("could not read the body file '{}'", path.display()))?,
        ),
        (None, None) => None,
    };
    let headers = headers
        .iter()
        .map(|h| parse_header(h))
        .collect::<Result<Vec<_>, _>>()?;
    // h2load's `-m N` is streams per connection; ab's `-m` is the method.
    let h2_possible = h2 || alpn.iter().any(|p| p == "h2");
    let (method, streams) = match (h2_possible, method.parse::<u64>(), streams) {
        (true, Ok(0), _) => {
            bail!("-m 0: an HTTP/2 connection needs at least 1 stream (-m 1 or more)")
        }
        (true, Ok(n), None) => (
            "GET".to_owned(),
            u32::try_from(n).map_err(|_| anyhow!("-m {n}: too many streams"))?,
        ),
        (true, Ok(n), Some(_)) => bail!(
            "-m {n} and --streams both give the streams per connection: keep one (give the method as --method NAME)"
        ),
        (false, Ok(n), _) => bail!(
            "-m {n} is not a method: for {n} HTTP/2 streams per connection (h2load's -m), add --h2"
        ),
        (_, Err(_), s) => (method, s.unwrap_or(1)),
    };
    let method = standard_method(method);

    let target = if builtin {
        let target = builtin_server((cpus - threads.min(cpus)).max(1))?;
        eprintln!(
            "no URL given: loading dyno's built-in server at {}",
            target.url
        );
        target
    } else {
        Target {
            _server: None,
            url: url.clone().unwrap_or_default(),
        }
    };
    let (http_target, paths) = match &url_file {
        Some(path) => {
            let text = std::fs::read_to_string(path)
                .with_context(|| format!("could not read the URL file '{}'", path.display()))?;
            parse_url_list(&text)
                .with_context(|| format!("in the URL file '{}'", path.display()))?
        }
        None => {
            let (t, p) = parse_url(&target.url)?;
            (t, vec![p])
        }
    };
    let tls = http_target.scheme == Scheme::Https;
    if tls && unix_socket.is_some() {
        bail!(
            "TLS over a Unix socket is not supported: give the URL as http:// with --unix-socket"
        );
    }
    if insecure && !tls {
        bail!(
            "--insecure only skips the certificate check of https:// URLs, and this URL is http://: drop --insecure"
        );
    }
    let keep_alive = !no_keepalive;
    let templates = paths
        .iter()
        .map(|path| {
            RequestTemplate::new(
                &http_target,
                &RequestSpec {
                    method: method.clone(),
                    path: path.clone(),
                    headers: headers.clone(),
                    body: body.clone(),
                    keep_alive,
                },
            )
        })
        .collect::<Result<Vec<_>, _>>()?;
    let stop = match (requests, duration) {
        (Some(n), _) => Stop::Requests(n),
        (None, Some(d)) => Stop::Duration(d),
        (None, None) => Stop::Duration(std::time::Duration::from_secs(10)),
    };
    let seed = seed.unwrap_or_else(|| fastrand::u64(..));
    let settings = Settings {
        target: http_target,
        requests: templates,
        schedule: Schedule {
            stop,
            rate_per_sec: rate,
            warmup,
        },
        connections: connections as usize,
        threads,
        pipeline: pipeline as usize,
        http2: h2,
        streams: streams as usize,
        alpn: alpn.clone(),
        keep_alive,
        timeout,
        connect_timeout,
        expect_status,
        seed,
        unix_socket: unix_socket.clone(),
        tls: TlsSettings { insecure },
        source_addr,
        segment: plan.as_ref().map_or(Segment::WHOLE, |p| p.segment),
    };

    dyno_http::engine::validate(&settings)?;
    check_open_files(&env, &settings, builtin)?;
    if let Some(plan) = &mut plan {
        // What every segment must share, published at the barrier.
        let mut s = segment::Settings::new("http");
        s.put("url", &target.url)
            .opt("unix_socket", unix_socket.as_ref().map(|p| p.display()))
            .put("method", &method)
            .put("model", if rate.is_some() { "open" } else { "closed" })
            .opt("rate", rate)
            .opt("requests", requests)
            .opt("duration", duration.map(|d| format!("{d:?}")))
            .put("warmup", format!("{warmup:?}"))
            .put("connections", whole_connections)
            .opt("threads", threads_given)
            .put("pipeline", pipeline)
            .put("http2", h2)
            .put("streams", streams)
            .put("alpn", alpn.join(","))
            .put("keep_alive", keep_alive)
            .put("insecure", insecure)
            .put("timeout", format!("{timeout:?}"))
            .put("connect_timeout", format!("{connect_timeout:?}"))
            .put("expect_status", expect_status.to_string())
            .put("max_error_rate", max_error_rate)
            .hash("headers", format!("{headers:?}").as_bytes())
            .hash("body", body.as_deref().unwrap_or_default());
        if url_file.is_some() {
            s.hash("url_file", format!("{paths:?}").as_bytes());
        }
        plan.publish(s);
    }
    // A segment's store is where the segments meet: falling back to the
    // local one would leave it waiting alone.
    let mut store = match &plan {
        Some(_) => Some(open_store()?),
        None => store_for(&save)?,
    };
    // Opened before measuring, so a bad path costs no run; never overwritten.
    let mut log_file = latency_log
        .as_ref()
        .map(|path| create_log(path))
        .transpose()?;
    // What the run loads: the URL, or a URL file's first URL and how many
    // more it holds (and from which file), never an empty URL.
    let shown_url = match &url_file {
        Some(path) => {
            let name = path.file_name().map_or_else(
                || path.display().to_string(),
                |n| n.to_string_lossy().into_owned(),
            );
            let first = format!("{}{}", settings.target, paths[0]);
            match paths.len() - 1 {
                0 => format!("{first} (from {name})"),
                more => format!("{first} +{more} more (from {name})"),
            }
        }
        None => target.url.clone(),
    };
    // A segment is described as the whole run it is part of.
    let mut run = Run::new(
        Kind::Http,
        description(&settings, &shown_url, whole_connections),
    );
    run.environment = env;
    run.settings = json!({
        "url": match &url_file {
            Some(_) => format!("{}{}", settings.target, paths[0]),
            None => target.url.clone(),
        },
        "urls": paths.len(),
        "url_file": url_file.as_ref().map(|p| p.display().to_string()),
        "unix_socket": unix_socket.as_ref().map(|p| p.display().to_string()),
        "builtin_server": builtin,
        "method": method,
        "model": if rate.is_some() { "open" } else { "closed" },
        "requests": requests,
        "duration_ns": match stop { Stop::Duration(d) => Some(d.as_nanos() as u64), Stop::Requests(_) => None },
        "rate_per_sec": rate,
        "warmup_ns": warmup.as_nanos() as u64,
        "connections": connections,
        "threads": threads,
        "pipeline": pipeline,
        "http2": h2,
        "streams": streams,
        "alpn": alpn,
        "keep_alive": keep_alive,
        "tls": tls,
        "insecure": insecure,
        "timeout_ns": timeout.as_nanos() as u64,
        "connect_timeout_ns": connect_timeout.as_nanos() as u64,
        "expect_status": expect_status.to_string(),
        "max_error_rate_percent": max_error_rate,
        "seed": seed,
        "headers": headers.len(),
        "body_bytes": body.as_ref().map_or(0, Vec::len),
    });
    run.warnings.extend(dyno_env::preflight(&run.environment));
    run.warnings.extend(
        warnings::preflight(&run.environment, &settings)
            .into_iter()
            .chain(warnings::missing_content_type(body.is_some(), &headers))
            .map(Into::into),
    );

    // An interrupt (Ctrl-C, SIGTERM, SIGHUP) ends the run early; what was
    // measured is still printed and saved. A second one exits at once.
    let interrupt = Interrupt::install(Second::Exits)?;

    let started = Instant::now();
    let tty = std::io::stderr().is_terminal();
    let mut met = None;
    let outcome = dyno_http::run_gated(
        settings.clone(),
        interrupt.flag(),
        |p| {
            if tty {
                progress_line(&p);
            }
        },
        || segment::gate(plan.as_ref(), store.as_deref_mut(), &mut met),
    )
    .map_err(|e| match e {
        dyno_http::EngineError::Gate(why) => anyhow!("{why}; nothing was run"),
        e => e.into(),
    })?;
    if tty {
        eprint!("\r\x1b[2K");
    }
    if outcome.interrupted && outcome.stats.requests() == 0 {
        // Stopped in the warm-up (or before any answer): an empty run
        // would only clutter the store and skew comparisons.
        if let (Some(out), Some(path)) = (log_file.take(), &latency_log) {
            drop(out);
            let _ = std::fs::remove_file(path);
        }
        eprintln!(
            "dyno: interrupted before any request was measured{}; nothing was saved",
            if outcome.elapsed.is_zero() && !warmup.is_zero() {
                " (still in the warm-up)"
            } else {
                ""
            }
        );
        return Ok(ExitStatus::Interrupted);
    }
    run.duration_ns = started.elapsed().as_nanos() as u64;
    if let Some(session) = &outcome.tls_session {
        // What the server agreed to, as ab shows it: part of what was
        // measured (TLS 1.2 and 1.3, or two ciphers, cost differently).
        run.settings["tls_session"] = json!({
            "protocol": session.protocol,
            "cipher": session.cipher,
            "key_exchange": session.key_exchange,
            "alpn": session.alpn,
        });
    }
    if let Some(server) = &outcome.server {
        // The server's own name for itself (ab's "Server Software").
        run.settings["server_software"] = json!(server);
    }
    run.metrics = outcome.metrics(&settings);
    let mut save = save;
    if let (Some(plan), Some(met)) = (&plan, &met) {
        plan.record(&mut run, met, outcome.started_at);
        save.tags.push(plan.tag());
    }
    // Nothing listens there: the run stopped at once, and is shown but not
    // saved (it measured no server).
    let store = if outcome.refused
        || outcome.silent
        || (outcome.protocol_failure.is_some() && outcome.stats.responses == 0)
    {
        None
    } else {
        store
    };
    run.headline = Some("requests_per_sec".into());
    run.warnings.extend(
        warnings::judge(&outcome, &settings)
            .into_iter()
            .map(dyno_model::Warning::from),
    );

    if let (Some(out), Some(path)) = (&mut log_file, &latency_log) {
        // StartTime is when the run's clock started (a segment's common
        // start, after the barrier), not when the process started.
        dyno_report::write_latency_log(out, &run, outcome.started_at, &outcome_timeline(&outcome))
            .with_context(|| format!("could not write the latency log '{}'", path.display()))?;
    }
    let run = finish(run, &save, store, |run| match format {
        HttpFormat::Human => dyno_report::http_report(run),
        HttpFormat::Ab => dyno_report::ab_report(run),
    })?;
    if let Some(why) = &outcome.protocol_failure
        && outcome.stats.responses == 0
    {
        bail!("--h2: {why}; nothing was saved");
    }
    if outcome.refused {
        eprintln!(
            "dyno: every connection to {} was refused ({} attempts, none accepted), so the run stopped: is the server up and listening there? Nothing was saved",
            outcome.endpoint,
            outcome.stats.errors_of(ErrorClass::ConnectRefused),
        );
        return Ok(ExitStatus::ChecksFailed);
    }
    if outcome.silent {
        eprintln!(
            "dyno: {} accepted connections but answered none of the first {} requests within --timeout {}, so the run stopped: is the server stuck, or does it need a longer --timeout? Nothing was saved",
            outcome.endpoint,
            outcome.stats.errors_of(ErrorClass::ReadTimeout),
            segment::humantime(timeout),
        );
        return Ok(ExitStatus::ChecksFailed);
    }
    if outcome.interrupted {
        // One exit code for every interrupted run, checks or not: a script
        // must be able to tell a partial run from a complete one.
        eprintln!("dyno: interrupted; the partial run {} was kept", run.id);
        return Ok(ExitStatus::Interrupted);
    }
    let requests = outcome.stats.requests().max(1);
    let error_rate = 100.0 * outcome.stats.total_errors() as f64 / requests as f64;
    if error_rate > max_error_rate {
        eprintln!(
            "dyno: {:.2}% of requests failed, above --max-error-rate {max_error_rate}%",
            error_rate
        );
        return Ok(ExitStatus::ChecksFailed);
    }
    Ok(ExitStatus::Success)
}

/// Creates the latency log, never over an existing file; the error says
/// which of the usual causes it was.
fn create_log(path: &std::path::Path) -> Result<std::io::BufWriter<std::fs::File>> {
    use std::io::ErrorKind;
    let file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(path);
    let e = match file {
        Ok(f) => return Ok(std::io::BufWriter::new(f)),
        Err(e) => e,
    };
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.display().to_string(),
        _ => ".".into(),
    };
    let why = match e.kind() {
        ErrorKind::AlreadyExists => {
            "it already exists, and an existing file is never overwritten: remove it or give another name".to_owned()
        }
        ErrorKind::NotFound => format!("the directory '{dir}' does not exist: create it first"),
        ErrorKind::PermissionDenied => format!("no permission to write in '{dir}'"),
        _ => e.to_string(),
    };
    bail!(
        "could not create the latency log '{}': {why}",
        path.display()
    )
}

/// Methods are case-sensitive, and servers answer `post` with 400 or 405:
/// the standard ones (RFC 9110 and PATCH) go in upper case however they
/// were typed; any other method is sent exactly as given.
fn standard_method(method: String) -> String {
    const STANDARD: [&str; 9] = [
        "GET", "HEAD", "POST", "PUT", "DELETE", "CONNECT", "OPTIONS", "TRACE", "PATCH",
    ];
    match STANDARD.iter().find(|m| m.eq_ignore_ascii_case(&method)) {
        Some(m) => (*m).to_owned(),
        None => method,
    }
}

/// Starts the built-in server on a free loopback port.
fn builtin_server(threads: usize) -> Result<Target> {
    let listener = std::net::TcpListener::bind("127.0.0.1:0")
        .context("could not open a loopback port for the built-in server")?;
    let server = dyno_serve::spawn(listener, threads)?;
    let url = format!("http://{}/hello", server.local_addr());
    Ok(Target {
        _server: Some(server),
        url,
    })
}

/// `dyno quick`'s HTTP line: dyno's own client against the built-in server
/// on loopback, half the CPUs each, closed model, keep-alive.
pub fn quick_load(
    duration: std::time::Duration,
    connections: usize,
    interrupted: Arc<AtomicBool>,
) -> Result<(Settings, Outcome)> {
    let cpus = dyno_env::available_cpus();
    let threads = (cpus / 2).max(1);
    let target = builtin_server((cpus - threads).max(1))?;
    let (http_target, path) = parse_url(&target.url)?;
    let template = RequestTemplate::new(
        &http_target,
        &RequestSpec {
            path,
            ..RequestSpec::default()
        },
    )?;
    let settings = Settings {
        target: http_target,
        requests: vec![template],
        schedule: Schedule {
            stop: Stop::Duration(duration),
            rate_per_sec: None,
            warmup: std::time::Duration::from_millis(500),
        },
        connections,
        threads,
        pipeline: 1,
        http2: false,
        streams: 1,
        alpn: Vec::new(),
        keep_alive: true,
        timeout: std::time::Duration::from_secs(10),
        connect_timeout: std::time::Duration::from_secs(5),
        expect_status: dyno_http::StatusSet::default(),
        seed: 0,
        unix_socket: None,
        tls: TlsSettings::default(),
        source_addr: None,
        segment: dyno_http::Segment::WHOLE,
    };
    let outcome = dyno_http::run(settings.clone(), interrupted, |_| {})?;
    Ok((settings, outcome))
}

fn outcome_timeline(outcome: &Outcome) -> Vec<(u64, &hdrhistogram::Histogram<u64>)> {
    outcome
        .timeline
        .iter()
        .map(|i| (i.index, &i.latency))
        .collect()
}

fn description(settings: &Settings, url: &str, connections: u32) -> String {
    let model = match settings.schedule.rate_per_sec {
        Some(r) => format!("{r} req/s"),
        None => format!("c={connections}"),
    };
    let method = settings.requests[0].method();
    format!("{method} {url} {model}")
}

fn progress_line(p: &Progress) {
    let phase = if p.warmup { " (warm-up)" } else { "" };
    let mut err = std::io::stderr().lock();
    let _ = write!(
        err,
        "\r\x1b[2K{:>6.1}s{phase}  {} responses  {} req/s  {} errors",
        p.elapsed.as_secs_f64(),
        p.responses,
        p.last_second,
        p.errors
    );
    let _ = err.flush();
}

/// Descriptors dyno needs besides one per connection: its event loops,
/// timers, the store, stdio, the log file.
const OPEN_FILES_MARGIN: u64 = 64;

/// Refuses a run whose connections cannot all be open at once: past the
/// open-file limit every further connect fails (EMFILE) for the whole run,
/// which measures nothing. The built-in server needs a descriptor for its
/// end of each connection too.
fn check_open_files(env: &Environment, settings: &Settings, builtin: bool) -> Result<()> {
    let sockets = settings.connections as u64 * if builtin { 2 } else { 1 };
    let need = sockets + OPEN_FILES_MARGIN;
    if let Some(soft) = env.limits.open_files_soft
        && soft < need
    {
        let hard = env
            .limits
            .open_files_hard
            .map_or(String::new(), |h| format!(" (hard limit {h})"));
        bail!(
            "{} connections need about {need} open files{}, but the open-file limit is {soft}{hard}: raise it with `ulimit -n {need}`, or lower -c",
            settings.connections,
            if builtin {
                " (the built-in server holds the other end of each)"
            } else {
                ""
            },
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn standard_methods_go_in_upper_case() {
        assert_eq!(standard_method("post".into()), "POST");
        assert_eq!(standard_method("Patch".into()), "PATCH");
        assert_eq!(standard_method("purge".into()), "purge");
    }
}
