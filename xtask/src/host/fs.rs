//! Files and errors that say what was being done: `std::fs` as xtask uses
//! it, each failure naming its path ("cannot copy A to B: No such file or
//! directory"), and [`Context`] for the other fallible calls.
//!
//! Why not anyhow: xtask's errors are only ever printed for a person, never
//! matched or downcast, and are `String`s throughout; "what was done: why"
//! as one string is what anyhow's `{:#}` would print. These few functions
//! and one trait give the same message with no new dependency and no change
//! to every signature. (The image side keeps its own dependency-free errors.)

use crate::host::project::Result;
use std::fmt::Display;
use std::fs::{File, Metadata, ReadDir};
use std::path::Path;

/// Context for any fallible call: `what` was being done when it failed.
pub trait Context<T> {
    /// `Err(e)` becomes `"{what}: {e}"`.
    fn context(self, what: impl Display) -> Result<T>;
    /// As `context`, with the message built only on failure.
    fn with_context<D: Display>(self, what: impl FnOnce() -> D) -> Result<T>;
}

impl<T, E: Display> Context<T> for std::result::Result<T, E> {
    fn context(self, what: impl Display) -> Result<T> {
        self.map_err(|e| format!("{what}: {e}"))
    }
    fn with_context<D: Display>(self, what: impl FnOnce() -> D) -> Result<T> {
        self.map_err(|e| format!("{}: {e}", what()))
    }
}

pub fn read(path: impl AsRef<Path>) -> Result<Vec<u8>> {
    let path = path.as_ref();
    std::fs::read(path).with_context(|| format!("cannot read {}", path.display()))
}

pub fn read_to_string(path: impl AsRef<Path>) -> Result<String> {
    let path = path.as_ref();
    std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))
}

pub fn write(path: impl AsRef<Path>, data: impl AsRef<[u8]>) -> Result<()> {
    let path = path.as_ref();
    std::fs::write(path, data).with_context(|| format!("cannot write {}", path.display()))
}

/// `write`, creating the directories above `path` first.
pub fn write_creating_dirs(path: impl AsRef<Path>, data: impl AsRef<[u8]>) -> Result<()> {
    let path = path.as_ref();
    if let Some(parent) = path.parent() {
        create_dir_all(parent)?;
    }
    write(path, data)
}

/// A file's size as people read it (`1.2 MiB`); `?` when it cannot be read.
pub fn human_size(path: &Path) -> String {
    std::fs::metadata(path).map_or("?".into(), |m| bootmark::size::human(m.len()))
}

pub fn create_dir_all(path: impl AsRef<Path>) -> Result<()> {
    let path = path.as_ref();
    std::fs::create_dir_all(path).with_context(|| format!("cannot create the directory {}", path.display()))
}

pub fn copy(from: impl AsRef<Path>, to: impl AsRef<Path>) -> Result<u64> {
    let (from, to) = (from.as_ref(), to.as_ref());
    std::fs::copy(from, to).with_context(|| format!("cannot copy {} to {}", from.display(), to.display()))
}

pub fn rename(from: impl AsRef<Path>, to: impl AsRef<Path>) -> Result<()> {
    let (from, to) = (from.as_ref(), to.as_ref());
    std::fs::rename(from, to).with_context(|| format!("cannot rename {} to {}", from.display(), to.display()))
}

pub fn remove_dir_all(path: impl AsRef<Path>) -> Result<()> {
    let path = path.as_ref();
    std::fs::remove_dir_all(path).with_context(|| format!("cannot remove {}", path.display()))
}

pub fn remove_file(path: impl AsRef<Path>) -> Result<()> {
    let path = path.as_ref();
    std::fs::remove_file(path).with_context(|| format!("cannot remove {}", path.display()))
}

pub fn read_dir(path: impl AsRef<Path>) -> Result<ReadDir> {
    let path = path.as_ref();
    std::fs::read_dir(path).with_context(|| format!("cannot list {}", path.display()))
}

pub fn metadata(path: impl AsRef<Path>) -> Result<Metadata> {
    let path = path.as_ref();
    std::fs::metadata(path).with_context(|| format!("cannot stat {}", path.display()))
}

pub fn create(path: impl AsRef<Path>) -> Result<File> {
    let path = path.as_ref();
    File::create(path).with_context(|| format!("cannot create {}", path.display()))
}

pub fn open(path: impl AsRef<Path>) -> Result<File> {
    let path = path.as_ref();
    File::open(path).with_context(|| format!("cannot open {}", path.display()))
}

/// The SHA-256 of a file, in hex, read in 1 MiB pieces.
pub fn sha256_file(path: &Path) -> Result<String> {
    use sha2::{Digest, Sha256};
    use std::io::Read;
    let mut f = open(path)?;
    let mut h = Sha256::new();
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let n = f.read(&mut buf).with_context(|| format!("cannot read {}", path.display()))?;
        if n == 0 {
            break;
        }
        h.update(&buf[..n]);
    }
    Ok(h.finalize().iter().map(|b| format!("{b:02x}")).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failure_names_what_was_done_and_the_path() {
        let missing = std::env::temp_dir().join("bootmark-no-such-dir/kernel");
        let e = copy(&missing, "/tmp/x").unwrap_err();
        assert!(e.starts_with(&format!("cannot copy {} to /tmp/x: ", missing.display())), "{e}");
        assert!(e.contains("No such file or directory"), "{e}");
        assert!(read(&missing).unwrap_err().starts_with(&format!("cannot read {}: ", missing.display())));
        let e = "x".parse::<u32>().context("reading the sector count").unwrap_err();
        assert_eq!(e, "reading the sector count: invalid digit found in string");
        let f = std::env::temp_dir().join(format!("bootmark-sha-{}", std::process::id()));
        write(&f, b"abc").unwrap();
        assert_eq!(sha256_file(&f).unwrap(), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
        remove_file(&f).unwrap();
    }
}
