//! md's striped levels as the real mdadm makes them, read before assembly:
//! the check of `bootmark::layers::md_layout` and `unassembled` against
//! the kernel, and a `LABEL=` found inside an LV on RAID 5.
//!
//! A helper boot (the real mdadm 4.2 and lvm on Debian's kernel) makes, on
//! partitions of four disks, an array per level and layout — raid0, raid4,
//! raid5 in its six layouts, raid6 left-symmetric and right-asymmetric,
//! raid10 n2, f2 and o2 — and writes through each a pattern in which every
//! 512-byte sector names its own array sector. Read back on the host through
//! the members alone, as /init reads an array it has not assembled, every
//! sector must be found where md put it. Then on a RAID 5 of three
//! partitions (512 KiB chunks, an internal write-intent bitmap) an LV
//! labelled R5SCRATCH, 1 MiB into the array (chunk 2, on the third
//! member, where the first holds parity), beside another LV: an image with `--target LABEL=R5SCRATCH`
//! must find it inside `LV=r5vg/target` among the twelve other arrays,
//! run the plan, and leave every disk as it was outside the target's
//! stripes (data and parity), the RAID 5 members' superblock event fields
//! and their bitmap.

use super::lvm_on_md::{Ranges, boot_on, build, helper_boot, read_all, unchanged_but};
use super::support::{fact, run_record};
use crate::host::process::{cmd, shell};
use crate::host::project::Result;
use bootmark::layers::md::{self, Member};
use bootmark::layers::unassembled::Unassembled;
use bootmark::layers::{ReadAt, Window, lvm};
use std::fs::File;
use std::path::{Path, PathBuf};

const SECTOR: u64 = 512;
/// Partitions 1–12: 8 MiB each, one array each; partition 13: the RAID 5 under LVM.
const SMALL: u64 = 16_384;
const LARGE: u64 = 262_144;
const DISK_MIB: u64 = 256;
/// How much of each array the pattern covers, in sectors (2 MiB: tens of stripes).
const PATTERN: u64 = 4096;

/// Each small array: its partition (and md minor), member count, mdadm's words, and md's name for it.
const ARRAYS: &[(u32, usize, &str, &str)] = &[
    (1, 3, "--level=0", "raid0"),
    (2, 3, "--level=4", "raid4"),
    (3, 3, "--level=5 --layout=left-symmetric --bitmap=internal", "raid5 left-symmetric"),
    (4, 3, "--level=5 --layout=left-asymmetric", "raid5 left-asymmetric"),
    (5, 3, "--level=5 --layout=right-symmetric", "raid5 right-symmetric"),
    (6, 3, "--level=5 --layout=right-asymmetric", "raid5 right-asymmetric"),
    (7, 3, "--level=5 --layout=parity-first", "raid5 parity-first"),
    (8, 4, "--level=6 --layout=left-symmetric", "raid6 left-symmetric"),
    (9, 4, "--level=6 --layout=right-asymmetric", "raid6 right-asymmetric"),
    (10, 4, "--level=10 --layout=n2", "raid10 n2"),
    (11, 2, "--level=10 --layout=f2", "raid10 f2"),
    (12, 3, "--level=10 --layout=o2", "raid10 o2"),
];

/// Where partition `n` starts on every disk, in bytes.
fn partition_start(n: u32) -> u64 {
    (2048 + (n as u64 - 1) * SMALL) * SECTOR
}

fn partition_bytes(n: u32) -> u64 {
    if n == 13 { LARGE * SECTOR } else { SMALL * SECTOR }
}

