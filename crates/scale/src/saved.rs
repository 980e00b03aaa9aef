//! Points from a saved `dyno run` sweep: N is one of its parameters, the
//! value each benchmark's mean wall time.
//!
//! A run may hold several curves over N: several command templates, or other
//! parameters swept beside N (`-L cc gcc,clang`). One analysis is one curve,
//! so the user picks it with `--command` and `--where`; an ambiguous choice
//! is refused with the choices listed, never guessed.

use std::collections::BTreeMap;

use dyno_model::names::scale;
use dyno_model::record::{Bench, CommandSpec, Parameter, benches};
use dyno_model::{Kind, Run, RunId, Warning};
use dyno_stats::scaling::Measure;
use serde::Deserialize;

use crate::{Curve, Measured};

/// Which curve of the run to take.
#[derive(Debug, Clone, Default)]
pub struct Selection {
    /// The parameter that is N.
    pub param: Option<String>,
    /// The command: its number from 1, or its template.
    pub command: Option<String>,
    /// Values of the other parameters.
    pub wheres: Vec<(String, String)>,
}

/// A curve of a run: its command's index and the other parameters' values.
type CurveKey<'a> = (usize, Vec<(&'a str, &'a str)>);

/// Why a run gives no curve: the run is not a sweep, or the selection picks
/// no curve, or more than one.
#[derive(Debug, thiserror::Error)]
pub enum SavedError {
    #[error(
        "run {id} is a {kind} run, not a `dyno run` sweep: dyno scale reads runs of kind exec (`dyno history --kind exec` lists them)"
    )]
    NotASweep { id: RunId, kind: Kind },
    #[error("run {0} holds no timed commands")]
    NoCommands(RunId),
    #[error(
        "run {0} has no parameter to use as N: time a sweep, e.g. dyno run -P n 1 8 'cmd --threads {{n}}'"
    )]
    NoParameters(RunId),
    #[error("run {id} has no parameter '{param}'; its parameters: {listed}")]
    NoSuchParameter {
        id: RunId,
        param: String,
        listed: String,
    },
    #[error("run {id} has the parameters {listed}: say which one is N with --param NAME")]
    WhichParameter { id: RunId, listed: String },
    #[error("run {id}: cannot tell which of its commands '{name}' was timed from")]
    WhichCommand { id: RunId, name: String },
    #[error("--command {number}: run {id} timed {count} commands, numbered from 1")]
    CommandNumber {
        number: usize,
        id: RunId,
        count: usize,
    },
    #[error(
        "--command '{command}' is not a command of run {id}; give its number or its command line: {numbered}"
    )]
    NoSuchCommand {
        command: String,
        id: RunId,
        numbered: String,
    },
    #[error("--where {name}={value}: '{name}' is N itself; --where fixes the other parameters")]
    WhereIsN { name: String, value: String },
    #[error("--where {name}: run {id} has no parameter '{name}'; its parameters: {listed}")]
    WhereNoParameter {
        name: String,
        id: RunId,
        listed: String,
    },
    #[error(
        "--where {name}={value}: no benchmark of run {id} has that value; '{name}' takes {takes}"
    )]
    WhereNoValue {
        name: String,
        value: String,
        id: RunId,
        takes: String,
    },
    #[error("run {id} holds {count} curves over {param}: pick one with {hints}")]
    ManyCurves {
        id: RunId,
        count: usize,
        param: String,
        hints: String,
    },
    #[error(
        "parameter '{param}' of run {id} has the value '{raw}', which is not a number: N must be numeric; choose another with --param (parameters: {listed})"
    )]
    NotNumeric {
        param: String,
        id: RunId,
        raw: String,
        listed: String,
    },
    #[error("run {id} timed {param} = {raw} more than once in this curve")]
    TimedTwice {
        id: RunId,
        param: String,
        raw: String,
    },
}

