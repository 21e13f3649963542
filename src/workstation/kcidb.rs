//! KCIDB export: records as a KCIDB I/O document (schema v5.3, as the
//! `kcidb-io` package defines it), the format in which CI systems submit
//! builds and tests to KernelCI's common results database.
//!
//! - One checkout per kernel (its release and version string). KCIDB keys
//!   checkouts on git commits; distribution kernels (RPMs, .debs) and
//!   pre-git kernels have none, so the checkout id is the origin's own
//!   (`ORIGIN:` + the release + a hash of the version string) and the
//!   package, when the image manifest says it, goes in `misc`.
//! - One build per kernel and architecture, with the config's name and hash
//!   and the package it came from, where the image manifest records them.
//! - One test per workload run, path `bootmark.<workload>`, status from the
//!   record (ok PASS, timeout FAIL: the kernel did not let it finish, error
//!   ERROR: storage errors, the result is unknown), the throughput in
//!   `number` (MiB/s); and one per other figure (`…probe_p99`, `…max_stall`
//!   in ms, `…stalls_over_1s`, `…durable` in s). The machine is in
//!   `environment`; the failure's error and notes in `log_excerpt`.
//! - A boot that ran nothing (its run record is an error with no records) is
//!   a `bootmark` test with status MISS; a sweep variant a kernel could not
//!   apply is a `bootmark.<variant>` test with status SKIP.
//!
//! Ids come from the records (run id, seq), so exporting the same records
//! again gives the same document; objects are sorted by id.

use crate::schema::record::{Record, RunRecord, Status};
use serde_json::{Map, Value, json};
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;

/// The KCIDB I/O schema version written.
pub const VERSION: (u32, u32) = (5, 3);

/// What the image manifest knows about a kernel: where it came from and its config.
#[derive(Clone, Debug, Default)]
pub struct KernelSource {
    /// The manifest entry's `origin` (a .deb, an RPM, a file; with SHA-256).
    pub origin: Option<Value>,
    pub config_name: Option<String>,
    pub config_sha256: Option<String>,
}

/// The export's inputs besides the records.
#[derive(Clone, Debug, Default)]
pub struct Options {
    /// The CI system's name in KCIDB (lowercase letters, digits, `_`).
    pub origin: String,
    /// Kernel sources by boot entry label (`bootmark.entry=` on the record's command line).
    pub sources: BTreeMap<String, KernelSource>,
}

/// Each boot entry's kernel source from an image directory's manifest.json
/// (written by `cargo xtask image`): label → package and config.
pub fn sources_from_manifest(dir: &std::path::Path) -> Result<BTreeMap<String, KernelSource>, String> {
    let path = dir.join("manifest.json");
    let text = std::fs::read_to_string(&path).map_err(|e| format!("--image {}: {e}", dir.display()))?;
    let m: Value = serde_json::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))?;
    let entries = m["entries"]
        .as_array()
        .ok_or_else(|| format!("{}: no entries: not a bootmark image manifest", path.display()))?;
    let text_of = |v: &Value| v.as_str().map(str::to_string);
    Ok(entries
        .iter()
        .filter_map(|e| {
            let source = KernelSource {
                origin: Some(e["origin"].clone()).filter(|o| !o.is_null()),
                config_name: text_of(&e["kernel_config"]),
                config_sha256: text_of(&e["kernel_config_sha256"]),
            };
            Some((text_of(&e["label"])?, source))
        })
        .collect())
}

/// Is `origin` a name KCIDB accepts?
pub fn check_origin(origin: &str) -> Result<(), String> {
    if !origin.is_empty() && origin.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_') {
        Ok(())
    } else {
        Err(format!("--origin {origin}: KCIDB origins are lowercase letters, digits and '_'"))
    }
}

/// The document for `records` and `runs`.
pub fn export<'a>(
    records: impl IntoIterator<Item = &'a Record>,
    runs: impl IntoIterator<Item = &'a RunRecord>,
    opts: &Options,
) -> Value {
    let mut doc = Doc::default();
    for r in records {
        doc.record(r, opts);
    }
    for run in runs {
        doc.run(run, opts);
    }
    json!({
        "version": {"major": VERSION.0, "minor": VERSION.1},
        "checkouts": doc.checkouts.into_values().collect::<Vec<_>>(),
        "builds": doc.builds.into_values().collect::<Vec<_>>(),
        "tests": doc.tests.into_values().collect::<Vec<_>>(),
    })
}

