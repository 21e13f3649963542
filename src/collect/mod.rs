//! The collector: serial logs, stick directories and stick images in,
//! validated documents out, and a precise account of everything that could
//! not be used. Nothing here touches /proc or devices.
//!
//! A document is a `bootmark.result/1` record or a `bootmark.run/1` record.
//! From serial, only documents whose SHA-256 matched are accepted; from a
//! stick, only lines that parse as JSON with a known schema. The same
//! document seen twice (serial and stick) is kept once; two different
//! documents under the same (schema, run_id, seq) are both reported.

pub mod serial;
pub mod stick;

use serde::Serialize;
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Something that could not be used, and exactly where.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Problem {
    pub file: String,
    /// Line number in a log (1-based), when it applies.
    pub line: Option<u64>,
    pub run_id: Option<String>,
    pub seq: Option<u32>,
    pub why: String,
}

/// A boot seen in a serial log, and what it printed.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct BootSeen {
    pub file: String,
    /// Line of the `Linux version` banner (0 when the capture starts mid-boot).
    pub line: u64,
    pub kernel: Option<String>,
    pub documents: usize,
    pub panics: usize,
    pub oopses: usize,
    pub hung_tasks: usize,
    /// A boot that printed no complete document: never finished, or crashed.
    pub no_results: bool,
}

#[derive(Debug, Default, Serialize)]
pub struct Collected {
    /// Accepted documents, in the order first seen.
    pub documents: Vec<Value>,
    pub problems: Vec<Problem>,
    pub boots: Vec<BootSeen>,
    /// Documents seen more than once with identical content.
    pub duplicates: usize,
}

pub const RESULT_SCHEMA: &str = crate::record::SCHEMA;
pub const RUN_SCHEMA: &str = "bootmark.run/1";

fn key(doc: &Value) -> Option<(String, String, u64)> {
    Some((doc["schema"].as_str()?.to_string(), doc["run_id"].as_str()?.to_string(), doc["seq"].as_u64()?))
}

impl Collected {
    /// Add an accepted document, deduplicating against earlier sources.
    pub fn accept(&mut self, doc: Value, file: &str, index: &mut BTreeMap<(String, String, u64), usize>) {
        let Some(k) = key(&doc) else {
            self.problems.push(Problem {
                file: file.into(),
                line: None,
                run_id: None,
                seq: None,
                why: "a document without schema/run_id/seq".into(),
            });
            return;
        };
        match index.get(&k) {
            Some(&i) if self.documents[i] == doc => self.duplicates += 1,
            Some(_) => self.problems.push(Problem {
                file: file.into(),
                line: None,
                run_id: Some(k.1.clone()),
                seq: Some(k.2 as u32),
                why: "a different document with the same run id and seq was seen in another source: both kept out of agreement checks, the first is used".into(),
            }),
            None => {
                index.insert(k, self.documents.len());
                self.documents.push(doc);
            }
        }
    }

    pub fn results(&self) -> impl Iterator<Item = &Value> {
        self.documents.iter().filter(|d| d["schema"] == RESULT_SCHEMA)
    }
}

/// What kind of input a path is.
pub enum Input {
    SerialLog(PathBuf),
    StickDir(PathBuf),
    StickImage(PathBuf),
}

/// Guess: a directory is a stick (or its bootmark/results); a file starting
/// with an MBR or FAT boot sector is a stick image; anything else is a log.
pub fn classify(path: &Path) -> std::io::Result<Input> {
    if path.is_dir() {
        return Ok(Input::StickDir(path.to_path_buf()));
    }
    let mut head = [0u8; 512];
    use std::io::Read;
    let n = std::fs::File::open(path)?.read(&mut head)?;
    let jsonl = path.extension().is_some_and(|e| e == "jsonl");
    if !jsonl && n == 512 && head[510] == 0x55 && head[511] == 0xaa {
        return Ok(Input::StickImage(path.to_path_buf()));
    }
    Ok(if jsonl { Input::StickDir(path.to_path_buf()) } else { Input::SerialLog(path.to_path_buf()) })
}

/// Collect from every input, in order.
pub fn collect(inputs: &[PathBuf]) -> Collected {
    let mut c = Collected::default();
    let mut index = BTreeMap::new();
    for path in inputs {
        let file = path.display().to_string();
        let r = match classify(path) {
            Ok(Input::SerialLog(p)) => serial::collect_log(&p, &mut c, &mut index),
            Ok(Input::StickDir(p)) => stick::collect_dir(&p, &mut c, &mut index),
            Ok(Input::StickImage(p)) => stick::collect_image(&p, &mut c, &mut index),
            Err(e) => Err(e),
        };
        if let Err(e) = r {
            c.problems.push(Problem { file, line: None, run_id: None, seq: None, why: format!("cannot read: {e}") });
        }
    }
    c
}
