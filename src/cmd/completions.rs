//! `dyno completions` and `dyno man`: generated from the same clap
//! definitions as the parser, so they never drift from it.

use anyhow::{Context, Result};

use crate::ExitStatus;
use crate::cli::{CompletionsArgs, ManArgs};

pub(super) fn completions(args: CompletionsArgs) -> Result<ExitStatus> {
    let CompletionsArgs { shell } = args;
    let mut out = Vec::new();
    clap_complete::generate(shell, &mut crate::cli::command(), "dyno", &mut out);
    super::print(&String::from_utf8_lossy(&out))?;
    Ok(ExitStatus::Success)
}

pub(super) fn man(args: ManArgs) -> Result<ExitStatus> {
    let ManArgs { dir } = args;
    let command = crate::cli::command();
    match dir {
        None => {
            let mut page = Vec::new();
            clap_mangen::Man::new(command).render(&mut page)?;
            super::print(&String::from_utf8_lossy(&page))?;
        }
        Some(dir) => {
            // Only the last folder: a typo in the path must not create a
            // tree of stray folders.
            let parent = match dir.parent() {
                Some(p) if !p.as_os_str().is_empty() => p,
                _ => std::path::Path::new("."),
            };
            if !parent.is_dir() {
                anyhow::bail!(
                    "'{}' does not exist (or is not a folder): create it first, or give --dir a folder whose parent exists; dyno man creates only the last folder",
                    parent.display()
                );
            }
            if !dir.is_dir() {
                std::fs::create_dir(&dir)
                    .with_context(|| format!("could not create '{}'", dir.display()))?;
            }
            // dyno.1 plus one page per subcommand (dyno-quick.1, …).
            clap_mangen::generate_to(command, &dir)
                .with_context(|| format!("could not write man pages to '{}'", dir.display()))?;
            eprintln!("man pages written to {}", dir.display());
        }
    }
    Ok(ExitStatus::Success)
}