#[derive(Default)]
struct Doc {
    checkouts: BTreeMap<String, Value>,
    builds: BTreeMap<String, Value>,
    tests: BTreeMap<String, Value>,
}

/// A kernel as KCIDB sees it: ids of its checkout and build.
struct Kernel {
    checkout_id: String,
    build_id: String,
}

impl Doc {
    fn kernel(&mut self, k: &crate::schema::record::Kernel, opts: &Options) -> Kernel {
        let release = id_part(k.release.as_deref().unwrap_or("unknown"));
        let release = release.as_str();
        let version = k.version.as_deref().unwrap_or("");
        let arch = id_part(k.arch.as_deref().unwrap_or("unknown"));
        let arch = arch.as_str();
        let hash: String = Sha256::digest(version.as_bytes()).iter().take(4).map(|b| format!("{b:02x}")).collect();
        let checkout_id = format!("{}:{release}-{hash}", opts.origin);
        let build_id = format!("{checkout_id}-{arch}");
        let source = crate::schema::record::boot_entry(k.cmdline.as_deref())
            .and_then(|e| opts.sources.get(e))
            .cloned()
            .unwrap_or_default();
        self.checkouts.entry(checkout_id.clone()).or_insert_with(|| {
            json!({
                "id": checkout_id,
                "origin": opts.origin,
                "comment": format!("Linux {release}"),
                "valid": true,
                "misc": {"kernel_release": release, "kernel_version": version, "package": source.origin,
                         "note": "a distribution or pre-git kernel: no git commit; the package identifies it"},
            })
        });
        self.builds.entry(build_id.clone()).or_insert_with(|| {
            let mut b = json!({
                "id": build_id,
                "checkout_id": checkout_id,
                "origin": opts.origin,
                "architecture": arch,
                "comment": format!("Linux {release} ({arch})"),
                "status": "PASS",
                "misc": {"package": source.origin, "config_sha256": source.config_sha256},
            });
            if let Some(c) = &source.config_name {
                b["config_name"] = json!(c);
            }
            b
        });
        Kernel { checkout_id, build_id }
    }

    fn record(&mut self, r: &Record, opts: &Options) {
        let k = self.kernel(&r.kernel, opts);
        let status = match r.status {
            Status::Ok => "PASS",
            Status::Timeout => "FAIL",
            Status::Error => "ERROR",
        };
        let id = format!("{}:{}:{}", opts.origin, id_part(&r.run_id), r.seq);
        let path = format!("bootmark.{}", path_part(&r.workload.name));
        let mut main = self.test_base(r, &k, &id, &path, status);
        main["number"] = json!({"value": finite(r.throughput_mib_s), "unit": "MiB/s"});
        if r.status != Status::Ok {
            main["log_excerpt"] = json!(excerpt(r));
        }
        self.tests.insert(id.clone(), main);
        let mut figures = Vec::new();
        if let Some(p) = &r.responsiveness {
            figures.push(("probe_p99", p.p99_ms, "ms"));
            figures.push(("max_stall", p.max_ms, "ms"));
            figures.push(("stalls_over_1s", p.stalls_over_1s as f64, ""));
        }
        if let Some(d) = r.times.durable_s {
            figures.push(("durable", d, "s"));
        }
        for (name, value, unit) in figures {
            let fid = format!("{id}:{name}");
            let mut t = self.test_base(r, &k, &fid, &format!("{path}.{name}"), status);
            t["number"] = if unit.is_empty() {
                json!({"value": finite(value)})
            } else {
                json!({"value": finite(value), "unit": unit})
            };
            self.tests.insert(fid, t);
        }
    }

    fn test_base(&self, r: &Record, k: &Kernel, id: &str, path: &str, status: &str) -> Value {
        json!({
            "id": id,
            "build_id": k.build_id,
            "origin": id.split(':').next().unwrap_or(""),
            "path": path,
            "status": status,
            "start_time": rfc3339(r.started_unix_s),
            "duration": finite(r.times.wall_s),
            "environment": environment(r),
            "misc": {
                "run_id": r.run_id, "seq": r.seq, "repetition": r.repetition, "plan": r.plan.name,
                "workload": r.workload, "variant": r.variant.as_ref().map(|v| &v.name),
                "kernel_cmdline": r.kernel.cmdline, "vm": r.vm, "bootmark_version": r.bootmark.version,
                "checkout_id": k.checkout_id,
            },
        })
    }

