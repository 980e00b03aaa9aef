//! `dyno http`'s flags resolved into the HTTP engine's settings.

use std::sync::Arc;

use anyhow::{Context, Result, anyhow, bail};
use dyno_http::request::{
    RequestSpec, RequestTemplate, Scheme, Target, parse_header, parse_url, parse_url_list,
};
use dyno_http::scenario::Scenario;
use dyno_http::{Asked, Schedule, Segment, Settings, Stop, TlsSettings};
use dyno_model::Environment;
use dyno_model::record::PER_SEGMENT_SETTINGS;

use crate::cli::{HttpArgs, HttpFormat, SaveArgs};
use crate::settings::segment::{self, Plan};

/// `dyno http` resolved: the engine's settings, and what the binary needs
/// around the run.
pub(crate) struct HttpPlan {
    /// What the engine runs.
    pub engine: Settings,
    /// What the run's record needs beyond the engine's settings.
    pub asked: Asked,
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
    /// What the user should know about how the flags were taken (a `-t`
    /// cut to `-c`, the built-in server loaded), for the command to print.
    pub notices: Vec<String>,
}

/// What `dyno http` reads and starts before its flags resolve, all of it
/// `cmd::http`'s I/O: the files the flags name, and the built-in server.
pub(crate) struct HttpInputs {
    /// The CPUs this process may use.
    pub cpus: usize,
    /// `--body-file`'s bytes.
    pub body_file: Option<Vec<u8>>,
    /// `--url-file`'s text.
    pub url_file: Option<String>,
    /// `--scenario` compiled, with the bytes of its file and of its data
    /// file (a segment's settings hold their hash).
    pub scenario: Option<(Arc<Scenario>, Vec<u8>)>,
    /// The built-in server's URL, when no URL is given.
    pub builtin_url: Option<String>,
}

/// Whether the flags load the built-in server: no URL, URL file or
/// scenario is given.
pub(crate) fn loads_builtin_server(args: &HttpArgs) -> bool {
    args.url.is_none() && args.url_file.is_none() && args.scenario.is_none()
}

/// The built-in server's threads: the CPUs the load's threads leave.
pub(crate) fn builtin_server_threads(args: &HttpArgs, cpus: usize) -> usize {
    let (threads, _) = worker_threads(args.threads, args.connections.to, true, cpus);
    (cpus - threads.min(cpus)).max(1)
}

/// Resolves `dyno http`'s flags and what they name ([`HttpInputs`]) into
/// an [`HttpPlan`]: checks the settings the engine and the machine would
/// refuse, and publishes a segment's shared settings. Pure: the files are
/// read, and the built-in server started, by the command.
pub(crate) fn http(args: HttpArgs, env: &Environment, inputs: HttpInputs) -> Result<HttpPlan> {
    let builtin = loads_builtin_server(&args);
    let mut notices = Vec::new();
    let (threads, cut) = worker_threads(args.threads, args.connections.to, builtin, inputs.cpus);
    notices.extend(cut);
    let (mode, warmup) = mode(&args)?;
    let watch = super::watch::watch(
        args.watch.clone(),
        None,
        args.url.as_deref().and_then(url_port),
    )?;
    let mut plan = Plan::from_args(&args.segments, env.hostname.as_deref())?;
    // A segment runs its share of the connections and threads (and its
    // record says so: the merged run adds them up again).
    let whole_connections = args.connections.to;
    let (connections, threads) = match &plan {
        Some(plan) => segment_share(plan, builtin, &args, threads)?,
        None => (whole_connections, threads),
    };
    let request = request(&args, inputs)?;
    if let Some(url) = &request.builtin_url {
        notices.push(format!(
            "no URL given: loading dyno's built-in server at {url}"
        ));
    }
    let mut settings =
        engine_settings(&args, &request, warmup, connections, threads, plan.as_ref());
    if let Some(replay) = replay(&args, replay_seed(&args, settings.seed, plan.as_ref()))? {
        // With --h2, `-m N` is streams; a method is the log's own.
        if let Some(method) = args.method.iter().find(|m| m.parse::<u32>().is_err()) {
            bail!(
                "--replay sends each request with its logged method: drop --method {method} (--methods chooses which logged methods are sent)"
            );
        }
        settings.schedule.stop = match (args.requests, args.duration) {
            (Some(n), _) => Stop::Requests(n),
            (None, Some(d)) => Stop::Duration(d),
            (None, None) if replay.looped => bail!(
                "--loop replays the log again and again: end the run with -d (e.g. -d 10m) or -n"
            ),
            (None, None) => Stop::LogEnds,
        };
        settings.replay = Some(replay);
    }
    dyno_http::engine::validate(&settings)?;
    check_open_files(env, &settings, builtin)?;
    let asked = Asked {
        url: request.shown_url.clone(),
        url_file: args.url_file.clone(),
        builtin_server: builtin,
        connections: whole_connections,
        max_error_rate_percent: args.max_error_rate,
        headers: request.headers.clone(),
        body_bytes: request.body.as_ref().map(|b| b.len() as u64),
    };
    if let Some(plan) = &mut plan {
        let mut s = fingerprint(&settings, &asked, args.threads, &request);
        super::capacity::segmented(plan, &mode, "connections", &mut s)?;
        plan.publish(s);
    }
    Ok(HttpPlan {
        engine: settings,
        asked,
        segments: plan,
        latency_log: args.latency_log,
        mode,
        watch,
        format: args.format,
        save: args.save,
        notices,
    })
}

