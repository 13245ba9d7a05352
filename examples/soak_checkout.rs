//! Soaking your own agent: a checkout assistant built with
//! `Live::builder()` and real Rust tools, run by `livesim::soak::Soak`
//! for many seeds. Each seed draws its own faults (split text, parallel
//! calls, cancellations racing results, interruptions, closes, …) and a
//! generated conversation made from the tools the builder declares; after
//! every session the built-in invariants and the two below are checked.
//!
//! ```sh
//! cargo run --release --example soak_checkout                 # 300 seeds
//! LIVESIM_SEEDS=0..20000 cargo run --release --example soak_checkout
//! ```
//!
//! A failure prints its seed and the line that replays it (here,
//! `LIVESIM_SEED=0x… <this command>`). Try deleting the "already charged"
//! check in `charge_card`: parallel calls then charge twice, and
//! `charged-once` fails within a few hundred seeds.

use std::sync::{Arc, Mutex};

use livesim::compose::tools::call_id;
use livesim::prelude::*;
use livesim::soak::{ExecutionOutcome, Soak};
use serde::Deserialize;
use serde_json::json;

/// One session's cart.
#[derive(Default)]
struct Cart {
    items: Vec<(String, u64)>,
    charged: Option<String>,
}

fn price(sku: &str) -> Option<u64> {
    match sku {
        "kettle" => Some(2499),
        "teapot" => Some(1850),
        "mug" => Some(600),
        _ => None,
    }
}

#[derive(Deserialize)]
struct AddItem {
    sku: String,
    qty: u64,
}

#[derive(Deserialize)]
struct Charge {
    card_last4: String,
}

/// The agent: a fresh session, its cart and its state, each time.
fn checkout_agent() -> LiveBuilder {
    let cart = Arc::new(Mutex::new(Cart::default()));
    let state = State::new();
    let add_item = {
        let cart = cart.clone();
        T::typed(
            "add_item",
            "Adds an item to the cart",
            move |item: AddItem| {
                let cart = cart.clone();
                async move {
                    let each = price(&item.sku).ok_or(format!("no such item: {}", item.sku))?;
                    let mut cart = cart.lock().unwrap();
                    cart.items.push((item.sku.clone(), each * item.qty));
                    Ok(json!({ "added": item.sku, "items": cart.items.len() }))
                }
            },
        )
        .parameters(json!({
            "type": "OBJECT",
            "properties": {
                "sku": { "type": "STRING", "enum": ["kettle", "teapot", "mug"] },
                "qty": { "type": "INTEGER" }
            },
            "required": ["sku", "qty"]
        }))
    };
    let quote_total = {
        let (cart, state) = (cart.clone(), state.clone());
        T::simple("quote_total", "The cart's total, in cents", move |_| {
            let (cart, state) = (cart.clone(), state.clone());
            async move {
                tokio::time::sleep(std::time::Duration::from_millis(40)).await;
                let total: u64 = cart.lock().unwrap().items.iter().map(|(_, c)| c).sum();
                state.set("quoted_cents", total);
                Ok(json!({ "total_cents": total }))
            }
        })
    };
    let charge_card = {
        let cart = cart.clone();
        T::typed("charge_card", "Charges the cart to a card", move |charge: Charge| {
            let cart = cart.clone();
            async move {
                // A payment provider takes its time.
                tokio::time::sleep(std::time::Duration::from_millis(300)).await;
                let mut cart = cart.lock().unwrap();
                if let Some(receipt) = &cart.charged {
                    return Err(format!("already charged (receipt {receipt})").into());
                }
                let total: u64 = cart.items.iter().map(|(_, c)| c).sum();
                if total == 0 {
                    return Err("the cart is empty".into());
                }
                let receipt = call_id().unwrap_or_default();
                cart.charged = Some(receipt.clone());
                Ok(json!({ "charged_cents": total, "card": charge.card_last4, "receipt": receipt }))
            }
        })
        .parameters(json!({
            "type": "OBJECT",
            "properties": { "card_last4": { "type": "STRING" } },
            "required": ["card_last4"]
        }))
    };
    let flow = Flow::new()
        .step("cart")
        .allow(["add_item", "quote_total"])
        .done(Guard::called_ok("quote_total"))
        .step("pay")
        .after("cart")
        .allow(["quote_total", "charge_card"])
        .done(Guard::called_ok("charge_card"))
        .build()
        .expect("a valid flow");
    Live::builder()
        .instruction("You run the checkout of a kitchenware shop.")
        .state(state)
        .tools(add_item | quote_total | charge_card)
        .govern(flow)
}

/// The soak: the agent, what its users and model say, its invariants and
/// what it should sometimes reach.
pub fn checkout_soak() -> Soak {
    Soak::new("checkout", checkout_agent)
        .lines(
            ["Two mugs, please.", "And a kettle.", "What do I owe?", "Pay with my card ending 4242."],
            ["Added.", "Your total is ready.", "Paid — thank you!", "Anything else?"],
        )
        .invariant("charged-once", |run| {
            let charges: Vec<&str> = run
                .executions_of("charge_card")
                .filter(|e| matches!(e.outcome, ExecutionOutcome::Ok(_)))
                .filter_map(|e| e.call_id.as_deref())
                .collect();
            match charges.as_slice() {
                [] | [_] => Ok(()),
                many => Err(format!("the card was charged {} times ({})", many.len(), many.join(", "))),
            }
        })
        .invariant("never-charges-an-empty-cart", |run| {
            for e in run.executions_of("charge_card") {
                if let ExecutionOutcome::Ok(result) = &e.outcome
                    && result["charged_cents"].as_u64().unwrap_or(0) == 0
                {
                    return Err(format!("{:?} charged nothing: {result}", e.call_id));
                }
            }
            Ok(())
        })
        .sometimes("charged", |run| {
            run.executions_of("charge_card")
                .any(|e| matches!(e.outcome, ExecutionOutcome::Ok(_)))
        })
        .sometimes("second-charge-refused", |run| {
            run.executions_of("charge_card").any(
                |e| matches!(&e.outcome, ExecutionOutcome::Failed(m) if m.starts_with("already charged")),
            )
        })
        .seeds(300)
}

fn main() {
    let summary = checkout_soak().run();
    println!("{summary}");
}
