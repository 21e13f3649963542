//! A stick that loses what it had not yet written: killing QEMU keeps every
//! write QEMU made, but a real stick may lose writes that were still in its
//! cache, and many sticks report no cache so Linux never flushes them. So
//! one boot's writes to the stick are recorded with QEMU's blklogwrites
//! driver (the dm-log-writes format) and replayed onto the stick as it was
//! before the boot, one write at a time, multi-sector writes also cut in
//! half; after every step (every prefix of what reached the device) the
//! stick must be consistent:
//! - `fsck.fat -n` finds nothing but the dirty bit;
//! - every file other than the journal is byte-identical to before;
//! - the collector accepts only documents the boot really wrote, rejects
//!   nothing but a torn last entry, and never loses one it accepted before.

use super::resets;
use crate::boot::qemu;
use crate::check::boots::support::test_boot;
use crate::host::fs;
use crate::host::fs::Context as _;
use crate::host::project::Result;
use std::path::Path;

const MAGIC: u64 = 0x006a_7366_7773_6872;
const FLUSH: u64 = 1;

/// One logged write (or flush) of the dm-log-writes format.
#[derive(Debug)]
pub struct Entry {
    /// Byte offset on the device.
    pub offset: u64,
    pub data: Vec<u8>,
    pub flush: bool,
}

fn u64_at(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().unwrap())
}

/// Parse a dm-log-writes log: a super block (magic, version, entries,
/// sector size), then per entry one header sector (sector, sectors, flags,
/// data length, which QEMU leaves 0) followed by the sectors' data.
pub fn parse(log: &[u8]) -> Result<Vec<Entry>> {
    if log.len() < 512 || u64_at(log, 0) != MAGIC {
        return Err("not a dm-log-writes log (bad magic)".into());
    }
    let sector = u32::from_le_bytes(log[24..28].try_into().unwrap()) as usize;
    if !sector.is_power_of_two() || sector < 512 {
        return Err(format!("bad log sector size {sector}"));
    }
    let mut entries = Vec::new();
    let mut pos = sector;
    while pos + sector <= log.len() {
        let h = &log[pos..pos + 32];
        let (first, count, flags) = (u64_at(h, 0), u64_at(h, 8), u64_at(h, 16));
        if first == 0 && count == 0 && flags == 0 {
            break; // past the last entry
        }
        // QEMU leaves data_len 0: the data is always `count` whole sectors.
        let len = (count as usize).checked_mul(sector).ok_or("a log entry's size overflows")?;
        let data_start = pos + sector;
        let data = log.get(data_start..data_start + len).ok_or("a log entry runs past the end of the log")?.to_vec();
        entries.push(Entry { offset: first * sector as u64, data, flush: flags & FLUSH != 0 });
        pos = data_start + len.div_ceil(sector) * sector;
    }
    Ok(entries)
}

pub fn test(image: &Path, base: &Path) -> Result<()> {
    let started = std::time::Instant::now();
    let (dir, stick, disk) = resets::own_stick(image, base, "write-log")?;
    let pristine = fs::read(&stick)?;
    let log = dir.join("stick-writes.log");
    qemu::boot(&qemu::Args {
        stick_write_log: Some(log.clone()),
        ..test_boot(dir.clone(), disk, dir.join("serial.log"))
    })?;
    let entries = parse(&fs::read(&log)?)?;
    let final_docs = bootmark::collect::collect(std::slice::from_ref(&stick)).documents;
    let writes = entries.iter().filter(|e| !e.data.is_empty()).count();
    let flushes = entries.iter().filter(|e| e.flush).count();
    if writes == 0 || final_docs.len() < 7 {
        return Err(format!("the logged boot wrote {writes} times and left {} documents", final_docs.len()));
    }

    // Replay onto the stick as it was, checking after every write.
    let replay = dir.join("replay.img");
    fs::write(&replay, &pristine)?;
    let built_fsck = resets::fsck_lines(&replay, &dir)?;
    let mut before = resets::snapshot(&replay, &dir)?;
    let file = std::fs::OpenOptions::new()
        .write(true)
        .open(&replay)
        .with_context(|| format!("cannot open {}", replay.display()))?;
    let (mut checked, mut most) = (0, 0);
    // Each write whole, and multi-sector writes also cut in half first (a
    // stick may lose the end of a request when the power goes).
    let steps = entries.iter().enumerate().filter(|(_, e)| !e.data.is_empty()).flat_map(|(i, e)| {
        let half = (e.data.len() / 512 / 2) * 512;
        (half > 0).then_some((i, e, half)).into_iter().chain(std::iter::once((i, e, e.data.len())))
    });
    for (i, e, len) in steps {
        std::os::unix::fs::FileExt::write_all_at(&file, &e.data[..len], e.offset)
            .with_context(|| format!("cannot replay write {i} into {}", replay.display()))?;
        let what =
            format!("after write {} of {} (byte {}, {len} of {} bytes)", i + 1, entries.len(), e.offset, e.data.len());
        resets::check_fsck(&replay, &dir, &built_fsck).map_err(|err| format!("{what}: {err}"))?;
        let now = resets::snapshot(&replay, &dir)?;
        resets::check_unchanged(&before, &now).map_err(|err| format!("{what}: {err}"))?;
        let c = bootmark::collect::collect(std::slice::from_ref(&replay));
        if let Some(p) = c.problems.iter().find(|p| !resets::a_kill_explains(p)) {
            return Err(format!("{what}: {}", p.why));
        }
        if let Some(d) = c.documents.iter().find(|d| !final_docs.contains(d)) {
            return Err(format!("{what}: accepted a document the boot did not write: {} {}", d.run_id(), d.seq()));
        }
        if c.documents.len() < most {
            return Err(format!("{what}: {} documents, fewer than the {most} accepted before", c.documents.len()));
        }
        most = c.documents.len();
        before = now;
        checked += 1;
    }
    println!(
        "e2e: stick write log: {writes} writes and {flushes} flushes of one boot replayed one by one; after each, fsck clean, \
         other files and earlier entries identical, {most} documents at the end, none lost or invented ({checked} prefixes, {:.0} s)",
        started.elapsed().as_secs_f64()
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_dm_log_writes_format() {
        let mut log = vec![0u8; 512];
        log[..8].copy_from_slice(&MAGIC.to_le_bytes());
        log[8..16].copy_from_slice(&1u64.to_le_bytes());
        log[24..28].copy_from_slice(&512u32.to_le_bytes());
        let mut entry = |sector: u64, flags: u64, data: &[u8]| {
            let mut h = vec![0u8; 512];
            h[..8].copy_from_slice(&sector.to_le_bytes());
            h[8..16].copy_from_slice(&((data.len() / 512) as u64).to_le_bytes());
            h[16..24].copy_from_slice(&flags.to_le_bytes());
            h[24..32].copy_from_slice(&0u64.to_le_bytes());
            log.extend_from_slice(&h);
            log.extend_from_slice(data);
        };
        entry(2048, 0, &[7u8; 1024]);
        entry(0, FLUSH, &[]);
        entry(4, 0, &[9u8; 512]);
        log.extend_from_slice(&[0u8; 512]);
        let e = parse(&log).unwrap();
        assert_eq!(e.len(), 3);
        assert_eq!((e[0].offset, e[0].data.len(), e[0].flush), (2048 * 512, 1024, false));
        assert!(e[1].flush && e[1].data.is_empty());
        assert_eq!((e[2].offset, e[2].data[0]), (2048, 9));
        assert!(parse(&[0u8; 512]).is_err());
    }
}
