//! `dyno db run`'s flags resolved into the PostgreSQL engine's settings,
//! a segment's share of them included.

use std::time::Duration;

use anyhow::{Context as _, Result, bail};

use dyno_db::Target;
use dyno_db::init::{InitSettings, PartitionMethod, Step};
use dyno_db::record::Whole;
use dyno_db::run::{Protocol, RunSettings, Stop, Weighted};
use dyno_db::script::{self, Script};
use dyno_model::record::PER_SEGMENT_SETTINGS;

use crate::cli::{DbInitArgs, DbProtocol, DbRunArgs, PartitionMethodArg, SaveArgs};
use crate::settings::segment::{self, Plan};

/// `dyno db init`'s flags as the loader's settings: the steps (pgbench's
/// letters, `--foreign-keys` added), the scale and the partitions.
pub(crate) fn db_init(args: &DbInitArgs) -> Result<InitSettings> {
    let letters = args
        .init_steps
        .as_deref()
        .unwrap_or(dyno_db::init::DEFAULT_STEPS);
    let mut steps = Step::parse_all(letters).map_err(anyhow::Error::msg)?;
    // As pgbench: --foreign-keys adds the step to the others.
    if args.foreign_keys && !steps.contains(&Step::ForeignKeys) {
        steps.push(Step::ForeignKeys);
    }
    if args.partition_method != PartitionMethodArg::Range && args.partitions == 0 {
        bail!("--partition-method needs --partitions N (how many partitions of pgbench_accounts)");
    }
    let settings = InitSettings {
        scale: args.scale,
        fillfactor: args.fillfactor,
        steps,
        unlogged: args.unlogged_tables,
        partitions: args.partitions,
        partition_method: match args.partition_method {
            PartitionMethodArg::Range => PartitionMethod::Range,
            PartitionMethodArg::Hash => PartitionMethod::Hash,
        },
    };
    settings.validate().map_err(anyhow::Error::msg)?;
    Ok(settings)
}

/// What `dyno db run` runs: the engine's settings (a segment's share of
/// them), the whole run as given, the segment plan, and what the binary
/// keeps for itself.
pub(crate) struct DbPlan {
    pub engine: RunSettings,
    pub whole: Whole,
    /// `--segment I/N`: this process's part of a split run, with the
    /// settings every segment must share already published.
    pub segment: Option<Plan>,
    pub save: SaveArgs,
    /// `-P`: a progress line every interval.
    pub progress: Option<Duration>,
    /// One run, or (`--find-max`) a capacity search.
    pub mode: super::capacity::Mode,
    /// `--watch-*`: what of the server is watched during the run.
    pub watch: Option<super::Watch>,
    /// What the user should know about how the flags were taken (a `-j`
    /// cut to `-c`), for the command to print.
    pub notices: Vec<String>,
}

/// `dyno db run`'s flags, checked together and resolved; `host` names
/// this machine for the segment plan, `files` are the texts of the script
/// files (`-f`), in their order, as the command read them.
/// `target` is the server, as the conninfo and the PG* variables name it
/// (read by the command).
pub(crate) fn db_run(
    args: DbRunArgs,
    host: Option<&str>,
    files: &[String],
    target: Target,
) -> Result<DbPlan> {
    let mut plan = Plan::from_args(&args.segments, host)?;
    if plan.is_some() && args.save.no_save {
        bail!(
            "--segment meets the other segments in the store and saves its run there for `dyno merge`: drop --no-save"
        );
    }
    super::capacity::rate_plan(
        args.rate_plan.as_ref(),
        &[
            ("-R/--rate", args.rate.is_some()),
            ("-t/--transactions", args.transactions.is_some()),
            ("-T/--time", args.time.is_some()),
            ("--warmup", args.warmup.is_some_and(|w| !w.is_zero())),
            ("--find-max", args.find_max.find_max),
        ],
    )?;
    let (settings, notices) = run_settings(&args, plan.as_ref(), files, target)?;
    // No error target in --slo: failed transactions are errors, and none is
    // allowed (a db run fails on any, as pgbench's exit status says).
    let range = args
        .clients
        .range
        .then_some((args.clients.from, args.clients.to));
    let mode = super::capacity::mode(
        args.find_max.clone(),
        (range, "clients"),
        args.warmup,
        0.0,
        &[
            ("-R/--rate", args.rate.is_some()),
            ("-t/--transactions", args.transactions.is_some()),
            ("-T/--time", args.time.is_some()),
        ],
    )?;
    let watch = super::watch::watch(
        args.watch.clone(),
        Some(&settings.target),
        Some(settings.target.port()),
    )?;
    let whole = Whole {
        clients: args.clients.to,
        jobs: args.jobs.min(args.clients.to),
        scale: args.scale,
        // A plan's mean rate: what the run as a whole asked for.
        rate: match &args.rate_plan {
            Some(p) => Some(p.total() / p.duration().as_secs_f64()),
            None => args.rate,
        },
    };
    if let Some(plan) = &mut plan {
        let mut shared = published(&args, &settings, &whole);
        super::capacity::segmented(plan, &mode, "clients", &mut shared)?;
        plan.publish(shared);
    }
    Ok(DbPlan {
        engine: settings,
        whole,
        segment: plan,
        save: args.save,
        progress: args.progress,
        mode,
        watch,
        notices,
    })
}

