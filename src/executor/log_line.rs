//! One log line as livesim writes it: the stamp (virtual time, seed,
//! lane), the level and target, the event's fields, scrubbed of secrets
//! and made safe to print on a terminal.
//!
//! The fields are written here rather than by `tracing-subscriber`'s
//! default visitor, which escapes a message character by character as it
//! writes it: a soak that keeps every log line of a resuming run spent
//! about a twentieth of its instructions there. The line is written whole, then checked for
//! terminal control characters in one pass and escaped only if it holds
//! one (the same characters, written the same way, as the default
//! visitor's escape).

use std::borrow::Cow;
use std::fmt::{self, Write as _};

use tracing::Event;
use tracing::field::{Field, Visit};

use super::context;
use super::trace::push_time;
use crate::wire::known_scrubbed;

/// Writes `event` as one line (no newline) onto `line`: the stamp, level,
/// target and fields, scrubbed of every remembered secret and
/// secret-shaped text (a dependency that logs what it was handed, a
/// handshake or a frame, is scrubbed too), its terminal control characters
/// escaped.
pub(crate) fn write(line: &mut String, event: &Event<'_>) {
    let start = line.len();
    // Writing to a String cannot fail.
    match context::with(|c| (c.now(), c.seed, c.label())) {
        Some((at, seed, label)) => {
            line.push_str("t=");
            push_time(line, at);
            line.push_str(" seed=");
            push_hex(line, seed.value());
            line.push_str(" lane=");
            line.push_str(&label);
            line.push(' ');
        }
        None => line.push_str("t=- "),
    }
    let meta = event.metadata();
    line.push_str(meta.level().as_str());
    line.push(' ');
    line.push_str(meta.target());
    line.push_str(": ");
    event.record(&mut Fields { line, first: true });
    // Scrubbed before it is escaped: a secret is remembered as it was
    // given, not as the escape writes it.
    if let Cow::Owned(scrubbed) = known_scrubbed(&line[start..]) {
        line.truncate(start);
        line.push_str(&scrubbed);
    }
    escape_controls(line, start);
}

/// Writes `value` as `{:#x}` does (`0x1f`).
fn push_hex(line: &mut String, value: u64) {
    line.push_str("0x");
    let digits = (64 - value.leading_zeros()).div_ceil(4).max(1);
    for shift in (0..digits).rev() {
        let nibble = (value >> (shift * 4)) & 0xf;
        line.push(char::from(b"0123456789abcdef"[nibble as usize]));
    }
}

/// Writes an event's fields as `tracing-subscriber` does: the message as
/// written, every other field as `name=value` (its `Debug` form), one
/// space between them.
struct Fields<'a> {
    line: &'a mut String,
    first: bool,
}

impl Fields<'_> {
    fn space(&mut self) {
        if !std::mem::take(&mut self.first) {
            self.line.push(' ');
        }
    }
}

impl Visit for Fields<'_> {
    fn record_str(&mut self, field: &Field, value: &str) {
        if field.name() == "message" {
            self.space();
            self.line.push_str(value);
        } else {
            self.record_debug(field, &value);
        }
    }

    fn record_error(&mut self, field: &Field, value: &(dyn std::error::Error + 'static)) {
        match value.source() {
            Some(source) => self.record_debug(
                field,
                &format_args!("{value} {}.sources={}", field.name(), Sources(source)),
            ),
            None => self.record_debug(field, &format_args!("{value}")),
        }
    }

    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        let name = field.name();
        // Metadata a `log` record carries, already in the stamp.
        if name.starts_with("log.") {
            return;
        }
        self.space();
        let _ = match name {
            "message" => write!(self.line, "{value:?}"),
            name => {
                let name = name.strip_prefix("r#").unwrap_or(name);
                write!(self.line, "{name}={value:?}")
            }
        };
    }
}

/// An error's chain of sources, shown as a list: `[refused, timed out]`.
struct Sources<'a>(&'a (dyn std::error::Error + 'static));

impl fmt::Display for Sources<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut list = f.debug_list();
        let mut error = Some(self.0);
        while let Some(this) = error {
            list.entry(&format_args!("{this}"));
            error = this.source();
        }
        list.finish()
    }
}

/// Escapes, in `line` from `start` on, the characters a terminal takes
/// as the start of a command (ESC, BEL, BS, FF, DEL and the C1 controls),
/// so a logged text cannot recolour, retitle or rewrite the terminal that
/// shows it.
fn escape_controls(line: &mut String, start: usize) {
    // C1 controls are U+0080..=U+009F: 0xC2 then 0x80..=0x9F in UTF-8.
    let risky = |b: &u8| matches!(b, 0x1b | 0x07 | 0x08 | 0x0c | 0x7f | 0xc2);
    if !line.as_bytes()[start..].iter().any(risky) {
        return;
    }
    let text = line.split_off(start);
    for ch in text.chars() {
        match ch {
            '\x1b' | '\x07' | '\x08' | '\x0c' | '\x7f' => {
                let _ = write!(line, "\\x{:02x}", ch as u32);
            }
            '\u{80}'..='\u{9f}' => {
                let _ = write!(line, "\\u{{{:x}}}", ch as u32);
            }
            ch => line.push(ch),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn escaped(text: &str) -> String {
        let mut line = String::from("kept\x1b ");
        let start = line.len();
        line.push_str(text);
        escape_controls(&mut line, start);
        line
    }

    #[test]
    fn the_stamp_writes_times_and_seeds_as_their_formats_do() {
        use std::time::Duration;
        for at in [0, 1, 999, 1_000, 12_500, 3_600_007, u64::MAX / 2_000_000] {
            let at = Duration::from_millis(at) + Duration::from_micros(999);
            let mut line = String::new();
            push_time(&mut line, at);
            let seconds = format!("{}.{:03}s", at.as_secs(), at.subsec_millis());
            assert_eq!(line, seconds);
        }
        for seed in [0, 1, 0xf, 0x10, 0x1f2e, u64::MAX, 1 << 63] {
            let mut line = String::new();
            push_hex(&mut line, seed);
            assert_eq!(line, format!("{seed:#x}"));
        }
    }

    #[test]
    fn terminal_commands_are_escaped_and_the_rest_is_left_alone() {
        assert_eq!(escaped("plain café ✓"), "kept\x1b plain café ✓");
        assert_eq!(
            escaped("\x1b[31mred\x07\x08\x0c\x7f"),
            "kept\x1b \\x1b[31mred\\x07\\x08\\x0c\\x7f"
        );
        assert_eq!(
            escaped("c1 \u{9b}2J \u{80}"),
            "kept\x1b c1 \\u{9b}2J \\u{80}"
        );
        // Newlines and tabs are not commands: a multi-line event stays one.
        assert_eq!(escaped("a\nb\tc"), "kept\x1b a\nb\tc");
    }
}
