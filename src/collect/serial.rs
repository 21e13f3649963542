//! Serial logs: streamed line by line (a multi-gigabyte console capture is
//! read in bounded memory: only records still being reassembled are held),
//! framed documents reassembled and checked, boots and crashes recognised.

use super::{BootSeen, Collected, Problem};
use crate::framing::{self, Assembler, Fed, LineError};
use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::path::Path;

/// Kernel console lines that mark a new boot or trouble.
const BANNER: &str = "Linux version ";
const PANIC: &str = "Kernel panic";
const OOPS: [&str; 2] = ["Oops", "BUG:"];
const HUNG: &str = "blocked for more than";

pub fn collect_log(
    path: &Path,
    c: &mut Collected,
    index: &mut BTreeMap<(String, String, u64), usize>,
) -> std::io::Result<()> {
    let file = path.display().to_string();
    let mut reader = BufReader::with_capacity(1 << 16, std::fs::File::open(path)?);
    let mut asm = Assembler::default();
    let mut boot = BootSeen { file: file.clone(), ..BootSeen::default() };
    let mut buf = Vec::new();
    let mut line_no = 0u64;
    loop {
        buf.clear();
        // Cap a line's length: a log without newlines must not eat memory.
        let n = std::io::Read::take(&mut reader, 1 << 20).read_until(b'\n', &mut buf)?;
        if n == 0 {
            break;
        }
        line_no += 1;
        let line = String::from_utf8_lossy(&buf);
        if let Some(pos) = line.find(BANNER) {
            if line_no > 1 || boot.documents > 0 {
                finish_boot(c, std::mem::take(&mut boot));
            }
            let kernel = line[pos + BANNER.len()..].split_whitespace().next().map(String::from);
            boot = BootSeen { file: file.clone(), line: line_no, kernel, ..BootSeen::default() };
        }
        boot.panics += usize::from(line.contains(PANIC));
        boot.oopses += usize::from(OOPS.iter().any(|p| line.contains(p)));
        boot.hung_tasks += usize::from(line.contains(HUNG));
        match framing::parse_line(&line) {
            None => {}
            Some(Err(e)) => c.problems.push(Problem {
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
            }),
            Some(Ok(l)) => match asm.feed(l) {
                Fed::Incomplete => {}
                Fed::Record(run_id, seq, bytes) => match serde_json::from_slice(&bytes) {
                    Ok(doc) => {
                        boot.documents += 1;
                        c.accept(doc, &file, index);
                    }
                    Err(e) => c.problems.push(problem(
                        &file,
                        line_no,
                        &run_id,
                        seq,
                        &format!("checksum matched but the record is not JSON: {e}"),
                    )),
                },
                Fed::Corrupt(run_id, seq) => c.problems.push(problem(
                    &file,
                    line_no,
                    &run_id,
                    seq,
                    "all parts present but the SHA-256 does not match: rejected",
                )),
            },
        }
    }
    finish_boot(c, boot);
    for (run_id, seq, have, want) in asm.unfinished() {
        let why = match want {
            Some(n) => {
                format!("incomplete: {have} of {n} chunks (missing or damaged lines, or the capture ends early)")
            }
            None => format!("incomplete: {have} chunks but no header line"),
        };
        c.problems.push(problem(&file, line_no, &run_id, seq, &why));
    }
    Ok(())
}

fn problem(file: &str, line: u64, run_id: &str, seq: u32, why: &str) -> Problem {
    Problem { file: file.into(), line: Some(line), run_id: Some(run_id.into()), seq: Some(seq), why: why.into() }
}

fn finish_boot(c: &mut Collected, mut boot: BootSeen) {
    if boot.line == 0 && boot.documents == 0 && boot.panics == 0 && boot.oopses == 0 && boot.hung_tasks == 0 {
        return; // noise before the first banner
    }
    boot.no_results = boot.documents == 0;
    c.boots.push(boot);
}
