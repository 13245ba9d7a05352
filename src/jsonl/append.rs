//! Appending whole lines to a JSONL file, repairing its end first.
//!
//! Our JSONL writers (tapes, journals) append one record per line, each
//! written whole with one write, so a crash leaves at most a torn last
//! line (and, on some file systems, NUL bytes or half a block after it).
//! When such a file is opened to be appended to, its end needs care: the
//! damaged end must be cut off (or the next record would glue onto it and
//! become a bad line in the middle), and a complete last line that lacks
//! its newline (as an editor may leave it) needs one first. A
//! [`LineAppender`] remembers which, and does it before its first write.

use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};

/// Writes whole lines at the end of a JSONL file.
#[derive(Debug)]
pub struct LineAppender {
    path: PathBuf,
    /// Opened for appending at the first write, so a file only read never
    /// needs write access.
    file: Option<File>,
    /// The length of the file's complete content: every byte before it
    /// belongs to a whole line.
    end: u64,
    /// Bytes after `end` are not a whole record (a torn last line, or a
    /// write that failed half-way) and are cut off first.
    cut_to_end: bool,
    /// The line ending at `end` is complete but has no newline.
    newline_first: bool,
}

impl LineAppender {
    /// Creates (or empties) the file at `path`.
    pub fn create(path: impl AsRef<Path>) -> io::Result<Self> {
        let path = path.as_ref().to_path_buf();
        let file = File::create(&path)?;
        Ok(LineAppender {
            path,
            file: Some(file),
            end: 0,
            cut_to_end: false,
            newline_first: false,
        })
    }

    /// Appends to the existing file at `path` (it must still exist when the
    /// first line is written) whose content is `bytes`; `damaged_from` is
    /// where its damaged end starts (a torn last line, or a torn line and
    /// the garbage after it, as the JSONL reader found it:
    /// [`TornLine::offset`](super::TornLine::offset)), which is cut off
    /// before the first write.
    pub fn after(path: impl AsRef<Path>, bytes: &[u8], damaged_from: Option<u64>) -> Self {
        let path = path.as_ref().to_path_buf();
        match damaged_from {
            Some(offset) => LineAppender {
                path,
                file: None,
                end: offset.min(bytes.len() as u64),
                cut_to_end: true,
                newline_first: false,
            },
            None => LineAppender {
                path,
                file: None,
                end: bytes.len() as u64,
                cut_to_end: false,
                // Only the last line can lack its newline.
                newline_first: !Self::tail(bytes).is_empty(),
            },
        }
    }

    /// The bytes after the file's last newline, when `bytes` is its content.
    pub fn tail(bytes: &[u8]) -> &[u8] {
        let whole_lines = bytes
            .iter()
            .rposition(|&b| b == b'\n')
            .map_or(0, |at| at + 1);
        &bytes[whole_lines..]
    }

    /// The file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Writes `line` (a record and its newline) after the file's complete
    /// content, repairing the end first if it needs it.
    pub fn append(&mut self, line: &[u8]) -> io::Result<()> {
        let file = match &mut self.file {
            Some(file) => file,
            None => self
                .file
                .insert(OpenOptions::new().append(true).open(&self.path)?),
        };
        if self.cut_to_end {
            file.set_len(self.end)?;
            self.cut_to_end = false;
        }
        let mut bytes = Vec::with_capacity(line.len() + 1);
        if self.newline_first {
            bytes.push(b'\n');
        }
        bytes.extend_from_slice(line);
        // One write of the whole line: a crash leaves at most a torn last
        // line. If it fails half-way, what it wrote is cut off next time.
        if let Err(e) = file.write_all(&bytes) {
            self.cut_to_end = true;
            return Err(e);
        }
        self.end += bytes.len() as u64;
        self.newline_first = false;
        Ok(())
    }

    /// Flushes the file's data to disk.
    pub fn sync(&mut self) -> io::Result<()> {
        match &mut self.file {
            Some(file) => file.sync_data(),
            None => Ok(()),
        }
    }
}
