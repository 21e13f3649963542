//! Reading the kernel's trace lines (`trace_pipe`'s text) into events, and
//! events into the bounded summary a record carries. Pure: the session with
//! the kernel that produces the lines is `tracing.rs`.
//!
//! A line is `TASK-PID [CPU] FLAGS TIMESTAMP: EVENT: PAYLOAD`; the flags
//! column is absent on older kernels and TASK may hold spaces or dashes, so
//! the line is read from its `[CPU]` field on. Payloads are each event's
//! `print fmt` (include/trace/events/*.h), read by their named fields so a
//! field added by a later kernel (block's ioprio in 6.10) changes nothing.

use super::histogram::Histogram;
use crate::schema::events::{Journal, KernelEvents, Pauses, Phased, Requests, Wbt};
use std::collections::BTreeMap;

/// Lines kept in the excerpt per event, and in all.
const EXCERPT_PER_EVENT: usize = 3;
const EXCERPT_LINES: usize = 24;
/// Issued requests waiting for their completion, at most (a lost completion
/// must not grow the list for ever; a queue holds far fewer).
const IN_FLIGHT_KEPT: usize = 1024;
/// Events kept for the summary; past it they are counted only. About 40
/// bytes each: a few MiB at most on a 256 MiB machine.
pub const EVENTS_KEPT: usize = 100_000;

/// One trace line, split.
#[derive(Debug, PartialEq)]
pub struct Line<'a> {
    /// The task's PID, from "TASK-PID" before the CPU column (0 where unreadable).
    pub pid: u32,
    pub timestamp_s: f64,
    pub event: &'a str,
    pub payload: &'a str,
}

/// Split a trace_pipe line; None for anything else (a header, a cut line).
pub fn split(line: &str) -> Option<Line<'_>> {
    let after_cpu = cpu_field_end(line)?;
    let pid = task_pid(&line[..line[..after_cpu].rfind('[')?]);
    let rest = line[after_cpu..].trim_start();
    // The flags column ("d..1.") when present, then "12345.678901:".
    let mut tokens = rest.split_whitespace();
    let stamp = tokens.by_ref().take(2).find(|t| t.ends_with(':') && t[..t.len() - 1].parse::<f64>().is_ok())?;
    let timestamp_s = stamp[..stamp.len() - 1].parse().ok()?;
    let after_stamp = &rest[rest.find(stamp)? + stamp.len()..];
    let (event, payload) = after_stamp.trim_start().split_once(':')?;
    if event.is_empty() || event.contains(' ') {
        return None;
    }
    Some(Line { pid, timestamp_s, event, payload: payload.trim() })
}

/// The PID of "  my task-77 " (a TGID column "(   77)" after it, where the
/// kernel was told to print one, is skipped); 0 where there is none.
fn task_pid(task: &str) -> u32 {
    let task = task.trim_end();
    let task = match task.strip_suffix(')') {
        Some(t) => t.rsplit_once('(').map_or(t, |(before, _)| before.trim_end()),
        None => task,
    };
    task.rsplit_once('-').and_then(|(_, pid)| pid.parse().ok()).unwrap_or(0)
}

/// The byte after the first `[digits]`: the CPU column.
fn cpu_field_end(line: &str) -> Option<usize> {
    for (at, _) in line.match_indices('[') {
        let tail = &line[at + 1..];
        let digits = tail.bytes().take_while(u8::is_ascii_digit).count();
        if digits > 0 && tail.as_bytes().get(digits) == Some(&b']') {
            return Some(at + 1 + digits + 1);
        }
    }
    None
}

/// `key=value` fields ("pause=12", "max=16,") as numbers.
fn field(payload: &str, key: &str) -> Option<i64> {
    payload.split_whitespace().find_map(|w| {
        let (k, v) = w.trim_end_matches(',').split_once('=')?;
        if k == key { v.trim_end_matches("us").parse().ok() } else { None }
    })
}

/// `key value` pairs as jbd2 prints them ("running 5000 locked 0").
fn word_field(payload: &str, key: &str) -> Option<u64> {
    let mut words = payload.split_whitespace();
    while let Some(w) = words.next() {
        if w == key {
            return words.next()?.parse().ok();
        }
    }
    None
}

/// A request as block_rq_issue/complete print it: "8,0 W 4096 () 2048 + 8 …".
#[derive(Debug, PartialEq)]
struct Request<'a> {
    dev: &'a str,
    write: bool,
    sector: u64,
    sectors: u64,
}

