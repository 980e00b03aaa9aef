//! pgbench's built-in scripts, and the `NAME@WEIGHT` script argument.
//!
//! These come before parsing: the command line names a built-in (or a
//! file) with an optional weight, and the built-in's text goes to
//! `Script::parse` as a file's would.

/// The start that tpcb-like and simple-update share: the variables, then
/// the account's update and its read-back.
macro_rules! account_update {
    () => {
        "\
\\set aid random(1, 100000 * :scale)
\\set bid random(1, 1 * :scale)
\\set tid random(1, 10 * :scale)
\\set delta random(-5000, 5000)
BEGIN;
UPDATE pgbench_accounts SET abalance = abalance + :delta WHERE aid = :aid;
SELECT abalance FROM pgbench_accounts WHERE aid = :aid;
"
    };
}

/// The end that tpcb-like and simple-update share: the history row.
macro_rules! history_insert {
    () => {
        "\
INSERT INTO pgbench_history (tid, bid, aid, delta, mtime) VALUES (:tid, :bid, :aid, :delta, CURRENT_TIMESTAMP);
END;
"
    };
}

const TPCB_LIKE: &str = concat!(
    account_update!(),
    "\
UPDATE pgbench_tellers SET tbalance = tbalance + :delta WHERE tid = :tid;
UPDATE pgbench_branches SET bbalance = bbalance + :delta WHERE bid = :bid;
",
    history_insert!(),
);

/// tpcb-like without the tellers' and branches' updates.
const SIMPLE_UPDATE: &str = concat!(account_update!(), history_insert!());

const SELECT_ONLY: &str = "\
\\set aid random(1, 100000 * :scale)
SELECT abalance FROM pgbench_accounts WHERE aid = :aid;
";

const BUILTINS: [(&str, &str); 3] = [
    ("tpcb-like", TPCB_LIKE),
    ("simple-update", SIMPLE_UPDATE),
    ("select-only", SELECT_ONLY),
];

/// The names of pgbench's built-in scripts (for `-b list`).
pub fn builtin_names() -> impl Iterator<Item = &'static str> {
    BUILTINS.iter().map(|(name, _)| *name)
}

/// One of pgbench's built-in scripts, by name or by an unambiguous prefix
/// of it (`tpcb`, `simple`, `sel`), as pgbench's `-b` takes them: its full
/// name and its text.
pub fn builtin(name: &str) -> Result<(&'static str, &'static str), String> {
    let all = || builtin_names().collect::<Vec<_>>().join(", ");
    if name.is_empty() {
        return Err(format!(
            "a built-in script's name is needed; they are {}",
            all()
        ));
    }
    if let Some(&found) = BUILTINS.iter().find(|(n, _)| *n == name) {
        return Ok(found);
    }
    let candidates: Vec<_> = BUILTINS
        .iter()
        .filter(|(n, _)| n.starts_with(name))
        .collect();
    match candidates.as_slice() {
        [found] => Ok(**found),
        [] => Err(format!(
            "no built-in script is called '{name}'; the built-ins are {}",
            all()
        )),
        many => Err(format!(
            "'{name}' is ambiguous: it begins {}; write more of the name",
            many.iter()
                .map(|(n, _)| *n)
                .collect::<Vec<_>>()
                .join(" and ")
        )),
    }
}

