//! `dyno db run`'s script language against pgbench itself: the same
//! scripts, run by both tools on the one throwaway server, must store the
//! same values, and fail on the same expressions.

use super::db::{Pg, pg};
use crate::common::*;

/// pgbench, from the PostgreSQL packages the throwaway server comes from.
fn pgbench() -> PathBuf {
    let mut found: Vec<PathBuf> = std::fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path().join("bin/pgbench"))
        .filter(|p| p.exists())
        .collect();
    found.sort();
    found.pop().expect(
        "this test compares dyno with pgbench: install PostgreSQL (apt-get install postgresql), which scripts/pg needs too",
    )
}

/// The two tools' commands for one script, with the same flags.
struct Tools {
    pg: Pg,
    db: String,
    home: tempfile::TempDir,
    dir: tempfile::TempDir,
}

impl Tools {
    fn new() -> Tools {
        let pg = pg();
        let db = pg.database();
        pg.psql(&db, "CREATE TABLE r(name text, tool text, val text)");
        Tools {
            pg,
            db,
            home: temp(),
            dir: temp(),
        }
    }

    /// Runs `script` once in one tool (`pgbench` or `dyno`) with `flags`;
    /// its exit status, and its stderr followed by its stdout.
    fn run(&self, tool: &str, script: &str, flags: &[&str]) -> (bool, String) {
        let file = self.dir.path().join(format!("{tool}.sql"));
        std::fs::write(&file, script.replace("TOOL", tool)).unwrap();
        let file = file.to_str().unwrap();
        let mut cmd = if tool == "pgbench" {
            let mut cmd = StdCommand::new("timeout");
            cmd.arg("120")
                .arg(pgbench())
                .args(["-n", "-t", "1", "-f", file]);
            cmd
        } else {
            let mut cmd = StdCommand::new("timeout");
            cmd.arg("120")
                .arg(env!("CARGO_BIN_EXE_dyno"))
                .args(["db", "run", "-t", "1", "--no-save", "-f", file])
                .env("DYNO_HOME", self.home.path())
                .env("NO_COLOR", "1");
            cmd
        };
        let out = self.at_server(cmd.args(flags)).output().unwrap();
        // A stopped client is named in the report, on stdout.
        (
            out.status.success(),
            format!(
                "{}{}",
                String::from_utf8_lossy(&out.stderr),
                String::from_utf8_lossy(&out.stdout)
            ),
        )
    }

    /// `cmd` pointed at the test's server and database, with no password.
    fn at_server<'c>(&self, cmd: &'c mut StdCommand) -> &'c mut StdCommand {
        cmd.envs(self.pg.env.iter().map(|(k, v)| (k, v)))
            .env("PGDATABASE", &self.db)
            .env_remove("PGPASSWORD")
    }

    /// Runs each of `bad` through both tools with `flags`: both must
    /// fail.
    fn both_refuse(&self, bad: &[&str], flags: &[&str]) {
        for bad in bad {
            let (theirs, _) = self.run("pgbench", bad, flags);
            let (ours, err) = self.run("dyno", bad, flags);
            assert!(
                !theirs && !ours,
                "{bad:?} {flags:?}: pgbench ok={theirs}, dyno ok={ours} ({err})"
            );
        }
    }

    /// The values `tool` stored, by name.
    fn stored(&self, tool: &str) -> std::collections::BTreeMap<String, String> {
        let rows = self.pg.psql(
            &self.db,
            &format!("SELECT name || '=' || coalesce(val, '<NULL>') FROM r WHERE tool = '{tool}'"),
        );
        rows.lines()
            .filter_map(|l| l.split_once('='))
            .map(|(k, v)| (k.to_owned(), v.to_owned()))
            .collect()
    }
}