fn request(payload: &str) -> Option<Request<'_>> {
    let tokens: Vec<&str> = payload.split_whitespace().collect();
    let plus = tokens.iter().position(|t| *t == "+")?;
    let rwbs = tokens.get(1)?;
    let write = rwbs.contains('W');
    if !write && !rwbs.contains('R') {
        return None; // flushes and discards carry no data
    }
    Some(Request {
        dev: tokens.first()?,
        write,
        sector: tokens.get(plus.checked_sub(1)?)?.parse().ok()?,
        sectors: tokens.get(plus + 1)?.parse().ok()?,
    })
}

/// What one line says, reduced to the figures the summary keeps.
#[derive(Clone, Debug, PartialEq)]
pub enum Kind {
    DirtyPause {
        pause_ms: i64,
        limit: Option<u64>,
        dirty: Option<u64>,
    },
    WbtStep {
        disk: u16,
        max: Option<u64>,
        down: bool,
    },
    WbtLat {
        disk: u16,
        us: u64,
    },
    WbtTimer {
        disk: u16,
    },
    /// A completed request, matched with its issue, and with its insert
    /// into the queue where one was seen (not for a request the block layer
    /// issued straight to the driver, nor one that grew at its front).
    Request {
        disk: u16,
        write: bool,
        kib: u32,
        device_ns: u64,
        queued_ns: Option<u64>,
    },
    /// A task's direct reclaim, ended, matched with its begin.
    Reclaimed {
        ms: f64,
    },
    Commit {
        running_ms: u64,
        locked_ms: u64,
        logging_ms: u64,
    },
    Other,
}

/// One event, at its trace clock's time (put on the timeline's axis when
/// summarised: the marker that maps it may come after the first events).
#[derive(Clone, Debug, PartialEq)]
pub struct Event {
    pub timestamp_s: f64,
    pub name: u16,
    pub kind: Kind,
}

/// Lines in, events out: matches completions with issues and keeps the excerpt.
pub struct Reader {
    /// Trace timestamp + offset = seconds on the timeline's axis.
    pub offset_s: Option<f64>,
    /// Disk names by "major,minor" (from /sys/block/*/dev).
    disks_by_number: BTreeMap<String, String>,
    /// Inserted requests not yet issued: (disk, sector, trace timestamp), newest last.
    inserted: Vec<(u16, u64, f64)>,
    /// Issued requests not yet completed: (disk, sector, trace timestamp,
    /// seconds since its insert where seen), newest last.
    issued: Vec<(u16, u64, f64, Option<f64>)>,
    pub names: Vec<String>,
    pub disks: Vec<String>,
    pub events: Vec<Event>,
    pub read: u64,
    /// Whether both direct-reclaim events are on: then the summary and the
    /// timeline say how much reclaim there was, none included.
    pub reclaim_on: bool,
    /// Tasks inside a direct reclaim: (PID, trace timestamp of its begin).
    reclaiming: Vec<(u32, f64)>,
    /// (event, trace timestamp, line) of the lines kept as the exhibit.
    excerpt: Vec<(u16, f64, String)>,
}

impl Reader {
    pub fn new(disks_by_number: BTreeMap<String, String>) -> Reader {
        Reader {
            offset_s: None,
            disks_by_number,
            inserted: Vec::new(),
            issued: Vec::new(),
            names: Vec::new(),
            disks: Vec::new(),
            events: Vec::new(),
            read: 0,
            reclaim_on: false,
            reclaiming: Vec::new(),
            excerpt: Vec::new(),
        }
    }

