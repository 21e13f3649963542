//! `sort`: an external merge sort of a generated file larger than a fraction
//! of RAM — the seed's "you can also produce the bug with sort".
//!
//! Phases (all timed, each reported): generate the input (8-byte keys from a
//! fixed-seed generator), cut it into `memory`-sized runs sorted in memory and
//! spilled to temp files, merge the runs into the output. Then, untimed, the
//! output is checked: sorted, same count, same key sum.

use super::io::{read_full_timed, write_all_timed};
use super::{Context, Footprint, Latencies, Outcome, PhaseTimes, check_block, since};
use crate::image_side::measure::clock::mono_ns;
use crate::image_side::measure::progress::Progress;
use crate::size::Bytes;
use serde::{Deserialize, Serialize};
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};

const KEY: usize = 8;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Params {
    /// Input size; when absent, `ram_fraction` × total RAM.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub size: Option<Bytes>,
    pub ram_fraction: f64,
    /// Memory for one in-memory run (the sort's working set).
    pub memory: Bytes,
    pub block: Bytes,
}

impl Default for Params {
    fn default() -> Self {
        Params { size: None, ram_fraction: 0.5, memory: Bytes(64 << 20), block: Bytes(64 << 10) }
    }
}

impl Params {
    pub fn validate(&self) -> Result<(), String> {
        check_block(self.block)?;
        if self.memory.0 < 4096 {
            return Err("memory must be at least 4KiB".into());
        }
        if !(self.ram_fraction > 0.0 && self.ram_fraction <= 64.0) {
            return Err(format!("ram_fraction must be above 0 and at most 64, not {}", self.ram_fraction));
        }
        Ok(())
    }

    /// Input bytes, rounded down to whole keys.
    pub fn input_size(&self, mem_total: u64) -> u64 {
        let raw = match self.size {
            Some(s) => s.0,
            None => (mem_total as f64 * self.ram_fraction) as u64,
        };
        raw / KEY as u64 * KEY as u64
    }

    pub fn footprint(&self, mem_total: u64) -> Footprint {
        // input + runs + output exist together at the end of the merge.
        Footprint { transient: self.input_size(mem_total).saturating_mul(3), kept: vec![] }
    }
}

/// xorshift64*: fixed seed, so every kernel sorts the same data.
struct Keys(u64);

impl Keys {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
}

struct Io<'a> {
    lat: Latencies,
    progress: &'a Progress,
    block: usize,
}

pub fn run(p: &Params, ctx: &Context) -> io::Result<Outcome> {
    let size = p.input_size(ctx.mem_total);
    let mut io = Io { lat: Latencies::default(), progress: ctx.progress, block: p.block.0.max(KEY as u64) as usize };
    let input = ctx.dir.join("input");
    let output = ctx.dir.join("output");

    let start = mono_ns();
    let sum = generate(&input, size, &mut io)?;
    let generate_s = since(start);
    let runs = spill_runs(&input, &ctx.dir, p.memory.0 as usize, &mut io)?;
    let runs_s = since(start);
    merge(&runs, &output, p.memory.0 as usize, &mut io)?;
    File::open(&output)?.sync_all()?;
    let wall_s = since(start);
    let end = mono_ns();

    let check = verify(&output, size / KEY as u64, sum)?;
    if !ctx.keep {
        for path in runs.iter().chain([&input, &output]) {
            super::remove_quietly(path);
        }
    }
    if let Err(e) = check {
        return Err(io::Error::other(format!("sort output is wrong: {e}")));
    }
    let written = ctx.progress.written();
    let read = ctx.progress.read();
    Ok(Outcome {
        bytes_written: written,
        bytes_read: read,
        times: PhaseTimes { wall_s, durable_s: Some(wall_s), ..PhaseTimes::default() },
        write_latency: io.lat.write.to_sparse(),
        read_latency: io.lat.read.to_sparse(),
        start_ns: start,
        end_ns: end,
        details: serde_json::json!({
            "input_bytes": size,
            "runs": runs.len(),
            "generate_s": generate_s,
            "runs_s": runs_s - generate_s,
            "merge_s": wall_s - runs_s,
            "verified": true,
        }),
        ..Outcome::default()
    })
}

