//! The files a command reads (a path, or `-` for stdin), the text it
//! prints, and the exit statuses every command shares.

use std::borrow::Cow;
use std::io::{ErrorKind, Write};
use std::path::Path;
use std::process::ExitCode;
use std::sync::Mutex;

use livesim::flow::Spec;
use livesim::simulation::JournalFile;
use livesim::wire::{Escape, MAX_PRINTED_LINE, clip, printable, printable_lines};

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
/// of `line` is cut at [`MAX_PRINTED_LINE`] bytes: an error that quotes what it
/// found (a key, a number) quotes a megabyte of it as readily as a word.
pub fn say(line: &str) {
    let mut text = printable_lines(line, Escape::Rust, MAX_PRINTED_LINE).into_owned();
    text.push('\n');
    let _ = std::io::stderr().write_all(text.as_bytes());
}

/// Prints `text` as [`print`] does, each of its lines cut at [`MAX_PRINTED_LINE`]
/// bytes as [`say`] cuts them: for a report that quotes the files it read
/// (why a scenario cannot run, the step that failed), which may quote a
/// megabyte of one.
pub fn print_cut(text: &str, status: u8) -> ExitCode {
    print(
        &printable_lines(text, Escape::Json, MAX_PRINTED_LINE),
        status,
    )
}

/// `value` with every string in it cut at [`MAX_PRINTED_LINE`] bytes: a JSON
/// report bounded as [`print_cut`] bounds text, still a document a
/// program parses.
pub fn cut_strings(value: &mut serde_json::Value) {
    match value {
        serde_json::Value::String(text) => {
            if let Cow::Owned(cut) = clip(text, MAX_PRINTED_LINE) {
                *text = cut;
            }
        }
        serde_json::Value::Array(items) => items.iter_mut().for_each(cut_strings),
        serde_json::Value::Object(members) => members.values_mut().for_each(cut_strings),
        _ => {}
    }
}
