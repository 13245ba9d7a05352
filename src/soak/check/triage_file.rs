//! The triage file: a soak's failures by signature, as JSON, so the next
//! soak (the next night's) can say what is new, still failing and fixed.
//!
//! ```json
//! {
//!   "livesim_triage": 1,
//!   "agents": ["weather"],
//!   "entries": [
//!     {
//!       "signature": "9b1f2c3d4e5f",
//!       "agent": "weather",
//!       "invariant": "before(get_forecast, get_weather)",
//!       "shape": "call call-1 get_weather",
//!       "count": 4,
//!       "lowest_seed": "0x1",
//!       "replay": "livesim sim run sim/weather --seed 0x1",
//!       "shrunk": true
//!     }
//!   ]
//! }
//! ```
//!
//! Read strictly, like every livesim file: an unknown key names the
//! nearest valid one; a mistake names the file, the line and column, the
//! member and what was expected. Every key: `docs/formats/triage.md`.

use std::path::Path;

use serde_json::{Value, json};

use crate::executor::Seed;
use crate::soak::check::triage::{Triage, TriageEntry};
use crate::soak::file_reader::{self, AgentFileError, Decoded, Node};

/// The version of the triage file this livesim writes and reads.
pub const TRIAGE_VERSION: u64 = 1;

const TOP_KEYS: [&str; 3] = ["livesim_triage", "agents", "entries"];

const ENTRY_KEYS: [&str; 8] = [
    "signature",
    "agent",
    "invariant",
    "shape",
    "count",
    "lowest_seed",
    "replay",
    "shrunk",
];

impl Triage {
    /// The triage as its file holds it.
    pub fn to_json(&self) -> Value {
        let entries: Vec<Value> = self
            .entries
            .iter()
            .map(|e| {
                json!({
                    "signature": e.signature,
                    "agent": e.agent,
                    "invariant": e.invariant,
                    "shape": e.shape,
                    "count": e.count,
                    "lowest_seed": e.lowest_seed.to_string(),
                    "replay": e.replay,
                    "shrunk": e.shrunk,
                })
            })
            .collect();
        json!({
            "livesim_triage": TRIAGE_VERSION,
            "agents": self.agents,
            "entries": entries,
        })
    }

    /// Writes the triage file to `path`.
    pub fn write(&self, path: impl AsRef<Path>) -> std::io::Result<()> {
        let path = path.as_ref();
        let mut text = serde_json::to_string_pretty(&self.to_json()).unwrap_or_default();
        text.push('\n');
        std::fs::write(path, text)
            .map_err(|e| std::io::Error::new(e.kind(), format!("{}: {e}", path.display())))
    }

    /// Reads a triage file: a mistake names the file, the line and
    /// column, the member and what is wrong.
    pub fn load(path: impl AsRef<Path>) -> Result<Self, AgentFileError> {
        let path = path.as_ref();
        let origin = path.display().to_string();
        let text = crate::jsonl::read_text(path).map_err(|problem| {
            AgentFileError::plain(
                &origin,
                format!(
                    "{problem} (a triage file is what `livesim sim soak --triage FILE` \
                     writes)"
                ),
            )
        })?;
        Self::from_json_str(&text, &origin)
    }

    /// Reads triage file text; `origin` names it in errors.
    ///
    /// ```
    /// use livesim::soak::Triage;
    ///
    /// let error = Triage::from_json_str(r#"{"livesim_triage": 1, "entrys": []}"#, "night.json")
    ///     .unwrap_err();
    /// assert_eq!(
    ///     error.to_string(),
    ///     "night.json:1:33: at entrys: unknown key `entrys` in a triage file; did you mean \
    ///      `entries`? (valid keys: livesim_triage, agents, entries)"
    /// );
    /// ```
    pub fn from_json_str(text: &str, origin: &str) -> Result<Self, AgentFileError> {
        let value = file_reader::parse(origin, text)?;
        decode(&value).map_err(|m| m.locate(origin, text))
    }
}

fn decode(value: &Value) -> Decoded<Triage> {
    let root = Node::root(value);
    let top = root.object("a triage file", &TOP_KEYS)?;
    let version = top
        .require(
            "livesim_triage",
            "the triage file version, 1; is this a file `livesim sim soak --triage FILE` wrote?",
        )?
        .whole("the triage file version", 0..=u64::MAX)?;
    if version != TRIAGE_VERSION {
        return top.require("livesim_triage", "")?.fail(format!(
            "this livesim reads triage files of version {TRIAGE_VERSION}, not {version}: \
                 write it again with this livesim's `sim soak --triage FILE`"
        ));
    }
    let agents = top
        .require("agents", "the agents the soak ran")?
        .list("a list of agent names")?
        .iter()
        .map(|node| node.string("an agent name"))
        .collect::<Decoded<Vec<String>>>()?;
    let mut entries: Vec<TriageEntry> = Vec::new();
    for node in top
        .require("entries", "one entry per signature")?
        .list("a list of entries")?
    {
        let entry = decode_entry(&node)?;
        if !agents.contains(&entry.agent) {
            return node
                .object("an entry", &ENTRY_KEYS)?
                .require("agent", "")?
                .fail(format!(
                    "`{}` is not one of the file's agents ({})",
                    entry.agent,
                    agents.join(", ")
                ));
        }
        if entries.iter().any(|e| e.signature == entry.signature) {
            return node
                .object("an entry", &ENTRY_KEYS)?
                .require("signature", "")?
                .fail(format!(
                    "signature {} has an entry already: each signature has one",
                    entry.signature
                ));
        }
        entries.push(entry);
    }
    Ok(Triage { agents, entries })
}