/// The engine's settings from the flags; a segment's share of them with
/// `plan`; and the notices.
fn run_settings(
    args: &DbRunArgs,
    plan: Option<&Plan>,
    files: &[String],
    target: Target,
) -> Result<(RunSettings, Vec<String>)> {
    let (scripts, builtin) = scripts(args, files)?;
    let mut notices = Vec::new();
    let threads = if args.jobs > args.clients.to {
        notices.push(format!(
            "dyno: -j {} is more than -c {}: using {} thread{} (a thread without a client would sit idle)",
            args.jobs,
            args.clients.to,
            args.clients.to,
            if args.clients.to == 1 { "" } else { "s" }
        ));
        args.clients.to as usize
    } else {
        args.jobs as usize
    };
    let stop = match (args.transactions, args.time, &args.rate_plan) {
        (_, _, Some(p)) => Stop::Duration(p.duration()),
        (Some(n), _, _) => Stop::Transactions(n),
        (None, Some(d), _) => Stop::Duration(d),
        (None, None, None) => Stop::Duration(Duration::from_secs(10)),
    };
    // A segment takes its share of the clients and threads, and the rate
    // in proportion to its clients (as pgbench shares a rate out over its
    // threads); -t stays per client.
    let (clients, threads, share, segment) = match plan {
        Some(plan) => {
            // -t is per client: every segment's clients run it whole.
            let (c, t) = plan.share(args.clients.to, threads, None)?;
            let share = f64::from(c) / f64::from(args.clients.to);
            (c as usize, t, share, plan.segment)
        }
        None => (
            args.clients.to as usize,
            threads,
            1.0,
            dyno_model::Segment::WHOLE,
        ),
    };
    // A plan's mean rate: what the run as a whole asked for.
    let whole_rate = match &args.rate_plan {
        Some(p) => Some(p.total() / p.duration().as_secs_f64()),
        None => args.rate,
    };
    let rate = whole_rate.map(|r| r * share);
    let protocol = protocol(args.protocol);
    check_protocol(protocol, &scripts)?;
    check_schedule(args, stop, rate)?;
    let seed = args.seed.unwrap_or_else(|| fastrand::u64(..));
    let settings = RunSettings {
        target,
        scripts,
        clients,
        threads,
        stop,
        protocol,
        // As pgbench: the built-ins' scale is counted from the tables; a
        // custom script's is --scale, or 1.
        // (-s with a built-in is ignored with pgbench's warning: see
        // dyno_db::warnings::judge).
        scale: if builtin {
            None
        } else {
            Some(args.scale.unwrap_or(1))
        },
        vacuum: !args.no_vacuum,
        max_tries: args.max_tries,
        seed,
        default_seed: dyno_db::script::default_seed(seed, u64::from(args.clients.to)),
        rate,
        plan: args.rate_plan.clone(),
        share,
        warmup: args.warmup.unwrap_or_default(),
        // As pgbench: a transaction under way at -T's end is let finish,
        // so the tables hold exactly the transactions reported; a
        // transaction still under way this long after the end is cut
        // (pgbench would wait for ever).
        grace: dyno_db::run::FINISH_GRACE,
        latency_limit: args.latency_limit,
        per_statement: args.per_command,
        reconnect: args.connect,
        pipeline: args.pipeline,
        exit_on_abort: args.exit_on_abort,
        log: args.log.then(|| dyno_db::txlog::LogSettings {
            prefix: args.log_prefix.clone(),
            aggregate: args.aggregate_interval.map(Duration::from_secs),
            sampling: args.sampling_rate,
            failures_detailed: args.failures_detailed,
        }),
        progress_every: args.progress.unwrap_or(Duration::from_secs(1)),
        segment,
    };
    Ok((settings, notices))
}

