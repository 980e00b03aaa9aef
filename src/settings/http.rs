//! `dyno http`'s flags resolved into the HTTP engine's settings.

use anyhow::{Context, Result, anyhow, bail};
use dyno_http::request::{
    RequestSpec, RequestTemplate, Scheme, parse_header, parse_url, parse_url_list,
};
use dyno_http::{Asked, Schedule, Segment, Settings, Stop, TlsSettings};
use dyno_model::Environment;

use crate::cli::{HttpArgs, HttpFormat, SaveArgs};
use crate::settings::segment::{self, Plan};

/// `dyno http` resolved: the engine's settings, and what the binary needs
/// around the run.
pub(crate) struct HttpPlan {
    /// What the engine runs.
    pub engine: Settings,
    /// What the run's record needs beyond the engine's settings.
    pub asked: Asked,
    /// The built-in server, kept alive for the run (no URL given).
    pub server: Option<dyno_serve::ServerHandle>,
    /// This process's segment of a split run, published at the barrier.
    pub segments: Option<Plan>,
    /// `--latency-log`.
    pub latency_log: Option<std::path::PathBuf>,
    /// One run, or (`--find-max`) a capacity search.
    pub mode: super::Mode,
    /// `--watch-*`: what of the server is watched during the run.
    pub watch: Option<super::Watch>,
    pub format: HttpFormat,
    pub save: SaveArgs,
}