    /// One line of trace_pipe; `marker` is the text written to trace_marker
    /// with the CLOCK_MONOTONIC seconds (on the timeline's axis) it was written at.
    pub fn line(&mut self, text: &str, marker: (&str, f64)) {
        let Some(line) = split(text) else { return };
        if line.event == "tracing_mark_write" || line.event == "print" {
            if line.payload.contains(marker.0) {
                self.offset_s = Some(marker.1 - line.timestamp_s);
            }
            return;
        }
        self.read += 1;
        let at_s = line.timestamp_s;
        let kind = match line.event {
            "balance_dirty_pages" => Kind::DirtyPause {
                pause_ms: field(line.payload, "pause").unwrap_or(0),
                limit: field(line.payload, "limit").map(|v| v as u64),
                dirty: field(line.payload, "dirty").map(|v| v as u64),
            },
            "wbt_step" => Kind::WbtStep {
                disk: self.wbt_disk(line.payload),
                max: field(line.payload, "max").map(|v| v as u64),
                down: line.payload.contains("scale down"),
            },
            "wbt_lat" => match line.payload.rsplit_once("latency ") {
                Some((_, us)) => Kind::WbtLat {
                    disk: self.wbt_disk(line.payload),
                    us: us.trim_end_matches("us").trim().parse().unwrap_or(0),
                },
                None => Kind::Other,
            },
            "wbt_timer" => Kind::WbtTimer { disk: self.wbt_disk(line.payload) },
            "block_rq_insert" => {
                if let Some(r) = request(line.payload) {
                    let disk = self.disk(r.dev);
                    // Issues never seen (overrun, a front merge): forget the oldest quarter.
                    keep_at_most(&mut self.inserted, IN_FLIGHT_KEPT);
                    self.inserted.push((disk, r.sector, at_s));
                }
                Kind::Other
            }
            "block_rq_issue" => {
                if let Some(r) = request(line.payload) {
                    let disk = self.disk(r.dev);
                    let inserted = self.inserted.iter().rposition(|(d, s, _)| *d == disk && *s == r.sector);
                    let queued = inserted.map(|at| at_s - self.inserted.remove(at).2);
                    // Completions lost (overrun): forget the oldest quarter.
                    keep_at_most(&mut self.issued, IN_FLIGHT_KEPT);
                    self.issued.push((disk, r.sector, at_s, queued));
                }
                Kind::Other
            }
            "block_rq_complete" => match request(line.payload) {
                Some(r) => match self.completed(r.dev, r.sector) {
                    Some((disk, issued, queued)) if r.sectors > 0 => Kind::Request {
                        disk,
                        write: r.write,
                        kib: (r.sectors / 2).min(u32::MAX as u64) as u32,
                        device_ns: ((at_s - issued).max(0.0) * 1e9) as u64,
                        queued_ns: queued.map(|q| (q.max(0.0) * 1e9) as u64),
                    },
                    _ => Kind::Other,
                },
                None => Kind::Other,
            },
            "mm_vmscan_direct_reclaim_begin" => {
                // One reclaim at a time per task: a begin without its end (lost) is replaced.
                self.reclaiming.retain(|(pid, _)| *pid != line.pid);
                keep_at_most(&mut self.reclaiming, IN_FLIGHT_KEPT);
                self.reclaiming.push((line.pid, at_s));
                Kind::Other
            }
            "mm_vmscan_direct_reclaim_end" => match self.reclaiming.iter().position(|(pid, _)| *pid == line.pid) {
                Some(at) => Kind::Reclaimed { ms: (at_s - self.reclaiming.remove(at).1).max(0.0) * 1e3 },
                None => Kind::Other,
            },
            "jbd2_run_stats" => Kind::Commit {
                running_ms: word_field(line.payload, "running").unwrap_or(0),
                locked_ms: word_field(line.payload, "locked").unwrap_or(0),
                logging_ms: word_field(line.payload, "logging").unwrap_or(0),
            },
            _ => Kind::Other,
        };
        let name = intern(&mut self.names, line.event);
        self.keep_excerpt(name, at_s, text, &kind);
        if self.events.len() < EVENTS_KEPT {
            self.events.push(Event { timestamp_s: at_s, name, kind });
        }
    }

    /// The issue of a request completing now: (its disk, when it was
    /// issued, how long it had been queued since its insert where seen).
    fn completed(&mut self, dev: &str, sector: u64) -> Option<(u16, f64, Option<f64>)> {
        let disk = self.disk(dev);
        let at = self.issued.iter().rposition(|(d, s, _, _)| *d == disk && *s == sector)?;
        let (_, _, issued, queued) = self.issued.remove(at);
        Some((disk, issued, queued))
    }

    /// The disk a wbt event names first ("8:16: scale down…", its bdi's "major:minor").
    fn wbt_disk(&mut self, payload: &str) -> u16 {
        let dev = payload.split(": ").next().unwrap_or("").replace(':', ",");
        self.disk(&dev)
    }

    fn disk(&mut self, dev: &str) -> u16 {
        let name = self.disks_by_number.get(dev).map_or(dev, String::as_str);
        intern(&mut self.disks, name)
    }

    /// The first lines of each event, and any longer pause or deeper wbt step
    /// than those kept (it replaces that event's last kept line).
    /// Called for every line: nothing is allocated unless the line is kept.
    fn keep_excerpt(&mut self, name: u16, timestamp_s: f64, text: &str, kind: &Kind) {
        let mut of_this = self.excerpt.iter().filter(|e| e.0 == name);
        if of_this.clone().count() < EXCERPT_PER_EVENT && self.excerpt.len() < EXCERPT_LINES {
            self.excerpt.push((name, timestamp_s, text.trim().to_string()));
            return;
        }
        let notable = match kind {
            Kind::DirtyPause { pause_ms, .. } => {
                of_this.all(|e| field(&e.2, "pause").is_none_or(|old| *pause_ms > old))
            }
            Kind::WbtStep { max: Some(max), .. } => {
                of_this.all(|e| field(&e.2, "max").is_none_or(|old| (*max as i64) < old))
            }
            _ => false,
        };
        if notable && let Some(last) = self.excerpt.iter().rposition(|e| e.0 == name) {
            self.excerpt[last] = (name, timestamp_s, text.trim().to_string());
        }
    }