/// `-M`.
fn protocol(given: DbProtocol) -> Protocol {
    match given {
        DbProtocol::Simple => Protocol::Simple,
        DbProtocol::Extended => Protocol::Extended,
        DbProtocol::Prepared => Protocol::Prepared,
    }
}

/// The scripts' needs against the protocol: a pipeline needs the extended
/// protocol, statements joined by `\;` the simple one.
fn check_protocol(protocol: Protocol, scripts: &[Weighted]) -> Result<()> {
    if protocol == Protocol::Simple
        && let Some((w, line)) = scripts
            .iter()
            .find_map(|w| w.script.pipeline_line().map(|l| (w, l)))
    {
        bail!(
            "{}:{line}: \\startpipeline needs -M extended or -M prepared, as in pgbench: the simple protocol has no pipeline",
            w.script.name()
        );
    }
    if protocol != Protocol::Simple
        && let Some((w, line)) = scripts.iter().find_map(|w| {
            w.script.commands().iter().find_map(|c| match &c.kind {
                dyno_db::script::CommandKind::Sql(sql) if sql.is_compound() => Some((w, c.line)),
                _ => None,
            })
        })
    {
        bail!(
            "{}:{line}: statements joined by \\; are sent as one query, which only -M simple does (pgbench fails them at run time under -M extended and prepared): add -M simple, or end each statement with ;",
            w.script.name()
        );
    }
    Ok(())
}

/// The end, the tries, the warm-up and the rate together.
fn check_schedule(args: &DbRunArgs, stop: Stop, rate: Option<f64>) -> Result<()> {
    if args.max_tries == 0 && matches!(stop, Stop::Transactions(_)) && args.latency_limit.is_none()
    {
        bail!(
            "--max-tries 0 (no limit on the tries) with -t has nothing to end the retries: add a duration (-T) or a latency limit (-L), or give a number of tries"
        );
    }
    if args.warmup.is_some_and(|w| !w.is_zero()) && matches!(stop, Stop::Transactions(_)) {
        bail!(
            "--warmup is a time before the measured one; with -t (a count per client) there is no measured time to put it before: use -T, or drop --warmup"
        );
    }
    if let (Some(rate), Stop::Duration(d)) = (rate, stop)
        && rate * d.as_secs_f64() < 0.5
    {
        bail!(
            "-R {rate} over -T {:.3} s schedules no transaction at all: raise the rate or the duration",
            d.as_secs_f64()
        );
    }
    Ok(())
}

/// What a db run's record holds that is not the same in every segment of
/// it: this segment's shares, seed and clean-up (`PER_SEGMENT_SETTINGS`),
/// and what the run finds on the server (nothing yet when published).
const NOT_PUBLISHED: [&str; 1] = ["server_version"];

/// What a segment publishes beside its run's record: the command, the
/// whole run's -c and -j as given (the record holds this segment's
/// shares), -s, -r, and the scripts' parsed text, hashed.
#[derive(serde::Serialize)]
struct Published {
    command: &'static str,
    clients: u32,
    jobs: u32,
    scale: Option<i64>,
    report_per_command: bool,
    script_text: String,
}

/// What every segment of a `db run` must share, published at the
/// barrier: the run's record ([`dyno_db::record::asked_record`], the
/// whole run's rate) less what differs per segment, and [`Published`].
fn published(args: &DbRunArgs, settings: &RunSettings, whole: &Whole) -> segment::Settings {
    let record = dyno_db::record::asked_record(settings, Some(whole));
    let drop: Vec<&str> = PER_SEGMENT_SETTINGS
        .into_iter()
        .chain(NOT_PUBLISHED)
        .collect();
    let mut s = segment::Settings::of(&record, &drop);
    let scripts: Vec<&Script> = settings.scripts.iter().map(|w| &w.script).collect();
    s.add(&Published {
        command: "db run",
        clients: args.clients.to,
        jobs: args.jobs,
        scale: args.scale,
        report_per_command: args.per_command,
        script_text: segment::hash(format!("{scripts:?}").as_bytes()),
    });
    s
}

