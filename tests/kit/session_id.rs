//! A script's `session_id`: every `setupComplete` carries it, as Vertex
//! AI's endpoint does, and the session's `connected` event reports it; a
//! script without one sends `{}`, as Google AI does.

use livesim::Seed;
use livesim::executor::Simulation;
use livesim::prelude::*;
use livesim::testing::ScriptedServer;

/// The `connected` event's session id for a session played on `script`.
fn connected_id(script: ScriptedServer) -> Option<String> {
    Simulation::new(Seed::new(3))
        .run(move || {
            let script = script.clone();
            async move {
                let (transport, control) = script.into_transport();
                let handle = Live::builder()
                    .connect_with_transport(transport)
                    .await
                    .unwrap();
                let mut events = handle.events();
                control.release();
                let id = match events.next().await {
                    Some(LiveEvent::Connected { session_id }) => session_id,
                    other => panic!("first event: {other:?}"),
                };
                handle.disconnect().await;
                id
            }
        })
        .unwrap()
        .value
}

#[test]
fn a_scripts_session_id_reaches_the_connected_event() {
    let script = ScriptedServer::new().session_id("sess-7").says("Hello.");
    assert_eq!(connected_id(script.clone()), Some("sess-7".to_string()));
    // Through a script file and back, the id stays.
    let text = serde_json::to_string(&script.to_json()).unwrap();
    let read = ScriptedServer::from_json_str(&text, "session.json").unwrap();
    assert_eq!(read, script);
    assert_eq!(connected_id(read), Some("sess-7".to_string()));
    assert_eq!(connected_id(ScriptedServer::new().says("Hello.")), None);
}
