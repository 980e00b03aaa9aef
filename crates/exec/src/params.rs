//! Benchmark parameters: `-P NAME MIN MAX --step S` ranges and `-L NAME a,b,c`
//! lists, their cross product, and `{NAME}` substitution in command
//! templates.
//!
//! A template is checked before anything runs: a `{word}` that names no
//! parameter is an error (a typo would otherwise time the wrong command).
//! `{{` and `}}` stand for literal braces, for programs such as awk whose
//! own syntax uses them; `${NAME}` is left to the shell.

use std::fmt::Write as _;

/// The most values one parameter may take: a sweep bigger than this is
/// almost certainly a mistake in MIN, MAX or the step.
pub const MAX_VALUES: usize = 100_000;

pub use dyno_model::record::Parameter;

/// One value for each parameter: what a single benchmark substitutes.
pub type Assignment = Vec<(String, String)>;

/// A parameter or template that cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ParamError {
    #[error(
        "'{0}' is not a parameter name: use letters, digits and '_', starting with a letter or '_'"
    )]
    BadName(String),
    #[error("parameter '{0}' is defined twice: give each -P / -L its own name")]
    Duplicate(String),
    #[error("parameter '{name}': '{value}' is not a number (MIN, MAX and --step must be numbers)")]
    NotANumber { name: String, value: String },
    #[error("parameter '{name}': MIN {min} is greater than MAX {max}: swap them")]
    MinAboveMax {
        name: String,
        min: String,
        max: String,
    },
    #[error("parameter '{name}': the step must be greater than zero, not {step}")]
    BadStep { name: String, step: String },
    #[error(
        "parameter '{name}' would take more than {MAX_VALUES} values: use a larger --step or a smaller range"
    )]
    TooMany { name: String },
    #[error("parameter '{0}' has an empty list of values: give at least one, e.g. -L {0} a,b,c")]
    EmptyList(String),
    #[error(
        "parameter '{0}' has an empty value in its list (two commas in a row or a trailing comma)"
    )]
    EmptyValue(String),
    #[error(
        "parameter '{name}' lists '{value}' twice: each value makes one benchmark, so a repeat would time the same thing twice under one name"
    )]
    DuplicateValue { name: String, value: String },
    #[error(
        "parameter '{0}' is not used: no command, setup, prepare, conclude or cleanup command holds {{{0}}}, so every value would time the same thing; put {{{0}}} in a command or drop the parameter"
    )]
    Unused(String),
    #[error("{template:?} uses {{{placeholder}}}, which is not a parameter{known}")]
    Unknown {
        template: String,
        placeholder: String,
        known: String,
    },
}

/// A numeric range from `min` to `max` inclusive in steps of `step`
/// (default 1). Integers stay integers; with decimals the values keep as
/// many decimal places as the most precise of the three numbers.
pub fn range(
    name: &str,
    min: &str,
    max: &str,
    step: Option<&str>,
) -> Result<Parameter, ParamError> {
    check_name(name)?;
    let step_text = step.unwrap_or("1");
    let number = |value: &str| {
        value
            .trim()
            .parse::<f64>()
            .ok()
            .filter(|v| v.is_finite())
            .ok_or_else(|| ParamError::NotANumber {
                name: name.to_owned(),
                value: value.to_owned(),
            })
    };
    let (lo, hi, by) = (number(min)?, number(max)?, number(step_text)?);
    if lo > hi {
        return Err(ParamError::MinAboveMax {
            name: name.to_owned(),
            min: min.to_owned(),
            max: max.to_owned(),
        });
    }
    if by <= 0.0 {
        return Err(ParamError::BadStep {
            name: name.to_owned(),
            step: step_text.to_owned(),
        });
    }
    // Count the steps with a little slack so that 0.1-steps reach MAX
    // despite binary rounding.
    let steps = ((hi - lo) / by + 1e-9).floor();
    if steps >= MAX_VALUES as f64 {
        return Err(ParamError::TooMany {
            name: name.to_owned(),
        });
    }
    let decimals = [min, max, step_text]
        .iter()
        .map(|t| decimal_places(t))
        .max()
        .unwrap_or(0);
    let values = (0..=steps as usize)
        .map(|i| format!("{:.*}", decimals, lo + by * i as f64))
        .collect();
    Ok(Parameter {
        name: name.to_owned(),
        values,
    })
}

