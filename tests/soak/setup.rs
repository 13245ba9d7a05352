//! `setup-as-declared`: the setup an agent file's session sends is held to
//! what the file declares, read apart from the session builder; a setup
//! that lost the instruction, a tool or the resumption config fails it.

use livesim::Seed;
use livesim::soak::{RunRecord, Soak, invariants};
use serde_json::json;

use super::{agent, first_setup};

/// A passing run of `name`'s seed 1, and its soak's `setup-as-declared`.
fn run_and_check(name: &str) -> (RunRecord, impl Fn(&RunRecord) -> Result<(), String>) {
    let soak = Soak::agent(&agent(name)).check_determinism_every(0);
    let run = soak.run_seed(Seed::new(1));
    assert!(run.failures.is_empty(), "{:?}", run.failures);
    let check = soak
        .invariants()
        .iter()
        .find(|i| i.name() == invariants::SETUP_AS_DECLARED)
        .expect("every agent file's soak checks its setup")
        .clone();
    (run.record.expect("a record"), move |r: &RunRecord| {
        check.check(r)
    })
}

#[test]
fn a_setup_that_loses_what_the_file_declares_fails() {
    let (good, check) = run_and_check("payment");
    assert_eq!(check(&good), Ok(()));

    let mut lost_tool = good.clone();
    let declarations = first_setup(&mut lost_tool)["tools"][0]["functionDeclarations"]
        .as_array_mut()
        .unwrap();
    let gone = declarations.pop().unwrap();
    let err = check(&lost_tool).unwrap_err();
    assert!(err.starts_with("setup #1: it declares the tools"), "{err}");
    assert!(err.contains(gone["name"].as_str().unwrap()), "{err}");

    let mut other_schema = good.clone();
    first_setup(&mut other_schema)["tools"][0]["functionDeclarations"][0]["parameters"] =
        json!({"type": "OBJECT"});
    let err = check(&other_schema).unwrap_err();
    assert!(err.contains("but the agent file declares"), "{err}");

    let mut no_instruction = good.clone();
    first_setup(&mut no_instruction)
        .as_object_mut()
        .unwrap()
        .remove("systemInstruction");
    let err = check(&no_instruction).unwrap_err();
    assert!(err.contains("its instruction is \"\""), "{err}");

    let mut resuming = good;
    first_setup(&mut resuming)["sessionResumption"] = json!({});
    let err = check(&resuming).unwrap_err();
    assert!(err.contains("the agent file is not resumable"), "{err}");
}

#[test]
fn a_resumable_agents_setups_ask_for_resumption_as_the_file_says() {
    let (good, check) = run_and_check("resumable");
    assert_eq!(check(&good), Ok(()));
    let mut opaque = good.clone();
    first_setup(&mut opaque)["sessionResumption"] = json!({});
    let err = check(&opaque).unwrap_err();
    assert!(err.contains("transparent resumption: false"), "{err}");
    let mut none = good;
    first_setup(&mut none)
        .as_object_mut()
        .unwrap()
        .remove("sessionResumption");
    let err = check(&none).unwrap_err();
    assert!(err.contains("the agent file is resumable"), "{err}");
}

#[test]
fn spoken_answers_come_with_their_transcript_and_text_answers_without() {
    let (good, check) = run_and_check("weather");
    assert_eq!(check(&good), Ok(()));
    let setup = good
        .sent
        .iter()
        .find_map(|m| m.get("setup"))
        .expect("a setup");
    let spoken = setup["generationConfig"]["responseModalities"] == json!(["AUDIO"]);

    let mut flipped = good.clone();
    let setup = first_setup(&mut flipped).as_object_mut().unwrap();
    if spoken {
        setup.remove("outputAudioTranscription");
    } else {
        setup.insert("outputAudioTranscription".into(), json!({}));
    }
    let err = check(&flipped).unwrap_err();
    assert!(
        err.contains(&format!(
            "it asks for spoken answers: {spoken}, but for a transcript of them: {}",
            !spoken
        )),
        "{err}"
    );

    let mut both = good;
    first_setup(&mut both)["generationConfig"]["responseModalities"] = json!(["AUDIO", "TEXT"]);
    let err = check(&both).unwrap_err();
    assert!(
        err.contains("not one of [\"AUDIO\"] or [\"TEXT\"]"),
        "{err}"
    );
}
