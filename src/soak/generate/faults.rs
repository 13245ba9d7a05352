//! The conversation faults a seed turns on: its swarm, in TigerBeetle's
//! sense.
//!
//! Before anything else, each seed draws which kinds of fault its run
//! will have and how often each fires, so that some seeds are calm, some
//! are storms and most are in between, and a fault that only shows when
//! another is absent still gets explored. The draw:
//!
//! * the seed's **weather** from stream `soak/faults`: `calm` (15 % of
//!   seeds: no fault at all), `storm` (15 %: every kind on) or `mixed`
//!   (each kind on with even odds);
//! * for each kind, from its own stream `soak/faults/<kind>`: one draw
//!   that decides on or off under `mixed`, then its rate (5 %, 20 % or
//!   50 % of the chances it gets); `close` draws which close instead.
//!
//! Kinds that need a session that resumes ([`FaultKind::needs_resumption`]:
//! `reconnect`, `network`, `id-restart`, `handle-lag`) are drawn only for
//! such sessions ([`Faults::draw_resuming`]), so other agents' seeds never
//! see them; `handle-lag` is then left off for a session that resumes
//! without replaying.
//! `network` is on for about 12 % of the seeds that are not calm, whatever
//! the weather.
//!
//! Each kind reads only its own stream, so adding a kind never changes
//! another kind's draws for a recorded seed. The script generator then
//! fires each kind at its rate, from streams of its own
//! (`soak/script/fault/<kind>`); simulated tools read `tool-failure` and
//! `latency-spike` when they run.

use std::fmt;
use std::str::FromStr;

use crate::executor::{Seed, Stream};

/// A kind of conversation fault.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum FaultKind {
    /// Model text split across frames at seeded points: between words,
    /// mid-word, or one character per frame.
    Split,
    /// Thoughts before the model's text.
    Thoughts,
    /// Output transcriptions of the model's speech, and input
    /// transcriptions arriving in chunks.
    Transcriptions,
    /// Non-ASCII text (accents, CJK, emoji) added to the model's words.
    NonAscii,
    /// A tool call whose arguments do not fit the tool's parameters.
    BadArgs,
    /// A call to a tool the session does not declare.
    UnknownTool,
    /// A call id used again while (or after) its first call runs.
    DuplicateId,
    /// Several calls in one `toolCall` message.
    ParallelCalls,
    /// A cancellation sent about when the call's result is due: of one
    /// call of the message, or of all of them.
    CancelRace,
    /// The model's turn interrupted while its text streams.
    InterruptText,
    /// The model's turn interrupted while its calls run (and sometimes one
    /// or all of them cancelled).
    InterruptCall,
    /// Simulated tools fail more often than their declared rate.
    ToolFailure,
    /// Simulated tools sometimes take far longer than their longest
    /// latency: a Pareto tail, up to fifteen times it (a declared
    /// timeout may cut it short).
    LatencySpike,
    /// `usageMetadata` frames.
    Usage,
    /// Server messages and fields this livesim does not know.
    UnknownMessage,
    /// A `goAway` notice.
    GoAway,
    /// The connection ends with a close (or an abrupt drop) at the end of
    /// the fault phase.
    Close,
    /// The connection ends mid-conversation (a close 1000 or 1011, or an
    /// abrupt drop; at a turn's end or while a call runs) and the session
    /// resumes on the next one; sometimes its handle has gone stale (1008
    /// "session not found") and a fresh session starts. Only for sessions
    /// that resume (see [`needs_resumption`](Self::needs_resumption)).
    Reconnect,
    /// Frames arriving while calls run: model text, transcriptions, a
    /// `goAway`, usage, a cancellation of one of the calls.
    FramesMidCall,
    /// The user types at any point, not only at a turn's start: mid-turn,
    /// while calls run, and while the session reconnects; as
    /// `clientContent` or as `realtimeInput` text.
    Typing,
    /// Audio: the user streams `realtimeInput` audio (with the activity
    /// markers when the session turned automatic activity detection off,
    /// `audioStreamEnd` otherwise) while input transcriptions race it; the
    /// model answers in audio and is interrupted while it plays.
    Audio,
    /// Several tool messages in one turn, each with its own faults.
    CallChain,
    /// The session and the scripted server run on two hosts of a
    /// simulated network (turmoil's TCP, the real WebSocket transport)
    /// whose faults overlap the conversation's: delivery held then
    /// released in a burst, partitions (some during a handshake),
    /// late frames from the old connection during a move, a link down
    /// one way (a half-open connection), a server restart. Only for
    /// sessions that resume, and on about one seed in ten of theirs
    /// (not by weather: see [`Faults::draw_resuming`]); its rate is not
    /// used beyond on or off (an agent's tuning may turn it on for every
    /// seed that is not calm).
    Network,
    /// A file the model sends inline: an `inlineData` part that is not
    /// audio, video or image (a PDF), sometimes in the same frame as text.
    /// It is no live media, so the stored log keeps it.
    Document,
    /// The server's in-band error: an `error` member beside a frame's
    /// content (which ends nothing: the content counts), and, on about a
    /// third of the seeds it is on for, a frame that holds an `error` and
    /// nothing else where the conversation would have ended: the server
    /// giving up, so the session must end at once, read nothing more and
    /// say the end is fatal.
    ServerError,
    /// The user hangs up while calls run: the last turn's tool message
    /// (several calls at once when `parallel-calls` fires) is not waited
    /// for, and the user ends the session while its tools run. The
    /// session must end and stop its tools: no tool may finish (a payment
    /// charged, a booking made) after it said it ended. It takes the place
    /// of the calm last turn. On a seed with a `close` at its end, the
    /// user hangs up once a session that resumes says it is reconnecting:
    /// it must stop there, with no attempt after.
    HangUp,
    /// On a new connection the server numbers its calls from `call-1`
    /// again, as a service whose ids belong to their connection may: the
    /// new connection's `call-1` is another call than the old one's, which
    /// may still be running. Fires once per new connection, so some of a
    /// seed's connections start over and others go on counting. Only for
    /// sessions that resume.
    IdRestart,
    /// A transparent resumption handle whose consumed index
    /// (`lastConsumedClientMessageIndex`) lags one or two messages behind
    /// what the server received, as a handle issued before the server
    /// processed them does: a session resuming it must replay them too.
    /// Fires per handle; never reports less than an index before it. Only
    /// for sessions that resume transparently.
    HandleLag,
}