/// A list of values separated by commas, used as given.
pub fn list(name: &str, values: &str) -> Result<Parameter, ParamError> {
    check_name(name)?;
    if values.is_empty() {
        return Err(ParamError::EmptyList(name.to_owned()));
    }
    let values: Vec<String> = values.split(',').map(str::to_owned).collect();
    if values.iter().any(String::is_empty) {
        return Err(ParamError::EmptyValue(name.to_owned()));
    }
    if let Some(value) = values
        .iter()
        .enumerate()
        .find_map(|(i, v)| values[..i].contains(v).then_some(v))
    {
        return Err(ParamError::DuplicateValue {
            name: name.to_owned(),
            value: value.clone(),
        });
    }
    Ok(Parameter {
        name: name.to_owned(),
        values,
    })
}

fn decimal_places(number: &str) -> usize {
    number.trim().split_once('.').map_or(0, |(_, frac)| {
        frac.chars().take_while(char::is_ascii_digit).count()
    })
}

fn is_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

fn check_name(name: &str) -> Result<(), ParamError> {
    if is_name(name) {
        Ok(())
    } else {
        Err(ParamError::BadName(name.to_owned()))
    }
}

/// Every combination of one value per parameter, the first parameter varying
/// slowest. With no parameters there is exactly one, empty, combination.
pub fn combinations(parameters: &[Parameter]) -> Result<Vec<Assignment>, ParamError> {
    for (i, p) in parameters.iter().enumerate() {
        if parameters[..i].iter().any(|q| q.name == p.name) {
            return Err(ParamError::Duplicate(p.name.clone()));
        }
    }
    let mut all: Vec<Assignment> = vec![Vec::new()];
    for p in parameters {
        all = all
            .into_iter()
            .flat_map(|prefix| {
                p.values.iter().map(move |v| {
                    let mut next = prefix.clone();
                    next.push((p.name.clone(), v.clone()));
                    next
                })
            })
            .collect();
    }
    Ok(all)
}

/// One piece of a parsed template.
enum Piece<'a> {
    Text(&'a str),
    Placeholder(&'a str),
}

/// Splits `template` into text and `{NAME}` placeholders, turning `{{` and
/// `}}` into single braces. A brace that starts no placeholder (`{print}`
/// with a space, `${HOME}`, `{}`) is kept as text.
fn pieces(template: &str) -> Vec<Piece<'_>> {
    let bytes = template.as_bytes();
    let mut out = Vec::new();
    let mut text_start = 0;
    let mut i = 0;
    while i < bytes.len() {
        let rest = &template[i..];
        if rest.starts_with("{{") || rest.starts_with("}}") {
            out.push(Piece::Text(&template[text_start..i + 1]));
            i += 2;
            text_start = i;
            continue;
        }
        if bytes[i] == b'{'
            && (i == 0 || bytes[i - 1] != b'$')
            && let Some(end) = rest.find('}')
            && is_name(&rest[1..end])
        {
            out.push(Piece::Text(&template[text_start..i]));
            out.push(Piece::Placeholder(&rest[1..end]));
            i += end + 1;
            text_start = i;
            continue;
        }
        i += 1;
    }
    out.push(Piece::Text(&template[text_start..]));
    out
}

/// Whether `template` holds the placeholder `{name}`.
pub fn uses(template: &str, name: &str) -> bool {
    pieces(template)
        .iter()
        .any(|p| matches!(p, Piece::Placeholder(n) if *n == name))
}

/// Checks that every `{NAME}` in `template` names one of `parameters`.
pub fn check(template: &str, parameters: &[Parameter]) -> Result<(), ParamError> {
    for piece in pieces(template) {
        if let Piece::Placeholder(name) = piece
            && !parameters.iter().any(|p| p.name == name)
        {
            let mut known = String::new();
            if parameters.is_empty() {
                known.push_str(": define it with -P or -L, or write {{ and }} for literal braces");
            } else {
                let names: Vec<&str> = parameters.iter().map(|p| p.name.as_str()).collect();
                let _ = write!(known, " (the parameters are {})", names.join(", "));
            }
            return Err(ParamError::Unknown {
                template: template.to_owned(),
                placeholder: name.to_owned(),
                known,
            });
        }
    }
    Ok(())
}

