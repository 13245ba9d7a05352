//! Text on its way to a terminal: what in it acts on the terminal, and
//! the one way livesim escapes it and bounds its lines.
//!
//! Names and values from outside (a tool name in a journal, an unknown
//! key in a spec, an invariant's name in a soak) end up in what livesim
//! prints. Raw, their control characters could clear the screen, rewrite
//! the line before them (`\r`) or set the window title, and the Unicode
//! line separators and direction overrides could make a line read as
//! another; a message quoting what it found quotes a megabyte of it as
//! readily as a word. The CLI's output and errors, and the lines a soak
//! writes to stderr, go through [`printable_lines`].

use std::borrow::Cow;

use super::clip;

/// The longest line livesim prints (to stderr, or a report on stdout that
/// quotes the files it read), in bytes; a longer one ends `…(N bytes)`.
/// Far past any message livesim makes, and past a serve log line
/// (`livesim::serve::MAX_LINE`), which the CLI prints whole.
pub const MAX_PRINTED_LINE: usize = 8 * 1024;

/// Whether `c` acts on a terminal, or makes a line read as another, when
/// printed raw: a control character (ESC, CR, BEL, the C1 controls, a
/// newline), a Unicode line or paragraph separator, or a direction
/// override. Text from outside (a client's frame, a name in a file) is
/// escaped where it holds one before it is printed.
///
/// ```
/// use livesim::wire::acts_on_a_terminal;
///
/// assert!(acts_on_a_terminal('\u{1b}') && acts_on_a_terminal('\u{202e}'));
/// assert!(!acts_on_a_terminal('é'));
/// ```
pub fn acts_on_a_terminal(c: char) -> bool {
    c.is_control()
        || matches!(c, '\u{2028}' | '\u{2029}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

/// How [`printable`] writes a character it escapes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Escape {
    /// `\u{1b}`, as livesim's messages quote a name (and `livesim serve`
    /// its log): for stderr.
    Rust,
    /// `\u001b`: the same character inside a JSON string, for stdout,
    /// whose JSON documents may hold some of these characters raw (JSON
    /// allows every one but the C0 controls).
    Json,
}

/// `text` as it may reach a terminal: each character that
/// [acts on one](acts_on_a_terminal) escaped as `escape` says; newlines
/// and tabs stay.
///
/// ```
/// use livesim::wire::{Escape, printable};
///
/// assert_eq!(printable("a\u{1b}[2J\tb\r", Escape::Rust), "a\\u{1b}[2J\tb\\u{d}");
/// assert_eq!(printable("\u{202e}x\n", Escape::Json), "\\u202ex\n");
/// ```
pub fn printable(text: &str, escape: Escape) -> Cow<'_, str> {
    let unsafe_char = |c: char| acts_on_a_terminal(c) && !matches!(c, '\n' | '\t');
    if !text.chars().any(unsafe_char) {
        return text.into();
    }
    let mut escaped = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        match escape {
            _ if !unsafe_char(c) => escaped.push(c),
            Escape::Rust => escaped.push_str(&format!("\\u{{{:x}}}", c as u32)),
            Escape::Json => escaped.push_str(&format!("\\u{:04x}", c as u32)),
        }
    }
    escaped.into()
}

/// `text` made [`printable`], then each of its lines [cut](clip) at `max`
/// bytes ([`MAX_PRINTED_LINE`] where livesim prints).
///
/// ```
/// use livesim::wire::{Escape, printable_lines};
///
/// let text = format!("short\n{}\u{7}", "x".repeat(20));
/// assert_eq!(printable_lines(&text, Escape::Rust, 10), "short\nxxxxxxxxxx…(25 bytes)");
/// ```
pub fn printable_lines(text: &str, escape: Escape, max: usize) -> Cow<'_, str> {
    let text = printable(text, escape);
    if text.split('\n').all(|line| line.len() <= max) {
        return text;
    }
    let mut cut = String::with_capacity(text.len().min(max) + 1);
    for (i, line) in text.split('\n').enumerate() {
        if i > 0 {
            cut.push('\n');
        }
        cut.push_str(&clip(line, max));
    }
    cut.into()
}
