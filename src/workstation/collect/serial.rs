//! Serial logs: streamed line by line (a multi-gigabyte console capture is
//! read in bounded memory: only records still being reassembled are held),
//! framed documents reassembled and checked, boots and crashes recognised.

use super::{BootSeen, Collector, Problem};
use crate::schema::framing::{self, Assembler, Fed, LineError};
use memchr::memmem;
use std::path::Path;

/// Kernel console lines that mark a new boot or trouble.
/// (`bootmark watch` shows the same lines live.)
pub(crate) const BANNER: &str = "Linux version ";
pub(crate) const PANIC: &str = "Kernel panic";
pub(crate) const OOPS: [&str; 2] = ["Oops", "BUG:"];
pub(crate) const HUNG: &str = "blocked for more than";

pub fn collect_log(path: &Path, c: &mut Collector) -> std::io::Result<()> {
    collect_reader(std::fs::File::open(path)?, &path.display().to_string(), c)
}

/// The same from any reader (`file` names it in problems): a log, a pipe, fuzz input.
///
/// The log is read in blocks and searched with SIMD substring search for the
/// few markers that matter (`@BM1 `, the kernel banner, panic/oops/hung-task
/// text); only lines holding one are looked at, and line numbers come from
/// counting newlines in between. Memory: one block plus records in assembly.
pub fn collect_reader(mut input: impl std::io::Read, file: &str, c: &mut Collector) -> std::io::Result<()> {
    const BLOCK: usize = 1 << 20;
    let finders: Vec<memmem::Finder> = MARKERS.iter().map(|m| memmem::Finder::new(m.as_bytes())).collect();
    let mut scan = Scan {
        file: file.to_string(),
        asm: Assembler::default(),
        boot: BootSeen { file: file.to_string(), ..BootSeen::default() },
        line_no: 0,
    };
    // One buffer for the whole log: a block is read after the unfinished
    // tail of the previous one, which is then moved to the front.
    let mut data = vec![0u8; 2 * BLOCK];
    let mut filled = 0;
    loop {
        let n = read_full(&mut input, &mut data[filled..filled + BLOCK])?;
        filled += n;
        let eof = n == 0;
        // Complete lines only; the tail waits for the next block (unless a
        // "line" is absurdly long or the input ended).
        let end = match memchr::memrchr(b'\n', &data[..filled]) {
            Some(i) if !eof => i + 1,
            _ if eof || filled >= BLOCK => filled,
            _ => continue,
        };
        scan.block(&data[..end], &finders, c);
        data.copy_within(end..filled, 0);
        filled -= end;
        if eof {
            break;
        }
    }
    scan.finish(c);
    Ok(())
}