    /// The events on the timeline's ticks (`t_s`), for the report to say what
    /// the kernel did during one stall: the pauses balance_dirty_pages made
    /// (ms summed over each tick's interval, the tick that ends it) as
    /// `traced_dirty_pause_ms`, and per disk the longest a read completing in
    /// that interval was held by the device as `traced_read_ms.<disk>`.
    /// Events after the last tick are left out; nothing without a marker.
    pub fn per_tick(&self, t_s: &[f64]) -> Vec<(String, Vec<Option<u64>>)> {
        let Some(offset) = self.offset_s.filter(|_| !t_s.is_empty()) else { return Vec::new() };
        let mut pauses = vec![Some(0u64); t_s.len()];
        let mut reclaims = vec![Some(0u64); t_s.len()];
        let mut reads: Vec<Option<Vec<Option<u64>>>> = vec![None; self.disks.len()];
        for e in &self.events {
            let tick = t_s.partition_point(|&t| t < e.timestamp_s + offset);
            if tick == t_s.len() {
                continue;
            }
            match &e.kind {
                Kind::DirtyPause { pause_ms, .. } if *pause_ms > 0 => {
                    pauses[tick] = pauses[tick].map(|ms| ms + *pause_ms as u64);
                }
                Kind::Request { disk, write: false, device_ns, .. } => {
                    let series = reads[*disk as usize].get_or_insert_with(|| vec![Some(0); t_s.len()]);
                    series[tick] = series[tick].max(Some(device_ns / 1_000_000));
                }
                // Rounded up: a reclaim under 1 ms still shows on its tick.
                Kind::Reclaimed { ms } => {
                    // To the µs first: the trace clock's float must not add a ms.
                    let ms = ((ms * 1e3).round() / 1e3).ceil() as u64;
                    reclaims[tick] = reclaims[tick].map(|sum| sum + ms);
                }
                _ => {}
            }
        }
        let mut out = vec![("traced_dirty_pause_ms".to_string(), pauses)];
        if self.reclaim_on {
            out.push(("traced_reclaim_ms".to_string(), reclaims));
        }
        for (disk, series) in self.disks.iter().zip(reads) {
            out.extend(series.map(|s| (format!("traced_read_ms.{disk}"), s)));
        }
        out
    }