impl FaultKind {
    /// Every kind, in a fixed order.
    pub const ALL: [FaultKind; 28] = [
        FaultKind::Split,
        FaultKind::Thoughts,
        FaultKind::Transcriptions,
        FaultKind::NonAscii,
        FaultKind::BadArgs,
        FaultKind::UnknownTool,
        FaultKind::DuplicateId,
        FaultKind::ParallelCalls,
        FaultKind::CancelRace,
        FaultKind::InterruptText,
        FaultKind::InterruptCall,
        FaultKind::ToolFailure,
        FaultKind::LatencySpike,
        FaultKind::Usage,
        FaultKind::UnknownMessage,
        FaultKind::GoAway,
        FaultKind::Close,
        FaultKind::Reconnect,
        FaultKind::FramesMidCall,
        FaultKind::Typing,
        FaultKind::Audio,
        FaultKind::CallChain,
        FaultKind::Network,
        FaultKind::Document,
        FaultKind::ServerError,
        FaultKind::HangUp,
        FaultKind::IdRestart,
        FaultKind::HandleLag,
    ];

    /// The kind's name, as reports, agent files and stream labels write
    /// it (`cancel-race`).
    pub fn name(self) -> &'static str {
        match self {
            FaultKind::Split => "split",
            FaultKind::Thoughts => "thoughts",
            FaultKind::Transcriptions => "transcriptions",
            FaultKind::NonAscii => "non-ascii",
            FaultKind::BadArgs => "bad-args",
            FaultKind::UnknownTool => "unknown-tool",
            FaultKind::DuplicateId => "duplicate-id",
            FaultKind::ParallelCalls => "parallel-calls",
            FaultKind::CancelRace => "cancel-race",
            FaultKind::InterruptText => "interrupt-text",
            FaultKind::InterruptCall => "interrupt-call",
            FaultKind::ToolFailure => "tool-failure",
            FaultKind::LatencySpike => "latency-spike",
            FaultKind::Usage => "usage",
            FaultKind::UnknownMessage => "unknown-message",
            FaultKind::GoAway => "go-away",
            FaultKind::Close => "close",
            FaultKind::Reconnect => "reconnect",
            FaultKind::FramesMidCall => "frames-mid-call",
            FaultKind::Typing => "typing",
            FaultKind::Audio => "audio",
            FaultKind::CallChain => "call-chain",
            FaultKind::Network => "network",
            FaultKind::Document => "document",
            FaultKind::ServerError => "server-error",
            FaultKind::HangUp => "hang-up",
            FaultKind::IdRestart => "id-restart",
            FaultKind::HandleLag => "handle-lag",
        }
    }

    /// Whether the kind only makes sense for a session that resumes on a
    /// new connection: seeds of other sessions never draw it.
    pub fn needs_resumption(self) -> bool {
        matches!(
            self,
            FaultKind::Reconnect | FaultKind::Network | FaultKind::IdRestart | FaultKind::HandleLag
        )
    }

    fn index(self) -> usize {
        self as usize
    }
}

