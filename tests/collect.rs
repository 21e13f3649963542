//! The collector against mutated serial logs: dropped and flipped bytes,
//! lines cut by printk, repeated boots, truncated captures, CRLF, escape
//! sequences. Not one corrupted record may be accepted; every record whose
//! lines survived intact somewhere must be recovered.

use bootmark::collect::{Document, collect};
use bootmark::framing::encode;
use serde_json::{Value, json};
use std::path::PathBuf;

/// A complete result record (every required field), of a size that varies with `seq`.
fn record(run: &str, seq: u32) -> Value {
    let nothing = json!({"count": 0, "mean_ms": 0, "min_ms": 0, "p50_ms": 0, "p90_ms": 0, "p99_ms": 0,
                         "p99_9_ms": 0, "max_ms": 0});
    json!({"schema": "bootmark.result/1", "run_id": run, "seq": seq, "repetition": 0, "status": "ok",
           "started_unix_s": 0, "bootmark": {"version": "test"}, "plan": {"name": "quick"},
           "workload": {"name": "seqwrite", "params": {"size": 1 << 20}},
           "kernel": {"release": format!("6.1.{seq}")}, "host": {"cpus": 1}, "storage": {"dir": "/mnt"}, "vm": {},
           "times": {"wall_s": 1.5 + seq as f64, "user_s": 0, "sys_s": 0.5},
           "bytes_written": 1 << 20, "bytes_read": 0, "throughput_mib_s": 1.0 / (1.5 + seq as f64),
           "latency": {"write": nothing, "read": nothing}, "responsiveness": null,
           "counters": {"voluntary_switches": 0, "involuntary_switches": 0, "minor_faults": 0, "major_faults": 0,
                        "vmstat_delta": {}, "disk_delta": null},
           "timeline": {"interval_s": 0.25, "t_s": [], "series": {}},
           "details": {"padding": "x".repeat(300 + 37 * seq as usize)}, "notes": []})
}

/// The document the collector should make of a record it accepted.
fn documents(records: &[Value]) -> Vec<Document> {
    records.iter().map(|r| Document::from_json(r.to_string().as_bytes()).unwrap()).collect()
}

/// A boot's last document: the run record, counting its result records.
fn run_record(run: &str, records: usize) -> Value {
    json!({"schema": "bootmark.run/1", "run_id": run, "seq": records, "status": "ok", "error": null,
           "started_unix_s": 0, "finished_unix_s": 1, "bootmark": {"version": "test"}, "kernel": {},
           "host": {"cpus": 1}, "records": records, "failed_records": 0, "facts": {},
           "kernel_log": {"lines": 0, "counts": {}, "tail": []}})
}

/// The result records among a collection's documents (the run records set aside).
fn result_docs(docs: &[Document]) -> Vec<Document> {
    docs.iter().filter(|d| d.result().is_some()).cloned().collect()
}

/// A boot's console: banner, kernel noise, the framed records, the run record.
fn boot_log(run: &str, records: &[Value]) -> Vec<String> {
    let mut lines = vec![
        "SeaBIOS (version 1.16)".to_string(),
        format!("[    0.000000] Linux version 6.1.0-57-amd64 (debian-kernel@lists.debian.org) #1 SMP run {run}"),
        "[    1.234567] usb 1-1: new SuperSpeed USB device number 2 using xhci_hcd".into(),
    ];
    for r in records {
        lines.extend(encode(run, r["seq"].as_u64().unwrap() as u32, r.to_string().as_bytes()));
        lines.push(format!("bootmark: {} done", r["workload"]["name"]));
    }
    let end = run_record(run, records.len());
    lines.extend(encode(run, records.len() as u32, end.to_string().as_bytes()));
    lines.push("[   12.962548] reboot: Power down".into());
    lines
}

fn write(name: &str, text: &str) -> PathBuf {
    let p = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("{name}-{}.log", std::process::id()));
    std::fs::write(&p, text).unwrap();
    p
}

/// A tiny deterministic generator for the mutations.
struct Rng(u64);
impl Rng {
    fn next(&mut self, n: usize) -> usize {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 % n as u64) as usize
    }
}

#[test]
fn a_clean_log_with_crlf_and_escapes_gives_every_record() {
    let recs: Vec<Value> = (0..5).map(|s| record("runA", s)).collect();
    let text: String = boot_log("runA", &recs).iter().map(|l| format!("\x1b[0m{l}\r\n")).collect();
    let c = collect(&[write("clean", &text)]);
    assert_eq!(result_docs(&c.documents), documents(&recs));
    assert!(c.problems.is_empty(), "{:?}", c.problems);
    assert_eq!(c.boots.len(), 1);
    assert_eq!(c.boots[0].kernel.as_deref(), Some("6.1.0-57-amd64"));
}

