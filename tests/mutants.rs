//! The soak as the judge of a mutation run: `cargo mutants` (see
//! `.cargo/mutants.toml`) changes one thing at a time in `src/session/`
//! and `src/flow/` and counts a mutant killed when this soak fails.
//!
//! Two judges: every agent file in `sim/`, and a Rust agent built with the
//! fluent builder's methods (the agent files reach the session through
//! the lower-level builder, so a mutant of `LiveBuilder::on_event` or
//! `model` would go unseen by them). The Rust agent also has an extractor
//! that sees the whole conversation and a record resolved from a tool's
//! input (`Extract::record`), each held to its own invariant, and a flow
//! that must be the one its spec-file text says. The
//! ignored tests are the judges;
//! `cargo test --test mutants -- --ignored` runs them, and the weekly
//! workflow's mutation job runs them once per mutant. Seeds scale with
//! `LIVESIM_SEEDS` (default 0..150 per agent). A short soak of the Rust
//! agent runs in `cargo test`, so the judge is known to pass unmutated.

use std::time::Duration;

use futures::future::BoxFuture;
use livesim::executor::SeedPlan;
use livesim::flow::resolver;
use livesim::prelude::*;
use livesim::session::{Extract, Extracted, Extractor, LiveEvent, RecordExtractor, TurnContext};
use livesim::soak::{Agent, RunRecord, Soak};
use serde_json::{Value, json};

fn seeds() -> std::ops::Range<u64> {
    match SeedPlan::from_env(SeedPlan::Range(0..150)).expect("LIVESIM_SEEDS") {
        SeedPlan::Range(range) => range,
        SeedPlan::One(seed) => seed.value()..seed.value() + 1,
    }
}

/// Every agent in `sim/` passes every invariant over the seeds: a mutant
/// of the session or the flow that a user could notice breaks one.
#[test]
#[ignore = "the judge of a mutation run: cargo mutants runs it"]
fn every_agent_in_sim_soaks_clean() {
    let mut broken = Vec::new();
    for agent in Agent::load_all("sim").unwrap_or_else(|e| panic!("{e}")) {
        let soak = Soak::agent(&agent)
            .seed_range(seeds())
            .stop_at_first_failure()
            .keep(false);
        if let Err(summary) = soak.try_run() {
            let first = summary.failures().next().map(|f| f.brief());
            broken.push(first.unwrap_or_else(|| summary.to_string()));
        }
    }
    assert!(broken.is_empty(), "{}", broken.join("\n"));
}

/// The judge's Rust agent passes every invariant over the seeds, and its
/// conversations called its tools: a soak that generated none (its
/// repertoire read from a setup that lost the declarations) judges
/// nothing about calls.
#[test]
#[ignore = "the judge of a mutation run: cargo mutants runs it"]
fn the_rust_agent_soaks_clean() {
    assert_flow_as_written();
    let soak = judged_agent().seed_range(seeds()).stop_at_first_failure();
    match soak.try_run() {
        Err(summary) => panic!("{summary}"),
        Ok(summary) => assert_called_tools(&summary),
    }
}

/// The same, over a few seeds, in every `cargo test`.
#[test]
fn the_rust_agent_passes_a_short_soak() {
    assert_flow_as_written();
    match judged_agent().seed_range(0..20).try_run() {
        Err(summary) => panic!("{summary}"),
        Ok(summary) => assert_called_tools(&summary),
    }
}

/// The soak's conversations called the judge's tools, several at once in
/// some message.
fn assert_called_tools(summary: &livesim::soak::Summary) {
    let judge = &summary.agents[0];
    let reached = |goal: &str| {
        judge
            .goals
            .iter()
            .any(|(name, hits)| name == goal && *hits > 0)
    };
    assert!(
        reached("parallel-call"),
        "the soak never called two of the judge's tools at once (goals: {:?}): \
         its conversations were generated without the declared tools",
        judge.goals
    );
}

const MODEL: &str = "gemini-judge-model";
const INSTRUCTION: &str = "You give the weather, one city at a time.";
const TOOLS: [&str; 2] = ["get_weather", "get_forecast"];