/// The part of an exec run's record a sweep needs: the command templates
/// and the parameters as `dyno run` was given them. Read on its own (each
/// part may be missing), so a run whose record lacks a later field still
/// gives its curve.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct Sweep {
    commands: Vec<CommandSpec>,
    parameters: Vec<Parameter>,
}

impl Sweep {
    fn of(run: &Run) -> Sweep {
        Sweep::deserialize(&run.settings).unwrap_or_default()
    }
}

/// What the benchmark of `command` is called under `assignment`.
fn bench_name(command: &CommandSpec, assignment: &dyno_exec::params::Assignment) -> String {
    dyno_exec::params::substitute(
        command.name.as_ref().unwrap_or(&command.template),
        assignment,
    )
}

/// The curve `selection` picks out of an exec run.
pub fn curve(run: &Run, selection: &Selection) -> Result<Curve, SavedError> {
    let id = run.id;
    if run.kind != Kind::Exec {
        return Err(SavedError::NotASweep { id, kind: run.kind });
    }
    let benches = benches(run);
    if benches.is_empty() {
        return Err(SavedError::NoCommands(id));
    }
    let sweep = Sweep::of(run);
    let names = parameter_names(&sweep, &benches);
    if names.is_empty() {
        return Err(SavedError::NoParameters(id));
    }
    let param = which_parameter(id, selection, &names)?;
    let templates = &sweep.commands;
    let mut chosen = by_template(id, templates, &benches)?;
    if let Some(c) = &selection.command {
        let index = command_index(id, c, templates)?;
        chosen.retain(|(i, _)| *i == index);
    }
    fix_wheres(id, selection, &param, &names, &mut chosen)?;
    let ((index, others), benches) = one_curve(id, &param, &names, templates, &chosen)?;
    let (points, mut warnings) = points(id, &param, &names, benches)?;
    if !run.warnings.is_empty() {
        warnings.push(Warning {
            code: "source_warnings".into(),
            message: format!(
                "the sweep (run {id}) has {} warnings of its own; see dyno show {id}",
                run.warnings.len()
            ),
        });
    }

    let template = templates
        .get(index)
        .map_or_else(|| benches_name(&chosen), |t| t.template.clone());
    let fixed: BTreeMap<&str, &str> = others.into_iter().collect();
    let fixed_text = if fixed.is_empty() {
        String::new()
    } else {
        let pairs: Vec<String> = fixed.iter().map(|(k, v)| format!("{k}={v}")).collect();
        format!(" with {}", pairs.join(", "))
    };
    Ok(Curve {
        points,
        measure: Measure::Time,
        settings: dyno_model::record::ScaleRecord::Run(dyno_model::record::RunSource {
            run_id: id.to_string(),
            parameter: param.to_owned(),
            command: template.clone(),
            fixed: fixed
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect(),
            measure: "time".to_owned(),
            value: "mean wall time".to_owned(),
        }),
        description: format!("scaling of '{template}'{fixed_text} over {param} (run {id})"),
        environment: run.environment.clone(),
        warnings,
        extra: Vec::new(),
    })
}

/// The parameter that is N: the one asked for, or the only one.
fn which_parameter(
    id: RunId,
    selection: &Selection,
    names: &[String],
) -> Result<String, SavedError> {
    let listed = names.join(", ");
    match (&selection.param, names) {
        (Some(p), _) if names.contains(p) => Ok(p.clone()),
        (Some(p), _) => Err(SavedError::NoSuchParameter {
            id,
            param: p.clone(),
            listed,
        }),
        (None, [only]) => Ok(only.clone()),
        (None, _) => Err(SavedError::WhichParameter { id, listed }),
    }
}

