//! A governed payment agent: a flow says the caller's identity is
//! verified before any payment. The model here tries to take the payment
//! first; the flow refuses the call, the tool never runs, and the model
//! is answered `{"error": reason}`. Once the identity is verified, the
//! same call goes through. Every decision is in the session's journal.
//!
//! ```sh
//! cargo run --example payment_governed
//! ```

use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

use livesim::prelude::*;
use livesim::state::MemoryJournalSink;
use livesim::testing::ScriptedServer;
use serde_json::json;

/// The flow: step `verify` allows `verify_identity` and is done once it
/// succeeded; step `pay` comes after it and allows `take_payment`.
fn payment_flow() -> FlowSpec {
    Flow::new()
        .step("verify")
        .allow(["verify_identity"])
        .done(Guard::called_ok("verify_identity"))
        .step("pay")
        .after("verify")
        .allow(["take_payment"])
        .done(Guard::called_ok("take_payment"))
        .build()
        .expect("the flow is well formed")
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> ExitCode {
    // Counts real charges: the refused call must never reach the tool.
    let charges = Arc::new(AtomicU32::new(0));
    let counted = charges.clone();
    let tools = T::simple(
        "verify_identity",
        "Checks the caller's name and date of birth",
        |_| async { Ok(json!({ "verified": true })) },
    ) | T::simple("take_payment", "Charges the caller's card", move |args| {
        let counted = counted.clone();
        async move {
            counted.fetch_add(1, Ordering::SeqCst);
            Ok(json!({ "charged": args["amount"], "receipt": "R-4242" }))
        }
    });

    let journal = Arc::new(MemoryJournalSink::new());
    let session = Live::builder()
        .instruction("You take card payments. Verify the caller's identity first.")
        .state(State::new().with_journal_sink(journal.clone()))
        .tools(tools)
        .govern(payment_flow()); // enforce: refused calls never run

    // The model jumps the gun, then does it properly.
    let script = ScriptedServer::new()
        .named("payment")
        .hears("Please take 40 euros from my card.")
        .calls("take_payment", json!({ "amount": 40 }))
        .says("I need to verify you first. Your name and date of birth?")
        .hears("Ana Silva, 4 May 1990.")
        .calls(
            "verify_identity",
            json!({ "name": "Ana Silva", "dob": "1990-05-04" }),
        )
        .calls("take_payment", json!({ "amount": 40 }))
        .says("Done: 40 euros, receipt R-4242.");

    let run = match script.play(session).await {
        Ok(run) => run,
        Err(e) => {
            eprintln!("payment_governed: {e}");
            return ExitCode::FAILURE;
        }
    };

    println!("what the session answered, call by call:");
    for response in run.tool_responses() {
        println!("  {response}");
    }
    let refusals: Vec<String> = run
        .events()
        .iter()
        .filter_map(|e| match e {
            LiveEvent::ToolDenied { name, reason, .. } => Some(format!("{name}: {reason}")),
            _ => None,
        })
        .collect();
    println!("refused by the flow:");
    for refusal in &refusals {
        println!("  {refusal}");
    }
    println!("the journal's flow decisions:");
    for entry in journal.entries() {
        if entry.key.starts_with("flow:tool") {
            println!("  #{} {} = {}", entry.seq, entry.key, entry.value);
        }
    }

    let first = &run.tool_responses()[0];
    let ok = refusals.len() == 1
        && first["response"]["error"].is_string()
        && charges.load(Ordering::SeqCst) == 1;
    run.disconnect().await;
    if ok {
        println!("payment_governed: ok (one refusal, one charge)");
        ExitCode::SUCCESS
    } else {
        eprintln!(
            "payment_governed: expected one refusal and one charge; got {} refusals and {} charges",
            refusals.len(),
            charges.load(Ordering::SeqCst)
        );
        ExitCode::FAILURE
    }
}
