//! The soak's simulated user: what it sends for each of the script's
//! `expect`s, and when.
//!
//! The script says what the server waits for (`clientContent`,
//! `realtimeInput.text`, `realtimeInput.audio`, the activity markers,
//! `realtimeInput.audioStreamEnd`); the user sends one such message per
//! `expect`: a line from the repertoire, or a chunk of audio (distinct
//! bytes drawn from the seed, so a chunk lost or sent twice shows). It
//! sends when the script gets to the `expect`, once the session is on the
//! connection the script waits on, except for two: the `expect`s that the
//! script puts right after a connection ends and the next resumes (one or
//! a few in a row) are typed while the session reconnects, once it says
//! so; and those the script puts right after a `goAway` move (a session
//! that resumes without replaying and moves at once; any session that
//! moves after its turn, the `expect`s then following the move's
//! `reconnect`, or its refusal) are typed as soon as the session reports
//! the `goAway`. Either way the session must hold the message and send it
//! once it is on the next connection (or, after a refused move, back on
//! its own).
//!
//! With `typing` on, the user also types where the script waits for
//! nothing: while the session reconnects to a handle the server no longer
//! knows (its setup refused with 1008, then a fresh session). A fresh
//! server has none of the old session's context, so the session must drop
//! what it queued, and the server must never get it.

use crate::wire::JsonPath;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};

use crate::executor::{self, Seed, Stream};
use crate::session::{EventStream, LiveEvent, LiveHandle, SessionError};
use crate::soak::agent::simulated_user::{Said, agent_said, waits_for_words};
use crate::soak::run::engine::Target;
use crate::testing::{Action, ReplayControl, ScriptedServer};

/// Bytes in one chunk of user audio (10 ms of 16 kHz 16-bit mono).
const AUDIO_CHUNK: usize = 320;

/// One message the user sends.
pub(crate) struct Turn {
    /// What identifies it among the messages the server got (its
    /// [`content_key`]).
    pub key: String,
    /// How the user sends it.
    pub say: Say,
    /// When the user sends it.
    pub when: When,
    /// Whether the script waits for it: `false` for a message typed while
    /// the session reconnects into a fresh session, which must drop it.
    pub expected: bool,
}

/// How the user sends a message: through the session handle's method
/// for it, as a user's code does, so the soak exercises those methods
/// too; a marker with no method of its own goes as a raw message.
pub(crate) enum Say {
    /// A typed turn (`send_text`).
    Text(String),
    /// Realtime text (`send_realtime_text`).
    RealtimeText(String),
    /// A chunk of audio (`send_audio`).
    Audio(Vec<u8>),
    /// An activity marker or `audioStreamEnd` (`send_message`).
    Message(Value),
}

impl Say {
    fn send(&self, handle: &LiveHandle) -> Result<(), SessionError> {
        match self {
            Say::Text(text) => handle.send_text(text.as_str()),
            Say::RealtimeText(text) => handle.send_realtime_text(text.as_str()),
            Say::Audio(pcm) => handle.send_audio(pcm),
            Say::Message(message) => handle.send_message(message.clone()),
        }
    }
}

/// A `realtimeInput` marker: the message, sent as it is.
fn marker(body: Value) -> (Value, Say) {
    let message = json!({ "realtimeInput": body });
    (message.clone(), Say::Message(message))
}

/// When the user sends a message.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum When {
    /// When the script reaches its `expect`, once the session is on the
    /// connection the script waits on.
    Reached,
    /// As soon as the `close` or `abort` action `close` has ended
    /// connection `ended` (1-based) and the session, on it, says it is
    /// reconnecting: typing while the session reconnects.
    AfterClose { close: usize, ended: u32 },
    /// As soon as the session has reported its `nth` (1-based) `goAway`,
    /// the one that moves it: typing while the move is pending. (Counted,
    /// not placed by connection: the session reports a `goAway` on its
    /// telemetry lane, which may say so after the control lane said the
    /// session was on the next connection.)
    AfterGoAway { nth: usize },
}

/// The connection (1-based) that the actions before `at` leave the
/// session on: one more than the `reconnect`s that opened one (a
/// `reconnect` whose setup the script refuses opens none).
fn connection_before(actions: &[Action], at: usize) -> u32 {
    let opened = (0..at)
        .filter(|&i| {
            matches!(actions[i], Action::Reconnect(_))
                && !matches!(actions.get(i + 1), Some(Action::RejectSetup(_)))
        })
        .count();
    u32::try_from(opened).unwrap_or(u32::MAX).saturating_add(1)
}

