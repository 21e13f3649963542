//! Hostile disks beside a plain target: at every `LABEL=` boot /init reads
//! the md and LVM2 metadata of every disk it sees, and a server's disks can
//! hold anything — a previous owner's array, a half-wiped disk, a crafted
//! one. The test image boots with its plain SCRATCH disk and, beside it, a
//! disk per class of crafted metadata (every checksum valid, made on the
//! host by `bootmark::layers::crafted`): a PV whose metadata area claims
//! 1 PiB and its text 32 TiB, a PV whose text nests 100,000 deep, an md
//! superblock claiming u32::MAX member disks, a whole-disk md 1.0 member
//! whose raw disk shows a partition holding a PV, and a disk whose two
//! partitions carry two different VGs of one name. The plan must run on
//! the target with every record ok (PID 1 neither aborted nor stopped),
//! the run record's `layers_ignored` must name each class and why, and
//! every hostile disk must be byte-identical afterwards.

use crate::boot::disks::scratch_disk;
use crate::check::boots::support::{boot_and_check, fact, run_record, serial_documents, test_boot};
use crate::host::fs;
use crate::host::project::Result;
use bootmark::layers::crafted;
use std::path::{Path, PathBuf};

/// Each hostile disk: its file name, its bytes, and what the run record must say of it.
fn hostile() -> Vec<(&'static str, Vec<u8>, &'static str)> {
    const MIB: usize = 1 << 20;
    let disk = |head: &[u8], bytes: usize| {
        let mut d = head.to_vec();
        d.resize(bytes, 0);
        d
    };
    let mut huge =
        crafted::pv0_with_ids("HUGEVG-jU3a-oCmR-tCJC-30YU-5fx9-vInEA0", "HUGEPV-eDwP-K3gq-Dp0f-sThq-rCYs-EMiFVD");
    crafted::set_area_size(&mut huge, 1 << 50);
    crafted::set_locn(&mut huge, 4608, 32 << 40, 0);
    let mut deep =
        crafted::pv0_with_ids("DEEPVG-jU3a-oCmR-tCJC-30YU-5fx9-vInEA0", "DEEPPV-eDwP-K3gq-Dp0f-sThq-rCYs-EMiFVD");
    crafted::set_text(&mut deep, &format!("tvg {{\nseqno = {}\n}}\n", "[".repeat(100_000)));
    let mut many = crafted::md_sb1(0x22, 2, 0, 20, u64::MAX, &[0, 1]);
    crafted::set_sb1_u32(&mut many, 92, u32::MAX);
    // A whole-disk 1.0 member: the array's partition table, seen on the raw disk, and a PV in its partition.
    let mut member = disk(&crafted::mbr(&[(2048, 8192, 0x8e)]), 16 * MIB);
    let pv = crafted::pv0();
    member[MIB..MIB + pv.len()].copy_from_slice(&pv);
    let member = crafted::md_1_0_member(0x44, member);
    // Two VGs named tvg (different ids), one in each partition.
    let mut twins = disk(&crafted::mbr(&[(2048, 4096, 0x8e), (8192, 4096, 0x8e)]), 16 * MIB);
    let a = crafted::pv0_with_ids("TWINAV-jU3a-oCmR-tCJC-30YU-5fx9-vInEA0", "TWINAP-eDwP-K3gq-Dp0f-sThq-rCYs-EMiFVD");
    let b = crafted::pv0_with_ids("TWINBV-jU3a-oCmR-tCJC-30YU-5fx9-vInEA0", "TWINBP-eDwP-K3gq-Dp0f-sThq-rCYs-EMiFVD");
    twins[MIB..MIB + a.len()].copy_from_slice(&a);
    twins[4 * MIB..4 * MIB + b.len()].copy_from_slice(&b);
    vec![
        (
            "huge-area.img",
            disk(&huge, 16 * MIB),
            "claims 35184372088832 bytes, more than the 16777216 bytes any lvm2 writes",
        ),
        ("deep-text.img", disk(&deep, 16 * MIB), "sections or lists nest deeper than 16 levels"),
        ("many-disks.img", crafted::md_disk(&many, 16 * MIB), "claims 4294967295 member disks; md allows at most 1920"),
        (
            "member-partition.img",
            member,
            "which is a whole-disk member of the md array 44444444:44444444:44444444:44444444 (raid1)",
        ),
        ("twin-vgs.img", twins, "volume group tvg: 2 different volume groups carry this name"),
    ]
}

pub fn test(image: &Path, base: &Path, package: &str) -> Result<()> {
    let dir = base.join("hostile-disks");
    let _ = std::fs::remove_dir_all(&dir);
    fs::create_dir_all(&dir)?;
    let scratch = dir.join("scratch.img");
    scratch_disk(&scratch, "ext3", 512)?;
    let disks = hostile();
    let mut paths: Vec<PathBuf> = Vec::new();
    for (name, bytes, _) in &disks {
        let path = dir.join(name);
        fs::write(&path, bytes)?;
        paths.push(path);
    }
    let log = dir.join("serial.log");
    let mut args = test_boot(image.to_path_buf(), scratch, log.clone());
    args.disks.extend(paths.iter().cloned());
    // The plan ran on the target, every record ok, on serial and stick alike.
    let seconds = boot_and_check(&args, package).map_err(|e| format!("with hostile disks beside the target: {e}"))?;
    let serial = crate::boot::qemu::console_text(&log)?;
    let docs = serial_documents(&serial);
    let run = run_record(&docs).ok_or("no run record")?;
    let ignored: Vec<String> = fact(run, "layers_ignored")
        .as_array()
        .map(|a| a.iter().filter_map(|v| v.as_str().map(str::to_string)).collect())
        .unwrap_or_default();
    for (name, _, why) in &disks {
        if !ignored.iter().any(|line| line.contains(why)) {
            return Err(format!(
                "the run record's layers_ignored does not name {name} ({why:?}):\n{}",
                ignored.join("\n")
            ));
        }
    }
    for ((name, bytes, _), path) in disks.iter().zip(&paths) {
        if std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))? != *bytes {
            return Err(format!("the hostile disk {name} was written"));
        }
    }
    println!(
        "e2e: hostile disks: the plan ran on SCRATCH beside {} crafted disks, each named in layers_ignored and left byte-identical ({seconds:.1} s)",
        disks.len()
    );
    Ok(())
}