/// The run's mode (one run, or a capacity search) and its warm-up (none
/// unless given), from the flags that set the schedule.
fn mode(args: &HttpArgs) -> Result<(super::Mode, std::time::Duration)> {
    let HttpArgs {
        connections,
        rate,
        requests,
        duration,
        warmup,
        pipeline,
        find_max,
        rate_plan,
        latency_log,
        max_error_rate,
        format,
        ..
    } = args;
    super::capacity::rate_plan(
        rate_plan.as_ref(),
        &[
            ("--rate", rate.is_some()),
            ("-n/--requests", requests.is_some()),
            ("-d/--duration", duration.is_some()),
            ("--warmup", warmup.is_some_and(|w| !w.is_zero())),
            ("--find-max", find_max.find_max),
            ("--pipeline", *pipeline > 1),
        ],
    )?;
    // -c FROM..TO: the closed-model sweep of a capacity search, whose
    // steps take up to TO connections.
    let sweep_range = connections
        .range
        .then_some((connections.from, connections.to));
    let mode = super::capacity::mode(
        find_max.clone(),
        (sweep_range, "connections"),
        *warmup,
        *max_error_rate,
        &[
            ("--rate", rate.is_some()),
            ("-n/--requests", requests.is_some()),
            ("-d/--duration", duration.is_some()),
            ("--latency-log", latency_log.is_some()),
            ("--pipeline", *pipeline > 1),
        ],
    )?;
    if matches!(mode, super::Mode::FindMax(_)) && *format == HttpFormat::Ab {
        bail!(
            "--format ab prints one run; a capacity search is many steps: drop --format ab (--json prints the whole search)"
        );
    }
    // A replay's search is over its speed: --start is the first multiple
    // of the log's pace (1× by default, the traffic as recorded).
    let mode = match mode {
        super::Mode::FindMax(mut plan) if args.replay.replay.is_some() => {
            if !args.replay.looped {
                // Each step replays the log's window once, whatever its
                // length (a step of zero length in the plan and the
                // record), its first requests measured too unless
                // --warmup says otherwise.
                plan.step = std::time::Duration::ZERO;
                if args.warmup.is_none() {
                    plan.warmup = std::time::Duration::ZERO;
                }
            }
            plan.axis = match plan.axis {
                dyno_load::capacity::Axis::Rate { start, precision } => {
                    dyno_load::capacity::Axis::Speed {
                        start: start.unwrap_or(1.0),
                        precision,
                    }
                }
                _ => bail!(
                    "--replay --find-max searches the replay's speed at -c connections: give -c N, not a range"
                ),
            };
            super::Mode::FindMax(plan)
        }
        mode => mode,
    };
    Ok((mode, warmup.unwrap_or_default()))
}

/// What each request is: where it goes, its method, headers and body, or
/// the scenario's steps.
struct Request {
    target: Target,
    /// The URL file's paths (one for a URL), none for a scenario.
    paths: Vec<String>,
    templates: Vec<RequestTemplate>,
    streams: u32,
    headers: Vec<(String, String)>,
    body: Option<Vec<u8>>,
    scenario: Option<Arc<Scenario>>,
    /// The scenario's file and data, for a segment's hash.
    scenario_bytes: Vec<u8>,
    /// What the run loads, for its record: the URL, a URL file's first
    /// URL, or the scenario's.
    shown_url: String,
    builtin_url: Option<String>,
}

