//! Planted bugs: deliberately broken behaviour for livesim's own test that
//! the soak finds bugs that need two things at once, and shrinks them
//! (`tests/planted.rs`). Built only with the `planted-bug` feature,
//! turned on per session by [`LiveSessionBuilder::plant`]; never on
//! anywhere else.
//!
//! Each names the faults that must meet for it to show.
//!
//! [`LiveSessionBuilder::plant`]: super::LiveSessionBuilder::plant

use std::fmt;
use std::str::FromStr;

/// A deliberately broken behaviour of the session.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PlantedBug {
    /// A refused call runs when it arrives while a call of an earlier
    /// message still runs (governance, calls that overlap).
    RefusedCallRuns,
    /// Cancelling one of several running calls aborts the first of them
    /// instead (parallel calls, a cancellation).
    CancelsTheFirstCall,
    /// An interruption while several calls run aborts them, unanswered
    /// (parallel calls, an interruption mid-call).
    InterruptionAbortsCalls,
    /// A call id repeated within one message runs twice (parallel calls,
    /// a duplicate id).
    RepeatedIdRunsAgain,
    /// An answer that comes after a later tool message of the turn is
    /// stored after that message, not its own (several tool messages, a
    /// call not waited for).
    AnswerFiledUnderLaterCall,
    /// An output transcription chunk that arrives while a call is
    /// unanswered is dropped (frames while a call runs).
    TranscriptDroppedMidCall,
    /// A message the user sends while the session is between connections
    /// is dropped instead of queued (typing, a reconnect).
    TypedWhileReconnectingDropped,
    /// A `goAway` with less than a second left is ignored: the session
    /// does not move (a resuming session, a short `goAway`).
    ShortGoAwayIgnored,
    /// A thought pending when a tool call comes is flushed as an answer
    /// (thoughts, a tool call right after them).
    ThoughtFlushedAsAnswer,
    /// A transparent resumption replays the text the server had not
    /// consumed but not the audio (audio, a reconnect).
    AudioNotReplayed,
    /// The tools still running when the session ends are left to finish
    /// (the user hanging up, a call running).
    ToolsOutliveHangUp,
    /// A new connection's calls are checked against the ids the old one
    /// saw: a call whose id an earlier connection used is taken for a
    /// duplicate, never run nor answered (a reconnect, a server that
    /// numbers its calls from `call-1` again).
    IdsOutliveTheirConnection,
    /// A chunk of the model's audio that rides on an interruption's frame
    /// is not marked interrupted (audio, a barge-in while it plays).
    MediaLosesItsInterruption,
    /// Text pending when one frame both interrupts the model and ends its
    /// turn is flushed as if the model had finished it (an interruption,
    /// the turn's end in the same frame).
    TurnEndingInterruptionUnmarked,
    /// Usage that rides on a tool call's own frame is dropped (usage, a
    /// tool call in the same frame).
    UsageLostOnToolCall,
    /// A call that finishes after the session moved to a new connection
    /// is not counted by the flow: it ran, and the journal never says so
    /// (governance, a reconnect while a call runs).
    LeftResultUncounted,
    /// A fresh start keeps the old session's handle counted as fresh: a
    /// `goAway` before the new session's first handle makes the session
    /// move at once, find no handle, and stay for good (a fresh start, a
    /// `goAway` before the first turn).
    FreshStartKeepsStaleHandle,
}

impl PlantedBug {
    /// Every planted bug.
    pub const ALL: [PlantedBug; 17] = [
        PlantedBug::RefusedCallRuns,
        PlantedBug::CancelsTheFirstCall,
        PlantedBug::InterruptionAbortsCalls,
        PlantedBug::RepeatedIdRunsAgain,
        PlantedBug::AnswerFiledUnderLaterCall,
        PlantedBug::TranscriptDroppedMidCall,
        PlantedBug::TypedWhileReconnectingDropped,
        PlantedBug::ShortGoAwayIgnored,
        PlantedBug::ThoughtFlushedAsAnswer,
        PlantedBug::AudioNotReplayed,
        PlantedBug::ToolsOutliveHangUp,
        PlantedBug::IdsOutliveTheirConnection,
        PlantedBug::MediaLosesItsInterruption,
        PlantedBug::TurnEndingInterruptionUnmarked,
        PlantedBug::UsageLostOnToolCall,
        PlantedBug::LeftResultUncounted,
        PlantedBug::FreshStartKeepsStaleHandle,
    ];

    /// Its name, as an agent file's `planted_bug` writes it.
    pub fn name(self) -> &'static str {
        match self {
            PlantedBug::RefusedCallRuns => "refused-call-runs",
            PlantedBug::CancelsTheFirstCall => "cancels-the-first-call",
            PlantedBug::InterruptionAbortsCalls => "interruption-aborts-calls",
            PlantedBug::RepeatedIdRunsAgain => "repeated-id-runs-again",
            PlantedBug::AnswerFiledUnderLaterCall => "answer-filed-under-later-call",
            PlantedBug::TranscriptDroppedMidCall => "transcript-dropped-mid-call",
            PlantedBug::TypedWhileReconnectingDropped => "typed-while-reconnecting-dropped",
            PlantedBug::ShortGoAwayIgnored => "short-go-away-ignored",
            PlantedBug::ThoughtFlushedAsAnswer => "thought-flushed-as-answer",
            PlantedBug::AudioNotReplayed => "audio-not-replayed",
            PlantedBug::ToolsOutliveHangUp => "tools-outlive-hang-up",
            PlantedBug::IdsOutliveTheirConnection => "ids-outlive-their-connection",
            PlantedBug::MediaLosesItsInterruption => "media-loses-its-interruption",
            PlantedBug::TurnEndingInterruptionUnmarked => "turn-ending-interruption-unmarked",
            PlantedBug::UsageLostOnToolCall => "usage-lost-on-tool-call",
            PlantedBug::LeftResultUncounted => "left-result-uncounted",
            PlantedBug::FreshStartKeepsStaleHandle => "fresh-start-keeps-stale-handle",
        }
    }
}

impl fmt::Display for PlantedBug {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for PlantedBug {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        PlantedBug::ALL
            .into_iter()
            .find(|bug| bug.name() == s)
            .ok_or_else(|| {
                let names: Vec<&str> = PlantedBug::ALL.iter().map(|b| b.name()).collect();
                format!("`{s}` is not a planted bug (bugs: {})", names.join(", "))
            })
    }
}