/// Each benchmark with the index of the command template it was timed
/// from.
fn by_template<'a, 'b>(
    id: RunId,
    templates: &[CommandSpec],
    benches: &'b [Bench<'a>],
) -> Result<Vec<(usize, &'b Bench<'a>)>, SavedError> {
    // `dyno run` times each template under every combination of the
    // parameters, template by template; the position tells two templates
    // apart when they give the same command line (`{a}{b}` and `{b}{a}`).
    let per_template = (templates.len() > 1 && benches.len().is_multiple_of(templates.len()))
        .then(|| benches.len() / templates.len());
    let mut chosen = Vec::with_capacity(benches.len());
    for (k, b) in benches.iter().enumerate() {
        let assignment: dyno_exec::params::Assignment = b
            .parameters
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        let matching: Vec<usize> = (0..templates.len())
            .filter(|&i| bench_name(&templates[i], &assignment) == b.name)
            .collect();
        let index = match (matching.as_slice(), per_template.map(|p| k / p)) {
            _ if templates.len() <= 1 => 0,
            ([one], _) => *one,
            // No template gives the name when `dyno run` numbered a
            // repeated command line ("sleep 0.011 (2)"): the position does.
            (many, Some(by_position)) if many.is_empty() || many.contains(&by_position) => {
                by_position
            }
            _ => {
                return Err(SavedError::WhichCommand {
                    id,
                    name: b.name.to_owned(),
                });
            }
        };
        chosen.push((index, b));
    }
    Ok(chosen)
}

/// The index of the template `--command` names: its number from 1, or its
/// command line.
fn command_index(id: RunId, command: &str, templates: &[CommandSpec]) -> Result<usize, SavedError> {
    if let Ok(number) = command.parse::<usize>() {
        if number == 0 || number > templates.len().max(1) {
            return Err(SavedError::CommandNumber {
                number,
                id,
                count: templates.len().max(1),
            });
        }
        return Ok(number - 1);
    }
    templates
        .iter()
        .position(|t| t.template == command)
        .ok_or_else(|| SavedError::NoSuchCommand {
            command: command.to_owned(),
            id,
            numbered: numbered(templates),
        })
}