impl fmt::Display for FaultKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for FaultKind {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        FaultKind::ALL
            .into_iter()
            .find(|kind| kind.name() == s)
            .ok_or_else(|| {
                let names: Vec<&str> = FaultKind::ALL.iter().map(|k| k.name()).collect();
                format!("`{s}` is not a fault kind (kinds: {})", names.join(", "))
            })
    }
}

/// How stormy a seed is: decided first, then each kind follows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Weather {
    /// No fault at all.
    Calm,
    /// Each kind on or off with even odds.
    Mixed,
    /// Every kind on (that the session can have).
    Storm,
}

impl Weather {
    /// `calm`, `mixed` or `storm`.
    pub fn name(self) -> &'static str {
        match self {
            Weather::Calm => "calm",
            Weather::Mixed => "mixed",
            Weather::Storm => "storm",
        }
    }
}

/// How a connection-ending close looks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CloseKind {
    /// 1000: a normal close (what the service sends when a go-away's time
    /// is up).
    Normal,
    /// The connection drops with no close frame (seen as 1006).
    Abort,
    /// 1007: the request was invalid (fatal).
    InvalidArgument,
    /// 1008: a policy refusal (fatal).
    Policy,
    /// 1008 "session not found": a stale resumption (resume rejected).
    SessionNotFound,
    /// 1011: an internal error (retryable).
    Internal,
}

impl CloseKind {
    /// Every close, in a fixed order.
    pub const ALL: [CloseKind; 6] = [
        CloseKind::Normal,
        CloseKind::Abort,
        CloseKind::InvalidArgument,
        CloseKind::Policy,
        CloseKind::SessionNotFound,
        CloseKind::Internal,
    ];

    /// The close code and reason the service sends; `None` for an abort.
    pub fn frame(self) -> Option<(u16, &'static str)> {
        match self {
            CloseKind::Normal => Some((1000, "")),
            CloseKind::Abort => None,
            CloseKind::InvalidArgument => Some((1007, "Request contains an invalid argument.")),
            CloseKind::Policy => Some((1008, "Requested entity was not found.")),
            CloseKind::SessionNotFound => Some((1008, "BidiGenerateContent session not found")),
            CloseKind::Internal => Some((1011, "Internal error encountered.")),
        }
    }
}

impl fmt::Display for CloseKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            CloseKind::Normal => "1000",
            CloseKind::Abort => "1006-abort",
            CloseKind::InvalidArgument => "1007",
            CloseKind::Policy => "1008",
            CloseKind::SessionNotFound => "1008-session-not-found",
            CloseKind::Internal => "1011",
        })
    }
}

/// The share of a resuming session's seeds that are not calm and run
/// over the simulated network.
const NETWORK_ODDS: f64 = 0.12;