/// Resolves `dyno http`'s flags into an [`HttpPlan`]: starts the built-in
/// server when no URL is given, checks the settings the engine and the
/// machine would refuse, and publishes a segment's shared settings.
pub(crate) fn http(args: HttpArgs, env: &Environment) -> Result<HttpPlan> {
    let HttpArgs {
        url,
        requests,
        duration,
        connections,
        threads,
        rate,
        rate_plan,
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
        scenario,
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
        find_max,
        watch,
        segments,
        save,
    } = args;
    // -c FROM..TO: the closed-model sweep of a capacity search, whose
    // steps take up to TO connections.
    let sweep_range = connections
        .range
        .then_some((connections.from, connections.to));
    let connections = connections.to;
    let cpus = dyno_env::available_cpus();
    let builtin = url.is_none() && url_file.is_none() && scenario.is_none();
    // -t as given (the default depends on each machine's CPUs).
    let threads_given = threads;
    let threads = worker_threads(threads, connections, builtin, cpus);

    super::capacity::rate_plan(
        rate_plan.as_ref(),
        &[
            ("--rate", rate.is_some()),
            ("-n/--requests", requests.is_some()),
            ("-d/--duration", duration.is_some()),
            ("--warmup", warmup.is_some_and(|w| !w.is_zero())),
            ("--find-max", find_max.find_max),
            ("--pipeline", pipeline > 1),
        ],
    )?;
    let mut plan = Plan::from_args(&segments, env.hostname.as_deref())?;
    let mode = super::capacity::mode(
        find_max,
        (sweep_range, "connections"),
        warmup,
        max_error_rate,
        &[
            ("--rate", rate.is_some()),
            ("-n/--requests", requests.is_some()),
            ("-d/--duration", duration.is_some()),
            ("--latency-log", latency_log.is_some()),
            ("--pipeline", pipeline > 1),
        ],
    )?;
    // A run's warm-up: none unless given.
    let warmup = warmup.unwrap_or_default();
    let watch = super::watch::watch(watch, None, url.as_deref().and_then(url_port))?;
    if matches!(mode, super::Mode::FindMax(_)) && format == HttpFormat::Ab {
        bail!(
            "--format ab prints one run; a capacity search is many steps: drop --format ab (--json prints the whole search)"
        );
    }
    // A segment runs its share of the connections and threads (and its
    // record says so: the merged run adds them up again).
    let whole_connections = connections;
    let (connections, threads) = match &plan {
        Some(plan) => segment_share(plan, builtin, save.no_save, connections, threads, requests)?,
        None => (connections, threads),
    };

    let body = request_body(body, body_file)?;
    let headers = headers
        .iter()
        .map(|h| parse_header(h))
        .collect::<Result<Vec<_>, _>>()?;
    let h2_possible = h2 || alpn.iter().any(|p| p == "h2");
    let (method, streams) = method_and_streams(method, h2_possible, streams)?;

    let (server, target_url) = if builtin {
        let (server, url) = builtin_server((cpus - threads.min(cpus)).max(1))?;
        eprintln!("no URL given: loading dyno's built-in server at {url}");
        (Some(server), url)
    } else {
        (None, url.clone().unwrap_or_default())
    };
    let scenario = match &scenario {
        Some(path) => Some(load_scenario(
            path,
            url.as_deref(),
            format,
            &method,
            pipeline,
            &headers,
        )?),
        None => None,
    };
    let (http_target, paths) = targets(url_file.as_deref(), scenario.as_deref(), &target_url)?;
    check_tls(
        http_target.scheme == Scheme::Https,
        unix_socket.is_some(),
        insecure,
    )?;
    let keep_alive = !no_keepalive;
    let spec = RequestSpec {
        method: method.clone(),
        path: String::new(),
        headers: headers.clone(),
        body: body.clone(),
        keep_alive,
    };
    let templates = templates(&http_target, &paths, &spec)?;
    let (stop, rate) = stop_and_rate(requests, duration, rate_plan.as_ref(), rate);
    let seed = seed.unwrap_or_else(|| fastrand::u64(..));
    // What the run loads: the URL, or a URL file's first URL.
    let shown_url = match (&url_file, &scenario) {
        (_, Some(s)) => s.url.clone(),
        (Some(_), None) => format!("{}{}", http_target, paths[0]),
        (None, None) => target_url.clone(),
    };
    let settings = Settings {
        target: http_target,
        requests: templates,
        schedule: Schedule {
            stop,
            rate_per_sec: rate,
            warmup,
            plan: rate_plan,
            grace: std::time::Duration::ZERO,
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
        scenario,
    };

    dyno_http::engine::validate(&settings)?;
    check_open_files(env, &settings, builtin)?;
    if let Some(plan) = &mut plan {
        let mut s = fingerprint(
            &settings,
            &Given {
                url: &target_url,
                method: &method,
                requests,
                duration,
                connections: whole_connections,
                threads: threads_given,
                max_error_rate,
                headers: &headers,
                body: body.as_deref(),
                url_file: url_file.is_some(),
                paths: &paths,
            },
        );
        super::capacity::segmented(plan, &mode, "connections", &mut s)?;
        plan.publish(s);
    }
    Ok(HttpPlan {
        engine: settings,
        asked: Asked {
            url: shown_url,
            url_file,
            builtin_server: builtin,
            connections: whole_connections,
            max_error_rate_percent: max_error_rate,
            headers,
            body_bytes: body.as_ref().map(|b| b.len() as u64),
        },
        server,
        segments: plan,
        latency_log,
        mode,
        watch,
        format,
        save,
    })
}

/// Worker threads: `-t` as given, else one per CPU (half of them beside
/// the built-in server, which takes the others). A thread gets whole
/// connections: one beyond `-c` would sit idle and dilute the client-CPU
/// check. wrk refuses; dyno uses `-c` threads and says so when `-t` asked
/// for more.
fn worker_threads(given: Option<u32>, connections: u32, builtin: bool, cpus: usize) -> usize {
    let default = if builtin { (cpus / 2).max(1) } else { cpus };
    match given {
        Some(t) if t > connections => {
            eprintln!(
                "dyno: -t {t} is more than -c {connections}: using {connections} worker thread{} (a thread without a connection would sit idle)",
                if connections == 1 { "" } else { "s" }
            );
            connections as usize
        }
        Some(t) => t as usize,
        None => default.min(connections as usize),
    }
}

/// A segment's share of the connections and threads, once what a
/// segment cannot do is refused.
fn segment_share(
    plan: &Plan,
    builtin: bool,
    no_save: bool,
    connections: u32,
    threads: usize,
    requests: Option<u64>,
) -> Result<(u32, usize)> {
    if builtin {
        bail!(
            "--segment needs the URL of the server the segments load together (with no URL, each would load a built-in server of its own)"
        );
    }
    if no_save {
        bail!(
            "--segment meets the other segments in the store and saves its run there for `dyno merge`: drop --no-save"
        );
    }
    plan.share(connections, threads, requests)
}

/// One request template a path, the rest of the request as `spec` has it.
fn templates(
    target: &dyno_http::request::Target,
    paths: &[String],
    spec: &RequestSpec,
) -> Result<Vec<RequestTemplate>> {
    let mut templates = Vec::with_capacity(paths.len());
    for path in paths {
        let spec = RequestSpec {
            path: path.clone(),
            ..spec.clone()
        };
        templates.push(RequestTemplate::new(target, &spec)?);
    }
    Ok(templates)
}

/// The request body: `--body`'s text, else `--body-file`'s bytes.
fn request_body(text: Option<String>, file: Option<std::path::PathBuf>) -> Result<Option<Vec<u8>>> {
    Ok(match (text, file) {
        (Some(b), _) => Some(b.into_bytes()),
        (None, Some(path)) => Some(
            std::fs::read(&path)
                .with_context(|| format!("could not read the body file '{}'", path.display()))?,
        ),
        (None, None) => None,
    })
}

/// `--scenario`'s file loaded, once the flags a scenario has its own
/// answer to are refused.
fn load_scenario(
    path: &std::path::Path,
    url: Option<&str>,
    format: HttpFormat,
    method: &str,
    pipeline: u32,
    headers: &[(String, String)],
) -> Result<std::sync::Arc<dyno_http::scenario::Scenario>> {
    for (flag, given, why) in [
        (
            "--format ab",
            format == HttpFormat::Ab,
            "ab's report is of one URL",
        ),
        (
            "--method",
            method != "GET",
            "each step gives its own method",
        ),
        (
            "--pipeline",
            pipeline > 1,
            "a user's steps wait for each other's answers",
        ),
        (
            "-H",
            !headers.is_empty(),
            "a scenario's headers are in its file, `headers = [\"Name: value\"]` at the top for every step or in a step for that step",
        ),
    ] {
        if given {
            bail!("{flag} does not work with --scenario: {why}; drop {flag}");
        }
    }
    let s = dyno_http::scenario::Scenario::load(path, url)?;
    Ok(std::sync::Arc::new(s))
}

/// The server and the paths a run loads: a scenario's, a URL file's, or
/// the URL's.
fn targets(
    url_file: Option<&std::path::Path>,
    scenario: Option<&dyno_http::scenario::Scenario>,
    url: &str,
) -> Result<(dyno_http::request::Target, Vec<String>)> {
    Ok(match (url_file, scenario) {
        (_, Some(s)) => (s.target.clone(), Vec::new()),
        (Some(path), None) => {
            let text = std::fs::read_to_string(path)
                .with_context(|| format!("could not read the URL file '{}'", path.display()))?;
            parse_url_list(&text)
                .with_context(|| format!("in the URL file '{}'", path.display()))?
        }
        (None, None) => {
            let (t, p) = parse_url(url)?;
            (t, vec![p])
        }
    })
}

/// TLS's flags against the URL's scheme.
fn check_tls(tls: bool, unix_socket: bool, insecure: bool) -> Result<()> {
    if tls && unix_socket {
        bail!(
            "TLS over a Unix socket is not supported: give the URL as http:// with --unix-socket"
        );
    }
    if insecure && !tls {
        bail!(
            "--insecure only skips the certificate check of https:// URLs, and this URL is http://: drop --insecure"
        );
    }
    Ok(())
}

/// When the run stops (a plan's length, `-n`, `-d`, else 10 s) and the
/// rate it asks for as a whole (a plan's mean rate, else `--rate`).
fn stop_and_rate(
    requests: Option<u64>,
    duration: Option<std::time::Duration>,
    plan: Option<&dyno_load::plan::RatePlan>,
    rate: Option<f64>,
) -> (Stop, Option<f64>) {
    let stop = match (requests, duration, plan) {
        (_, _, Some(p)) => Stop::Duration(p.duration()),
        (Some(n), _, _) => Stop::Requests(n),
        (None, Some(d), _) => Stop::Duration(d),
        (None, None, None) => Stop::Duration(std::time::Duration::from_secs(10)),
    };
    let rate = match plan {
        Some(p) => Some(p.total() / p.duration().as_secs_f64()),
        None => rate,
    };
    (stop, rate)
}

/// What a segment's fingerprint needs besides the engine's settings: the
/// flags as given, before a segment took its share.
struct Given<'a> {
    url: &'a str,
    method: &'a str,
    requests: Option<u64>,
    duration: Option<std::time::Duration>,
    connections: u32,
    threads: Option<u32>,
    max_error_rate: f64,
    headers: &'a [(String, String)],
    body: Option<&'a [u8]>,
    url_file: bool,
    paths: &'a [String],
}

