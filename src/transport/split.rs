//! Seeded splitting of model text across frames.
//!
//! The real server streams a turn's text in chunks whose boundaries vary
//! from run to run; a session's aggregation must not care where they fall.
//! [`TextSplit`] lets a fake server reproduce that under the seed: it
//! takes a `serverContent` frame whose `modelTurn` holds one text part and
//! cuts the text into several frames at seeded character boundaries.
//!
//! Which frames are split: a text or binary frame whose JSON has
//! `serverContent.modelTurn.parts` with exactly one part, and that part
//! has a `text` of at least two characters (camelCase or snake_case keys).
//! Every other frame is returned unchanged, as is every frame outside a
//! simulation.
//!
//! How the pieces are built: each piece but the last is
//! `{"serverContent":{"modelTurn":{"role"?, "parts":[{"text": chunk, "thought"?}]}}}`,
//! keeping the role and the `thought` flag, which describe every chunk.
//! The last piece is the original frame with its text replaced by the last
//! chunk, so everything else the frame said (`turnComplete`,
//! `usageMetadata`, transcripts, `thoughtSignature`, unknown keys) arrives
//! once, with the end of the text. Pieces keep the original frame's kind.

use serde_json::{Map, Value};

use super::Frame;
use crate::executor;

/// The stream the splitter draws from.
pub const SPLIT_STREAM: &str = "transport/split";

/// Splits text frames into at most `max_pieces` frames under the seed.
///
/// ```
/// use livesim::Seed;
/// use livesim::executor::Simulation;
/// use livesim::wire::Frame;
/// use livesim::transport::split::TextSplit;
/// use livesim::wire::ServerMessage;
///
/// let frame = Frame::Text(r#"{"serverContent":{"modelTurn":{"parts":[{"text":"Hello, wörld!"}]},"turnComplete":true}}"#.into());
/// let pieces = Simulation::new(Seed::new(9))
///     .run(move || async move { TextSplit { max_pieces: 4 }.split(&frame) })
///     .unwrap()
///     .value;
/// let messages: Vec<ServerMessage> = pieces.iter()
///     .map(|f| ServerMessage::from_slice(f.payload().unwrap()).unwrap())
///     .collect();
/// let text: String = messages.iter()
///     .map(|m| m.server_content.as_ref().unwrap().model_turn.as_ref().unwrap().text())
///     .collect();
/// assert_eq!(text, "Hello, wörld!");
/// // Only the last piece ends the turn.
/// let ends: Vec<bool> = messages.iter().map(|m| m.server_content.as_ref().unwrap().turn_complete).collect();
/// assert_eq!(ends.last(), Some(&true));
/// assert!(ends[..ends.len() - 1].iter().all(|end| !end));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TextSplit {
    /// The most pieces one frame becomes (at least 1).
    pub max_pieces: usize,
}

impl Default for TextSplit {
    /// Up to four pieces.
    fn default() -> Self {
        TextSplit { max_pieces: 4 }
    }
}

/// [`TextSplit::default`]'s split of `frame`.
pub fn split_text(frame: &Frame) -> Vec<Frame> {
    TextSplit::default().split(frame)
}

