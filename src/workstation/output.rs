//! Where the workstation's commands write: never over one of their inputs,
//! and never half a file. An output is refused when it is an input (the
//! same device and inode, whatever the path says), and it is written to a
//! temporary file beside it that is renamed into place only when complete,
//! so an interrupted or failed run leaves the old file whole.

use std::io::Write;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// A progress line on stdout, flushed at once (a lab's or a bisect's
/// lines come from several threads, each line whole); a closed stdout
/// does not stop the work it tells of.
pub fn say(text: &str) {
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{text}");
    let _ = out.flush();
}

/// Refuse `output` when it is one of `inputs` (or inside an input
/// directory that is read as a stick). Names both in the error.
pub fn check_not_an_input(output: &Path, flag: &str, inputs: &[PathBuf]) -> Result<(), String> {
    let Ok(out) = std::fs::metadata(output) else { return Ok(()) }; // a new file is no input
    for input in inputs {
        let Ok(meta) = std::fs::metadata(input) else { continue };
        if (meta.dev(), meta.ino()) == (out.dev(), out.ino()) {
            return Err(format!(
                "{flag} {} is the input {}: writing it would destroy what is being read; write elsewhere",
                output.display(),
                input.display()
            ));
        }
    }
    Ok(())
}

/// `dir/name` replaced by `bytes` whole or not at all, and on disk when
/// this returns: written beside it, synced, renamed, and the directory
/// synced (the rename itself reaches the disk only then). What a state
/// file written after every step needs to survive a crash at any moment.
pub fn replace_synced(dir: &Path, name: &str, bytes: &[u8]) -> Result<(), String> {
    let path = dir.join(name);
    let mut pending = Pending::create(&path)?;
    pending.write_all(bytes).map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    pending.commit()?;
    std::fs::File::open(dir).and_then(|d| d.sync_all()).map_err(|e| format!("cannot sync {}: {e}", dir.display()))
}

/// A file being written: bytes go to `.NAME.tmp-PID` beside it, which
/// `commit` renames to NAME. Dropped without `commit`, it is removed.
pub struct Pending {
    path: PathBuf,
    tmp: PathBuf,
    file: Option<std::io::BufWriter<std::fs::File>>,
}

impl Pending {
    pub fn create(path: &Path) -> Result<Pending, String> {
        let name = path.file_name().ok_or_else(|| format!("{}: not a file name", path.display()))?;
        // Made new, never opened through what is there and never removing
        // it: a name that is taken (a link, anyone's file) is passed over for the next.
        let mut last = None;
        for attempt in 0..16 {
            let tmp = path.with_file_name(format!(".{}.tmp-{}-{attempt}", name.to_string_lossy(), std::process::id()));
            match std::fs::File::options().write(true).create_new(true).open(&tmp) {
                Ok(file) => {
                    return Ok(Pending { path: path.to_path_buf(), tmp, file: Some(std::io::BufWriter::new(file)) });
                }
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => last = Some(e),
                // Named as the user gave it: the temporary file beside it is ours, not theirs.
                Err(e) => return Err(format!("cannot write {}: {e}", path.display())),
            }
        }
        Err(format!("cannot write {}: its temporary names beside it are all taken ({last:?})", path.display()))
    }

    /// Flush, sync and rename into place.
    pub fn commit(mut self) -> Result<(), String> {
        let file = self.file.take().expect("committed once");
        let file = file.into_inner().map_err(|e| format!("cannot write {}: {}", self.path.display(), e.error()))?;
        file.sync_all().map_err(|e| format!("cannot write {}: {e}", self.path.display()))?;
        std::fs::rename(&self.tmp, &self.path)
            .map_err(|e| format!("cannot rename {} to {}: {e}", self.tmp.display(), self.path.display()))
    }
}

impl Write for Pending {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.file.as_mut().expect("not committed").write(buf)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.file.as_mut().expect("not committed").flush()
    }
}

impl Drop for Pending {
    fn drop(&mut self) {
        if self.file.take().is_some() {
            let _ = std::fs::remove_file(&self.tmp);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_output_that_is_an_input_is_refused_by_inode_not_by_name() {
        let dir = std::env::temp_dir().join(format!("bootmark-output-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let input = dir.join("records.jsonl");
        std::fs::write(&input, "kept\n").unwrap();
        let alias = dir.join("alias.jsonl");
        std::fs::hard_link(&input, &alias).unwrap();
        let err = check_not_an_input(&alias, "--out", std::slice::from_ref(&input)).unwrap_err();
        assert!(err.contains("--out") && err.contains("is the input"), "{err}");
        assert!(check_not_an_input(&dir.join("new.jsonl"), "--out", std::slice::from_ref(&input)).is_ok());
        // Written whole or not at all.
        let mut p = Pending::create(&input).unwrap();
        p.write_all(b"half").unwrap();
        drop(p);
        assert_eq!(std::fs::read_to_string(&input).unwrap(), "kept\n", "a dropped write leaves the old file");
        let mut p = Pending::create(&input).unwrap();
        p.write_all(b"new\n").unwrap();
        p.commit().unwrap();
        assert_eq!(std::fs::read_to_string(&input).unwrap(), "new\n");
        assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 2, "no temporary file left");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
