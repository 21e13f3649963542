//! A sweep in QEMU: the `sweep` plan on Debian's kernel. Its image has two
//! entries: the plain one runs dirty_ratio 40, then 10, then the target
//! remounted with data=writeback, in one boot; the
//! `boot15` variant's own entry boots with `sysctl.vm.dirty_ratio=15` on the
//! kernel command line. One `qemu --sequence` boots both. Each variant's
//! records must show the setting asked for and read back, the records' own
//! vm evidence must agree, and the report must group them by variant with
//! the first as the baseline. Then a second boot, [`restore`]: variants of
//! every kind of setting twice round, each run on the settings as found
//! plus its own.

use crate::boot::disks::scratch_disk;
use crate::boot::qemu;
use crate::build::image;
use crate::check::boots::support::{results, serial_documents, test_boot, test_image};
use crate::host::project::Result;
use bootmark::record::{Record, RunRecord, Status};
use std::path::Path;

pub fn test(package: &str, base: &Path) -> Result<()> {
    let image_args =
        image::Args { plan: "sweep".into(), ..test_image(vec![package.into()], base.join("image-sweep"), Some(1)) };
    let out = image::build(&image_args)?;
    let disk = base.join("scratch-sweep.img");
    scratch_disk(&disk, "ext3", 512)?;
    let booted = qemu::boot(&qemu::Args { sequence: true, ..test_boot(out, disk, base.join("serial-sweep.log")) })?;
    let docs = serial_documents(&booted.serial);
    let runs: Vec<&RunRecord> = docs.iter().filter_map(|d| d.run()).collect();
    if runs.len() != 2 || runs.iter().any(|r| r.status != Status::Ok || r.facts.contains_key("variants_skipped")) {
        let what: Vec<String> =
            runs.iter().map(|r| format!("{:?} {:?}", r.error, r.facts.get("variants_skipped"))).collect();
        return Err(format!(
            "expected two ok boots without skipped variants, got {what:?}\n{}",
            qemu::tail(&booted.serial, 25)
        ));
    }
    let records = results(&docs);
    let names: Vec<&str> = records.iter().filter_map(|r| r.variant.as_ref().map(|v| v.name.as_str())).collect();
    if names != ["dirty40", "dirty40", "dirty10", "dirty10", "writeback", "writeback", "boot15", "boot15"] {
        return Err(format!(
            "expected two workloads under dirty40, dirty10, writeback, then boot15 in its own boot: {names:?}"
        ));
    }
    records.iter().try_for_each(|r| check_variant(r))?;
    let report = bootmark::report::report(records.iter().copied(), bootmark::report::Options::default())?;
    let (by, rows) = (&report.by, &report.rows);
    let baselines: Vec<&str> = rows.iter().filter(|r| r.baseline).map(|r| r.key[0].as_str()).collect();
    if by[0] != "variant" || rows.len() != 8 || baselines != ["dirty40", "dirty40"] {
        return Err(format!(
            "the report should group by variant with dirty40 as baseline: by {by:?}, {} rows, baselines {baselines:?}",
            rows.len()
        ));
    }
    let found = &report.findings;
    // On real records every finding points at a record of this run and at
    // rows of the table: a finding seen in several groups names them all,
    // joined by "; ".
    let ids: Vec<String> = records.iter().map(|r| format!("{}:{}", r.run_id, r.seq)).collect();
    let subjects: Vec<String> =
        rows.iter().map(|r| [r.key.clone(), vec![r.workload.clone()]].concat().join(" · ")).collect();
    let names_a_row = |subject: &str| subject.split("; ").all(|s| subjects.iter().any(|row| row == s));
    if let Some(f) =
        found.iter().find(|f| f.record.as_ref().is_some_and(|r| !ids.contains(r)) || !names_a_row(&f.subject))
    {
        return Err(format!("a finding points at nothing of this run: {f:?}"));
    }
    let restored = restore(package, base)?;
    println!(
        "e2e: sweep: {package}, plan sweep: dirty_ratio 40 then 10 and data=writeback (target remounted) applied and read back in one boot, dirty_ratio 15 from the kernel command line in its own entry's boot; 8 records grouped by variant, {} findings ({:.1} s)",
        found.len(),
        booted.elapsed.as_secs_f64()
    );
    println!("e2e: sweep: {restored}");
    Ok(())
}

/// Variants that set each kind of setting, one after another and again:
/// a byte dirty limit (which only writing the ratio undoes), ratios, a
/// scheduler (switching it resets the queue's depth), wbt, the queue's
/// depth and request size. Each is preceded by another in one of the two
/// rounds, so a setting one leaves behind shows in the next one's records.
const RESTORE_PLAN: &str = r#"{
  "name": "restore",
  "description": "Each kind of setting set by a variant, twice round: every run on the settings as found plus its own",
  "repeat": 2,
  "probe": { "enabled": false },
  "workloads": [ { "name": "idle", "params": { "seconds": 0.2 } } ],
  "variants": [
    { "name": "asfound" },
    { "name": "tinydirty", "vm": { "dirty_bytes": 4194304, "dirty_background_bytes": 1048576 } },
    { "name": "ratio10", "vm": { "dirty_ratio": 10, "dirty_background_ratio": 5 } },
    { "name": "nosched", "queue": { "scheduler": "none" } },
    { "name": "wbtlow", "queue": { "wbt_lat_usec": "2000" } },
    { "name": "smaller", "queue": { "nr_requests": "32", "max_sectors_kb": "64" } }
  ]
}"#;