    /// The summary a record carries; phases split at `writes_end_s` and
    /// `workload_end_s` on the timeline's axis.
    pub fn summarize(&self, writes_end_s: f64, workload_end_s: f64) -> KernelEvents {
        let offset = self.offset_s.unwrap_or(0.0);
        let phase = |timestamp: f64| -> usize {
            let at = timestamp + offset;
            if at <= writes_end_s {
                0
            } else if at <= workload_end_s {
                1
            } else {
                2
            }
        };
        // Indexed by event name and by disk (and direction), as interned:
        // vectors, not maps, keep this code small in the /init binary.
        let mut counts = vec![[0u64; 3]; self.names.len()];
        let mut pauses = [Pauses::default(), Pauses::default(), Pauses::default()];
        let mut reclaims = [Pauses::default(), Pauses::default(), Pauses::default()];
        let mut out = KernelEvents { read: self.read, ..KernelEvents::default() };
        let mut wbt: Vec<Option<Wbt>> = vec![None; self.disks.len()];
        // Per disk and direction: sizes, device times, and queue times (insert to issue).
        let mut requests: Vec<Option<(Vec<u32>, Histogram, Histogram)>> =
            (0..self.disks.len() * 2).map(|_| None).collect();
        let mut journal = Journal::default();
        for e in &self.events {
            let p = phase(e.timestamp_s);
            counts[e.name as usize][p] += 1;
            match &e.kind {
                Kind::DirtyPause { pause_ms, limit, dirty } => {
                    if *pause_ms > 0 {
                        let ms = *pause_ms as f64;
                        pauses[p] = pauses[p].clone() + Pauses { count: 1, total_ms: ms, max_ms: ms };
                    }
                    out.dirty_limit_pages = out.dirty_limit_pages.max(*limit);
                    out.dirty_pages_max = out.dirty_pages_max.max(*dirty);
                }
                Kind::WbtStep { disk, max, down } => {
                    let wbt = wbt[*disk as usize].get_or_insert_with(Wbt::default);
                    wbt.steps += 1;
                    wbt.scaled_down += *down as u64;
                    if let Some(m) = max {
                        wbt.lowest_max_depth = Some(wbt.lowest_max_depth.map_or(*m, |l| l.min(*m)));
                    }
                }
                Kind::WbtLat { disk, us } => {
                    let wbt = wbt[*disk as usize].get_or_insert_with(Wbt::default);
                    wbt.max_latency_us = wbt.max_latency_us.max(Some(*us));
                }
                Kind::WbtTimer { disk } => wbt[*disk as usize].get_or_insert_with(Wbt::default).windows += 1,
                Kind::Request { disk, write, kib, device_ns, queued_ns } => {
                    let slot = *disk as usize * 2 + *write as usize;
                    let (sizes, times, queued) =
                        requests[slot].get_or_insert_with(|| (Vec::new(), Histogram::new(), Histogram::new()));
                    sizes.push(*kib);
                    times.record(*device_ns);
                    if let Some(ns) = queued_ns {
                        queued.record(*ns);
                    }
                }
                Kind::Reclaimed { ms } => {
                    reclaims[p] = reclaims[p].clone() + Pauses { count: 1, total_ms: *ms, max_ms: *ms };
                }
                Kind::Commit { running_ms, locked_ms, logging_ms } => {
                    journal.commits += 1;
                    journal.max_running_ms = journal.max_running_ms.max(*running_ms);
                    journal.max_locked_ms = journal.max_locked_ms.max(*locked_ms);
                    journal.max_logging_ms = journal.max_logging_ms.max(*logging_ms);
                }
                Kind::Other => {}
            }
        }
        for (name, [w, f, a]) in self.names.iter().zip(counts) {
            out.counts.insert(name.clone(), Phased { writing: w, flushing: f, after: a });
        }
        let [w, f, a] = pauses;
        out.dirty_pauses = Phased { writing: w, flushing: f, after: a };
        let [w, f, a] = reclaims;
        out.direct_reclaim = self.reclaim_on.then_some(Phased { writing: w, flushing: f, after: a });
        for (disk, w) in self.disks.iter().zip(wbt) {
            if let Some(w) = w {
                out.wbt.insert(disk.clone(), w);
            }
        }
        out.journal = (journal.commits > 0).then_some(journal);
        for (slot, kept) in requests.into_iter().enumerate() {
            let Some((mut sizes, times, queued)) = kept else { continue };
            let key = format!("{} {}", self.disks[slot / 2], if slot % 2 == 1 { "W" } else { "R" });
            sizes.sort_unstable();
            let requests = Requests {
                count: times.count(),
                kib_p50: sizes[(sizes.len() - 1) / 2],
                kib_max: sizes[sizes.len() - 1],
                device_ms: times.summary(),
                queued_ms: (queued.count() > 0).then(|| queued.summary()),
            };
            out.requests.insert(key, requests);
        }
        out.excerpt = self.excerpt.iter().map(|(_, t, l)| format!("t={:.3}s {l}", t + offset)).collect();
        out
    }
}

/// Room for one more in a list of requests waiting for their next event:
/// when full, the oldest quarter goes (their next events were lost).
fn keep_at_most<T>(waiting: &mut Vec<T>, most: usize) {
    if waiting.len() >= most {
        waiting.drain(..most / 4);
    }
}

