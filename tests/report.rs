//! `bootmark report` against golden outputs: tests/data/report/ holds real
//! records (the demo's sweep on two kernels; a mix of a failed run, a LAVA
//! boot, an i686 boot and a sweep boot) and the tables, JSON, CSV and HTML
//! the report made of them before it streamed. Streaming must not change a
//! byte of what it prints.

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
