//! The target inside storage as installed: an LVM2 logical volume on an
//! md RAID 1 of two SCSI disks, made by the real mdadm and lvm in a
//! helper boot (this machine's kernel has neither md nor device-mapper,
//! so the layout cannot be made or checked on the host).
//!
//! The helper boot is Debian's kernel with the test image's own initramfs
//! (its modules) plus busybox, mdadm, lvm and mke2fs with their libraries,
//! and a script as /init. Then the image boots with
//! `bootmark.target=LV=bmvg/target` and the records must name the stack.
//! Both member disks are compared byte for byte with their state before:
//! the only bytes that may differ are the target LV's extents and, in
//! each member's md superblock, the fields the kernel updates when an
//! array is used — update time, event count, checksum (the rule). A boot
//! with one member missing must refuse the degraded array.

use crate::Result;
use crate::boot::qemu;
use crate::build::image::{self, cpio};
use crate::check::boots::support::{
    boot_and_check, fact, results, run_record, serial_documents, test_boot, test_image,
};
use crate::host::process::{command, run};

use bootmark::layers::{Window, lvm, md};
use bootmark::record::Status;
use std::fs::File;
use std::path::{Path, PathBuf};

const DISK_MIB: u64 = 256;
/// The layout the helper boot makes; `LAYOUT-DONE` says it got through.
const LAYOUT: &str = r#"
LVM() { c=$1; shift; /usr/sbin/lvm $c --config 'activation{udev_sync=0 udev_rules=0}' "$@"; }
/usr/sbin/mdadm --create /dev/md0 --run --metadata=1.2 --level=1 --raid-devices=2 --assume-clean --homehost=bootmark /dev/sda /dev/sdb || exit 1
LVM pvcreate /dev/md0 && LVM vgcreate bmvg /dev/md0 || exit 1
LVM lvcreate -n bystander -L 64M bmvg && LVM lvcreate -n target -L 160M bmvg || exit 1
/usr/sbin/mke2fs -q -t ext3 -L BMTARGET /dev/bmvg/target || exit 1
dd if=/dev/urandom of=/dev/bmvg/bystander bs=1M count=64 2>/dev/null
LVM vgchange -an bmvg && /usr/sbin/mdadm --stop /dev/md0 || exit 1
sync
echo LAYOUT-DONE
"#;

pub fn test(package: &str, base: &Path) -> Result<()> {
    let dir = base.join("layers");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let args = image::Args {
        target: Some("LV=bmvg/target".into()),
        ..test_image(vec![package.into()], dir.join("image"), None)
    };
    let out = image::build(&args)?;
    let disks = [dir.join("member-a.img"), dir.join("member-b.img")];
    install(&out, &disks, &dir)?;
    let before: Vec<Vec<u8>> =
        disks.iter().map(|d| std::fs::read(d).map_err(|e| format!("{}: {e}", d.display()))).collect::<Result<_>>()?;

    let log = dir.join("serial-layers.log");
    let boot = qemu::Args {
        disks: disks.to_vec(),
        disk_buses: vec!["scsi".into(), "scsi".into()],
        ..test_boot(out.clone(), disks[0].clone(), log.clone())
    };
    let seconds = boot_and_check(&boot, package)?;
    let serial = std::fs::read_to_string(&log).map_err(|e| format!("{}: {e}", log.display()))?;
    let docs = serial_documents(&serial);
    for r in results(&docs) {
        let kinds: Vec<(&str, &str)> = r.storage.layers.iter().map(|l| (l.name.as_str(), l.kind.as_str())).collect();
        let ok = matches!(kinds.as_slice(), [(_, "dm"), (_, "md"), ("sda", "disk"), ("sdb", "disk")])
            && r.storage.layers[0].dm_targets == ["linear"]
            && r.storage.layers[1].md_level.as_deref() == Some("raid1")
            && r.storage.layers[2].scheduler.is_some();
        if !ok {
            return Err(format!("a record's storage does not name LV → raid1 → sda, sdb: {:?}", r.storage.layers));
        }
    }
    let run = run_record(&docs).ok_or("no run record")?;
    let layers = fact(run, "target.layers");
    if layers["lvm"]["other_lvs_left_inactive"] != 1 || layers["md"][0]["start_ro"] != true {
        return Err(format!("the run record's target.layers: {layers}"));
    }
    let changed = unchanged_but_target(&disks, &before)?;

    // One member missing: the array is degraded, the boot refuses it by state.
    let degraded_log = dir.join("serial-degraded.log");
    let one = qemu::Args { disks: vec![disks[0].clone()], disk_buses: vec!["scsi".into()], ..boot.clone() };
    let one = qemu::Args { log: Some(degraded_log.clone()), ..one };
    let booted = qemu::boot(&one)?;
    let docs = serial_documents(&booted.serial);
    let run = run_record(&docs).ok_or("the degraded boot left no run record")?;
    let error = run.error.clone().unwrap_or_default();
    if run.status == Status::Ok || !error.contains("degraded") || !results(&docs).is_empty() {
        return Err(format!("a degraded array was not refused by its state: {:?} {error}", run.status));
    }
    let after_refusal: Vec<Vec<u8>> = disks.iter().map(|d| std::fs::read(d).unwrap_or_default()).collect();
    if after_refusal[0] != changed[0] {
        return Err("the refused boot wrote to the remaining member".into());
    }
    println!(
        "e2e: LVM on md RAID 1: the target LV activated, 6 records naming dm-linear → raid1 → sda, sdb ({seconds:.1} s); \
         the bystander LV, the LVM metadata and everything outside the target's extents unchanged on both members; \
         one member missing: refused as degraded ({:.1} s)",
        booted.elapsed.as_secs_f64()
    );
    Ok(())
}