/// The rates a kind may be drawn at.
const RATES: [f64; 3] = [0.05, 0.2, 0.5];

/// One seed's conversation faults: which kinds are on, at what rate.
///
/// ```
/// use livesim::Seed;
/// use livesim::soak::{FaultKind, Faults};
///
/// let faults = Faults::draw(Seed::new(7));
/// assert_eq!(faults, Faults::draw(Seed::new(7))); // a function of the seed
/// println!("{faults}"); // one line: `mixed: split=0.20 thoughts=0.05 … close=1011`
/// let calm = Faults::calm().with(FaultKind::Split, 0.5);
/// assert_eq!(calm.rate(FaultKind::Split), 0.5);
/// assert!(!calm.is_on(FaultKind::Thoughts));
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct Faults {
    /// How stormy the seed is.
    pub weather: Weather,
    rates: [f64; FaultKind::ALL.len()],
    close: Option<CloseKind>,
}

impl Faults {
    /// No fault at all.
    pub fn calm() -> Faults {
        Faults {
            weather: Weather::Calm,
            rates: [0.0; FaultKind::ALL.len()],
            close: None,
        }
    }

    /// The faults seed `seed` turns on for a session on one connection
    /// (see the module docs).
    pub fn draw(seed: Seed) -> Faults {
        Faults::drawn(seed, false)
    }

    /// The faults seed `seed` turns on for a session that resumes on new
    /// connections: those of [`draw`](Self::draw), the same for the same
    /// seed, and the kinds that need resumption.
    ///
    /// ```
    /// use livesim::Seed;
    /// use livesim::soak::{FaultKind, Faults};
    ///
    /// let (one, resuming) = (Faults::draw(Seed::new(5)), Faults::draw_resuming(Seed::new(5)));
    /// assert!(!one.is_on(FaultKind::Reconnect));
    /// for (kind, rate) in one.on() {
    ///     assert_eq!(resuming.rate(kind), rate);
    /// }
    /// ```
    pub fn draw_resuming(seed: Seed) -> Faults {
        Faults::drawn(seed, true)
    }

    fn drawn(seed: Seed, resuming: bool) -> Faults {
        let weather = {
            let roll = Stream::new(seed, "soak/faults").unit();
            if roll < 0.15 {
                Weather::Calm
            } else if roll < 0.30 {
                Weather::Storm
            } else {
                Weather::Mixed
            }
        };
        let mut faults = Faults {
            weather,
            ..Faults::calm()
        };
        for kind in FaultKind::ALL {
            if kind.needs_resumption() && !resuming {
                continue;
            }
            let mut stream = Stream::new(seed, &format!("soak/faults/{}", kind.name()));
            // Both draws happen whatever the weather, so a kind's stream
            // reads the same for every seed.
            let odds = stream.unit();
            let on = match weather {
                Weather::Calm => false,
                // Not by weather: a network run costs several times an
                // in-memory one, so about one resuming seed in ten.
                _ if kind == FaultKind::Network => odds < NETWORK_ODDS,
                Weather::Mixed => odds < 0.5,
                Weather::Storm => true,
            };
            if kind == FaultKind::Close {
                let close = *stream.pick(&CloseKind::ALL).unwrap_or(&CloseKind::Normal);
                if on {
                    faults = faults.closing(close);
                }
            } else {
                let rate = *stream.pick(&RATES).unwrap_or(&RATES[0]);
                if on {
                    faults.rates[kind.index()] = rate;
                }
            }
        }
        faults
    }

