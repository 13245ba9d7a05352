//! Scratch folders for a test's files: each a fresh folder under the
//! system temp directory, removed with everything in it when its guard is
//! dropped. A test's guard is dropped when the test ends, pass or fail (a
//! panic's unwinding drops it too), so runs of `cargo test` leave no
//! folders behind. Shared by the test binaries through `#[path]`.

use std::ffi::OsStr;
use std::ops::Deref;
use std::path::{Path, PathBuf};

/// A scratch folder, removed when dropped. It derefs to its path, so
/// `dir.join("f")`, `dir.display()` and `&dir` read as they would with a
/// `PathBuf`. Keep the guard itself for as long as the folder is used:
/// `scratch("x").join("f")` drops it, and the folder, at once.
pub struct Scratch {
    path: PathBuf,
    folder: tempfile::TempDir,
}

/// A fresh, empty folder named `livesim-{name}-` and a few random
/// characters: the name still says which test made it.
pub fn scratch(name: &str) -> Scratch {
    let folder = tempfile::Builder::new()
        .prefix(&format!("livesim-{name}-"))
        .tempdir()
        .expect("a scratch folder in the temp directory");
    Scratch {
        path: folder.path().to_path_buf(),
        folder,
    }
}

impl Scratch {
    /// The same guard standing for `name` inside the folder (not made
    /// here), for a helper whose callers want that path: dropping it
    /// still removes the whole scratch folder.
    #[allow(dead_code)] // not every test binary needs it
    pub fn inside(self, name: &str) -> Scratch {
        Scratch {
            path: self.folder.path().join(name),
            folder: self.folder,
        }
    }
}

impl Deref for Scratch {
    type Target = Path;

    fn deref(&self) -> &Path {
        &self.path
    }
}

impl AsRef<Path> for Scratch {
    fn as_ref(&self) -> &Path {
        &self.path
    }
}

impl AsRef<OsStr> for Scratch {
    fn as_ref(&self) -> &OsStr {
        self.path.as_os_str()
    }
}
