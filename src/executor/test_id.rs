//! Which test is running, so a failure can say how to run it again.
//!
//! The replay command needs the cargo target (`--lib`, `--test <file>`) and
//! the test's path inside it. [`test_id!`](crate::test_id) works both out
//! from where it is written: `file!()` gives the target, and the type name
//! of a function item declared on the spot gives the module path.

use std::fmt;

use super::seed::Seed;

/// The cargo target a test lives in.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Target {
    /// Unit tests in the library (`cargo test --lib`).
    Lib,
    /// An integration test file `tests/<name>.rs` (`cargo test --test <name>`).
    Test(String),
    /// A benchmark file `benches/<name>.rs`.
    Bench(String),
    /// An example `examples/<name>.rs`.
    Example(String),
}

/// A test's cargo target and its path inside the target.
///
/// ```
/// use livesim::Seed;
/// use livesim::executor::{Target, TestId};
///
/// let id = TestId::new(Target::Test("executor".into()), "lanes::interleave");
/// assert_eq!(
///     id.replay_command(Seed::new(0x2a)),
///     "LIVESIM_SEED=0x2a cargo test --test executor lanes::interleave -- --exact"
/// );
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TestId {
    /// Where the test lives.
    pub target: Target,
    /// The test's path as libtest names it (`module::test_fn`).
    pub name: String,
    /// Whether the test is `#[ignore]`d, so its replay line must ask
    /// libtest to run it (`--include-ignored`).
    pub ignored: bool,
}

impl TestId {
    /// A test id from its parts.
    pub fn new(target: Target, name: impl Into<String>) -> Self {
        TestId {
            target,
            name: name.into(),
            ignored: false,
        }
    }

    /// The same test, marked `#[ignore]`d: its replay line adds
    /// `--include-ignored`, without which libtest would run nothing.
    /// `#[livesim::test]` marks ignored tests itself; call this when you
    /// use a [`Runner`](super::Runner) in an ignored `#[test]`.
    ///
    /// ```
    /// use livesim::Seed;
    /// use livesim::executor::{Target, TestId};
    ///
    /// let id = TestId::new(Target::Test("soak".into()), "long_soak").ignored();
    /// assert_eq!(
    ///     id.replay_command(Seed::new(3)),
    ///     "LIVESIM_SEED=0x3 cargo test --test soak long_soak -- --exact --include-ignored"
    /// );
    /// ```
    pub fn ignored(mut self) -> Self {
        self.ignored = true;
        self
    }

    /// Works out a test id from `file!()` and the type name of a function
    /// item declared inside the test. Prefer the [`test_id!`](crate::test_id)
    /// macro, which passes both.
    pub fn from_location(file: &str, item_type_name: &str) -> Self {
        let file = file.replace('\\', "/");
        let target = target_of(&file);
        let mut segments: Vec<&str> = item_type_name
            .split("::")
            .filter(|s| !s.starts_with("{{"))
            .collect();
        segments.pop(); // the marker function itself
        if !segments.is_empty() {
            segments.remove(0); // the crate name
        }
        TestId {
            target,
            name: segments.join("::"),
            ignored: false,
        }
    }

    /// The cargo arguments that select this test's target.
    pub fn target_args(&self) -> String {
        match &self.target {
            Target::Lib => "--lib".to_string(),
            Target::Test(name) => format!("--test {name}"),
            Target::Bench(name) => format!("--bench {name}"),
            Target::Example(name) => format!("--example {name}"),
        }
    }

    /// The one line that replays `seed` of this test exactly.
    pub fn replay_command(&self, seed: Seed) -> String {
        format!(
            "LIVESIM_SEED={seed} cargo test {} {} -- --exact{}",
            self.target_args(),
            self.name,
            if self.ignored {
                " --include-ignored"
            } else {
                ""
            }
        )
    }
}

impl TestId {
    /// The one line that replays a kept soak case, the corpus file
    /// `file`, in this test (the soak reads `LIVESIM_CASE`).
    ///
    /// ```
    /// use std::path::Path;
    /// use livesim::executor::{Target, TestId};
    ///
    /// let id = TestId::new(Target::Test("soak".into()), "cart_soak");
    /// assert_eq!(
    ///     id.replay_case_command(Path::new("seeds/cart/0x1.json")),
    ///     "LIVESIM_CASE=seeds/cart/0x1.json cargo test --test soak cart_soak -- --exact"
    /// );
    /// ```
    pub fn replay_case_command(&self, file: &std::path::Path) -> String {
        format!(
            "LIVESIM_CASE={} cargo test {} {} -- --exact{}",
            file.display(),
            self.target_args(),
            self.name,
            if self.ignored {
                " --include-ignored"
            } else {
                ""
            }
        )
    }
}