/// Expressions whose values pgbench and dyno must agree on: pgbench's own
/// regression expressions (001_pgbench_with_server.pl) where dyno has
/// their features, and the audit's edge cases of the same operators.
const VALUES: &[&str] = &[
    "abs(-4)",
    "greatest(5, 4, 3, 2)",
    "11 + least(-5, -4, -3, -2)",
    "int(7.3)",
    "10 + (0 + 0 * 0 - 0 / 1)",
    "10 + :scale",
    "sqrt(+1.5 * 2.0) * abs(-0.8E1)",
    "double(1 + 1) * (-75.0 / :foo)",
    "pi() * 4.9",
    "greatest(4, 2, -1.17) * 4.0 * Ln(Exp(1.0))",
    "least(-5.18, .0E0, 1.0/0) * -3.3",
    "pow(-3,3)",
    "pow(2.0,10)",
    "pow(0,0)",
    "pow(-2,-3)",
    "power(-5.0,-5.0)",
    "pow(9223372036854775807, 2)",
    "pow(10,30)",
    "1.0 = 0.0 and 1.0 != 0.0",
    "0 = 1 Or 1.0 = 1",
    "10 + mod(13 * 7 + 12, 13) - mod(-19 * 11 - 17, 19)",
    "NOT (0 > 1) AND (1 <= 1) AND NOT (0 >= 1) AND (0 < 1) AND NOT (false and true) AND (false OR TRUE) AND (NOT FALSE) AND NOT (NOT TRUE)",
    ":zy = 0 or (1 / :zy) < 0",
    ":zy > 0 and (1 / :zy) < 0",
    // -D values as pgbench reads them.
    ":i + 1",
    ":d * 2",
    ":foo",
    ":t AND TRUE",
    // The hash functions and the pseudorandom permutation, with a seed
    // and with :default_seed (-D default_seed).
    "hash(10, 5432)",
    "hash_fnv1a(10, 5432)",
    "hash_murmur2(10, 5432)",
    "hash(-1, -5)",
    "hash_fnv1a(9223372036854775807, 0)",
    "hash_murmur2(-9223372036854775807 - 1, 1)",
    "hash(:i)",
    "hash_fnv1a(:i)",
    "permute(0, 1)",
    "permute(7, 10, 5432)",
    "permute(12345, 1000000, -3)",
    "permute(-1, 10, 3)",
    "permute(3, 10)",
    "permute(5, 2, 0)",
    "permute(9223372036854775806, 9223372036854775807, 1)",
    "permute(hash(5) % 1000, 1000, 17)",
    // Rounding to integers (H6).
    "int(2.7)",
    "int(-2.7)",
    "int(-7.9)",
    "int(3.5)",
    "int(4.5)",
    "int(-2.5)",
    "int(-0.5)",
    "int(99999 / 100000.0) + 1",
    "7.9 % 2",
    "5.7 % 3",
    "mod(5.7, 3)",
    "5 % 2.7",
    "random(0.6, 0.6)",
    "random(1, 1.4)",
    "random(1.5, 1.5)",
    // Booleans.
    "1 = 1",
    "not (1 = 1)",
    "0.1 + 0.2 = 0.3",
    "0.0 / 0 = 0.0 / 0",
    "0.0 / 0 <> 0.0 / 0",
    "(1=0) and 5",
    "(1=1) or 5",
    // Doubles and their text.
    "1.0 / 0",
    "-1.0 / 0.0",
    "0.0 / 0.0",
    "0.1 + 0.2",
    "1e15 + 0.3",
    "1e14 + 0.5",
    "4.0",
    "1000.0",
    "-0.0",
    "0.0 * -1",
    "1.",
    ".5",
    "1e3",
    "0.000012345",
    "1234567890123455.0",
    "123456789012345.6",
    "1/3.0",
    "sqrt(-1)",
    "ln(0)",
    "exp(1000)",
    "9223372036854775807 + 0.0",
    "abs(-0.0)",
    "least(0.0 / 0, 1.0)",
    "least(1.0, 0.0 / 0)",
    "greatest(2, 1.5)",
    // Integers.
    "-7 / 2",
    "-7 % 3",
    "7 % -3",
    "-9223372036854775808",
    "- 9223372036854775808",
    "-9223372036854775808 % -1",
    "abs(-9223372036854775808)",
    "3 -- 2",
    ":client_id",
    ":random_seed",
    // Bitwise operators and CASE (001's lines and their binding).
    "17 / (4|1) + ( 4 + (7 >> 2))",
    "- (3 * 4 - (-(~ 1) + -(~ 0))) / -1 + 3 % -1",
    "64 % (((2 + 1 * 2 + (1 # 2) | 4 * (2 & 11)) - (1 << 2)) + 2)",
    "2 * ~1 + 3",
    "1 << 64",
    "1 << -1",
    "5 & 1.6",
    "case when false THEN -1 when 1 = 1 then 13 + 19 + 2.0 end",
    "CASE WHEN NOT FALSE THEN 3 * 12.3333334 END",
    "case when 0 then 1 when 2.5 then 2 else 3 end",
    "case when :zy = 0 then -1 else (1 / :zy) end",
    // NULL: the constant, -D n=null, what it does to operators,
    // functions, AND, OR, NOT and CASE, and the IS tests.
    "NULL",
    ":n",
    "NULL + 1",
    "1 - :n",
    "NULL IS NULL",
    ":n IS NULL",
    "1 IS NULL",
    "1 ISNULL",
    "NULL NOTNULL",
    "1 NOTNULL",
    "1 IS NOT NULL",
    "TRUE IS TRUE",
    "1 IS TRUE",
    "FALSE IS NOT TRUE",
    "1 = 1 IS FALSE",
    "NOT 1 = 1 IS TRUE",
    "NULL AND TRUE",
    "FALSE AND NULL",
    "TRUE AND NULL",
    "TRUE OR NULL",
    "FALSE OR NULL",
    "NOT NULL",
    "NULL = NULL",
    "abs(NULL)",
    "random(1, NULL)",
    "greatest(1, NULL, 3)",
    "case when NULL then 1 else 2 end",
    "case when 1 = 0 then 1 end",
    "debug(2.5) * 2",
    "debug(NULL) IS NULL",
    "1 IS NULL IS NULL",
    "NULL ISNULL NOTNULL",
];

/// Expressions both tools refuse, parse time or run time.
const ERRORS: &[&str] = &[
    "NOT 0.0",
    "1.5 AND 2",
    "5 AND 0",
    "(1 = 1) + 1",
    "ln(TRUE)",
    "int(1e19)",
    "1/0",
    "1 % 0",
    "mod(1, 0)",
    "9223372036854775807 + 1",
    "-(-9223372036854775808)",
    "-9223372036854775808 / -1",
    "9223372036854775808",
    "1.0E309",
    ".1E310",
    "1 + 2 -- a comment",
    "random(5, 3)",
    "random(0, 9223372036854775807)",
    "random(-9223372036854775808, 9223372036854775807)",
    "random_gaussian(0, 10, 1.0)",
    "random_exponential(0, 10, 0.0)",
    "random_zipfian(0, 10, 1)",
    "least(0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16)",
    "noSuchFunction()",
    "ln(2.0, 1.0)",
    "greatest()",
    "permute(1, 0)",
    "permute(1, -5, 3)",
    "hash(1, 2, 3)",
    "permute(1)",
    ":s + 1",
    "1 +",
    "TRUE & 1",
    "1 IS 2",
    // The rest of 001_pgbench_with_server.pl's expression errors.
    "(1<<62) + (1<<62)",
    "0 - (1<<62) - (1<<62) - (1<<62)",
    "2 * (1<<62)",
    ":minint / -1",
    "random(FALSE, TRUE)",
    "ln(1.0, 2.0))",
    "greatest())",
    ":badtrue or true",
    "permute(0, 0)",
    "CASE TRUE THEN 1 ELSE 0 END",
    ";",
];

