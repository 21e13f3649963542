//! The KCIDB export against the reference validator: the `kcidb-io`
//! package from PyPI, in a virtual environment under target/cache, checks
//! the documents `bootmark export` makes of real records (tests/data/report:
//! ok and failed runs, a sweep, two architectures), of one kernel's alone,
//! of a timed-out run, and of boots that ran nothing or skipped a variant.

use crate::host::deps;
use crate::host::fs;
use crate::host::process::{cmd, shell};
use crate::host::project::{Result, project_root};
use bootmark::record::{Document, Record, RunRecord, Status};
use std::path::{Path, PathBuf};

/// The kcidb-io release validated against (its latest schema is v5.3).
const KCIDB_IO: &str = "kcidb-io==141";

const VALIDATE: &str = r#"
import json, sys, kcidb_io
schema = kcidb_io.schema.LATEST
for path in sys.argv[1:]:
    doc = json.load(open(path))
    schema.validate_exactly(doc)
    print(f"{path}: valid KCIDB v{schema.major}.{schema.minor}: {len(doc['checkouts'])} checkouts, {len(doc['builds'])} builds, {len(doc['tests'])} tests")
# The validator must refuse what KCIDB would: a status it does not know, an id without its origin.
for key, bad in [("status", "OK"), ("id", "no-origin-prefix")]:
    doc = json.load(open(sys.argv[1]))
    doc["tests"][0][key] = bad
    try:
        schema.validate_exactly(doc)
    except Exception:
        continue
    sys.exit(f"kcidb-io accepted a test with {key} {bad!r}: the check proves nothing")
"#;

pub fn check() -> Result<()> {
    let python = venv()?;
    let dir = project_root().join("target/kcidb");
    fs::create_dir_all(&dir)?;
    let (records, runs) = real_records()?;
    let opts = bootmark::kcidb::Options { origin: "bootmark_ci".into(), ..Default::default() };
    let mut files = Vec::new();
    let mut write = |name: &str, records: &[&Record], runs: &[&RunRecord]| -> Result<()> {
        let doc = bootmark::kcidb::export(records.iter().copied(), runs.iter().copied(), &opts);
        let path = dir.join(name);
        fs::write(&path, serde_json::to_vec_pretty(&doc).unwrap())?;
        files.push(path);
        Ok(())
    };
    let all: Vec<&Record> = records.iter().collect();
    let all_runs: Vec<&RunRecord> = runs.iter().collect();
    write("all.json", &all, &all_runs)?;
    let first_kernel = &records[0].kernel.release;
    let one: Vec<&Record> = records.iter().filter(|r| r.kernel.release == *first_kernel).collect();
    write("one-kernel.json", &one, &[])?;
    let mut timed_out = records[0].clone();
    timed_out.status = Status::Timeout;
    timed_out.error = Some("the workload ran past its deadline (300 s) and was killed".into());
    timed_out.blocked_tasks = vec!["task:bootmark-work state:D stack:0 pid:212".into()];
    let mut nothing = runs[0].clone();
    nothing.status = Status::Error;
    nothing.records = 0;
    nothing.error = Some("no target given, so nothing was run".into());
    nothing.facts.insert("variants_skipped".into(), serde_json::json!({"wbt-off": "no wbt_lat_usec on 2.6.9"}));
    write("failures.json", &[&timed_out], &[&nothing])?;
    // What a .jsonl can hold that a boot never writes: ids with control
    // characters, an empty workload name, a start in the year 10000.
    let mut awkward = records[1].clone();
    awkward.run_id = "run\0with\u{7}controls".into();
    awkward.kernel.release = Some("6.1.0\0-odd".into());
    awkward.workload.name = String::new();
    awkward.started_unix_s = 253_402_300_800.0 + 86_400.0;
    let mut awkward_run = runs[0].clone();
    awkward_run.run_id = "\0".into();
    awkward_run.status = Status::Error;
    awkward_run.records = 0;
    awkward_run.facts.insert("variants_skipped".into(), serde_json::json!({"": "a variant without a name"}));
    write("awkward.json", &[&awkward], &[&awkward_run])?;
    let sh = shell()?;
    let out = crate::host::process::run(cmd!(sh, "{python} -c {VALIDATE}").args(&files))?;
    print!("{out}");
    let statuses = ["PASS", "FAIL", "ERROR", "MISS", "SKIP"];
    let text: String = files.iter().map(|f| std::fs::read_to_string(f).unwrap_or_default()).collect();
    if let Some(s) = statuses.iter().find(|s| !text.contains(&format!("\"status\": \"{s}\""))) {
        return Err(format!("no test with status {s} was exported: the check covers less than it should"));
    }
    Ok(())
}

/// tests/data/report's records and run records.
fn real_records() -> Result<(Vec<Record>, Vec<RunRecord>)> {
    let path = project_root().join("tests/data/report/mixed-records.jsonl");
    let text = std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    let (mut records, mut runs) = (Vec::new(), Vec::new());
    for line in text.lines() {
        match Document::from_json(line.as_bytes())? {
            Document::Result(r) => records.push(*r),
            Document::Run(r) => runs.push(*r),
        }
    }
    let failed = records.iter().any(|r| r.status != Status::Ok);
    let kernels: std::collections::BTreeSet<_> = records.iter().map(|r| &r.kernel.release).collect();
    if !failed || kernels.len() < 2 || runs.is_empty() {
        return Err(format!("{}: expected failed runs, several kernels and run records", path.display()));
    }
    Ok((records, runs))
}

/// Python with kcidb-io: a virtual environment made once under target/cache.
fn venv() -> Result<PathBuf> {
    let dir = project_root().join("target/cache/kcidb-venv");
    let python = dir.join("bin/python");
    let sh = shell()?;
    if python.exists() && crate::host::process::succeeds(cmd!(sh, "{python} -c 'import kcidb_io'")) {
        return Ok(python);
    }
    let _ = std::fs::remove_dir_all(&dir);
    if make_venv(&dir).is_err() {
        // Debian ships venv's pip bootstrap separately.
        if !deps::can_install() {
            return Err("python3 -m venv failed: install python3-venv (sudo apt-get install python3-venv)".into());
        }
        eprintln!("xtask: apt-get install python3-venv");
        crate::host::process::run(cmd!(sh, "apt-get install -y -qq --no-install-recommends python3-venv"))?;
        let _ = std::fs::remove_dir_all(&dir);
        make_venv(&dir)?;
    }
    eprintln!("xtask: pip install {KCIDB_IO} (from PyPI, into {})", dir.display());
    let pip = dir.join("bin/pip");
    crate::host::process::run(cmd!(sh, "{pip} install -q {KCIDB_IO}"))
        .map_err(|e| format!("cannot install {KCIDB_IO} from PyPI: {e}"))?;
    Ok(python)
}

fn make_venv(dir: &Path) -> Result<()> {
    // Debian's python3, not one earlier on PATH (pyenv) that may lack venv.
    let python = if Path::new("/usr/bin/python3").exists() { "/usr/bin/python3" } else { "python3" };
    let sh = shell()?;
    crate::host::process::run(cmd!(sh, "{python} -m venv {dir}")).map(|_| ())
}