/// What every segment of a split run must share, published at the
/// barrier: the others refuse to run beside a segment whose differ.
fn fingerprint(settings: &Settings, given: &Given) -> segment::Settings {
    let schedule = &settings.schedule;
    let rate = schedule.rate_per_sec;
    let mut s = segment::Settings::new("http");
    s.put("url", given.url)
        .opt(
            "unix_socket",
            settings.unix_socket.as_ref().map(|p| p.display()),
        )
        .put("method", given.method)
        .put("model", if rate.is_some() { "open" } else { "closed" })
        .opt("rate", rate)
        .opt("rate_plan", schedule.plan.as_ref().map(ToString::to_string))
        .opt("requests", given.requests)
        .opt("duration", given.duration.map(|d| format!("{d:?}")))
        .put("warmup", format!("{:?}", schedule.warmup))
        .put("connections", given.connections)
        .opt("threads", given.threads)
        .put("pipeline", settings.pipeline)
        .put("http2", settings.http2)
        .put("streams", settings.streams)
        .put("alpn", settings.alpn.join(","))
        .put("keep_alive", settings.keep_alive)
        .put("insecure", settings.tls.insecure)
        .put("timeout", format!("{:?}", settings.timeout))
        .put("connect_timeout", format!("{:?}", settings.connect_timeout))
        .put("expect_status", settings.expect_status.to_string())
        .put("max_error_rate", given.max_error_rate)
        .hash("headers", format!("{:?}", given.headers).as_bytes())
        .hash("body", given.body.unwrap_or_default());
    if let Some(scenario) = &settings.scenario {
        // Every segment runs the same flows, with the same data.
        let mut bytes = std::fs::read(&scenario.path).unwrap_or_default();
        if let Some(data) = &scenario.data {
            bytes.extend(std::fs::read(&data.path).unwrap_or_default());
        }
        s.hash("scenario", &bytes);
    }
    if given.url_file {
        s.hash("url_file", format!("{:?}", given.paths).as_bytes());
    }
    s
}

