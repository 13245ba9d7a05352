//! Two tools racing on a cart total through `State`: each reads the total,
//! waits on its "database", and writes the total plus its price. When the
//! second reads before the first writes, one update is lost, on some seeds.
//! The failure report must show what a person needs to see that: when each
//! call started, waited, resumed and finished, and the state writes in
//! order, without the scheduler's own chatter.

use std::time::Duration;

use livesim::executor::Runner;
use livesim::prelude::*;
use livesim::testing::{Action, Call, ScriptedServer};
use serde_json::json;

/// A cart whose `add_item` tool is a read-modify-write of `cart_total`.
fn cart(state: State) -> ToolComposite {
    T::simple("add_item", "Adds an item to the cart", move |args| {
        let state = state.clone();
        async move {
            // Looking the item up takes a while…
            let lookup = livesim::executor::draw("lookup", |s| s.range(0..=30)).unwrap_or(0);
            tokio::time::sleep(Duration::from_millis(lookup)).await;
            let total = state.get_as::<u64>("cart_total").unwrap_or(0);
            // …and so does saving the cart: the window of the race.
            tokio::time::sleep(Duration::from_millis(1)).await;
            let price = args["price"].as_u64().unwrap_or(0);
            state.set("cart_total", total + price);
            Ok(json!({ "total": total + price }))
        }
    })
}

/// The model adds two items at once, then confirms.
fn two_items() -> ScriptedServer {
    let item = |id: &str, price: u64| Call {
        id: id.into(),
        name: "add_item".into(),
        args: json!({ "price": price }),
        wait: true,
    };
    ScriptedServer::new()
        .hears("A coffee and a croissant, please.")
        .action(Action::CallMany(vec![
            item("call-1", 30),
            item("call-2", 10),
        ]))
        .says("Added both.")
}

async fn order_two_items() {
    let state = State::new();
    let run = two_items()
        .play(
            Live::builder()
                .state(state.clone())
                .tools(cart(state.clone())),
        )
        .await
        .unwrap();
    assert_eq!(
        state.get_as::<u64>("cart_total"),
        Some(40),
        "the cart total lost an update"
    );
    run.disconnect().await;
}

/// The report of the first failing seed shows both calls starting,
/// waiting and finishing, and the two writes to `cart_total` in order
/// (the second overwriting the first), with no scheduling chatter.
#[test]
fn a_racing_tools_report_shows_the_race() {
    let report = Runner::new(livesim::test_id!())
        .seeds(100)
        .try_run(|_| order_two_items())
        .expect_err("the race loses an update on some seeds");
    let text = report.to_string();
    let lines: Vec<&str> = text.lines().collect();
    let find = |needle: &str| {
        lines
            .iter()
            .position(|l| l.contains(needle))
            .unwrap_or_else(|| panic!("no line with {needle:?} in:\n{text}"))
    };
    for call in ["call-1", "call-2"] {
        let start = find(&format!("tool:add_item({call}) | start"));
        let waits = find(&format!("tool:add_item({call}) | waits"));
        let finish = find(&format!("tool:add_item({call}) | finish ok"));
        assert!(start < waits && waits < finish, "{call} in order:\n{text}");
    }
    // Both writes, with their sequence numbers, by the call that made them.
    let writes: Vec<&&str> = lines
        .iter()
        .filter(|l| l.contains("| state cart_total = "))
        .collect();
    assert_eq!(writes.len(), 2, "{text}");
    assert!(
        writes[0].contains("(seq 1)") && writes[1].contains("(seq 2)"),
        "{text}"
    );
    assert!(
        writes.iter().all(|w| w.contains("tool:add_item(call-")),
        "{text}"
    );
    // The race itself: the second call read before the first wrote.
    let first_write = find("| state cart_total = ");
    assert!(
        find("tool:add_item(call-1) | waits") < first_write
            && find("tool:add_item(call-2) | waits") < first_write,
        "{text}"
    );
    assert!(text.contains("the cart total lost an update"), "{text}");
    for noise in [
        "task steps aside",
        "lane picked",
        "yield point",
        "| picked",
        "| deliver ",
    ] {
        assert!(
            !text.contains(noise),
            "scheduling noise {noise:?} in:\n{text}"
        );
    }
    assert!(
        text.contains(&format!(
            "replay: LIVESIM_SEED={} cargo test --test reports race::a_racing_tools_report_shows_the_race -- --exact",
            report.failure.seed
        )),
        "{text}"
    );
}