/// A weather agent built with the fluent builder: the model and the
/// instruction first, so a later method that dropped what came before
/// shows in the setup; callbacks that count, in the session's state, the
/// events, texts and turn ends they saw; a governing flow, with a step
/// active beside the others.
fn builder() -> LiveBuilder {
    let state = State::new();
    let count = |state: &State, key: &'static str| {
        let state = state.clone();
        move || {
            let n = state.get_as::<u64>(key).unwrap_or(0);
            state.set(key, json!(n + 1));
        }
    };
    let (events, texts, turns) = (
        count(&state, "judge:events"),
        count(&state, "judge:texts"),
        count(&state, "judge:turns"),
    );
    let record = outlook_record(&state);
    // The city asked about last: the record's input.
    let asked = state.clone();
    let weather = T::simple("get_weather", "Current weather for a city", move |args| {
        // (A call with bad arguments names no city.)
        if args["city"].is_string() {
            asked.set(CITY, args["city"].clone());
        }
        async move {
            tokio::time::sleep(Duration::from_millis(80)).await;
            Ok(json!({ "city": args["city"], "sky": "sunny" }))
        }
    })
    .parameters(json!({
        "type": "OBJECT",
        "properties": { "city": { "type": "STRING" } },
        "required": ["city"]
    }));
    let forecast = T::simple("get_forecast", "A city's forecast", |args| async move {
        tokio::time::sleep(Duration::from_millis(200)).await;
        Ok(json!({ "city": args["city"], "days": 3 }))
    });
    let flow = judge_flow();
    Live::builder()
        .model(MODEL)
        .text_only()
        .instruction(INSTRUCTION)
        .state(state)
        .tools(weather | forecast)
        .govern(flow)
        .on_event(move |_| events())
        .on_text(move |_| texts())
        .on_turn_complete(turns)
        .extract(Listener)
        .extract(record)
        .setup_timeout(Duration::from_secs(7))
        .session_budget(Duration::from_secs(6 * 3600))
}

/// The judge's flow, built with the builder's methods: a step active
/// beside the others from the start, escalating after two interruptions,
/// done once a forecast was called (a refused call is no call). The
/// `sim/` agents' flows are read from files, so only this one reaches the
/// session through `Flow`'s methods.
fn judge_flow() -> livesim::flow::FlowSpec {
    Flow::new()
        .step("look")
        .allow(["get_weather"])
        .done(Guard::called_ok("get_weather"))
        .escalate_after_tool_failures(3)
        .step("plan")
        .after("look")
        .allow(["get_forecast"])
        .gate("get_forecast", Guard::exists(CITY))
        // Active beside the others from the start.
        .step("listen")
        .done(Guard::called("get_forecast"))
        .escalate_after_interruptions(2)
        .build()
        .expect("the flow is well formed")
}

/// The judge's flow as a spec file says it: what the builder must make.
const JUDGE_FLOW: &str = r#"{
  "v": 1,
  "kind": "flow",
  "steps": [
    {"id": "look", "allow": ["get_weather"], "done": {"called_ok": "get_weather"},
     "escalate": {"tool_failures": 3}},
    {"id": "plan", "after": ["look"], "allow": ["get_forecast"],
     "gates": {"get_forecast": {"exists": "judge:city"}}},
    {"id": "listen", "done": {"called": "get_forecast"}, "escalate": {"interruptions": 2}}
  ]
}"#;

/// The flow the judge's session governs with is the one written above:
/// the soak's oracle reads the flow the session was given, so a builder
/// method that lost what it was told would otherwise judge itself.
fn assert_flow_as_written() {
    let written = livesim::flow::FlowSpec::from_json(JUDGE_FLOW, "the judge's flow")
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(judge_flow(), written, "the builder made another flow");
}

