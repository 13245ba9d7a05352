//! The `livesim` command line, run as a user runs it.

use std::process::Command;

fn livesim(args: &[&str]) -> (bool, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_livesim"))
        .args(args)
        .output()
        .expect("the livesim binary runs");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.success(), text)
}

#[test]
fn help_lists_the_sim_command() {
    let (ok, text) = livesim(&["--help"]);
    assert!(ok, "{text}");
    assert!(text.contains("Usage: livesim"), "{text}");
    assert!(text.contains("sim"), "{text}");
}

#[test]
fn version_is_the_crate_version() {
    let (ok, text) = livesim(&["--version"]);
    assert!(ok, "{text}");
    assert_eq!(
        text.trim(),
        format!("livesim {}", env!("CARGO_PKG_VERSION"))
    );
}

#[test]
fn sim_help_answers() {
    let (ok, text) = livesim(&["sim", "--help"]);
    assert!(ok, "{text}");
    assert!(text.contains("Usage: livesim sim"), "{text}");
}

#[test]
fn sim_without_a_subcommand_lists_the_ones_there_are() {
    let (ok, text) = livesim(&["sim"]);
    assert!(!ok);
    assert!(text.contains("Usage: livesim sim <COMMAND>"), "{text}");
    assert!(
        text.contains("soak") && text.contains("run") && text.contains("check"),
        "{text}"
    );
}

#[test]
fn an_unknown_command_is_an_error() {
    let (ok, text) = livesim(&["fly"]);
    assert!(!ok);
    assert!(text.contains("unrecognized subcommand"), "{text}");
}

#[test]
fn serve_help_names_the_exit_statuses() {
    let (ok, text) = livesim(&["serve", "--help"]);
    assert!(ok, "{text}");
    assert!(text.contains("Usage: livesim serve"), "{text}");
    assert!(text.contains("Exit status: 0"), "{text}");
    assert!(text.contains("--tls"), "{text}");
}
