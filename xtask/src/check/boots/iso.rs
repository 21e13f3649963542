//! bootmark.iso as a BMC's virtual CD: booted by SeaBIOS (ISOLINUX) and by
//! OVMF with Secure Boot on (shim + Debian's signed GRUB for CDs), with no
//! stick — the records come from the serial log only, as over SOL — and
//! the unsigned image's ISO under OVMF beside a writable results stick,
//! which then gets the records too.

use super::support::firmware_in_records;
use crate::boot::disks::scratch_disk;
use crate::boot::qemu;
use crate::build::image::{iso, manifest::Manifest};
use crate::check::boots::support::{boot_and_check, results, run_record, serial_documents, test_boot};
use crate::host::project::Result;
use bootmark::record::Status;
use std::path::Path;

pub fn test(sb_image: &Path, unsigned_image: &Path, base: &Path, package: &str) -> Result<()> {
    for image in [sb_image, unsigned_image] {
        if !Manifest::read(image)?.outputs.contains_key(iso::FILE) {
            return Err(format!("{}/manifest.json does not list {}", image.display(), iso::FILE));
        }
    }
    let mut said = Vec::new();
    for (name, uefi, secure_boot, mode) in [("SeaBIOS", false, false, "bios"), ("OVMF Secure Boot", true, true, "uefi")]
    {
        let disk = base.join("scratch.img");
        scratch_disk(&disk, "ext3", 512)?;
        let log = base.join(format!("serial-iso-{}.log", name.replace(' ', "-")));
        let args = qemu::Args {
            cdrom: true,
            no_stick: true,
            uefi,
            secure_boot,
            ..test_boot(sb_image.to_path_buf(), disk, log)
        };
        let booted = qemu::boot(&args).map_err(|e| format!("ISO under {name}: {e}"))?;
        let docs = serial_documents(&booted.serial);
        let ok = run_record(&docs).is_some_and(|r| r.status == Status::Ok);
        let records = results(&docs);
        if !ok || records.len() != 6 {
            return Err(format!(
                "ISO under {name}: expected an ok run record and 6 records on serial, got {}\n{}",
                records.len(),
                qemu::tail(&booted.serial, 25)
            ));
        }
        let fw = firmware_in_records(&booted.serial)?;
        if fw.boot_mode.as_deref() != Some(mode) || fw.secure_boot != Some(secure_boot) {
            return Err(format!("ISO under {name}: the records say {fw:?}"));
        }
        said.push(format!("{name} {:.1} s", booted.elapsed.as_secs_f64()));
    }
    let disk = base.join("scratch.img");
    scratch_disk(&disk, "ext3", 512)?;
    let args = qemu::Args {
        cdrom: true,
        uefi: true,
        ..test_boot(unsigned_image.to_path_buf(), disk, base.join("serial-iso-OVMF-stick.log"))
    };
    let seconds = boot_and_check(&args, package).map_err(|e| format!("ISO under OVMF with a results stick: {e}"))?;
    said.push(format!("OVMF with a writable stick {seconds:.1} s"));
    println!("e2e: ISO as a CD-ROM: 6 records on serial ({}), and on the stick beside it", said.join(", "));
    Ok(())
}