/// The requests from the flags and the files they name.
fn request(args: &HttpArgs, inputs: HttpInputs) -> Result<Request> {
    let body = match (&args.body, inputs.body_file) {
        (Some(b), _) => Some(b.clone().into_bytes()),
        (None, file) => file,
    };
    let headers = args
        .headers
        .iter()
        .map(|h| parse_header(h))
        .collect::<Result<Vec<_>, _>>()?;
    let h2_possible = args.h2 || args.h3 || args.alpn.iter().any(|p| p == "h2");
    let (method, streams) = method_and_streams(args.method.clone(), h2_possible, args.streams)?;
    let url = match (&inputs.builtin_url, &args.url) {
        (Some(builtin), _) => builtin.clone(),
        (None, url) => url.clone().unwrap_or_default(),
    };
    let (scenario, scenario_bytes) = match inputs.scenario {
        Some((s, bytes)) => {
            check_scenario_flags(args.format, &method, args.pipeline, &headers)?;
            (Some(s), bytes)
        }
        None => (None, Vec::new()),
    };
    let (target, paths) = targets(
        args.url_file.as_deref().zip(inputs.url_file.as_deref()),
        scenario.as_deref(),
        &url,
    )?;
    if args.replay.replay.is_some() && paths.first().is_some_and(|p| p != "/") {
        bail!(
            "--replay sends the log's own paths to URL's server: give the URL without a path (e.g. http://localhost:8080), not '{url}'"
        );
    }
    check_insecure(target.scheme == Scheme::Https, args.insecure)?;
    let spec = RequestSpec {
        method,
        path: String::new(),
        headers: headers.clone(),
        body: body.clone(),
        keep_alive: !args.no_keepalive,
    };
    let templates = templates(&target, &paths, &spec)?;
    let shown_url = match (&args.url_file, &scenario) {
        (_, Some(s)) => s.url.clone(),
        (Some(_), None) => format!("{}{}", target, paths[0]),
        (None, None) => url,
    };
    Ok(Request {
        target,
        paths,
        templates,
        streams,
        headers,
        body,
        scenario,
        scenario_bytes,
        shown_url,
        builtin_url: inputs.builtin_url,
    })
}

/// The engine's settings.
fn engine_settings(
    args: &HttpArgs,
    request: &Request,
    warmup: std::time::Duration,
    connections: u32,
    threads: usize,
    plan: Option<&Plan>,
) -> Settings {
    let (stop, rate) = stop_and_rate(
        args.requests,
        args.duration,
        args.rate_plan.as_ref(),
        args.rate,
    );
    Settings {
        target: request.target.clone(),
        requests: request.templates.clone(),
        schedule: Schedule {
            stop,
            rate_per_sec: rate,
            warmup,
            plan: args.rate_plan.clone(),
            grace: std::time::Duration::ZERO,
        },
        connections: connections as usize,
        threads,
        pipeline: args.pipeline as usize,
        http2: args.h2,
        http3: args.h3,
        zero_rtt: args.zero_rtt,
        streams: request.streams as usize,
        alpn: args.alpn.clone(),
        keep_alive: !args.no_keepalive,
        timeout: args.timeout,
        connect_timeout: args.connect_timeout,
        expect_status: args.expect_status,
        seed: args.seed.unwrap_or_else(|| fastrand::u64(..)),
        unix_socket: args.unix_socket.clone(),
        tls: TlsSettings {
            insecure: args.insecure,
        },
        source_addr: args.source_addr,
        segment: plan.map_or(Segment::WHOLE, |p| p.segment),
        scenario: request.scenario.clone(),
        replay: None,
    }
}

/// The seed of a Poisson spread of the log's stamps. Every segment of a
/// group spreads the whole log alike and sends its share of it, so the
/// seed is the group's: `--seed` when given (published, so that segments
/// given different ones are refused at the barrier), else one drawn from
/// the group's name, never a segment's own.
fn replay_seed(args: &HttpArgs, seed: u64, plan: Option<&Plan>) -> u64 {
    match (args.seed, plan) {
        (None, Some(plan)) => {
            use std::hash::Hasher as _;
            let mut h = fnv::FnvHasher::default();
            h.write(plan.group.as_bytes());
            h.finish()
        }
        _ => seed,
    }
}

