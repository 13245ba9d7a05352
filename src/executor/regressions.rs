//! Regression seeds: the seeds that once failed a seeded test, kept in a
//! file beside it and run first every time it runs (as proptest keeps its
//! regressions).
//!
//! **Where.** One file per test source file, in a `livesim-regressions`
//! folder under the source's top folder: the seeds of the tests in
//! `tests/kit/replay.rs` go to `tests/livesim-regressions/kit/replay.seeds`,
//! those of `src/lib.rs` to `src/livesim-regressions/lib.seeds`. Commit
//! it: everyone's runs, and CI's, then try those seeds first.
//!
//! **Format.** One seed per line, after the test's path; `#` starts a
//! comment (the writer notes what failed):
//!
//! ```text
//! # livesim regressions for tests/kit/replay.rs: seeds that once failed. …
//! replay::a_flaky_test 0x2a  # panic at t=0.012s: assertion failed: …
//! ```
//!
//! **When.** A test that runs a range of seeds first runs its recorded
//! seeds, then the range (skipping those), however short the range
//! (`LIVESIM_SEEDS=1`, a test that runs only seed 0). A failing seed of a
//! range of several is appended. A run of one named seed leaves the file
//! alone: `LIVESIM_SEED` (replaying one) or a test pinned to one.
//! `LIVESIM_REGRESSIONS` says what
//! to do: unset or `on` reads and writes, `read` only reads (CI: set
//! it, so a CI run never writes into its checkout), `off` neither.
//! `LIVESIM_REGRESSIONS_DIR` puts the files under another folder than the
//! crate's (the same relative paths).
//!
//! The format, with an example the runner reads: `docs/formats/regressions.md`.

use std::path::{Path, PathBuf};

use super::seed::Seed;
use crate::jsonl::TextFileError;

/// The folder regression files live in, under a source's top folder.
pub const REGRESSIONS_FOLDER: &str = "livesim-regressions";

/// What the environment lets the runner do with regression files.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Use {
    /// Read seeds and append failing ones.
    ReadWrite,
    /// Read seeds only.
    Read,
    /// Neither.
    Off,
}

impl Use {
    /// What `LIVESIM_REGRESSIONS` asks for.
    pub(crate) fn from_env() -> Result<Use, String> {
        match std::env::var("LIVESIM_REGRESSIONS") {
            Err(_) => Ok(Use::ReadWrite),
            Ok(value) => match value.trim() {
                "" | "on" | "1" => Ok(Use::ReadWrite),
                "read" => Ok(Use::Read),
                "off" | "0" => Ok(Use::Off),
                other => Err(format!(
                    "LIVESIM_REGRESSIONS: `{other}` is not a setting: write on (read and write \
                     the regressions file), read (read only; for CI) or off"
                )),
            },
        }
    }
}

/// The regression file of the tests in source file `file` (as `file!()`
/// gives it), for a crate whose manifest is in `manifest_dir`.
///
/// `file!()` is relative to the workspace's root, which may be a folder
/// above the crate's: the file is looked for under the manifest's folder
/// and each folder above it.
///
/// ```
/// use std::path::Path;
/// use livesim::executor::regressions_file;
///
/// let file = regressions_file("/work/app", "tests/kit/replay.rs");
/// assert_eq!(file, Path::new("/work/app/tests/livesim-regressions/kit/replay.seeds"));
/// let file = regressions_file("/work/app", "src/lib.rs");
/// assert_eq!(file, Path::new("/work/app/src/livesim-regressions/lib.seeds"));
/// ```
pub fn regressions_file(manifest_dir: impl AsRef<Path>, file: &str) -> PathBuf {
    let manifest_dir = manifest_dir.as_ref();
    let file = Path::new(file);
    let (root, relative) = if file.is_absolute() {
        match file.strip_prefix(manifest_dir) {
            Ok(relative) => (manifest_dir.to_path_buf(), relative.to_path_buf()),
            Err(_) => (
                file.parent().unwrap_or(Path::new("/")).to_path_buf(),
                PathBuf::from(file.file_name().unwrap_or_default()),
            ),
        }
    } else {
        // The workspace root is the first folder, from the manifest's up,
        // where the file is.
        let root = manifest_dir
            .ancestors()
            .find(|dir| dir.join(file).is_file())
            .unwrap_or(manifest_dir);
        match root.join(file).strip_prefix(manifest_dir) {
            Ok(relative) => (manifest_dir.to_path_buf(), relative.to_path_buf()),
            Err(_) => (root.to_path_buf(), file.to_path_buf()),
        }
    };
    let root = match std::env::var_os("LIVESIM_REGRESSIONS_DIR") {
        Some(dir) if !dir.is_empty() => PathBuf::from(dir),
        _ => root,
    };
    let mut parts = relative.components();
    let top = parts.next().map(|c| c.as_os_str().to_os_string());
    let rest: PathBuf = parts.collect();
    let mut out = root;
    match top {
        Some(top) if !rest.as_os_str().is_empty() => {
            out.push(top);
            out.push(REGRESSIONS_FOLDER);
            out.push(rest);
        }
        Some(top) => {
            out.push(REGRESSIONS_FOLDER);
            out.push(top);
        }
        None => out.push(REGRESSIONS_FOLDER),
    }
    out.set_extension("seeds");
    out
}