fn judged_agent() -> Soak {
    Soak::new("judge", builder)
        .keep(false)
        .lines(
            ["Weather in Paris?", "And the forecast?"],
            ["It is sunny.", "Three fine days ahead."],
        )
        .invariant("setup-as-built", setup_as_built)
        .invariant("callbacks-saw-every-event", callbacks_saw_every_event)
        .invariant(
            "extractor-saw-the-conversation",
            extractor_saw_the_conversation,
        )
        .invariant("record-follows-its-input", record_follows_its_input)
}

/// The state key the weather tool writes: the city asked about last.
const CITY: &str = "judge:city";
/// Where the record's resolver notes each call (its arguments).
const RESOLVED: &str = "judge:resolved";
/// The record's field, as the session writes it.
const OUTLOOK: &str = "forecast:outlook";
/// How long a resolved outlook stays good.
const OUTLOOK_TTL: Duration = Duration::from_secs(20);
/// Where the resolver of the record's field with no ttl (`region`, good
/// for the whole session) notes each call.
const REGION_RESOLVED: &str = "judge:region_resolved";

/// A record whose field `outlook` is resolved from the city asked about
/// last, cached for `OUTLOOK_TTL`; its resolver notes each call in the
/// state.
fn outlook_record(state: &State) -> RecordExtractor {
    let (calls, region_calls) = (state.clone(), state.clone());
    Extract::record("forecast")
        .field_resolve(
            "outlook",
            [CITY],
            Some(OUTLOOK_TTL),
            resolver(move |args: Value| {
                calls.set(RESOLVED, args.clone());
                async move { Ok(json!({ "city": args[CITY], "outlook": "fine" })) }
            }),
        )
        .field_resolve(
            "region",
            [CITY],
            None,
            resolver(move |args: Value| {
                region_calls.set(REGION_RESOLVED, args.clone());
                async move { Ok(json!({ "city": args[CITY], "region": "north" })) }
            }),
        )
        .build()
}

/// The record follows its input: each resolver call is given a city the
/// weather tool was asked about, and comes no sooner than `OUTLOOK_TTL`
/// after a call with the same city (the cache serves it until then);
/// each write of `forecast:outlook` says what the resolver gives for a
/// city it was called with, and differs from the write before it; once
/// a turn ended after the first city and the run settled with its
/// session up, the resolver was called and the field written. The field
/// with no ttl (`region`) is resolved once per city for the session.
fn record_follows_its_input(run: &RunRecord) -> Result<(), String> {
    // The record says where its fields land: `<record>:<field>`.
    let record = outlook_record(&State::new());
    if (record.name(), record.key("outlook").as_str()) != ("forecast", OUTLOOK) {
        return Err(format!(
            "the record calls itself {:?} and its field's key {:?}, not \"forecast\" and {OUTLOOK:?}",
            record.name(),
            record.key("outlook")
        ));
    }
    // Each write of the field is announced, by the record, with its value.
    let announced: Vec<&Value> = run
        .delivered()
        .filter_map(|e| match e {
            LiveEvent::Extracted { extractor, values } if extractor == "forecast" => {
                values.get(OUTLOOK)
            }
            _ => None,
        })
        .collect();
    let stored: Vec<&Value> = run
        .journal
        .iter()
        .filter(|m| m.key == OUTLOOK)
        .map(|m| &m.value)
        .collect();
    if announced != stored {
        return Err(format!(
            "{OUTLOOK} was written {stored:?}, but the record's extracted events announced {announced:?}"
        ));
    }
    let mut cities: Vec<&Value> = Vec::new();
    let mut resolved: Vec<&Value> = Vec::new();
    let mut last_call: Vec<(&Value, livesim::clock::Timestamp)> = Vec::new();
    let mut written: Option<&Value> = None;
    let mut owed = false;
    let mut region_seen: Vec<&Value> = Vec::new();
    for entry in &run.journal {
        match entry.key.as_str() {
            CITY => cities.push(&entry.value),
            livesim::flow::keys::ACTIVE if !cities.is_empty() => owed = true,
            REGION_RESOLVED => {
                if region_seen.contains(&&entry.value) {
                    return Err(format!(
                        "the resolver of forecast:region (no ttl: good for the session) was \
                         called again with {}",
                        entry.value
                    ));
                }
                region_seen.push(&entry.value);
            }
            RESOLVED => {
                let city = &entry.value[CITY];
                if entry.value.as_object().map(|o| o.len()) != Some(1) || !cities.contains(&city) {
                    return Err(format!(
                        "the resolver was called with {}, but the tool was asked about {cities:?}",
                        entry.value
                    ));
                }
                if let Some((_, at)) = last_call.iter().rev().find(|(c, _)| *c == city)
                    && entry.timestamp - *at < OUTLOOK_TTL
                {
                    return Err(format!(
                        "the resolver was called for {city} again {:?} after the last call, \
                         within the cached value's {OUTLOOK_TTL:?}",
                        entry.timestamp - *at
                    ));
                }
                last_call.push((city, entry.timestamp));
                resolved.push(city);
            }
            OUTLOOK => {
                let fits = resolved
                    .iter()
                    .any(|city| entry.value == json!({ "city": city, "outlook": "fine" }));
                if !fits {
                    return Err(format!(
                        "{OUTLOOK} was written {}, which no resolver call for {resolved:?} gave",
                        entry.value
                    ));
                }
                if written == Some(&entry.value) {
                    return Err(format!(
                        "{OUTLOOK} was written {} again, though it held that already",
                        entry.value
                    ));
                }
                written = Some(&entry.value);
            }
            _ => {}
        }
    }
    let settled = run.settling.settled_at.is_some() && !run.settling.ended;
    if owed && settled && (resolved.is_empty() || written.is_none()) {
        return Err(format!(
            "a turn ended after the tool was asked about {cities:?} and the run settled, but the \
             resolver was called {} time(s) and {OUTLOOK} never written",
            resolved.len()
        ));
    }
    Ok(())
}

