//! The reset campaign: a hung server gets reset, so the stick must survive a
//! power cut at any moment. One stick, many boots of the quick plan in QEMU,
//! each killed with SIGKILL (the reset) at a different point: at spread
//! times, and right after the N-th record appears on serial. After each
//! kill:
//! - `fsck.fat -n` finds nothing but the dirty bit;
//! - every file on the stick other than the journal is byte-identical, and
//!   the journal's earlier part too (nothing written before is touched);
//! - every record the killed boot printed on serial is on the stick and
//!   verifies (the stick is written and flushed before serial: interval 0);
//! - nothing corrupt is accepted; a torn entry is reported, never accepted.
//!
//! Killing QEMU loses only the guest's memory: what QEMU had written is in
//! the host file, as a stick keeps what reached it before the power went.

use crate::boot::disks::scratch_disk;
use crate::boot::qemu;
use crate::build::image::usb;
use crate::check::boots::support::serial_documents;
use crate::host::fs;
use crate::host::fs::Context as _;
use crate::host::process::{cmd, shell};
use crate::host::project::Result;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// When a boot is killed.
#[derive(Clone, Copy, Debug)]
enum KillAt {
    /// This long after QEMU started.
    Time(Duration),
    /// As soon as this many framed documents are complete on serial.
    AfterRecords(usize),
}

fn plan(kills: usize) -> Vec<KillAt> {
    // A fixed pseudo-random spread (reproducible): half by time over the
    // whole boot (kernel start ≈ 0–12 s, records ≈ 12–22 s), half right
    // after each record line, cycling through records 1–7.
    let mut x: u64 = 0x2545_f491_4f6c_dd1d;
    (0..kills)
        .map(|k| {
            if k % 2 == 0 {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                KillAt::Time(Duration::from_millis(4_000 + x % 20_000))
            } else {
                KillAt::AfterRecords(1 + (k / 2) % 7)
            }
        })
        .collect()
}

/// A test's own copy of the image's stick (and manifest) in `base/name`,
/// and a fresh ext3 scratch disk labelled SCRATCH: (dir, stick, disk).
pub fn own_stick(image: &Path, base: &Path, name: &str) -> Result<(PathBuf, PathBuf, PathBuf)> {
    let dir = base.join(name);
    let _ = std::fs::remove_dir_all(&dir);
    fs::create_dir_all(&dir)?;
    for f in ["usb.img", "manifest.json"] {
        std::fs::copy(image.join(f), dir.join(f)).map_err(|e| format!("{f}: {e}"))?;
    }
    let disk = dir.join("scratch.img");
    scratch_disk(&disk, "ext3", 512)?;
    Ok((dir.clone(), dir.join("usb.img"), disk))
}

/// What a boot cut at any moment leaves on the stick and nothing else may:
/// a torn last entry, and (for the boot cut) no run record.
pub fn a_kill_explains(p: &bootmark::collect::Problem) -> bool {
    // A boot after a kill may also stop early (its target left dirty): its
    // runs that never ran are that boot's news, not the stick's damage.
    p.why.contains("torn") || p.why.starts_with("no run record for this boot") || p.is_not_run()
}

/// The kills `cargo xtask test` makes (see mod.rs).
pub const CI_KILLS: usize = 14;

