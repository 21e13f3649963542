//! Fuzz what /init reads from every disk it sees when a target may lie
//! inside an LV or md array: md superblocks (0.90, 1.x), LVM2 PV labels,
//! metadata areas and text, an LV's extents and table, and the layer
//! resolution over a fake machine. A disk can hold anything — a previous
//! owner's array, a half-wiped disk, a crafted one — so the property is
//! the one PID 1 needs: any bytes in, no panic, no abort (an allocation a
//! disk claims, a stack overflow), and an answer in bounded time.
//!
//! The input is read three ways: as a disk (label, metadata, superblock);
//! as metadata text (parser, VG model, extents, tables); and as a second
//! disk beside a plain ext3 target on a fake machine, which must stay a
//! plain target that no layer claims.
#![no_main]

use bootmark::contract::cmdline::DiskSpec;
use bootmark::contract::layers as resolution;
use bootmark::layers::{lvm, md};
use libfuzzer_sys::fuzz_target;
use std::path::PathBuf;
use std::sync::OnceLock;

/// A fake machine in a temp dir: sysfs for sda (the target) and sdb (the
/// fuzzer's disk), each "node" a regular file.
fn machine() -> &'static PathBuf {
    static ROOT: OnceLock<PathBuf> = OnceLock::new();
    ROOT.get_or_init(|| {
        let root = std::env::temp_dir().join(format!("bootmark-fuzz-layers-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        for (name, minor) in [("sda", 0), ("sdb", 16)] {
            let dir = root.join("sys/block").join(name);
            std::fs::create_dir_all(&dir).unwrap();
            std::fs::write(dir.join("dev"), format!("8:{minor}\n")).unwrap();
        }
        std::fs::create_dir_all(root.join("dev")).unwrap();
        // sda: 64 KiB with an ext3 superblock labelled TARGET.
        let mut target = vec![0u8; 64 << 10];
        target[1024 + 56..1024 + 58].copy_from_slice(&0xEF53u16.to_le_bytes());
        target[1024 + 92] = 0x4;
        target[1024 + 120..1024 + 126].copy_from_slice(b"TARGET");
        std::fs::write(root.join("dev/sda"), &target).unwrap();
        std::fs::write(root.join("sys/block/sda/size"), format!("{}\n", target.len() / 512)).unwrap();
        root
    })
}

fuzz_target!(|data: &[u8]| {
    // As a disk, at its own size and at sizes that put md's end-of-disk superblocks elsewhere.
    let disk = data.to_vec();
    if let Ok(Some(label)) = lvm::read_label(&disk) {
        let _ = lvm::read_metadata(&disk, &label);
    }
    for size in [disk.len() as u64, (disk.len() as u64) << 12, u64::MAX] {
        if let Ok(Some(m)) = md::read_member(&disk, size) {
            let _ = md::refusal(&m.uuid, std::slice::from_ref(&m));
        }
    }

    // As an array's geometry: any level, layout, chunk and member count place any sector or say why not.
    if data.len() >= 24 {
        let word = |i: usize| u32::from_le_bytes(data[i..i + 4].try_into().unwrap());
        let g = bootmark::layers::md_layout::Geometry {
            level: word(0) as i32 % 12 - 1,
            layout: word(4),
            chunk_sectors: word(8) as u64,
            raid_disks: word(12) % 2000,
            member_sectors: word(16) as u64,
        };
        for sector in [0, word(20) as u64, u64::MAX / 512, u64::MAX] {
            if let Ok((slot, _)) = g.locate(sector) {
                assert!(slot < g.raid_disks.max(1), "{g:?} placed sector {sector} on slot {slot}");
            }
        }
    }

    // As metadata text.
    if let Ok(vg) = lvm::volume_group(&String::from_utf8_lossy(data)) {
        for lv in &vg.lvs {
            let _ = vg.refusal(lv);
            let _ = vg.extents(lv);
            let _ = vg.table(lv, &|_| Some("8:16".to_string()));
        }
    }

    // As a disk beside a plain target: the target stays plain and no layer claims its label.
    let root = machine();
    std::fs::write(root.join("dev/sdb"), data).unwrap();
    std::fs::write(root.join("sys/block/sdb/size"), format!("{}\n", data.len().div_ceil(512).max(1))).unwrap();
    let (sys, dev) = (root.join("sys"), root.join("dev"));
    let all = resolution::scan(&sys, &dev);
    let target = all.iter().find(|d| d.name == "sda").expect("sda is scanned");
    assert_eq!(resolution::plain_target_refusal(target, &all), None, "a disk beside it made sda unusable");
    let _ = resolution::ignored(&sys, &dev);
    let inside = resolution::inside(&DiskSpec::Label("TARGET".into()), &sys, &dev);
    // Only a disk that holds the label itself (an array or LV whose filesystem is TARGET) may claim it.
    if !data.windows(6).any(|w| w == b"TARGET") {
        assert_eq!(inside, Ok(None), "a layer on sdb claimed a label only sda holds");
    }
});