const DEFINES: &[&str] = &[
    "-D",
    "foo=-10.1",
    "-D",
    "i=+3",
    "-D",
    "d=1.0",
    "-D",
    "s=bla",
    "-D",
    "t=yes",
    "-D",
    "default_seed=77",
    "-D",
    "n=null",
    "-D",
    "badtrue=trueXXX",
    "-D",
    "minint=-9223372036854775808",
];

fn values_script() -> String {
    let mut script = String::from("\\set zy 0\n");
    for (i, expr) in VALUES.iter().enumerate() {
        script.push_str(&format!(
            "\\set x{i} {expr}\nINSERT INTO r VALUES ('{i}', 'TOOL', (:x{i})::text);\n"
        ));
    }
    // -D text reaches SQL as written, in every protocol.
    script.push_str("INSERT INTO r VALUES ('s', 'TOOL', (:s)::text), ('i', 'TOOL', (:i)::text);\n");
    script
}

#[test]
fn expressions_store_the_values_pgbench_stores_in_every_protocol() {
    let tools = Tools::new();
    for protocol in ["extended", "prepared", "simple"] {
        tools.pg.psql(&tools.db, "DELETE FROM r");
        let mut script = values_script();
        if protocol == "simple" {
            // -M simple writes a -D string into the SQL bare, as pgbench
            // does: unquoted it is a column name to the server, in both
            // tools alike.
            script = script.replace("('s', 'TOOL', (:s)::text), ", "");
            // dyno writes NaN and the infinities as quoted float8 constants
            // where pgbench writes a bare word the server cannot read (see
            // README): leave them out here.
            for bare in [
                "1.0 / 0",
                "-1.0 / 0.0",
                "0.0 / 0.0",
                "sqrt(-1)",
                "ln(0)",
                "exp(1000)",
                "least(1.0, 0.0 / 0)",
                "least(-5.18, .0E0, 1.0/0) * -3.3",
            ] {
                let i = VALUES.iter().position(|v| v == &bare).unwrap();
                script = script.replace(
                    &format!("INSERT INTO r VALUES ('{i}', 'TOOL', (:x{i})::text);\n"),
                    "",
                );
            }
        }
        let flags: Vec<&str> = ["-M", protocol, "--random-seed", "5432"]
            .into_iter()
            .chain(DEFINES.iter().copied())
            .collect();
        for tool in ["pgbench", "dyno"] {
            let (ok, stderr) = tools.run(tool, &script, &flags);
            assert!(ok, "{tool} -M {protocol}: {stderr}");
        }
        let (theirs, ours) = (tools.stored("pgbench"), tools.stored("dyno"));
        assert!(theirs.len() > VALUES.len() / 2, "{theirs:?}");
        let differ: Vec<String> = theirs
            .iter()
            .filter(|(k, v)| ours.get(*k) != Some(v))
            .map(|(k, v)| {
                let expr = k.parse::<usize>().map_or(k.as_str(), |i| VALUES[i]);
                format!("{expr}: pgbench {v}, dyno {:?}", ours.get(k))
            })
            .collect();
        assert!(differ.is_empty(), "-M {protocol}:\n{}", differ.join("\n"));
        assert_eq!(theirs.len(), ours.len());
    }
}

/// Without `-D default_seed`, `hash()` and `permute()` take pgbench's
/// own default seed under the same `--random-seed` and `-c`: a ported
/// script draws the same values (newcomer L22).
#[test]
fn the_default_hash_seed_is_pgbenchs_under_the_same_seed_and_clients() {
    let tools = Tools::new();
    let script = "\\set h hash(10)\n\\set p permute(3, 10)\nINSERT INTO r VALUES ('h', 'TOOL', :h::text), ('p', 'TOOL', :p::text), ('d', 'TOOL', :default_seed::text);\n";
    for (seed, clients) in [("5432", "1"), ("77", "3")] {
        tools.pg.psql(&tools.db, "DELETE FROM r");
        for tool in ["pgbench", "dyno"] {
            let flags = ["--random-seed", seed, "-c", clients];
            let (ok, stderr) = tools.run(tool, script, &flags);
            assert!(ok, "{tool}: {stderr}");
        }
        let (theirs, ours) = (tools.stored("pgbench"), tools.stored("dyno"));
        assert_eq!(theirs.len(), 3, "{theirs:?}");
        assert_eq!(theirs, ours, "--random-seed {seed} -c {clients}");
    }
}