/// `--replay` and its flags as the engine takes them; `None` without it.
fn replay(args: &HttpArgs, seed: u64) -> Result<Option<dyno_http::replay::Replay>> {
    let r = &args.replay;
    let Some(path) = &r.replay else {
        return Ok(None);
    };
    let mut replay = dyno_http::replay::Replay::new(path.clone());
    replay.format = r.log_format.clone();
    replay.speed = r.speed;
    replay.window = r.window.unwrap_or_default();
    replay.looped = r.looped;
    replay.spread = match r.spread.as_str() {
        "poisson" => dyno_http::replay::Spread::Poisson { seed },
        _ => dyno_http::replay::Spread::Even,
    };
    if !r.methods.is_empty() {
        replay.methods = r.methods.clone();
    }
    if !r.scrub.is_empty() {
        replay.scrub = if r
            .scrub
            .iter()
            .any(|h| h.trim().eq_ignore_ascii_case("none"))
        {
            Vec::new()
        } else {
            r.scrub
                .iter()
                .map(|h| h.trim().to_ascii_lowercase())
                .collect()
        };
    }
    let templates: Vec<&str> = r.templates.iter().map(|t| t.trim()).collect();
    replay.templates =
        dyno_http::replay::Templates::new(&templates).map_err(|e| anyhow!("--templates: {e}"))?;
    Ok(Some(replay))
}

/// Worker threads: `-t` as given, else one per CPU (half of them beside
/// the built-in server, which takes the others). A thread gets whole
/// connections: one beyond `-c` would sit idle and dilute the client-CPU
/// check. wrk refuses; dyno uses `-c` threads and says so (the notice).
fn worker_threads(
    given: Option<u32>,
    connections: u32,
    builtin: bool,
    cpus: usize,
) -> (usize, Option<String>) {
    let default = if builtin { (cpus / 2).max(1) } else { cpus };
    match given {
        Some(t) if t > connections => (
            connections as usize,
            Some(format!(
                "dyno: -t {t} is more than -c {connections}: using {connections} worker thread{} (a thread without a connection would sit idle)",
                if connections == 1 { "" } else { "s" }
            )),
        ),
        Some(t) => (t as usize, None),
        None => (default.min(connections as usize), None),
    }
}

/// A segment's share of the connections and threads; a segment needs a
/// URL the segments share and a store to meet in.
fn segment_share(
    plan: &Plan,
    builtin: bool,
    args: &HttpArgs,
    threads: usize,
) -> Result<(u32, usize)> {
    if builtin {
        bail!(
            "--segment needs the URL of the server the segments load together (with no URL, each would load a built-in server of its own)"
        );
    }
    if args.save.no_save {
        bail!(
            "--segment meets the other segments in the store and saves its run there for `dyno merge`: drop --no-save"
        );
    }
    plan.share(args.connections.to, threads, args.requests)
}

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
/// The flags a scenario replaces with its own.
fn check_scenario_flags(
    format: HttpFormat,
    method: &str,
    pipeline: u32,
    headers: &[(String, String)],
) -> Result<()> {
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
    Ok(())
}

/// The server and the paths loaded: the scenario's, a URL file's (`(path,
/// text)`), or the URL's.
fn targets(
    url_file: Option<(&std::path::Path, &str)>,
    scenario: Option<&Scenario>,
    url: &str,
) -> Result<(Target, Vec<String>)> {
    Ok(match (url_file, scenario) {
        (_, Some(s)) => (s.target.clone(), Vec::new()),
        (Some((path, text)), None) => {
            parse_url_list(text).with_context(|| format!("in the URL file '{}'", path.display()))?
        }
        (None, None) => {
            let (t, p) = parse_url(url)?;
            (t, vec![p])
        }
    })
}