pub fn campaign(image: &Path, base: &Path, kills: usize) -> Result<()> {
    let started = Instant::now();
    let (dir, stick, disk) = own_stick(image, base, "resets")?;
    let args = crate::check::boots::support::test_boot(dir.clone(), disk, dir.join("serial.log"));
    // What fsck says of the stick as built (syslinux leaves the backup boot
    // sector different): only what a kill adds beyond this is judged.
    let built = fsck_lines(&stick, &dir)?;
    let (mut printed, mut on_stick_total, mut torn) = (0, 0, 0);
    let mut before = snapshot(&stick, &dir)?;
    for (k, at) in plan(kills).into_iter().enumerate() {
        let log = dir.join(format!("serial-kill{k}.log"));
        let serial = boot_and_kill(&args, &log, &dir, at)?;
        let after = snapshot(&stick, &dir)?;
        let what = format!("kill {} ({at:?})", k + 1);
        check_fsck(&stick, &dir, &built).map_err(|e| format!("{what}: {e}"))?;
        check_unchanged(&before, &after).map_err(|e| format!("{what}: {e}"))?;
        let collected = bootmark::collect::collect(std::slice::from_ref(&stick));
        // Only this boot's last entry may be torn, and a killed boot has no
        // run record; anything else is a failure.
        let bad: Vec<_> = collected.problems.iter().filter(|p| !a_kill_explains(p)).collect();
        if !bad.is_empty() {
            return Err(format!("{what}: the stick has problems: {bad:?}"));
        }
        torn = collected.problems.iter().filter(|p| p.why.contains("torn")).count();
        let docs = serial_documents(&serial);
        if let Some(missing) = docs.iter().find(|d| !collected.documents.contains(d)) {
            return Err(format!(
                "{what}: a record printed on serial is not on the stick: run {} seq {}",
                missing.run_id(),
                missing.seq()
            ));
        }
        if collected.documents.len() < before.documents {
            return Err(format!("{what}: the stick lost documents ({} → {})", before.documents, after.documents));
        }
        printed += docs.len();
        on_stick_total = collected.documents.len();
        eprintln!(
            "resets: {what}: {} documents printed on serial, all on the stick; stick holds {on_stick_total}; fsck clean",
            docs.len()
        );
        before = after;
    }
    println!(
        "resets: {kills} kills on one stick: {printed} documents printed on serial before the kills, all on the stick; \
         {on_stick_total} documents verified on the stick; fsck.fat found only the dirty bit; {torn} torn \
         entries on the stick at the end, reported and not accepted ({:.0} s)",
        started.elapsed().as_secs_f64()
    );
    Ok(())
}

/// Boot and kill the machine at `at`; returns the serial output it left.
fn boot_and_kill(args: &qemu::Args, log: &Path, work: &Path, at: KillAt) -> Result<String> {
    let mut child = qemu::spawn(args, log, work)?;
    let started = Instant::now();
    let read = || String::from_utf8_lossy(&std::fs::read(log).unwrap_or_default()).into_owned();
    loop {
        let due = match at {
            KillAt::Time(t) => started.elapsed() >= t,
            KillAt::AfterRecords(n) => serial_documents(&read()).len() >= n,
        };
        let exited = child.try_wait().context("waiting for QEMU")?.is_some();
        if due || exited || started.elapsed() > Duration::from_secs(120) {
            break;
        }
        std::thread::sleep(Duration::from_millis(if matches!(at, KillAt::AfterRecords(_)) { 20 } else { 100 }));
    }
    let _ = child.kill(); // SIGKILL: the reset button
    let _ = child.wait();
    Ok(read())
}

/// What the stick held: every file's hash but the journal's, the journal's
/// bytes up to its last non-zero block, and how many documents verified.
pub struct Snapshot {
    files: BTreeMap<String, String>,
    journal: Vec<u8>,
    documents: usize,
}

pub fn snapshot(stick: &Path, dir: &Path) -> Result<Snapshot> {
    let tree = dir.join("tree");
    let _ = std::fs::remove_dir_all(&tree);
    fs::create_dir_all(&tree)?;
    let (sh, image) = (usb::mtools()?, usb::image_arg(stick));
    crate::host::process::run(cmd!(sh, "mcopy -s -n -i {image} ::/ {tree}"))?;
    let mut files = BTreeMap::new();
    hash_tree(&tree, &tree, &mut files)?;
    let journal_path = bootmark::journal::PATH.to_string();
    let mut journal = std::fs::read(tree.join(&journal_path)).map_err(|e| format!("journal: {e}"))?;
    files.remove(&journal_path);
    let used = journal.iter().rposition(|&b| b != 0).map_or(0, |i| i + 1);
    journal.truncate(used);
    let documents = bootmark::collect::collect(&[stick.to_path_buf()]).documents.len();
    Ok(Snapshot { files, journal, documents })
}