/// An extractor that notes the whole conversation it is given at each
/// turn's end, as `speaker: text` lines, in the state
/// (`judge:transcript`: the journal keeps every turn's).
struct Listener;

impl Extractor for Listener {
    fn name(&self) -> &str {
        "judge-transcript"
    }

    fn extract(&self, turn: TurnContext) -> BoxFuture<'static, Result<Extracted, String>> {
        let lines: Vec<String> = turn
            .transcript
            .last(0)
            .into_iter()
            .map(|line| format!("{}: {}", line.speaker, line.text))
            .collect();
        Box::pin(async move { Ok(vec![("judge:transcript".to_string(), json!(lines))]) })
    }
}

/// The extractor was given the whole conversation at each turn's end: the
/// lines the stored log made whole by then (the user's transcriptions, the
/// model's words and output transcriptions), in order, with what the user
/// typed among them, every message typed before the turn before at least.
fn extractor_saw_the_conversation(run: &RunRecord) -> Result<(), String> {
    let mut said: Vec<String> = Vec::new();
    let mut said_by_turn: Vec<usize> = Vec::new();
    for event in &run.session_log {
        let line = match event {
            LiveEvent::InputTranscript { text } => format!("user: {text}"),
            LiveEvent::TextComplete {
                text,
                thought: false,
                ..
            }
            | LiveEvent::OutputTranscript { text } => format!("model: {text}"),
            LiveEvent::TurnComplete { .. } => {
                said_by_turn.push(said.len());
                continue;
            }
            _ => continue,
        };
        if !line
            .split_once(": ")
            .is_some_and(|(_, t)| t.trim().is_empty())
        {
            said.push(line);
        }
    }
    let turn_ends: Vec<Duration> = run
        .events
        .iter()
        .filter(|e| matches!(e.event, LiveEvent::TurnComplete { .. }))
        .map(|e| e.at)
        .collect();
    // What the user typed (audio and activity markers aside), and when.
    let typed: Vec<(Duration, String)> = run
        .typed_at
        .iter()
        .zip(&run.typed)
        .filter(|(_, t)| !t.starts_with("audio ") && !t.starts_with('('))
        .map(|(at, t)| (*at, format!("user: {t}")))
        .collect();
    let seen = run
        .journal
        .iter()
        .filter(|m| m.key == "judge:transcript")
        .map(|m| serde_json::from_value::<Vec<String>>(m.value.clone()).unwrap_or_default());
    for (n, lines) in seen.enumerate() {
        let so_far = &said[..said_by_turn.get(n).copied().unwrap_or(said.len())];
        // Typed lines are the ones beyond what was said; each must be
        // something typed, and the rest what was said, in order.
        let extra = lines.len().checked_sub(so_far.len());
        let fits = extra.is_some_and(|extra| interleaves(&lines, so_far, &typed, extra));
        let typed_before = n
            .checked_sub(1)
            .and_then(|m| turn_ends.get(m))
            .map_or(0, |end| typed.iter().filter(|(at, _)| at < end).count());
        if !fits || extra.unwrap_or(0) < typed_before {
            return Err(format!(
                "at turn {} the extractor was given {lines:?}, but by then the run had said \
                 {so_far:?} and the user had typed {typed_before} message(s) before the turn \
                 before",
                n + 1
            ));
        }
    }
    Ok(())
}

