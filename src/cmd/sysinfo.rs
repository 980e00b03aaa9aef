//! `dyno sysinfo`: the machine, as every run records it.

use anyhow::Result;

use super::{environment, print};
use crate::ExitStatus;
use crate::cli::SysinfoArgs;

pub(super) fn run(args: SysinfoArgs) -> Result<ExitStatus> {
    let SysinfoArgs { json } = args;
    let env = environment();
    if json {
        print(&(serde_json::to_string_pretty(&env)? + "\n"))?;
    } else {
        let mut text = dyno_report::environment(&env);
        for w in dyno_env::preflight(&env) {
            text.push_str(&format!("! {} [{}]\n", w.message, w.code));
        }
        print(&text)?;
    }
    Ok(ExitStatus::Success)
}