fn hash_tree(root: &Path, dir: &Path, out: &mut BTreeMap<String, String>) -> Result<()> {
    for e in fs::read_dir(dir)?.flatten() {
        let p = e.path();
        if p.is_dir() {
            hash_tree(root, &p, out)?;
        } else {
            let data = fs::read(&p)?;
            let rel = p.strip_prefix(root).unwrap().to_string_lossy().into_owned();
            out.insert(rel, bootmark::framing::sha256_hex(&data));
        }
    }
    Ok(())
}

pub fn check_unchanged(before: &Snapshot, after: &Snapshot) -> Result<()> {
    if before.files != after.files {
        let changed: Vec<&String> = before
            .files
            .iter()
            .filter(|(k, v)| after.files.get(*k) != Some(v))
            .map(|(k, _)| k)
            .chain(after.files.keys().filter(|k| !before.files.contains_key(*k)))
            .collect();
        return Err(format!("files on the stick changed: {changed:?}"));
    }
    if after.journal.len() < before.journal.len() || after.journal[..before.journal.len()] != before.journal[..] {
        return Err("the journal's earlier entries changed".into());
    }
    Ok(())
}

/// `fsck.fat -n` of the stick's FAT partition, line by line.
pub fn fsck_lines(stick: &Path, dir: &Path) -> Result<Vec<String>> {
    let data = fs::read(stick)?;
    let part = dir.join("part.img");
    fs::write(&part, &data[(usb::PART_START * 512) as usize..])?;
    let sh = shell()?;
    let out = crate::host::process::output(cmd!(sh, "fsck.fat -n {part}"))?;
    let _ = std::fs::remove_file(&part);
    let text = String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    Ok(text.lines().map(|l| l.trim().to_string()).collect())
}

/// The (offset, original, backup) byte pairs of fsck's "differences between
/// boot sector and its backup" listing.
fn boot_sector_differences(lines: &[String]) -> std::collections::BTreeSet<String> {
    lines
        .iter()
        .flat_map(|l| l.split([',', ' ']))
        .filter(|t| t.contains(':') && t.contains('/') && t.split(':').next().is_some_and(|o| o.parse::<u32>().is_ok()))
        .map(String::from)
        .collect()
}

fn is_difference_listing(l: &str) -> bool {
    let t = l.trim_start_matches(", ");
    !t.is_empty()
        && t.split(", ").all(|p| p.split_once(':').is_some_and(|(o, v)| o.parse::<u32>().is_ok() && v.len() == 5))
}

/// Nothing but the dirty bit beyond what fsck said of the stick as built.
/// Linux keeps the FAT dirty flag in the boot sector (byte 65 on FAT32, 37
/// on FAT16), which fsck also lists as a difference from the backup.
pub fn check_fsck(stick: &Path, dir: &Path, built: &[String]) -> Result<()> {
    let lines = fsck_lines(stick, dir)?;
    let harmless = |l: &str| {
        l.is_empty()
            || built.iter().any(|b| b == l)
            || is_difference_listing(l)
            || l.starts_with("fsck.fat ")
            || l.contains("Dirty bit is set")
            || l.contains("Automatically removing dirty bit")
            || l.contains("1) Remove dirty bit")
            || l.contains("2) No action")
            || l.contains("Leaving filesystem unchanged")
            || l.contains(": ") && l.contains(" files, ") && l.contains(" clusters")
    };
    let (before, after) = (boot_sector_differences(built), boot_sector_differences(&lines));
    let new: Vec<&String> =
        after.difference(&before).filter(|p| !p.starts_with("65:") && !p.starts_with("37:")).collect();
    if lines.iter().any(|l| !harmless(l)) || !new.is_empty() {
        return Err(format!("fsck.fat -n found more than the dirty bit ({new:?}):\n{}", lines.join("\n")));
    }
    Ok(())
}