/// Make the layout on two new disks with the real tools, in a helper boot.
fn install(image: &Path, disks: &[PathBuf], dir: &Path) -> Result<()> {
    for d in disks {
        let f = File::create(d).map_err(|e| format!("{}: {e}", d.display()))?;
        f.set_len(DISK_MIB << 20).map_err(|e| format!("{}: {e}", d.display()))?;
    }
    let set = crate::check::boots::support::module_set(image)?;
    let mut script = String::from(
        "#!/bin/busybox sh\n/bin/busybox --install -s /bin\nexport PATH=/bin:/sbin:/usr/bin:/usr/sbin\n\
         mount -t proc proc /proc; mount -t sysfs sys /sys; mount -t devtmpfs dev /dev\n",
    );
    for m in needed(&set, &["sym53c8xx", "sd_mod", "md_mod", "raid1", "dm_mod"]) {
        script += &format!("insmod /{} {}\n", m.path, m.params);
    }
    script += "for i in 1 2 3 4 5 6 7 8 9 10; do [ -b /dev/sdb ] && break; sleep 1; done\n";
    script += &format!("( {LAYOUT} ) 2>&1\nsync\npoweroff -f\n");
    let mut a = cpio::Archive::new(0);
    for d in ["proc", "sys", "dev", "tmp", "run", "run/lock", "run/lock/lvm", "run/mdadm", "etc", "etc/lvm", "sbin"] {
        a.dir(d);
    }
    a.file("init", script.into_bytes(), 0o755);
    for tool in ["/bin/busybox", "/usr/sbin/mdadm", "/usr/sbin/lvm", "/usr/sbin/mke2fs"] {
        for file in std::iter::once(tool.to_string()).chain(libraries(tool)?) {
            let data = std::fs::read(&file).map_err(|e| format!("{file}: {e}"))?;
            let inside = file.trim_start_matches('/');
            for parent in Path::new(inside).ancestors().skip(1).filter(|p| !p.as_os_str().is_empty()) {
                a.dir(&parent.to_string_lossy());
            }
            a.file(inside, data, 0o755);
        }
    }
    let kernel = image.join("pxe/boot/k0/vmlinuz");
    let mut initrd =
        std::fs::read(image.join("pxe/boot/k0/initrd.gz")).map_err(|e| format!("{}: {e}", image.display()))?;
    initrd.extend(cpio::gzip(&a.to_bytes()));
    let initrd_path = dir.join("helper-initrd.gz");
    std::fs::write(&initrd_path, initrd).map_err(|e| format!("{}: {e}", initrd_path.display()))?;
    let log = dir.join("serial-helper.log");
    let mut c = command("qemu-system-x86_64");
    c.args(["-machine", "q35", "-m", "768", "-display", "none", "-no-reboot", "-nodefaults"]);
    c.arg("-kernel").arg(&kernel).arg("-initrd").arg(&initrd_path);
    c.args(["-append", "console=ttyS0 panic=-1 quiet"]);
    c.arg("-serial").arg(format!("file:{}", log.display()));
    c.args(["-device", "lsi53c895a,id=scsi0"]);
    for (i, d) in disks.iter().enumerate() {
        c.arg("-drive").arg(format!("if=none,id=d{i},format=raw,file={}", d.display()));
        c.args(["-device", &format!("scsi-hd,drive=d{i},bus=scsi0.0,scsi-id={i}")]);
    }
    let mut child =
        crate::host::process::spawn(c.stdin(std::process::Stdio::null()).stdout(std::process::Stdio::null()))?;
    let started = std::time::Instant::now();
    while child.try_wait().map_err(|e| format!("waiting for the helper boot: {e}"))?.is_none() {
        if started.elapsed().as_secs() > 300 {
            let _ = child.kill();
            let _ = child.wait();
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
    let serial = String::from_utf8_lossy(&std::fs::read(&log).unwrap_or_default()).into_owned();
    if !serial.contains("LAYOUT-DONE") {
        return Err(format!("the helper boot did not make the layout:\n{}", qemu::tail(&serial, 30)));
    }
    Ok(())
}

/// The modules `names` and what they need, in the set's load order.
fn needed<'a>(
    set: &'a bootmark::contract::modules::ModuleSet,
    names: &[&str],
) -> Vec<&'a bootmark::contract::modules::Module> {
    let mut want: Vec<String> = names.iter().map(|s| s.to_string()).collect();
    let mut i = 0;
    while i < want.len() {
        if let Some(m) = set.modules.iter().find(|m| m.name == want[i]) {
            for n in &m.needs {
                if !want.contains(n) {
                    want.push(n.clone());
                }
            }
        }
        i += 1;
    }
    set.modules.iter().filter(|m| want.contains(&m.name)).collect()
}

