//! `seqread`: read a file back sequentially from a cold cache.
//!
//! Normally the file is the one `seqwrite` left in the run's shared directory.
//! If it is missing or has another size, it is written first (untimed, noted).
//! Before the timed read the file is evicted from the page cache and mincore()
//! checks it: a run whose pages were still resident says `cold: false`.

use super::cache::{ColdMethod, make_cold};
use super::io::{read_full_timed, write_stream};
use super::seqwrite::check_file_name;
use super::{Context, Footprint, Latencies, Outcome, PhaseTimes, check_block, since};
use crate::image_side::measure::clock::mono_ns;
use crate::image_side::measure::histogram::Histogram;
use crate::size::Bytes;
use serde::{Deserialize, Serialize};
use std::fs::{File, OpenOptions};

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Params {
    pub size: Bytes,
    pub block: Bytes,
    pub file: String,
    pub cold: ColdMethod,
}

impl Default for Params {
    fn default() -> Self {
        Params { size: Bytes(1 << 30), block: Bytes(16 << 10), file: "seqwrite.dat".into(), cold: ColdMethod::Auto }
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

pub fn run(p: &Params, ctx: &Context) -> std::io::Result<Outcome> {
    let path = ctx.shared_dir.join(&p.file);
    let mut notes = Vec::new();
    let prepared = std::fs::metadata(&path).map(|m| m.len()).ok() != Some(p.size.0);
    if prepared {
        notes.push(format!("{} was not left by an earlier seqwrite of this size: written first, untimed", p.file));
        let mut f = OpenOptions::new().write(true).create(true).truncate(true).open(&path)?;
        let zeros = vec![0u8; p.block.0 as usize];
        write_stream(&mut f, &zeros, p.size.0, &mut Histogram::new(), ctx.progress)?;
        f.sync_all()?;
        ctx.progress.reset();
    }
    let cache = make_cold(&path, p.cold)?;
    if !cache.cold {
        notes.push(format!(
            "NOT COLD: {} of {} pages were resident before reading (method {})",
            cache.resident_pages_before, cache.total_pages, cache.method
        ));
    }

    let mut lat = Latencies::default();
    let mut buf = vec![0u8; p.block.0 as usize];
    let start = mono_ns();
    let mut f = File::open(&path)?;
    let mut total = 0u64;
    loop {
        let n = read_full_timed(&mut f, &mut buf, &mut lat.read, ctx.progress)?;
        total += n as u64;
        if n < buf.len() {
            break;
        }
    }
    drop(f);
    let wall_s = since(start);
    let end = mono_ns();
    Ok(Outcome {
        bytes_read: total,
        times: PhaseTimes { wall_s, closed_s: Some(wall_s), ..PhaseTimes::default() },
        read_latency: lat.read.to_sparse(),
        start_ns: start,
        end_ns: end,
        details: serde_json::json!({ "file": p.file, "prepared": prepared, "cache": cache }),
        notes,
        ..Outcome::default()
    })
}