impl TestId {
    /// The test this thread runs, when the std test harness runs it: the
    /// harness names each test's thread after the test's path
    /// (`module::test_fn`), and cargo names the test binary after its
    /// target (`corpus-4bddcf13cd7422ef` for `tests/corpus.rs`, the
    /// crate's own name for its unit tests). What a soak without
    /// [`Soak::test`](crate::soak::Soak::test) prints its replay lines
    /// with. `None` where that cannot be told: outside the harness (a
    /// `main`, an example, a thread of one's own), or a binary target's
    /// tests (`--bin`, which a [`Target`] cannot say).
    #[cfg(feature = "simulation")]
    pub(crate) fn current() -> Option<TestId> {
        let thread = std::thread::current();
        let name = thread.name().filter(|n| *n != "main" && !n.is_empty())?;
        let exe = std::env::current_exe().ok()?;
        let stem = exe.file_stem()?.to_str()?;
        // Cargo's test binaries end in `-` and a 16-digit hash; anything
        // else was not built by `cargo test`.
        let (binary, hash) = stem.rsplit_once('-')?;
        if hash.len() != 16 || !hash.chars().all(|c| c.is_ascii_hexdigit()) {
            return None;
        }
        let target = cargo_target(binary)?;
        let args: Vec<String> = std::env::args().collect();
        let id = TestId::new(target, name);
        Some(
            if args
                .iter()
                .any(|a| a == "--ignored" || a == "--include-ignored")
            {
                id.ignored()
            } else {
                id
            },
        )
    }
}

/// The cargo target test binary `binary` (its name, hash removed) was
/// built from, by the package `cargo test` runs (`CARGO_MANIFEST_DIR`,
/// `CARGO_PKG_NAME`, which cargo sets for the tests it runs).
#[cfg(feature = "simulation")]
fn cargo_target(binary: &str) -> Option<Target> {
    let package = std::env::var("CARGO_PKG_NAME").ok()?;
    let manifest = std::path::PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR")?);
    let has = |dir: &str, name: &str| {
        manifest.join(dir).join(format!("{name}.rs")).is_file()
            || manifest.join(dir).join(name).join("main.rs").is_file()
    };
    // A binary is named after its crate, `-` made `_`; a file may keep
    // its `-`.
    let named = [binary.to_string(), binary.replace('_', "-")];
    if binary == package.replace('-', "_") {
        // The crate's own name: its unit tests, or a `src/main.rs` of the
        // same name, which `--lib` would not run.
        let lib = manifest.join("src").join("lib.rs").is_file();
        return lib.then_some(Target::Lib);
    }
    if let Some(name) = named.iter().find(|n| has("tests", n)) {
        return Some(Target::Test(name.clone()));
    }
    if let Some(name) = named.iter().find(|n| has("benches", n)) {
        return Some(Target::Bench(name.clone()));
    }
    if let Some(name) = named.iter().find(|n| has("examples", n)) {
        return Some(Target::Example(name.clone()));
    }
    if named.iter().any(|n| has("src/bin", n)) {
        return None;
    }
    // A test target named in the manifest (`[[test]] name = …`): cargo
    // names its binary after it, as `--test` does.
    Some(Target::Test(binary.to_string()))
}

impl fmt::Display for TestId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({})", self.name, self.target_args())
    }
}

fn target_of(file: &str) -> Target {
    let stem_after = |dir: &str| -> Option<String> {
        let rest = file.split(dir).nth(1)?;
        let first = rest.split('/').next()?;
        Some(first.strip_suffix(".rs").unwrap_or(first).to_string())
    };
    if let Some(name) = stem_after("tests/") {
        Target::Test(name)
    } else if let Some(name) = stem_after("benches/") {
        Target::Bench(name)
    } else if let Some(name) = stem_after("examples/") {
        Target::Example(name)
    } else {
        Target::Lib
    }
}

/// The type name of a value's type; the [`test_id!`](crate::test_id) macro
/// uses it on a function item to learn the module path it sits in.
pub fn type_name_of<T>(_: T) -> &'static str {
    std::any::type_name::<T>()
}

/// The [`TestId`] of the test this is written in.
///
/// ```
/// let id = livesim::test_id!();
/// assert!(id.name.ends_with("main") || !id.name.is_empty());
/// ```
#[macro_export]
macro_rules! test_id {
    () => {
        $crate::executor::TestId::from_location(file!(), {
            fn __livesim_here() {}
            $crate::executor::type_name_of(__livesim_here)
        })
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integration_test_paths() {
        let id = TestId::from_location(
            "tests/executor.rs",
            "executor::lanes::interleave::{{closure}}::__livesim_here",
        );
        assert_eq!(id.target, Target::Test("executor".into()));
        assert_eq!(id.name, "lanes::interleave");
        let id = TestId::from_location("tests/flow/main.rs", "main::f::__livesim_here");
        assert_eq!(id.target, Target::Test("flow".into()));
        assert_eq!(id.name, "f");
    }

    #[test]
    fn library_paths() {
        let id = test_id!();
        assert_eq!(id.target, Target::Lib);
        assert_eq!(id.name, "executor::test_id::tests::library_paths");
        assert_eq!(
            id.replay_command(Seed::new(1)),
            "LIVESIM_SEED=0x1 cargo test --lib executor::test_id::tests::library_paths -- --exact"
        );
    }

    /// Under `cargo test`, the running test is known without `test_id!`:
    /// the harness's thread name and the binary's name.
    #[test]
    #[cfg(feature = "simulation")]
    fn the_running_test_is_known() {
        let id = TestId::current().expect("run by cargo test's harness");
        let written = test_id!();
        assert_eq!((id.target, id.name), (written.target, written.name));
    }
}
