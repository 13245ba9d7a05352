//! A governed booking session, scripted, that writes its mutation journal
//! to a file as a production session would: the raw material of the
//! guide's "Incidents to regression tests" (docs/guide/governance.md).
//!
//! ```text
//! cargo run --example booking_session -- incident user-123.journal.jsonl
//! livesim session scenario user-123.journal.jsonl --name booking-incident
//! ```
//!
//! The session runs the conversation in `sim/booking/booking.spec.json`
//! (or the spec given as a third argument) with tools that write
//! `party_size`, `confirmed` and `booked` into state, on the simulated
//! runtime with seed 0, so the journal is the same on every run. Scripts:
//!
//! * `incident`: the party is set, the customer confirms, the table is
//!   booked;
//! * `refused-early-booking`: the model books before the customer confirmed (the
//!   flow refuses it), then confirms and books;
//! * `escalation`: the confirmation fails twice, the stage escalates and
//!   the booking is refused.

use std::error::Error;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use livesim::Seed;
use livesim::executor::Simulation;
use livesim::prelude::*;
use livesim::state::FileJournalSink;
use livesim::testing::ScriptedServer;
use serde_json::json;

/// The booking spec the scripts are written for.
pub const SPEC: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/sim/booking/booking.spec.json");

/// The scripts, by name.
pub const SCRIPTS: [&str; 3] = ["incident", "refused-early-booking", "escalation"];

/// What the model says and calls in script `name`.
pub fn script(name: &str) -> Option<ScriptedServer> {
    let party = ScriptedServer::new()
        .calls("set_party", json!({ "size": 4 }))
        .says("Four people. Shall I book?");
    Some(match name {
        "incident" => party
            .calls("confirm", json!({}))
            .says("Confirmed.")
            .calls("book_table", json!({}))
            .says("Booked."),
        "refused-early-booking" => party
            .calls("book_table", json!({}))
            .says("I need your confirmation first.")
            .calls("confirm", json!({}))
            .says("Confirmed.")
            .calls("book_table", json!({}))
            .says("Booked."),
        "escalation" => party
            .calls("confirm", json!({ "fail": true }))
            .says("The confirmation did not go through. Once more?")
            .calls("confirm", json!({ "fail": true }))
            .says("It failed again.")
            .calls("book_table", json!({}))
            .says("I cannot book it now; a colleague will call you."),
        _ => return None,
    })
}

/// Tools that write `party_size`, `confirmed` and `booked` into state;
/// `confirm` fails when called with `{"fail": true}`.
pub fn booking_tools(state: &State) -> ToolComposite {
    let (party, confirm, book) = (state.clone(), state.clone(), state.clone());
    T::simple("set_party", "Sets the party size", move |args| {
        let state = party.clone();
        async move {
            state.set("party_size", args["size"].clone());
            Ok(json!({ "party_size": args["size"] }))
        }
    }) | T::simple("confirm", "The customer confirmed", move |args| {
        let state = confirm.clone();
        async move {
            if args["fail"] == json!(true) {
                return Err("the confirmation did not go through".into());
            }
            state.set("confirmed", true);
            Ok(json!({ "confirmed": true }))
        }
    }) | T::simple("book_table", "Books the table", move |_| {
        let state = book.clone();
        async move {
            state.set("booked", true);
            Ok(json!({ "booked": true }))
        }
    })
}

/// Plays `script` governed by `convo` on the simulated runtime (seed 0)
/// and writes the session's journal to `journal`.
pub fn record(
    script: ScriptedServer,
    convo: &CompiledConversation,
    journal: &Path,
) -> Result<(), Box<dyn Error>> {
    let sink = Arc::new(FileJournalSink::create(journal)?);
    let convo = convo.clone();
    let session_sink = sink.clone();
    let played = Simulation::new(Seed::new(0))
        .run(move || async move {
            let state = State::new().with_journal_sink(session_sink);
            let run = script
                .play(
                    Live::builder()
                        .state(state.clone())
                        .tools(booking_tools(&state))
                        .converse(&convo),
                )
                .await
                .map_err(|e| e.to_string())?;
            run.disconnect().await;
            Ok::<(), String>(())
        })
        .map_err(|failure| failure.to_string())?;
    played.value?;
    sink.check()?;
    Ok(())
}

#[allow(dead_code)] // the tests include this file for `record` and call no `main`
fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (Some(name), Some(journal)) = (args.first(), args.get(1)) else {
        eprintln!(
            "usage: booking_session SCRIPT JOURNAL.jsonl [SPEC.json]\nscripts: {}",
            SCRIPTS.join(", ")
        );
        std::process::exit(2);
    };
    let Some(script) = script(name) else {
        eprintln!(
            "booking_session: no script `{name}`; scripts: {}",
            SCRIPTS.join(", ")
        );
        std::process::exit(2);
    };
    let spec = args
        .get(2)
        .map_or_else(|| PathBuf::from(SPEC), PathBuf::from);
    let outcome = CompiledConversation::read(&spec)
        .map_err(|e| Box::new(e) as Box<dyn Error>)
        .and_then(|convo| record(script, &convo, Path::new(journal)));
    if let Err(e) = outcome {
        eprintln!("booking_session: {e}");
        std::process::exit(1);
    }
    println!("booking_session: wrote {journal}");
}