    fn run(&mut self, run: &RunRecord, opts: &Options) {
        let k = self.kernel(&run.kernel, opts);
        let base = |id: &str, path: &str, status: &str, why: &str| {
            json!({
                "id": id, "build_id": k.build_id, "origin": opts.origin, "path": path, "status": status,
                "start_time": rfc3339(run.started_unix_s),
                "duration": finite(run.finished_unix_s - run.started_unix_s),
                "log_excerpt": truncate(why),
                "misc": {"run_id": run.run_id, "kernel_cmdline": run.kernel.cmdline},
            })
        };
        if run.status != Status::Ok && run.records == 0 {
            let id = format!("{}:{}:boot", opts.origin, id_part(&run.run_id));
            let why = run.error.as_deref().unwrap_or("the boot ran nothing");
            self.tests.insert(id.clone(), base(&id, "bootmark", "MISS", why));
        }
        // The run record's facts: variant name → why this kernel could not apply it.
        let skipped = run.facts.get("variants_skipped").and_then(Value::as_object).cloned().unwrap_or_default();
        for (name, why) in skipped {
            let why = why.as_str().unwrap_or("");
            let id = format!("{}:{}:variant:{}", opts.origin, id_part(&run.run_id), id_part(&name));
            let t = base(&id, &format!("bootmark.{}", path_part(&name)), "SKIP", why);
            self.tests.insert(id, t);
        }
    }
}

/// A path segment KCIDB accepts: letters, digits, `_` and `-`, never empty.
fn path_part(s: &str) -> String {
    let part: String = s.chars().map(|c| if c.is_ascii_alphanumeric() || c == '-' { c } else { '_' }).collect();
    if part.is_empty() { "unnamed".into() } else { part }
}

/// A part of an id (after the origin): printable, no NUL or other control
/// character (which KCIDB refuses), never empty. Records are verified, but
/// a `.jsonl` can hold anything that parses.
fn id_part(s: &str) -> String {
    let part: String = s.chars().map(|c| if c.is_control() { '_' } else { c }).collect();
    if part.is_empty() { "unknown".into() } else { part }
}

fn finite(v: f64) -> f64 {
    if v.is_finite() { v } else { 0.0 }
}

/// The machine: host, CPU, memory, disk, filesystem, scheduler.
fn environment(r: &Record) -> Value {
    let (h, s) = (&r.host, &r.storage);
    let device = s.device.as_ref();
    let comment = [
        h.dmi_product.clone().or_else(|| h.hostname.clone()),
        s.fs.clone().map(|fs| format!("{fs} on {}", device.map_or("?", |d| d.name.as_str()))),
        device.and_then(|d| d.model.clone()),
        s.scheduler.clone(),
    ]
    .into_iter()
    .flatten()
    .collect::<Vec<_>>()
    .join(" · ");
    let mut misc = Map::new();
    misc.insert("host".into(), json!(h));
    misc.insert(
        "storage".into(),
        json!({"fs": s.fs, "mount_options": s.mount_options, "scheduler": s.scheduler,
        "nr_requests": s.nr_requests, "device": device, "write_cache": s.write_cache}),
    );
    json!({"comment": comment, "misc": misc})
}

/// Why a run failed: its error, notes and the kernel's blocked tasks.
fn excerpt(r: &Record) -> String {
    let mut text = format!("{}: {}\n", r.status.name(), r.error.as_deref().unwrap_or(""));
    for n in &r.notes {
        text += &format!("note: {n}\n");
    }
    for l in r.blocked_tasks.iter().take(50) {
        text += l;
        text.push('\n');
    }
    truncate(&text)
}

/// At most KCIDB's 16384 characters, no NUL.
fn truncate(s: &str) -> String {
    s.replace('\0', "").chars().take(16384).collect()
}