/// Keeps the benchmarks whose other parameters have the values `--where`
/// fixes.
fn fix_wheres(
    id: RunId,
    selection: &Selection,
    param: &str,
    names: &[String],
    chosen: &mut Vec<(usize, &Bench<'_>)>,
) -> Result<(), SavedError> {
    for (name, value) in &selection.wheres {
        if *name == param {
            return Err(SavedError::WhereIsN {
                name: name.clone(),
                value: value.clone(),
            });
        }
        if !names.contains(name) {
            return Err(SavedError::WhereNoParameter {
                name: name.clone(),
                id,
                listed: names.join(", "),
            });
        }
        let before: Vec<String> = distinct(
            chosen
                .iter()
                .filter_map(|(_, b)| b.parameters.get(name.as_str())),
        );
        chosen.retain(|(_, b)| b.parameters.get(name.as_str()) == Some(&value.as_str()));
        if chosen.is_empty() {
            return Err(SavedError::WhereNoValue {
                name: name.clone(),
                value: value.clone(),
                id,
                takes: before.join(", "),
            });
        }
    }
    Ok(())
}

/// The one curve the chosen benchmarks make, by its key; more than one is
/// refused with the choices that would pick one.
fn one_curve<'a, 'b>(
    id: RunId,
    param: &str,
    names: &[String],
    templates: &[CommandSpec],
    chosen: &[(usize, &'b Bench<'a>)],
) -> Result<(CurveKey<'a>, Vec<&'b Bench<'a>>), SavedError> {
    // The curves left: one per command and values of the other parameters.
    let mut curves: BTreeMap<CurveKey<'a>, Vec<&'b Bench<'a>>> = BTreeMap::new();
    for (i, b) in chosen {
        let others: Vec<(&str, &str)> = b
            .parameters
            .iter()
            .filter(|(k, _)| **k != param)
            .map(|(k, v)| (*k, *v))
            .collect();
        curves.entry((*i, others)).or_default().push(b);
    }
    if curves.len() > 1 {
        let mut hints = Vec::new();
        let commands: Vec<usize> = distinct_usize(curves.keys().map(|k| k.0));
        if commands.len() > 1 {
            let list: Vec<String> = commands
                .iter()
                .map(|&i| format!("{} '{}'", i + 1, templates[i].template))
                .collect();
            hints.push(format!("--command with one of {}", list.join(", ")));
        }
        for name in names.iter().filter(|n| **n != param) {
            let values = distinct(
                chosen
                    .iter()
                    .filter_map(|(_, b)| b.parameters.get(name.as_str())),
            );
            if values.len() > 1 {
                hints.push(format!(
                    "--where {name}=VALUE (one of {})",
                    values.join(", ")
                ));
            }
        }
        return Err(SavedError::ManyCurves {
            id,
            count: curves.len(),
            param: param.to_owned(),
            hints: hints.join(" and "),
        });
    }
    Ok(curves.into_iter().next().expect("one curve"))
}

/// The curve's points, N from each benchmark's value of `param` and the
/// value its mean wall time, and a warning for each benchmark with failed
/// runs.
fn points(
    id: RunId,
    param: &str,
    names: &[String],
    benches: Vec<&Bench<'_>>,
) -> Result<(Vec<Measured>, Vec<Warning>), SavedError> {
    let mut points = Vec::with_capacity(benches.len());
    let mut warnings = Vec::new();
    for b in benches {
        let raw = b.parameters.get(param).copied().unwrap_or_default();
        let n: f64 = match raw.trim().parse() {
            Ok(n) => n,
            Err(_) => {
                return Err(SavedError::NotNumeric {
                    param: param.to_owned(),
                    id,
                    raw: raw.to_owned(),
                    listed: names.join(", "),
                });
            }
        };
        if points.iter().any(|p: &Measured| p.n == n) {
            return Err(SavedError::TimedTwice {
                id,
                param: param.to_owned(),
                raw: raw.to_owned(),
            });
        }
        let mut metric = b.wall.clone();
        metric.name = scale::TIME.into();
        metric.labels.clear();
        if let Some(failed) = b.failed.filter(|f| f.value > 0.0) {
            warnings.push(Warning {
                code: "failed_runs".into(),
                message: format!(
                    "'{}' ({param} = {raw}) failed {} of its runs in the sweep; its time may not be of the work you meant",
                    b.name, failed.value
                ),
            });
        }
        points.push(Measured {
            n,
            value: metric.value / 1e9,
            metric,
        });
    }
    Ok((points, warnings))
}

/// The run's parameter names, in the order `dyno run` was given them.
fn parameter_names(sweep: &Sweep, benches: &[Bench<'_>]) -> Vec<String> {
    let mut names: Vec<String> = sweep.parameters.iter().map(|p| p.name.clone()).collect();
    for b in benches {
        for name in b.parameters.keys() {
            if !names.iter().any(|n| n == name) {
                names.push((*name).to_owned());
            }
        }
    }
    names
}

fn numbered(templates: &[CommandSpec]) -> String {
    templates
        .iter()
        .enumerate()
        .map(|(i, t)| format!("{} '{}'", i + 1, t.template))
        .collect::<Vec<_>>()
        .join(", ")
}

/// A name for the curve when the run recorded no command templates.
fn benches_name(chosen: &[(usize, &Bench<'_>)]) -> String {
    chosen
        .first()
        .map_or_else(String::new, |(_, b)| b.name.to_owned())
}

/// The values in first-seen order, each once.
fn distinct<S: AsRef<str>>(values: impl Iterator<Item = S>) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for v in values {
        let v = v.as_ref();
        if !out.iter().any(|o| o == v) {
            out.push(v.to_owned());
        }
    }
    out
}

fn distinct_usize(values: impl Iterator<Item = usize>) -> Vec<usize> {
    let mut out = Vec::new();
    for v in values {
        if !out.contains(&v) {
            out.push(v);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use dyno_model::{Direction, Metric, Unit};
    use serde_json::json;

    /// An exec run of `templates` under x, y ∈ {1, 2}, timed template by
    /// template; each benchmark's wall time is `ms(command)` milliseconds.
    fn sweep(templates: &[&str], ms: impl Fn(&str) -> f64) -> Run {
        let mut run = Run::new(Kind::Exec, "sweep");
        run.settings = json!({
            "commands": templates.iter().map(|t| json!({"template": t, "name": null})).collect::<Vec<_>>(),
            "parameters": [{"name": "x", "values": ["1", "2"]}, {"name": "y", "values": ["1", "2"]}],
        });
        for t in templates {
            for x in ["1", "2"] {
                for y in ["1", "2"] {
                    let a = vec![
                        ("x".to_owned(), x.to_owned()),
                        ("y".to_owned(), y.to_owned()),
                    ];
                    let name = dyno_exec::params::substitute(t, &a);
                    let wall = Metric::new(
                        "wall_ns",
                        Unit::Ns,
                        Direction::LowerIsBetter,
                        ms(&name) * 1e6,
                    )
                    .with_label("command", &name)
                    .with_label("param.x", x)
                    .with_label("param.y", y);
                    run.metrics.push(wall);
                }
            }
        }
        run
    }

    fn pick(param: &str, command: Option<&str>, wheres: &[(&str, &str)]) -> Selection {
        Selection {
            param: Some(param.to_owned()),
            command: command.map(str::to_owned),
            wheres: wheres
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect(),
        }
    }

    #[test]
    fn commands_that_print_alike_are_told_apart_by_position() {
        // 'a {x}{y}' and 'a {y}{x}' both give 'a 11' and 'a 22'.
        let run = sweep(&["a {x}{y}", "a {y}{x}"], |name| {
            name[2..].parse::<f64>().unwrap()
        });
        let curve = curve(&run, &pick("x", Some("2"), &[("y", "1")])).unwrap();
        let points: Vec<(f64, f64)> = curve.points.iter().map(|p| (p.n, p.value)).collect();
        // Template 2 with y = 1: 'a 11' (x = 1) and 'a 12' (x = 2).
        assert_eq!(points, [(1.0, 0.011), (2.0, 0.012)]);
        let dyno_model::record::ScaleRecord::Run(source) = &curve.settings else {
            panic!("not a run's curve: {:?}", curve.settings);
        };
        assert_eq!(source.command, "a {y}{x}");
        assert_eq!(
            source.fixed,
            BTreeMap::from([("y".to_owned(), "1".to_owned())])
        );
        assert_eq!(curve.points[0].metric.name, "time_ns");
        assert!(curve.points[0].metric.labels.is_empty());
    }

    #[test]
    fn ambiguous_and_impossible_choices_are_refused_with_the_choices() {
        let run = sweep(&["a {x}{y}"], |_| 5.0);
        let err = curve(&run, &Selection::default()).unwrap_err().to_string();
        assert!(
            err.contains("parameters x, y") && err.contains("--param"),
            "{err}"
        );
        let err = curve(&run, &pick("x", None, &[])).unwrap_err().to_string();
        assert!(
            err.contains("2 curves over x") && err.contains("--where y=VALUE (one of 1, 2)"),
            "{err}"
        );
        let err = curve(&run, &pick("x", None, &[("x", "1")]))
            .unwrap_err()
            .to_string();
        assert!(err.contains("is N itself"), "{err}");
        let err = curve(&run, &pick("x", Some("a {y}"), &[("y", "1")]))
            .unwrap_err()
            .to_string();
        assert!(err.contains("1 'a {x}{y}'"), "{err}");
        let mut other = run.clone();
        other.kind = Kind::Http;
        let err = curve(&other, &pick("x", None, &[]))
            .unwrap_err()
            .to_string();
        assert!(err.contains("http run"), "{err}");
    }
}