/// `--insecure` means something only for https:// (TLS over a Unix
/// socket is refused by [`dyno_http::engine::validate`], with the rest of
/// what the engine cannot do).
fn check_insecure(tls: bool, insecure: bool) -> Result<()> {
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

/// What an HTTP run's record holds that is not the same in every segment
/// of it, or not for publishing: this segment's shares, its seed and
/// source address (`PER_SEGMENT_SETTINGS`), and the header count, URL
/// file and scenario, published as [`Published`]'s hashes instead.
const NOT_PUBLISHED: [&str; 3] = ["headers", "url_file", "scenario"];

/// What a segment publishes beside its run's record: the command, the
/// whole run's -c and -t as given (the record holds this segment's
/// shares), and hashes of what is too long or private for the store.
#[derive(serde::Serialize)]
struct Published {
    command: &'static str,
    connections: u32,
    threads: Option<u32>,
    headers: String,
    body: Option<String>,
    scenario: Option<String>,
    /// The URL file's paths (segments may read it from different places).
    url_file: Option<String>,
    /// `--seed` of a Poisson spread of a replayed log (the group's seed:
    /// the segments' timetables are one only when it is).
    #[serde(skip_serializing_if = "Option::is_none")]
    replay_seed: Option<u64>,
}

/// The settings every segment of a group must share, as published at the
/// barrier: the run's record ([`dyno_http::record::asked_record`]) less
/// what differs per segment, and [`Published`]. `threads` is `-t` as given.
fn fingerprint(
    settings: &Settings,
    asked: &Asked,
    threads: Option<u32>,
    request: &Request,
) -> segment::Settings {
    let record = dyno_http::record::asked_record(settings, asked);
    let drop: Vec<&str> = PER_SEGMENT_SETTINGS
        .into_iter()
        .chain(NOT_PUBLISHED)
        .collect();
    let mut s = segment::Settings::of(&record, &drop);
    s.add(&Published {
        command: "http",
        connections: asked.connections,
        threads,
        headers: segment::hash(format!("{:?}", asked.headers).as_bytes()),
        body: request.body.as_deref().map(segment::hash),
        scenario: settings
            .scenario
            .is_some()
            .then(|| segment::hash(&request.scenario_bytes)),
        url_file: asked
            .url_file
            .is_some()
            .then(|| segment::hash(format!("{:?}", request.paths).as_bytes())),
        replay_seed: settings.replay.as_ref().and_then(|r| match r.spread {
            dyno_http::replay::Spread::Poisson { seed } => Some(seed),
            dyno_http::replay::Spread::Even => None,
        }),
    });
    s
}

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
    Ok((dyno_http::request::standard_method(&method), streams))
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

    /// What segment `index` of 2 of `dyno http FLAGS` publishes at the
    /// barrier.
    fn published(index: u32, flags: &[&str]) -> std::collections::BTreeMap<String, String> {
        segment_plan(index, flags).segments.unwrap().settings
    }

    /// Segment `index` of 2 of group `g`, given `flags`, resolved.
    fn segment_plan(index: u32, flags: &[&str]) -> HttpPlan {
        use clap::Parser as _;
        let segment = format!("{index}/2");
        let argv = ["dyno", "http", "--segment", &segment, "--group", "g"];
        let cli = crate::cli::Cli::try_parse_from(argv.iter().chain(flags)).unwrap();
        let crate::cli::Command::Http(args) = cli.command else {
            unreachable!("parsed as http")
        };
        let env = Environment {
            hostname: Some(format!("host{index}")),
            ..Environment::default()
        };
        let inputs = HttpInputs {
            cpus: 4,
            body_file: None,
            url_file: None,
            scenario: None,
            builtin_url: None,
        };
        http(*args, &env, inputs).unwrap()
    }

    #[test]
    fn the_segments_of_a_poisson_replay_spread_the_log_with_the_groups_seed() {
        let flags = [
            "http://127.0.0.1:9",
            "--replay",
            "access.log",
            "--spread",
            "poisson",
        ];
        let seed = |plan: &HttpPlan| match plan.engine.replay.as_ref().unwrap().spread {
            dyno_http::replay::Spread::Poisson { seed } => seed,
            dyno_http::replay::Spread::Even => panic!("an even spread"),
        };
        let (a, b) = (segment_plan(0, &flags), segment_plan(1, &flags));
        // Each segment's own seed (for anything else drawn) is its own.
        assert_ne!(a.engine.seed, b.engine.seed);
        assert_eq!(seed(&a), seed(&b));
        assert_eq!(a.segments.unwrap().settings, b.segments.unwrap().settings);
        // --seed is the group's when given, and published: segments given
        // different ones are told apart at the barrier.
        let given = |index, s| segment_plan(index, &[&flags[..], &["--seed", s]].concat());
        assert_eq!(seed(&given(0, "7")), 7);
        let (a, b) = (
            published(0, &[&flags[..], &["--seed", "7"]].concat()),
            published(1, &[&flags[..], &["--seed", "8"]].concat()),
        );
        assert_eq!(differ(&a, &b), ["replay_seed"]);
    }

    /// The names whose values differ between `a` and `b`, or are in one.
    fn differ(
        a: &std::collections::BTreeMap<String, String>,
        b: &std::collections::BTreeMap<String, String>,
    ) -> Vec<String> {
        let names: std::collections::BTreeSet<&String> = a.keys().chain(b.keys()).collect();
        names
            .into_iter()
            .filter(|n| a.get(*n) != b.get(*n))
            .cloned()
            .collect()
    }

    const BASE: [&str; 8] = [
        "http://127.0.0.1:9/x",
        "-c",
        "5",
        "-t",
        "3",
        "-d",
        "2s",
        "-H=X-Token: s3cret",
    ];

    #[test]
    fn the_segments_of_one_run_publish_the_same_settings() {
        // Different shares (3 and 2 connections, 2 and 1 threads), hosts,
        // source addresses and seeds.
        let a = published(0, &[&BASE[..], &["-B", "127.0.0.2"]].concat());
        let b = published(1, &[&BASE[..], &["-B", "127.0.0.3"]].concat());
        assert_eq!(a, b);
        // The whole run's -c and -t, not a share; the record's settings
        // as named there.
        for (name, value) in [
            ("command", "http"),
            ("url", "http://127.0.0.1:9/x"),
            ("method", "GET"),
            ("model", "closed"),
            ("connections", "5"),
            ("threads", "3"),
            ("duration", "2s"),
            ("timeout", "10s"),
            ("keep_alive", "true"),
            ("expect_status", "200-399"),
        ] {
            assert_eq!(
                a.get(name).map(String::as_str),
                Some(value),
                "{name}: {a:?}"
            );
        }
        for per_segment in ["seed", "source_addr", "segment", "index", "host"] {
            assert!(
                !a.keys().any(|k| k.split('.').next() == Some(per_segment)),
                "{per_segment}: {a:?}"
            );
        }
    }

    #[test]
    fn a_changed_setting_is_named_where_the_segments_differ() {
        let base = published(0, &BASE);
        for (change, names) in [
            (&["-d", "3s"][..], &["duration"][..]),
            (&["-c", "6"], &["connections"]),
            (&["-t", "2"], &["threads"]),
            (&["--rate", "1000"], &["model", "rate_per_sec"]),
            (&["-m", "POST"], &["method"]),
            (&["--timeout", "5s"], &["timeout"]),
            (&["--max-error-rate", "5"], &["max_error_rate_percent"]),
            (&["--no-keepalive"], &["keep_alive"]),
            (&["-H=X-Token: other"], &["headers"]),
            (&["--body", "{}"], &["body", "body_bytes"]),
        ] {
            // The change replaces the base's flag of the same name.
            let mut flags: Vec<&str> = BASE.to_vec();
            match flags.iter().position(|f| *f == change[0]) {
                Some(at) => flags[at + 1] = change[1],
                None if change[0].starts_with("-H=") => flags[7] = change[0],
                None => flags.extend(change),
            }
            let other = published(1, &flags);
            assert_eq!(differ(&other, &base), names, "{change:?}");
        }
        let url = published(1, &[&["http://127.0.0.1:9/y"][..], &BASE[1..]].concat());
        assert_eq!(differ(&url, &base), ["url"]);
    }

    #[test]
    fn a_split_search_publishes_its_objective_and_steps() {
        let search = |slo: &str, budget: &str| {
            let flags = ["http://127.0.0.1:9/x", "-c", "4", "--find-max"];
            published(
                0,
                &[&flags[..], &["--slo", slo, "--budget", budget]].concat(),
            )
        };
        let base = search("p99<=20ms", "1m");
        assert_eq!(base["capacity.slo"], "p99<=20ms");
        assert_eq!(base["capacity.find_max"], "rates");
        assert_eq!(base["capacity.budget"], "60s");
        assert_eq!(differ(&search("p99<=30ms", "1m"), &base), ["capacity.slo"]);
        assert_eq!(
            differ(&search("p99<=20ms", "2m"), &base),
            ["capacity.budget"]
        );
    }

    #[test]
    fn a_headers_value_is_published_hashed_never_in_clear() {
        let s = published(0, &BASE);
        assert!(s.values().all(|v| !v.contains("s3cret")), "{s:?}");
        assert!(s["headers"].starts_with("hash "), "{s:?}");
    }
}