/// `-m`/`--method`, given up to twice: h2load's `-m N` is streams per
/// connection, ab's `-m` is the method, and under `--h2` both may stand
/// together (`--method POST -m 4`). The method (GET when none), and the
/// streams (`--streams`, else `-m N`, else 1).
fn method_and_streams(given: Vec<String>, h2: bool, streams: Option<u32>) -> Result<(String, u32)> {
    let (numbers, names): (Vec<String>, Vec<String>) =
        given.into_iter().partition(|m| m.parse::<u64>().is_ok());
    let method = match names.as_slice() {
        [] => "GET".to_owned(),
        [one] => one.clone(),
        [a, b, ..] => bail!("-m/--method given twice ({a}, {b}): give the method once"),
    };
    let streams = match (numbers.as_slice(), streams) {
        ([], s) => s.unwrap_or(1),
        ([n], _) if !h2 => bail!(
            "-m {n} is not a method: for {n} HTTP/2 streams per connection (h2load's -m), add --h2"
        ),
        ([n], Some(_)) => {
            bail!("-m {n} and --streams both give the streams per connection: keep one")
        }
        ([n], None) => match n.parse::<u64>() {
            Ok(0) => bail!("-m 0: an HTTP/2 connection needs at least 1 stream (-m 1 or more)"),
            Ok(n) => u32::try_from(n).map_err(|_| anyhow!("-m {n}: too many streams"))?,
            Err(_) => unreachable!("partitioned as a number"),
        },
        ([a, b, ..], _) => bail!("-m given twice ({a}, {b}): give the streams per connection once"),
    };
    Ok((standard_method(method), streams))
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

/// Starts the built-in server on a free loopback port with `threads`
/// threads; the handle keeps it running, the URL is its `/hello`.
pub(crate) fn builtin_server(threads: usize) -> Result<(dyno_serve::ServerHandle, String)> {
    let listener = std::net::TcpListener::bind("127.0.0.1:0")
        .context("could not open a loopback port for the built-in server")?;
    let server = dyno_serve::spawn(listener, threads)?;
    let url = format!("http://{}/hello", server.local_addr());
    Ok((server, url))
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

/// The port of an `http://` or `https://` URL: its own, or the scheme's.
fn url_port(url: &str) -> Option<u16> {
    let (scheme, rest) = url.split_once("://")?;
    let authority = rest.split(['/', '?', '#']).next()?;
    let host_port = authority.rsplit('@').next()?;
    // After an IPv6 literal's ']', or after the last ':' of a host.
    let after_host = host_port.rsplit(']').next()?;
    match after_host.rsplit_once(':') {
        Some((_, port)) => port.parse().ok(),
        None => match scheme {
            "http" => Some(80),
            "https" => Some(443),
            _ => None,
        },
    }
}

#[cfg(test)]
mod http_tests {
    use super::*;

    #[test]
    fn standard_methods_go_in_upper_case() {
        assert_eq!(standard_method("post".into()), "POST");
        assert_eq!(standard_method("Patch".into()), "PATCH");
        assert_eq!(standard_method("purge".into()), "purge");
    }

    #[test]
    fn the_method_and_h2loads_streams_stand_together_under_h2() {
        let m = |given: &[&str], h2: bool| {
            method_and_streams(given.iter().map(|s| (*s).to_owned()).collect(), h2, None)
        };
        assert_eq!(m(&[], false).unwrap(), ("GET".into(), 1));
        assert_eq!(m(&["post"], false).unwrap(), ("POST".into(), 1));
        assert_eq!(m(&["POST", "4"], true).unwrap(), ("POST".into(), 4));
        assert_eq!(m(&["4", "PUT"], true).unwrap(), ("PUT".into(), 4));
        let e = |given: &[&str], h2: bool| m(given, h2).unwrap_err().to_string();
        assert!(e(&["4"], false).contains("add --h2"));
        assert!(e(&["0"], true).contains("at least 1 stream"));
        assert!(e(&["GET", "POST"], true).contains("give the method once"));
        assert!(e(&["2", "4"], true).contains("streams per connection once"));
    }

    #[test]
    fn a_urls_port_is_its_own_or_its_schemes() {
        assert_eq!(url_port("http://127.0.0.1:8080/x?y"), Some(8080));
        assert_eq!(url_port("https://example.com/"), Some(443));
        assert_eq!(url_port("http://user:pw@host"), Some(80));
        assert_eq!(url_port("http://[::1]:9000/"), Some(9000));
        assert_eq!(url_port("http://[::1]/"), Some(80));
    }
}
