//! Named pipes where livesim looks for a file. Opening one waits until
//! something writes to it, forever when nothing does: a pipe the user
//! names is read (`<(zcat journal.gz)`, a `mkfifo` fed by another
//! program), but a spec, scenario or agent file livesim finds in a folder
//! that is a named pipe is refused, naming it, rather than waited on.

#![cfg(unix)]

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use super::Scratch;

/// Longer than any of these commands takes, far shorter than forever.
const PATIENCE: Duration = Duration::from_secs(60);

/// A folder under the temp directory, removed when dropped.
struct Folder(Scratch);

impl Folder {
    fn new(label: &str) -> Self {
        let scratch = Scratch::new(label);
        std::fs::create_dir(scratch.path()).unwrap();
        Folder(scratch)
    }

    fn path(&self) -> &Path {
        self.0.path()
    }
}

impl Drop for Folder {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(self.path());
    }
}

/// A named pipe at `path`, nothing writing to it.
fn mkfifo(path: &Path) {
    let made = Command::new("mkfifo")
        .arg(path)
        .status()
        .expect("mkfifo runs");
    assert!(made.success(), "mkfifo {}", path.display());
}

/// Runs `livesim args`, killing it if it runs past [`PATIENCE`]; its
/// exit status (`None` when it was killed) and stderr.
#[allow(clippy::disallowed_methods)] // the wall clock: a real process
fn livesim(args: &[&str]) -> (Option<i32>, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_livesim"))
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the livesim binary runs");
    let started = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if started.elapsed() > PATIENCE {
            child.kill().unwrap();
            let _ = child.wait();
            return (None, format!("still running after {PATIENCE:?}"));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8(out.stderr).expect("stderr is UTF-8");
    (out.status.code(), stderr)
}

/// A scenario in a `flow ci` corpus that is a named pipe is an error
/// naming it, said at once, not a run that waits forever.
#[test]
fn a_named_pipe_in_a_corpus_is_refused_not_waited_on() {
    let corpus = Folder::new("ci-pipe");
    std::fs::write(
        corpus.path().join("party.spec.json"),
        r#"{"v": 1, "kind": "flow", "steps": [{"id": "party", "allow": ["set_party"]}]}"#,
    )
    .unwrap();
    let pipe = corpus.path().join("party.fed.scenario.json");
    mkfifo(&pipe);
    let (code, stderr) = livesim(&["flow", "ci", corpus.path().to_str().unwrap()]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(
        stderr.starts_with(&format!(
            "livesim flow ci: {}: a named pipe, not a file",
            pipe.display()
        )),
        "{stderr}"
    );
}

/// An agent whose `agent.json` is a named pipe is an error naming it,
/// said at once, not a soak that waits forever.
#[test]
fn a_named_pipe_as_an_agent_file_is_refused_not_waited_on() {
    let agents = Folder::new("agent-pipe");
    let agent = agents.path().join("bot");
    std::fs::create_dir(&agent).unwrap();
    let pipe = agent.join("agent.json");
    mkfifo(&pipe);
    let (code, stderr) = livesim(&["sim", "soak", agents.path().to_str().unwrap()]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(
        stderr.contains(&format!(
            "{}: it is a named pipe, not a file",
            pipe.display()
        )),
        "{stderr}"
    );
}

/// A named pipe the user names is still read, as `<(cmd)` is: the
/// command waits for the writer and replays what it wrote.
#[test]
fn a_pipe_the_user_names_is_still_read() {
    let dir = Folder::new("named-pipe");
    let spec = dir.path().join("party.spec.json");
    std::fs::write(
        &spec,
        r#"{"v": 1, "kind": "flow", "steps": [{"id": "party", "allow": ["set_party"]}]}"#,
    )
    .unwrap();
    let journal = dir.path().join("fed.journal.jsonl");
    mkfifo(&journal);
    let writer = {
        let journal = journal.clone();
        #[allow(clippy::disallowed_methods)] // outside any session
        std::thread::spawn(move || {
            // Opening waits for the reader, as the command's open waits
            // for this writer.
            let mut pipe = std::fs::OpenOptions::new()
                .write(true)
                .open(&journal)
                .unwrap();
            let entry = r#"{"seq":1,"key":"flow:tool_call","value":{"tool":"set_party","id":"call-1"},"timestamp":1}"#;
            writeln!(pipe, "{{\"v\":1,\"kind\":\"journal\"}}\n{entry}").unwrap();
        })
    };
    let (code, stderr) = livesim(&[
        "flow",
        "replay",
        "--journal",
        journal.to_str().unwrap(),
        spec.to_str().unwrap(),
    ]);
    // Joined only after a replay: had the command not opened the pipe,
    // the writer would wait for it forever.
    assert_eq!(code, Some(0), "{stderr}");
    writer.join().unwrap();
}