    /// The same faults changed as a variant seed changes them (see
    /// [`variant`](crate::soak::variant)): one or two kinds turned on or
    /// off, or drawn at another rate, from `variant`'s own stream.
    /// Kinds that need resumption change only when `resuming`.
    pub(crate) fn perturbed(mut self, variant: Seed, resuming: bool) -> Faults {
        let mut stream = Stream::new(variant, "soak/explore/faults");
        let kinds: Vec<FaultKind> = FaultKind::ALL
            .into_iter()
            .filter(|kind| resuming || !kind.needs_resumption())
            .collect();
        let changes = stream.range(1..=2);
        for _ in 0..changes {
            let Some(&kind) = stream.pick(&kinds) else {
                break;
            };
            let turn_off = self.is_on(kind) && stream.chance(0.5);
            if turn_off {
                self = self.with(kind, 0.0);
            } else if kind == FaultKind::Close {
                let close = *stream.pick(&CloseKind::ALL).unwrap_or(&CloseKind::Normal);
                self = self.closing(close);
            } else {
                let rate = *stream.pick(&RATES).unwrap_or(&RATES[0]);
                self = self.with(kind, rate);
            }
        }
        self
    }

    /// An agent's tuning: in every seed that is not calm, these kinds are
    /// on, at these rates (a rate of 0 turns a kind off).
    pub fn tuned(mut self, tuning: &[(FaultKind, f64)]) -> Faults {
        if self.weather == Weather::Calm {
            return self;
        }
        for &(kind, rate) in tuning {
            if kind == FaultKind::Close {
                if rate <= 0.0 {
                    self.close = None;
                    self.rates[kind.index()] = 0.0;
                }
            } else {
                self.rates[kind.index()] = rate.clamp(0.0, 1.0);
            }
        }
        self
    }

    /// The same faults with `kind` at `rate` (for `close`, any positive
    /// rate means a normal close; use [`closing`](Self::closing) to pick).
    pub fn with(mut self, kind: FaultKind, rate: f64) -> Faults {
        if kind == FaultKind::Close {
            return if rate > 0.0 {
                self.closing(CloseKind::Normal)
            } else {
                self.close = None;
                self.rates[kind.index()] = 0.0;
                self
            };
        }
        self.rates[kind.index()] = rate.clamp(0.0, 1.0);
        if rate > 0.0 && self.weather == Weather::Calm {
            self.weather = Weather::Mixed;
        }
        self
    }

    /// The same faults, ending the connection with `close`.
    pub fn closing(mut self, close: CloseKind) -> Faults {
        self.close = Some(close);
        self.rates[FaultKind::Close.index()] = 1.0;
        if self.weather == Weather::Calm {
            self.weather = Weather::Mixed;
        }
        self
    }

    /// How often `kind` fires when it gets a chance (0 when off).
    pub fn rate(&self, kind: FaultKind) -> f64 {
        self.rates[kind.index()]
    }

    /// Whether `kind` is on.
    pub fn is_on(&self, kind: FaultKind) -> bool {
        self.rate(kind) > 0.0
    }

    /// The close that ends the fault phase, if the seed has one.
    pub fn close(&self) -> Option<CloseKind> {
        self.close
    }

    /// The kinds that are on, with their rates, in [`FaultKind::ALL`]
    /// order.
    pub fn on(&self) -> Vec<(FaultKind, f64)> {
        FaultKind::ALL
            .into_iter()
            .filter(|&kind| self.is_on(kind))
            .map(|kind| (kind, self.rate(kind)))
            .collect()
    }
}

impl fmt::Display for Faults {
    /// One line: `calm`, or the weather and every kind that is on.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let on = self.on();
        if on.is_empty() {
            return f.write_str("calm");
        }
        write!(f, "{}:", self.weather.name())?;
        for (kind, rate) in on {
            match (kind, self.close) {
                (FaultKind::Close, Some(close)) => write!(f, " close={close}")?,
                _ => write!(f, " {kind}={rate:.2}")?,
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_parse_back() {
        for kind in FaultKind::ALL {
            assert_eq!(kind.name().parse::<FaultKind>(), Ok(kind));
        }
        let err = "splitt".parse::<FaultKind>().unwrap_err();
        assert!(err.contains("`splitt` is not a fault kind"), "{err}");
    }

    #[test]
    fn calm_seeds_stay_calm_under_tuning() {
        let calm = (0..200)
            .map(|s| Faults::draw(Seed::new(s)))
            .find(|f| f.weather == Weather::Calm)
            .expect("some seed in 200 is calm");
        assert_eq!(calm.tuned(&[(FaultKind::ParallelCalls, 0.5)]).on(), []);
    }
}