/// Seconds since the epoch as RFC 3339 in UTC (`2026-11-30T18:56:55.946000+00:00`).
pub fn rfc3339(unix_s: f64) -> String {
    // RFC 3339 has four-digit years: past 9999-12-31 (or not a time) is the epoch.
    const YEAR_10000: f64 = 253_402_300_800.0;
    let unix_s = if unix_s.is_finite() && (0.0..YEAR_10000).contains(&unix_s) { unix_s } else { 0.0 };
    let secs = unix_s.floor() as i64;
    let micros = ((unix_s - secs as f64) * 1e6).round().min(999_999.0) as i64;
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!("{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{micros:06}+00:00", rem / 3600, rem % 3600 / 60, rem % 60)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_are_rfc3339_in_utc() {
        assert_eq!(rfc3339(0.0), "1970-01-01T00:00:00.000000+00:00");
        assert_eq!(rfc3339(1_796_065_015.5), "2026-11-30T18:56:55.500000+00:00", "date -u -d @1796065015");
        assert_eq!(rfc3339(951_782_400.0), "2000-02-29T00:00:00.000000+00:00");
        assert_eq!(rfc3339(f64::NAN), "1970-01-01T00:00:00.000000+00:00");
    }

    #[test]
    fn origins_and_paths_are_what_kcidb_accepts() {
        assert!(check_origin("bootmark_lab1").is_ok());
        assert!(check_origin("Lab-1").is_err() && check_origin("").is_err());
        assert_eq!(path_part("seq write/1"), "seq_write_1");
        assert_eq!(crate::schema::record::boot_entry(Some("console=ttyS0 bootmark.entry=k1 x")), Some("k1"));
    }

    #[test]
    fn statuses_figures_and_ids_follow_the_records() {
        let mut ok = crate::schema::record::tests::record();
        ok.workload.name = "seqwrite".into();
        ok.kernel.release = Some("2.6.9-42.ELsmp".into());
        ok.kernel.cmdline = Some("bootmark.entry=k0".into());
        ok.throughput_mib_s = 3.2;
        ok.times.durable_s = Some(315.0);
        ok.responsiveness = Some(Default::default());
        let mut cut = ok.clone();
        cut.seq = 1;
        cut.status = Status::Timeout;
        cut.error = Some("the workload ran past its deadline".into());
        let mut sources = BTreeMap::new();
        sources.insert(
            "k0".to_string(),
            KernelSource { origin: Some(json!({"rpm": "kernel-smp-2.6.9-42.EL.i686.rpm"})), ..Default::default() },
        );
        let opts = Options { origin: "lab".into(), sources };
        let doc = export([&ok, &cut], [], &opts);
        assert_eq!(doc["checkouts"].as_array().unwrap().len(), 1);
        assert_eq!(doc["builds"][0]["misc"]["package"]["rpm"], "kernel-smp-2.6.9-42.EL.i686.rpm");
        let tests = doc["tests"].as_array().unwrap();
        assert_eq!(tests.len(), 10, "two runs × (main, p99, max stall, stalls, durable)");
        let main = tests.iter().find(|t| t["id"] == "lab:r:0").unwrap();
        assert_eq!((main["status"].as_str(), main["path"].as_str()), (Some("PASS"), Some("bootmark.seqwrite")));
        assert_eq!(main["number"], json!({"value": 3.2, "unit": "MiB/s"}));
        let failed = tests.iter().find(|t| t["id"] == "lab:r:1").unwrap();
        assert_eq!(failed["status"], "FAIL");
        assert!(failed["log_excerpt"].as_str().unwrap().contains("ran past its deadline"));
        assert_eq!(tests.iter().find(|t| t["id"] == "lab:r:1:durable").unwrap()["number"]["unit"], "s");
        assert_eq!(export([&cut, &ok], [], &opts), doc, "the same records, in any order, give the same document");
    }

    /// A boot that ran nothing is a MISS; a variant the kernel lacks a SKIP.
    #[test]
    fn boots_that_ran_nothing_and_variants_not_applied_are_said() {
        let run = |status, records, facts: Value| -> RunRecord {
            serde_json::from_value(json!({"schema": "bootmark.run/1", "run_id": "b", "seq": 0, "status": status,
                "error": "no target given", "started_unix_s": 1.0, "finished_unix_s": 31.0,
                "bootmark": {"version": "0"}, "kernel": {"release": "2.6.9"}, "host": {"cpus": 1},
                "records": records, "failed_records": 0, "facts": facts,
                "kernel_log": {"lines": 0, "counts": {}, "tail": []}}))
            .unwrap()
        };
        let opts = Options { origin: "lab".into(), ..Default::default() };
        let failed = run("error", 0, json!({}));
        let swept = run("ok", 4, json!({"variants_skipped": {"wbt-off": "no wbt_lat_usec before 4.10"}}));
        let doc = export([], [&failed, &swept], &opts);
        let tests = doc["tests"].as_array().unwrap();
        assert_eq!(tests.len(), 2, "{tests:?}");
        assert_eq!((tests[0]["status"].as_str(), tests[0]["path"].as_str()), (Some("MISS"), Some("bootmark")));
        assert_eq!(tests[0]["log_excerpt"], "no target given");
        assert_eq!((tests[1]["status"].as_str(), tests[1]["path"].as_str()), (Some("SKIP"), Some("bootmark.wbt-off")));
    }
}
