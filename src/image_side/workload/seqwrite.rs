//! `seqwrite`: the seed's `dd if=/dev/zero of=FILE bs=16k count=65536` — one
//! file written sequentially from a zero buffer.
//!
//! dd without `conv=fdatasync` stops its clock while most of the data may
//! still be dirty in memory; we report both that ("writes returned", "closed")
//! and the durable time after fdatasync, whichever `sync` says is the wall time.
//! The file is kept in the run's shared directory so `seqread` can read it cold.

use super::io::{fdatasync, write_stream};
use super::{Context, Footprint, Latencies, Outcome, PhaseTimes, check_block, since};
use crate::image_side::measure::clock::mono_ns;
use crate::size::Bytes;
use serde::{Deserialize, Serialize};
use std::fs::OpenOptions;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum SeqSync {
    /// Like dd without conv=: the wall time ends when the file is closed.
    None,
    /// Like dd conv=fdatasync: the wall time ends when the data is durable.
    #[default]
    End,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Params {
    pub size: Bytes,
    pub block: Bytes,
    pub sync: SeqSync,
    /// File name inside the run's shared directory.
    pub file: String,
}

impl Default for Params {
    fn default() -> Self {
        Params { size: Bytes(1 << 30), block: Bytes(16 << 10), sync: SeqSync::End, file: "seqwrite.dat".into() }
    }
}

impl Params {
    pub fn validate(&self) -> Result<(), String> {
        check_block(self.block)?;
        check_file_name(&self.file)
    }

    pub fn footprint(&self) -> Footprint {
        Footprint { transient: 0, kept: vec![(self.file.clone(), self.size.0)] }
    }
}

/// A shared file name must be a plain name: workloads never write outside the run directory.
pub fn check_file_name(name: &str) -> Result<(), String> {
    if name.is_empty() || name.contains('/') || name == "." || name == ".." {
        return Err(format!("file must be a plain file name, not '{name}'"));
    }
    Ok(())
}

pub fn run(p: &Params, ctx: &Context) -> std::io::Result<Outcome> {
    let zeros = vec![0u8; p.block.0 as usize];
    let path = ctx.shared_dir.join(&p.file);
    let mut lat = Latencies::default();

    let start = mono_ns();
    let mut f = OpenOptions::new().write(true).create(true).truncate(true).open(&path)?;
    write_stream(&mut f, &zeros, p.size.0, &mut lat.write, ctx.progress)?;
    let writes_returned_s = since(start);
    let (closed_s, durable_s) = match p.sync {
        SeqSync::End => {
            fdatasync(&f)?;
            drop(f);
            let t = since(start);
            (t, t)
        }
        SeqSync::None => {
            drop(f);
            let closed = since(start);
            // fsync on any descriptor flushes the file's dirty pages.
            fdatasync(&OpenOptions::new().write(true).open(&path)?)?;
            (closed, since(start))
        }
    };
    let end = mono_ns();
    Ok(Outcome {
        bytes_written: p.size.0,
        times: PhaseTimes {
            wall_s: if p.sync == SeqSync::End { durable_s } else { closed_s },
            writes_returned_s: Some(writes_returned_s),
            closed_s: Some(closed_s),
            durable_s: Some(durable_s),
        },
        write_latency: lat.write.to_sparse(),
        start_ns: start,
        end_ns: end,
        details: serde_json::json!({ "file": p.file }),
        ..Outcome::default()
    })
}