/// The settings a record was measured under, as `vm.NAME` and `queue.NAME`.
fn in_force(r: &Record) -> std::collections::BTreeMap<String, String> {
    use bootmark::schema::variant::{QUEUE_SETTINGS, VM_SETTINGS};
    let mut out = std::collections::BTreeMap::new();
    for k in VM_SETTINGS {
        if let Some(Some(v)) = r.vm.get(k) {
            out.insert(format!("vm.{k}"), v.to_string());
        }
    }
    for k in QUEUE_SETTINGS {
        let v = match k {
            "scheduler" => r.storage.scheduler.clone(),
            _ => r.storage.queue.get(&format!("queue/{k}")).cloned(),
        };
        out.extend(v.map(|v| (format!("queue.{k}"), v)));
    }
    out
}

/// The restore plan in one boot: every record's settings in force are the
/// first `asfound` run's plus its own variant's (a byte limit zeroes its
/// ratio; a scheduler switch may change the queue's other settings, so
/// those are not compared for it), every run ok, and the report pools them.
fn restore(package: &str, base: &Path) -> Result<String> {
    let plan = base.join("restore-plan.json");
    std::fs::write(&plan, RESTORE_PLAN).map_err(|e| format!("{}: {e}", plan.display()))?;
    let mut args = test_image(vec![package.into()], base.join("image-restore"), Some(1));
    args.plan = plan.display().to_string();
    let out = image::build(&args)?;
    let disk = base.join("scratch-restore.img");
    scratch_disk(&disk, "ext3", 256)?;
    let booted = qemu::boot(&test_boot(out, disk, base.join("serial-restore.log")))?;
    let docs = serial_documents(&booted.serial);
    let records = results(&docs);
    if records.len() != 12 || records.iter().any(|r| r.status != Status::Ok) {
        let said: Vec<String> = records.iter().map(|r| format!("{:?}: {:?}", r.status, r.error)).collect();
        return Err(format!(
            "restore: expected 12 ok runs (6 variants twice), got {said:?}\n{}",
            qemu::tail(&booted.serial, 25)
        ));
    }
    let found = in_force(records[0]);
    for r in &records {
        let v = r.variant.as_ref().ok_or("restore: a record without its variant")?;
        let mut want = found.clone();
        for (key, value) in &v.asked {
            want.insert(key.clone(), value.clone());
            // Writing one of a dirty-limit pair zeroes the other.
            let partner = match key.as_str() {
                "vm.dirty_bytes" => Some("vm.dirty_ratio"),
                "vm.dirty_background_bytes" => Some("vm.dirty_background_ratio"),
                "vm.dirty_ratio" => Some("vm.dirty_bytes"),
                "vm.dirty_background_ratio" => Some("vm.dirty_background_bytes"),
                _ => None,
            };
            if let Some(p) = partner.filter(|p| want.contains_key(*p)) {
                want.insert(p.to_string(), "0".into());
            }
        }
        let mut got = in_force(r);
        if v.asked.contains_key("queue.scheduler") {
            let other_queue = |k: &String| k.starts_with("queue.") && k != "queue.scheduler";
            want.retain(|k, _| !other_queue(k));
            got.retain(|k, _| !other_queue(k));
        }
        if got != want || !v.fully() {
            let differ: Vec<String> = want
                .iter()
                .filter(|(k, w)| got.get(*k) != Some(*w))
                .map(|(k, w)| format!("{k} {:?} where {w} was due", got.get(k)))
                .collect();
            return Err(format!(
                "restore: {} run {} (seq {}) was not on the settings as found plus its own: {differ:?}; not applied {:?}",
                v.name, r.repetition, r.seq, v.not_applied
            ));
        }
    }
    let report = bootmark::report::report(records.iter().copied(), bootmark::report::Options::default())?;
    if let Some(f) = report.findings.iter().find(|f| f.rule == "settings-differ") {
        return Err(format!("restore: the report found runs not to pool: {}", f.sentence));
    }
    Ok(format!(
        "restore: 6 variants twice (dirty_bytes, ratios, scheduler none, wbt_lat_usec, nr_requests and max_sectors_kb), each of 12 runs on the settings as found plus its own ({:.1} s)",
        booted.elapsed.as_secs_f64()
    ))
}

/// The record ran under its variant: asked, read back, and in its vm evidence.
fn check_variant(r: &Record) -> Result<()> {
    let v = r.variant.as_ref().ok_or("a record without its variant")?;
    let (key, asked, want) = match v.name.as_str() {
        "dirty40" => ("vm.dirty_ratio", "40", 40),
        "dirty10" => ("vm.dirty_ratio", "10", 10),
        // Every variant starts from the settings as found: dirty_ratio is the kernel's again.
        "writeback" => ("mount.options", "data=writeback", 0),
        _ => ("cmdline.sysctl.vm.dirty_ratio=15", "sysctl.vm.dirty_ratio=15", 15),
    };
    let back = v.read_back.get(key).cloned().flatten();
    let shown = match key {
        "mount.options" => back.as_deref().is_some_and(|b| b.split(',').any(|o| o == asked)),
        _ => back.as_deref() == Some(asked),
    };
    let vm_ok = want == 0 || r.vm.get("dirty_ratio").copied().flatten() == Some(want);
    if !v.fully() || !shown || !vm_ok {
        return Err(format!(
            "variant {}: asked {:?}, read back {:?}, record vm {:?}, not applied {:?}",
            v.name,
            v.asked,
            v.read_back,
            r.vm.get("dirty_ratio"),
            v.not_applied
        ));
    }
    if r.status != Status::Ok {
        return Err(format!("variant {} {}: {:?}", v.name, r.workload.name, r.error));
    }
    Ok(())
}
