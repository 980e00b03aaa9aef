//! `dyno completions` and `dyno man`: generated from the same clap
//! definitions as the parser, so they never drift from it.

use anyhow::{Context, Result};
use clap::CommandFactory;

use crate::ExitStatus;
use crate::cli::{Cli, CompletionsArgs, ManArgs};

pub fn completions(args: CompletionsArgs) -> Result<ExitStatus> {
    let CompletionsArgs { shell } = args;
    let mut out = Vec::new();
    clap_complete::generate(shell, &mut Cli::command(), "dyno", &mut out);
    super::print(&String::from_utf8_lossy(&out))?;
    Ok(ExitStatus::Success)
}

pub fn man(args: ManArgs) -> Result<ExitStatus> {
    let ManArgs { dir } = args;
    let command = Cli::command();
    match dir {
        None => {
            let mut page = Vec::new();
            clap_mangen::Man::new(command).render(&mut page)?;
            super::print(&String::from_utf8_lossy(&page))?;
        }
        Some(dir) => {
            std::fs::create_dir_all(&dir)
                .with_context(|| format!("could not create '{}'", dir.display()))?;
            // dyno.1 plus one page per subcommand (dyno-quick.1, …).
            clap_mangen::generate_to(command, &dir)
                .with_context(|| format!("could not write man pages to '{}'", dir.display()))?;
            eprintln!("man pages written to {}", dir.display());
        }
    }
    Ok(ExitStatus::Success)
}