/// Splits pgbench's `NAME@WEIGHT` script argument (for `-b` and `-f`) into
/// the name and the weight, a non-negative integer, 1 when not given. The
/// split is at the last `@`, so a file name may hold one.
pub fn weighted(arg: &str) -> Result<(&str, u32), String> {
    let Some((name, weight)) = arg.rsplit_once('@') else {
        if arg.is_empty() {
            return Err("a script's name is needed, optionally with @WEIGHT".into());
        }
        return Ok((arg, 1));
    };
    let usage = "write NAME@WEIGHT, WEIGHT a non-negative integer, e.g. tpcb-like@2";
    if name.is_empty() {
        return Err(format!("'{arg}' has no script name before '@'; {usage}"));
    }
    if weight.is_empty() || !weight.bytes().all(|b| b.is_ascii_digit()) {
        return Err(format!(
            "'{arg}': the weight '{weight}' is not a non-negative integer; {usage}"
        ));
    }
    let weight = weight
        .parse()
        .map_err(|_| format!("'{arg}': the weight is too large (at most {})", u32::MAX))?;
    Ok((name, weight))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::script::testing::{VARS, sqls};
    use crate::script::{CommandKind, Script, Value};

    #[test]
    fn tpcb_like_renders_in_all_three_protocols() {
        let (name, text) = builtin("tpcb-like").unwrap();
        let script = Script::parse(name, text).unwrap();
        assert_eq!(script.commands().len(), 11);
        let mut vars = script.initial_values(&VARS);
        for (var, value) in [("aid", 123_456), ("bid", 7), ("tid", 61), ("delta", -4321)] {
            vars[script.slot(var).unwrap()] = Value::Int(value);
        }
        let sql = sqls(&script);
        let simple: Vec<String> = sql.iter().map(|s| s.render_simple(&vars)).collect();
        assert_eq!(
            simple,
            [
                "BEGIN",
                "UPDATE pgbench_accounts SET abalance = abalance + -4321 WHERE aid = 123456",
                "SELECT abalance FROM pgbench_accounts WHERE aid = 123456",
                "UPDATE pgbench_tellers SET tbalance = tbalance + -4321 WHERE tid = 61",
                "UPDATE pgbench_branches SET bbalance = bbalance + -4321 WHERE bid = 7",
                "INSERT INTO pgbench_history (tid, bid, aid, delta, mtime) VALUES (61, 7, 123456, -4321, CURRENT_TIMESTAMP)",
                "END",
            ]
        );
        let parameterized: Vec<&str> = sql.iter().map(|s| s.parameterized()).collect();
        assert_eq!(
            parameterized,
            [
                "BEGIN",
                "UPDATE pgbench_accounts SET abalance = abalance + $1 WHERE aid = $2",
                "SELECT abalance FROM pgbench_accounts WHERE aid = $1",
                "UPDATE pgbench_tellers SET tbalance = tbalance + $1 WHERE tid = $2",
                "UPDATE pgbench_branches SET bbalance = bbalance + $1 WHERE bid = $2",
                "INSERT INTO pgbench_history (tid, bid, aid, delta, mtime) VALUES ($1, $2, $3, $4, CURRENT_TIMESTAMP)",
                "END",
            ]
        );
        let params: Vec<String> = sql[5].params(&vars).map(|v| v.to_string()).collect();
        assert_eq!(params, ["61", "7", "123456", "-4321"]);
        let params: Vec<Value> = sql[1].params(&vars).cloned().collect();
        assert_eq!(params, [Value::Int(-4321), Value::Int(123_456)]);
        assert!(sql[0].param_slots().is_empty());
    }

    #[test]
    fn builtin_sets_draw_within_pgbench_ranges() {
        let (name, text) = builtin("tpcb-like").unwrap();
        let script = Script::parse(name, text).unwrap();
        let mut vars = script.initial_values(&VARS);
        let mut rng = fastrand::Rng::with_seed(7);
        let ranges = [
            ("aid", 1, 1_000_000),
            ("bid", 1, 10),
            ("tid", 1, 100),
            ("delta", -5000, 5000),
        ];
        let mut seen_low = [false; 4];
        let mut seen_high = [false; 4];
        for _ in 0..20_000 {
            for command in script.commands() {
                if let CommandKind::Set { slot, expr } = &command.kind {
                    vars[*slot] = expr.eval(&vars, &mut rng).unwrap();
                }
            }
            for (i, (var, lo, hi)) in ranges.iter().enumerate() {
                let Value::Int(v) = vars[script.slot(var).unwrap()] else {
                    panic!("{var} is not an integer");
                };
                assert!((*lo..=*hi).contains(&v), "{var} = {v}");
                seen_low[i] |= v <= lo + (hi - lo) / 10;
                seen_high[i] |= v >= hi - (hi - lo) / 10;
            }
        }
        assert_eq!(seen_low, [true; 4]);
        assert_eq!(seen_high, [true; 4]);
    }

    #[test]
    fn simple_update_and_select_only() {
        let (name, text) = builtin("simple").unwrap();
        assert_eq!(name, "simple-update");
        let script = Script::parse(name, text).unwrap();
        let mut vars = script.initial_values(&VARS);
        for (var, value) in [("aid", 5), ("bid", 1), ("tid", 2), ("delta", 17)] {
            vars[script.slot(var).unwrap()] = Value::Int(value);
        }
        let simple: Vec<String> = sqls(&script)
            .iter()
            .map(|s| s.render_simple(&vars))
            .collect();
        assert_eq!(
            simple,
            [
                "BEGIN",
                "UPDATE pgbench_accounts SET abalance = abalance + 17 WHERE aid = 5",
                "SELECT abalance FROM pgbench_accounts WHERE aid = 5",
                "INSERT INTO pgbench_history (tid, bid, aid, delta, mtime) VALUES (2, 1, 5, 17, CURRENT_TIMESTAMP)",
                "END",
            ]
        );

        let (name, text) = builtin("select-only").unwrap();
        let script = Script::parse(name, text).unwrap();
        assert_eq!(script.commands().len(), 2);
        let mut vars = script.initial_values(&VARS);
        vars[script.slot("aid").unwrap()] = Value::Int(99);
        let sql = sqls(&script);
        assert_eq!(
            sql[0].render_simple(&vars),
            "SELECT abalance FROM pgbench_accounts WHERE aid = 99"
        );
        assert_eq!(
            sql[0].parameterized(),
            "SELECT abalance FROM pgbench_accounts WHERE aid = $1"
        );
        assert_eq!(sql[0].param_slots(), [script.slot("aid").unwrap()]);
    }

    #[test]
    fn builtin_names_and_prefixes() {
        assert_eq!(builtin("tpcb").unwrap().0, "tpcb-like");
        assert_eq!(builtin("t").unwrap().0, "tpcb-like");
        assert_eq!(builtin("sel").unwrap().0, "select-only");
        assert_eq!(builtin("select-only").unwrap().0, "select-only");
        let ambiguous = builtin("s").unwrap_err();
        assert!(ambiguous.contains("ambiguous"), "{ambiguous}");
        assert!(ambiguous.contains("simple-update") && ambiguous.contains("select-only"));
        let unknown = builtin("tpcc").unwrap_err();
        assert!(
            unknown.contains("'tpcc'") && unknown.contains("tpcb-like"),
            "{unknown}"
        );
        assert!(builtin("").is_err());
        assert_eq!(
            builtin_names().collect::<Vec<_>>(),
            ["tpcb-like", "simple-update", "select-only"]
        );
    }

    #[test]
    fn weights() {
        assert_eq!(weighted("tpcb-like@5"), Ok(("tpcb-like", 5)));
        assert_eq!(weighted("select-only@0"), Ok(("select-only", 0)));
        assert_eq!(weighted("my.sql"), Ok(("my.sql", 1)));
        assert_eq!(weighted("dir@host/my.sql@3"), Ok(("dir@host/my.sql", 3)));
        for bad in [
            "x@",
            "x@-1",
            "x@+2",
            "x@two",
            "x@1.5",
            "@3",
            "",
            "x@99999999999",
        ] {
            let err = weighted(bad).unwrap_err();
            assert!(!err.is_empty(), "{bad}");
        }
        assert!(
            weighted("x@two")
                .unwrap_err()
                .contains("non-negative integer")
        );
        assert!(weighted("x@99999999999").unwrap_err().contains("too large"));
    }
}