/// The helper's script: the arrays, their patterns, the RAID 5 under LVM.
fn script() -> String {
    let mut s = String::from(
        "MD() { n=$1; shift; /usr/sbin/mdadm --create /dev/md$n --run --assume-clean --homehost=bootmark --metadata=1.2 \"$@\" || exit 1; }\n\
         LVM() { c=$1; shift; /usr/sbin/lvm $c --config 'activation{udev_sync=0 udev_rules=0}' \"$@\"; }\n",
    );
    for (n, count, words, _) in ARRAYS {
        let members: Vec<String> = (0..*count).map(|i| format!("/dev/sd{}{n}", (b'a' + i as u8) as char)).collect();
        s += &format!("MD {n} --chunk=64 {words} --raid-devices={count} {}\n", members.join(" "));
        // Every sector names itself: "BM" and its array sector in 14 digits, padded to 512 bytes.
        s += &format!(
            "awk 'BEGIN {{ for (i = 0; i < {PATTERN}; i++) printf \"BM%014d%496s\", i, \"\" }}' | dd of=/dev/md{n} bs=65536 2>/dev/null || exit 1\n"
        );
    }
    s += "MD 13 --level=5 --bitmap=internal --raid-devices=3 /dev/sda13 /dev/sdb13 /dev/sdc13\n\
          LVM pvcreate /dev/md13 && LVM vgcreate r5vg /dev/md13 || exit 1\n\
          LVM lvcreate -n target -L 160M r5vg && LVM lvcreate -n bystander -L 32M r5vg || exit 1\n\
          /usr/sbin/mke2fs -q -t ext3 -L R5SCRATCH /dev/r5vg/target || exit 1\n\
          dd if=/dev/urandom of=/dev/r5vg/bystander bs=1M count=32 2>/dev/null\n\
          LVM vgchange -an r5vg && /usr/sbin/mdadm --stop --scan || exit 1\n\
          sync\necho LAYOUTS-DONE\n";
    s
}

/// Four disks, each with the same GPT: twelve 8 MiB partitions and a 128 MiB one.
fn make_disks(dir: &Path) -> Result<Vec<PathBuf>> {
    let mut table = String::from("label: gpt\n");
    for n in 1..=13u32 {
        table += &format!("start={}, size={}\n", partition_start(n) / SECTOR, partition_bytes(n) / SECTOR);
    }
    let disks: Vec<PathBuf> = "abcd".chars().map(|c| dir.join(format!("md-{c}.img"))).collect();
    for d in &disks {
        File::create(d).and_then(|f| f.set_len(DISK_MIB << 20)).map_err(|e| format!("{}: {e}", d.display()))?;
        let sh = shell()?;
        crate::host::process::run(cmd!(sh, "sfdisk --quiet --no-reread --no-tell-kernel {d}").stdin(&table))
            .map_err(|e| format!("sfdisk could not partition {}: {e}", d.display()))?;
    }
    Ok(disks)
}

/// The members of the array on partition `n` of the first `count` disks, each read through a window.
fn members(files: &[File], n: u32, count: usize) -> Result<Vec<(Member, Window<'_>)>> {
    files[..count]
        .iter()
        .map(|f| {
            let window = Window { dev: f, offset: partition_start(n) };
            let m = md::read_member(&window, partition_bytes(n))?.ok_or(format!("partition {n}: no md superblock"))?;
            Ok((m, window))
        })
        .collect()
}

