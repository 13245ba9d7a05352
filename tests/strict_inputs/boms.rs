//! A file that starts with a UTF-8 byte-order mark is named as such by
//! every reader, not reported as "expected value at line 1 column 1".

use livesim::simulation::Scenario;
use livesim::soak::{Agent, CorpusEntry, Triage};

use crate::{arg, copy_files, refused, repo, temp};

const BOM: &str = "\u{feff}";

/// What every reader says of such a file.
const NAMED: &str = "the file starts with a UTF-8 byte-order mark (bytes EF BB BF), which JSON \
                     does not allow; save it as UTF-8 without a BOM";

/// `file` with a byte-order mark put before its text.
fn with_bom(file: &std::path::Path) {
    let text = std::fs::read_to_string(file).unwrap();
    std::fs::write(file, format!("{BOM}{text}")).unwrap();
}

// Item 9: the agent, corpus-entry, scenario and triage readers said "not
// valid JSON: expected value at line 1 column 1" of such a file.
#[test]
fn every_reader_names_a_byte_order_mark() {
    let dir = temp("boms");
    // The library's readers.
    let said = |error: String| {
        assert!(error.contains(NAMED), "{error}");
        assert!(!error.contains("expected value"), "{error}");
    };
    let triage = format!("{BOM}{{\"livesim_triage\": 1, \"agents\": [], \"entries\": []}}");
    said(
        Triage::from_json_str(&triage, "night.json")
            .unwrap_err()
            .to_string(),
    );
    let scenario = format!("{BOM}{{\"name\": \"s\", \"steps\": []}}");
    said(
        Scenario::from_json(&scenario, "s.scenario.json")
            .unwrap_err()
            .to_string(),
    );
    let entry = std::fs::read_to_string(repo().join("seeds/payment/0x5.json")).unwrap();
    said(
        CorpusEntry::from_json_str(&format!("{BOM}{entry}"), "0x5.json")
            .unwrap_err()
            .to_string(),
    );
    let agent = dir.join("payment");
    copy_files(&repo().join("sim/payment"), &agent);
    with_bom(&agent.join("agent.json"));
    said(Agent::load(&agent).unwrap_err().to_string());

    // And the CLI, naming the file.
    refused(
        &dir,
        &["sim", "run", arg(&agent), "--seed", "0"],
        &["payment/agent.json: ", NAMED],
    );
    let corpus = dir.join("seeds/payment");
    std::fs::create_dir_all(&corpus).unwrap();
    std::fs::write(corpus.join("0x5.json"), format!("{BOM}{entry}")).unwrap();
    refused(
        &dir,
        &["sim", "replay", arg(&corpus.join("0x5.json"))],
        &["0x5.json: ", NAMED],
    );
    let scenarios = dir.join("scenarios");
    copy_files(&repo().join("sim/payment"), &scenarios);
    with_bom(&scenarios.join("payment.verified-payment.scenario.json"));
    let (code, out, err) = crate::livesim_in(&dir, &["flow", "ci", arg(&scenarios)]);
    assert_eq!(code, Some(2), "{out}{err}");
    assert!(
        out.contains("payment.verified-payment.scenario.json: ") && out.contains(NAMED),
        "{out}"
    );
    let baseline = dir.join("night.json");
    std::fs::write(&baseline, &triage).unwrap();
    refused(
        &repo(),
        &[
            "sim",
            "soak",
            "sim/weather",
            "--seeds",
            "1",
            "--no-save",
            "--triage",
            arg(&dir.join("next.json")),
            "--baseline",
            arg(&baseline),
        ],
        &["night.json: ", NAMED],
    );
}
