//! The script generator: every fault kind shows up, scripts are data, and
//! a seed always makes the same conversation.

use std::collections::BTreeSet;

use livesim::Seed;
use livesim::executor::Simulation;
use livesim::soak::{CloseKind, FaultKind, Faults, Repertoire, generate};
use livesim::state::State;
use livesim::testing::{Action, ScriptedServer};
use serde_json::{Value, json};

use super::{agent, seeds};

fn weather() -> Repertoire {
    agent("weather").repertoire
}

/// Every server message a script sends, calls included as `toolCall`s,
/// each with the index of its action.
fn messages(script: &ScriptedServer) -> Vec<(usize, Value)> {
    let mut out = Vec::new();
    for (i, action) in script.actions().iter().enumerate() {
        match action {
            Action::Send(m) => out.push((i, m.clone())),
            Action::Call(c) => out.push((i, json!({"toolCall": {"functionCalls": [{"id": c.id, "name": c.name, "args": c.args}]}}))),
            Action::CallMany(cs) => {
                let calls: Vec<Value> = cs.iter().map(|c| json!({"id": c.id, "name": c.name, "args": c.args})).collect();
                out.push((i, json!({"toolCall": {"functionCalls": calls}})));
            }
            _ => {}
        }
    }
    out
}

fn texts(script: &ScriptedServer, thought: bool) -> Vec<String> {
    messages(script)
        .into_iter()
        .filter_map(|(_, m)| m.pointer("/serverContent/modelTurn/parts").cloned())
        .filter_map(|p| p.as_array().cloned())
        .flatten()
        .filter(|p| p.get("thought").and_then(Value::as_bool).unwrap_or(false) == thought)
        .filter_map(|p| p.get("text").and_then(Value::as_str).map(String::from))
        .collect()
}

