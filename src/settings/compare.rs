//! `dyno compare`'s sides, as typed (`ID`, `NAME=ID,ID…`,
//! `NAME=@tag:T,@since:WHEN…`), resolved into what each selects; the
//! command looks them up in the store.

use anyhow::{Result, bail};
use dyno_store::Filter;

/// One side of a comparison before the store is read.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Side {
    /// Its name in the tables: `NAME`, else the side as typed.
    pub name: String,
    /// What follows `NAME=`, or the whole side.
    pub selector: String,
    pub pick: Pick,
}

/// What a side selects.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Pick {
    /// Runs (or groups) by id or unique prefix.
    Ids(Vec<String>),
    /// The runs that match: the filters common to every side, narrowed by
    /// the side's own `@key:value` terms.
    Matching(Filter),
}

/// Reads one side; `common` is the filter every side also matches.
pub(crate) fn side(side: &str, common: &Filter) -> Result<Side> {
    let (name, selector) = match side.split_once('=') {
        Some((name, selector)) if !name.is_empty() && !name.starts_with('@') => {
            (name.to_owned(), selector)
        }
        _ => (side.to_owned(), side),
    };
    if selector.trim().is_empty() {
        bail!("side '{side}' selects nothing: write NAME=ID or NAME=@tag:T");
    }
    let terms: Vec<&str> = selector.split(',').map(str::trim).collect();
    let filters = terms.iter().filter(|t| t.starts_with('@')).count();
    let pick = if filters == 0 {
        Pick::Ids(terms.iter().map(|&id| id.to_owned()).collect())
    } else if filters == terms.len() {
        let mut filter = common.clone();
        for term in &terms {
            apply(&mut filter, term)?;
        }
        Pick::Matching(filter)
    } else {
        bail!(
            "'{selector}' mixes run ids and @filters: a side is either ids (a,b) or filters (@tag:x,@kind:http)"
        );
    };
    Ok(Side {
        name,
        selector: selector.to_owned(),
        pick,
    })
}

/// Adds one `@key:value` term to `filter`.
fn apply(filter: &mut Filter, term: &str) -> Result<()> {
    let Some((key, value)) = term.strip_prefix('@').and_then(|t| t.split_once(':')) else {
        bail!("'{term}' is not a filter: write @tag:T, @host:H, @kind:K, @since:WHEN or @last:N");
    };
    match key {
        "tag" => filter.tags.push(value.to_owned()),
        "host" => filter.host = Some(value.to_owned()),
        "kind" => filter.kind = Some(crate::cli::parse_kind(value).map_err(anyhow::Error::msg)?),
        "since" => {
            filter.since = Some(crate::cli::parse_since(value).map_err(anyhow::Error::msg)?);
        }
        "last" => match value.parse::<usize>() {
            Ok(n) if n >= 1 => filter.limit = Some(n),
            _ => bail!("'{term}': @last takes a number of runs, 1 or more"),
        },
        _ => bail!(
            "'{term}': unknown filter @{key}; the filters are @tag:T, @host:H, @kind:K, @since:WHEN and @last:N"
        ),
    }
    Ok(())
}

/// A filter as the flags that set it (`--tag nope --kind http`), for a
/// message that says what was asked; `--limit` is left out.
pub(crate) fn filter_flags(filter: &Filter) -> Vec<String> {
    let Filter {
        kind,
        tags,
        host,
        since,
        limit: _,
    } = filter;
    let mut out: Vec<String> = kind.iter().map(|k| format!("--kind {k}")).collect();
    out.extend(tags.iter().map(|t| format!("--tag {t}")));
    out.extend(host.iter().map(|h| format!("--host {h}")));
    out.extend(since.iter().map(|t| format!("--since {t}")));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_side_is_ids_or_filters_never_both() {
        let common = Filter {
            host: Some("a".into()),
            ..Filter::default()
        };
        let s = side("x=@tag:main,@last:3", &common).unwrap();
        assert_eq!(
            (s.name.as_str(), s.selector.as_str()),
            ("x", "@tag:main,@last:3")
        );
        let Pick::Matching(f) = s.pick else {
            panic!("filters")
        };
        assert_eq!(
            (f.tags, f.limit, f.host),
            (vec!["main".to_owned()], Some(3), Some("a".to_owned()))
        );
        let s = side("01ab, 02cd", &common).unwrap();
        assert_eq!(s.name, "01ab, 02cd");
        assert_eq!(s.pick, Pick::Ids(vec!["01ab".into(), "02cd".into()]));
        for (bad, says) in [
            ("x=", "selects nothing"),
            ("x=01ab,@tag:t", "mixes run ids"),
            ("@tag", "is not a filter"),
            ("@colour:red", "unknown filter @colour"),
            ("@last:0", "1 or more"),
            ("@kind:nope", "nope"),
        ] {
            let e = side(bad, &common).unwrap_err().to_string();
            assert!(e.contains(says), "{bad}: {e}");
        }
    }
}
