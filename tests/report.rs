//! `bootmark report` against golden outputs: tests/data/report/ holds real
//! records (the demo's sweep on two kernels; a mix of a failed run, a LAVA
//! boot, an i686 boot and a sweep boot) and the tables, JSON, CSV and HTML
//! the report made of them before it streamed. Streaming must not change a
//! byte of what it prints; a change made on purpose (the verdict, folded
//! findings, dimensions that do not vary said once) rewrites the golden
//! files, and their diff is the change a reader sees.

use std::path::PathBuf;
use std::process::Command;

fn data(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/report").join(name)
}

fn report(records: &str, args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_bootmark"))
        .arg("report")
        .arg(data(records))
        .args(args)
        .output()
        .expect("bootmark runs");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).expect("UTF-8")
}

fn golden(name: &str) -> String {
    std::fs::read_to_string(data(name)).expect("golden file")
}

#[test]
fn the_demo_sweep_reports_as_before_in_every_format() {
    for format in ["md", "csv", "json", "html"] {
        let got = report("demo-records.jsonl", &["--format", format]);
        assert!(got == golden(&format!("demo.{format}")), "--format {format} differs:\n{got}");
    }
    let got = report("demo-records.jsonl", &["--by", "kernel", "--baseline", "6.1.0-50-rt"]);
    assert_eq!(got, golden("demo-by-kernel.md"));
}

#[test]
fn failed_runs_mixed_kernels_and_dotted_paths_report_as_before() {
    assert_eq!(report("mixed-records.jsonl", &[]), golden("mixed.md"));
    assert_eq!(report("mixed-records.jsonl", &["--format", "json"]), golden("mixed.json"));
    assert_eq!(report("mixed-records.jsonl", &["--by", "kernel,workload.params.size"]), golden("mixed-by-path.md"));
}

/// Records of the demo made to stall: every rule has something to say, so
/// the report reads many of them whole.
fn stalled_records(dir: &std::path::Path) -> (PathBuf, Vec<bootmark::record::Record>) {
    let text = std::fs::read_to_string(data("demo-records.jsonl")).unwrap();
    let mut records = Vec::new();
    for (i, line) in text.lines().filter(|l| l.contains("bootmark.result/1")).enumerate() {
        let mut r: bootmark::record::Record = serde_json::from_str(line).unwrap();
        if let Some(p) = r.responsiveness.as_mut() {
            // Growing stalls: each record is worse than the one before.
            p.max_ms = 1500.0 + 100.0 * i as f64;
            p.read.max_ms = 900.0 + i as f64;
        }
        r.latency.write.max_ms = 400.0;
        records.push(r);
    }
    let path = dir.join("stalled.jsonl");
    let lines: Vec<String> = records.iter().map(|r| serde_json::to_string(r).unwrap()).collect();
    std::fs::write(&path, lines.join("\n") + "\n").unwrap();
    // As read back from the file: the same text the report parses.
    let records = lines.iter().map(|l| serde_json::from_str(l).unwrap()).collect();
    (path, records)
}

