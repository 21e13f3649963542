//! A sweep in one QEMU boot: the `sweep` plan (dirty_ratio 40, then 10)
//! on Debian's kernel. Each variant's records must show the setting asked
//! for and read back, the records' own vm evidence must agree, and the
//! report must group them by variant with the first as the baseline.

use crate::e2e::{results, run_record, scratch_disk, serial_documents, test_boot, test_image};
use crate::{Result, image, qemu};
use bootmark::record::Status;
use std::path::Path;

/// `cargo xtask sweep-boot`: this boot alone, with Debian's current kernel.
pub fn alone() -> Result<()> {
    let base = crate::project_root().join("target/e2e");
    std::fs::create_dir_all(&base).map_err(|e| e.to_string())?;
    test(&crate::e2e::resolve_meta("linux-image-amd64")?, &base)
}

pub fn test(package: &str, base: &Path) -> Result<()> {
    let image_args =
        image::Args { plan: "sweep".into(), ..test_image(vec![package.into()], base.join("image-sweep"), None) };
    let out = image::build(&image_args)?;
    let disk = base.join("scratch.img");
    scratch_disk(&disk, "ext3", 512)?;
    let booted = qemu::boot(&test_boot(out, disk, base.join("serial-sweep.log")))?;
    let docs = serial_documents(&booted.serial);
    let run = run_record(&docs).ok_or_else(|| format!("no run record\n{}", qemu::tail(&booted.serial, 25)))?;
    if run.status != Status::Ok || run.facts.contains_key("variants_skipped") {
        return Err(format!(
            "the sweep's boot failed or skipped a variant: {:?} {:?}",
            run.error,
            run.facts.get("variants_skipped")
        ));
    }
    let records = results(&docs);
    let names: Vec<&str> = records.iter().filter_map(|r| r.variant.as_ref().map(|v| v.name.as_str())).collect();
    if names != ["dirty40", "dirty40", "dirty10", "dirty10"] {
        return Err(format!("expected two workloads under dirty40 then dirty10, got {names:?}"));
    }
    for r in &records {
        let v = r.variant.as_ref().expect("checked above");
        let want: i64 = if v.name == "dirty40" { 40 } else { 10 };
        let back = v.read_back.get("vm.dirty_ratio").cloned().flatten();
        if !v.fully() || back != Some(want.to_string()) || r.vm.get("dirty_ratio").copied().flatten() != Some(want) {
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
    }
    let by = bootmark::report::default_by(records.iter().copied());
    let opts = bootmark::report::Options { by: by.clone(), baseline: None };
    let rows = bootmark::report::rows(records.iter().copied(), &opts)?;
    let baselines: Vec<&str> = rows.iter().filter(|r| r.baseline).map(|r| r.key[0].as_str()).collect();
    if by[0] != "variant" || rows.len() != 4 || baselines != ["dirty40", "dirty40"] {
        return Err(format!(
            "the report should group by variant with dirty40 as baseline: by {by:?}, {} rows, baselines {baselines:?}",
            rows.len()
        ));
    }
    let found = bootmark::report::findings::findings(&records, &rows, &by);
    println!(
        "e2e: sweep: {package}, plan sweep in one boot: dirty_ratio 40 then 10 applied and read back, 4 records grouped by variant, {} findings ({:.1} s)",
        found.len(),
        booted.elapsed.as_secs_f64()
    );
    Ok(())
}