fn decode_entry(node: &Node<'_>) -> Decoded<TriageEntry> {
    let fields = node.object("an entry", &ENTRY_KEYS)?;
    let signature_node = fields.require("signature", "the signature's id")?;
    let signature = signature_node.string("a signature: 12 hex digits")?;
    if signature.len() != 12
        || !signature
            .chars()
            .all(|c| c.is_ascii_digit() || ('a'..='f').contains(&c))
    {
        return signature_node.fail(format!(
            "expected a signature: 12 lowercase hex digits, found {signature:?}"
        ));
    }
    let seed_node = fields.require("lowest_seed", "the lowest seed that fails this way")?;
    let lowest_seed: Seed = seed_node
        .string("a seed (\"0x1f\")")?
        .parse()
        .or_else(|e| seed_node.fail(format!("expected a seed (\"0x1f\"): {e}")))?;
    Ok(TriageEntry {
        signature,
        agent: fields
            .require("agent", "the agent")?
            .string("an agent name")?,
        invariant: fields
            .require("invariant", "the invariant broken")?
            .string("an invariant name")?,
        shape: fields
            .require("shape", "the script's shape")?
            .string("the script's shape")?,
        count: fields
            .require("count", "how many seeds fail this way")?
            .whole("count", 1..=u64::MAX)?,
        lowest_seed,
        replay: fields
            .require("replay", "the line that replays the lowest seed")?
            .string("a replay line")?,
        shrunk: fields
            .require("shrunk", "whether the shape is a shrunk case's")?
            .boolean("true or false")?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn triage() -> Triage {
        Triage {
            agents: vec!["weather".into(), "payment".into()],
            entries: vec![TriageEntry {
                signature: "0123456789ab".into(),
                agent: "weather".into(),
                invariant: "liveness".into(),
                shape: "call call-1 get_weather → abort".into(),
                count: 3,
                lowest_seed: Seed::new(0x1f),
                replay: "livesim sim run weather --seed 0x1f".into(),
                shrunk: true,
            }],
        }
    }

    #[test]
    fn a_triage_reads_back_as_written() {
        let text = serde_json::to_string_pretty(&triage().to_json()).unwrap();
        assert_eq!(Triage::from_json_str(&text, "t.json").unwrap(), triage());
        assert!(text.starts_with("{\n  \"livesim_triage\": 1,"), "{text}");
    }

    /// Each damage, and the words the error must hold.
    #[test]
    fn a_damaged_file_says_where_and_what() {
        let good = triage().to_json();
        let mut cases: Vec<(String, &str)> = vec![
            ("".into(), "t.json:1:0: not valid JSON"),
            ("[1, 2".into(), "t.json:1:5: not valid JSON"),
            ("{\"entries\": []}".into(), "missing key `livesim_triage`"),
            (
                "{\"livesim_triage\": 2, \"agents\": [], \"entries\": []}".into(),
                "t.json:1:20: at livesim_triage: this livesim reads triage files of version 1, not 2",
            ),
        ];
        let mut changed = |change: &dyn Fn(&mut Value), said: &'static str| {
            let mut value = good.clone();
            change(&mut value);
            cases.push((serde_json::to_string_pretty(&value).unwrap(), said));
        };
        changed(
            &|v| v["entries"][0]["count"] = json!(0),
            "at entries[0].count: expected count: a whole number from 1",
        );
        changed(
            &|v| v["entries"][0]["lowest_seed"] = json!("0xzz"),
            "at entries[0].lowest_seed: expected a seed (\"0x1f\")",
        );
        changed(
            &|v| v["entries"][0]["signature"] = json!("XYZ"),
            "at entries[0].signature: expected a signature: 12 lowercase hex digits, found \"XYZ\"",
        );
        changed(
            &|v| v["entries"][0]["agent"] = json!("booking"),
            "at entries[0].agent: `booking` is not one of the file's agents (weather, payment)",
        );
        changed(
            &|v| v["entries"][0]["shrunk"] = json!("yes"),
            "at entries[0].shrunk: expected true or false, found the string \"yes\"",
        );
        changed(
            &|v| v["entries"][0]["invariants"] = json!("x"),
            "unknown key `invariants` in an entry; did you mean `invariant`?",
        );
        changed(
            &|v| {
                let first = v["entries"][0].clone();
                v["entries"].as_array_mut().unwrap().push(first);
            },
            "at entries[1].signature: signature 0123456789ab has an entry already",
        );
        changed(
            &|v| {
                v.as_object_mut().unwrap().remove("agents");
            },
            "missing key `agents`",
        );
        for (text, said) in cases {
            let error = Triage::from_json_str(&text, "t.json")
                .expect_err(&text)
                .to_string();
            assert!(error.contains(said), "{error}\n  should say: {said}");
            assert!(error.starts_with("t.json"), "{error}");
        }
        let missing = Triage::load("no/such/triage.json").unwrap_err().to_string();
        assert!(
            missing.starts_with("no/such/triage.json: cannot read it: ")
                && missing
                    .ends_with("(a triage file is what `livesim sim soak --triage FILE` writes)"),
            "{missing}"
        );
    }
}