impl TextSplit {
    /// The frames `frame` becomes: itself alone, or its text in seeded
    /// pieces (see the module docs for which frames and how).
    pub fn split(&self, frame: &Frame) -> Vec<Frame> {
        if !executor::is_simulated() || self.max_pieces < 2 {
            return vec![frame.clone()];
        }
        let Some(payload) = frame.payload() else {
            return vec![frame.clone()];
        };
        let Ok(mut message) = serde_json::from_slice::<Value>(payload) else {
            return vec![frame.clone()];
        };
        let Some(text) = single_text(&message).map(str::to_owned) else {
            return vec![frame.clone()];
        };
        let chars = text.chars().count();
        if chars < 2 {
            return vec![frame.clone()];
        }
        let cuts = executor::draw(SPLIT_STREAM, |s| {
            let pieces = s.range(1..=self.max_pieces.min(chars) as u64) as usize;
            let mut cuts = std::collections::BTreeSet::new();
            while cuts.len() < pieces - 1 {
                cuts.insert(s.range(1..=(chars - 1) as u64) as usize);
            }
            cuts
        })
        .unwrap_or_default();
        if cuts.is_empty() {
            return vec![frame.clone()];
        }
        let mut bounds: Vec<usize> = vec![0];
        bounds.extend(cuts.iter().map(|&c| byte_offset(&text, c)));
        bounds.push(text.len());
        let chunks: Vec<&str> = bounds.windows(2).map(|w| &text[w[0]..w[1]]).collect();
        crate::record!("split a text frame into {} pieces", chunks.len());

        let (Some((last, rest)), Some(path)) = (chunks.split_last(), path(&message)) else {
            return vec![frame.clone()];
        };
        let mut pieces: Vec<Value> = rest.iter().map(|chunk| piece(&path, chunk)).collect();
        set_single_text(&mut message, last);
        pieces.push(message);
        pieces
            .into_iter()
            .map(|value| {
                let json = value.to_string();
                match frame {
                    Frame::Binary(_) => Frame::Binary(json.into_bytes()),
                    _ => Frame::Text(json),
                }
            })
            .collect()
    }
}

fn get<'a>(
    object: &'a Map<String, Value>,
    camel: &str,
    snake: &str,
) -> Option<(&'a str, &'a Value)> {
    object
        .get_key_value(camel)
        .or_else(|| object.get_key_value(snake))
        .map(|(k, v)| (k.as_str(), v))
}

/// Key names as the frame spells them, and the single text part.
struct Path<'a> {
    content_key: &'a str,
    turn_key: &'a str,
    parts_key: &'a str,
    turn: &'a Map<String, Value>,
    part: &'a Map<String, Value>,
}

fn path(message: &Value) -> Option<Path<'_>> {
    let (content_key, content) = get(message.as_object()?, "serverContent", "server_content")?;
    let (turn_key, turn) = get(content.as_object()?, "modelTurn", "model_turn")?;
    let turn = turn.as_object()?;
    let (parts_key, parts) = get(turn, "parts", "parts")?;
    match parts.as_array()?.as_slice() {
        [part] => {
            let part = part.as_object()?;
            part.get("text")?.as_str()?;
            Some(Path {
                content_key,
                turn_key,
                parts_key,
                turn,
                part,
            })
        }
        _ => None,
    }
}

fn single_text(message: &Value) -> Option<&str> {
    path(message)?.part.get("text")?.as_str()
}

fn set_single_text(message: &mut Value, text: &str) {
    let Some(p) = path(message) else { return };
    let (content_key, turn_key, parts_key) = (
        p.content_key.to_owned(),
        p.turn_key.to_owned(),
        p.parts_key.to_owned(),
    );
    if let Some(slot) = message
        .get_mut(&content_key)
        .and_then(|c| c.get_mut(&turn_key))
        .and_then(|t| t.get_mut(&parts_key))
        .and_then(|p| p.get_mut(0))
        .and_then(|p| p.get_mut("text"))
    {
        *slot = Value::String(text.to_owned());
    }
}

/// A piece before the last: the chunk, with the role and thought flag.
fn piece(p: &Path<'_>, chunk: &str) -> Value {
    let mut part = Map::new();
    part.insert("text".into(), Value::String(chunk.to_owned()));
    if let Some(thought) = p.part.get("thought") {
        part.insert("thought".into(), thought.clone());
    }
    let mut turn = Map::new();
    if let Some(role) = p.turn.get("role") {
        turn.insert("role".into(), role.clone());
    }
    turn.insert(p.parts_key.into(), Value::Array(vec![Value::Object(part)]));
    let mut content = Map::new();
    content.insert(p.turn_key.into(), Value::Object(turn));
    let mut out = Map::new();
    out.insert(p.content_key.into(), Value::Object(content));
    Value::Object(out)
}

fn byte_offset(text: &str, chars: usize) -> usize {
    text.char_indices()
        .nth(chars)
        .map_or(text.len(), |(i, _)| i)
}
