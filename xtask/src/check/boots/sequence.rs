//! An unattended sequence: one QEMU run, four boots, a hung step given up.

use super::support::*;
use crate::boot::disks::scratch_disk;
use crate::boot::qemu;
use crate::build::image;
use crate::build::image::usb;
use crate::host::fs;
use crate::host::fs::Context as _;
use crate::host::process::cmd;
use crate::host::project::Result;
use bootmark::collect::Document;
use bootmark::record::RunRecord;
use std::path::Path;

/// An unattended sequence: two entries, twice, with the first step marked as
/// attempted as if its boot had hung. One QEMU run with reboots allowed must
/// give up on that step, run the other three (rebooting between them into
/// the right entry), restore the menu and power off.
pub fn test(package: &str, base: &Path) -> Result<()> {
    let out =
        image::build(&test_image(vec![package.to_string(), package.to_string()], base.join("seq-image"), Some(2)))?;
    let img = out.join("usb.img");
    let sh = usb::mtools()?;
    let seq_on_stick = |img: &Path| -> Result<bootmark::contract::sequence::Sequence> {
        let image = usb::image_arg(img);
        let text = crate::host::process::run(cmd!(sh, "mtype -i {image} ::bootmark/sequence.json"))?;
        serde_json::from_str(&text).context("the stick's bootmark/sequence.json")
    };
    let mut seq = seq_on_stick(&img)?;
    if seq.steps.iter().map(|s| s.entry.as_str()).collect::<Vec<_>>() != ["k0", "k1", "k0", "k1"] {
        return Err(format!("unexpected steps {:?}", seq.steps));
    }
    seq.states[0] = bootmark::contract::sequence::State::Attempted;
    let edited = base.join("sequence.json");
    fs::write(&edited, serde_json::to_string(&seq).unwrap())?;
    let image = usb::image_arg(&img);
    crate::host::process::run(cmd!(sh, "mcopy -o -i {image} {edited} ::bootmark/sequence.json"))?;
    let disk = base.join("scratch.img");
    scratch_disk(&disk, "ext3", 512)?;
    let booted = qemu::boot(&qemu::Args {
        timeout: 180,
        sequence: true,
        install_deps: false,
        ..test_boot(out.clone(), disk, base.join("serial-sequence.log"))
    })?;
    let docs = serial_documents(&booted.serial);
    let runs: Vec<&RunRecord> = docs.iter().filter_map(Document::run).collect();
    let records = results(&docs).len();
    let seq = seq_on_stick(&img)?;
    use bootmark::contract::sequence::State::{Done, Failed};
    if seq.states != [Failed, Done, Done, Done] || !seq.finished() {
        return Err(format!("sequence states on the stick: {:?}\n{}", seq.states, qemu::tail(&booted.serial, 30)));
    }
    if runs.len() != 4 || records != 18 {
        return Err(format!("expected 4 boots and 18 records, got {} boots and {records} records", runs.len()));
    }
    let syslinux = crate::host::process::run(cmd!(sh, "mtype -i {image} ::syslinux.cfg"))?;
    if !syslinux.contains("DEFAULT k0") {
        return Err("the boot menu default was not restored".into());
    }
    println!(
        "e2e: sequence: 4 boots by one `qemu --sequence` ({:.1} s): hung step 1 marked failed, steps 2–4 done with 18 records, menu restored",
        booted.elapsed.as_secs_f64()
    );
    Ok(())
}