fn read_full(input: &mut impl std::io::Read, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut done = 0;
    while done < buf.len() {
        match input.read(&mut buf[done..]) {
            Ok(0) => break,
            Ok(n) => done += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(done)
}

/// Every marker whose line must be looked at.
const MARKERS: [&str; 6] = [MAGIC_SPACE, BANNER, PANIC, OOPS[0], OOPS[1], HUNG];
const MAGIC_SPACE: &str = "@BM1 ";

struct Scan {
    file: String,
    asm: Assembler,
    boot: BootSeen,
    /// Lines before the current block.
    line_no: u64,
}

impl Scan {
    fn block(&mut self, block: &[u8], finders: &[memmem::Finder], c: &mut Collector) {
        // (position, which marker) for every hit, in order.
        let mut hits: Vec<(usize, usize)> =
            finders.iter().enumerate().flat_map(|(m, f)| f.find_iter(block).map(move |p| (p, m))).collect();
        hits.sort_unstable();
        let mut counted_to = 0;
        let mut i = 0;
        while i < hits.len() {
            let pos = hits[i].0;
            let line_start = memchr::memrchr(b'\n', &block[..pos]).map_or(0, |i| i + 1);
            let line_end = memchr::memchr(b'\n', &block[pos..]).map_or(block.len(), |i| pos + i);
            // Every marker on this line, looked at once.
            let mut markers = 0u32;
            while i < hits.len() && hits[i].0 < line_end {
                markers |= 1 << hits[i].1;
                i += 1;
            }
            self.line_no += memchr::memchr_iter(b'\n', &block[counted_to..line_start]).count() as u64;
            counted_to = line_start;
            let bytes = &block[line_start..line_end];
            // Valid UTF-8 is the rule: check it the fast way, repair only when needed.
            let line =
                std::str::from_utf8(bytes).map_or_else(|_| String::from_utf8_lossy(bytes), std::borrow::Cow::Borrowed);
            self.line(&line, markers, self.line_no + 1, c);
        }
        self.line_no += memchr::memchr_iter(b'\n', &block[counted_to..]).count() as u64;
    }

    /// Handle a line that holds the `markers` (bits indexing MARKERS).
    fn line(&mut self, line: &str, markers: u32, line_no: u64, c: &mut Collector) {
        let has = |m: &str| markers & (1 << MARKERS.iter().position(|x| *x == m).unwrap()) != 0;
        let boot = &mut self.boot;
        if has(BANNER) {
            let pos = line.find(BANNER).unwrap_or(0);
            if line_no > 1 || boot.documents > 0 {
                finish_boot(c, std::mem::take(boot));
            }
            let kernel = line[pos + BANNER.len()..].split_whitespace().next().map(String::from);
            *boot = BootSeen { file: self.file.clone(), line: line_no, kernel, ..BootSeen::default() };
        }
        boot.panics += usize::from(has(PANIC));
        boot.oopses += usize::from(has(OOPS[0]) || has(OOPS[1]));
        boot.hung_tasks += usize::from(has(HUNG));
        if !has(MAGIC_SPACE) {
            return;
        }
        let file = &self.file;
        match framing::parse_line(line) {
            None => {}
            Some(Err(e)) => c.damaged_line(
                Problem {
                    file: file.clone(),
                    line: Some(line_no),
                    run_id: None,
                    seq: None,
                    why: match e {
                        LineError::BadChecksum => {
                            "framed line failed its CRC (line noise or a printk cut it); a copy elsewhere can replace it"
                                .into()
                        }
                        LineError::Malformed => "framed line is malformed (truncated?)".into(),
                    },
                },
                framing::claimed_record(line),
            ),
            Some(Ok(l)) => match self.asm.feed(l) {
                Fed::Incomplete => {}
                // The boot printed a record already read intact: it did print one.
                Fed::Again(..) => {
                    boot.documents += 1;
                    c.collected.duplicates += 1;
                }
                Fed::Record(_, _, bytes) => {
                    boot.documents += 1;
                    c.accept_bytes(&bytes, file, Some(line_no));
                }
                Fed::Corrupt(run_id, seq) => c.problems.push(problem(
                    file,
                    line_no,
                    &run_id,
                    seq,
                    "all parts present but the SHA-256 does not match: rejected",
                )),
            },
        }
    }

    fn finish(mut self, c: &mut Collector) {
        let boot = std::mem::take(&mut self.boot);
        finish_boot(c, boot);
        for (run_id, seq, have, want) in self.asm.unfinished() {
            let why = match want {
                Some(n) => {
                    format!("incomplete: {have} of {n} chunks (missing or damaged lines, or the capture ends early)")
                }
                None => format!("incomplete: {have} chunks but no header line"),
            };
            let claims = Some((run_id.clone(), seq));
            c.damaged_copy(problem(&self.file, self.line_no, &run_id, seq, &why), claims);
        }
    }
}

fn problem(file: &str, line: u64, run_id: &str, seq: u32, why: &str) -> Problem {
    Problem { file: file.into(), line: Some(line), run_id: Some(run_id.into()), seq: Some(seq), why: why.into() }
}

fn finish_boot(c: &mut Collector, mut boot: BootSeen) {
    if boot.line == 0 && boot.documents == 0 && boot.panics == 0 && boot.oopses == 0 && boot.hung_tasks == 0 {
        return; // noise before the first banner
    }
    boot.no_results = boot.documents == 0;
    if boot.no_results {
        // Whatever it was to measure is lost unless the stick holds it: not a quiet success.
        let crashed = if boot.panics + boot.oopses > 0 { "crashed" } else { "never finished" };
        c.problems.push(Problem {
            file: boot.file.clone(),
            line: (boot.line > 0).then_some(boot.line),
            run_id: None,
            seq: None,
            why: format!(
                "a boot (kernel {}) that printed no verified bootmark record: it {crashed}, or the capture ends early (collect the stick too, if it was in the server)",
                boot.kernel.as_deref().unwrap_or("?")
            ),
        });
    }
    c.boots.push(boot);
}
