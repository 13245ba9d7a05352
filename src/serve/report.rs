//! What became of each served connection, and of the whole run.

use std::fmt;

use super::log::Cut;
use crate::testing::ReplayError;
use crate::testing::player::Recorded;
use crate::wire::Redactor;

/// How one connection's script play ended. More ways may come (a match
/// needs a `_` arm).
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Outcome {
    /// The script played to its end (or to its own close/abort), and the
    /// client hung up without breaking it.
    Completed,
    /// The client did what the script does not allow; the connection was
    /// closed as the Live service would close it.
    Broken(Vec<ReplayError>),
    /// The client stopped talking (no setup, or no frame either way, in
    /// time; the connection was closed with 1011) or stopped reading (it
    /// was dropped).
    TimedOut {
        /// What was missing: `no setup within 10s`.
        missing: String,
        /// Where the script was.
        at: String,
        /// `closed with 1011`, or `dropped`.
        ending: String,
    },
    /// The client broke the WebSocket protocol (invalid UTF-8 in a text
    /// message, a message over the size limit, a malformed frame); the
    /// connection was closed with `code` (1007, 1009, 1002).
    ProtocolViolation {
        /// The close code sent.
        code: u16,
        /// What was wrong.
        problem: String,
        /// Where the script was.
        at: String,
    },
    /// The server closed the connection (1000) at the deadline of the
    /// script's own `goAway`, with actions left and no `reconnect` for the
    /// client to move to: the script acts past its deadline.
    ClosedAtGoAway {
        /// The `go_away_ms` action, numbered from 1.
        go_away: usize,
        /// Where the script was: `action #4 (pause 2000ms)`.
        at: String,
    },
    /// The client hung up before the script's end.
    LeftEarly {
        /// Where the script was: `action #3 (call get_weather as call-1)`.
        at: String,
        /// Calls the script issued that were never answered.
        unanswered: Vec<String>,
    },
}

/// One connection that reached the script (made by `livesim serve`; more
/// fields may come).
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct ConnectionReport {
    /// Connections are numbered from 1 in the order they were accepted.
    pub number: usize,
    /// The script's name.
    pub script: String,
    /// How it ended.
    pub outcome: Outcome,
    /// How many client messages of the kinds the script's `stream` names
    /// (microphone chunks, say) the script took: counted, never logged.
    pub streamed: u64,
}

impl ConnectionReport {
    /// Reads the player's record. Every string that came from the client
    /// goes through `redactor`, so the report is safe to print.
    pub(crate) fn from_record(
        number: usize,
        script: &str,
        record: &Recorded,
        unanswered: Vec<String>,
        cut: Option<Cut>,
        redactor: &Redactor,
    ) -> Self {
        let at = record.at.to_string();
        let outcome = if let Some(cut) = cut {
            match cut {
                Cut::TimedOut { missing, closed } => Outcome::TimedOut {
                    missing,
                    at,
                    ending: if closed {
                        "closed with 1011"
                    } else {
                        "dropped"
                    }
                    .to_string(),
                },
                Cut::Violation { code, problem } => Outcome::ProtocolViolation {
                    code,
                    problem: redactor.scrub(&problem).into_owned(),
                    at,
                },
            }
        } else if !record.errors.is_empty() {
            Outcome::Broken(
                record
                    .errors
                    .iter()
                    .map(|e| ReplayError {
                        script: e.script.clone(),
                        at: e.at.clone(),
                        problem: redactor.scrub(&e.problem).into_owned(),
                    })
                    .collect(),
            )
        } else if record.actions_done || record.ended_by_script {
            Outcome::Completed
        } else if let Some((go_away, at)) = &record.closed_at_go_away {
            Outcome::ClosedAtGoAway {
                go_away: go_away + 1,
                at: at.to_string(),
            }
        } else {
            Outcome::LeftEarly { at, unanswered }
        };
        ConnectionReport {
            number,
            script: script.to_string(),
            outcome,
            streamed: record.streamed,
        }
    }

    /// Whether the client played the script through.
    pub fn completed(&self) -> bool {
        self.outcome == Outcome::Completed
    }
}

impl fmt::Display for ConnectionReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.fmt_outcome(f)?;
        // Only a script with a `stream` takes any: others read as before.
        match self.streamed {
            0 => Ok(()),
            1 => write!(f, "\n  it took 1 streamed client message"),
            many => write!(f, "\n  it took {many} streamed client messages"),
        }
    }
}

impl ConnectionReport {
    fn fmt_outcome(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let n = self.number;
        match &self.outcome {
            Outcome::Completed => write!(
                f,
                "connection {n}: script {:?} played to its end",
                self.script
            ),
            Outcome::Broken(errors) => {
                write!(f, "connection {n}: the client broke the script:")?;
                for error in errors {
                    write!(f, "\n  {error}")?;
                }
                Ok(())
            }
            Outcome::TimedOut {
                missing,
                at,
                ending,
            } => write!(
                f,
                "connection {n}: {missing}, at {at} of script {:?}: {ending}",
                self.script
            ),
            Outcome::ProtocolViolation { code, problem, at } => write!(
                f,
                "connection {n}: the client broke the WebSocket protocol ({problem}), at {at} \
                 of script {:?}: closed with {code}",
                self.script
            ),
            Outcome::ClosedAtGoAway { go_away, at } => write!(
                f,
                "connection {n}: the server closed it (1000) at the deadline of action #{go_away}'s \
                 goAway, at {at}, before script {:?} ended: the script acts past its own goAway \
                 deadline; end the connection before it (a reconnect or close) or give the goAway \
                 more time",
                self.script
            ),
            Outcome::LeftEarly { at, unanswered } => {
                write!(
                    f,
                    "connection {n}: the client hung up before script {:?} ended, at {at}",
                    self.script
                )?;
                if !unanswered.is_empty() {
                    write!(f, " (unanswered calls: {})", unanswered.join(", "))?;
                }
                Ok(())
            }
        }
    }
}

/// Every connection a run served.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ServeReport {
    /// In the order they ended.
    pub connections: Vec<ConnectionReport>,
}

impl ServeReport {
    /// Whether every connection played its script through.
    pub fn success(&self) -> bool {
        self.connections.iter().all(ConnectionReport::completed)
    }

    /// The process exit status `livesim serve` uses: 0 when every
    /// connection completed, 1 when a client broke the script or left
    /// early (2, bad usage, never comes from a run).
    pub fn exit_code(&self) -> u8 {
        if self.success() { 0 } else { 1 }
    }
}
