//! Running the built binary, and scratch folders for its files.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// What one run of `livesim` did.
#[derive(Debug)]
pub struct Run {
    /// The exit status (`None` if a signal ended it).
    pub code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
}

impl Run {
    /// Asserts the exit status, showing everything the run printed if not.
    #[track_caller]
    pub fn expect(self, code: i32) -> Run {
        assert_eq!(self.code, Some(code), "{self:#?}");
        assert!(!self.stderr.contains("panicked"), "{self:#?}");
        self
    }
}

/// Runs `livesim ARGS` in the package folder, with `stdin` as its input.
pub fn livesim_with_stdin<S: AsRef<std::ffi::OsStr>>(args: &[S], stdin: &[u8]) -> Run {
    livesim_in(package(), args, stdin)
}

/// Runs `livesim ARGS` in folder `dir`, with `stdin` as its input.
pub fn livesim_in<S: AsRef<std::ffi::OsStr>>(dir: &Path, args: &[S], stdin: &[u8]) -> Run {
    let mut child = Command::new(env!("CARGO_BIN_EXE_livesim"))
        .args(args)
        .current_dir(dir)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the livesim binary runs");
    let mut input = child.stdin.take().expect("stdin is piped");
    // A command that does not read stdin may exit before we finish
    // writing; that is not an error here.
    let _ = input.write_all(stdin);
    drop(input);
    let out = child
        .wait_with_output()
        .expect("the livesim binary finishes");
    Run {
        code: out.status.code(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// Runs `livesim ARGS` in the package folder with empty stdin.
pub fn livesim<S: AsRef<std::ffi::OsStr>>(args: &[S]) -> Run {
    livesim_with_stdin(args, b"")
}

/// A fresh, empty folder for one test's files, removed when dropped.
pub struct Scratch(PathBuf);

impl std::ops::Deref for Scratch {
    type Target = Path;
    fn deref(&self) -> &Path {
        &self.0
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A fresh, empty scratch folder named for the test.
pub fn scratch(name: &str) -> Scratch {
    let dir = std::env::temp_dir().join(format!("livesim-incidents-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("a scratch folder");
    Scratch(dir)
}

/// Writes `text` as `name` in `dir`; returns its path.
pub fn write(dir: &Path, name: &str, text: impl AsRef<[u8]>) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, text).expect("a scratch file");
    path
}

/// A path as an argument.
pub fn arg(path: &Path) -> String {
    path.display().to_string()
}

/// The package folder.
pub fn package() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}
