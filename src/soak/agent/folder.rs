//! Finding agents on disk: which folders are agents, and what stands
//! where an `agent.json` should be when it is not a file.
//!
//! A folder is an agent when it holds an `agent.json` *entry*, whatever
//! that entry is: a folder whose agent file cannot be read (a link to
//! nowhere, a link loop, a folder named `agent.json`) is a broken agent,
//! and a soak that left it out would pass without a word about the agent
//! it never ran. A folder with no such entry is simply not an agent.

use std::io::ErrorKind;
use std::path::{Path, PathBuf};

use super::Agent;
use crate::soak::file_reader::AgentFileError;

/// The file that makes a folder an agent.
pub(crate) const AGENT_FILE: &str = "agent.json";

impl Agent {
    /// Whether folder `dir` holds an `agent.json` entry: a file, or
    /// anything else standing where one should be (a link to nowhere, a
    /// folder), which [`load`](Self::load) then names as the error it is.
    /// A folder that cannot be looked into counts too, so its error is
    /// said rather than the folder passed over.
    ///
    /// ```
    /// use livesim::soak::Agent;
    ///
    /// assert!(Agent::holds_agent_file("sim/payment"));
    /// assert!(!Agent::holds_agent_file("sim"));
    /// ```
    pub fn holds_agent_file(dir: impl AsRef<Path>) -> bool {
        match dir.as_ref().join(AGENT_FILE).symlink_metadata() {
            Ok(_) => true,
            Err(e) => !matches!(e.kind(), ErrorKind::NotFound | ErrorKind::NotADirectory),
        }
    }

    /// The agent folders in `dir`: each subfolder holding an `agent.json`
    /// entry ([`holds_agent_file`](Self::holds_agent_file)), in name order
    /// (how `livesim sim soak` finds the agents in `sim/`). An entry of
    /// `dir` that cannot be read is an error, not a folder passed over.
    ///
    /// ```
    /// use livesim::soak::Agent;
    ///
    /// let folders = Agent::folders_in("sim")?;
    /// assert!(folders.iter().any(|f| f.ends_with("payment")) && folders.is_sorted());
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn folders_in(dir: impl AsRef<Path>) -> std::io::Result<Vec<PathBuf>> {
        let mut dirs = Vec::new();
        for entry in std::fs::read_dir(dir)? {
            let path = entry?.path();
            if Agent::holds_agent_file(&path) {
                dirs.push(path);
            }
        }
        dirs.sort();
        Ok(dirs)
    }

    /// Reads every agent in folder `dir` ([`folders_in`](Self::folders_in)),
    /// in name order. A folder that cannot be read, one that holds no
    /// agent, or an agent folder whose `agent.json` cannot be read is an
    /// error naming it.
    ///
    /// ```
    /// use livesim::soak::Agent;
    ///
    /// let agents = Agent::load_all("sim")?;
    /// let names: Vec<&str> = agents.iter().map(|a| a.name.as_str()).collect();
    /// assert!(names.contains(&"payment") && names.is_sorted());
    /// # Ok::<(), livesim::soak::AgentFileError>(())
    /// ```
    pub fn load_all(dir: impl AsRef<Path>) -> Result<Vec<Agent>, AgentFileError> {
        let dir = dir.as_ref();
        let origin = dir.display().to_string();
        let dirs = Agent::folders_in(dir)
            .map_err(|e| AgentFileError::plain(&origin, format!("cannot read the folder: {e}")))?;
        if dirs.is_empty() {
            return Err(AgentFileError::plain(
                &origin,
                "no agents here: no subfolder holds an agent.json",
            ));
        }
        dirs.iter().map(Agent::load).collect()
    }
}

/// What stands at `path` when it is not a file that can be opened, said
/// as what it is: `std::fs` would call a folder "Is a directory" and a
/// link loop "Too many levels of symbolic links", leaving the user to
/// work out which part of the path is meant. A named pipe, a device or a
/// socket is not a file either: a named pipe nothing writes to would hold
/// the read forever. `None` when it is a file.
pub(crate) fn not_a_file(path: &Path) -> Option<String> {
    let own = path.symlink_metadata().ok()?;
    let link = own
        .file_type()
        .is_symlink()
        .then(|| std::fs::read_link(path).ok())
        .flatten();
    let target = link.as_ref().map(|t| t.display().to_string());
    let fix = "point the link at the agent file or put the file here";
    match (path.metadata(), target) {
        (Ok(meta), None) if meta.is_dir() => Some(
            "it is a folder, not a file; the agent file is the JSON file agent.json itself \
             (docs/formats/agent.md)"
                .to_string(),
        ),
        (Ok(meta), Some(target)) if meta.is_dir() => Some(format!(
            "it is a symbolic link to {target}, which is a folder, not a file; {fix}"
        )),
        (Ok(meta), target) => {
            crate::jsonl::special_file(meta.file_type()).map(|kind| match target {
                Some(target) => {
                    format!("it is a symbolic link to {target}, {kind}, not a file; {fix}")
                }
                None => format!("it is {kind}, not a file; put the agent file here"),
            })
        }
        (Err(_), None) => None,
        (Err(e), Some(target)) if e.kind() == ErrorKind::NotFound => Some(format!(
            "it is a symbolic link to {target}, which does not exist; {fix}"
        )),
        (Err(e), Some(target)) => Some(format!(
            "it is a symbolic link to {target} that cannot be followed ({e}); {fix}"
        )),
    }
}
