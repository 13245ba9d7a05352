//! `setup-as-declared`: every `setup` a session sends says what its agent
//! file declares, read from the agent as the file wrote it, apart from
//! the session builder that turns an agent into a setup.
//!
//! Every other check reads which tools a session has, and whether it
//! resumes, from the setup the session sent (the reference model calls a
//! tool unknown when the setup did not declare it), so a builder that
//! lost the instruction, a tool or the resumption config would go unseen
//! by them: the session would answer each call to a lost tool with an
//! error, and the model would agree.
//!
//! The rules, from the Live protocol: a `setup` holds the instruction as
//! `systemInstruction.parts[].text`; the tools as one entry of `tools`
//! whose `functionDeclarations` are `{name, description, parameters?}`,
//! one per declared tool, in the order declared; `sessionResumption`
//! when the session resumes (`transparent: true` when it resumes
//! transparently); and `realtimeInputConfig.automaticActivityDetection.
//! disabled: true` when the user marks activity by hand; one response
//! modality, `AUDIO` or `TEXT`, and `outputAudioTranscription` exactly
//! when the answers are spoken. A connection's first setup resumes no
//! handle.

use serde_json::{Value, json};

use crate::soak::agent::Agent;
use crate::soak::run::record::RunRecord;
use crate::wire::JsonPath;

/// What an agent file declares that its sessions' setups must say.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct DeclaredSetup {
    instruction: String,
    /// The declarations, as the protocol spells them.
    tools: Vec<Value>,
    resumes: bool,
    transparent: bool,
    manual_activity: bool,
}

impl DeclaredSetup {
    /// What `agent`'s file declares.
    pub(crate) fn of(agent: &Agent) -> DeclaredSetup {
        let tools = agent
            .tools
            .iter()
            .map(|tool| {
                let mut declaration = json!({ "name": tool.name, "description": tool.description });
                if let Some(parameters) = &tool.parameters {
                    declaration["parameters"] = parameters.clone();
                }
                declaration
            })
            .collect();
        let resumption = &agent.repertoire.resumption;
        DeclaredSetup {
            instruction: agent.instruction.clone(),
            tools,
            resumes: resumption.is_on(),
            transparent: resumption.is_transparent(),
            manual_activity: agent.repertoire.manual_activity,
        }
    }

    /// Checks every setup `run`'s session sent.
    pub(crate) fn check(&self, run: &RunRecord) -> Result<(), String> {
        let setups: Vec<&Value> = run.sent.iter().filter_map(|m| m.get("setup")).collect();
        if setups.is_empty() && run.connect_error.is_none() {
            return Err("the session connected without sending a setup".to_string());
        }
        for (n, setup) in setups.into_iter().enumerate() {
            self.check_one(setup, n == 0)
                .map_err(|problem| format!("setup #{}: {problem}", n + 1))?;
        }
        Ok(())
    }

    fn check_one(&self, setup: &Value, first: bool) -> Result<(), String> {
        let said: String = setup
            .at("/systemInstruction/parts")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|part| part.get("text").and_then(Value::as_str))
            .collect();
        if said != self.instruction {
            return Err(format!(
                "its instruction is {said:?}, but the agent file says {:?}",
                self.instruction
            ));
        }
        let declared: Vec<&Value> = setup
            .get("tools")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|t| t.get("functionDeclarations").and_then(Value::as_array))
            .flatten()
            .collect();
        let names = |tools: &[&Value]| -> Vec<String> {
            tools
                .iter()
                .map(|t| {
                    t.get("name")
                        .and_then(Value::as_str)
                        .unwrap_or("?")
                        .to_string()
                })
                .collect()
        };
        let wanted: Vec<&Value> = self.tools.iter().collect();
        if names(&declared) != names(&wanted) {
            return Err(format!(
                "it declares the tools {:?}, but the agent file declares {:?}",
                names(&declared),
                names(&wanted)
            ));
        }
        if let Some((sent, file)) = declared
            .iter()
            .zip(&wanted)
            .find(|(sent, file)| **sent != **file)
        {
            return Err(format!(
                "it declares {sent}, but the agent file declares {file}"
            ));
        }
        let resumption = setup.get("sessionResumption");
        match (resumption, self.resumes) {
            (None, true) => {
                return Err("it asks for no resumption, but the agent file is resumable".into());
            }
            (Some(_), false) => {
                return Err("it asks for resumption, but the agent file is not resumable".into());
            }
            _ => {}
        }
        if let Some(resumption) = resumption {
            let transparent = resumption.get("transparent") == Some(&Value::Bool(true));
            if transparent != self.transparent {
                return Err(format!(
                    "it asks for transparent resumption: {transparent}, but the agent file says {}",
                    self.transparent
                ));
            }
            if first && resumption.get("handle").is_some() {
                return Err("the first connection's setup resumes a handle".to_string());
            }
        }
        // Spoken answers come with their transcript, text answers with
        // none: the session's events carry what the model said either way.
        let modalities = setup.at("/generationConfig/responseModalities");
        let spoken = match modalities.and_then(Value::as_array).map(Vec::as_slice) {
            Some([only]) if only == "AUDIO" => true,
            Some([only]) if only == "TEXT" => false,
            _ => {
                return Err(format!(
                    "it asks for the response modalities {}, not one of [\"AUDIO\"] or [\"TEXT\"]",
                    modalities.map_or_else(|| "(none)".to_string(), Value::to_string)
                ));
            }
        };
        let transcribed = setup.get("outputAudioTranscription").is_some();
        if transcribed != spoken {
            return Err(format!(
                "it asks for spoken answers: {spoken}, but for a transcript of them: {transcribed}"
            ));
        }
        let manual = setup.at("/realtimeInputConfig/automaticActivityDetection/disabled")
            == Some(&Value::Bool(true));
        if manual != self.manual_activity {
            return Err(format!(
                "automatic activity detection off: {manual}, but the agent file says {}",
                self.manual_activity
            ));
        }
        Ok(())
    }
}
