//! The `setup` message a session opens each connection with: described
//! once, as what it serializes to, and from that both written straight
//! to the wire and built as a `Value` (what a handle shows, what the soak
//! reads an agent's repertoire from).
//!
//! Building the `Value` to write it costs a map per object and a copy
//! per string, on every connection; the wire needs only the text.

use serde::ser::{Serialize, SerializeMap, Serializer};
use serde_json::Value;

use super::config::{Modality, SessionConfig};
use super::resumption::Handle;
use crate::compose::tools::Tool;

impl SessionConfig {
    /// The `setup` client message of the session's first connection.
    pub fn setup_message(&self) -> Value {
        // Infallible: every map key is a string, every value JSON.
        serde_json::to_value(Message {
            config: self,
            handle: None,
        })
        .unwrap_or(Value::Null)
    }

    /// The `setup` message's text, resuming `handle` (when resumption is
    /// on; the handle is a secret: the message is sent, never shown).
    pub(crate) fn setup_text(&self, handle: Option<&Handle>) -> String {
        crate::wire::to_json(&Message {
            config: self,
            handle,
        })
    }
}

/// `{"setup": …}`.
struct Message<'a> {
    config: &'a SessionConfig,
    handle: Option<&'a Handle>,
}

impl Serialize for Message<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut message = serializer.serialize_map(Some(1))?;
        message.serialize_entry("setup", &Body(self))?;
        message.end()
    }
}

/// The setup's members, in the order the service documents them; the
/// fields a builder adds with `setup_field` take a built member's place
/// when they name it, and come last when they do not.
struct Body<'a>(&'a Message<'a>);

impl Serialize for Body<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let Message { config, handle } = *self.0;
        let extra = &config.extra_setup;
        let mut setup = serializer.serialize_map(None)?;
        let mut built: Vec<&str> = Vec::with_capacity(7);
        let (s, b) = (&mut setup, &mut built);
        member(s, b, extra, "model", &Model(&config.model))?;
        let modality = match config.modality {
            Modality::Audio => "AUDIO",
            Modality::Text => "TEXT",
        };
        let generation = Single("responseModalities", [modality]);
        member(s, b, extra, "generationConfig", &generation)?;
        if let Some(instruction) = &config.instruction {
            let parts = Single("parts", [Single("text", instruction.as_str())]);
            member(s, b, extra, "systemInstruction", &parts)?;
        }
        if !config.tools.is_empty() {
            let declarations = Declarations(config.tools.tools());
            let tools = [Single("functionDeclarations", declarations)];
            member(s, b, extra, "tools", &tools)?;
        }
        member(s, b, extra, "inputAudioTranscription", &Empty)?;
        if config.modality == Modality::Audio {
            member(s, b, extra, "outputAudioTranscription", &Empty)?;
        }
        if config.resumption.is_on() {
            let resumption = config.resumption.setup_field(handle);
            member(s, b, extra, "sessionResumption", &resumption)?;
        }
        for (name, value) in extra {
            if !built.contains(&name.as_str()) {
                setup.serialize_entry(name, value)?;
            }
        }
        setup.end()
    }
}

/// Writes built member `name`, or the builder's own field of that name
/// in its place.
fn member<M: SerializeMap, T: Serialize + ?Sized>(
    setup: &mut M,
    built: &mut Vec<&'static str>,
    extra: &serde_json::Map<String, Value>,
    name: &'static str,
    value: &T,
) -> Result<(), M::Error> {
    built.push(name);
    match extra.get(name) {
        Some(replaced) => setup.serialize_entry(name, replaced),
        None => setup.serialize_entry(name, value),
    }
}

/// The model's resource name: `models/` unless it already names one.
struct Model<'a>(&'a str);

impl Serialize for Model<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        if self.0.starts_with("models/") || self.0.starts_with("projects/") {
            serializer.serialize_str(self.0)
        } else {
            serializer.collect_str(&format_args!("models/{}", self.0))
        }
    }
}

/// An object of one member.
struct Single<T>(&'static str, T);

impl<T: Serialize> Serialize for Single<T> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut object = serializer.serialize_map(Some(1))?;
        object.serialize_entry(self.0, &self.1)?;
        object.end()
    }
}

/// `{}`.
struct Empty;

impl Serialize for Empty {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_map(Some(0))?.end()
    }
}

/// The tools' declarations, each as [`Tool::declaration`] gives it.
struct Declarations<'a>(&'a [Tool]);

impl Serialize for Declarations<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(self.0.iter().map(Tool::declared))
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::compose::tools::T;
    use crate::session::Resumption;

    fn config() -> SessionConfig {
        let mut config = SessionConfig::new();
        config.model = "m".into();
        config
    }

    /// The text the wire carries, member by member: built members in the
    /// service's order, a builder's field in place of the member it names
    /// and after the rest when it names none.
    #[test]
    fn a_builders_fields_take_the_place_of_what_they_name() {
        let mut config = config();
        config.instruction = Some("Be \"brief\".".into());
        config.tools = T::simple("get_weather", "Weather", |_| async { Ok(json!({})) })
            .parameters(json!({"type": "OBJECT"}));
        for (name, value) in [
            ("systemInstruction", json!({"parts": [{"text": "X"}]})),
            ("custom", json!(1)),
            ("generationConfig", json!({"temperature": 0.5})),
        ] {
            config.extra_setup.insert(name.into(), value);
        }
        assert_eq!(
            config.setup_text(None),
            concat!(
                r#"{"setup":{"model":"models/m","generationConfig":{"temperature":0.5},"#,
                r#""systemInstruction":{"parts":[{"text":"X"}]},"#,
                r#""tools":[{"functionDeclarations":[{"name":"get_weather","description":"Weather","parameters":{"type":"OBJECT"}}]}],"#,
                r#""inputAudioTranscription":{},"outputAudioTranscription":{},"custom":1}}"#
            )
        );
    }

    /// A field naming a member this setup does not build (no instruction
    /// here) comes after the built ones; a text session asks for no
    /// output transcription; a resuming one names its handle.
    #[test]
    fn a_text_session_resuming_a_handle() {
        let mut config = config();
        config.model = "models/custom".into();
        config.modality = Modality::Text;
        config.resumption = Resumption::on().transparent(true);
        config
            .extra_setup
            .insert("systemInstruction".into(), json!({"parts": []}));
        let handle = Handle::new("h-1");
        assert_eq!(
            config.setup_text(Some(&handle)),
            concat!(
                r#"{"setup":{"model":"models/custom","generationConfig":{"responseModalities":["TEXT"]},"#,
                r#""inputAudioTranscription":{},"sessionResumption":{"handle":"h-1","transparent":true},"#,
                r#""systemInstruction":{"parts":[]}}}"#
            )
        );
    }

    /// The `Value` a handle shows is the message the wire carried.
    #[test]
    fn the_value_is_the_text_parsed() {
        let mut config = config();
        config.instruction = Some("Hi".into());
        config.extra_setup.insert("model".into(), json!("models/x"));
        config
            .extra_setup
            .insert("big".into(), json!(123456789012345678901234567890u128));
        let parsed: Value = serde_json::from_str(&config.setup_text(None)).unwrap();
        assert_eq!(config.setup_message(), parsed);
    }
}
