//! Records the git revision the binary was built from, for `dyno --version`
//! and the environment of every run. Builds outside a git checkout (a
//! source tarball, `cargo install` from a registry) say "unknown".

use std::process::Command;

fn main() {
    let revision = Command::new("git")
        .args(["rev-parse", "--short=12", "HEAD"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .map(|s| s.trim().to_owned())
        .filter(|s| !s.is_empty());
    let dirty = Command::new("git")
        .args(["status", "--porcelain", "--untracked-files=no"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .is_some_and(|o| !o.stdout.is_empty());
    let revision = match revision {
        Some(rev) if dirty => format!("{rev}-dirty"),
        Some(rev) => rev,
        None => "unknown".to_owned(),
    };
    println!("cargo:rustc-env=DYNO_GIT_REVISION={revision}");
    // Rebuild when HEAD moves or the index changes (commits, checkouts).
    for path in [".git/HEAD", ".git/index", ".git/refs/heads"] {
        if std::path::Path::new(path).exists() {
            println!("cargo:rerun-if-changed={path}");
        }
    }
}