/// Whether `lines` is `said` in order with `extra` lines that were typed
/// standing among them.
fn interleaves(
    lines: &[String],
    said: &[String],
    typed: &[(Duration, String)],
    extra: usize,
) -> bool {
    match (lines.split_first(), said.split_first()) {
        (None, None) => extra == 0,
        (None, Some(_)) => false,
        (Some((line, rest)), next) => {
            let matched = next.is_some_and(|(first, later)| {
                first == line && interleaves(rest, later, typed, extra)
            });
            let was_typed = extra > 0
                && typed.iter().any(|(_, t)| t == line)
                && interleaves(rest, said, typed, extra - 1);
            matched || was_typed
        }
    }
}

/// Every setup names the model, asks for text answers, holds the
/// instruction and declares the two tools, as `builder` wrote them.
fn setup_as_built(run: &RunRecord) -> Result<(), String> {
    for setup in run.sent.iter().filter_map(|m| m.get("setup")) {
        let model = setup.get("model").and_then(Value::as_str);
        if model != Some(&format!("models/{MODEL}")) {
            return Err(format!("the setup asks for model {model:?}"));
        }
        let modalities = setup.pointer("/generationConfig/responseModalities");
        if modalities != Some(&json!(["TEXT"])) {
            return Err(format!("the setup asks for modalities {modalities:?}"));
        }
        let instruction = setup.pointer("/systemInstruction/parts/0/text");
        if instruction != Some(&json!(INSTRUCTION)) {
            return Err(format!("the setup's instruction is {instruction:?}"));
        }
        let names: Vec<&str> = setup
            .pointer("/tools/0/functionDeclarations")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|d| d.get("name").and_then(Value::as_str))
            .collect();
        if names != TOOLS {
            return Err(format!("the setup declares {names:?}"));
        }
    }
    Ok(())
}

/// The callbacks saw what the run saw: `on_event` every event, `on_text`
/// every text segment that is not a thought, `on_turn_complete` every
/// turn's end (as the last counts they wrote to the state say).
fn callbacks_saw_every_event(run: &RunRecord) -> Result<(), String> {
    let last = |key: &str| {
        run.journal
            .iter()
            .rev()
            .find(|m| m.key == key)
            .and_then(|m| m.value.as_u64())
            .unwrap_or(0)
    };
    let events = run.events.len() as u64;
    let texts = run
        .delivered()
        .filter(|e| matches!(e, LiveEvent::TextComplete { thought: false, .. }))
        .count() as u64;
    let turns = run
        .delivered()
        .filter(|e| matches!(e, LiveEvent::TurnComplete { .. }))
        .count() as u64;
    for (what, seen, ran) in [
        ("on_event", last("judge:events"), events),
        ("on_text", last("judge:texts"), texts),
        ("on_turn_complete", last("judge:turns"), turns),
    ] {
        if seen != ran {
            return Err(format!(
                "{what} was called {seen} times, but the run saw {ran} of its events"
            ));
        }
    }
    Ok(())
}
