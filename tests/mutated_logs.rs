//! The collector's promise, as a property over a real serial log (a QEMU
//! boot of Debian's 6.1 kernel: 6 result records and a run record) damaged
//! in every way a console line can be: bytes overwritten, runs of bytes lost
//! (a UART overrun), noise inserted, a line end eaten, a line repeated, the
//! capture cut. For any such damage:
//! - every document `collect` writes is byte for byte one the boot emitted;
//! - every document the boot emitted is written, or named as a problem by
//!   its run id (with its seq, or as the boot whose run record is lost and
//!   whose records therefore cannot be known complete);
//! - when anything the boot emitted is not written, the judgement is "not ok"
//!   (there is a problem, so every command exits 1).

use bootmark::collect::collect_to;
use bootmark::framing::{Assembler, Fed, parse_line};
use proptest::prelude::*;
use std::path::Path;

fn real_log() -> Vec<u8> {
    std::fs::read(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/collect/secure-boot-on.log")).unwrap()
}

/// What the boot emitted: (run id, seq, payload) of every framed document.
fn emitted(log: &[u8]) -> Vec<(String, u32, Vec<u8>)> {
    let mut asm = Assembler::default();
    let mut out = Vec::new();
    for line in String::from_utf8_lossy(log).lines() {
        if let Some(Ok(l)) = parse_line(line)
            && let Fed::Record(run_id, seq, bytes) = asm.feed(l)
        {
            out.push((run_id, seq, bytes));
        }
    }
    out
}

/// One way a console line damages a capture.
#[derive(Clone, Debug)]
enum Damage {
    Overwrite { at: usize, byte: u8 },
    Lose { at: usize, len: usize },
    Insert { at: usize, noise: Vec<u8> },
    EatLineEnd { nth: usize },
    RepeatLine { nth: usize },
    Cut { at: usize },
}

fn damage() -> impl Strategy<Value = Damage> {
    prop_oneof![
        4 => (any::<usize>(), any::<u8>()).prop_map(|(at, byte)| Damage::Overwrite { at, byte }),
        2 => (any::<usize>(), 1..300usize).prop_map(|(at, len)| Damage::Lose { at, len }),
        2 => (any::<usize>(), proptest::collection::vec(any::<u8>(), 1..40))
            .prop_map(|(at, noise)| Damage::Insert { at, noise }),
        2 => any::<usize>().prop_map(|nth| Damage::EatLineEnd { nth }),
        1 => any::<usize>().prop_map(|nth| Damage::RepeatLine { nth }),
        1 => any::<usize>().prop_map(|at| Damage::Cut { at }),
    ]
}

/// The byte offsets just after each line end.
fn line_starts(log: &[u8]) -> Vec<usize> {
    log.iter().enumerate().filter(|(_, b)| **b == b'\n').map(|(i, _)| i + 1).collect()
}

fn apply(log: &mut Vec<u8>, d: &Damage) {
    if log.is_empty() {
        return;
    }
    let len = log.len();
    match d {
        Damage::Overwrite { at, byte } => log[at % len] = *byte,
        Damage::Lose { at, len: n } => {
            let at = at % len;
            log.drain(at..(at + n).min(len));
        }
        Damage::Insert { at, noise } => {
            let at = at % len;
            log.splice(at..at, noise.iter().copied());
        }
        Damage::EatLineEnd { nth } => {
            let ends = line_starts(log);
            if !ends.is_empty() {
                log.remove(ends[nth % ends.len()] - 1);
            }
        }
        Damage::RepeatLine { nth } => {
            let mut starts = line_starts(log);
            starts.insert(0, 0);
            let from = starts[nth % starts.len()];
            let to = log[from..].iter().position(|b| *b == b'\n').map_or(len, |p| from + p + 1);
            let line = log[from..to].to_vec();
            log.splice(to..to, line);
        }
        Damage::Cut { at } => log.truncate(at % len),
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 400, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn a_damaged_real_log_loses_nothing_unnamed_and_alters_nothing(damages in proptest::collection::vec(damage(), 1..6)) {
        let original = real_log();
        let boot = emitted(&original);
        prop_assume!(boot.len() == 7);
        let mut log = original.clone();
        for d in &damages {
            apply(&mut log, d);
        }

        // As `bootmark collect serial.log` reads it: from a file, judged whole.
        let path = std::env::temp_dir().join(format!("bootmark-mutated-{}.log", std::process::id()));
        std::fs::write(&path, &log).unwrap();
        let mut written = Vec::new();
        let (collected, _) = collect_to(std::slice::from_ref(&path), &mut written);
        let _ = std::fs::remove_file(&path);
        let lines: Vec<&[u8]> = written.split(|b| *b == b'\n').filter(|l| !l.is_empty()).collect();
        for line in &lines {
            prop_assert!(
                boot.iter().any(|(_, _, bytes)| bytes == line),
                "collect wrote a document the boot never emitted: {}", String::from_utf8_lossy(line)
            );
        }
        let mut lost = 0;
        for (run_id, seq, bytes) in &boot {
            if lines.contains(&bytes.as_slice()) {
                continue;
            }
            lost += 1;
            // Named by its run id; or, when nothing of its boot can be read
            // any more (the capture cut before its first record), the boot
            // itself is a problem.
            let of_boot = |p: &&bootmark::collect::Problem| p.run_id.as_deref() == Some(run_id.as_str());
            let named = collected.problems.iter().filter(of_boot).any(|p| p.seq == Some(*seq) || p.seq.is_none())
                || (!collected.problems.iter().any(|p| of_boot(&p))
                    && !lines.iter().any(|l| String::from_utf8_lossy(l).contains(run_id.as_str()))
                    && collected.problems.iter().any(|p| p.run_id.is_none()));
            prop_assert!(
                named,
                "run {run_id} seq {seq} is neither written nor named; problems: {:#?}", collected.problems
            );
        }
        if lost > 0 {
            prop_assert!(!collected.problems.is_empty());
        }
    }
}
