//! The waiting mechanisms provoked on purpose and named from the kernel's own
//! events: the demo's `dirty40` run (a 192 MiB write under dirty_ratio 40) on
//! the `dl140` machine with 384 MiB and its disk at 8 MB/s (far slower than the writer). Debian 12's 6.1
//! pauses the writer in balance_dirty_pages while it writes and holds its
//! fdatasync in block writeback throttling (wbt) — the two mechanisms the
//! first dirty-limit finding confused. The record must carry the tracepoints
//! that prove each; the report must name dirty throttling from the
//! balance_dirty_pages tracepoint, wbt as wbt with the queue's wbt_lat_usec,
//! and never the one as the other; the requests the kernel sent must be no
//! larger than the queue's max_sectors_kb the record carries.

use crate::boot::disks::scratch_disk;
use crate::boot::qemu;
use crate::build::image;
use crate::check::boots::support::{results, serial_documents, test_boot, test_image};
use crate::host::project::Result;
use bootmark::record::{Record, Status};
use std::path::Path;

/// The disk's throttle: a quarter of the dl140's 30 MB/s.
const DISK_MBPS: u32 = 8;

/// How fast the writer's write() calls went (MiB/s until they returned).
fn writer_speed(r: &Record) -> f64 {
    let returned = r.times.writes_returned_s.unwrap_or(r.times.wall_s);
    r.bytes_written as f64 / (1 << 20) as f64 / returned.max(1e-3)
}

pub fn test(package: &str, base: &Path) -> Result<()> {
    let image_args = image::Args {
        plan: "demo".into(),
        append: "bootmark.variants=dirty40 bootmark.repeat=1".into(),
        ..test_image(vec![package.into()], base.join("image-mechanisms"), None)
    };
    let out = image::build(&image_args)?;
    let disk = base.join("scratch-mechanisms.img");
    scratch_disk(&disk, "ext3", 512)?;
    let args = qemu::Args {
        machine: "dl140".into(),
        // 384 MiB, not the dl140's 1 GiB: under dirty_ratio 40 the writer then
        // passes the kernel's freerun point (halfway between the background and
        // dirty limits, about 75 MiB here) well before its 192 MiB are written.
        memory: Some(384),
        // A quarter of the dl140's 30 MB/s: the writer outruns the disk by far
        // even when the workstation's other work slows it (at 30 MB/s one boot of
        // three paused it once; at 15 MB/s a CI run whose writer managed 22 MB/s
        // beside a kernel build stayed under the limit: 50 balance_dirty_pages
        // calls, every pause negative, the writer's own think time longer).
        disk_mbps: Some(DISK_MBPS),
        disk_iops: 240,
        disk_iops_kib: 128,
        ..test_boot(out, disk, base.join("serial-mechanisms.log"))
    };
    // A writer no faster than the disk is never paused, whatever the kernel:
    // the check is then void (the workstation was too busy), not failed, and
    // the boot is tried once more.
    let mut attempt = 1;
    let (booted, docs) = loop {
        let booted = qemu::boot(&args)?;
        let docs = serial_documents(&booted.serial);
        let records = results(&docs);
        let [r] = records.as_slice() else {
            return Err(format!(
                "expected one seqwrite record, got {}\n{}",
                records.len(),
                qemu::tail(&booted.serial, 25)
            ));
        };
        let writer_mib_s = writer_speed(r);
        match check_record(r) {
            Err(e) if attempt == 1 && writer_mib_s < 2.0 * DISK_MBPS as f64 => {
                println!(
                    "e2e: mechanisms: void, trying once more: the writer wrote at {writer_mib_s:.1} MiB/s against the \
                     disk's {DISK_MBPS} MB/s, too slow to be throttled (a busy workstation): {e}"
                );
                attempt += 1;
            }
            Err(e) => {
                return Err(format!("{e} (the writer wrote at {writer_mib_s:.1} MiB/s, the disk {DISK_MBPS} MB/s)"));
            }
            Ok(()) => break (booted, docs),
        }
    };
    let records = results(&docs);
    let r = records[0];
    let opts = bootmark::report::Options { pictures: true, ..Default::default() };
    let report = bootmark::report::report(records.iter().copied(), opts)?;
    let figures = bootmark::report::pictures::figures(&report.rows, &report.pictures)?;
    for id in ["waits-seqwrite", "cdf-seqwrite", "parts-seqwrite", &format!("run-{}-{}", r.run_id, r.seq)] {
        if !figures.iter().any(|f| f.id == id && f.records.iter().any(|x| *x == format!("{}:{}", r.run_id, r.seq))) {
            return Err(format!(
                "no figure {id} drawn from the run: {:?}",
                figures.iter().map(|f| &f.id).collect::<Vec<_>>()
            ));
        }
    }
    let said = |rule: &str| report.findings.iter().find(|f| f.rule == rule);
    let dirty = said("dirty-limit").ok_or_else(|| format!("no dirty-limit finding: {:#?}", report.findings))?;
    if !dirty.sentence.contains("the writer was throttled at the dirty limit")
        || !dirty.sentence.contains("writeback:balance_dirty_pages tracepoint paused writers")
    {
        return Err(format!("the dirty-limit finding does not rest on the kernel's pauses: {}", dirty.sentence));
    }
    if dirty.evidence.iter().any(|e| e.contains("rq_qos_wait") || e.contains("wbt_wait")) {
        return Err(format!("wbt counted as dirty throttling: {:?}", dirty.evidence));
    }
    let wbt = said("writeback-throttling")
        .ok_or_else(|| format!("no writeback-throttling finding: {:#?}", report.findings))?;
    if !wbt.sentence.starts_with("the writer was held by block writeback throttling (wbt)")
        || !wbt.sentence.contains("µs here; 0 turns wbt off) acts on it")
    {
        return Err(format!(
            "the writeback-throttling finding names the wrong mechanism or no setting: {}",
            wbt.sentence
        ));
    }
    // The machine says what it was: QEMU's disk, throttled (the asset tag xtask qemu set).
    let setting = report.setting.as_deref().unwrap_or("");
    if !setting.contains("emulated (ATA QEMU HARDDISK)") || !setting.contains("disk throttled to 8 MB/s") {
        return Err(format!("the report does not say the disk was QEMU's and throttled: {setting:?}"));
    }
    let k = r.kernel_events.as_ref().ok_or("no kernel events")?;
    println!(
        "e2e: mechanisms: {package} on --machine dl140 (384 MiB, 8 MB/s), the demo's dirty40 run: balance_dirty_pages paused the writer {} times ({:.0} ms) while writing; wbt named with wbt_lat_usec {}; {} events read, {} lost ({:.1} s)",
        k.dirty_pauses.writing.count,
        k.dirty_pauses.writing.total_ms,
        r.storage.queue.get("queue/wbt_lat_usec").map_or("?", String::as_str),
        k.read,
        k.lost,
        booted.elapsed.as_secs_f64()
    );
    Ok(())
}

