//! Fuzzes the pgbench script parser (`dyno_db::script`) and what a client
//! does with a parsed script: the input is a script, its first line a
//! `-D NAME=VALUE` definition when it starts with `-D`. Every `\set` is
//! evaluated (errors are fine), every `\sleep`'s time read, and every
//! statement rendered for `-M simple` and parameterized.
//!
//! Checked: no panic, in parsing, evaluation or rendering; a statement has
//! as many `$n` parameters as variable references; a parse that fails
//! names a line of the script.

#![no_main]

use dyno_db::script::{CommandKind, Predefined, Script, definition};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let mut definitions = Vec::new();
    let mut body = text;
    if let Some(rest) = text.strip_prefix("-D") {
        let (first, tail) = rest.split_once('\n').unwrap_or((rest, ""));
        match definition(first) {
            Ok(d) => definitions.push(d),
            Err(message) => assert!(!message.is_empty()),
        }
        body = tail;
    }
    let script = match Script::parse_with("fuzz", body, &definitions) {
        Ok(script) => script,
        Err(e) => {
            assert!(
                e.line() >= 1 && e.line() <= body.lines().count().max(1) + 1,
                "{e}"
            );
            assert!(!e.message().is_empty());
            return;
        }
    };
    let _ = script.check_parameters();
    let mut vars = script.initial_values(&Predefined {
        scale: 1,
        client_id: 0,
        random_seed: 0,
        default_seed: 0,
    });
    let mut rng = fastrand::Rng::with_seed(0);
    let mut out = String::new();
    for (i, command) in script.commands().iter().enumerate() {
        let _ = script.command_text(i);
        match &command.kind {
            CommandKind::Set { slot, expr } => {
                if let Ok(value) = expr.eval(&vars, &mut rng) {
                    let _ = value.to_string();
                    vars[*slot] = value;
                }
            }
            CommandKind::Sleep(sleep) => {
                let _ = sleep.duration(&vars);
            }
            CommandKind::Sql(sql) => {
                out.clear();
                sql.write_simple(&vars, &mut out);
                let params: Vec<String> = sql.params(&vars).map(|v| v.to_string()).collect();
                assert_eq!(params.len(), sql.param_slots().len());
                assert!(sql.parameterized().matches('$').count() >= params.len());
            }
            CommandKind::Branch { cond, .. } => {
                let _ = cond.eval(&vars, &mut rng).and_then(|v| v.truth());
            }
            CommandKind::Jump(_) | CommandKind::Pipeline { .. } | CommandKind::SyncPipeline => {}
            CommandKind::Shell(shell) => {
                // Made, never run.
                let _ = shell.command_line(&vars);
            }
        }
    }
});
