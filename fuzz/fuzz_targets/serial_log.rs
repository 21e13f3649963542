//! Fuzz the serial log reader (and the partition table parser) with two
//! properties:
//! - any bytes in, as a serial log or as a disk: no panic;
//! - a real log (three framed records among printk noise) damaged where the
//!   fuzzer says: every document accepted is one of the three records,
//!   byte-for-byte the same JSON (a damaged record is dropped, never
//!   accepted changed), and a record none of whose lines was touched is
//!   still accepted.
#![no_main]

use bootmark::collect::Document;
use bootmark::record::Record;
use libfuzzer_sys::fuzz_target;

fn records() -> Vec<Document> {
    (0..3)
        .map(|seq| {
            let mut r = Record::blank("20060101-000000-fuzz", seq);
            r.workload.name = "seqwrite".into();
            r.workload.params = serde_json::json!({"mib": 1024 * (seq + 1)});
            r.times.wall_s = 112.5 + seq as f64;
            r.notes = vec!["ü ✓".into()];
            Document::Result(Box::new(r))
        })
        .collect()
}

/// The log: noise, then each record's framed lines with a kernel message
/// between them. Returns the text and each record's byte range in it.
fn log(records: &[Document]) -> (Vec<u8>, Vec<std::ops::Range<usize>>) {
    let mut text = b"[    2.4] Run /init as init process\n".to_vec();
    let mut ranges = Vec::new();
    for (seq, r) in records.iter().enumerate() {
        let start = text.len();
        let bytes = serde_json::to_vec(r).unwrap();
        for line in bootmark::framing::encode("20060101-000000-fuzz", seq as u32, &bytes) {
            text.extend_from_slice(line.as_bytes());
            text.extend_from_slice(b"\r\n");
        }
        ranges.push(start..text.len());
        text.extend_from_slice(b"[   12.0] sd 0:0:0:0: [sda] Write cache: enabled\n");
    }
    (text, ranges)
}

fuzz_target!(|data: &[u8]| {
    // Any bytes: no panic.
    let mut c = bootmark::collect::Collector::new(None);
    bootmark::collect::serial::collect_reader(data, "fuzz", &mut c).unwrap();
    for line in String::from_utf8_lossy(data).lines() {
        let _ = bootmark::framing::parse_line(line);
    }
    // The same bytes as a disk: its partition tables must never panic either
    // (hand-written, and read by /init from disks it did not make).
    for sector in [512, 4096] {
        let _ = bootmark::partition_table::partition_uuids(&mut bootmark::partition_table::slice_reader(data), sector);
    }

    // A real log, damaged: each 3 bytes of input overwrite one byte of it.
    let originals = records();
    let (mut text, ranges) = log(&originals);
    let mut touched = vec![false; originals.len()];
    for m in data.chunks_exact(3) {
        let at = u16::from_le_bytes([m[0], m[1]]) as usize % text.len();
        if text[at] != m[2] {
            text[at] = m[2];
            touched.iter_mut().zip(&ranges).filter(|(_, r)| r.contains(&at)).for_each(|(t, _)| *t = true);
        }
    }
    let mut c = bootmark::collect::Collector::new(None);
    bootmark::collect::serial::collect_reader(&text[..], "fuzz", &mut c).unwrap();
    for d in &c.documents {
        assert!(originals.contains(d), "accepted a document that was never framed: {d}");
    }
    for (original, t) in originals.iter().zip(&touched) {
        if !t {
            assert!(c.documents.contains(original), "lost an undamaged record: {original}");
        }
    }
});