fn intern(names: &mut Vec<String>, name: &str) -> u16 {
    match names.iter().position(|n| n == name) {
        Some(i) => i as u16,
        None => {
            names.push(name.to_string());
            (names.len() - 1).min(u16::MAX as usize) as u16
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_split_with_and_without_the_flags_column() {
        let new = "  bootmark-work-212   [001] d..1.    41.883203: balance_dirty_pages: bdi 8:0: limit=1 pause=12";
        let l = split(new).unwrap();
        assert_eq!(
            (l.timestamp_s, l.event, l.payload),
            (41.883203, "balance_dirty_pages", "bdi 8:0: limit=1 pause=12")
        );
        // 2.6.3x: no flags column; a task name with a space and brackets of its own.
        let old = "   my [x] task-77  [000]  1234.500000: block_rq_issue: 8,0 W 0 () 2048 + 8 [my task]";
        let l = split(old).unwrap();
        assert_eq!((l.timestamp_s, l.event), (1234.5, "block_rq_issue"));
        assert_eq!(split("# tracer: nop"), None);
        assert_eq!(split("  task-1 [000] ....  12.5"), None, "a cut line");
    }

    /// Lines as this host's 6.18 printed them (the boots' 6.1 lines are in
    /// tests/data/trace), around a marker written at 2.0 s on the timeline
    /// and read after the first event.
    const HOST_LINES: &str = "\
 kworker/u8:0-18673   [001] ..... 36288.530301: block_rq_issue: 254,0 WS 4120576 () 173746592 + 8048 be,0,4 [kworker/u8:0]
 bootmark-22472   [000] ..... 36288.100000: tracing_mark_write: bootmark-clock 22472
 <idle>-0       [001] .Ns1. 36288.533652: block_rq_complete: 254,0 WS () 173746592 + 8048 be,0,4 [0]
 kworker/0:1H-60      [000] ..... 36289.928458: block_rq_issue: 254,0 FF 0 () 0 + 0 none,0,0 [kworker/0:1H]
 <idle>-0       [001] ..s1. 36289.928688: block_rq_complete: 254,0 FF () 18446744073709551615 + 0 none,0,0 [0]
 bootmark-probe-22479   [000] ..... 36290.784504: block_rq_insert: 254,0 RA 4096 () 38801968 + 8 be,0,4 [bootmark-probe]
 bootmark-probe-22479   [000] ..... 36290.794504: block_rq_issue: 254,0 RA 4096 () 38801968 + 8 be,0,4 [bootmark-probe]
 bootmark-work-22480   [001] ..s.. 36290.814654: block_rq_complete: 254,0 RA () 38801968 + 8 be,0,4 [0]
 bootmark-work-1   [000] ..... 36288.600000: balance_dirty_pages: bdi 254:0: limit=50000 setpoint=40000 dirty=45000 wb_setpoint=40000 wb_dirty=45000 dirty_ratelimit=100 task_ratelimit=50 dirtied=32 dirtied_pause=32 paused=0 pause=12 period=12 think=0 cgroup_ino=1
 bootmark-work-1   [000] ..... 36288.700000: balance_dirty_pages: bdi 254:0: limit=52000 setpoint=40000 dirty=47000 wb_setpoint=40000 wb_dirty=45000 dirty_ratelimit=100 task_ratelimit=50 dirtied=32 dirtied_pause=32 paused=0 pause=-3 period=12 think=15 cgroup_ino=1
 bootmark-work-1   [000] ..... 36290.900000: balance_dirty_pages: bdi 254:0: limit=52000 setpoint=40000 dirty=49000 wb_setpoint=40000 wb_dirty=45000 dirty_ratelimit=100 task_ratelimit=50 dirtied=32 dirtied_pause=32 paused=0 pause=40 period=40 think=0 cgroup_ino=1
 <idle>-0       [000] .Ns1. 36288.736052: wbt_step: 254:0: scale down: step=1, window=100000us, background=8, normal=16, max=32
 <idle>-0       [000] .Ns1. 36288.836052: wbt_step: 254:0: scale down: step=2, window=100000us, background=4, normal=8, max=16
 <idle>-0       [000] .Ns1. 36288.836050: wbt_lat: 254:0: latency 81234us
 <idle>-0       [000] .Ns1. 36288.836051: wbt_timer: 254:0: status=1, step=2, inflight=16
 jbd2/vda1-8-300 [001] ..... 36291.000000: jbd2_run_stats: dev 254,1 tid 7 wait 0 request_delay 0 running 5004 locked 8 flushing 0 logging 120 handle_count 12 blocks 3 blocks_logged 4
";

    fn host_reader() -> Reader {
        let disks = BTreeMap::from([("254,0".to_string(), "vda".to_string())]);
        let mut r = Reader::new(disks);
        for line in HOST_LINES.lines() {
            r.line(line, ("bootmark-clock 22472", 2.0));
        }
        r
    }

    #[test]
    fn the_marker_puts_trace_time_on_the_timelines_axis() {
        let r = host_reader();
        assert_eq!(r.offset_s, Some(2.0 - 36288.1));
        // The first event's line on the axis, though it was read before the marker was known.
        let k = r.summarize(f64::INFINITY, f64::INFINITY);
        assert!(k.excerpt[0].starts_with("t=2.430s "), "{:?}", k.excerpt);
        assert_eq!(r.read, 15, "every line but the marker");
    }

    #[test]
    fn the_events_land_on_the_ticks_that_end_their_intervals() {
        // Marker at 2.0 s (36288.1 trace): the pauses at 2.5 s (12 ms), 2.6 s
        // (-3: none) and 4.8 s (40 ms); the probe's read completing at 4.72 s after 20 ms.
        let series: BTreeMap<String, Vec<Option<u64>>> =
            host_reader().per_tick(&[2.0, 2.5, 3.0, 4.0, 5.0]).into_iter().collect();
        assert_eq!(series["traced_dirty_pause_ms"], [Some(0), Some(12), Some(0), Some(0), Some(40)]);
        assert_eq!(series["traced_read_ms.vda"], [Some(0), Some(0), Some(0), Some(0), Some(20)]);
        assert_eq!(series.len(), 2, "vda's writes are not reads: {series:?}");
        // Events after the last tick are not put on it.
        let early: BTreeMap<_, _> = host_reader().per_tick(&[2.0, 2.5]).into_iter().collect();
        assert_eq!(early["traced_dirty_pause_ms"], [Some(0), Some(12)]);
        assert!(Reader::new(BTreeMap::new()).per_tick(&[1.0]).is_empty(), "no marker: no axis");
    }

    #[test]
    fn the_summary_splits_phases_and_matches_requests() {
        // Writes returned at 3.0 s, the workload ended at 4.85 s.
        let k = host_reader().summarize(3.0, 4.85);
        // Pauses: 12 ms while writing; -3 is no pause (the task was under its rate); 40 ms in the flush.
        assert_eq!((k.dirty_pauses.writing.count, k.dirty_pauses.writing.total_ms), (1, 12.0));
        assert_eq!((k.dirty_pauses.flushing.count, k.dirty_pauses.flushing.max_ms), (1, 40.0));
        assert_eq!(k.dirty_pauses.total().count, 2);
        assert_eq!((k.dirty_limit_pages, k.dirty_pages_max), (Some(52000), Some(49000)));
        let wbt = &k.wbt["vda"];
        assert_eq!((wbt.steps, wbt.scaled_down, wbt.lowest_max_depth), (2, 2, Some(16)));
        assert_eq!((wbt.max_latency_us, wbt.windows), (Some(81234), 1));
        // The flush request (FF, no data) is no request; the write and the read are, by disk name.
        assert_eq!(k.requests.keys().collect::<Vec<_>>(), ["vda R", "vda W"]);
        let w = &k.requests["vda W"];
        assert_eq!((w.count, w.kib_p50, w.kib_max), (1, 4024, 4024));
        assert!((w.device_ms.max_ms - 3.351).abs() < 0.02, "{:?}", w.device_ms);
        assert!((k.requests["vda R"].device_ms.max_ms - 20.15).abs() < 0.1);
        // The read was inserted 10 ms before its issue; the write's insert was not seen.
        let queued = k.requests["vda R"].queued_ms.as_ref().expect("the read's insert");
        assert_eq!(queued.count, 1);
        assert!((queued.max_ms - 10.0).abs() < 0.1, "{queued:?}");
        assert_eq!(w.queued_ms, None);
        let j = k.journal.unwrap();
        assert_eq!((j.commits, j.max_running_ms, j.max_locked_ms, j.max_logging_ms), (1, 5004, 8, 120));
        assert_eq!(k.counts["balance_dirty_pages"], Phased { writing: 2, flushing: 1, after: 0 });
        assert_eq!(k.counts["jbd2_run_stats"], Phased { writing: 0, flushing: 0, after: 1 });
    }

    /// Two tasks reclaiming at once, paired by PID (6.1's begin prints
    /// may_writepage, 6.12's does not: only the names matter), one end
    /// without its begin, and a task name with dashes and spaces.
    #[test]
    fn direct_reclaims_are_paired_by_task_and_put_on_their_ticks() {
        let lines = "\
 bootmark-22472   [000] ..... 100.000000: tracing_mark_write: bootmark-clock 1
 bootmark-work-41   [000] ..... 100.100000: mm_vmscan_direct_reclaim_begin: order=0 may_writepage=1 gfp_flags=GFP_HIGHUSER_MOVABLE
 my odd-task-77   [001] ..... 100.120000: mm_vmscan_direct_reclaim_begin: order=0 gfp_flags=GFP_KERNEL
 my odd-task-77   [001] ..... 100.125000: mm_vmscan_direct_reclaim_end: nr_reclaimed=32
 bootmark-work-41   [000] ..... 100.340000: mm_vmscan_direct_reclaim_end: nr_reclaimed=64
 kswapd0-30   [001] ..... 100.400000: mm_vmscan_direct_reclaim_end: nr_reclaimed=1
";
        let mut r = Reader::new(BTreeMap::new());
        r.reclaim_on = true;
        for line in lines.lines() {
            r.line(line, ("bootmark-clock 1", 10.0));
        }
        // 10.0 s on the axis is 100.0 trace: writes end at 10.2 s, the workload at 10.5 s.
        let k = r.summarize(10.2, 10.5);
        let reclaim = k.direct_reclaim.expect("both events on");
        assert_eq!(reclaim.writing.count, 1, "the 5 ms one, ended at 10.125 s");
        assert!((reclaim.writing.max_ms - 5.0).abs() < 0.01, "{reclaim:?}");
        assert_eq!(reclaim.flushing.count, 1, "the 240 ms one; kswapd's end had no begin");
        assert!((reclaim.flushing.total_ms - 240.0).abs() < 0.01, "{reclaim:?}");
        let series: BTreeMap<_, _> = r.per_tick(&[10.0, 10.2, 10.5]).into_iter().collect();
        assert_eq!(series["traced_reclaim_ms"], [Some(0), Some(5), Some(240)]);
        // Off: neither the summary nor the timeline says "none".
        r.reclaim_on = false;
        assert_eq!(r.summarize(10.2, 10.5).direct_reclaim, None);
        assert!(!r.per_tick(&[10.0]).iter().any(|(k, _)| k == "traced_reclaim_ms"));
    }

    #[test]
    fn a_lines_task_pid_is_read_with_or_without_a_tgid_column() {
        assert_eq!(split(" my odd-task-77   [001] ..... 1.0: e: x").unwrap().pid, 77);
        assert_eq!(split(" bash-4242  (   4242) [001] ..... 1.0: e: x").unwrap().pid, 4242);
        assert_eq!(split(" <idle>-0       [001] 1.0: e: x").unwrap().pid, 0);
        assert_eq!(split("[001] 1.0: e: x").unwrap().pid, 0);
    }

    #[test]
    fn the_excerpt_is_capped_and_keeps_the_longest_pause() {
        let mut r = Reader::new(BTreeMap::new());
        for (i, pause) in [5, 6, 7, 3, 90, 4].iter().enumerate() {
            let line = format!(
                " w-1 [000] ..... {}.0: balance_dirty_pages: bdi 8:0: limit=9 dirty=8 pause={pause} period=1",
                10 + i
            );
            r.line(&line, ("marker", 0.0));
        }
        let k = r.summarize(f64::INFINITY, f64::INFINITY);
        assert_eq!(k.excerpt.len(), EXCERPT_PER_EVENT);
        assert!(k.excerpt.iter().any(|l| l.contains("pause=90")), "{:?}", k.excerpt);
        assert!(k.excerpt[0].starts_with("t=10.000s "), "{:?}", k.excerpt);
        for i in 0..(EXCERPT_LINES * 2) {
            r.line(&format!(" w-1 [000] ..... 99.0: event_{i}: x"), ("marker", 0.0));
        }
        assert_eq!(r.summarize(0.0, 0.0).excerpt.len(), EXCERPT_LINES);
    }

    /// Debian 12's 6.1 as the `mechanisms` boot read it: a writer paused
    /// 176 ms at the dirty limit (and two calls under its rate, no pause),
    /// wbt's step up to a depth of 24, the probe's reads, every line parsed.
    #[test]
    fn a_real_61_boots_lines_are_read() {
        let text = include_str!("../../../tests/data/trace/6.1-dl140-dirty40.txt");
        let lines: Vec<&str> = text.lines().filter(|l| !l.starts_with('#')).collect();
        assert!(lines.iter().all(|l| split(l).is_some()), "a line not split");
        let disks = BTreeMap::from([("8,0".to_string(), "sda".to_string())]);
        let mut r = Reader::new(disks);
        for line in &lines {
            r.line(line, ("bootmark-clock 1", 1.0));
        }
        assert_eq!(r.read as usize, lines.len() - 1, "every line but the marker");
        let k = r.summarize(4.0, 8.0);
        assert_eq!((k.dirty_pauses.writing.count, k.dirty_pauses.writing.max_ms), (0, 0.0), "-8 and -12 are no pauses");
        assert_eq!((k.dirty_pauses.flushing.count, k.dirty_pauses.flushing.max_ms), (1, 176.0));
        assert_eq!(k.dirty_limit_pages, Some(27386));
        let wbt = &k.wbt["sda"];
        assert_eq!((wbt.steps, wbt.scaled_down, wbt.lowest_max_depth, wbt.windows), (1, 0, Some(24), 3));
        let reads = &k.requests["sda R"];
        assert_eq!((reads.count, reads.kib_p50, reads.kib_max), (3, 4, 8));
        assert!(reads.device_ms.max_ms < 1.0, "{:?}", reads.device_ms);
    }
}