/// The seeds `file` records for `test`, in order; none when there is no
/// file (a symbolic link to nothing is an error, not "no file").
///
/// # Errors
/// A line that is not `<test> <seed>`, naming the file and line.
pub(crate) fn read(file: &Path, test: &str) -> Result<Vec<Seed>, String> {
    let text = match crate::jsonl::read_text_file(file) {
        Ok(text) => text,
        Err(TextFileError::Io(e)) if e.kind() == std::io::ErrorKind::NotFound => {
            // A link whose target moved is not "no seeds": its seeds would
            // silently stop running.
            return match std::fs::read_link(file) {
                Ok(target) => Err(format!(
                    "{}: it is a symbolic link to {}, which does not exist; point it at the \
                     seeds file or remove it",
                    file.display(),
                    target.display()
                )),
                Err(_) => Ok(Vec::new()),
            };
        }
        Err(TextFileError::Io(e)) => {
            return Err(format!("{}: cannot read it: {e}", file.display()));
        }
        Err(TextFileError::Content(problem)) => {
            return Err(format!("{}: {problem}", file.display()));
        }
    };
    let mut seeds = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let content = line.split('#').next().unwrap_or("").trim();
        if content.is_empty() {
            continue;
        }
        let mut words = content.split_whitespace();
        let (Some(name), Some(seed), None) = (words.next(), words.next(), words.next()) else {
            return Err(format!(
                "{}:{}: expected `<test path> <seed>` (then `# comment` if you like), \
                 found `{content}`",
                file.display(),
                i + 1
            ));
        };
        let seed: Seed = seed
            .parse()
            .map_err(|e| format!("{}:{}: {e}", file.display(), i + 1))?;
        if name == test && !seeds.contains(&seed) {
            seeds.push(seed);
        }
    }
    Ok(seeds)
}

/// Appends `seed` for `test` to `file` (made, with its header, if need
/// be), with `why` as its comment.
pub(crate) fn append(
    file: &Path,
    source: &str,
    test: &str,
    seed: Seed,
    why: &str,
) -> std::io::Result<()> {
    use std::io::Write as _;
    if let Some(parent) = file.parent() {
        std::fs::create_dir_all(parent)?;
    }
    let mut new = !file.exists();
    // A new file is made fresh (`create_new`): a symbolic link at its path
    // that leads nowhere is an error, not a file made wherever it points.
    let open = |create_new: bool| {
        std::fs::OpenOptions::new()
            .create_new(create_new)
            .append(true)
            .open(file)
    };
    let mut out = match (open(new), std::fs::read_link(file)) {
        (Ok(out), _) => out,
        (Err(e), Ok(target)) if new => {
            return Err(std::io::Error::new(
                e.kind(),
                format!(
                    "it is a symbolic link to {}, which does not exist, and livesim makes no \
                     file through a link ({e})",
                    target.display()
                ),
            ));
        }
        // Another test of the same file made it since: append after its header.
        (Err(e), Err(_)) if new && e.kind() == std::io::ErrorKind::AlreadyExists => {
            new = false;
            open(false)?
        }
        (Err(e), _) => return Err(e),
    };
    if new {
        writeln!(
            out,
            "# livesim regressions for {source}: seeds that once failed these tests.\n\
             # Each runs first, before the test's own seeds, every time the test runs.\n\
             # Commit this file. Format: `<test path> <seed>`, then `# what failed`."
        )?;
    }
    let why: String = why
        .lines()
        .next()
        .unwrap_or("")
        .chars()
        .filter(|c| !c.is_control())
        .take(160)
        .collect();
    writeln!(out, "{test} {seed}  # {why}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recorded_seeds_read_back_and_bad_lines_say_where() {
        let dir = scratch("livesim-regr-");
        let file = dir.path().join("x.seeds");
        assert_eq!(read(&file, "a::b"), Ok(Vec::new()));
        append(
            &file,
            "tests/x.rs",
            "a::b",
            Seed::new(0x2a),
            "panic\nsecond line",
        )
        .unwrap();
        append(&file, "tests/x.rs", "a::c", Seed::new(7), "other test").unwrap();
        append(&file, "tests/x.rs", "a::b", Seed::new(3), "again").unwrap();
        assert_eq!(read(&file, "a::b"), Ok(vec![Seed::new(0x2a), Seed::new(3)]));
        let text = std::fs::read_to_string(&file).unwrap();
        assert!(text.starts_with("# livesim regressions for tests/x.rs"));
        assert!(text.contains("a::b 0x2a  # panic\n"), "{text}");
        std::fs::write(&file, "a::b 0x1\na::b\n").unwrap();
        let err = read(&file, "a::b").unwrap_err();
        assert!(err.ends_with("x.seeds:2: expected `<test path> <seed>` (then `# comment` if you like), found `a::b`"), "{err}");
        std::fs::write(&file, "a::b zz\n").unwrap();
        assert!(
            read(&file, "a::b")
                .unwrap_err()
                .contains("x.seeds:1: `zz` is not a seed")
        );
    }

    /// A new regressions file is never made through a link to nowhere:
    /// it would land outside the folder, wherever the link points.
    #[cfg(unix)]
    #[test]
    fn a_link_to_nowhere_is_not_written_through() {
        let dir = scratch("livesim-regr-link-");
        let file = dir.path().join("x.seeds");
        let outside = dir.path().join("outside.seeds");
        std::os::unix::fs::symlink(&outside, &file).unwrap();
        let err = append(&file, "tests/x.rs", "a::b", Seed::new(1), "why").unwrap_err();
        assert!(
            err.to_string().starts_with(&format!(
                "it is a symbolic link to {}, which does not exist",
                outside.display()
            )),
            "{err}"
        );
        assert!(!outside.exists());
    }

    /// A folder of its own, removed when the test ends, pass or fail.
    fn scratch(prefix: &str) -> tempfile::TempDir {
        tempfile::Builder::new().prefix(prefix).tempdir().unwrap()
    }
}