/// The scripts the flags name, parsed (tpcb-like when none), and whether a
/// built-in is among them.
fn scripts(args: &DbRunArgs, files: &[String]) -> Result<(Vec<Weighted>, bool)> {
    let builtin = |spec: &str| -> Result<Weighted> {
        let (name, weight) = script::weighted(spec).map_err(anyhow::Error::msg)?;
        let (name, text) = script::builtin(name).map_err(anyhow::Error::msg)?;
        let script = Script::parse_with(name, text, &args.define)
            .context("a built-in script does not parse")?;
        Ok(Weighted { script, weight })
    };
    let mut scripts = Vec::new();
    if args.select_only {
        scripts.push(builtin("select-only")?);
    }
    if args.skip_some_updates {
        scripts.push(builtin("simple-update")?);
    }
    for spec in &args.builtins {
        scripts.push(builtin(spec)?);
    }
    for (spec, text) in args.files.iter().zip(files) {
        let (path, weight) = script::weighted(spec).map_err(anyhow::Error::msg)?;
        let script = Script::parse_with(path, text, &args.define)?;
        scripts.push(Weighted { script, weight });
    }
    if scripts.is_empty() {
        scripts.push(builtin("tpcb-like")?);
    }
    if args.protocol != DbProtocol::Simple {
        for w in &scripts {
            w.script.check_parameters()?;
        }
    }
    if scripts.iter().all(|w| w.weight == 0) {
        bail!("every script has weight 0: give at least one a weight above 0 (NAME@WEIGHT)");
    }
    // Given, or the default.
    let uses_builtin = args.select_only
        || args.skip_some_updates
        || !args.builtins.is_empty()
        || args.files.is_empty();
    Ok((scripts, uses_builtin))
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use clap::Parser as _;

    use super::*;
    use crate::cli::{Cli, Command, DbArgs, DbCommand};

    /// What segment `index` of 2 of `dyno db run FLAGS` publishes at the
    /// barrier.
    fn published(index: u32, flags: &[&str]) -> BTreeMap<String, String> {
        let segment = format!("{index}/2");
        let argv = ["dyno", "db", "run", "--segment", &segment, "--group", "g"];
        let cli = Cli::try_parse_from(argv.iter().chain(flags)).unwrap();
        let Command::Db(DbArgs {
            command: DbCommand::Run(args),
        }) = cli.command
        else {
            unreachable!("parsed as db run")
        };
        let target = Target::new("postgres://u@db.example:5432/bench", |_| None).unwrap();
        let host = format!("host{index}");
        let plan = db_run(*args, Some(&host), &[], target).unwrap();
        plan.segment.unwrap().settings
    }

    const BASE: [&str; 6] = ["-c", "5", "-j", "3", "-T", "2s"];

    #[test]
    fn the_segments_of_one_db_run_publish_the_same_settings() {
        let a = published(0, &BASE);
        assert_eq!(a, published(1, &BASE));
        for (name, value) in [
            ("command", "db run"),
            ("target", "u@db.example:5432/bench"),
            ("scripts.0.name", "tpcb-like"),
            ("clients", "5"),
            ("jobs", "3"),
            ("duration", "2s"),
            ("protocol", "simple"),
            ("vacuum", "true"),
        ] {
            assert_eq!(
                a.get(name).map(String::as_str),
                Some(value),
                "{name}: {a:?}"
            );
        }
        for per_segment in ["seed", "threads", "segment", "server_version"] {
            assert!(!a.contains_key(per_segment), "{per_segment}: {a:?}");
        }
    }

    #[test]
    fn a_changed_db_setting_is_named_where_the_segments_differ() {
        let base = published(0, &BASE);
        for (change, names) in [
            (&["-T", "3s"][..], &["duration"][..]),
            (&["-c", "6"], &["clients"]),
            (&["-j", "2"], &["jobs"]),
            (&["-R", "100"], &["model", "rate_per_sec"]),
            (&["-M", "prepared"], &["protocol"]),
            (&["-b", "select-only"], &["script_text", "scripts.0.name"]),
            (&["-n"], &["vacuum"]),
            (&["--max-tries", "3"], &["max_tries"]),
        ] {
            let mut flags: Vec<&str> = BASE.to_vec();
            match flags.iter().position(|f| *f == change[0]) {
                Some(at) => flags[at + 1] = change[1],
                None => flags.extend(change),
            }
            let other = published(1, &flags);
            let differ: Vec<&String> = base
                .keys()
                .chain(other.keys())
                .collect::<std::collections::BTreeSet<_>>()
                .into_iter()
                .filter(|n| base.get(*n) != other.get(*n))
                .collect();
            assert_eq!(differ, names, "{change:?}");
        }
    }
}