/// Whether the actions at `at` are a connection's end, then a resume
/// whose setup the server refuses with 1008 ("session not found"): the
/// session goes on with a fresh session.
fn ends_into_a_fresh_session(actions: &[Action], at: usize) -> bool {
    matches!(actions.get(at), Some(Action::Close(_) | Action::Abort))
        && matches!(actions.get(at + 1), Some(Action::Reconnect(r)) if r.handle.is_some())
        && matches!(actions.get(at + 2), Some(Action::RejectSetup(c)) if c.code == 1008)
}

/// Whether the actions just before `at` are a `goAway` move: a `reconnect`
/// right after the handle it resumes or the `goAway` itself (a move; a
/// connection's end comes between otherwise), or such a `reconnect` whose
/// setup the server refused with anything but 1008 (which says the handle
/// is gone: a refused move, the session stays on its connection). What the
/// user typed as the `goAway` came is held for the move, and the script
/// waits for it at `at`.
fn moved(actions: &[Action], at: usize) -> bool {
    let before = |back: usize| at.checked_sub(back).and_then(|i| actions.get(i));
    // A `reconnect` right after the handle, or right after the `goAway`
    // of a move at once.
    let handed = |back: usize| {
        let go_away = matches!(before(back), Some(Action::Send(v)) if v.get("goAway").is_some());
        (go_away || matches!(before(back), Some(Action::ResumptionUpdate(u)) if u.handle.is_some()))
            && matches!(before(back - 1), Some(Action::Reconnect(r)) if r.handle.is_some())
    };
    let refused = matches!(before(1), Some(Action::RejectSetup(c)) if c.code != 1008);
    (refused && handed(3)) || handed(2)
}

/// What the user sends for each `expect` of `script`, in order, and, with
/// `typing` on, what it types into a reconnect that ends in a fresh
/// session (where the script waits for nothing).
pub(crate) fn turns(
    target: &Target,
    seed: Seed,
    script: &ScriptedServer,
    typing: bool,
) -> Vec<Turn> {
    let mut draw = Stream::new(seed, "soak/user");
    // Its own stream, so every other message stays as the seed had it.
    let mut dropped = Stream::new(seed, "soak/user/dropped");
    let resumption = &target.repertoire.resumption;
    let opaque = resumption.is_on() && !resumption.is_transparent();
    let mut audio = Stream::new(seed, "soak/user/audio");
    let actions = script.actions();
    let mut out = Vec::new();
    // What was said so far, for a user a model plays.
    let mut said = Vec::new();
    for (at, action) in actions.iter().enumerate() {
        if typing && ends_into_a_fresh_session(actions, at) && dropped.chance(0.5) {
            for _ in 0..1 + dropped.below(2) {
                let text = dropped
                    .pick(&target.repertoire.user_lines)
                    .cloned()
                    .unwrap_or_else(|| "Hello again.".to_string());
                out.push(Turn {
                    key: text.clone(),
                    say: Say::Text(text),
                    when: When::AfterClose {
                        close: at,
                        ended: connection_before(actions, at),
                    },
                    expected: false,
                });
            }
        }
        if target.simulated_user.is_some() {
            said.extend(agent_said(action).into_iter().map(Said::Agent));
        }
        let Action::Expect(key) = action else {
            continue;
        };
        let user = target
            .simulated_user
            .as_ref()
            .filter(|_| waits_for_words(action));
        let answered = user.and_then(|u| u.answer(seed, &said));
        let mut line = || {
            let text = answered.clone().unwrap_or_else(|| {
                draw.pick(&target.repertoire.user_lines)
                    .cloned()
                    .unwrap_or_else(|| "Hello.".to_string())
            });
            if user.is_some() {
                said.push(Said::User(text.clone()));
            }
            text
        };
        // The message the server should get, written here apart from the
        // handle's own methods (which build it when the user sends).
        let (message, say) = match key.as_str() {
            "realtimeInput" | "realtimeInput.text" => {
                let text = line();
                (
                    json!({ "realtimeInput": { "text": text } }),
                    Say::RealtimeText(text),
                )
            }
            "realtimeInput.audio" => {
                use base64::Engine as _;
                let pcm: Vec<u8> = (0..AUDIO_CHUNK)
                    .map(|_| (audio.next_u64() & 0xff) as u8)
                    .collect();
                let data = base64::engine::general_purpose::STANDARD.encode(&pcm);
                (
                    json!({ "realtimeInput": { "audio": { "mimeType": "audio/pcm;rate=16000", "data": data } } }),
                    Say::Audio(pcm),
                )
            }
            "realtimeInput.activityStart" => marker(json!({ "activityStart": {} })),
            "realtimeInput.activityEnd" => marker(json!({ "activityEnd": {} })),
            "realtimeInput.audioStreamEnd" => marker(json!({ "audioStreamEnd": true })),
            _ => {
                let text = line();
                (
                    json!({ "clientContent": {
                        "turns": [{ "role": "user", "parts": [{ "text": text }] }],
                        "turnComplete": true
                    } }),
                    Say::Text(text),
                )
            }
        };
        // Right after `close`/`abort`, then a `reconnect` that resumes a
        // handle: typed while the session is between connections. Right
        // after a `goAway` that moves a session that does not replay at
        // once (then its `reconnect` and pause): typed while the move is
        // pending.
        let before = |back: usize| at.checked_sub(back).map(|i| &actions[i]);
        let resumed =
            |a: Option<&Action>| matches!(a, Some(Action::Reconnect(r)) if r.handle.is_some());
        let go_away =
            |a: Option<&Action>| matches!(a, Some(Action::Send(v)) if v.get("goAway").is_some());
        // Messages typed one after another between connections: each
        // comes after the others, all after the close and the reconnect.
        let typed_before = (1..=at)
            .take_while(|&back| matches!(before(back), Some(Action::Expect(_))))
            .count();
        let close = typed_before + 2;
        let when = if matches!(before(close), Some(Action::Close(_) | Action::Abort))
            && resumed(before(close - 1))
        {
            When::AfterClose {
                close: at - close,
                ended: connection_before(actions, at - close),
            }
        } else if (opaque
            && go_away(before(3))
            && resumed(before(2))
            && matches!(before(1), Some(Action::PauseMs(_))))
            || moved(actions, at - typed_before)
        {
            // Typed as the `goAway` came, held for the move.
            When::AfterGoAway {
                nth: actions[..at].iter().filter(|a| go_away(Some(*a))).count(),
            }
        } else {
            When::Reached
        };
        out.push(Turn {
            key: content_key(&message).unwrap_or_default(),
            say,
            when,
            expected: true,
        });
    }
    out
}

