//! Sinks: where finished records go. On a workstation that is stdout or a
//! JSONL file; inside the image, the serial console and the results stick.

pub mod lava;
pub mod serial;
pub mod stick;

use crate::schema::record::Record;
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
        // Durable where that means something: a pipe, /dev/null or a terminal
        // cannot be synced (EINVAL, ENOTSUP) and needs no sync.
        match self.file.sync_data() {
            Err(e) if matches!(e.raw_os_error(), Some(libc::EINVAL) | Some(libc::ENOTSUP)) => Ok(()),
            other => other,
        }
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

/// A sink whose failure must not stop the run (the results stick: full,
/// read-only, pulled out). The first error is printed once on stderr (the
/// console) and kept; later records are not offered to it again.
pub struct BestEffort<'a> {
    pub inner: &'a mut dyn Sink,
    pub name: &'static str,
    pub failed: Option<String>,
}

impl Sink for BestEffort<'_> {
    fn write(&mut self, record: &Record) -> io::Result<()> {
        if self.failed.is_some() {
            return Ok(());
        }
        if let Err(e) = self.inner.write(record) {
            crate::note!("bootmark: the {} failed ({e}); results continue on the serial console only", self.name);
            self.failed = Some(e.to_string());
        }
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::record::tests::record;

    struct Full;
    impl Sink for Full {
        fn write(&mut self, _: &Record) -> io::Result<()> {
            Err(io::Error::other("No space left on device"))
        }
    }

    #[test]
    fn a_full_stick_does_not_stop_the_records_going_to_serial() {
        let mut full = Full;
        let mut stick = BestEffort { inner: &mut full, name: "results stick", failed: None };
        let mut serial = Memory::default();
        {
            let mut tee = Tee { sinks: vec![&mut serial, &mut stick] };
            tee.write(&record()).unwrap();
            tee.write(&record()).unwrap();
        }
        assert_eq!(serial.0.len(), 2, "every record still reaches the serial sink");
        assert!(stick.failed.as_deref().unwrap().contains("No space left"));
    }
}
