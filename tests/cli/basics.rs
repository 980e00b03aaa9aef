//! Version, help, usage errors, completions and man pages.

use crate::common::*;

#[test]
fn version_names_the_git_revision() {
    let out = Command::cargo_bin("dyno")
        .unwrap()
        .arg("--version")
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let text = String::from_utf8(out).unwrap();
    assert!(text.starts_with("dyno 0."), "{text}");
    assert!(text.contains("(git "), "{text}");
}

#[test]
fn every_subcommand_has_help_with_an_example() {
    for sub in [
        "quick",
        "http",
        "run",
        "scale",
        "disk",
        "sysinfo",
        "serve",
        "history",
        "show",
        "export",
        "import",
        "rm",
        "completions",
        "man",
        "compare",
        "merge",
    ] {
        Command::cargo_bin("dyno")
            .unwrap()
            .args([sub, "--help"])
            .assert()
            .success()
            .stdout(predicate::str::contains("Examples:"))
            .stdout(predicate::str::contains(format!("dyno {sub}")));
    }
}

#[test]
fn usage_errors_exit_2_with_a_clear_message() {
    let home = temp();
    let h = home.path();
    let cases: [(&[&str], &[&str]); 7] = [
        (&["quick", "--frobnicate"], &["--frobnicate"]),
        (
            &["quick", "--repetitions", "-5"],
            &["--repetitions", "negative"],
        ),
        (&["quick", "--repetitions", "0"], &["from 1 to 1000"]),
        (
            &["quick", "--threads", "many"],
            &["--threads", "not a whole number"],
        ),
        (
            &["history", "--kind", "htttp"],
            &["unknown run kind 'htttp'"],
        ),
        (&["history", "--since", "someday"], &["7d"]),
        (&["serve", "--addr", "localhost:99999"], &["--addr"]),
    ];
    assert_refused(h, &cases);
}

#[test]
fn completions_and_man_pages_are_generated() {
    for (shell, marker) in [
        ("bash", "_dyno()"),
        ("zsh", "#compdef dyno"),
        ("fish", "complete -c dyno"),
    ] {
        Command::cargo_bin("dyno")
            .unwrap()
            .args(["completions", shell])
            .assert()
            .success()
            .stdout(predicate::str::contains(marker).and(predicate::str::contains("history")));
    }
    Command::cargo_bin("dyno")
        .unwrap()
        .arg("man")
        .assert()
        .success()
        .stdout(predicate::str::contains(".TH dyno").and(predicate::str::contains("quick")));
    let dir = temp();
    Command::cargo_bin("dyno")
        .unwrap()
        .args(["man", "--dir"])
        .arg(dir.path())
        .assert()
        .success();
    for page in ["dyno.1", "dyno-quick.1", "dyno-serve.1"] {
        assert!(dir.path().join(page).exists(), "{page}");
    }
}