/// `template` with each `{NAME}` replaced by its value in `assignment`.
/// Call [`check`] first: a placeholder without a value is left as it was.
pub fn substitute(template: &str, assignment: &Assignment) -> String {
    let mut out = String::with_capacity(template.len());
    for piece in pieces(template) {
        match piece {
            Piece::Text(t) => out.push_str(t),
            Piece::Placeholder(name) => match assignment.iter().find(|(n, _)| n == name) {
                Some((_, value)) => out.push_str(value),
                None => {
                    let _ = write!(out, "{{{name}}}");
                }
            },
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integer_ranges_include_both_ends() {
        let p = range("N", "1", "4", None).unwrap();
        assert_eq!(p.values, ["1", "2", "3", "4"]);
        let p = range("N", "1", "8", Some("3")).unwrap();
        assert_eq!(p.values, ["1", "4", "7"]);
        let p = range("N", "5", "5", None).unwrap();
        assert_eq!(p.values, ["5"]);
    }

    #[test]
    fn decimal_ranges_reach_max_despite_rounding() {
        let p = range("d", "0", "0.3", Some("0.1")).unwrap();
        assert_eq!(p.values, ["0.0", "0.1", "0.2", "0.3"]);
        let p = range("d", "0.05", "0.1", Some("0.025")).unwrap();
        assert_eq!(p.values, ["0.050", "0.075", "0.100"]);
    }

    #[test]
    fn bad_ranges_are_refused_with_the_reason() {
        let err = range("N", "4", "1", None).unwrap_err();
        assert!(err.to_string().contains("greater than MAX"), "{err}");
        let err = range("N", "1", "4", Some("0")).unwrap_err();
        assert!(err.to_string().contains("greater than zero"), "{err}");
        let err = range("N", "1", "4", Some("-1")).unwrap_err();
        assert!(matches!(err, ParamError::BadStep { .. }));
        let err = range("N", "one", "4", None).unwrap_err();
        assert!(err.to_string().contains("'one' is not a number"), "{err}");
        let err = range("N", "0", "1e9", None).unwrap_err();
        assert!(matches!(err, ParamError::TooMany { .. }));
        let err = range("1N", "0", "1", None).unwrap_err();
        assert!(matches!(err, ParamError::BadName(_)));
    }

    #[test]
    fn lists_keep_values_as_given_and_refuse_empty_ones() {
        let p = list("cc", "gcc,clang -O2").unwrap();
        assert_eq!(p.values, ["gcc", "clang -O2"]);
        assert!(matches!(list("cc", ""), Err(ParamError::EmptyList(_))));
        assert!(matches!(list("cc", "a,,b"), Err(ParamError::EmptyValue(_))));
        assert!(matches!(list("cc", "a,"), Err(ParamError::EmptyValue(_))));
        // The audit's `-L w a,a`: two benchmarks that time the same thing.
        let err = list("w", "a,b,a").unwrap_err();
        assert_eq!(
            err,
            ParamError::DuplicateValue {
                name: "w".into(),
                value: "a".into()
            }
        );
        assert!(err.to_string().contains("'a' twice"), "{err}");
    }

    #[test]
    fn uses_finds_placeholders_only() {
        assert!(uses("sleep 0.0{n}", "n"));
        assert!(!uses("echo hi", "n"));
        assert!(!uses("echo {{n}}", "n"), "literal braces");
        assert!(!uses("echo ${n}", "n"), "left to the shell");
        assert!(!uses("echo {nn}", "n"));
    }

    #[test]
    fn combinations_are_the_cross_product_first_parameter_slowest() {
        let a = list("a", "x,y").unwrap();
        let b = range("b", "1", "3", None).unwrap();
        let all = combinations(&[a.clone(), b]).unwrap();
        let shown: Vec<String> = all
            .iter()
            .map(|c| {
                c.iter()
                    .map(|(_, v)| v.as_str())
                    .collect::<Vec<_>>()
                    .join("")
            })
            .collect();
        assert_eq!(shown, ["x1", "x2", "x3", "y1", "y2", "y3"]);
        assert_eq!(combinations(&[]).unwrap(), vec![Vec::new()]);
        assert!(matches!(
            combinations(&[a.clone(), a]),
            Err(ParamError::Duplicate(_))
        ));
    }

    #[test]
    fn substitution_fills_placeholders_and_leaves_shell_syntax_alone() {
        let n = list("N", "4").unwrap();
        let assignment = vec![("N".to_owned(), "4".to_owned())];
        let template = "make -j {N} && echo ${HOME} {} {not a name} {{N}}";
        check(template, std::slice::from_ref(&n)).unwrap();
        assert_eq!(
            substitute(template, &assignment),
            "make -j 4 && echo ${HOME} {} {not a name} {N}"
        );
        assert_eq!(substitute("awk '{{print}}'", &assignment), "awk '{print}'");
    }

    #[test]
    fn unknown_placeholders_are_errors_that_name_the_parameters() {
        let n = list("threads", "1").unwrap();
        let err = check("run -t {thread}", std::slice::from_ref(&n)).unwrap_err();
        let msg = err.to_string();
        assert!(msg.contains("{thread}") && msg.contains("threads"), "{msg}");
        let err = check("awk '{print}'", &[]).unwrap_err().to_string();
        assert!(err.contains("{print}") && err.contains("{{"), "{err}");
    }
}
