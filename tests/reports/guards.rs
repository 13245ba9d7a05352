//! The `clippy.toml` the guide hands to users (`docs/guide/seeds-and-replays.md`)
//! bans at least what binds livesim's own code, and points to the facade
//! and the clock.

/// The `path = "…"` entries of a clippy configuration.
fn paths(toml: &str) -> Vec<&str> {
    toml.lines()
        .filter_map(|line| line.split("path = \"").nth(1))
        .filter_map(|rest| rest.split('"').next())
        .collect()
}

/// The first ```toml block of the guide's "Determinism rules" section.
fn users_snippet(readme: &str) -> &str {
    let section = readme
        .split("## Determinism rules")
        .nth(1)
        .expect("the guide has a Determinism rules section");
    let block = section
        .split("```toml\n")
        .nth(1)
        .expect("the section has a toml block");
    block.split("```").next().expect("the block ends")
}

#[test]
fn the_users_clippy_snippet_has_every_ban_of_livesims_own() {
    let readme = include_str!("../../docs/guide/seeds-and-replays.md");
    let ours = include_str!("../../clippy.toml");
    let snippet = users_snippet(readme);
    let theirs = paths(snippet);
    for path in paths(ours) {
        assert!(theirs.contains(&path), "the guide's snippet lacks {path}");
    }
    for extra in [
        "tokio::task::spawn",
        "tokio::spawn",
        "tokio::task::spawn_local",
    ] {
        assert!(theirs.contains(&extra), "the snippet lacks {extra}");
    }
    assert!(snippet.contains("use livesim::executor::spawn(label, future)"));
    assert!(snippet.contains("tokio::time or the session's clock"));
    // Every entry says why, as clippy prints it.
    let entries = snippet.lines().filter(|l| l.contains("path = ")).count();
    let reasons = snippet.lines().filter(|l| l.contains("reason = ")).count();
    assert_eq!(entries, reasons);
}