/// An argument's name and how to tell its type.
type Typed = (&'static str, fn(&Value) -> bool);

fn misfits(args: &Value, tool: &str) -> bool {
    let (required, types): (&[&str], &[Typed]) = match tool {
        "get_weather" => (
            &["city"],
            &[("city", Value::is_string), ("units", Value::is_string)],
        ),
        _ => (
            &["city", "days"],
            &[("city", Value::is_string), ("days", Value::is_u64)],
        ),
    };
    required.iter().any(|k| args.get(k).is_none())
        || types
            .iter()
            .any(|(k, ok)| args.get(k).is_some_and(|v| !ok(v)))
        || args
            .as_object()
            .is_some_and(|o| o.keys().any(|k| !types.iter().any(|(t, _)| t == k)))
}

/// Whether `script` shows fault `kind` (for the kinds a script can show).
fn shows(kind: FaultKind, script: &ScriptedServer, rep: &Repertoire) -> bool {
    let actions = script.actions();
    let msgs = messages(script);
    let is_line = |t: &str| rep.model_lines.iter().any(|l| l == t);
    let calls: Vec<(String, String, Value, bool)> = actions
        .iter()
        .flat_map(|a| match a {
            Action::Call(c) => vec![c.clone()],
            Action::CallMany(cs) => cs.clone(),
            _ => vec![],
        })
        .map(|c| (c.id, c.name, c.args, c.wait))
        .collect();
    let declared: Vec<&str> = rep.tools.iter().map(|t| t.name.as_str()).collect();
    match kind {
        FaultKind::Split => texts(script, false)
            .iter()
            .any(|t| !rep.model_lines.iter().any(|l| t.starts_with(l.as_str()))),
        FaultKind::Thoughts => !texts(script, true).is_empty(),
        FaultKind::Transcriptions => msgs.iter().any(|(_, m)| {
            m.pointer("/serverContent/outputTranscription").is_some()
                || m.pointer("/serverContent/inputTranscription")
                    .is_some_and(|t| t.get("finished").is_none())
        }),
        FaultKind::NonAscii => texts(script, false)
            .iter()
            .any(|t| !is_line(t) && rep.model_lines.iter().any(|l| t.starts_with(l.as_str()))),
        FaultKind::BadArgs => calls
            .iter()
            .any(|(_, name, args, _)| declared.contains(&name.as_str()) && misfits(args, name)),
        FaultKind::UnknownTool => calls
            .iter()
            .any(|(_, name, _, _)| !declared.contains(&name.as_str())),
        FaultKind::DuplicateId => {
            let ids: Vec<&String> = calls.iter().map(|(id, ..)| id).collect();
            ids.iter().collect::<BTreeSet<_>>().len() < ids.len()
        }
        FaultKind::ParallelCalls => actions.iter().any(|a| matches!(a, Action::CallMany(_))),
        FaultKind::CancelRace => actions.windows(3).any(|w| {
            matches!((&w[0], &w[1], &w[2]),
                (Action::Call(c), Action::PauseMs(_), Action::Send(m))
                    if !c.wait && m.pointer("/toolCallCancellation/ids/0") == Some(&json!(c.id)))
        }),
        FaultKind::InterruptText => msgs.windows(2).any(|w| {
            w[0].1.pointer("/serverContent/modelTurn").is_some()
                && w[1].1.pointer("/serverContent/interrupted") == Some(&json!(true))
        }),
        FaultKind::InterruptCall => actions.iter().enumerate().any(|(i, a)| {
            matches!(a, Action::Call(c) if !c.wait)
                && actions[i + 1..].iter().take(3).any(|b| {
                    matches!(b, Action::Send(m)
                    if m.pointer("/serverContent/interrupted") == Some(&json!(true)))
                })
        }),
        FaultKind::Usage => msgs.iter().any(|(_, m)| m.get("usageMetadata").is_some()),
        FaultKind::UnknownMessage => msgs.iter().any(|(_, m)| {
            m.get("newFeature").is_some()
                || m.get("voiceActivity").is_some()
                || m.pointer("/serverContent/someNewField").is_some()
        }),
        FaultKind::GoAway => msgs.iter().any(|(_, m)| m.get("goAway").is_some()),
        FaultKind::Close => matches!(actions.last(), Some(Action::Close(_) | Action::Abort)),
        FaultKind::Reconnect => actions.iter().any(|a| matches!(a, Action::Reconnect(_))),
        // A call not waited for, and the next thing (past short pauses)
        // a frame: it arrives while the call runs.
        FaultKind::FramesMidCall => actions.iter().enumerate().any(|(i, a)| {
            let unwaited = match a {
                Action::Call(c) => !c.wait,
                Action::CallMany(cs) => cs.iter().any(|c| !c.wait),
                _ => false,
            };
            unwaited
                && actions[i + 1..]
                    .iter()
                    .find(|b| !matches!(b, Action::PauseMs(_)))
                    .is_some_and(|b| matches!(b, Action::Send(_)))
        }),
        // Typing elsewhere than at a turn's start, or as realtime text.
        FaultKind::Typing => actions.iter().enumerate().any(|(i, a)| match a {
            Action::Expect(key) if key == "realtimeInput.text" => true,
            Action::Expect(_) => i.checked_sub(1).is_some_and(|p| {
                matches!(&actions[p], Action::Call(_) | Action::CallMany(_) | Action::Reconnect(_))
                    || matches!(&actions[p], Action::Send(m) if m.pointer("/serverContent/modelTurn").is_some())
            }),
            _ => false,
        }),
        FaultKind::Audio => {
            actions
                .iter()
                .any(|a| matches!(a, Action::Expect(k) if k == "realtimeInput.audio"))
                || msgs
                    .iter()
                    .any(|(_, m)| m.pointer("/serverContent/modelTurn/parts/0/inlineData").is_some())
        }
        // Two tool messages with no turn's end between them.
        FaultKind::CallChain => {
            let mut calls_this_turn = 0;
            actions.iter().any(|a| {
                match a {
                    Action::Call(_) | Action::CallMany(_) => calls_this_turn += 1,
                    Action::Send(m)
                        if m.pointer("/serverContent/turnComplete") == Some(&json!(true)) =>
                    {
                        calls_this_turn = 0
                    }
                    _ => {}
                }
                calls_this_turn >= 2
            })
        }
        // A part of inline data that is not audio, video or image.
        FaultKind::Document => msgs.iter().any(|(_, m)| {
            m.pointer("/serverContent/modelTurn/parts")
                .and_then(|p| p.as_array())
                .is_some_and(|parts| {
                    parts.iter().any(|p| {
                        p.pointer("/inlineData/mimeType")
                            .and_then(|t| t.as_str())
                            .is_some_and(|t| {
                                !["audio/", "video/", "image/"].iter().any(|m| t.starts_with(m))
                            })
                    })
                })
        }),
        // An `error` member, beside content or alone.
        FaultKind::ServerError => msgs.iter().any(|(_, m)| m.get("error").is_some()),
        // The script ends (past a pause) on calls it does not wait for.
        FaultKind::HangUp => {
            let mut rest = actions.iter().rev().skip_while(|a| matches!(a, Action::PauseMs(_)));
            match rest.next() {
                Some(Action::Call(c)) => !c.wait,
                Some(Action::CallMany(cs)) => cs.iter().all(|c| !c.wait),
                _ => false,
            }
        }
        // A call numbered `call-1` after a reconnect.
        FaultKind::IdRestart => actions
            .iter()
            .skip_while(|a| !matches!(a, Action::Reconnect(_)))
            .any(|a| match a {
                Action::Call(c) => c.id == "call-1",
                Action::CallMany(cs) => cs.iter().any(|c| c.id == "call-1"),
                _ => false,
            }),
        // An index that leaves out messages the server received.
        FaultKind::HandleLag => actions
            .iter()
            .any(|a| matches!(a, Action::ResumptionUpdate(u) if u.behind > 0)),
        FaultKind::ToolFailure | FaultKind::LatencySpike => unreachable!("tool-side kinds"),
        FaultKind::Network => unreachable!("where the run goes, not what the script says"),
    }
}

const SCRIPT_KINDS: [FaultKind; 22] = [
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
    FaultKind::Usage,
    FaultKind::UnknownMessage,
    FaultKind::GoAway,
    FaultKind::Close,
    FaultKind::FramesMidCall,
    FaultKind::Typing,
    FaultKind::Audio,
    FaultKind::CallChain,
    FaultKind::Document,
    FaultKind::ServerError,
    FaultKind::HangUp,
];

/// Each kind of fault the script carries shows up in scripts when it is
/// on, and never when every fault is off.
#[test]
fn each_fault_kind_shows_when_on_and_never_when_off() {
    let rep = weather();
    for kind in SCRIPT_KINDS {
        let on = Faults::calm().with(kind, 0.5);
        let shown = (0..60)
            .filter(|&s| shows(kind, &generate("w", &rep, Seed::new(s), &on), &rep))
            .count();
        assert!(
            shown >= 5,
            "{kind} shows in only {shown} of 60 scripts with it on"
        );
        let calm = (0..60)
            .filter(|&s| {
                shows(
                    kind,
                    &generate("w", &rep, Seed::new(s), &Faults::calm()),
                    &rep,
                )
            })
            .count();
        assert_eq!(calm, 0, "{kind} shows in {calm} calm scripts");
    }
}

/// Over the seeds' own swarms, every kind of fault the script carries
/// appears in some script, and so does every close class.
#[test]
fn the_drawn_swarms_cover_every_fault_kind() {
    let rep = weather();
    let mut seen = BTreeSet::new();
    let mut closes = BTreeSet::new();
    for s in seeds(300) {
        let faults = Faults::draw(Seed::new(s));
        let script = generate("w", &rep, Seed::new(s), &faults);
        for kind in SCRIPT_KINDS {
            if shows(kind, &script, &rep) {
                seen.insert(kind);
            }
        }
        if let Some(close) = faults.close() {
            let last = script.actions().last().cloned();
            let frame = close.frame();
            match (last, frame) {
                // The server's error ended the conversation first.
                (Some(Action::Send(m)), _) if gives_up(&m) => continue,
                (Some(Action::Close(c)), Some((code, reason))) => {
                    assert_eq!((c.code, c.reason.as_str()), (code, reason));
                }
                (Some(Action::Abort), None) => {}
                (other, _) => panic!("seed {s}: {close} should end the script, got {other:?}"),
            }
            closes.insert(close.to_string());
        }
    }
    let missing: Vec<_> = SCRIPT_KINDS.iter().filter(|k| !seen.contains(*k)).collect();
    assert!(missing.is_empty(), "never generated: {missing:?}");
    assert_eq!(closes.len(), CloseKind::ALL.len(), "{closes:?}");
}

/// The model's audio comes one chunk a frame, and now and then two
/// chunks in one frame (each must become its own media event).
#[test]
fn audio_chunks_come_alone_and_two_to_a_frame() {
    let rep = weather();
    let on = Faults::calm().with(FaultKind::Audio, 1.0);
    let (mut alone, mut paired) = (0, 0);
    for s in 0..40 {
        for (_, m) in messages(&generate("w", &rep, Seed::new(s), &on)) {
            let Some(parts) = m
                .pointer("/serverContent/modelTurn/parts")
                .and_then(Value::as_array)
            else {
                continue;
            };
            match parts
                .iter()
                .filter(|p| p.get("inlineData").is_some())
                .count()
            {
                1 => alone += 1,
                2 => paired += 1,
                0 => {}
                n => panic!("seed {s}: a frame of {n} audio chunks: {m}"),
            }
        }
    }
    assert!(alone > 0 && paired > 0, "alone {alone}, paired {paired}");
}

/// The server's error comes in two shapes: beside content anywhere (it
/// ends nothing), and alone as the conversation's last frame (the server
/// giving up); both show up when the kind is on.
#[test]
fn the_servers_error_comes_beside_content_or_alone_at_the_end() {
    let rep = weather();
    let on = Faults::calm().with(FaultKind::ServerError, 0.5);
    let (mut beside, mut alone) = (0, 0);
    for s in 0..60 {
        let script = generate("w", &rep, Seed::new(s), &on);
        let actions = script.actions();
        for (i, action) in actions.iter().enumerate() {
            let Action::Send(m) = action else { continue };
            if gives_up(m) {
                assert_eq!(
                    i + 1,
                    actions.len(),
                    "seed {s}: the error alone is not last"
                );
                alone += 1;
            } else if m.get("error").is_some() {
                assert!(m.get("usageMetadata").is_some(), "seed {s}: {m}");
                beside += 1;
            }
        }
    }
    assert!(beside >= 10 && alone >= 5, "beside {beside}, alone {alone}");
}

/// A frame that holds an in-band error and nothing else.
fn gives_up(message: &Value) -> bool {
    message
        .as_object()
        .is_some_and(|m| m.len() == 1 && m.contains_key("error"))
}

/// The tool-side kinds change what simulated tools do: `tool-failure` at
/// rate 1 fails every run, `latency-spike` at rate 1 makes every run take
/// longer than the tool's longest latency (a Pareto tail, at most fifteen
/// times it). Without faults the latency is heavy-tailed too: mostly in
/// the declared range, one run in twenty or so past it, never past five
/// times its end.
#[test]
fn tool_side_faults_change_what_tools_do() {
    let mut get_weather = agent("weather").tools.remove(0);
    get_weather.failure_rate = 0.0;
    let longest = *get_weather.latency.end();
    let mut calm = Vec::new();
    for s in 0..40 {
        let call = |faults: Faults| {
            let tool = get_weather.build(&State::new(), &faults);
            Simulation::new(Seed::new(s))
                .run(move || async move {
                    let outcome = tool.tools()[0].call(json!({"city": "Oslo"})).await;
                    (outcome.map_err(|e| e.to_string()), livesim::executor::now())
                })
                .unwrap()
                .value
        };
        let (outcome, _) = call(Faults::calm().with(FaultKind::ToolFailure, 1.0));
        assert_eq!(outcome.unwrap_err(), "get_weather failed (simulated)");
        let (outcome, took) = call(Faults::calm().with(FaultKind::LatencySpike, 1.0));
        assert_eq!(outcome.unwrap()["city"], "Oslo");
        assert!(took >= longest && took <= longest * 15, "{took:?}");
        let (_, took) = call(Faults::calm());
        assert!(took <= longest * 5, "{took:?}");
        calm.push(took);
    }
    let past = calm.iter().filter(|t| **t > longest).count();
    assert!(
        past <= 5,
        "{past} of 40 calm runs past the longest latency: {calm:?}"
    );
}

/// Every generated script, for every agent, reads back from its JSON file
/// form as the same script: a soak finding is data.
#[test]
fn generated_scripts_round_trip_through_the_script_format() {
    for name in ["weather", "payment", "booking", "support"] {
        let rep = agent(name).repertoire;
        for s in seeds(100) {
            let seed = Seed::new(s);
            let script = generate(name, &rep, seed, &Faults::draw(seed));
            let text = serde_json::to_string_pretty(&script.to_json()).unwrap();
            let back = ScriptedServer::from_json_str(&text, "generated.json")
                .unwrap_or_else(|e| panic!("{name} seed {seed}: {e}\n{text}"));
            assert_eq!(back, script, "{name} seed {seed}");
        }
    }
}

/// A seed always makes the same conversation; different seeds, different
/// ones; the number of turns stays in the repertoire's range.
#[test]
fn a_seed_makes_one_conversation() {
    let mut rep = weather();
    rep.turns = 3..=5;
    let mut distinct = BTreeSet::new();
    for s in 0..50 {
        let seed = Seed::new(s);
        let faults = Faults::draw(seed);
        let script = generate("w", &rep, seed, &faults);
        assert_eq!(script, generate("w", &rep, seed, &faults));
        let turn_ends = messages(&script)
            .iter()
            .filter(|(_, m)| m.pointer("/serverContent/turnComplete") == Some(&json!(true)))
            .count();
        // Each turn ends once; the calm last turn adds one when nothing
        // closes the connection, and a close may cut the last turn short.
        assert!(
            (2..=6).contains(&turn_ends),
            "seed {seed}: {turn_ends} turn ends"
        );
        distinct.insert(script.to_json().to_string());
    }
    assert_eq!(distinct.len(), 50);
}

/// A part holding only a thought signature comes right after a thought,
/// in some scripts with thoughts on, and never in a calm script.
#[test]
fn thought_signatures_follow_thoughts() {
    let rep = weather();
    let signature_at = |script: &ScriptedServer| -> Vec<usize> {
        messages(script)
            .iter()
            .enumerate()
            .filter(|(_, (_, m))| {
                m.pointer("/serverContent/modelTurn/parts/0/thoughtSignature")
                    .is_some()
            })
            .map(|(i, _)| i)
            .collect()
    };
    let on = Faults::calm().with(FaultKind::Thoughts, 0.5);
    let mut seen = 0;
    for s in 0..60 {
        let script = generate("w", &rep, Seed::new(s), &on);
        let msgs = messages(&script);
        for i in signature_at(&script) {
            seen += 1;
            let before = &msgs[i - 1].1;
            assert_eq!(
                before.pointer("/serverContent/modelTurn/parts/0/thought"),
                Some(&json!(true)),
                "seed {s}: a signature after {before}"
            );
        }
        let calm = generate("w", &rep, Seed::new(s), &Faults::calm());
        assert!(signature_at(&calm).is_empty(), "seed {s}");
    }
    assert!(seen >= 10, "{seen} signatures in 60 scripts");
}