#[test]
fn expressions_pgbench_refuses_dyno_refuses() {
    let tools = Tools::new();
    let mut wrong = Vec::new();
    for expr in ERRORS {
        let script = format!("\\set x {expr}\nINSERT INTO r VALUES ('x', 'TOOL', :x::text);\n");
        let (theirs, their_err) = tools.run("pgbench", &script, DEFINES);
        let (ours, our_err) = tools.run("dyno", &script, DEFINES);
        if theirs || ours {
            wrong.push(format!(
                "{expr}: pgbench ok={theirs} ({}), dyno ok={ours} ({})",
                their_err.trim(),
                our_err.trim()
            ));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
    assert_eq!(
        tools.stored("pgbench").len() + tools.stored("dyno").len(),
        0
    );
}

/// Script forms pgbench runs, dyno runs too: \sleep with a glued unit, a
/// double or negative variable; an array slice; a statement with 255
/// parameters; and pgbench's limit of 255 under -M prepared.
#[test]
fn sleeps_slices_and_parameter_limits_as_pgbench() {
    let tools = Tools::new();
    let script = "\\sleep 10ms\n\\set one 1.0\n\\sleep :one ms\n\\set m -5\n\\sleep :m ms\n\\sleep -5 ms\n\\set h 2.7\n\\sleep :h us\n\
                  INSERT INTO r VALUES ('slice', 'TOOL', ((ARRAY[1,2,3])[1:2])::text);\n";
    for protocol in ["simple", "extended", "prepared"] {
        for tool in ["pgbench", "dyno"] {
            let (ok, stderr) = tools.run(tool, script, &["-M", protocol]);
            assert!(ok, "{tool} -M {protocol}: {stderr}");
        }
    }
    assert_eq!(tools.stored("dyno")["slice"], "{1,2}");
    let refs = |n: usize| {
        // Typed, so PostgreSQL can resolve `+` over parameters.
        let list: Vec<&str> = std::iter::repeat_n(":v::int", n).collect();
        format!("\\set v 1\nSELECT {};\n", list.join(" + "))
    };
    for tool in ["pgbench", "dyno"] {
        let (ok, stderr) = tools.run(tool, &refs(255), &["-M", "prepared"]);
        assert!(ok, "{tool} 255: {stderr}");
        let (ok, stderr) = tools.run(tool, &refs(256), &["-M", "prepared"]);
        assert!(!ok, "{tool} 256 parameters ran");
        if tool == "dyno" {
            assert!(stderr.contains("at most 255"), "{stderr}");
        }
        let (ok, stderr) = tools.run(tool, &refs(256), &["-M", "simple"]);
        assert!(ok, "{tool} 256 simple: {stderr}");
        // A negative sleep variable that is not an integer's text.
        let (ok, _) = tools.run(tool, "\\set v -0.5\n\\sleep :v ms\nSELECT 1;\n", &[]);
        assert!(!ok, "{tool} slept -0.5");
    }
}

/// `\if`, `\elif`, `\else` and `\endif`, nested, take the branches pgbench
/// takes, for conditions of every type; and the blocks pgbench refuses,
/// dyno refuses.
/// `\\;` joins statements into one query: `\\gset` stores the last one's
/// row, `\\aset` every one's, as pgbench's own regression test has them;
/// an `\\aset` of no row leaves the variable unset in both tools.
#[test]
fn compound_statements_store_what_pgbench_stores() {
    let tools = Tools::new();
    let script = "SELECT 0 AS i5 \\; SELECT 5 AS i5 \\; \\; \\gset\n\\set i debug(:i5)\n\\; SELECT 6 AS i6 \\; SELECT 7 AS i7 \\; \\aset\nSELECT 8 AS i6 UNION SELECT 9 ORDER BY 1 DESC \\aset\n\\set i debug(:i6)\n\\set i debug(:i7)\nINSERT INTO r VALUES ('a', 'TOOL', '1') \\;\nINSERT INTO r VALUES ('b', 'TOOL', :i7::text);\n";
    let lines = |stderr: &str| -> Vec<String> {
        stderr
            .lines()
            .filter_map(|l| l.find("debug(").map(|i| l[i..].to_owned()))
            .collect()
    };
    let (ok, theirs) = tools.run("pgbench", script, &["-M", "simple"]);
    assert!(ok, "{theirs}");
    let (ok, ours) = tools.run("dyno", script, &["-M", "simple"]);
    assert!(ok, "{ours}");
    assert_eq!(lines(&ours), lines(&theirs));
    assert_eq!(lines(&theirs).len(), 3, "{theirs}");
    assert_eq!(tools.stored("dyno"), tools.stored("pgbench"));
    assert_eq!(tools.stored("dyno").len(), 2);
    // No row: the variable stays unset, and reading it stops the client.
    let empty = "\\; SELECT 5432 AS i8 WHERE FALSE \\; \\aset\n\\set i debug(:i8)\n";
    let (theirs, their_err) = tools.run("pgbench", empty, &[]);
    let (ours, our_err) = tools.run("dyno", empty, &[]);
    assert!(!theirs && !ours, "pgbench: {their_err}\ndyno: {our_err}");
    assert!(our_err.contains("i8"), "{our_err}");
    // Under -M extended dyno refuses before the run what pgbench fails in it.
    let (ok, err) = tools.run("dyno", script, &["-M", "extended"]);
    assert!(!ok && err.contains("only -M simple does"), "{err}");
}

/// `\\syncpipeline` (PostgreSQL 17's pgbench; the one installed here is
/// 15, which refuses it) ends one implicit transaction of a pipeline: what
/// came before it stays when a later statement fails, and without it the
/// failure takes the whole pipeline back.
#[test]
fn syncpipeline_commits_what_came_before_it() {
    let tools = Tools::new();
    let script = |sync: &str| {
        format!(
            "\\startpipeline\nINSERT INTO r VALUES ('a', 'TOOL', '1');\n{sync}INSERT INTO r VALUES ('b', 'TOOL', (1 / 0)::text);\n\\endpipeline\n"
        )
    };
    let (ok, err) = tools.run("dyno", &script("\\syncpipeline\n"), &["-M", "extended"]);
    assert!(!ok && err.contains("division by zero"), "{err}");
    assert_eq!(tools.stored("dyno").keys().collect::<Vec<_>>(), ["a"]);
    tools.pg.psql(&tools.db, "DELETE FROM r");
    let (ok, err) = tools.run("dyno", &script(""), &["-M", "prepared"]);
    assert!(!ok && err.contains("division by zero"), "{err}");
    assert!(tools.stored("dyno").is_empty());
    // pgbench 15 does not know it: the script is pgbench 17's.
    let (ok, err) = tools.run("pgbench", &script("\\syncpipeline\n"), &["-M", "extended"]);
    assert!(!ok, "{err}");
}

/// `debug()` prints what pgbench prints, on stderr: each value's type and
/// value, with the script's and the command's numbers.
#[test]
fn debug_prints_what_pgbench_prints() {
    let tools = Tools::new();
    // Each type, a -inf, NULL through operators and IS tests, a \\set
    // continued over lines, and NULL substituted into SQL.
    let script = concat!(
        "\\set a debug(7)\n\\set b debug(2.5 / 3)\n\\set c debug(NULL)\n\\set d debug(1 = 1)\n\\set e debug(-1.0e300 * 1e10)\n",
        "\\set d1 false\n\\set n0 debug(NULL + NULL * exp(NULL))\n\\set n1 debug(:n0)\n\\set n2 debug(NOT (:n0 IS NOT NULL OR :d1 IS NULL))\n\\set n3 debug(:n0 IS NULL AND :d1 IS NOT NULL AND :d1 NOTNULL)\n\\set n4 debug(:n0 ISNULL AND NOT :n0 IS TRUE AND :n0 IS NOT FALSE)\n\\set n5 debug(CASE WHEN :n IS NULL THEN 46 ELSE NULL END)\n\\set n6 debug(:n IS NULL AND NOT :f AND :t)\n\\set cs debug(CASE WHEN 1 THEN TRUE END AND CASE WHEN 1.0 THEN TRUE END AND CASE WHEN :n THEN NULL ELSE TRUE END)\n\\set c8 debug(CASE \\\n                WHEN (1.0 > 0.0) AND (1.0 >= 0.0) \\\n                  THEN 36 \\\n                  ELSE 0 \\\n              END)\n\\set v0 NULL\n\\set v1 TRUE\n\\set v2 5432\n\\set v3 -54.21E-2\nSELECT :v0, :v1, :v2, :v3;\n\\set i debug(pow(9223372036854775807, 2))\n\\set i debug(pow(-2,-3))\n\\set max debug(-(-9223372036854775808 + 1))\n"
    );
    let lines = |stderr: &str| -> Vec<String> {
        stderr
            .lines()
            .filter_map(|l| l.find("debug(").map(|i| l[i..].to_owned()))
            .collect()
    };
    let flags = ["-D", "n=null", "-D", "f=false", "-D", "t=true"];
    let (ok, theirs) = tools.run("pgbench", script, &flags);
    assert!(ok, "{theirs}");
    let (ok, ours) = tools.run("dyno", script, &flags);
    assert!(ok, "{ours}");
    let (theirs, ours) = (lines(&theirs), lines(&ours));
    assert_eq!(theirs.len(), 17, "{theirs:?}");
    assert_eq!(ours, theirs);
}

#[test]
fn if_blocks_take_the_branches_pgbench_takes() {
    let tools = Tools::new();
    let script = "\
\\if :x = 1
INSERT INTO r VALUES ('b:X', 'TOOL', 'one');
\\elif :x = 2
INSERT INTO r VALUES ('b:X', 'TOOL', 'two');
\\if :x > 1
\\set n :x * 10
INSERT INTO r VALUES ('n:X', 'TOOL', (:n)::text);
\\endif
\\elif :x / 2.0
INSERT INTO r VALUES ('b:X', 'TOOL', 'a nonzero double');
\\else
INSERT INTO r VALUES ('b:X', 'TOOL', 'else');
\\endif
\\if :x > 3 AND :x < 6
INSERT INTO r VALUES ('c:X', 'TOOL', 'between');
\\endif
INSERT INTO r VALUES ('after:X', 'TOOL', 'yes');
";
    for x in ["0", "1", "2", "5", "-7"] {
        let script = script.replace(":X", &format!(":{x}"));
        let define = format!("x={x}");
        for tool in ["pgbench", "dyno"] {
            let (ok, stderr) = tools.run(tool, &script, &["-D", &define]);
            assert!(ok, "{tool} x={x}: {stderr}");
        }
    }
    let (theirs, ours) = (tools.stored("pgbench"), tools.stored("dyno"));
    assert_eq!(theirs.len(), 5 + 5 + 1 + 1, "{theirs:?}");
    assert_eq!(theirs, ours);
    tools.both_refuse(
        &[
            "\\else\nSELECT 1;\n",
            "\\if 1\nSELECT 1;\n",
            "\\if 1\n\\else\n\\elif 1\n\\endif\n",
            "\\endif\n",
        ],
        &[],
    );
}

/// `\gset` and `\aset` store what pgbench stores: the columns' text
/// (NULL as empty) under the prefix, at the statement's end or on the
/// line after it, `\aset`'s last row, nothing from no row; in every
/// protocol. Their failures fail both tools.
#[test]
fn gset_and_aset_store_what_pgbench_stores() {
    let tools = Tools::new();
    let script = "\
SELECT 7 AS a, 2.5 AS d, 'abc' AS t, NULL AS nul \\gset
\\set s :a * 10 + :d
INSERT INTO r VALUES ('s@M', 'TOOL', (:s)::numeric::text);
INSERT INTO r VALUES ('t@M', 'TOOL', $q$:t$q$);
INSERT INTO r VALUES ('nul@M', 'TOOL', $q$:nul$q$);
SELECT 3 AS n UNION ALL SELECT 4 ORDER BY 1 \\aset p_
INSERT INTO r VALUES ('n@M', 'TOOL', (:p_n)::int::text);
SELECT 1 AS none WHERE false \\aset
SELECT 11 AS v
\\gset q_
SELECT :q_v + 1 AS w;
\\gset
\\if :w > 11
INSERT INTO r VALUES ('w@M', 'TOOL', (:w)::int::text);
\\endif
";
    for mode in ["simple", "extended", "prepared"] {
        let script = script.replace("@M", &format!("@{mode}"));
        // Dollar quotes keep their text only where it is written in.
        let script = if mode == "simple" {
            script
        } else {
            script
                .lines()
                .filter(|l| !l.contains("$q$"))
                .collect::<Vec<_>>()
                .join("\n")
        };
        for tool in ["pgbench", "dyno"] {
            let (ok, stderr) = tools.run(tool, &script, &["-M", mode]);
            assert!(ok, "{tool} -M {mode}: {stderr}");
        }
    }
    let (theirs, ours) = (tools.stored("pgbench"), tools.stored("dyno"));
    assert_eq!(theirs.len(), 3 * 3 + 2, "{theirs:?}");
    assert_eq!(theirs.get("s@simple").map(String::as_str), Some("72.5"));
    assert_eq!(theirs.get("nul@simple").map(String::as_str), Some(""));
    assert_eq!(theirs, ours);
    tools.both_refuse(
        &[
            "SELECT 1 AS a UNION SELECT 2 \\gset\n",
            "SELECT 1 AS a WHERE false \\gset\n",
            "SELECT 1 \\gset\n",
            "SELECT 1 AS z WHERE false \\aset\nSELECT :z;\n",
            "SELECT 1 AS a \\gset x y\n",
            "\\gset\n",
            "\\set x 1\n\\gset\n",
        ],
        &[],
    );
}

/// `\setshell` and `\shell` run the command lines pgbench runs: words,
/// `:name` values and `::word` literals joined by spaces through
/// `/bin/sh`; `\setshell` keeps the integer of the output's first line.
/// `\shell`'s output goes to dyno's stderr, never into the report. A
/// command that fails, or prints no integer, stops the client.
#[test]
fn setshell_and_shell_run_what_pgbench_runs() {
    let tools = Tools::new();
    let marks = temp();
    let script = format!(
        "\
\\set a 20
\\setshell n echo :a
\\setshell m printf '%s\\n' '  -7  ' second-line
\\set s :n + :m
INSERT INTO r VALUES ('sh', 'TOOL', (:s)::int::text);
\\shell echo said ::literal :a
\\shell touch {}/TOOL
",
        marks.path().display()
    );
    for tool in ["pgbench", "dyno"] {
        let (ok, stderr) = tools.run(tool, &script, &[]);
        assert!(ok, "{tool}: {stderr}");
        assert!(marks.path().join(tool).exists(), "{tool} ran no \\shell");
        if tool == "dyno" {
            assert!(stderr.contains("said :literal 20"), "{stderr}");
        }
    }
    let (theirs, ours) = (tools.stored("pgbench"), tools.stored("dyno"));
    assert_eq!(theirs.get("sh").map(String::as_str), Some("13"));
    assert_eq!(theirs, ours);
    for (bad, says) in [
        ("\\setshell x echo abc\n", "must return an integer"),
        ("\\setshell x true\n", "must return an integer"),
        ("\\shell exit 3\n", "exited with status 3"),
        ("\\setshell x\n", "needs a variable name and a command"),
        ("\\setshell 1x echo 1\n", "not a variable name"),
        ("\\shell echo :nobody\n", "'nobody'"),
    ] {
        let (theirs, _) = tools.run("pgbench", bad, &[]);
        let (ours, err) = tools.run("dyno", bad, &[]);
        assert!(
            !theirs && !ours,
            "{bad:?}: pgbench ok={theirs}, dyno ok={ours} ({err})"
        );
        assert!(err.contains(says), "{bad:?}: {err}");
    }
}

/// A `\shell` child still running when the load is cut (here at `-T 1`
/// and its grace) is killed, never left behind as an orphan; the client's
/// wait counts as unfinished.
#[test]
fn a_shell_child_under_way_at_the_cut_is_killed() {
    let tools = Tools::new();
    // A length no other process has, for finding it in /proc.
    let length = format!("300.{}", std::process::id());
    let file = tools.dir.path().join("sleep.sql");
    std::fs::write(&file, format!("\\shell exec sleep {length}\n")).unwrap();
    let mut cmd = StdCommand::new("timeout");
    cmd.arg("120")
        .arg(env!("CARGO_BIN_EXE_dyno"))
        .args(["db", "run", "-T", "1", "--no-save", "-f"])
        .arg(&file)
        .env("DYNO_HOME", tools.home.path())
        .env("NO_COLOR", "1")
        // Not a pipe, which a child left behind would hold open.
        .stderr(std::process::Stdio::null());
    let out = tools.at_server(&mut cmd).output().unwrap();
    let said = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "target_lost: {said}");
    assert!(said.contains("1 still under way at the end"), "{said}");
    let sleeping = || {
        std::fs::read_dir("/proc")
            .unwrap()
            .flatten()
            .filter_map(|e| std::fs::read(e.path().join("cmdline")).ok())
            .any(|line| line == format!("sleep\0{length}\0").as_bytes())
    };
    // SIGKILL is sent before dyno exits; the process may take a moment to go.
    let gone = (0..100).any(|_| {
        std::thread::sleep(Duration::from_millis(50));
        !sleeping()
    });
    assert!(gone, "`sleep {length}` outlived the run");
}

/// `-l` writes pgbench's logs: a file per thread named as pgbench names
/// them, each transaction's line with pgbench's columns for the same
/// flags (the lag with -R, the retries with --max-tries), numbered from 1
/// per client; `--aggregate-interval` lines with PostgreSQL 15's fifteen
/// columns, whose counts add up to the transactions; `--sampling-rate`
/// keeps a share. Checked against the files pgbench writes on one server.
#[test]
fn transaction_logs_have_pgbenchs_files_and_columns() {
    let tools = Tools::new();
    dyno(tools.home.path())
        .args(["db", "init", "-s", "1", &tools.db])
        .envs(tools.pg.env.iter().map(|(k, v)| (k, v)))
        .env_remove("PGPASSWORD")
        .assert()
        .success();
    let logs = temp();
    let run = |tool: &str, name: &str, flags: &[&str]| -> Vec<Vec<String>> {
        let prefix = logs.path().join(format!("{name}-{tool}"));
        let prefix = prefix.to_str().unwrap();
        let mut cmd = if tool == "pgbench" {
            let mut c = StdCommand::new(pgbench());
            c.arg("-n");
            c
        } else {
            let mut c = StdCommand::new(env!("CARGO_BIN_EXE_dyno"));
            c.args(["db", "run", "-n", "--no-save"])
                .env("DYNO_HOME", tools.home.path());
            c
        };
        cmd.args([
            "-b",
            "select-only",
            "-c",
            "2",
            "-j",
            "2",
            "-l",
            "--log-prefix",
            prefix,
        ])
        .args(flags);
        let out = tools.at_server(&mut cmd).output().unwrap();
        assert!(
            out.status.success(),
            "{tool} {flags:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        // One file per thread: PREFIX.PID and PREFIX.PID.1.
        let mut files: Vec<String> = std::fs::read_dir(logs.path())
            .unwrap()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|f| f.starts_with(&format!("{name}-{tool}.")))
            .collect();
        files.sort();
        assert_eq!(files.len(), 2, "{tool}: {files:?}");
        assert!(files[1].ends_with(".1"), "{files:?}");
        files
            .iter()
            .flat_map(|f| {
                std::fs::read_to_string(logs.path().join(f))
                    .unwrap()
                    .lines()
                    .map(|l| l.split(' ').map(str::to_owned).collect::<Vec<_>>())
                    .collect::<Vec<_>>()
            })
            .collect()
    };
    // Per transaction, closed model: 6 columns, 5 transactions a client.
    let plain = ["-t", "5"];
    // With a rate and retries: the lag and the retries too.
    let open = ["-t", "5", "-R", "200", "--max-tries", "2"];
    for (name, flags, columns) in [("plain", &plain[..], 6), ("open", &open[..], 8)] {
        let (theirs, ours) = (run("pgbench", name, flags), run("dyno", name, flags));
        for (tool, lines) in [("pgbench", &theirs), ("dyno", &ours)] {
            assert_eq!(lines.len(), 10, "{tool} {name}: {lines:?}");
            assert!(
                lines.iter().all(|l| l.len() == columns),
                "{tool} {name}: {lines:?}"
            );
            let mut numbers: Vec<(String, String)> =
                lines.iter().map(|l| (l[0].clone(), l[1].clone())).collect();
            numbers.sort();
            let want: Vec<(String, String)> = ["0", "1"]
                .iter()
                .flat_map(|c| (1..=5).map(move |t| ((*c).to_owned(), t.to_string())))
                .collect();
            assert_eq!(numbers, want, "{tool} {name}");
            for l in lines.iter() {
                assert_eq!(l[3], "0", "script number: {l:?}");
                let latency: u64 = l[2].parse().unwrap();
                assert!(latency > 0 && latency < 10_000_000, "{l:?}");
                assert!(l[5].parse::<u64>().unwrap() < 1_000_000, "{l:?}");
            }
        }
    }
    // Aggregated: fifteen columns, counts that add up.
    let flags = ["-T", "3", "--aggregate-interval", "1"];
    let (theirs, ours) = (run("pgbench", "agg", &flags), run("dyno", "agg", &flags));
    for (tool, lines) in [("pgbench", &theirs), ("dyno", &ours)] {
        assert!(lines.iter().all(|l| l.len() == 15), "{tool}: {lines:?}");
        assert!((4..=10).contains(&lines.len()), "{tool}: {lines:?}");
        let count: u64 = lines.iter().map(|l| l[1].parse::<u64>().unwrap()).sum();
        assert!(count > 100, "{tool}: {count}");
    }
    // Sampled: a share of the transactions.
    let all = run("dyno", "all", &["-t", "2000"]).len();
    let some = run("dyno", "some", &["-t", "2000", "--sampling-rate", "0.1"]).len();
    assert_eq!(all, 4000);
    assert!((280..=520).contains(&some), "{some} of 4000 at 0.1");
    // Bad flags: exit 2 with what to give, before any load.
    for (flags, says) in [
        (&["--aggregate-interval", "1"][..], "--log"),
        (&["-l", "--sampling-rate", "0"][..], "no sampling rate"),
        (
            &["-l", "--sampling-rate", "0.5", "--aggregate-interval", "1"][..],
            "cannot be used with",
        ),
        (
            &["-l", "--log-prefix", "/nonexistent-dir/x"][..],
            "could not create the transaction log /nonexistent-dir/x.",
        ),
    ] {
        let out = tools
            .at_server(
                StdCommand::new(env!("CARGO_BIN_EXE_dyno"))
                    .env("DYNO_HOME", tools.home.path())
                    .args(["db", "run", "-t", "1", "--no-save", "-b", "select-only"])
                    .args(flags),
            )
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{flags:?}: {err}");
        assert!(err.contains(says), "{flags:?}: {err}");
    }
}

/// `\startpipeline` … `\endpipeline` sends its statements at once, with
/// `\set` evaluated in between, and stores what pgbench's pipeline mode
/// stores in the extended and prepared protocols; a statement that fails
/// in a pipeline takes the rest of it down with it in both tools. The
/// simple protocol and malformed pipelines fail in both.
#[test]
fn pipelines_store_what_pgbenchs_pipelines_store() {
    let tools = Tools::new();
    let script = "\
\\startpipeline
INSERT INTO r VALUES ('a@M', 'TOOL', '1');
\\set x 41
INSERT INTO r VALUES ('b@M', 'TOOL', (:x + 1)::text);
\\endpipeline
\\set y :x * 2
\\startpipeline
INSERT INTO r VALUES ('c@M', 'TOOL', (:y)::text);
\\endpipeline
";
    let failing = "\
\\startpipeline
INSERT INTO r VALUES ('d@M', 'TOOL', '1');
SELECT 1 / 0;
INSERT INTO r VALUES ('e@M', 'TOOL', '1');
\\endpipeline
";
    for mode in ["extended", "prepared"] {
        for tool in ["pgbench", "dyno"] {
            let (ok, out) = tools.run(
                tool,
                &script.replace("@M", &format!("@{mode}")),
                &["-M", mode],
            );
            assert!(ok, "{tool} -M {mode}: {out}");
            let (ok, out) = tools.run(
                tool,
                &failing.replace("@M", &format!("@{mode}")),
                &["-M", mode],
            );
            assert!(
                !ok,
                "{tool} -M {mode}: a failed statement must stop the client: {out}"
            );
        }
    }
    let (theirs, ours) = (tools.stored("pgbench"), tools.stored("dyno"));
    assert_eq!(theirs.len(), 2 * 3, "{theirs:?}");
    assert_eq!(theirs.get("b@prepared").map(String::as_str), Some("42"));
    assert_eq!(theirs, ours);
    tools.both_refuse(&[script], &["-M", "simple"]);
    tools.both_refuse(
        &[
            "\\startpipeline\nSELECT 1;\n",
            "\\endpipeline\n",
            "\\startpipeline\n\\startpipeline\n\\endpipeline\n",
            "\\startpipeline\nSELECT 1 AS a \\gset\n\\endpipeline\n",
        ],
        &["-M", "extended"],
    );
}

/// `dyno db init` with pgbench's `-I` steps, unlogged tables and
/// partitions makes the catalog pgbench makes with the same flags: the
/// tables, their kinds, persistence and options, the partitions' bounds,
/// the constraints and the rows.
#[test]
fn init_steps_unlogged_and_partitions_make_pgbenchs_tables() {
    let pg = pg();
    let home = temp();
    let catalog = |db: &str| {
        pg.psql(
            db,
            "SELECT string_agg(relname || ' ' || relkind::text || ' ' || relpersistence::text || ' ' \
               || coalesce(array_to_string(reloptions, ','), '-') || ' ' \
               || coalesce(pg_get_expr(relpartbound, oid), '-'), E'\\n' ORDER BY relname) \
             FROM pg_class WHERE relname LIKE 'pgbench%' AND relkind IN ('r', 'p'); \
             SELECT string_agg(conname, ',' ORDER BY conname) FROM pg_constraint WHERE conname LIKE 'pgbench%'; \
             SELECT count(*) || ' ' || sum(bid) || ' ' || sum(abalance) || ' ' || count(DISTINCT filler) FROM pgbench_accounts; \
             SELECT count(*) || ' ' || sum(bid) FROM pgbench_tellers",
        )
    };
    for flags in [
        &["-I", "dtGvpf", "--unlogged-tables", "--partitions", "3"][..],
        &[
            "-I",
            "dtgvp",
            "--partitions",
            "4",
            "--partition-method",
            "hash",
        ][..],
        &["-I", "dtgv"][..],
    ] {
        let (theirs, ours) = (pg.database(), pg.database());
        let out = StdCommand::new(pgbench())
            .args(["-i", "-q", "-s", "2"])
            .args(flags)
            .arg(&theirs)
            .envs(pg.env.iter().map(|(k, v)| (k, v)))
            .env_remove("PGPASSWORD")
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        dyno(home.path())
            .args(["db", "init", "-s", "2"])
            .args(flags)
            .arg(&ours)
            .envs(pg.env.iter().map(|(k, v)| (k, v)))
            .env_remove("PGPASSWORD")
            .assert()
            .success();
        assert_eq!(catalog(&ours), catalog(&theirs), "{flags:?}");
    }
    // A step that is none: exit 2, before anything is touched.
    let db = pg.database();
    let out = dyno(home.path())
        .args(["db", "init", "-I", "dtz", &db])
        .envs(pg.env.iter().map(|(k, v)| (k, v)))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("'z' is no initialization step"));
}