fn generate(path: &Path, size: u64, io: &mut Io) -> io::Result<u64> {
    let mut keys = Keys(0x9E37_79B9_7F4A_7C15);
    let mut f = File::create(path)?;
    let mut buf = Vec::with_capacity(io.block);
    let mut sum = 0u64;
    for _ in 0..size / KEY as u64 {
        let k = keys.next();
        sum = sum.wrapping_add(k);
        buf.extend_from_slice(&k.to_le_bytes());
        if buf.len() + KEY > io.block {
            write_all_timed(&mut f, &buf, &mut io.lat.write, io.progress)?;
            buf.clear();
        }
    }
    write_all_timed(&mut f, &buf, &mut io.lat.write, io.progress)?;
    Ok(sum)
}

fn spill_runs(input: &Path, dir: &Path, memory: usize, io: &mut Io) -> io::Result<Vec<PathBuf>> {
    let mut f = File::open(input)?;
    let mut chunk = vec![0u8; memory / KEY * KEY];
    let mut runs = Vec::new();
    loop {
        let n = read_full_timed(&mut f, &mut chunk, &mut io.lat.read, io.progress)?;
        if n == 0 {
            break;
        }
        let mut keys: Vec<u64> =
            chunk[..n].chunks_exact(KEY).map(|c| u64::from_le_bytes(c.try_into().unwrap())).collect();
        keys.sort_unstable();
        let path = dir.join(format!("run{:05}", runs.len()));
        let mut out = File::create(&path)?;
        let bytes: Vec<u8> = keys.iter().flat_map(|k| k.to_le_bytes()).collect();
        for piece in bytes.chunks(io.block) {
            write_all_timed(&mut out, piece, &mut io.lat.write, io.progress)?;
        }
        runs.push(path);
    }
    Ok(runs)
}

/// A run being merged: a buffered reader of keys.
struct RunReader {
    file: File,
    buf: Vec<u8>,
    pos: usize,
    len: usize,
}

impl RunReader {
    fn next(&mut self, io: &mut Io) -> io::Result<Option<u64>> {
        if self.pos == self.len {
            self.len = read_full_timed(&mut self.file, &mut self.buf, &mut io.lat.read, io.progress)?;
            self.pos = 0;
            if self.len < KEY {
                return Ok(None);
            }
        }
        let k = u64::from_le_bytes(self.buf[self.pos..self.pos + KEY].try_into().unwrap());
        self.pos += KEY;
        Ok(Some(k))
    }
}

fn merge(runs: &[PathBuf], output: &Path, memory: usize, io: &mut Io) -> io::Result<()> {
    let per_run = (memory / runs.len().max(1)).clamp(4096, 1 << 20) / KEY * KEY;
    let mut readers = Vec::with_capacity(runs.len());
    let mut heap = BinaryHeap::new();
    for (i, path) in runs.iter().enumerate() {
        let mut r = RunReader { file: File::open(path)?, buf: vec![0; per_run], pos: 0, len: 0 };
        if let Some(k) = r.next(io)? {
            heap.push(Reverse((k, i)));
        }
        readers.push(r);
    }
    let mut out = File::create(output)?;
    let mut buf = Vec::with_capacity(io.block);
    while let Some(Reverse((k, i))) = heap.pop() {
        buf.extend_from_slice(&k.to_le_bytes());
        if buf.len() + KEY > io.block {
            write_all_timed(&mut out, &buf, &mut io.lat.write, io.progress)?;
            buf.clear();
        }
        if let Some(next) = readers[i].next(io)? {
            heap.push(Reverse((next, i)));
        }
    }
    write_all_timed(&mut out, &buf, &mut io.lat.write, io.progress)
}

/// Sorted, the right number of keys, the same key sum as generated.
fn verify(path: &Path, count: u64, sum: u64) -> io::Result<Result<(), String>> {
    use std::io::Read;
    let mut f = std::io::BufReader::with_capacity(1 << 20, File::open(path)?);
    let mut seen = 0u64;
    let mut total = 0u64;
    let mut last = 0u64;
    let mut key = [0u8; KEY];
    loop {
        match f.read_exact(&mut key) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => break,
            Err(e) => return Err(e),
        }
        let k = u64::from_le_bytes(key);
        if seen > 0 && k < last {
            return Ok(Err(format!("key {seen} is smaller than the one before it")));
        }
        last = k;
        total = total.wrapping_add(k);
        seen += 1;
    }
    if seen != count {
        return Ok(Err(format!("{seen} keys in the output, {count} in the input")));
    }
    if total != sum {
        return Ok(Err("the output's keys are not the input's keys".into()));
    }
    Ok(Ok(()))
}
