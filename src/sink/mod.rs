//! Sinks: where finished records go. On a workstation that is stdout or a
//! JSONL file; inside the image, the serial console and the results stick.

pub mod serial;
pub mod stick;

use crate::record::Record;
use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::path::Path;

pub trait Sink {
    fn write(&mut self, record: &Record) -> io::Result<()>;
}

/// One JSON object per line on stdout.
pub struct Stdout;

impl Sink for Stdout {
    fn write(&mut self, record: &Record) -> io::Result<()> {
        let mut out = io::stdout().lock();
        serde_json::to_writer(&mut out, record)?;
        out.write_all(b"\n")?;
        out.flush()
    }
}

/// Appends records to a JSONL file, each made durable before the next
/// workload starts (earlier content is never rewritten).
pub struct JsonlFile {
    file: File,
}

impl JsonlFile {
    pub fn append(path: &Path) -> io::Result<JsonlFile> {
        Ok(JsonlFile { file: OpenOptions::new().create(true).append(true).open(path)? })
    }
}

impl Sink for JsonlFile {
    fn write(&mut self, record: &Record) -> io::Result<()> {
        let mut line = serde_json::to_vec(record)?;
        line.push(b'\n');
        self.file.write_all(&line)?;
        self.file.sync_data()
    }
}

/// Keeps records in memory (tests, and the /init path before it has a stick).
#[derive(Default)]
pub struct Memory(pub Vec<Record>);

impl Sink for Memory {
    fn write(&mut self, record: &Record) -> io::Result<()> {
        self.0.push(record.clone());
        Ok(())
    }
}

/// Sends each record to several sinks; one failing does not stop the others.
pub struct Tee<'a> {
    pub sinks: Vec<&'a mut dyn Sink>,
}

impl Sink for Tee<'_> {
    fn write(&mut self, record: &Record) -> io::Result<()> {
        let mut first_error = None;
        for s in self.sinks.iter_mut() {
            if let Err(e) = s.write(record) {
                first_error.get_or_insert(e);
            }
        }
        first_error.map_or(Ok(()), Err)
    }
}