#[test]
fn mutated_logs_never_yield_a_corrupted_record() {
    let sent: Vec<Value> = (0..8).map(|s| record("runB", s)).collect();
    let clean = boot_log("runB", &sent);
    let originals = documents(&sent);
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    for round in 0..200 {
        let mut lines = clean.clone();
        let mut touched = std::collections::BTreeSet::new();
        for _ in 0..1 + rng.next(4) {
            let i = rng.next(lines.len());
            let mut bytes = lines[i].clone().into_bytes();
            match rng.next(5) {
                0 if !bytes.is_empty() => {
                    let p = rng.next(bytes.len());
                    bytes[p] ^= 1 << rng.next(7);
                }
                1 if !bytes.is_empty() => {
                    bytes.remove(rng.next(bytes.len()));
                }
                2 => {
                    // printk output in the middle of our line
                    let p = rng.next(bytes.len() + 1);
                    let noise = b"\n[  240.1] INFO: task ls:812 blocked for more than 120 seconds.\n";
                    bytes.splice(p..p, noise.iter().copied());
                }
                3 => bytes.clear(),
                _ => bytes.truncate(rng.next(bytes.len() + 1)),
            }
            lines[i] = String::from_utf8_lossy(&bytes).into_owned();
            touched.insert(i);
        }
        let mut text = lines.join("\n");
        if round % 7 == 0 {
            text.truncate(rng.next(text.len())); // the capture ended early
        }
        let c = collect(&[write(&format!("mut{round}"), &text)]);
        for d in &result_docs(&c.documents) {
            assert!(originals.contains(d), "round {round}: accepted a record that was never sent: {d}");
        }
        // Every record sent is collected or named: missing by its seq, or
        // under a boot whose run record did not come either.
        let no_run_record = c.problems.iter().any(|p| p.why.starts_with("no run record"));
        for (r, doc) in sent.iter().zip(&originals) {
            let seq = r["seq"].as_u64().unwrap() as u32;
            let named = c.problems.iter().any(|p| p.seq == Some(seq) && p.run_id.as_deref() == Some("runB"));
            assert!(
                c.documents.contains(doc) || named || no_run_record,
                "round {round}: seq {seq} was neither collected nor reported: {:?}",
                c.problems
            );
        }
        if round % 7 != 0 {
            // Records none of whose lines were touched must all come back.
            for (r, doc) in sent.iter().zip(&originals) {
                let framed = encode("runB", r["seq"].as_u64().unwrap() as u32, r.to_string().as_bytes());
                let intact =
                    framed.iter().all(|f| lines.iter().enumerate().any(|(i, l)| l == f && !touched.contains(&i)));
                if intact {
                    assert!(c.documents.contains(doc), "round {round}: an intact record was lost (seq {})", r["seq"]);
                }
            }
        }
    }
}

#[test]
fn a_second_copy_repairs_a_damaged_first_and_boots_are_told_apart() {
    let recs: Vec<Value> = (0..3).map(|s| record("runC", s)).collect();
    let mut first = boot_log("runC", &recs);
    let victim = first.iter().position(|l| l.contains("@BM1 D runC 1 0/")).unwrap();
    first[victim].replace_range(20..22, "##");
    let crashed = [
        "[    0.000000] Linux version 2.6.9-42.ELsmp (gcc 3.4.6)".to_string(),
        "Kernel panic - not syncing: VFS".into(),
    ];
    let text = [first, crashed.to_vec(), boot_log("runC", &recs)].concat().join("\n");
    let c = collect(&[write("repeat", &text)]);
    let mut got = result_docs(&c.documents);
    got.sort_by_key(Document::seq);
    assert_eq!(got, documents(&recs), "all three recovered, once each (seq 1 from the second boot)");
    assert_eq!(c.problems.len(), 1, "the crashed boot: {:?}", c.problems);
    assert!(c.problems[0].why.contains("kernel 2.6.9-42.ELsmp") && c.problems[0].why.contains("crashed"));
    // The damaged line cost nothing: the second boot's copy was intact.
    assert_eq!(c.notes.len(), 1, "{:?}", c.notes);
    assert_eq!(c.notes[0].line, Some(victim as u64 + 1));
    assert!(c.notes[0].why.contains("an intact copy of this record was read from"), "{}", c.notes[0].why);
    assert_eq!(c.boots.len(), 3);
    assert!(c.boots[1].no_results && c.boots[1].panics == 1);
    assert_eq!(c.boots[1].kernel.as_deref(), Some("2.6.9-42.ELsmp"));
}

/// A capture that holds one boot twice (a console server's log rotated by
/// copytruncate and concatenated, a BMC's SOL replaying its buffer) is the
/// same records as the boot once: no problem, nothing to note.
#[test]
fn the_same_boot_twice_is_the_boot_once() {
    let recs: Vec<Value> = (0..4).map(|s| record("runT", s)).collect();
    let once = boot_log("runT", &recs).join("\r\n");
    let c1 = collect(&[write("once", &once)]);
    let c2 = collect(&[write("twice", &format!("{once}\r\n{once}"))]);
    assert_eq!(c1.documents, c2.documents);
    assert!(c2.problems.is_empty() && c2.notes.is_empty(), "{:?} {:?}", c2.problems, c2.notes);
    assert_eq!(c2.duplicates, 5, "four results and the run record, seen again");
}