fn reader<'a>(members: &'a [(Member, Window<'a>)]) -> Result<Unassembled<'a>> {
    let devs: Vec<(&Member, &dyn ReadAt)> = members.iter().map(|(m, w)| (m, w as &dyn ReadAt)).collect();
    Unassembled::new(&devs)
}

/// Every array's pattern, read through its members as /init would.
fn patterns_where_md_put_them(files: &[File]) -> Result<()> {
    for (n, count, _, name) in ARRAYS {
        let members = members(files, *n, *count)?;
        let array = reader(&members)?;
        let described = array.geometry().describe();
        if described != *name && !(*n == 2 && described.starts_with("raid4")) {
            return Err(format!("partition {n}: the superblock says {described}, mdadm was asked for {name}"));
        }
        let mut data = vec![0u8; (PATTERN * SECTOR) as usize];
        array.read_exact_at(&mut data, 0).map_err(|e| format!("{name}: reading it through its members: {e}"))?;
        for (sector, bytes) in data.chunks(SECTOR as usize).enumerate() {
            let want = format!("BM{sector:014}");
            if &bytes[..16] != want.as_bytes() {
                return Err(format!(
                    "{name} ({described}): array sector {sector} read as {:?} through the members, where md wrote {want}",
                    String::from_utf8_lossy(&bytes[..16])
                ));
            }
        }
    }
    Ok(())
}

/// What the RAID 5 boot may write on each disk: on the three members the
/// target LV's whole stripes (its data and their parity), the superblock's
/// update time, events and checksum, and the write-intent bitmap; nothing
/// on the fourth disk.
fn raid5_ranges(files: &[File]) -> Result<Vec<Ranges>> {
    let members = members(files, 13, 3)?;
    let array = reader(&members)?;
    let label = lvm::read_label(&array).map_err(|e| e.to_string())?.ok_or("no PV label on the RAID 5")?;
    let vg = lvm::volume_group(&lvm::read_metadata(&array, &label)?.ok_or("no LVM metadata")?)?;
    let extents = vg.extents(vg.lv("target")?)?;
    let g = members[0].0.geometry();
    let stripe = g.chunk_sectors * (g.raid_disks as u64 - 1);
    let mut out = Vec::new();
    for (m, _) in &members {
        let base = partition_start(13);
        let data = base + m.data_offset * SECTOR;
        let mut ranges: Ranges = extents
            .iter()
            .map(|e| {
                let (first, last) = (e.start / stripe, (e.start + e.sectors - 1) / stripe);
                (data + first * g.chunk_sectors * SECTOR, data + (last + 1) * g.chunk_sectors * SECTOR)
            })
            .collect();
        let sb = base + 4096;
        ranges.extend([(sb + 192, sb + 208), (sb + 216, sb + 220)]);
        // The bitmap lies between the superblock and the data.
        ranges.push((sb + 4096, data));
        out.push(ranges);
    }
    out.push(Vec::new());
    Ok(out)
}

pub fn test(package: &str, base: &Path) -> Result<()> {
    let dir = base.join("md-layouts");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let disks = make_disks(&dir)?;
    let image = build(package, &dir, "r5", "LABEL=R5SCRATCH", "")?;
    let modules = ["sym53c8xx", "sd_mod", "md_mod", "raid0", "raid456", "raid10", "dm_mod"];
    helper_boot(&image, &disks, &dir, "helper", &script(), &modules, "LAYOUTS-DONE")?;
    let open = || -> Result<Vec<File>> {
        disks.iter().map(|d| File::open(d).map_err(|e| format!("{}: {e}", d.display()))).collect()
    };
    patterns_where_md_put_them(&open()?)?;

    let before = read_all(&disks)?;
    let allowed = raid5_ranges(&open()?)?;
    let (seconds, docs) = boot_on(&image, package, &disks, "sata", &dir.join("serial-r5.log"))?;
    let layers = fact(run_record(&docs).ok_or("no run record")?, "target.layers").clone();
    if layers["found_as"] != "LV=r5vg/target" || layers["md"][0]["level"] != 5 {
        return Err(format!("LABEL=R5SCRATCH was not found inside LV=r5vg/target on the RAID 5: {layers}"));
    }
    for (i, disk) in disks.iter().enumerate() {
        unchanged_but(std::slice::from_ref(disk), &before[i..=i], |_| Ok(allowed[i].clone()))?;
    }
    let files = open()?;
    let members = members(&files, 13, 3)?;
    if let Some((m, _)) = members.iter().find(|(m, _)| !m.clean || m.events != members[0].0.events) {
        return Err(format!("the RAID 5's members do not agree after the boot: {} at event {}", m.state, m.events));
    }
    println!(
        "e2e: md layouts: {} arrays made by mdadm read back sector for sector through their members ({}); \
         LABEL=R5SCRATCH found inside LV=r5vg/target on RAID 5 with a bitmap, run, every disk unchanged outside \
         the target's stripes, the bitmap and the superblock's event fields ({seconds:.0} s)",
        ARRAYS.len(),
        ARRAYS.iter().map(|a| a.3).collect::<Vec<_>>().join(", ")
    );
    Ok(())
}