/// What identifies a content message the user sent, as the checks see it:
/// its text, or its audio data, or which activity marker it is. `None`
/// for a message that is not content (a tool response, a setup).
pub(crate) fn content_key(message: &Value) -> Option<String> {
    if let Some(realtime) = message.get("realtimeInput") {
        if let Some(text) = realtime.get("text").and_then(Value::as_str) {
            return Some(text.to_string());
        }
        if let Some(data) = realtime.at("/audio/data").and_then(Value::as_str) {
            return Some(format!("audio {data}"));
        }
        return realtime
            .as_object()
            .and_then(|o| o.keys().next())
            .map(|k| format!("({k})"));
    }
    let turns = message.at("/clientContent/turns")?.as_array()?;
    Some(
        turns
            .iter()
            .filter_map(|turn| turn.get("parts").and_then(Value::as_array))
            .flatten()
            .filter_map(|part| part.get("text").and_then(Value::as_str))
            .collect(),
    )
}

/// What the user sent: each message's [`content_key`] and when.
pub(crate) type Sent = Arc<Mutex<Vec<(String, Duration)>>>;

/// How long a user over the network waits, once the server has lost
/// what they said, before saying it again: a message the session queued
/// while it reconnected arrives well within it.
const PATIENCE: Duration = Duration::from_secs(3);