/// The splice that failed the demo: the boot written again over a follower
/// that was behind, so the first copy stops in the middle of a framed line
/// and the second copy starts right after it. The cut line is a note (the
/// second copy has the record intact), not a problem.
#[test]
fn a_line_cut_by_a_splice_with_an_intact_copy_is_a_note() {
    let recs: Vec<Value> = (0..3).map(|s| record("runS", s)).collect();
    let lines = boot_log("runS", &recs);
    let text = lines.join("\n");
    let cut_line = lines.iter().position(|l| l.starts_with("@BM1 D runS 2 1/")).unwrap();
    let cut_at = text.find(&lines[cut_line]).unwrap() + 40;
    let spliced = format!("{}{text}", &text[..cut_at]);
    let c = collect(&[write("spliced", &spliced)]);
    assert_eq!(result_docs(&c.documents), documents(&recs));
    assert!(c.problems.is_empty(), "{:?}", c.problems);
    assert_eq!(c.notes.len(), 1, "{:?}", c.notes);
    assert_eq!((c.notes[0].line, c.notes[0].why.contains("nothing lost")), (Some(cut_line as u64 + 1), true));
    // Cut inside the run id, the line names no record: a note all the same,
    // as every result the run record counts was read intact.
    let in_run_id = text.find(&lines[cut_line]).unwrap() + 12;
    let c = collect(&[write("spliced-id", &format!("{}{text}", &text[..in_run_id]))]);
    assert!(c.problems.is_empty() && c.notes.len() == 1, "{:?} {:?}", c.problems, c.notes);
    assert!(c.notes[0].why.contains("every result each boot's run record counts was read intact"), "{:?}", c.notes);
    // Without the intact copy, the same cut line is a problem, and the record missing.
    let alone = collect(&[write("cut-alone", &text[..cut_at])]);
    assert!(
        alone.problems.iter().any(|p| p.why.contains("malformed") || p.why.contains("CRC")),
        "{:?}",
        alone.problems
    );
    assert!(alone.notes.is_empty());
}

#[test]
fn stick_files_and_serial_agree_or_the_difference_is_reported() {
    let recs: Vec<Value> = (0..2).map(|s| record("runD", s)).collect();
    let log = write("agree", &boot_log("runD", &recs).join("\n"));
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("stick-{}", std::process::id()));
    let results = dir.join("bootmark/results");
    std::fs::create_dir_all(&results).unwrap();
    let mut changed = recs[1].clone();
    changed["times"]["wall_s"] = json!(99.0);
    std::fs::write(results.join("runD.jsonl"), format!("{}\n{}\n{{not json\n", recs[0], changed)).unwrap();
    let c = collect(&[log, dir.clone()]);
    assert_eq!(result_docs(&c.documents), documents(&recs), "serial came first and is kept");
    assert_eq!(c.duplicates, 1);
    let whys: Vec<&str> = c.problems.iter().map(|p| p.why.as_str()).collect();
    let differs = c.problems.iter().find(|p| p.why.contains("differs from the one read first")).expect("named");
    assert_eq!((differs.run_id.as_deref(), differs.seq), (Some("runD"), Some(1)));
    assert!(differs.file.ends_with("runD.jsonl") && differs.why.contains("agree-"), "both copies named: {differs:?}");
    assert!(differs.why.contains("the report uses"), "{}", differs.why);
    assert!(whys.iter().any(|w| w.contains("not valid JSON")), "{whys:?}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A framed document whose checksums are right but which is not a whole
/// record of its schema (a field missing, a field of the wrong type) is a
/// problem that names the field, not a row with holes in the report.
#[test]
fn a_record_that_does_not_fit_its_schema_is_rejected_by_name() {
    let mut no_times = record("runE", 0);
    no_times.as_object_mut().unwrap().remove("times");
    let mut bad_status = record("runE", 1);
    bad_status["status"] = json!("fine");
    let good = record("runE", 2);
    let text = boot_log("runE", &[no_times, bad_status, good.clone()]).join("\n");
    let c = collect(&[write("schema", &text)]);
    assert_eq!(result_docs(&c.documents), documents(&[good]));
    let whys: Vec<&str> = c.problems.iter().map(|p| p.why.as_str()).collect();
    assert_eq!(whys.len(), 2, "{whys:?}");
    assert!(whys[0].contains("not a valid bootmark.result/1 record") && whys[0].contains("`times`"), "{whys:?}");
    assert!(whys[1].contains("unknown variant `fine`"), "{whys:?}");
    let named: Vec<_> = c.problems.iter().map(|p| (p.run_id.as_deref(), p.seq)).collect();
    assert_eq!(named, [(Some("runE"), Some(0)), (Some("runE"), Some(1))], "rejected by name, not also missing");
}
