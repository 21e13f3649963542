//! `manyfiles`: the seed's C program (`a.out 1000`) — open N files at once,
//! then write round-robin across all of them in block-sized chunks until each
//! holds `file_size` bytes.
//!
//! Unlike fio's defaults, files are created inside the timed part and nothing
//! is preallocated: the seed program did not, and the allocator's behaviour
//! with many interleaved growing files is part of what is being measured.

use super::io::write_all_timed;
use super::{Context, Footprint, Latencies, Outcome, PhaseTimes, check_block, since};
use crate::image_side::measure::clock::mono_ns;
use crate::size::Bytes;
use serde::{Deserialize, Serialize};
use std::fs::{File, OpenOptions};
use std::path::PathBuf;

/// The byte every manyfiles file is filled with (tests check it on disk).
pub const FILL: u8 = 0x5a;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum SyncMode {
    /// No fsync: the seed program. Durability is then measured with sync().
    #[default]
    None,
    /// fsync each file just before closing it.
    Close,
    /// fsync every file once all writes are done, then close them.
    End,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Params {
    pub files: u32,
    pub file_size: Bytes,
    pub block: Bytes,
    pub sync: SyncMode,
}

impl Default for Params {
    fn default() -> Self {
        Params { files: 1000, file_size: Bytes(1 << 20), block: Bytes(16 << 10), sync: SyncMode::None }
    }
}

impl Params {
    pub fn validate(&self) -> Result<(), String> {
        check_block(self.block)?;
        if self.files == 0 || self.files > 100_000 {
            return Err(format!("files must be between 1 and 100000, not {}", self.files));
        }
        Ok(())
    }

    pub fn footprint(&self) -> Footprint {
        Footprint { transient: (self.files as u64).saturating_mul(self.file_size.0), kept: vec![] }
    }
}

pub fn file_path(dir: &std::path::Path, i: u32) -> PathBuf {
    dir.join(format!("f{i:06}"))
}

pub fn run(p: &Params, ctx: &Context) -> std::io::Result<Outcome> {
    let block = vec![FILL; p.block.0 as usize];
    let mut lat = Latencies::default();
    let paths: Vec<PathBuf> = (0..p.files).map(|i| file_path(&ctx.dir, i)).collect();

    let start = mono_ns();
    let mut files = Vec::with_capacity(paths.len());
    for path in &paths {
        files.push(OpenOptions::new().write(true).create(true).truncate(true).open(path)?);
    }
    let mut offset = 0u64;
    while offset < p.file_size.0 {
        let n = (p.file_size.0 - offset).min(p.block.0) as usize;
        for f in files.iter_mut() {
            write_all_timed(f, &block[..n], &mut lat.write, ctx.progress)?;
        }
        offset += n as u64;
    }
    let writes_returned_s = since(start);
    let (closed_s, durable_s) = close_files(files, p.sync, start)?;
    let end = mono_ns();

    for path in &paths {
        if !ctx.keep {
            super::remove_quietly(path);
        }
    }
    Ok(Outcome {
        bytes_written: p.files as u64 * p.file_size.0,
        times: PhaseTimes {
            wall_s: if p.sync == SyncMode::None { closed_s } else { durable_s },
            writes_returned_s: Some(writes_returned_s),
            closed_s: Some(closed_s),
            durable_s: Some(durable_s),
        },
        write_latency: lat.write.to_sparse(),
        start_ns: start,
        end_ns: end,
        details: serde_json::json!({ "files": p.files }),
        ..Outcome::default()
    })
}

/// Close (and per the sync mode, fsync) all files; returns (closed_s, durable_s).
fn close_files(files: Vec<File>, sync: SyncMode, start: u64) -> std::io::Result<(f64, f64)> {
    match sync {
        SyncMode::None => {
            drop(files);
            let closed = since(start);
            // SAFETY: sync(2) takes no arguments and cannot fail.
            unsafe { libc::sync() };
            Ok((closed, since(start)))
        }
        SyncMode::Close => {
            for f in files {
                f.sync_all()?;
            }
            let t = since(start);
            Ok((t, t))
        }
        SyncMode::End => {
            for f in &files {
                f.sync_all()?;
            }
            drop(files);
            let t = since(start);
            Ok((t, t))
        }
    }
}