/// The record carries the tracepoints that prove each mechanism, and the
/// kernel's requests agree with the queue's limit.
fn check_record(r: &Record) -> Result<()> {
    if r.status != Status::Ok || r.workload.name != "seqwrite" {
        return Err(format!("{} {:?}: {:?}", r.workload.name, r.status, r.error));
    }
    let tracepoints = r.sources.get("tracepoints").map_or("", String::as_str);
    let k = r.kernel_events.as_ref().ok_or_else(|| format!("no kernel_events; sources: {:?}", r.sources))?;
    if !tracepoints.starts_with("used") {
        return Err(format!("sources.tracepoints: {tracepoints}"));
    }
    for event in ["writeback:balance_dirty_pages", "wbt:wbt_step", "block:block_rq_issue", "block:block_rq_complete"] {
        if !k.enabled.iter().any(|e| e == event) {
            return Err(format!("{event} was not on: enabled {:?}, absent {:?}", k.enabled, k.absent));
        }
    }
    if k.dirty_pauses.writing.count == 0 {
        return Err(format!("the kernel never paused the writer while it wrote: {:?}", k.dirty_pauses));
    }
    // Two of the kernel's own accounts of its dirty limit agree: vmstat's at the
    // start and the tracepoint's (which follows it as free memory changes).
    let vmstat = r.timeline.series.get("nr_dirty_threshold").and_then(|s| s.iter().flatten().next().copied());
    match (vmstat, k.dirty_limit_pages) {
        (Some(v), Some(t)) if (v as f64 - t as f64).abs() <= 0.1 * v as f64 => {}
        other => {
            return Err(format!("nr_dirty_threshold and the tracepoint's limit disagree or are missing: {other:?}"));
        }
    }
    let disk = r.storage.device.as_ref().map(|d| d.disk.clone()).ok_or("no target device")?;
    let writes =
        k.requests.get(&format!("{disk} W")).ok_or_else(|| format!("no {disk} W requests: {:?}", k.requests))?;
    // The probe's uncached read reaches the target at each tick: the block
    // tracepoints time those reads in the device (the read-wait findings' bound).
    let reads = k.requests.get(&format!("{disk} R")).map_or(0, |q| q.count);
    let ticks = r.responsiveness.as_ref().map_or(0, |p| p.samples);
    if ticks == 0 || reads < ticks / 2 {
        return Err(format!("{reads} reads traced on {disk} for {ticks} probe ticks: {:?}", k.requests));
    }
    // The same pauses on the timeline's ticks, for the stall finding's window:
    // every one before the last tick (the writer paused while it wrote).
    let on_ticks: u64 = r.timeline.series.get("traced_dirty_pause_ms").into_iter().flatten().flatten().sum();
    let total = k.dirty_pauses.total().total_ms;
    if (on_ticks as f64) > total || (on_ticks as f64) < 0.9 * total {
        return Err(format!("traced_dirty_pause_ms sums to {on_ticks} ms on the ticks, the summary to {total:.0} ms"));
    }
    if !r.timeline.series.contains_key(&format!("traced_read_ms.{disk}")) {
        return Err(format!("no traced_read_ms.{disk} on the timeline: {:?}", r.timeline.series.keys()));
    }
    // Each tick's read and ls apart (the pictures' CDF of the parts), within its whole response.
    let tl = &r.timeline;
    let n = tl.probe_t_s.len();
    if n == 0 || tl.probe_read_ms.len() != n || tl.probe_ls_ms.len() != n {
        return Err(format!(
            "{n} probe ticks, {} reads and {} ls timed apart",
            tl.probe_read_ms.len(),
            tl.probe_ls_ms.len()
        ));
    }
    let parts = tl.probe_read_ms.iter().zip(&tl.probe_ls_ms).zip(&tl.probe_response_ms);
    if let Some(((read, ls), whole)) = parts.clone().find(|((read, ls), whole)| *read + *ls > **whole + 1e-6) {
        return Err(format!("a tick's read {read} ms and ls {ls} ms exceed its response {whole} ms"));
    }
    let limit: u32 = r
        .storage
        .queue
        .get("queue/max_sectors_kb")
        .and_then(|v| v.parse().ok())
        .ok_or_else(|| format!("no queue/max_sectors_kb: {:?}", r.storage.queue))?;
    if writes.count == 0 || writes.kib_max > limit {
        return Err(format!(
            "{disk}'s write requests ({} up to {} KiB) against max_sectors_kb {limit}",
            writes.count, writes.kib_max
        ));
    }
    Ok(())
}
