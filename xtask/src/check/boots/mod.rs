//! QEMU boot scenarios for today's servers, one file each: the target on
//! NVMe, Secure Boot on and off, the ISO as a BMC's virtual CD. They use
//! the e2e harness's helpers (`crate::e2e`: building test images, booting,
//! reading the records back) and are called from its list of boots.

pub mod iso;
pub mod nvme;
pub mod secure_boot;

use crate::Result;
use crate::e2e::{results, serial_documents};
use bootmark::record::{Firmware, Status};

/// What the firmware enforced, as every result record of a serial log says
/// it; an error when the records disagree or do not say.
pub fn firmware_in_records(serial: &str) -> Result<Firmware> {
    let docs = serial_documents(serial);
    let records = results(&docs);
    let first = records.first().ok_or("no result records on serial")?;
    let fw = first.host.firmware.clone().ok_or("the records carry no host.firmware")?;
    if records.iter().any(|r| r.host.firmware.as_ref() != Some(&fw) || r.status != Status::Ok) {
        return Err(format!("the records disagree on host.firmware or are not all ok: {fw:?}"));
    }
    Ok(fw)
}

/// `cargo xtask todays-servers`: these boots alone, on images of their own
/// (target/todays-servers), for working on them without the whole e2e run.
pub fn alone() -> Result<()> {
    let package = crate::e2e::resolve_meta("linux-image-amd64")?;
    let base = crate::project_root().join("target/todays-servers");
    let _ = std::fs::remove_dir_all(&base);
    std::fs::create_dir_all(&base).map_err(|e| format!("cannot create {}: {e}", base.display()))?;
    let image = crate::image::build(&crate::e2e::test_image(vec![package.clone()], base.join("image"), None))?;
    let mut tally = crate::e2e::Tally::default();
    tally.add("NVMe", nvme::test(&image, &base, &package));
    let sb = secure_boot::build_image(&package, &base)?;
    tally.add("Secure Boot", secure_boot::test(&sb, &image, &base, &package));
    tally.add("ISO", iso::test(&sb, &image, &base, &package));
    tally.add("unsigned kernel refused", secure_boot::unsigned_kernel_refused(&package, &base));
    tally.finish("today's servers")
}