#[test]
fn records_read_at_a_glance_report_like_records_read_whole() {
    let dir = std::env::temp_dir().join(format!("bootmark-glance-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (path, records) = stalled_records(&dir);
    let out =
        Command::new(env!("CARGO_BIN_EXE_bootmark")).args(["report", "--format", "json"]).arg(&path).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    // Compared as text: JSON numbers read back need not be the same f64.
    let streamed = String::from_utf8(out.stdout).unwrap();
    // In memory, each record is whole (`Glance::of`).
    let whole = bootmark::report::report(&records, Default::default()).unwrap();
    let whole = whole.json();
    assert_eq!(streamed, format!("{whole:#}\n"));
    let rules: Vec<&str> = whole["findings"].as_array().unwrap().iter().map(|f| f["rule"].as_str().unwrap()).collect();
    for rule in ["stall", "read-starvation", "dirty-limit", "flush"] {
        assert!(rules.contains(&rule), "{rule} missing from {rules:?}");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A record broken where the table does not look (a counter of the wrong
/// type) is left out of the table and named, exit 1: the same judgement
/// as collect's, not a row built from its good parts.
#[test]
fn a_record_broken_anywhere_is_left_out_and_named() {
    let dir = std::env::temp_dir().join(format!("bootmark-broken-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (path, _) = stalled_records(&dir);
    let report_json = |p: &std::path::Path| {
        let out =
            Command::new(env!("CARGO_BIN_EXE_bootmark")).args(["report", "--format", "json"]).arg(p).output().unwrap();
        let rows: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let n: u64 = rows["rows"].as_array().unwrap().iter().map(|r| r["n"].as_u64().unwrap()).sum();
        (out.status.code(), n, String::from_utf8_lossy(&out.stderr).into_owned())
    };
    let (_, whole_n, _) = report_json(&path);
    let text = std::fs::read_to_string(&path).unwrap();
    let broken = text.replacen("\"voluntary_switches\":", "\"voluntary_switches\":\"many\",\"was\":", 1);
    assert_ne!(broken, text);
    std::fs::write(&path, broken).unwrap();
    let (code, n, stderr) = report_json(&path);
    assert_eq!(code, Some(1), "{stderr}");
    assert_eq!(n, whole_n - 1, "the broken record is not counted");
    assert!(stderr.contains(":1:") && stderr.contains("expected u64"), "{stderr}");
    let collect = Command::new(env!("CARGO_BIN_EXE_bootmark")).arg("collect").arg(&path).output().unwrap();
    assert_eq!(collect.status.code(), Some(1), "collect judges it the same");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// The same kernel booted with Secure Boot on and off, and a record from
/// before the firmware was read: `--by firmware` keeps them apart, and the
/// record without it is "?", not merged into either.
#[test]
fn records_group_by_what_the_firmware_enforced() {
    let dir = std::env::temp_dir().join(format!("bootmark-firmware-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let text = std::fs::read_to_string(data("demo-records.jsonl")).unwrap();
    let line = text.lines().find(|l| l.contains("bootmark.result/1")).unwrap();
    let firmware = [
        Some(serde_json::json!({"boot_mode": "uefi", "secure_boot": true, "lockdown": "integrity"})),
        Some(serde_json::json!({"boot_mode": "uefi", "secure_boot": false, "lockdown": "none"})),
        None,
    ];
    let mut lines = Vec::new();
    for (i, fw) in firmware.iter().enumerate() {
        let mut r: serde_json::Value = serde_json::from_str(line).unwrap();
        r["run_id"] = format!("run-{i}").into();
        if let Some(fw) = fw {
            r["host"]["firmware"] = fw.clone();
        }
        lines.push(r.to_string());
    }
    let path = dir.join("firmware.jsonl");
    std::fs::write(&path, lines.join("\n") + "\n").unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_bootmark"))
        .args(["report", "--format", "json", "--by", "kernel,firmware"])
        .arg(&path)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let keys: Vec<String> = report["rows"].as_array().unwrap().iter().map(|r| r["key"][1].to_string()).collect();
    assert_eq!(
        keys,
        ["\"UEFI, Secure Boot on, lockdown integrity\"", "\"UEFI, Secure Boot off, lockdown none\"", "\"?\""]
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

/// The demo's three Debian generations on `--machine dl140` (2026-12-03,
/// docs/measurements.md): 6.1's writer in dirty throttling while writing
/// and in wbt while flushing, 5.10's wchan hidden. Each wait is named by
/// its own mechanism, and wbt is never called dirty throttling (the
/// misattribution of the first dirty-limit finding); the whole report is
/// golden.
#[test]
fn the_generations_demo_attributes_each_wait_to_its_mechanism() {
    let got = report("generations-records.jsonl", &[]);
    assert_eq!(got, golden("generations.md"));
    let json: serde_json::Value =
        serde_json::from_str(&report("generations-records.jsonl", &["--format", "json"])).unwrap();
    let finding = |rule: &str| json["findings"].as_array().unwrap().iter().find(|f| f["rule"] == rule).cloned();
    // 5.10 hides where its writer slept and has no pause traced: a candidate;
    // 6.1 and 6.12 were seen in balance_dirty_pages: throttled.
    let dirty: Vec<serde_json::Value> =
        json["findings"].as_array().unwrap().iter().filter(|f| f["rule"] == "dirty-limit").cloned().collect();
    let [hidden, seen] = dirty.as_slice() else { panic!("two dirty-limit findings: {dirty:#?}") };
    let hidden_said = hidden["sentence"].as_str().unwrap();
    assert!(hidden["subject"].as_str().unwrap().starts_with("5.10.0-46-amd64"), "{hidden}");
    assert!(hidden_said.contains("no event shows it throttled there") && hidden_said.contains("a candidate"));
    assert!(hidden_said.contains("its wchan read 0 in 48 of 48 samples"), "5.10 hides it: {hidden_said}");
    let evidence: Vec<&str> = seen["evidence"].as_array().unwrap().iter().filter_map(|e| e.as_str()).collect();
    assert!(
        evidence.iter().any(|e| e.starts_with("6.1.0-57-amd64 · seqwrite: timeline.writer_wchan and writer_stacks: balance_dirty_pages in 8 of 49 samples, all while writing")),
        "{evidence:#?}"
    );
    assert!(seen["sentence"].as_str().unwrap().contains(": the writer was throttled at the dirty limit"));
    assert!(!seen.to_string().contains("rq_qos_wait in"), "wbt counted as dirty throttling: {seen}");
    // No wbt events in these records: whether wbt held the writes or the queue was full is a candidate.
    assert_eq!(finding("writeback-throttling"), None, "wbt named without its events");
    let wbt = finding("qos-wait").expect("6.1 and 6.12 waited under wbt_wait while flushing");
    let sentence = wbt["sentence"].as_str().unwrap();
    assert!(sentence.contains("rq_qos_wait ← wbt_wait") && sentence.contains("all while flushing"), "{sentence}");
    assert!(sentence.contains("no event here says: a candidate"), "{sentence}");
    assert!(!wbt["subject"].as_str().unwrap().contains("5.10"), "no mechanism named from a hidden wchan");
    // Where the writer waited is no cause of 6.12's difference: 5.10 could not show it.
    let verdict = json["verdict"].to_string();
    assert!(!verdict.contains("writeback-throttling"), "{verdict}");
    let comparison = finding("comparison").unwrap();
    assert!(
        comparison["sentence"]
            .as_str()
            .unwrap()
            .contains("the probe's uncached 4 KiB read took 20.0 ms instead of 3.4 ms")
    );
    // These records have no block tracepoints: the request sizes differ and
    // the reads waited longer, but that the disk held the reads behind the
    // requests no event shows — a correlation the comparison states, no cause.
    assert!(!verdict.contains("write requests were"), "{verdict}");
    assert!(comparison["sentence"].as_str().unwrap().contains("(the queue's max_sectors_kb: 1280 against 128)"));
    // A p99 of about 120 ticks a run is near their worst, and the comparison says so.
    assert!(comparison["sentence"].as_str().unwrap().contains("each p99 is of about 123 probe ticks a run"));
}

/// The same demo re-run with the kernel's tracepoints in its records
/// (2026-12-03, docs/measurements.md "The demo with the kernel's
/// tracepoints"): 5.10 hides its wchan, but its balance_dirty_pages
/// tracepoint paused the writer 130 times; 6.12's reads were held by the
/// disk itself (block_rq_issue → complete) 18.8 ms at the median against
/// 1.5 ms, which proves the request-size cause; and 6.12's one 913 ms read
/// was not in the device (no read there took over 49 ms), so the
/// read-starvation finding places it outside and names no cause. The whole
/// report is golden.
#[test]
fn the_traced_generations_demo_quotes_the_kernels_events_for_each_wait() {
    let got = report("generations-traced-records.jsonl", &[]);
    assert_eq!(got, golden("generations-traced.md"));
    let json: serde_json::Value =
        serde_json::from_str(&report("generations-traced-records.jsonl", &["--format", "json"])).unwrap();
    let finding = |rule: &str| json["findings"].as_array().unwrap().iter().find(|f| f["rule"] == rule).cloned();
    let text = |rule: &str| finding(rule).map(|f| f["sentence"].as_str().unwrap().to_string()).unwrap_or_default();
    let dirty = text("dirty-limit");
    assert!(dirty.contains("its wchan read 0 in 50 of 50 samples"), "{dirty}");
    assert!(dirty.contains("balance_dirty_pages tracepoint paused writers 130 times, 1944 ms in all"), "{dirty}");
    // 5.10 hides its wchan: the pauses are the tracepoint's, every task's.
    assert!(
        dirty.contains("writers were paused at the dirty limit (the kernel's tracepoint counts every task's pauses"),
        "paused by the kernel: {dirty}"
    );
    // wbt's own events: one step, none down, depth 24: its ceiling, not wbt holding writes back.
    assert_eq!(text("writeback-throttling"), "", "wbt never scaled down");
    let wbt = text("wbt-ceiling");
    assert!(wbt.contains("wbt's own tracepoints on sda: 1 step (0 down)") && !wbt.contains("dirty throttling ("));
    assert!(wbt.contains("not wbt protecting reads"), "{wbt}");
    let starved = text("read-starvation");
    assert!(starved.contains("not in the device: sda held no read over 49 ms"), "{starved}");
    assert!(starved.contains("about 864 ms passed before the read reached it"), "{starved}");
    let verdict = json["verdict"].to_string();
    assert!(!verdict.contains("read-starvation"), "a wait placed nowhere is no cause: {verdict}");
    assert!(
        verdict.contains("(the disk held its reads 18.8 ms against 1.5 ms at the median: block tracepoints)"),
        "{verdict}"
    );
    let comparison = text("comparison");
    assert!(comparison.contains("the difference is the disk's, not the queue's before it"), "{comparison}");
    let rows = json["rows"].as_array().unwrap();
    let device_read = |kernel: &str| {
        rows.iter()
            .find(|r| r["key"][0] == kernel && r["workload"] == "seqwrite")
            .map(|r| r["device_read_p50_ms"]["median"].as_f64().unwrap())
    };
    assert_eq!(device_read("5.10.0-46-amd64").map(|ms| (ms * 10.0).round() / 10.0), Some(1.5));
    // The verdict structured for a program: 6.12's seqwrite against 5.10's.
    let comparison = json["comparisons"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["candidate"] == "6.12.118+deb13-amd64" && c["workload"] == "seqwrite")
        .expect("a comparison of 6.12's seqwrite");
    assert_eq!(
        (comparison["baseline"].as_str(), comparison["metric"].as_str()),
        (Some("5.10.0-46-amd64"), Some("real_s"))
    );
    assert_eq!((comparison["significant"].as_bool(), comparison["runs"][0].as_u64()), (Some(false), Some(3)));
    // Three runs a side: a rank test's smallest two-sided p is 0.1; these overlap.
    assert_eq!(comparison["mann_whitney_p"].as_f64(), Some(0.7));
    let causes = comparison["causes"].as_array().unwrap();
    assert_eq!(causes.len(), 1, "{causes:?}");
    assert_eq!(causes[0]["status"], "candidate", "a request size stays a candidate until a run tests it");
    assert_eq!(
        (causes[0]["code"].as_str(), causes[0]["explains"].as_str()),
        (Some("request-size"), Some("probe_p99_ms"))
    );
    let [lo, hi] = [0, 1].map(|i| comparison["ratio_interval"][i].as_f64().unwrap());
    assert!(lo < 1.0 && hi > 1.0 && lo < comparison["ratio"].as_f64().unwrap(), "{comparison}");
}

/// `--format text` is what one pastes into an email to a kernel list:
/// plain ASCII, no line over 80 columns, the verdict, the table, the
/// findings and how to reproduce (each kernel's build and command line).
#[test]
fn the_text_report_pastes_into_an_email() {
    for (records, golden_text) in
        [("generations-traced-records.jsonl", "generations-traced.txt"), ("mixed-records.jsonl", "mixed.txt")]
    {
        let got = report(records, &["--format", "text"]);
        assert!(got.is_ascii(), "{records}: not ASCII");
        let long: Vec<&str> = got.lines().filter(|l| l.chars().count() > 80).collect();
        assert!(long.is_empty(), "{records}: lines over 80 columns: {long:#?}");
        assert_eq!(got, golden(golden_text), "{records}");
    }
    let got = report("generations-traced-records.jsonl", &["--format", "text"]);
    for said in [
        "Verdict\n* 6.1.0-57-amd64 against 5.10.0-46-amd64",
        "To reproduce",
        "5.10.0-46-amd64: Debian 5.10.262-1",
        "--kernel-deb linux-image-6.1.0-57-amd64",
        "20261203-172958-d98a (6)",
    ] {
        assert!(got.contains(said), "{said:?} missing:\n{got}");
    }
}

/// A lab run across boots (2026-12-03: `cargo xtask demo --kernel-deb
/// linux-image-amd64@bookworm --kernel-deb linux-image-amd64@trixie --boots 2
/// --repeat 2`, interleaved k0 k1 k0 k1): the boot is the unit. Two boots a
/// side can never be significant by rank (p 0.33 at best), the verdict says
/// so with its p, no bootstrap interval is made of two values, and the
/// records carry QEMU's throttle, which the report says.
#[test]
fn a_comparison_across_boots_takes_the_boot_as_its_unit() {
    for (format, golden_file) in [("md", "boots.md"), ("text", "boots.txt"), ("json", "boots.json")] {
        assert_eq!(report("boots-records.jsonl", &["--format", format]), golden(golden_file), "--format {format}");
    }
    let md = golden("boots.md");
    assert!(md.contains("seqwrite the same time (not significant across 2 vs 2 boots, p 0.33)"), "{md}");
    assert!(!md.contains("in one boot"), "{md}");
    assert!(md.contains("disk throttled to 30 MB/s and 240 requests/s of 128 KiB in 16 of them"), "{md}");
    let json: serde_json::Value = serde_json::from_str(&golden("boots.json")).unwrap();
    for c in json["comparisons"].as_array().unwrap() {
        let across = &c["across_boots"];
        assert_eq!(across["boots"], serde_json::json!([2, 2]), "{c}");
        assert!(across["mann_whitney_p"].as_f64().unwrap() >= 1.0 / 3.0 - 1e-12, "{c}");
        assert!(across["ratio_interval"].is_null(), "a bootstrap of two values: {c}");
    }
    // The request-size candidate carries the experiment that would test it
    // (`bootmark confirm --set … --toward …`): 6.12 capped at 6.1's request
    // size, its probe read's median toward 6.1's.
    let causes: Vec<&serde_json::Value> = json["comparisons"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|c| c["causes"].as_array().unwrap())
        .filter(|c| c["code"] == "request-size")
        .collect();
    let [cause] = causes.as_slice() else { panic!("{causes:?}") };
    assert_eq!(cause["status"], "candidate");
    assert_eq!(cause["test"]["set"], "queue.max_sectors_kb=128");
    assert_eq!(cause["test"]["metric"], "seqwrite.read_p50_ms");
    let baseline = json["rows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["key"][0].as_str().unwrap().starts_with("6.1.") && r["workload"] == "seqwrite")
        .unwrap();
    let read = baseline["probe_read_p50_ms"]["median"].as_f64();
    assert_eq!(cause["test"]["toward"].as_f64(), read, "toward is the baseline's probe read median");
}

/// A confirmation's verdict as `bootmark confirm` writes it (`verdict.json`),
/// of 6.12 with 6.1's request size, in a directory of its own.
fn confirmation(name: &str, kernel: &str, outcome: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("bootmark-report-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let verdict = serde_json::json!({
        "schema": "bootmark.confirmation/1",
        "entry": "k2",
        "kernel": kernel,
        "metric": "seqwrite.read_p50_ms",
        "set": "queue.max_sectors_kb=128",
        "removes": true,
        "toward": 2.03,
        "outcome": outcome,
        "unit": "runs a side, interleaved in one boot",
        "sides": 5,
        "medians": [15.5, 3.15],
        "p": 0.0079,
        "words": format!("{outcome}: …"),
        "runs": ["20261207-084656-6a27"]
    });
    std::fs::write(dir.join("verdict.json"), verdict.to_string()).unwrap();
    dir
}

/// The request-size candidate of boots-records.jsonl (6.12 against 6.1) in
/// the JSON, and the verdict's line.
fn request_size_cause(json: &str) -> (serde_json::Value, String) {
    let json: serde_json::Value = serde_json::from_str(json).unwrap();
    let cause = json["comparisons"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|c| c["causes"].as_array().unwrap())
        .find(|c| c["code"] == "request-size")
        .cloned()
        .expect("the request-size cause");
    (cause, json["verdict"][0].as_str().unwrap().to_string())
}

/// `bootmark report --confirmation`: the candidate a confirmation tested is
/// called a cause only when it confirmed it, "not the cause" when it refuted
/// it, and stays a candidate, with what was tried, when it could not tell;
/// in the verdict's sentence (every format) and the JSON's cause, each with
/// its figures and run. One of another kernel leaves the report as it was,
/// and is named on stderr; a file that is no verdict stops it, named.
#[test]
fn a_confirmation_decides_its_candidate_in_every_format() {
    let kernel = "6.12.118+deb13-amd64";
    let confirmed = confirmation("confirmed", kernel, "confirmed");
    let arg = confirmed.display().to_string();
    let (cause, line) =
        request_size_cause(&report("boots-records.jsonl", &["--format", "json", "--confirmation", &arg]));
    assert_eq!(
        (cause["status"].as_str(), cause["confirmations"][0]["outcome"].as_str()),
        (Some("cause"), Some("confirmed"))
    );
    assert!(line.contains(". Cause: seqwrite: its write requests were 1.1 MiB"), "{line}");
    let said = "confirmed by experiment (bootmark confirm: with queue.max_sectors_kb=128 seqwrite.read_p50_ms went \
                15.5 → 3.15, medians of 5 runs a side, interleaved in one boot, p 0.0079; run 20261207-084656-6a27)";
    assert!(line.contains(said) && !line.contains("Candidate cause"), "{line}");
    for format in ["md", "html", "text"] {
        let got = report("boots-records.jsonl", &["--format", format, "--confirmation", &arg]);
        // The text report wraps at 80 columns and says → as ->.
        let flat = got.split_whitespace().collect::<Vec<_>>().join(" ").replace("->", "→");
        assert!(flat.contains("confirmed by experiment (bootmark confirm: with queue.max_sectors_kb=128"), "{format}");
        assert!(flat.contains("run 20261207-084656-6a27)"), "{format}: {got}");
    }
    let refuted = confirmation("refuted", kernel, "refuted");
    let (cause, line) = request_size_cause(&report(
        "boots-records.jsonl",
        &["--format", "json", "--confirmation", &refuted.display().to_string()],
    ));
    assert_eq!(cause["status"], "refuted");
    assert!(line.contains(". Not the cause: seqwrite: its write requests were 1.1 MiB"), "{line}");
    assert!(line.contains("refuted by experiment (bootmark confirm:") && !line.contains("Candidate cause"), "{line}");
    let undecided = confirmation("cant-tell", kernel, "cant_tell");
    let (cause, line) = request_size_cause(&report(
        "boots-records.jsonl",
        &["--format", "json", "--confirmation", &undecided.display().to_string()],
    ));
    assert_eq!(cause["status"], "candidate");
    assert!(
        line.contains("Candidate cause (a run that changes that setting alone would confirm it): seqwrite"),
        "{line}"
    );
    assert!(line.contains("tested, undecided (can't tell) (bootmark confirm:"), "{line}");
    // Two that disagree: still a candidate, each said, none called the cause.
    let (conflict, line) = request_size_cause(&report(
        "boots-records.jsonl",
        &["--format", "json", "--confirmation", &arg, "--confirmation", &refuted.display().to_string()],
    ));
    assert_eq!(
        (conflict["status"].as_str(), conflict["confirmations"].as_array().map(Vec::len)),
        (Some("candidate"), Some(2))
    );
    assert!(
        line.contains("tested with outcomes that differ: confirmed by experiment (")
            && !line.contains(". Cause: seqwrite"),
        "{line}"
    );
    // Another kernel's: nothing folded in, the report as before, the confirmation named.
    let other = confirmation("other", "6.1.0-57-amd64", "confirmed");
    let out = Command::new(env!("CARGO_BIN_EXE_bootmark"))
        .args(["report", "--format", "json", "--confirmation"])
        .arg(&other)
        .arg(data("boots-records.jsonl"))
        .output()
        .unwrap();
    assert!(out.status.success());
    assert_eq!(String::from_utf8_lossy(&out.stdout), golden("boots.json"));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("--confirmation: it tested queue.max_sectors_kb=128 on k2 (6.1.0-57-amd64)"), "{stderr}");
    // A report's JSON given as a confirmation: refused, naming it, before any report.
    let out = Command::new(env!("CARGO_BIN_EXE_bootmark"))
        .args(["report", "--confirmation"])
        .arg(data("boots.json"))
        .arg(data("boots-records.jsonl"))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("boots.json: not a confirmation's verdict") && out.stdout.is_empty(), "{stderr}");
    for dir in [confirmed, refuted, undecided, other] {
        std::fs::remove_dir_all(dir).unwrap();
    }
}

/// One `<figure>` of the HTML page: its id, its axes' ranges and records.
struct Drawn {
    id: String,
    x: (f64, f64),
    y: (f64, f64),
    records: Vec<String>,
    svg: String,
}

fn figures(page: &str) -> Vec<Drawn> {
    let attr = |tag: &str, name: &str| {
        let at = tag.find(&format!("{name}=\"")).unwrap() + name.len() + 2;
        tag[at..at + tag[at..].find('"').unwrap()].to_string()
    };
    let range = |s: String| {
        let (a, b) = s.split_once("..").unwrap();
        (a.parse::<f64>().unwrap(), b.parse::<f64>().unwrap())
    };
    page.split("<figure ")
        .skip(1)
        .map(|f| {
            let tag = &f[..f.find('>').unwrap()];
            Drawn {
                id: attr(tag, "id"),
                x: range(attr(tag, "data-x")),
                y: range(attr(tag, "data-y")),
                records: attr(tag, "data-records").split_whitespace().map(String::from).collect(),
                svg: f[f.find("<svg").unwrap()..f.find("</svg>").unwrap()].to_string(),
            }
        })
        .collect()
}

/// The pictures of the demo's records (one boot per kernel) and of a lab
/// run across boots: per workload the waits over time and a CDF whose axes
/// hold every wait of its runs, and one timeline per run with its
/// attribution strip, the kernel's dirty limits and the flush marked; each
/// names its records. `--svg DIR` writes the same figures as files.
#[test]
fn the_pictures_draw_every_run_with_axes_that_hold_its_data() {
    for (records_file, runs) in
        [("generations-traced-records.jsonl", 18), ("boots-records.jsonl", 16), ("boots6-records.jsonl", 24)]
    {
        let page = report(records_file, &["--format", "html"]);
        assert!(!page.contains("<script"), "self-contained, no scripts");
        let drawn = figures(&page);
        assert!(!drawn.iter().any(|f| f.id.starts_with("parts-")), "these records keep no read and ls apart");
        let text = std::fs::read_to_string(data(records_file)).unwrap();
        let records: Vec<bootmark::record::Record> = text
            .lines()
            .filter(|l| l.contains("bootmark.result/1"))
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        let with_probe: Vec<&bootmark::record::Record> =
            records.iter().filter(|r| !r.timeline.probe_t_s.is_empty()).collect();
        assert_eq!(with_probe.len(), runs, "{records_file}");
        let mut workloads: Vec<&str> = with_probe.iter().map(|r| r.workload.name.as_str()).collect();
        workloads.sort();
        workloads.dedup();
        for w in workloads {
            let of_w: Vec<&&bootmark::record::Record> = with_probe.iter().filter(|r| r.workload.name == w).collect();
            let waits = drawn.iter().find(|f| f.id == format!("waits-{w}")).expect("waits over time");
            let cdf = drawn.iter().find(|f| f.id == format!("cdf-{w}")).expect("a CDF per workload");
            for r in &of_w {
                let tl = &r.timeline;
                let id = format!("{}:{}", r.run_id, r.seq);
                assert!(waits.records.contains(&id) && cdf.records.contains(&id), "{id} named");
                for (t, ms) in tl.probe_t_s.iter().zip(&tl.probe_response_ms) {
                    let at = t - tl.workload_start_s;
                    assert!(waits.x.0 <= at && at <= waits.x.1, "{w}: {at} s outside {:?}", waits.x);
                    assert!(waits.y.0 <= *ms && *ms <= waits.y.1, "{w}: {ms} ms outside {:?}", waits.y);
                    assert!(cdf.x.0 <= *ms && *ms <= cdf.x.1, "{w}: CDF {ms} ms outside {:?}", cdf.x);
                }
                assert!(
                    waits.y.1 >= 1000.0
                        && waits.y.1
                            <= 10.0
                                * waits.y.0.max(tl.probe_response_ms.iter().copied().fold(0.0, f64::max)).max(1000.0)
                );
                let run = drawn
                    .iter()
                    .find(|f| f.id == format!("run-{}-{}", r.run_id, r.seq))
                    .unwrap_or_else(|| panic!("{id}: its timeline drawn"));
                assert_eq!(run.records, std::slice::from_ref(&id));
                assert_eq!((run.x, run.y), (waits.x, waits.y), "{id}: the workload's runs share their axes");
                for must in ["nr_dirty_threshold", "nr_dirty_background_threshold", "where the writer waited"] {
                    assert!(run.svg.contains(must), "{id}: {must}");
                }
                if r.times.writes_returned_s.is_some() {
                    assert!(run.svg.contains("writes returned, flush began"), "{id}");
                }
            }
        }
        let dir = std::env::temp_dir().join(format!("bootmark-svg-{}-{runs}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let out = Command::new(env!("CARGO_BIN_EXE_bootmark"))
            .arg("report")
            .arg(data(records_file))
            .arg("--svg")
            .arg(&dir)
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        for f in &drawn {
            let file = std::fs::read_to_string(dir.join(format!("{}.svg", f.id))).expect("one file per figure");
            assert!(file.contains("<desc>bootmark report; records (RUN_ID:SEQ): "), "{}", f.id);
        }
        assert_eq!(std::fs::read_dir(&dir).unwrap().count(), drawn.len());
        // Again into the same directory: bootmark's own pictures are replaced.
        let input = dir.with_extension("input.jsonl");
        std::fs::copy(data(records_file), &input).unwrap();
        let again = || {
            Command::new(env!("CARGO_BIN_EXE_bootmark"))
                .arg("report")
                .arg(&input)
                .arg("--svg")
                .arg(&dir)
                .output()
                .unwrap()
        };
        assert!(again().status.success());
        // A link to the input, a hard link to it, an unrelated file at a picture's name:
        // each refused before anything is written, the input and the file unchanged.
        let first = dir.join(format!("{}.svg", drawn[0].id));
        let records = std::fs::read(&input).unwrap();
        let planted: [(&str, &dyn Fn()); 3] = [
            ("is a link", &|| std::os::unix::fs::symlink(&input, &first).unwrap()),
            ("is not a picture bootmark wrote", &|| std::fs::hard_link(&input, &first).unwrap()),
            ("is not a picture bootmark wrote", &|| std::fs::write(&first, "my notes\n").unwrap()),
        ];
        for (said, plant) in planted {
            let before = std::fs::read(&first).ok();
            std::fs::remove_file(&first).unwrap();
            plant();
            let planted_bytes = std::fs::read(&first).unwrap();
            let out = again();
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert_eq!(out.status.code(), Some(2), "{said}: {stderr}");
            assert!(stderr.contains(said) && stderr.contains("remove it or give --svg another directory"), "{stderr}");
            assert_eq!(std::fs::read(&input).unwrap(), records, "the input changed");
            assert_eq!(std::fs::read(&first).unwrap(), planted_bytes);
            std::fs::remove_file(&first).unwrap();
            std::fs::write(&first, before.unwrap()).unwrap();
        }
        // A FIFO at a picture's name: refused without opening it (an open would wait for a writer).
        let before = std::fs::read(&first).unwrap();
        std::fs::remove_file(&first).unwrap();
        let fifo = std::ffi::CString::new(first.to_str().unwrap()).unwrap();
        // SAFETY: mkfifo with a NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o644) }, 0);
        let out = again();
        assert_eq!(out.status.code(), Some(2), "{}", String::from_utf8_lossy(&out.stderr));
        std::fs::remove_file(&first).unwrap();
        std::fs::write(&first, before).unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
        std::fs::remove_file(&input).unwrap();
    }
}

/// Six boots a kernel (2026-12-03: `cargo xtask demo --kernel-deb
/// linux-image-amd64@bookworm --kernel-deb linux-image-amd64@trixie --boots 6
/// --repeat 1`, 643 s, interleaved): each kernel against itself, its first
/// three boots against its last three, gives the A/A noise floor. manyfiles'
/// 0.3 % between the kernels is within its 3.8 %; seqwrite's 3.2 % is beyond
/// its 2.6 % but not significant (p 0.39), and with six boots a side the
/// bootstrap gives the ratio an interval that holds 1.
#[test]
fn six_boots_a_kernel_give_the_noise_floor() {
    let md = report("boots6-records.jsonl", &[]);
    assert_eq!(md, golden("boots6.md"));
    assert!(
        md.contains(
            "manyfiles the same (not significant across 6 vs 6 boots, p 0.94; within the A/A noise floor of 3.8 %)"
        ),
        "{md}"
    );
    assert!(md.contains("seqwrite 1.03× faster (not significant across 6 vs 6 boots, p 0.39), probe p99"), "{md}");
    assert!(md.contains("- A/A noise floor (each group's first boots against its last, in real time): manyfiles 6.1.0-57-amd64 0.974× (3 vs 3 boots, p 0.70);"), "{md}");
    let json: serde_json::Value = serde_json::from_str(&report("boots6-records.jsonl", &["--format", "json"])).unwrap();
    let floors = json["noise_floor"].as_array().unwrap();
    assert_eq!(floors.len(), 4);
    assert!(floors.iter().all(|f| f["boots"] == serde_json::json!([3, 3])), "{floors:?}");
    for c in json["comparisons"].as_array().unwrap() {
        let [lo, hi] = [0, 1].map(|i| c["across_boots"]["ratio_interval"][i].as_f64().unwrap());
        assert!(lo < 1.0 && 1.0 < hi, "six boots a side: an interval, holding 1 here: {c}");
        assert!(c["noise_floor"].as_f64().unwrap() > 0.02, "{c}");
    }
}

/// A record whose figures cannot be true — a probe timeline of 1e308 ms, a
/// p99 of 1e308, an infinite-looking throughput — is named on stderr and
/// left out of the table, the pictures and the export, and every command
/// still ends at once (an HTML page of such a timeline never finished).
#[test]
fn implausible_figures_are_named_and_left_out_everywhere() {
    let dir = std::env::temp_dir().join(format!("bootmark-implausible-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let text = std::fs::read_to_string(data("demo-records.jsonl")).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    type Edit<'a> = (&'a str, &'a dyn Fn(&mut serde_json::Value));
    let edits: [Edit; 3] = [
        ("implausible value 1e308", &|r| {
            let n = r["timeline"]["probe_response_ms"].as_array().unwrap().len();
            r["timeline"]["probe_response_ms"] = serde_json::json!(vec![1e308; n]);
        }),
        ("responsiveness.p99_ms is 1e308", &|r| r["responsiveness"]["p99_ms"] = 1e308.into()),
        ("throughput_mib_s is 1e300", &|r| r["throughput_mib_s"] = 1e300.into()),
    ];
    for (said, edit) in edits {
        let mut first: serde_json::Value = serde_json::from_str(lines[0]).unwrap();
        edit(&mut first);
        let input = dir.join("records.jsonl");
        let rest = lines[1..].join("\n");
        std::fs::write(&input, format!("{first}\n{rest}\n")).unwrap();
        for args in [&["--format", "md"][..], &["--format", "html"], &["--svg", dir.join("svg").to_str().unwrap()]] {
            let started = std::time::Instant::now();
            let out =
                Command::new(env!("CARGO_BIN_EXE_bootmark")).arg("report").arg(&input).args(args).output().unwrap();
            let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
            assert_eq!(out.status.code(), Some(1), "{args:?}: {stderr}");
            assert!(stderr.contains(said), "{said}: {stderr}");
            assert!(
                !stdout.contains("NaN") && !stdout.contains("inf") && !stdout.contains("e308"),
                "{args:?}: {stdout}"
            );
            assert!(started.elapsed().as_secs() < 60, "{args:?} took {:?}", started.elapsed());
        }
        let out = Command::new(env!("CARGO_BIN_EXE_bootmark"))
            .args(["export", "--origin", "bootmark"])
            .arg(&input)
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(!stdout.contains("e308") && !stdout.contains("e300"), "export passed it on: {said}");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A run with 200,000 probe samples: its page draws at most 2000 points a
/// series (each span's lowest and highest), says so, and stays small.
#[test]
fn a_long_timeline_is_drawn_thinned_and_says_so() {
    let text = std::fs::read_to_string(data("demo-records.jsonl")).unwrap();
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    let mut first: serde_json::Value = serde_json::from_str(&lines[0]).unwrap();
    let t0 = first["timeline"]["workload_start_s"].as_f64().unwrap();
    let n = 200_000;
    let t: Vec<f64> = (0..n).map(|i| t0 + i as f64 * 0.00005).collect();
    let ms: Vec<f64> = (0..n).map(|i| if i == n / 2 { 2500.0 } else { 4.0 + (i % 7) as f64 }).collect();
    first["timeline"]["probe_t_s"] = serde_json::json!(t);
    first["timeline"]["probe_response_ms"] = serde_json::json!(ms);
    first["timeline"]["probe_read_ms"] = serde_json::json!([]);
    first["timeline"]["probe_ls_ms"] = serde_json::json!([]);
    lines[0] = first.to_string();
    let input = std::env::temp_dir().join(format!("bootmark-long-timeline-{}.jsonl", std::process::id()));
    std::fs::write(&input, lines.join("\n") + "\n").unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_bootmark"))
        .arg("report")
        .arg(&input)
        .args(["--format", "html", "--timeline", &format!("{}:{}", first["run_id"].as_str().unwrap(), first["seq"])])
        .output()
        .unwrap();
    let page = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(
        page.contains("200000 samples, each span&apos;s lowest and highest of 2000 drawn")
            || page.contains("200000 samples, each span's lowest and highest of 2000 drawn"),
        "no note of the thinning"
    );
    assert!(page.len() < 8 << 20, "{} bytes", page.len());
    std::fs::remove_file(&input).unwrap();
}

/// The planted truth of `cargo xtask check mechanisms` (2026-12-06, Debian
/// 12's 6.1 on a disk throttled to 8 MB/s): the same 192 MiB write once with
/// wbt's default 75 ms target and once with 2 ms. The writer's flush waited
/// under wbt_wait in both (52 of 103 samples each; one of the second's read
/// wchan 0 while its state and stack said asleep there): only wbt's own events
/// tell them apart — one step up and none down, against 210 scale-downs —
/// and the report says "wbt's ceiling" of the first and "held by wbt" of the
/// second, each from its own record. The whole report is golden.
#[test]
fn wbt_is_said_to_hold_writes_back_only_where_it_scaled_down() {
    let got = report("mechanisms-records.jsonl", &[]);
    assert_eq!(got, golden("mechanisms.md"));
    let json: serde_json::Value =
        serde_json::from_str(&report("mechanisms-records.jsonl", &["--format", "json"])).unwrap();
    let finding = |rule: &str| json["findings"].as_array().unwrap().iter().find(|f| f["rule"] == rule).cloned();
    let full = finding("wbt-ceiling").expect("the default target: wbt's ceiling");
    assert_eq!(full["subject"], "dirty40 · seqwrite");
    assert!(full["sentence"].as_str().unwrap().contains("1 step (0 down)"), "{full}");
    let held = finding("writeback-throttling").expect("the 2 ms target: wbt held the writes");
    assert_eq!(held["subject"], "wbtlow · seqwrite");
    assert!(held["sentence"].as_str().unwrap().contains("419 steps (210 down), the lowest write depth they set 1"));
    assert_eq!(finding("qos-wait"), None, "wbt's events were read: no candidate");
    // Every sample kept its own stack and state; the probe was sampled too.
    let records: Vec<bootmark::record::Record> = std::fs::read_to_string(data("mechanisms-records.jsonl"))
        .unwrap()
        .lines()
        .filter(|l| l.contains("\"schema\":\"bootmark.result/1\""))
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(records.len(), 2);
    for r in &records {
        let tl = &r.timeline;
        assert_eq!((tl.writer_stack.len(), tl.writer_state.len()), (tl.t_s.len(), tl.t_s.len()));
        assert!(tl.probe_wchan.iter().flatten().any(|w| w == "folio_wait_bit_common"), "the probe's read waited");
        assert!(tl.series.get("psi_io_some_us").is_some_and(|s| s.iter().flatten().count() > 0), "6.1 has PSI");
    }
}