/// The shared libraries a host program loads (ldd), with the loader.
fn libraries(program: &str) -> Result<Vec<String>> {
    let out = run(command("ldd").arg(program)).unwrap_or_default();
    Ok(out.lines().filter_map(|l| l.split_whitespace().find(|w| w.starts_with('/')).map(String::from)).collect())
}

/// Check each member against its copy from before the boot: differences
/// only inside the target LV's extents and in the md superblock's update
/// time, event count and checksum. Returns the members as they are now.
fn unchanged_but_target(disks: &[PathBuf], before: &[Vec<u8>]) -> Result<Vec<Vec<u8>>> {
    let mut now = Vec::new();
    for (disk, old) in disks.iter().zip(before) {
        let f = File::open(disk).map_err(|e| format!("{}: {e}", disk.display()))?;
        let member =
            md::read_member(&f, DISK_MIB << 20).map_err(|e| e.to_string())?.ok_or("no md superblock after the boot")?;
        let data = member.data_offset * 512;
        let window = Window { file: &f, offset: data };
        let label = lvm::read_label(&window).map_err(|e| e.to_string())?.ok_or("no PV label on the array")?;
        let text = lvm::read_metadata(&window, &label)?.ok_or("no LVM metadata")?;
        let vg = lvm::volume_group(&text)?;
        let extents = vg.extents(vg.lv("target")?)?;
        let allowed: Vec<(u64, u64)> =
            extents.iter().map(|e| (data + e.start * 512, data + (e.start + e.sectors) * 512)).collect();
        // The 1.2 superblock at 4 KiB: utime 192..200, events 200..208, sb_csum 216..220.
        let sb = 4096u64;
        let kernel_fields = [(sb + 192, sb + 208), (sb + 216, sb + 220)];
        let new = std::fs::read(disk).map_err(|e| format!("{}: {e}", disk.display()))?;
        let may_change =
            |i: usize| allowed.iter().chain(kernel_fields.iter()).any(|(s, e)| i as u64 >= *s && (i as u64) < *e);
        // Whole 4 KiB blocks compared first (memcmp); bytes only where a block differs.
        let mut outside = Vec::new();
        for (block, (n, o)) in new.chunks(4096).zip(old.chunks(4096)).enumerate() {
            if n != o {
                outside.extend(
                    (0..n.len())
                        .filter(|j| n[*j] != o[*j])
                        .map(|j| block * 4096 + j)
                        .filter(|i| !may_change(*i))
                        .take(8),
                );
            }
        }
        if !outside.is_empty() {
            return Err(format!(
                "{} changed outside the target's extents and md's event fields, at bytes {outside:?}",
                disk.display()
            ));
        }
        let events = |b: &[u8]| u64::from_le_bytes(b[4096 + 200..4096 + 208].try_into().unwrap());
        if events(&new) < events(old) {
            return Err(format!("{}: md's event count went back: {} → {}", disk.display(), events(old), events(&new)));
        }
        if !member.clean {
            return Err(format!("{} is not clean after the boot: {}", disk.display(), member.state));
        }
        now.push(new);
    }
    let events: Vec<u64> =
        now.iter().map(|b| u64::from_le_bytes(b[4096 + 200..4096 + 208].try_into().unwrap())).collect();
    if events.windows(2).any(|w| w[0] != w[1]) {
        return Err(format!("the members' event counts differ after the boot: {events:?}"));
    }
    Ok(now)
}
