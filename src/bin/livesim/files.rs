//! The files a command reads (a path, or `-` for stdin), the text it
//! prints, and the exit statuses every command shares.

use std::borrow::Cow;
use std::io::{ErrorKind, Write};
use std::path::Path;
use std::process::ExitCode;
use std::sync::Mutex;

use livesim::flow::Spec;
use livesim::simulation::JournalFile;

/// Every check held (a clean replay, a passing corpus).
pub const PASS: u8 = 0;
/// The command found something: a divergence, a failing scenario.
pub const FINDING: u8 = 1;
/// Bad usage or an input that cannot be used (missing, not JSON, …).
pub const INPUT: u8 = 2;

/// How stdin is named in errors.
const STDIN_NAME: &str = "<stdin>";

/// Whether `path` means stdin.
pub fn is_stdin(path: &Path) -> bool {
    path.as_os_str() == "-"
}

/// Reads a spec file, or stdin for `-`; the error names the file, line and
/// column.
pub fn spec(path: &Path) -> Result<Spec, String> {
    if is_stdin(path) {
        let bytes = stdin()?;
        let text =
            String::from_utf8(bytes).map_err(|e| format!("{STDIN_NAME}: not UTF-8 text: {e}"))?;
        Spec::from_json(&text, STDIN_NAME).map_err(|e| e.to_string())
    } else {
        Spec::read(path).map_err(|e| e.to_string())
    }
}

/// Reads a journal file, or stdin for `-`; the error names the file and
/// line. A torn last line is reported on stderr and the entries before it
/// are used.
pub fn journal(path: &Path) -> Result<JournalFile, String> {
    let journal = if is_stdin(path) {
        JournalFile::parse(STDIN_NAME, &stdin()?)
    } else {
        JournalFile::read(path)
    }
    .map_err(|e| e.to_string())?;
    if let Some(torn) = &journal.torn {
        say(&format!(
            "livesim: warning: {torn}; the entries before it are used"
        ));
    }
    Ok(journal)
}

fn stdin() -> Result<Vec<u8>, String> {
    livesim::jsonl::read_bytes_from(STDIN_NAME, std::io::stdin()).map_err(|e| e.to_string())
}

/// Prints `text` and a newline on stdout, then exits with `status`. A
/// reader that went away (`| head`) is not an error; any other write
/// failure is reported and exits 2.
pub fn print(text: &str, status: u8) -> ExitCode {
    let mut out = std::io::stdout().lock();
    match writeln!(out, "{}", printable(text, Escape::Json)).and_then(|()| out.flush()) {
        Ok(()) => ExitCode::from(status),
        Err(e) if e.kind() == ErrorKind::BrokenPipe => ExitCode::from(status),
        Err(e) => {
            say(&format!("livesim: cannot write the output: {e}"));
            ExitCode::from(INPUT)
        }
    }
}

/// The first error writing a command's output to stdout, if any: later
/// lines are not tried, and [`finish`] reports it.
static OUTPUT_ERROR: Mutex<Option<std::io::Error>> = Mutex::new(None);

/// Writes `text` to stdout, as part of a command's output that [`finish`]
/// ends; a failed write is kept for [`finish`], never a panic.
pub fn out(text: std::fmt::Arguments<'_>) {
    let mut error = OUTPUT_ERROR.lock().unwrap_or_else(|p| p.into_inner());
    if error.is_some() {
        return;
    }
    let text = text.to_string();
    let mut stdout = std::io::stdout().lock();
    if let Err(e) = stdout.write_all(printable(&text, Escape::Json).as_bytes()) {
        *error = Some(e);
    }
}

/// The exit status of a command that wrote its output with [`out`]:
/// `status`, as [`print`] decides it. A reader that went away (`| head`)
/// is not an error; any other write failure (a full disk, `/dev/full`) is
/// reported and exits 2, since the output is lost.
pub fn finish(status: ExitCode) -> ExitCode {
    let flushed = std::io::stdout().lock().flush();
    let error = OUTPUT_ERROR
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .take()
        .or(flushed.err());
    match error {
        None => status,
        Some(e) if e.kind() == ErrorKind::BrokenPipe => status,
        Some(e) => {
            say(&format!("livesim: cannot write the output: {e}"));
            ExitCode::from(INPUT)
        }
    }
}

/// Reports an error on stderr, prefixed with the command, and exits 2.
pub fn fail(command: &str, problem: impl std::fmt::Display) -> ExitCode {
    say(&format!("livesim {command}: {problem}"));
    ExitCode::from(INPUT)
}

/// One line on stderr; a closed stderr is no reason to panic. Each line
/// of `line` is cut at [`MAX_LINE`] bytes: an error that quotes what it
/// found (a key, a number) quotes a megabyte of it as readily as a word.
pub fn say(line: &str) {
    let line = printable(line, Escape::Rust);
    let mut text = String::with_capacity(line.len().min(MAX_LINE) + 1);
    for part in line.split('\n') {
        text.push_str(&livesim::wire::clip(part, MAX_LINE));
        text.push('\n');
    }
    let _ = std::io::stderr().write_all(text.as_bytes());
}

/// The longest line [`say`] writes, in bytes (a longer one ends
/// `…(N bytes)`): far past any message livesim makes, and past a serve
/// log line (`livesim::serve::MAX_LINE`), which comes here whole.
const MAX_LINE: usize = 8 * 1024;

/// How [`printable`] writes a character it escapes.
#[derive(Clone, Copy)]
enum Escape {
    /// `\u{1b}`, as livesim's messages quote a name (and `livesim serve`
    /// its log): for stderr.
    Rust,
    /// `\u001b`: the same character inside a JSON string, for stdout,
    /// whose `--format json` documents may hold some of these characters
    /// raw (JSON allows every one but the C0 controls).
    Json,
}

/// `text` as it may reach a terminal. Names and values from the files a
/// command reads (a tool name in a journal, an unknown key in a spec) end
/// up in its output and its errors; raw, their control characters could
/// clear the screen, rewrite the line before them (`\r`) or set the
/// window title, and the Unicode line separators and direction overrides
/// could make a line read as another. Each is escaped; newlines and tabs
/// stay.
fn printable(text: &str, escape: Escape) -> Cow<'_, str> {
    let unsafe_char = |c: char| livesim::wire::acts_on_a_terminal(c) && !matches!(c, '\n' | '\t');
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
