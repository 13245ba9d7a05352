//! Agent folders: an `agent.json` that cannot be read is an error naming
//! it, and an invariant that can never hold is refused when it is read.

use std::os::unix::fs::symlink;

use crate::{arg, copy_files, livesim_in, refused, repo, temp};

// Item 1: `sim soak DIR` and `sim check DIR` passed over an agent folder
// whose agent.json is a link to nowhere, a link loop or a folder, and
// soaked the rest with exit 0.
#[test]
fn an_agent_folder_whose_agent_file_cannot_be_read_is_an_error() {
    let dir = temp("broken-agents");
    let weather = repo().join("sim/weather");
    for (name, problem) in [
        (
            "dang",
            "it is a symbolic link to /nonexistent, which does not exist",
        ),
        ("dirj", "it is a folder, not a file"),
        (
            "loop",
            "it is a symbolic link to agent.json that cannot be followed",
        ),
    ] {
        let agents = dir.join(format!("agents-{name}"));
        copy_files(&weather, &agents.join("good"));
        let broken = agents.join(name);
        std::fs::create_dir_all(&broken).unwrap();
        match name {
            "dang" => symlink("/nonexistent", broken.join("agent.json")).unwrap(),
            "dirj" => std::fs::create_dir(broken.join("agent.json")).unwrap(),
            _ => symlink("agent.json", broken.join("agent.json")).unwrap(),
        }
        let file = format!("{name}/agent.json: ");
        for command in [
            &["sim", "soak", arg(&agents), "--seeds", "1", "--no-save"][..],
            &["sim", "check", arg(&agents), "--seeds", "1"],
        ] {
            refused(&dir, command, &[&file, problem]);
        }
        // Named alone, it says the same, not "not a folder holding
        // agent.json".
        let err = refused(
            &dir,
            &["sim", "run", arg(&broken), "--seed", "0"],
            &[&file, problem],
        );
        assert!(!err.contains("not a folder holding agent.json"), "{err}");
    }
    // A folder with no agent.json at all is not an agent: passed over.
    let agents = dir.join("agents-plain");
    copy_files(&weather, &agents.join("good"));
    std::fs::create_dir_all(agents.join("notes")).unwrap();
    let (code, out, err) = livesim_in(
        &dir,
        &["sim", "soak", arg(&agents), "--seeds", "1", "--no-save"],
    );
    assert_eq!(code, Some(0), "{out}{err}");
    assert!(out.contains("1 agent (good)"), "{out}");
}

// Item 7: `before(t, t)` was accepted, and every seed that called `t`
// failed it: the first call of `t` starts before any run of it succeeded.
#[test]
fn an_invariant_that_can_never_hold_is_refused_when_the_agent_is_read() {
    let dir = temp("before-itself");
    let agent = dir.join("ag/bs");
    std::fs::create_dir_all(&agent).unwrap();
    let file = |invariant: &str| {
        format!(
            r#"{{"v":1,"user":["a"],"model":["b"],"call_chance":1,"tools":[{{"name":"t"}},{{"name":"u"}}],"invariants":[{invariant}]}}"#
        )
    };
    std::fs::write(agent.join("agent.json"), file(r#"{"before":["t","t"]}"#)).unwrap();
    let said = [
        "agent.json:1:",
        "at invariants[0].before[1]: before(t, t) can never hold",
        "name two different tools",
    ];
    refused(&dir, &["sim", "run", arg(&agent), "--seed", "0"], &said);
    refused(
        &dir,
        &["sim", "soak", "ag", "--seeds", "1", "--no-save"],
        &said,
    );
    let err = livesim::soak::Agent::load(&agent).unwrap_err().to_string();
    assert!(err.contains("before(t, t) can never hold"), "{err}");
    // Two different tools are an invariant that can hold.
    std::fs::write(agent.join("agent.json"), file(r#"{"before":["t","u"]}"#)).unwrap();
    assert!(livesim::soak::Agent::load(&agent).is_ok());
}

// A user line of 5 MB made `sim run` take about 190 times the file in
// memory (every frame, event and trace entry copies it): an utterance
// past 64 KiB is refused when the agent is read, naming where it is.
#[test]
fn an_utterance_past_64_kib_is_refused_when_the_agent_is_read() {
    let dir = temp("long-utterance");
    let agent = dir.join("long");
    std::fs::create_dir_all(&agent).unwrap();
    let file =
        serde_json::json!({ "v": 1, "user": ["hi", "x".repeat(65 * 1024)], "model": ["ok"] });
    std::fs::write(agent.join("agent.json"), file.to_string()).unwrap();
    refused(
        &dir,
        &["sim", "run", arg(&agent), "--seed", "1"],
        &[
            "at user[1]",
            "holds 66,560 bytes, past the 64 KiB an utterance may hold",
        ],
    );
}
