//! The results stick: `bootmark/results/<run-id>.jsonl` on the mounted
//! results partition, rewritten atomically after every record (temp file,
//! fsync, rename, fsync of the directory), so a crash mid-run keeps every
//! record written so far and never leaves a half file. An earlier run's file
//! is never overwritten: a taken name gets a suffix.

use super::Sink;
use crate::record::Record;
use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};

pub struct Stick {
    dir: PathBuf,
    name: String,
    lines: Vec<u8>,
}

impl Stick {
    /// Prepare `results_dir` (created if needed) and pick a file name no
    /// earlier run used.
    pub fn create(results_dir: &Path, run_id: &str) -> io::Result<Stick> {
        std::fs::create_dir_all(results_dir)?;
        let mut name = format!("{run_id}.jsonl");
        let mut n = 2;
        while results_dir.join(&name).exists() {
            name = format!("{run_id}-{n}.jsonl");
            n += 1;
        }
        Ok(Stick { dir: results_dir.to_path_buf(), name, lines: Vec::new() })
    }

    pub fn path(&self) -> PathBuf {
        self.dir.join(&self.name)
    }

    /// Append one JSON document (a record or the run record) and commit.
    pub fn append(&mut self, json: &[u8]) -> io::Result<()> {
        self.lines.extend_from_slice(json);
        self.lines.push(b'\n');
        self.commit()
    }

    fn commit(&self) -> io::Result<()> {
        let tmp = self.dir.join(format!(".{}.tmp", self.name));
        let mut f = OpenOptions::new().write(true).create(true).truncate(true).open(&tmp)?;
        f.write_all(&self.lines)?;
        f.sync_all()?;
        drop(f);
        std::fs::rename(&tmp, self.path())?;
        File::open(&self.dir)?.sync_all()
    }
}

impl Sink for Stick {
    fn write(&mut self, record: &Record) -> io::Result<()> {
        self.append(&serde_json::to_vec(record)?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn appends_atomically_and_never_reuses_a_name() {
        let dir = std::env::temp_dir().join(format!("bootmark-stick-{}", std::process::id()));
        let results = dir.join("bootmark/results");
        let mut a = Stick::create(&results, "run1").unwrap();
        a.append(b"{\"a\":1}").unwrap();
        a.append(b"{\"a\":2}").unwrap();
        assert_eq!(std::fs::read_to_string(a.path()).unwrap(), "{\"a\":1}\n{\"a\":2}\n");
        // Same run id again (a clock reset on a machine without RTC): a new file.
        let mut b = Stick::create(&results, "run1").unwrap();
        b.append(b"{\"b\":1}").unwrap();
        assert_eq!(b.path().file_name().unwrap(), "run1-2.jsonl");
        assert_eq!(std::fs::read_to_string(a.path()).unwrap(), "{\"a\":1}\n{\"a\":2}\n", "earlier run untouched");
        let names: Vec<String> = std::fs::read_dir(&results)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        assert!(names.iter().all(|n| !n.ends_with(".tmp")), "no temp files left: {names:?}");
        crate::fsutil::remove_tree(&dir).unwrap();
    }

    #[test]
    fn a_read_only_results_dir_is_an_error_not_a_crash() {
        let dir = std::env::temp_dir().join(format!("bootmark-stick-ro-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let mut s = Stick::create(&dir, "r").unwrap();
        std::fs::remove_dir(&dir).unwrap(); // the stick was pulled
        assert!(s.append(b"{}").is_err());
    }
}