/// Plays the user over a network, where what the user says can be lost
/// (the server went back to an older handle or restarted, the message
/// reached a connection the server had left, or the session started
/// fresh and dropped what it queued, as `resumed { fresh: true }` tells
/// the user): each message when the script waits for it, and again when
/// it was lost and, after [`PATIENCE`], the script still waits for it.
pub(crate) async fn follow(
    control: ReplayControl,
    handle: LiveHandle,
    turns: Vec<Turn>,
    sent: Sent,
    mut events: EventStream,
) {
    let mut last: Option<(u32, usize)> = None;
    // Fresh sessions the session reported: each may have dropped a message.
    let mut fresh = 0;
    let mut events_open = true;
    loop {
        let due =
            |c: &ReplayControl, fresh: u32| c.waiting_for().map(|(lost, k)| (lost + fresh, k));
        tokio::select! {
            biased;
            event = events.next(), if events_open => {
                match event {
                    Some(LiveEvent::Resumed { fresh: true, .. }) => fresh += 1,
                    Some(_) => {}
                    None => events_open = false,
                }
                continue;
            }
            // A player that finished may start again (its host restarted):
            // the user stays until the soak hangs up.
            _ = control.wait_until(|c| due(c, fresh).is_some_and(|w| Some(w) != last)) => {}
        }
        let Some((lost, k)) = due(&control, fresh) else {
            continue;
        };
        let Some(turn) = turns.get(k) else {
            return;
        };
        if last.is_some_and(|(l, said)| l != lost && said >= k) {
            tokio::time::sleep(PATIENCE).await;
            if due(&control, fresh) != Some((lost, k)) {
                continue;
            }
        }
        if turn.say.send(&handle).is_err() {
            return;
        }
        sent.lock()
            .unwrap_or_else(|p| p.into_inner())
            .push((turn.key.clone(), executor::now()));
        last = Some((lost, k));
    }
}

/// Plays the user: sends each turn when its time comes, and keeps what it
/// sent in `sent`. With `connections` (the session's events, for a script
/// that spans connections) a turn the script waits for on a later
/// connection is sent once the session is on it: a fresh session would
/// drop what it queued.
pub(crate) async fn play(
    control: ReplayControl,
    handle: LiveHandle,
    turns: Vec<Turn>,
    sent: Sent,
    mut connections: Option<EventStream>,
) {
    let mut heard = Heard { on: 1, go_aways: 0 };
    // The close whose reconnect the user last waited for: the messages
    // typed after the first go at once, while the session still reconnects
    // (its `reconnecting` event was read for the first).
    let mut between = None;
    // Likewise, the `goAway` the user last waited for.
    let mut went_away = None;
    // How many of the turns before this one the script waits for.
    let mut expects = 0;
    for turn in turns {
        let i = expects;
        expects += usize::from(turn.expected);
        match turn.when {
            When::AfterClose { close, .. } if between == Some(close) => {}
            When::AfterClose { close, ended } => {
                between = Some(close);
                control
                    .wait_until(|c| c.last_close().is_some_and(|at| at >= close) || c.is_finished())
                    .await;
                // Then until the session, on the connection that ended,
                // says it is reconnecting.
                let reconnecting = |e: &LiveEvent| matches!(e, LiveEvent::Reconnecting { .. });
                if let Some(events) = &mut connections
                    && !until_on(events, &mut heard, ended, reconnecting).await
                {
                    return;
                }
            }
            When::AfterGoAway { nth } if went_away == Some(nth) => {}
            When::AfterGoAway { nth } => {
                went_away = Some(nth);
                // Until the session reports that `goAway`.
                if let Some(events) = &mut connections {
                    while heard.go_aways < nth {
                        let Some(event) = events.next().await else {
                            return;
                        };
                        heard.hear(&event);
                    }
                }
            }
            When::Reached => {
                control
                    .wait_until(|c| c.expects_reached() > i || c.is_finished())
                    .await;
            }
        }
        if control.is_finished() {
            return;
        }
        if turn.when == When::Reached
            && let Some(events) = &mut connections
        {
            while heard.on < control.connections() {
                let Some(event) = events.next().await else {
                    return;
                };
                heard.hear(&event);
            }
        }
        if turn.say.send(&handle).is_err() {
            return;
        }
        sent.lock()
            .unwrap_or_else(|p| p.into_inner())
            .push((turn.key.clone(), executor::now()));
    }
}

/// What the user has heard from the session's events so far: the
/// connection it says it is on, and how many `goAway`s it reported.
struct Heard {
    on: u32,
    go_aways: usize,
}

impl Heard {
    fn hear(&mut self, event: &LiveEvent) {
        match event {
            LiveEvent::Resumed { connection, .. } => self.on = *connection,
            LiveEvent::GoAway { .. } => self.go_aways += 1,
            _ => {}
        }
    }
}

/// Reads the session's events until, on connection `at`, one that `stop`
/// picks, or until the session is past that connection. `false` when the
/// events ended.
async fn until_on(
    events: &mut EventStream,
    heard: &mut Heard,
    at: u32,
    stop: impl Fn(&LiveEvent) -> bool,
) -> bool {
    while heard.on <= at {
        let Some(event) = events.next().await else {
            return false;
        };
        heard.hear(&event);
        if heard.on == at && stop(&event) {
            break;
        }
    }
    true
}
