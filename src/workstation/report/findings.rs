//! Findings: what the records' evidence says about *why* a kernel or a
//! setting stalls the machine, in sentences a user can act on. Each rule
//! has a name, reads named measurements, and never claims more than they
//! show: a missing counter or a coarse timeline is said, and a comparison
//! says how many boots it rests on (repetitions inside one boot share that
//! boot's state: they are not independent samples of a kernel).

use super::Row;
use super::attribution;
use super::mechanism::{self, Mechanism};
use super::stats::Summary;
use super::traced;
use super::words;
use crate::schema::record::{Record, Times};
use crate::workstation::glance::Glance;
use serde::Serialize;

/// One finding about one group (a row of the table) or a comparison of two.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Finding {
    /// The rule that made it: `stall`, `dirty-limit`, `writeback-throttling`, `flush`, `read-starvation`, `comparison`, `settings-differ`….
    pub rule: &'static str,
    /// The group: its --by values and workload ("dirty40 · 6.1.0-50-amd64 · seqwrite").
    pub subject: String,
    pub sentence: String,
    /// The measurements used, as "field = value".
    pub evidence: Vec<String>,
    /// The record that shows it best, as RUN_ID:SEQ (`report --format html --timeline`).
    pub record: Option<String>,
    /// Whether the verdict may give it as the cause of a difference: it names
    /// a mechanism with its evidence (a read's wait placed in neither the
    /// device nor anywhere else explains nothing; nor does a wbt wait that a
    /// baseline hiding its wchan could not have shown).
    #[serde(skip)]
    pub names_cause: bool,
}

/// The rule of a row whose runs differ in the settings in force (`in_force`).
pub const SETTINGS_DIFFER: &str = "settings-differ";

/// Stalls at least this long are what the seed's user felt as a hung `ls`.
pub(crate) const STALL_MS: f64 = 1000.0;
/// A write() slower than this is what the dirty-limit rule looks into.
const THROTTLED_WRITE_MS: f64 = 100.0;
/// A probe read slower than this is what the slow-read rule looks into
/// (a cold 4 KiB read from an idle disk takes a few ms, even a 2006 one's).
const SLOW_READ_MS: f64 = 10.0;

/// What one group keeps for its findings while records stream by: counts,
/// and the records the rules read (the worst stall, the writer held longest
/// at the dirty limit, the longest flush), each kept whole only if a rule
/// would say something about it.
#[derive(Default)]
pub struct Evidence {
    ok: usize,
    /// Ok runs that stalled over a second.
    stalled: usize,
    /// Over every ok run whose balance_dirty_pages tracepoint was on: (runs, runs
    /// in which the kernel paused a writer, their pauses in ms).
    dirty_traced: (usize, usize, f64),
    /// The ok run whose writer was held longest at the dirty limit: the kernel's
    /// pauses where traced, else its slowest write() (the first of equals), if
    /// the dirty-limit rule fires on it.
    throttled: Option<(f64, Option<Record>)>,
    /// The ok run with the worst probe wait (the first of equals), if a rule finds something in it.
    worst: Option<(f64, Option<Record>)>,
    /// The ok run that spent longest flushing (the first of equals), if the flush rule finds something in it.
    flushiest: Option<(f64, Option<Record>)>,
    /// The ok run with the slowest probe read (the first of equals), if the slow-read rule finds something in it.
    slowest_read: Option<(f64, Option<Record>)>,
}

impl Evidence {
    /// An ok record of the group. Only a record that beats the worst so far
    /// is read whole (the rules need it); an error when it does not parse
    /// whole, and it is then left out of the findings.
    pub fn offer(&mut self, g: &Glance) -> Result<(), String> {
        self.ok += 1;
        let stall = g.max_stall_ms();
        if stall >= STALL_MS {
            self.stalled += 1;
        }
        if self.worst.as_ref().is_none_or(|(w, _)| stall > *w) {
            // The rules' first tests need only a glance: most records need
            // not be read whole, even when each is worse than the last.
            let p = g.responsiveness.as_ref();
            let may_tell = stall >= STALL_MS
                || p.is_some_and(|p| reads_starved(g.bytes_written, p.read.max_ms, p.timer_late.max_ms))
                || g.latency.write.max_ms >= THROTTLED_WRITE_MS;
            let kept = match may_tell {
                true => {
                    let r = g.whole()?;
                    let telling =
                        stall >= STALL_MS || read_starvation("", r).is_some() || writeback_throttling("", r).is_some();
                    telling.then(|| r.clone())
                }
                false => None,
            };
            self.worst = Some((stall, kept));
        }
        let paused_ms = g.kernel_events.as_ref().and_then(|k| k.dirty_pause_ms());
        if let Some(ms) = paused_ms {
            let (runs, paused, total) = &mut self.dirty_traced;
            *runs += 1;
            *paused += (ms > 0.0) as usize;
            *total += ms;
        }
        let held = paused_ms.unwrap_or(g.latency.write.max_ms);
        if self.throttled.as_ref().is_none_or(|(h, _)| held > *h) {
            let kept = match g.latency.write.max_ms >= THROTTLED_WRITE_MS {
                true => Some(g.whole()?).filter(|r| dirty_limit("", r, None).is_some()).cloned(),
                false => None,
            };
            self.throttled = Some((held, kept));
        }
        let read_ms = g.responsiveness.as_ref().map_or(0.0, |p| p.read.max_ms);
        if self.slowest_read.as_ref().is_none_or(|(w, _)| read_ms > *w) {
            let kept = match read_ms >= SLOW_READ_MS {
                true => Some(g.whole()?).filter(|r| slowest_read_wait(r).is_some()).cloned(),
                false => None,
            };
            self.slowest_read = Some((read_ms, kept));
        }
        let f = flush_s(&g.times);
        if self.flushiest.as_ref().is_none_or(|(w, _)| f > *w) {
            // The flush rule fires exactly when the times say so: a record
            // it would not fire on need not be read whole.
            let kept = flushing(&g.times).map(|_| g.whole().cloned()).transpose()?;
            self.flushiest = Some((f, kept));
        }
        Ok(())
    }

    /// The group's findings, rule by rule (none without an ok run).
    pub fn findings(&self, subject: &str) -> Vec<Finding> {
        let mut out = Vec::new();
        if let Some((_, Some(worst))) = &self.worst {
            out.extend(stall(subject, self.ok, self.stalled, worst));
            out.extend(read_starvation(subject, worst));
        }
        if let Some((_, Some(r))) = &self.throttled {
            out.extend(dirty_limit(subject, r, Some(self.dirty_traced)));
        }
        // Writeback throttling holds the writer in its flush: the run that
        // flushed longest shows it, else the worst run.
        let kept = [&self.flushiest, &self.worst].into_iter().filter_map(|k| k.as_ref()?.1.as_ref());
        out.extend(kept.into_iter().find_map(|r| writeback_throttling(subject, r)));
        if let Some((_, Some(r))) = &self.flushiest {
            out.extend(flush(subject, r));
        }
        // The slowest read is read-starvation's own where that rule fired.
        if let Some((_, Some(r))) = &self.slowest_read
            && !out.iter().any(|f| f.rule == "read-starvation")
        {
            out.extend(slow_read(subject, r));
        }
        out
    }
}

/// The group's name in a finding: its --by values and workload.
pub(super) fn subject(row: &Row) -> String {
    let mut parts = row.key.clone();
    parts.push(row.workload.clone());
    parts.join(" · ")
}

fn id(r: &Record) -> String {
    format!("{}:{}", r.run_id, r.seq)
}

/// A timeline series at time `t` (the last sample at or before it), in MiB.
fn mib_at(r: &Record, series: &str, t: f64) -> Option<f64> {
    let column = r.timeline.series.get(series)?;
    let i = r.timeline.t_s.iter().rposition(|&x| x <= t)?;
    column.get(i).copied().flatten().map(|kib| kib as f64 / 1024.0)
}

/// The peak of a timeline series during the workload, in MiB.
fn peak_mib(r: &Record, series: &str) -> Option<f64> {
    let column = r.timeline.series.get(series)?;
    let peak = workload_samples(r).filter_map(|i| column.get(i).copied().flatten()).max();
    peak.map(|kib| kib as f64 / 1024.0)
}

/// The peak of two timeline series added sample by sample during the
/// workload (a missing second counted as 0), in MiB.
fn peak_sum_mib(r: &Record, first: &str, second: &str) -> Option<f64> {
    let (a, b) = (r.timeline.series.get(first)?, r.timeline.series.get(second));
    let sums = workload_samples(r).filter_map(|i| {
        let x = (*a.get(i)?)?;
        Some(x + b.and_then(|b| b.get(i).copied().flatten()).unwrap_or(0))
    });
    sums.max().map(|kib| kib as f64 / 1024.0)
}

/// The indices of the timeline's samples taken while the workload ran.
fn workload_samples(r: &Record) -> impl Iterator<Item = usize> + '_ {
    let (start, end) = (r.timeline.workload_start_s, r.timeline.workload_end_s);
    r.timeline.t_s.iter().enumerate().filter(move |(_, t)| **t >= start && **t <= end.max(start)).map(|(i, _)| i)
}

/// The probe stalled over a second: how often, how long, when relative to
/// the page cache's Dirty and Writeback, and how long recovery took.
fn stall(subject: &str, ok: usize, stalled: usize, worst: &Record) -> Option<Finding> {
    let p = worst.responsiveness.as_ref()?;
    if p.max_ms < STALL_MS {
        return None;
    }
    let mut sentence = format!(
        "the machine stopped responding: the probe (ls + a 4 KiB uncached read every {:.0} ms) waited up to {:.1} s, {} over 1 s in the worst run; {stalled} of {} runs stalled over 1 s",
        p.interval_ms,
        p.max_ms / 1000.0,
        words::times(p.stalls_over_1s),
        ok
    );
    let mut evidence = vec![
        format!("responsiveness.max_ms = {:.0}", p.max_ms),
        format!("responsiveness.stalls_over_1s = {}", p.stalls_over_1s),
    ];
    // When the worst tick was due, and what the page cache held then.
    let tl = &worst.timeline;
    let worst_tick = tl.probe_t_s.iter().zip(&tl.probe_response_ms).max_by(|a, b| a.1.total_cmp(b.1));
    // The writer's samples inside the stall: said below, and what makes the finding a cause.
    let during = worst_tick.and_then(|(t, ms)| attribution::writer_between(worst, *t, t + ms / 1000.0));
    match worst_tick.map(|(t, ms)| (*t, *ms)) {
        Some((t, _)) => {
            let at = t - tl.workload_start_s;
            match (mib_at(worst, "dirty_kib", t), mib_at(worst, "writeback_kib", t)) {
                (Some(d), Some(w)) => {
                    sentence += &format!(
                        ". The worst stall began {at:.1} s into the workload, with {d:.0} MiB dirty and {w:.0} MiB under writeback"
                    );
                    evidence.push(format!("timeline at {t:.1} s: Dirty {d:.0} MiB, Writeback {w:.0} MiB"));
                }
                _ => {
                    sentence += &format!(
                        ". The worst stall began {at:.1} s into the workload; this kernel's timeline has no Dirty/Writeback figures to say what the page cache held"
                    )
                }
            }
            if tl.interval_s > 1.0 {
                sentence += &format!(
                    " (the timeline is sampled every {:.1} s: too coarse to place it precisely)",
                    tl.interval_s
                );
            }
            // Where the writer was while the probe waited: the samples inside the stall.
            sentence += &match &during {
                None => "; no sample of the writer fell inside it".to_string(),
                Some(a) if a.mostly_hidden() => {
                    format!("; while it lasted the writer's {}: where it waited is unknown", a.zero_said())
                }
                Some(a) if a.mostly_running() => format!("; while it lasted the writer: {}", a.zero_said()),
                Some(a) => match a.shares.first() {
                    Some(s) => {
                        evidence.push(format!(
                            "{} during the stall: {} in {} of {} samples",
                            attribution::source(s),
                            s.frame,
                            s.samples,
                            a.samples
                        ));
                        format!(
                            "; while it lasted the writer was asleep in {} in {} of {} samples: {}",
                            s.wchan,
                            s.samples,
                            a.samples,
                            s.mechanism.name()
                        )
                    }
                    None if !a.unknown.is_empty() => format!(
                        "; while it lasted the writer was blocked in {}, which names no mechanism: unknown",
                        a.unknown[0].0
                    ),
                    None => format!("; while it lasted the writer: {}", a.zero_said()),
                },
            };
        }
        None => sentence += ". This record has no per-tick probe timeline to say when",
    }
    if let Some((t, ms)) = worst_tick.map(|(t, ms)| (*t, *ms))
        && let Some((said, proof)) = traced::during(worst, t, t + ms / 1000.0)
    {
        sentence += &format!("; {said}");
        evidence.push(proof);
    }
    // The kernel's own stall accounting over it, where it keeps one (PSI, 4.20+).
    if let Some((t, ms)) = worst_tick.map(|(t, ms)| (*t, *ms))
        && let Some((said, proof)) = psi_during(worst, t, t + ms / 1000.0)
    {
        sentence += &format!("; {said}");
        evidence.push(proof);
    }
    // Where the probe itself waited over its worst tick (sampled since records kept it).
    if let Some((t, ms)) = worst_tick.map(|(t, ms)| (*t, *ms))
        && let Some((said, proof)) = probe_waited(worst, t, t + ms / 1000.0)
    {
        sentence += &format!("; {said}");
        evidence.extend(proof);
    }
    let tick = worst_tick.and_then(|(t, _)| tl.probe_t_s.iter().position(|x| x == t));
    let (part, mut proof) = probe_part(worst, tick);
    sentence += &part;
    evidence.append(&mut proof);
    if !worst.blocked_tasks.is_empty() {
        let blocked = worst.blocked_tasks.iter().filter(|l| l.contains("state:D") || l.contains(" D ")).count();
        sentence += &format!(
            ". The kernel's blocked-task dump taken during it lists {blocked} task(s) in uninterruptible sleep (record's blocked_tasks)"
        );
        evidence.push(format!("blocked_tasks: {} lines", worst.blocked_tasks.len()));
    }
    sentence += &match p.recovery_s {
        Some(r) => format!(". It responded normally again {r:.1} s after the workload ended."),
        None => ". It had not recovered by the probe's deadline after the workload.".into(),
    };
    evidence.push(format!("responsiveness.recovery_s = {}", p.recovery_s.map_or("null".into(), |r| format!("{r:.1}"))));
    // A cause only where the writer's samples inside the stall name a mechanism.
    let names_cause = during.is_some_and(|a| !a.mostly_hidden() && !a.shares.is_empty());
    Some(Finding { rule: "stall", subject: subject.into(), sentence, evidence, record: Some(id(worst)), names_cause })
}

/// The share of a span in which some task, and all tasks, were stalled on
/// I/O (and on memory), from the PSI totals sampled on the timeline: the
/// samples just before and just after the span. None without PSI.
fn psi_during(r: &Record, from_s: f64, to_s: f64) -> Option<(String, String)> {
    let tl = &r.timeline;
    let before = tl.t_s.iter().rposition(|&t| t <= from_s)?;
    let after = tl.t_s.iter().position(|&t| t >= to_s).unwrap_or(tl.t_s.len() - 1);
    let span_us = (tl.t_s[after] - tl.t_s[before]) * 1e6;
    if after <= before || span_us <= 0.0 {
        return None;
    }
    let share = |key: &str| {
        let series = tl.series.get(key)?;
        let (a, b) = ((*series.get(before)?)?, (*series.get(after)?)?);
        Some(b.checked_sub(a)? as f64 / span_us * 100.0)
    };
    let (some, full) = (share("psi_io_some_us")?, share("psi_io_full_us")?);
    let memory = share("psi_memory_some_us").map(|m| format!(" (memory: some {m:.0} %)")).unwrap_or_default();
    let (from, to) = (tl.t_s[before] - tl.workload_start_s, tl.t_s[after] - tl.workload_start_s);
    Some((
        format!(
            "the kernel's pressure accounting (PSI) over {from:.1}–{to:.1} s: some task stalled on I/O {some:.0} % of the time, every non-idle task {full:.0} %{memory}"
        ),
        format!("timeline.series.psi_io_some_us/full_us over {from:.2}–{to:.2} s: {some:.1} % / {full:.1} %"),
    ))
}

/// Where the probe itself was sampled between two times: the mechanism of
/// its wait, running, or unknown; None where the record has no such samples.
fn probe_waited(r: &Record, from_s: f64, to_s: f64) -> Option<(String, Vec<String>)> {
    let a = attribution::probe_between(r, from_s, to_s)?;
    let said = match a.shares.first() {
        _ if a.mostly_hidden() => format!("the probe itself: {}: where it waited is unknown", a.zero_said()),
        Some(s) => {
            let proof = format!(
                "timeline.probe_wchan, probe_stack and probe_late during the stall: {} in {} of {} samples",
                s.frame, s.samples, a.samples
            );
            let said = format!(
                "the probe itself was asleep in {} in {} of {} samples: {}",
                s.wchan,
                s.samples,
                a.samples,
                s.mechanism.name()
            );
            return Some((said, vec![proof]));
        }
        None if !a.unknown.is_empty() => {
            format!("the probe itself was blocked in {}, which names no mechanism: unknown", a.unknown[0].0)
        }
        None => format!("the probe itself: {}", a.zero_said()),
    };
    Some((said, vec![format!("timeline.probe_wchan and probe_late during the stall: {} samples", a.samples)]))
}

/// Which of the probe's parts waited longest, and where that wait was, as
/// far as the record shows: the timer (the CPU or the probe's wake-up was
/// held, not the disk), the 4 KiB read (in the device or before it, from the
/// block tracepoints), or `ls` (the directory and its inodes: where it
/// waited, no event here says). Of the worst tick (`tick`, an index into the
/// probe's timeline) where the record keeps each tick's parts, else of the
/// run's longest of each, which may be other ticks'.
fn probe_part(r: &Record, tick: Option<usize>) -> (String, Vec<String>) {
    let Some(p) = r.responsiveness.as_ref() else { return (String::new(), Vec::new()) };
    let tl = &r.timeline;
    let parts = tick.and_then(|i| {
        let (read, ls, whole) = (*tl.probe_read_ms.get(i)?, *tl.probe_ls_ms.get(i)?, *tl.probe_response_ms.get(i)?);
        Some((ls, read, (whole - read - ls).max(0.0)))
    });
    let (ls, read, timer) = parts.unwrap_or((p.ls.max_ms, p.read.max_ms, p.timer_late.max_ms));
    // Whose parts: the worst tick's own, or the run's longest of each.
    let (whose, field) = match (parts, tick) {
        (Some(_), Some(i)) => ("In that tick its longest part", format!("timeline tick {i}: ")),
        _ => ("Its longest part over the run", "responsiveness.".to_string()),
    };
    if timer >= read && timer >= ls {
        return (
            format!(
                ". The probe's own timer was late by up to {timer:.0} ms: the CPU (or the probe's wake-up) was held, not only the disk"
            ),
            vec![format!("{field}timer_late.max_ms = {timer:.0}")],
        );
    }
    if ls > read {
        return (
            format!(
                ". {whose} was the ls ({ls:.0} ms; the read {read:.0} ms): a directory and its inodes read back; where that waited, no recorded event says: unknown"
            ),
            vec![format!("{field}ls.max_ms = {ls:.0}")],
        );
    }
    match traced::read_wait(r, read) {
        traced::ReadWait::Device(said, proof)
        | traced::ReadWait::Outside(said, proof)
        | traced::ReadWait::BeforeQueue(said, proof) => {
            (format!(". {whose} was the 4 KiB read ({read:.0} ms): {said}"), vec![proof])
        }
        traced::ReadWait::Unknown(said) => (format!(". {whose} was the 4 KiB read ({read:.0} ms): {said}"), vec![]),
    }
}

/// Reads starved: the run wrote, and the probe's read waited over half the
/// stall threshold and longer than its timer was late (so not the CPU).
fn reads_starved(bytes_written: u64, read_max_ms: f64, timer_late_max_ms: f64) -> bool {
    bytes_written > 0 && read_max_ms >= STALL_MS / 2.0 && read_max_ms >= timer_late_max_ms
}

/// The probe's reads (not its `ls`, not its timer) waited while the
/// workload wrote. Where the wait was spent is said only as far as the block
/// tracepoints bound it: in the device (behind the writes it was given: the
/// request size acts on it), or before it (the scheduler's queue and what
/// else sits above the device: the scheduler is the setting to try).
fn read_starvation(subject: &str, worst: &Record) -> Option<Finding> {
    let p = worst.responsiveness.as_ref()?;
    if !reads_starved(worst.bytes_written, p.read.max_ms, p.timer_late.max_ms) {
        return None;
    }
    let top = worst.storage.scheduler.as_deref().unwrap_or("unknown (not in the record)");
    // Under an LV or array the reads queue at the member disks: their schedulers are the ones that matter.
    let layers = &worst.storage.layers;
    let scheduler = if layers.is_empty() {
        top.to_string()
    } else {
        format!(
            "{} of the member disks (the {} device: {top})",
            crate::schema::layer::per_disk(layers, |d| d.scheduler.as_deref()),
            crate::schema::layer::summary(layers)
        )
    };
    let mut evidence =
        vec![format!("responsiveness.read.max_ms = {:.0}", p.read.max_ms), format!("storage.scheduler = {top}")];
    if !layers.is_empty() {
        evidence.push(format!(
            "storage.layers disks: {}",
            crate::schema::layer::per_disk(layers, |d| d.scheduler.as_deref())
        ));
    }
    let max_sectors = worst.storage.queue.get("queue/max_sectors_kb").map_or("not recorded", String::as_str);
    let member = layers.iter().find(|l| l.kind == "disk").and_then(|d| d.scheduler.as_deref());
    let scheduler_advice = read_advice(member.or(worst.storage.scheduler.as_deref()));
    let (where_, advice, names_cause) = match traced::read_wait(worst, p.read.max_ms) {
        traced::ReadWait::Device(said, proof) => {
            evidence.push(proof);
            (
                said,
                format!(
                    "a candidate: the size of the writes ahead of a read (the queue's max_sectors_kb, {max_sectors} here) acts on it, and the requests plan (image/plans/requests.json) would test it"
                ),
                true,
            )
        }
        traced::ReadWait::Outside(said, proof) => {
            evidence.push(proof);
            (said, scheduler_advice, false)
        }
        // Not in the queue: no scheduler setting acts on it, so none is advised.
        traced::ReadWait::BeforeQueue(said, proof) => {
            evidence.push(proof);
            let advice = "no I/O scheduler setting acts on a wait before the queue, so none is advised; what held the read there, these events do not say".to_string();
            (said, advice, false)
        }
        traced::ReadWait::Unknown(said) => (said, scheduler_advice, false),
    };
    let own = match slowest_read_wait(worst) {
        Some((said, proof)) => {
            evidence.extend(proof);
            format!("; {said}")
        }
        None => String::new(),
    };
    Some(Finding {
        rule: "read-starvation",
        subject: subject.into(),
        sentence: format!(
            "a read waited while the workload wrote: one uncached 4 KiB read took {:.1} s (p99 {:.0} ms) under the I/O scheduler {scheduler}; {where_}{own}. {}{}",
            p.read.max_ms / 1000.0,
            p.read.p99_ms,
            advice[..1].to_uppercase(),
            &advice[1..]
        ),
        evidence,
        record: Some(id(worst)),
        names_cause,
    })
}

/// The probe's reads were slow, not yet starved: where the slowest of them
/// waited, from the probe's own samples inside it. Names no cause: a page's
/// I/O wait says the read waited for the disk, not why the disk was slow.
fn slow_read(subject: &str, r: &Record) -> Option<Finding> {
    let reads = ReadsDuring::of(r)?;
    let (said, evidence) = slowest_read_wait(r)?;
    let before = match reads.baseline_max_ms {
        Some(b) => format!(" against at most {b:.1} ms before it"),
        None => String::new(),
    };
    Some(Finding {
        rule: "slow-read",
        subject: subject.into(),
        sentence: format!(
            "the probe's reads slowed while the workload ran (median {:.1} ms over {} ticks{before}); {said}",
            reads.median_ms, reads.ticks
        ),
        evidence,
        record: Some(id(r)),
        names_cause: false,
    })
}

/// The probe's reads over the workload alone, from each tick's own parts
/// (`responsiveness` also counts the recovery after it), beside the
/// slowest of the baseline's before it.
struct ReadsDuring {
    ticks: usize,
    median_ms: f64,
    /// The slowest: its tick (an index into the probe's timeline) and ms.
    slowest: (usize, f64),
    baseline_max_ms: Option<f64>,
}

impl ReadsDuring {
    fn of(r: &Record) -> Option<ReadsDuring> {
        let tl = &r.timeline;
        let ticks = || tl.probe_t_s.iter().zip(&tl.probe_read_ms).enumerate();
        let during: Vec<(usize, f64)> = ticks()
            .filter(|(_, (t, _))| **t >= tl.workload_start_s && **t <= tl.workload_end_s)
            .map(|(k, (_, ms))| (k, *ms))
            .collect();
        let slowest = *during.iter().max_by(|a, b| a.1.total_cmp(&b.1))?;
        let mut ms: Vec<f64> = during.iter().map(|d| d.1).collect();
        ms.sort_by(f64::total_cmp);
        let baseline_max_ms =
            ticks().filter(|(_, (t, _))| **t < tl.workload_start_s).map(|(_, (_, ms))| *ms).max_by(f64::total_cmp);
        Some(ReadsDuring { ticks: ms.len(), median_ms: ms[ms.len() / 2], slowest, baseline_max_ms })
    }
}

/// Where the probe waited during its slowest read while the workload ran:
/// its samples taken because that tick was late (`Timeline::probe_late`),
/// inside the tick's read (after its timer and its `ls`). None when that
/// read was not slow (under SLOW_READ_MS, or under twice the baseline's
/// slowest) or no such sample fell inside it (records from before they
/// were taken, too).
fn slowest_read_wait(r: &Record) -> Option<(String, Vec<String>)> {
    let tl = &r.timeline;
    let reads = ReadsDuring::of(r)?;
    let (k, read_ms) = reads.slowest;
    let response_ms = *tl.probe_response_ms.get(k)?;
    let slow = read_ms >= SLOW_READ_MS && reads.baseline_max_ms.is_none_or(|b| read_ms >= 2.0 * b);
    if !slow || response_ms < read_ms {
        return None;
    }
    let (from, to) = (tl.probe_t_s[k] + (response_ms - read_ms) / 1000.0, tl.probe_t_s[k] + response_ms / 1000.0);
    let a = attribution::probe_late_between(r, from, to)?;
    let at = from - tl.workload_start_s;
    let head = format!("its slowest read while the workload ran took {read_ms:.0} ms, {at:.1} s into it");
    let span = format!("timeline.probe_late over {from:.3}–{to:.3} s (probe_read_ms {read_ms:.1})");
    let said = match a.shares.first() {
        _ if a.mostly_hidden() => {
            format!("{head}; the probe itself inside it: {}: where it waited is unknown", a.zero_said())
        }
        Some(s) => {
            let from_what = if s.from_stack { "its kernel stack" } else { "its wchan alone" };
            let said = format!(
                "{head}; inside it the probe itself was asleep in {} in {} of {} samples ({from_what}): {}",
                s.wchan,
                s.samples,
                a.samples,
                s.mechanism.name()
            );
            return Some((said, vec![format!("{span}: {} in {} of {} samples", s.frame, s.samples, a.samples)]));
        }
        None if !a.unknown.is_empty() => {
            format!(
                "{head}; inside it the probe itself was blocked in {}, which names no mechanism: unknown",
                a.unknown[0].0
            )
        }
        None => format!("{head}; the probe itself inside it: {}", a.zero_said()),
    };
    Some((said, vec![format!("{span}: {} samples", a.samples)]))
}

/// What would act on a read's wait before the device, under this record's
/// scheduler: nothing that would favour reads less than what it has
/// (deadline after the anticipatory scheduler, whose reads already expire
/// four times sooner).
/// Only a candidate, and only if the wait was in the scheduler's queue,
/// which the events do not say (a lock or the journal above the block
/// layer is out of every scheduler's reach). wbt is not advised: it times
/// reads from issue, so a wait before issue is out of its sight.
fn read_advice(scheduler: Option<&str>) -> String {
    let advice = match scheduler.unwrap_or("") {
        "anticipatory" => "the anticipatory scheduler already favours reads (a read expires after 125 ms by default against deadline's 500 ms, and it waits for a reader's next read): its own read_expire and antic_expire would act on it, and a plan variant setting them would test it".to_string(),
        "deadline" | "mq-deadline" => format!(
            "the {} scheduler already serves reads first (read_expire 500 ms by default): its read_expire and fifo_batch would act on it; a plan variant setting them would test it",
            scheduler.unwrap_or_default()
        ),
        _ => "a scheduler that favours reads (deadline) would act on it, and a plan variant with another scheduler (the seed-sweep plan's) would test it".to_string(),
    };
    format!("if the read waited in the I/O scheduler's queue (a candidate: the events do not say), {advice}")
}

/// The first frames of the writer's kernel stack under `wchan`, without
/// offsets: "balance_dirty_pages_ratelimited ← generic_perform_write ← …".
fn call_chain(r: &Record, wchan: &str) -> Option<String> {
    let tl = &r.timeline;
    // The first sample in `wchan` that kept a stack of that same sleep; its
    // callers are the frames after the wchan's own.
    let frames = (0..tl.writer_wchan.len())
        .filter(|&i| tl.writer_wchan[i].as_deref() == Some(wchan))
        .find_map(|i| mechanism::stack_of_the_moment(wchan, tl.writer_stack_at(i)))?;
    let wanted = mechanism::function(wchan);
    let at = frames.iter().position(|f| mechanism::function(f) == wanted)?;
    let names: Vec<&str> =
        frames[at..].iter().map(|f| mechanism::function(f)).filter(|n| *n != wanted).take(3).collect();
    (!names.is_empty()).then(|| names.join(" ← "))
}

/// The first sample of a series (in its own unit: pages, KiB) at or after the workload's start.
fn at_start(r: &Record, series: &str) -> Option<u64> {
    let i = r.timeline.t_s.iter().position(|&t| t >= r.timeline.workload_start_s)?;
    r.timeline.series.get(series)?.get(i).copied().flatten()
}

/// The first sample of a KiB series at or after the workload's start, in MiB.
fn at_start_mib(r: &Record, series: &str) -> Option<f64> {
    at_start(r, series).map(|kib| kib as f64 / 1024.0)
}

/// The dirty limit this record's kernel computed, in MiB, and how, by its
/// own formula: before 2.6.24 a share of all memory, the share capped at
/// half the unmapped memory (never under 5 %); from 2.6.24 a share of the
/// memory that can hold dirty pages (free + page cache, less reserves the
/// record cannot see, so an upper bound). dirty_bytes, when set, is the limit.
fn dirty_limit_mib(r: &Record) -> Option<(f64, String)> {
    // The kernel's own figure where it says it (vmstat, 2.6.37+): no formula needed.
    if let Some(pages) = at_start(r, "nr_dirty_threshold").filter(|p| *p > 0) {
        let background = at_start(r, "nr_dirty_background_threshold")
            .map(|b| format!(", background {:.0} MiB", b as f64 / 256.0))
            .unwrap_or_default();
        return Some((
            pages as f64 / 256.0,
            format!("the kernel's own nr_dirty_threshold at the start: {pages} pages of 4 KiB{background}"),
        ));
    }
    let vm = |k: &str| r.vm.get(k).copied().flatten();
    if let Some(b) = vm("dirty_bytes").filter(|b| *b > 0) {
        return Some((b as f64 / 1048576.0, format!("this kernel's formula: dirty_bytes {b}")));
    }
    let ratio = vm("dirty_ratio")? as f64;
    let total = r.host.mem_total_kib? as f64 / 1024.0;
    let old = mechanism::version(r.kernel.release.as_deref()?).is_some_and(|v| v < (2, 6, 24));
    if old {
        let (share, capped) = match at_start_mib(r, "mapped_kib") {
            Some(mapped) => {
                let half_unmapped = (100.0 - (mapped * 100.0 / total).floor()) / 2.0;
                let share = ratio.min(half_unmapped.floor()).max(5.0);
                (
                    share,
                    if share < ratio {
                        format!(", capped at half the unmapped memory: {share:.0} %")
                    } else {
                        String::new()
                    },
                )
            }
            None => (ratio.max(5.0), ", the unmapped-memory cap unknown (no Mapped figure)".into()),
        };
        return Some((
            total * share / 100.0,
            format!("this kernel's formula: 2.6 before .24: dirty_ratio {ratio:.0} % of {total:.0} MiB{capped}"),
        ));
    }
    let dirtyable = at_start_mib(r, "mem_free_kib")? + at_start_mib(r, "cached_kib")?;
    // Before 3.14 the kernel counted anonymous pages as dirtyable too: the
    // limit was higher than free + page cache gives (a lower bound here).
    let anon = match mechanism::version(r.kernel.release.as_deref()?) {
        Some(v) if v < (3, 14, 0) => "; a lower bound: this kernel counts anonymous memory as dirtyable too",
        _ => "; reserves lower it",
    };
    Some((
        dirtyable * ratio / 100.0,
        format!(
            "this kernel's formula: dirty_ratio {ratio:.0} % of {dirtyable:.0} MiB free + page cache at the start{anon}"
        ),
    ))
}

/// The target disk's own share of the dirty limit where it is not the
/// kernel's default (its backing device's min_ratio 0, max_ratio 100,
/// strict_limit off): the kernel throttles a writer by that share, so the
/// machine-wide limit above overstates this disk's. None where the record
/// has no bdi files (before 2.6.24) or they are the defaults.
fn disk_share_of_dirty_limit(r: &Record) -> Option<String> {
    let bdi = |file: &str| r.storage.queue.get(&format!("bdi/{file}")).map(String::as_str);
    let mut said = Vec::new();
    if let Some(max) = bdi("max_ratio").filter(|v| *v != "100") {
        said.push(format!("max_ratio {max} % (the most of the limit it may hold)"));
    }
    if let Some(min) = bdi("min_ratio").filter(|v| *v != "0") {
        said.push(format!("min_ratio {min} %"));
    }
    if bdi("strict_limit") == Some("1") {
        said.push("strict_limit on (held to its share even below the machine's freerun ceiling)".into());
    }
    (!said.is_empty()).then(|| format!("; this disk's backing device has {}", said.join(", ")))
}

/// The writer at the dirty limit in `worst` (the run held there longest);
/// `across`: the group's (traced runs, runs paused, pause ms) to say of them all.
fn dirty_limit(subject: &str, worst: &Record, across: Option<(usize, usize, f64)>) -> Option<Finding> {
    let (limit_mib, how) = dirty_limit_mib(worst)?;
    let dirty = peak_mib(worst, "dirty_kib")?;
    let writeback = peak_mib(worst, "writeback_kib").unwrap_or(0.0);
    // The kernel compares Dirty + Writeback at one moment, not two peaks.
    let together = peak_sum_mib(worst, "dirty_kib", "writeback_kib").unwrap_or(dirty);
    let write_max = worst.latency.write.max_ms;
    let waits = attribution::writer(worst);
    let throttled = waits.as_ref().and_then(|a| a.share(Mechanism::DirtyThrottling));
    let throttled_share = match (&waits, throttled) {
        (Some(a), Some(s)) => s.samples as f64 / a.samples as f64,
        _ => 0.0,
    };
    // The limit is computed from samples and misses the kernel's reserves:
    // Dirty + Writeback at 80 % of it means the writer reached it; a writer
    // seen sleeping in balance_dirty_pages says so directly, and so do the
    // kernel's own pauses (its tracepoint) where the wchan is hidden.
    let near_limit = limit_mib > 0.0 && together >= 0.8 * limit_mib;
    let paused_ms = traced::dirty_pause_ms(worst).unwrap_or(0.0);
    if write_max < THROTTLED_WRITE_MS || !(near_limit || throttled_share >= 0.25 || paused_ms >= THROTTLED_WRITE_MS) {
        return None;
    }
    let mut evidence = vec![
        format!("timeline peak dirty_kib = {:.0}", dirty * 1024.0),
        format!("vm: {how}"),
        format!("latency.write.max_ms = {write_max:.0}"),
    ];
    let disk_share = disk_share_of_dirty_limit(worst).unwrap_or_default();
    if !disk_share.is_empty() {
        evidence.push("storage.queue: bdi/min_ratio, bdi/max_ratio, bdi/strict_limit".into());
    }
    let waits_said = match &waits {
        None => "; the writer's wchan was not sampled, so where it slept is not known".to_string(),
        Some(a) if a.blocked() == 0 || a.mostly_hidden() || a.mostly_running() => match a.hidden() {
            0 => format!("; the writer was not held in most samples: {}", a.zero_said()),
            _ => format!("; where the writer slept is unknown: {}", a.zero_said()),
        },
        Some(a) => {
            let mut said = match throttled {
                Some(s) => {
                    evidence.push(format!(
                        "{}: {} in {}",
                        attribution::source(s),
                        s.frame,
                        attribution::describe(s, a.samples)
                    ));
                    let chain = call_chain(worst, &s.wchan).map(|c| format!(", called from {c}")).unwrap_or_default();
                    format!(
                        "; the writer was asleep in dirty throttling ({}{chain}) in {}",
                        s.wchan,
                        attribution::describe(s, a.samples)
                    )
                }
                None => "; the writer was never seen asleep in dirty throttling (balance_dirty_pages)".to_string(),
            };
            // Its other waits, each under its own mechanism: never counted as this one.
            let others: Vec<String> = a
                .shares
                .iter()
                .filter(|s| s.mechanism != Mechanism::DirtyThrottling)
                .take(2)
                .map(|s| {
                    format!("{} in {}, shown by {}", s.mechanism.name(), attribution::describe(s, a.samples), s.frame)
                })
                .collect();
            if !others.is_empty() {
                said += &format!("; its other waits were not dirty throttling: {}", others.join("; "));
            }
            said
        }
    };
    // Throttling is shown only by the kernel's pause or the writer seen in
    // balance_dirty_pages: Dirty near the limit is where it may start, not
    // proof that it did (3.2+ does not throttle below the freerun ceiling,
    // halfway between the background and the dirty limit).
    let shown = paused_ms > 0.0 || throttled.is_some();
    let own_writeback = waits.as_ref().and_then(|a| a.share(Mechanism::WritebackInWrite)).is_some();
    let (waits_said, what) = match traced::dirty(worst) {
        Some((said, exhibit)) => {
            evidence.push(exhibit);
            let what = match (throttled.is_some(), shown) {
                (true, _) => "the writer was throttled at the dirty limit",
                // The tracepoint counts every task's pauses: this one's only
                // where the workload is the only writer (the boot image).
                (false, true) => {
                    "writers were paused at the dirty limit (the kernel's tracepoint counts every task's pauses; in the boot image the workload is the only writer)"
                }
                (false, false) => "the writer came near the dirty limit and was never paused there: not a cause",
            };
            (format!("{waits_said}; {said}"), what)
        }
        None if shown => (waits_said, "the writer was throttled at the dirty limit"),
        None if own_writeback => (
            waits_said,
            "the writer reached the dirty limit and waited on requests or buffers inside write(): before 3.2 dirty throttling's own writeback, reclaim's or ext3's ordered data, which no stack here tells apart: a candidate",
        ),
        None => (
            waits_said,
            "the writer reached the dirty limit; no event shows it throttled there (no pause traced, never sampled in balance_dirty_pages): a candidate",
        ),
    };
    // Over every run of the group, not this one alone.
    let waits_said = match across {
        Some((runs, paused, ms)) if runs > 1 => {
            evidence.push(format!("kernel_events.dirty_pauses over the group: {paused} of {runs} runs, {ms:.0} ms"));
            format!(
                "{waits_said}; over the group's {runs} traced runs the kernel paused writers in {paused} ({ms:.0} ms in all)"
            )
        }
        _ => waits_said,
    };
    Some(Finding {
        rule: "dirty-limit",
        subject: subject.into(),
        sentence: format!(
            "{what}: Dirty peaked at {dirty:.0} MiB and Writeback at {writeback:.0} MiB, together at most {together:.0} MiB at one sample, against a limit of about {limit_mib:.0} MiB ({how}){disk_share}, and single write() calls blocked up to {write_max:.0} ms{waits_said}. {}; a plan variant with a lower vm.dirty_ratio would test it",
            dirty_advice(worst)
        ),
        evidence,
        record: Some(id(worst)),
        names_cause: shown,
    })
}

/// What a lower dirty limit does on this record's kernel: from 3.2 the
/// writer is paused sooner and for less at a time; before, it writes back
/// itself sooner, in smaller rounds.
fn dirty_advice(r: &Record) -> String {
    let version = r.kernel.release.as_deref().and_then(mechanism::version);
    let setting = Mechanism::DirtyThrottling.setting(version).unwrap_or("vm.dirty_ratio");
    match version {
        Some(v) if v < (3, 2, 0) => format!(
            "A lower limit ({setting}) starts the writer's own writeback sooner, with less dirty data to wait behind"
        ),
        _ => format!("A lower limit ({setting}) makes the writer wait sooner and for less at a time"),
    }
}

/// The writer asleep in the block layer's throttling (`rq_qos_wait`, with
/// wbt's frame in its stack or with none kept): what it was, by wbt's own
/// events on the target. wbt holds writes back for reads only when it scales
/// the depth below its default; at or above it (no such scale-down) a writer
/// waiting there waits at wbt's normal cap on writes in flight (16, 24 once
/// scaled up: below the device's own tags) — wbt's ceiling, not wbt
/// protecting reads. With no wbt events read, which of the two is unknown: a
/// candidate. Never a cause in the verdict: a kernel that hides its wchan
/// cannot show it.
fn writeback_throttling(subject: &str, r: &Record) -> Option<Finding> {
    let a = attribution::writer(r)?;
    let s =
        a.shares.iter().find(|s| matches!(s.mechanism, Mechanism::WritebackThrottling | Mechanism::QosThrottling))?;
    // A quarter of the writer's blocked samples, and more than a glimpse.
    if s.samples < 3 || s.samples * 4 < a.blocked() {
        return None;
    }
    let chain = call_chain(r, &s.wchan).map(|c| format!(" ← {c}")).unwrap_or_default();
    let proof = match s.mechanism {
        Mechanism::WritebackThrottling => format!("{} in its kernel stack", s.frame),
        _ => "rq_qos_wait alone, no stack kept to tell wbt from an io cgroup controller".to_string(),
    };
    let mut evidence = vec![format!("{}: {}", attribution::source(s), attribution::describe(s, a.samples))];
    let steps = match traced::wbt(r) {
        Some((said, exhibit)) => {
            evidence.push(exhibit);
            format!("; {said}")
        }
        None => String::new(),
    };
    let asleep =
        format!("asleep in {}{chain} in {}; shown by {proof}{steps}", s.wchan, attribution::describe(s, a.samples));
    let wbt_frame = s.mechanism == Mechanism::WritebackThrottling;
    // wbt holds writes back only below its default depth: a step down from
    // a raised depth (24) back to the default (16) throttles nothing.
    let default = wbt_default_depth(r);
    let below_default = |w: &crate::schema::events::Wbt| w.lowest_max_depth.map(|d| d < default);
    let (rule, sentence) = match traced::wbt_steps(r) {
        Some(Some((_, w))) if wbt_frame && w.scaled_down > 0 && below_default(w) == Some(true) => (
            "writeback-throttling",
            format!(
                "the writer was held by block writeback throttling (wbt): {asleep}. wbt scaled the queue's write depth down below its default of {default} while reads missed its latency target: the block layer holding writes back to keep reads fast, not the dirty limit (balance_dirty_pages); {} acts on it, and the seed-sweep plan's wbt-off variant would test it",
                wbt_setting(r)
            ),
        ),
        // A flush's writes (WB_SYNC_ALL: REQ_SYNC) get wbt's maximum depth;
        // others get half or a quarter of it, which is wbt's own limit.
        Some(steps)
            if wbt_frame && s.flushing >= s.writing && steps.is_none_or(|(_, w)| below_default(w) == Some(false)) =>
        {
            (
                "wbt-ceiling",
                format!(
                    "the writer waited for its writes in flight: {asleep}. wbt never took the write depth below its default of {default}, so it held these writes at its normal ceiling (a flush's synchronous writes get its maximum, at or above the default), not below it because reads missed their target: wbt's cap on writes in flight, not wbt protecting reads. Whether the disk would finish sooner without the cap, a run with wbt off would test (the wait then moves to the device's own tags)"
                ),
            )
        }
        _ => (
            "qos-wait",
            format!(
                "the writer waited in the block layer's throttling: {asleep}. Whether wbt held writes back for reads (it scales below its default depth only when reads miss its target) or held them at its normal ceiling, no event here says: a candidate; {}, read with wbt's tracepoints, would test it",
                match s.mechanism.setting(r.kernel.release.as_deref().and_then(mechanism::version)) {
                    Some(_) => format!("a run with {}", wbt_setting(r)),
                    None => "a run".to_string(),
                }
            ),
        ),
    };
    Some(Finding { rule, subject: subject.into(), sentence, evidence, record: Some(id(r)), names_cause: false })
}

/// wbt's default write depth on the target's queue: 16 (RWB_DEF_DEPTH),
/// or the queue's own depth if smaller (the drive's queue_depth where the
/// record has it, else nr_requests), as `rq_depth_calc_max_depth` takes it.
pub fn wbt_default_depth(r: &Record) -> u64 {
    let queue = |key: &str| r.storage.queue.get(key).and_then(|v| v.parse::<u64>().ok()).filter(|d| *d > 0);
    let depth = queue("device/queue_depth").or_else(|| queue("queue/nr_requests"));
    depth.map_or(16, |d| d.min(16))
}

/// The queue's wbt_lat_usec on the target (and, under an LV or array, on
/// its disks) in words: "the queue's wbt_lat_usec (75000 µs here; 0 turns wbt off)".
fn wbt_setting(r: &Record) -> String {
    let target = r.storage.queue.get("queue/wbt_lat_usec").map(|v| format!("{v} µs here"));
    let members: Vec<String> = r
        .storage
        .layers
        .iter()
        .filter_map(|l| Some(format!("{} {} µs", l.name, l.queue.get("queue/wbt_lat_usec")?)))
        .collect();
    match (target, members.is_empty()) {
        (Some(t), _) => format!("the queue's wbt_lat_usec ({t}; 0 turns wbt off)"),
        (None, false) => format!("the queue's wbt_lat_usec ({} here; 0 turns wbt off)", members.join(", ")),
        (None, true) => "the queue's wbt_lat_usec (0 turns wbt off)".to_string(),
    }
}

/// (writes returned, durable, flushing) in s, when flushing took over a
/// second and over a quarter of the time to durable: the flush rule's test.
fn flushing(t: &Times) -> Option<(f64, f64, f64)> {
    let (returned, durable) = (t.writes_returned_s?, t.durable_s?);
    let flushing = durable - returned;
    (flushing >= 1.0 && flushing >= 0.25 * durable).then_some((returned, durable, flushing))
}

/// Time between the last write() returning and the data being durable:
/// what the page cache held, flushed at close/fsync (in the run that
/// spent longest on it).
fn flush(subject: &str, r: &Record) -> Option<Finding> {
    let (returned, durable, flushing) = flushing(&r.times)?;
    let writeback =
        peak_mib(r, "writeback_kib").map(|w| format!("; Writeback peaked at {w:.0} MiB")).unwrap_or_default();
    let layers = &r.storage.layers;
    let cache = match r.storage.write_cache.as_deref() {
        // Under an LV or array the flush reaches every member disk's cache.
        _ if !layers.is_empty() => format!(
            " The member disks' write caches ({}): compare kernels only with the same cache and barrier settings.",
            crate::schema::layer::per_disk(layers, |d| d.write_cache.as_deref())
        ),
        Some(c) => {
            format!(" The drive's write cache is {c}: compare kernels only with the same cache and barrier settings.")
        }
        None => " The drive's write cache state is not in the record.".into(),
    };
    Some(Finding {
        rule: "flush",
        subject: subject.into(),
        sentence: format!(
            "the writes returned after {returned:.1} s but the data was durable only after {durable:.1} s: {flushing:.1} s ({:.0} %) went to flushing what the page cache had taken{writeback}. A timing that stops when write() returns would flatter this kernel.{cache}",
            100.0 * flushing / durable
        ),
        evidence: vec![format!("times.writes_returned_s = {returned:.2}"), format!("times.durable_s = {durable:.2}")],
        record: Some(id(r)),
        names_cause: false,
    })
}

fn flush_s(t: &Times) -> f64 {
    match (t.writes_returned_s, t.durable_s) {
        (Some(a), Some(b)) => b - a,
        _ => 0.0,
    }
}

/// Each row against its baseline row (`baseline_of`, by index): what
/// changed in the key figures, whether the real-time difference is
/// significant, and on how many boots (`boots`, by row).
pub(super) fn comparisons(rows: &[Row], baseline_of: &[Option<usize>], boots: &[usize]) -> Vec<Finding> {
    let mut out = Vec::new();
    for (i, row) in rows.iter().enumerate().filter(|(_, r)| !r.baseline) {
        let Some(b) = baseline_of[i] else { continue };
        let base = &rows[b];
        let (Some(this), Some(that)) = (&row.real_s, &base.real_s) else { continue };
        let stall = |r: &Row| r.max_stall_ms.unwrap_or(0.0);
        let stall_changed = (stall(row) - stall(base)).abs() >= 500.0 && (stall(row).max(stall(base)) >= STALL_MS);
        // The probe's typical response (p99, median over runs) doubling is a
        // machine getting sluggish before it stalls outright.
        let p99 = |r: &Row| r.probe_p99_ms.as_ref().map_or(0.0, |s| s.median);
        let (lo, hi) = (p99(row).min(p99(base)), p99(row).max(p99(base)));
        let p99_changed = hi >= 50.0 && hi >= 2.0 * lo;
        // The probe's read alone: a disk that makes every small read wait
        // shows here before the whole response doubles.
        let read_p50 = |r: &Row| r.probe_read_p50_ms.as_ref().map_or(0.0, |s| s.median);
        let (read_lo, read_hi) = (read_p50(row).min(read_p50(base)), read_p50(row).max(read_p50(base)));
        let read_changed = read_hi >= 5.0 && read_hi >= 2.0 * read_lo;
        if !row.significant && !stall_changed && !p99_changed && !read_changed {
            continue;
        }
        let (this_boots, base_boots) = (boots[i], boots[b]);
        let mut sentence = format!(
            "{} instead of {}: max stall {:.1} s → {:.1} s, probe p99 {:.0} → {:.0} ms; real time {:.2} s → {:.2} s (means; {})",
            row.key.first().map_or("?", String::as_str),
            base.key.first().map_or("?", String::as_str),
            stall(base) / 1000.0,
            stall(row) / 1000.0,
            p99(base),
            p99(row),
            that.mean,
            this.mean,
            if row.significant { "significant at 95 %" } else { "not significant" }
        );
        if let Some((t, b)) = row.throughput_mib_s.as_ref().zip(base.throughput_mib_s.as_ref())
            && b.median > 0.0
            && (t.median / b.median - 1.0).abs() >= 0.01
        {
            sentence += &format!("; throughput {:+.0} %", 100.0 * (t.median / b.median - 1.0));
        }
        if read_changed {
            sentence += &format!(
                "; the probe's uncached 4 KiB read took {:.1} ms instead of {:.1} ms at the median{}",
                read_p50(row),
                read_p50(base),
                device_share_said(row, base).unwrap_or_default()
            );
        }
        if let Some((this_kib, base_kib)) = request_sizes(row, base) {
            sentence += &format!(
                "; the disk got {} write requests instead of {} ({})",
                kib(this_kib),
                kib(base_kib),
                request_limit(row, base)
            );
        }
        // A p99 of few ticks is near their worst: say how many it is of.
        let ticks = |r: &Row| r.probe_ticks.as_ref().map_or(0.0, |s| s.median);
        let fewest = ticks(row).min(ticks(base));
        if p99_changed && fewest > 0.0 && fewest < 200.0 {
            sentence += &format!(
                "; each p99 is of about {fewest:.0} probe ticks a run, so near their worst (responsiveness.*.p90_ms and max_ms beside it)"
            );
        }
        sentence += &format!("; {} vs {} runs from {} and {} boot(s)", this.n, that.n, this_boots, base_boots);
        if this_boots.max(base_boots) < 2 {
            sentence += ": repetitions inside one boot share its state, so this says the setting matters in this boot, not yet across boots (repeat in a sequence for that)";
        }
        out.push(Finding {
            rule: "comparison",
            subject: subject(row),
            sentence,
            evidence: vec![
                format!("max_stall_ms {:.0} vs {:.0}", stall(row), stall(base)),
                format!("probe_p99_ms median {:.1} vs {:.1}", p99(row), p99(base)),
                format!("responsiveness.read.p50_ms median {:.1} vs {:.1}", read_p50(row), read_p50(base)),
                match device_share(row, base) {
                    Some((this, that, _)) => {
                        format!("kernel_events.requests reads device_ms p50 median {this:.1} vs {that:.1}")
                    }
                    None => "kernel_events.requests: reads not traced on both".into(),
                },
                format!("real_s mean {:.3} vs {:.3} (n {} vs {})", this.mean, that.mean, this.n, that.n),
            ],
            record: None,
            names_cause: false,
        });
    }
    out
}

/// Two rows' median write request sizes (KiB) when they differ by half or
/// more: the cause of a throughput difference on a disk whose cost is per
/// request (an old disk's seeks and command overhead, a throttled one).
pub(super) fn request_sizes(row: &Row, base: &Row) -> Option<(f64, f64)> {
    let (a, b) = (row.write_request_kib.as_ref()?.median, base.write_request_kib.as_ref()?.median);
    (a > 0.0 && b > 0.0 && a.max(b) >= 1.5 * a.min(b)).then_some((a, b))
}

/// How the time the device held a read differs between two rows (block
/// tracepoints, median over runs), beside how the probe's read differs: the
/// device's medians, and whether they carry at least half of the read's
/// change in the same direction (the wait is then the disk's, not the
/// queue's before it). None unless both rows were traced.
pub(super) fn device_share(row: &Row, base: &Row) -> Option<(f64, f64, bool)> {
    let (this, that) = (row.device_read_p50_ms.as_ref()?.median, base.device_read_p50_ms.as_ref()?.median);
    let read = |r: &Row| r.probe_read_p50_ms.as_ref().map(|s| s.median);
    let read_change = read(row)? - read(base)?;
    let device_change = this - that;
    let carries = read_change != 0.0 && device_change / read_change >= 0.5;
    Some((this, that, carries))
}

/// The device's share in words, after the read's own change: "; the disk
/// itself held reads 17.6 ms against 1.5 ms (…): the difference is the disk's".
/// Where it is not, the I/O scheduler's queue (insert to issue) is asked next.
fn device_share_said(row: &Row, base: &Row) -> Option<String> {
    let (this, that, carries) = device_share(row, base)?;
    let whose = if carries {
        "the difference is the disk's, not the queue's before it".to_string()
    } else {
        format!("most of the difference passed before the read reached the device{}", queue_share_said(row, base))
    };
    Some(format!(
        ", of which the disk itself held reads {this:.1} ms against {that:.1} ms (median issue to completion, block tracepoints): {whose}"
    ))
}

/// Where a read's wait before the device went, from `block_rq_insert`: in
/// the I/O scheduler's queue (insert to issue, which includes a wait for the
/// driver's tag while the device's queue is full) when that carries at
/// least half of what the device does not; else before the queue, where
/// these events see nothing. Where a side lacks the event: unknown.
fn queue_share_said(row: &Row, base: &Row) -> String {
    let median = |s: &Option<Summary>| s.as_ref().map(|s| s.median);
    let (Some(read), Some(read_base), Some(disk), Some(disk_base)) = (
        median(&row.probe_read_p50_ms),
        median(&base.probe_read_p50_ms),
        median(&row.device_read_p50_ms),
        median(&base.device_read_p50_ms),
    ) else {
        return ": where, these events do not say".into();
    };
    let (Some(queued), Some(queued_base)) = (median(&row.queued_read_p50_ms), median(&base.queued_read_p50_ms)) else {
        return ": where, these events do not say (block_rq_insert was not read on both sides)".into();
    };
    let before_device = (read - read_base) - (disk - disk_base);
    let figures = format!(
        "which held reads {queued:.1} ms against {queued_base:.1} ms (median insert to issue, block_rq_insert)"
    );
    if before_device != 0.0 && (queued - queued_base) / before_device >= 0.5 {
        format!(", in the I/O scheduler's queue (or waiting there for the driver's tag), {figures}")
    } else {
        format!(
            ", and not in the I/O scheduler's queue, {figures}: before it (a free request, the submitter's plug, the page cache, the filesystem) or after completion before the reader ran, which these events do not say"
        )
    }
}

/// What sets the request size, from the records: the queue's max_sectors_kb
/// on each side where recorded ("the queue's max_sectors_kb: 1280 against
/// 128"), else the settings that could.
pub(super) fn request_limit(row: &Row, base: &Row) -> String {
    let said = |r: &Row| match r.max_sectors_kb.as_slice() {
        [one] => Some(one.clone()),
        [] => None,
        many => Some(many.join(" or ")),
    };
    match (said(row), said(base)) {
        (Some(a), Some(b)) if a != b => format!("the queue's max_sectors_kb: {a} against {b}"),
        (Some(a), Some(_)) => {
            format!("the queue's max_sectors_kb is {a} on both: the sizes differ by merging, not by that limit")
        }
        _ => "a size the kernel decides: max_sectors_kb, merging; these records do not carry the queue's settings"
            .to_string(),
    }
}

/// A request size as a reader says it: 126 KiB, 1.1 MiB.
pub(super) fn kib(k: f64) -> String {
    if k >= 1024.0 { format!("{:.1} MiB", k / 1024.0) } else { format!("{k:.0} KiB") }
}

/// Findings of one rule about several groups, folded into one that lists
/// the groups: the same sentence six times over says nothing more. The
/// first group's finding stands for them (its figures and record); the
/// others' evidence is kept, each under its group. Comparisons are not
/// folded: each says how one group differs.
pub fn fold(findings: Vec<Finding>) -> Vec<Finding> {
    let mut out: Vec<Finding> = Vec::new();
    let mut count: Vec<usize> = Vec::new();
    for f in findings {
        // Alike only if both name a cause or neither (a read's wait placed in the device is not one placed nowhere).
        let alike = |o: &Finding| o.rule == f.rule && o.names_cause == f.names_cause;
        // A comparison, and runs not pooled, each say their own figures.
        let own = f.rule == "comparison" || f.rule == SETTINGS_DIFFER;
        let same = (!own).then(|| out.iter().position(alike)).flatten();
        let Some(i) = same else {
            count.push(1);
            out.push(f);
            continue;
        };
        count[i] += 1;
        let o = &mut out[i];
        if count[i] == 2 {
            o.evidence = o.evidence.iter().map(|e| format!("{}: {e}", o.subject)).collect();
        }
        o.subject = format!("{}; {}", o.subject, f.subject);
        o.evidence.extend(f.evidence.iter().map(|e| format!("{}: {e}", f.subject)));
    }
    for (o, n) in out.iter_mut().zip(count) {
        if n > 1 {
            let first = o.subject.split("; ").next().unwrap_or("").to_string();
            o.sentence = format!("in {n} groups, each alike; in {first}: {}", o.sentence);
        }
    }
    out
}

/// The findings as a Markdown section (empty when there are none).
pub fn markdown(findings: &[Finding]) -> String {
    if findings.is_empty() {
        return String::new();
    }
    let mut out = String::from("\n## Findings\n\n");
    for f in findings {
        out += &format!("- **{}** ({}): {}", f.rule, f.subject, f.sentence);
        if let Some(r) = &f.record {
            out += &format!(" [record {r}]");
        }
        out += "\n";
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::record::{Responsiveness, Spread, Times};
    use crate::workstation::report::{Options, report};

    /// A seqwrite of `variant` that took `wall` s; `stall_ms` is the probe's
    /// worst wait, at 2 s into a 10 s timeline where Dirty rises to `dirty_mib`.
    fn write_run(run: &str, seq: u32, variant: &str, wall: f64, stall_ms: f64, dirty_mib: u64) -> Record {
        let mut r = Record::blank(run, seq);
        r.workload.name = "seqwrite".into();
        r.variant = Some(crate::schema::variant::Applied { name: variant.into(), ..Default::default() });
        r.kernel.release = Some("2.6.9-42.EL".into());
        r.host.mem_total_kib = Some(1024 * 1024);
        r.vm.insert("dirty_ratio".into(), Some(40));
        r.vm.insert("dirty_bytes".into(), Some(0));
        r.storage.scheduler = Some("anticipatory".into());
        r.bytes_written = 1 << 30;
        r.times =
            Times { wall_s: wall, writes_returned_s: Some(wall * 0.3), durable_s: Some(wall), ..Times::default() };
        r.throughput_mib_s = 1024.0 / wall;
        r.latency.write.max_ms = if dirty_mib > 200 { 2400.0 } else { 20.0 };
        r.responsiveness = Some(Responsiveness {
            interval_ms: 100.0,
            max_ms: stall_ms,
            stalls_over_1s: u64::from(stall_ms > 1000.0) * 3,
            recovery_s: Some(1.5),
            read: Spread { max_ms: stall_ms * 0.9, p99_ms: stall_ms * 0.8, p50_ms: 1.0, ..Spread::default() },
            timer_late: Spread { max_ms: 5.0, ..Spread::default() },
            ..Responsiveness::default()
        });
        let t: Vec<f64> = (0..=40).map(|i| i as f64 * 0.25).collect();
        let dirty: Vec<Option<u64>> =
            t.iter().map(|x| Some((dirty_mib as f64 * (x / 4.0).min(1.0)) as u64 * 1024)).collect();
        r.timeline.interval_s = 0.25;
        r.timeline.series.insert("dirty_kib".into(), dirty);
        r.timeline.series.insert("writeback_kib".into(), t.iter().map(|_| Some(50 * 1024)).collect());
        let blocked = if dirty_mib > 200 { "balance_dirty_pages" } else { "0" };
        r.timeline.writer_wchan = t.iter().map(|x| Some(if *x >= 4.0 { blocked } else { "0" }.to_string())).collect();
        let frames = [
            "balance_dirty_pages+0x2d1/0x8e0",
            "balance_dirty_pages_ratelimited+0x6a/0x90",
            "generic_perform_write+0x13c/0x200",
        ];
        r.timeline.writer_stacks.insert(blocked.into(), frames.map(String::from).to_vec());
        r.timeline.t_s = t;
        r.timeline.probe_t_s = vec![1.0, 2.0, 3.0];
        r.timeline.probe_response_ms = vec![1.0, stall_ms, 2.0];
        r.timeline.workload_start_s = 0.0;
        r.timeline.workload_end_s = wall;
        r
    }

    fn find(records: &[Record]) -> Vec<Finding> {
        report(records, Options::default()).unwrap().findings
    }

    fn rules(found: &[Finding], subject_starts: &str) -> Vec<&'static str> {
        found.iter().filter(|f| f.subject.starts_with(subject_starts)).map(|f| f.rule).collect()
    }

    /// The seed's old kernel: Dirty climbs to the limit, writes block for
    /// seconds, the probe's reads wait behind writeback, data is durable
    /// long after the writes returned. Every rule names its numbers.
    #[test]
    fn a_stalling_writer_triggers_each_rule_with_its_numbers() {
        let found = find(&[write_run("b1", 0, "dirty40", 20.0, 4100.0, 380)]);
        assert_eq!(rules(&found, "dirty40"), ["stall", "read-starvation", "dirty-limit", "flush"], "{found:#?}");
        let text = |rule: &str| found.iter().find(|f| f.rule == rule).unwrap().sentence.clone();
        assert!(text("stall").contains("waited up to 4.1 s, 3 times over 1 s"), "{}", text("stall"));
        assert!(text("stall").contains("began 2.0 s into the workload, with 190 MiB dirty and 50 MiB under writeback"));
        assert!(text("stall").contains("again 1.5 s after the workload ended"));
        // The writer's samples inside the stall (2.0–6.1 s): asleep in balance_dirty_pages from 4.0 s.
        let during =
            "while it lasted the writer was asleep in balance_dirty_pages in 9 of 17 samples: dirty throttling";
        assert!(text("stall").contains(during), "{}", text("stall"));
        assert!(!text("stall").contains("blocked-task dump"), "none taken");
        let mut dumped = write_run("b1", 0, "dirty40", 20.0, 4100.0, 380);
        dumped.blocked_tasks =
            ["sysrq: Show Blocked State", "task:bootmark-work state:D stack:0", "task:jbd2/sda-8 state:D"]
                .map(String::from)
                .to_vec();
        let found_dumped = find(&[dumped]);
        assert!(
            found_dumped[0].sentence.contains("lists 2 task(s) in uninterruptible sleep"),
            "{}",
            found_dumped[0].sentence
        );
        assert!(text("read-starvation").contains("took 3.7 s") && text("read-starvation").contains("anticipatory"));
        // 2.6.9 under AS: no deadline (it favours reads less than AS), no wbt: AS's own tunables,
        // and only if the read waited in the scheduler's queue, which nothing here says.
        let starved = text("read-starvation");
        assert!(starved.contains("If the read waited in the I/O scheduler's queue (a candidate"), "{starved}");
        assert!(starved.contains("the anticipatory scheduler already favours reads"), "{starved}");
        assert!(starved.contains("its own read_expire and antic_expire"), "{starved}");
        assert!(!starved.contains("wbt_lat_usec") && !starved.contains("favours reads (deadline)"), "{starved}");
        // Untraced, the place of the read's wait is said to be unknown, and no cause is claimed from it.
        let untraced =
            "whether it waited in the device or before reaching it is unknown: this record has no block tracepoints";
        assert!(text("read-starvation").contains(untraced), "{}", text("read-starvation"));
        assert!(!found.iter().find(|f| f.rule == "read-starvation").unwrap().names_cause);
        assert!(text("stall").contains("Its longest part over the run was the 4 KiB read"), "{}", text("stall"));
        assert!(
            text("dirty-limit").contains("Dirty peaked at 380 MiB") && text("dirty-limit").contains("about 410 MiB")
        );
        // 4 s to 10 s of the 0–10 s timeline: samples 16..=40 of 41; the stack names the caller.
        let throttled = "asleep in dirty throttling (balance_dirty_pages, called from \
                         balance_dirty_pages_ratelimited ← generic_perform_write) in 25 of 41 samples, \
                         9 while writing, 16 while flushing (4.0–10.0 s into the workload)";
        assert!(text("dirty-limit").contains(throttled), "{}", text("dirty-limit"));
        // The kernel's default share of the limit is not said.
        assert!(!text("dirty-limit").contains("backing device"), "{}", text("dirty-limit"));
        assert!(
            text("flush").contains("returned after 6.0 s but the data was durable only after 20.0 s: 14.0 s (70 %)")
        );
        assert_eq!(found[0].record.as_deref(), Some("b1:0"));
    }

    /// A read that waited neither in the device nor in the scheduler's queue
    /// (block_rq_insert bounds both): no scheduler setting is advised, as
    /// none acts before the queue — the 6.12 ladder's 1.0 s read.
    #[test]
    fn a_read_held_before_the_queue_gets_no_scheduler_advice() {
        use crate::schema::events::{INSERT_EVENT, KernelEvents, REQUEST_EVENTS, Requests};
        use crate::schema::measures::LatencySummary;
        let mut r = write_run("b1", 0, "dirty40", 20.0, 4100.0, 380);
        r.storage.scheduler = Some("mq-deadline".into());
        r.storage.device = Some(crate::schema::machine::Device { disk: "sda".into(), ..Default::default() });
        let held = |max_ms| LatencySummary { count: 186, p50_ms: 0.1, max_ms, ..LatencySummary::default() };
        let reads = Requests { count: 186, kib_p50: 4, kib_max: 4, device_ms: held(88.0), queued_ms: Some(held(67.0)) };
        let mut enabled: Vec<String> = REQUEST_EVENTS.map(String::from).to_vec();
        enabled.push(INSERT_EVENT.into());
        r.kernel_events =
            Some(KernelEvents { enabled, requests: [("sda R".to_string(), reads)].into(), ..KernelEvents::default() });
        let found = find(&[r]);
        let starved = &found.iter().find(|f| f.rule == "read-starvation").unwrap().sentence;
        assert!(starved.contains("nor in the I/O scheduler's queue: no read waited there over 67 ms"), "{starved}");
        assert!(starved.contains("No I/O scheduler setting acts on a wait before the queue"), "{starved}");
        assert!(!starved.contains("read_expire"), "{starved}");
    }

    /// A disk whose backing device is held to less than the whole limit
    /// (bdi max_ratio, strict_limit): the finding says so, as the
    /// machine-wide limit it quotes overstates this disk's own.
    #[test]
    fn a_disks_own_share_of_the_dirty_limit_is_said_where_not_the_default() {
        let mut capped = write_run("b1", 0, "dirty40", 20.0, 4100.0, 380);
        for (file, value) in [("bdi/min_ratio", "0"), ("bdi/max_ratio", "20"), ("bdi/strict_limit", "1")] {
            capped.storage.queue.insert(file.into(), value.into());
        }
        let found = find(&[capped]);
        let dirty = found.iter().find(|f| f.rule == "dirty-limit").unwrap();
        let said =
            "; this disk's backing device has max_ratio 20 % (the most of the limit it may hold), strict_limit on";
        assert!(dirty.sentence.contains(said), "{}", dirty.sentence);
        assert!(!dirty.sentence.contains("min_ratio"), "{}", dirty.sentence);
        assert!(dirty.evidence.iter().any(|e| e.contains("bdi/max_ratio")), "{:?}", dirty.evidence);
    }

    /// The demo's 6.1 writer: throttled at the dirty limit while writing,
    /// then held by wbt in its fdatasync. The dirty-limit finding counts
    /// balance_dirty_pages alone and names the wbt waits as what they are;
    /// the writeback-throttling finding names wbt and its setting.
    #[test]
    fn wbt_in_a_flush_is_named_writeback_throttling_never_dirty_throttling() {
        let mut r = write_run("b1", 0, "dirty40", 20.0, 4100.0, 380);
        // Writes return at 6.0 s: dirty throttling until then, wbt while flushing.
        r.timeline.writer_wchan = r
            .timeline
            .t_s
            .iter()
            .map(|x| {
                Some(String::from(match *x {
                    x if x < 4.0 => "0",
                    x if x <= 6.0 => "balance_dirty_pages",
                    _ => "rq_qos_wait",
                }))
            })
            .collect();
        // The demo's 6.1 (wbt exists from 4.10), its limit set in bytes.
        r.kernel.release = Some("6.1.0-50-amd64".into());
        r.vm.insert("dirty_bytes".into(), Some(410 << 20));
        let wbt = ["rq_qos_wait+0xbe/0x130", "wbt_wait+0x9c/0x100", "__rq_qos_throttle+0x20/0x40"];
        r.timeline.writer_stacks.insert("rq_qos_wait".into(), wbt.map(String::from).to_vec());
        let found = find(&[r.clone()]);
        let text = |rule: &str| found.iter().find(|f| f.rule == rule).map(|f| f.sentence.clone()).unwrap_or_default();
        let dirty = text("dirty-limit");
        assert!(dirty.contains("dirty throttling (balance_dirty_pages, called from"), "{dirty}");
        assert!(dirty.contains("in 9 of 41 samples, all while writing (4.0–6.0 s"), "{dirty}");
        assert!(
            dirty.contains(
                "its other waits were not dirty throttling: a wait in block writeback throttling (wbt_wait: held back for reads, or at wbt's normal ceiling) in 16 of 41 samples, all while flushing (6.2–10.0 s into the workload), shown by wbt_wait"
            ),
            "{dirty}"
        );
        // Untraced: held back or at wbt's ceiling, which no event says: a candidate.
        let held = text("qos-wait");
        assert!(
            held.starts_with("the writer waited in the block layer's throttling: asleep in rq_qos_wait ← wbt_wait ← __rq_qos_throttle in 16 of 41 samples, all while flushing"),
            "{held}"
        );
        assert!(
            held.contains("wbt_wait in its kernel stack") && held.contains("no event here says: a candidate"),
            "{held}"
        );
        assert!(held.contains("wbt_lat_usec") && !held.contains("dirty_ratio"), "{held}");
        assert!(!held.contains("to keep reads fast"), "{held}");
        // wbt's events on, and it never scaled down (the demo's 6.1: one step, up, to depth 24): wbt's ceiling.
        let traced_to = |scaled_down, lowest| {
            let mut t = r.clone();
            let wbt = crate::schema::events::Wbt {
                steps: 1 + scaled_down,
                scaled_down,
                lowest_max_depth: Some(lowest),
                ..Default::default()
            };
            t.kernel_events = Some(crate::schema::events::KernelEvents {
                enabled: vec!["wbt:wbt_step".into()],
                wbt: [("sda".to_string(), wbt)].into(),
                ..Default::default()
            });
            t.storage.device = Some(crate::schema::machine::Device { disk: "sda".into(), ..Default::default() });
            find(&[t])
        };
        let traced = |scaled_down| traced_to(scaled_down, if scaled_down > 0 { 4 } else { 24 });
        let found = traced(0);
        let full = &found.iter().find(|f| f.rule == "wbt-ceiling").expect("wbt's ceiling").sentence;
        assert!(full.contains("1 step (0 down), the lowest write depth they set 24"), "{full}");
        assert!(full.contains("wbt's cap on writes in flight, not wbt protecting reads"), "{full}");
        assert!(full.contains("a run with wbt off would test"), "{full}");
        assert!(!found.iter().any(|f| f.rule == "writeback-throttling"), "{found:#?}");
        // Up to 24 and one step down, back to its default 16 (the demo's 6.1 of
        // 2026-12-06): it never held writes below its default: its ceiling.
        let found = traced_to(1, 16);
        assert!(!found.iter().any(|f| f.rule == "writeback-throttling"), "{found:#?}");
        let full = &found.iter().find(|f| f.rule == "wbt-ceiling").expect("wbt's ceiling").sentence;
        assert!(full.contains("2 steps (1 down), the lowest write depth they set 16"), "{full}");
        assert!(full.contains("never took the write depth below its default of 16"), "{full}");
        // It scaled down below its default: wbt held the writes back, by its own account.
        let found = traced(3);
        let held = &found.iter().find(|f| f.rule == "writeback-throttling").expect("wbt named").sentence;
        assert!(held.starts_with("the writer was held by block writeback throttling (wbt)"), "{held}");
        assert!(held.contains("4 steps (3 down)") && held.contains("to keep reads fast"), "{held}");
        // Without the stack: the QoS family, and the sentence says what it cannot tell.
        r.timeline.writer_stacks.remove("rq_qos_wait");
        let found = find(&[r]);
        let held = found.iter().find(|f| f.rule == "qos-wait").unwrap();
        assert!(held.sentence.contains("block layer's throttling") && held.sentence.contains("no stack kept"));
        assert_eq!(
            held.evidence,
            ["timeline.writer_wchan (no stack): 16 of 41 samples, all while flushing (6.2–10.0 s into the workload)"]
        );
    }

    /// The call chain said for a wait is read from a stack of that sleep:
    /// a stack read after the writer woke (6.1, the mechanisms check's
    /// tinydirty boot) is passed over for the next one that holds the wchan.
    #[test]
    fn a_call_chain_comes_from_a_stack_that_holds_the_wait() {
        let mut r = write_run("b1", 0, "tinydirty", 20.0, 400.0, 4);
        let tl = &mut r.timeline;
        let later = [
            "exit_to_user_mode_prepare+0x17c/0x240",
            "irqentry_exit_to_user_mode+0x5/0x30",
            "asm_sysvec_apic_timer_interrupt+0x16/0x20",
        ];
        let same = [
            "balance_dirty_pages+0x3bc/0xd60",
            "balance_dirty_pages_ratelimited_flags+0x2a0/0x380",
            "generic_perform_write+0x15a/0x240",
            "ext4_buffered_write_iter+0x8c/0x140 [ext4]",
        ];
        tl.stacks = vec![later.map(String::from).to_vec(), same.map(String::from).to_vec()];
        tl.writer_wchan = tl.t_s.iter().map(|_| Some("balance_dirty_pages".into())).collect();
        tl.writer_stack = (0..tl.t_s.len()).map(|i| Some(if i < 3 { 0 } else { 1 })).collect();
        assert_eq!(
            call_chain(&r, "balance_dirty_pages").as_deref(),
            Some("balance_dirty_pages_ratelimited_flags ← generic_perform_write ← ext4_buffered_write_iter")
        );
        // Only stacks of other moments: no chain, rather than theirs.
        r.timeline.writer_stack = r.timeline.t_s.iter().map(|_| Some(0)).collect();
        assert_eq!(call_chain(&r, "balance_dirty_pages"), None);
    }

    /// A read slowed, not starved: the probe's samples taken while its
    /// slowest tick was late say where it waited, and only those inside that
    /// tick's read (after its ls) count as the read's.
    #[test]
    fn a_slow_read_says_where_the_probe_waited_inside_it() {
        let mut r = write_run("b1", 0, "asfound", 20.0, 60.0, 20);
        r.kernel.release = Some("6.12.0".into());
        let tl = &mut r.timeline;
        // The tick due at 2.0 s answered after 60 ms: its ls took 5 ms and
        // its read 54 ms, so the read ran from 2.006 to 2.060 s.
        tl.probe_read_ms = vec![0.5, 54.0, 1.0];
        tl.probe_ls_ms = vec![0.3, 5.0, 0.5];
        let read_stack =
            ["folio_wait_bit_common+0x13d/0x350", "filemap_get_pages+0x2a0/0x6c0", "filemap_read+0xd9/0x350"];
        let ls_stack = ["__lock_buffer+0x2d/0x40", "ext4_read_inode_bitmap+0x1e0/0x5c0"];
        tl.stacks = vec![read_stack.map(String::from).to_vec(), ls_stack.map(String::from).to_vec()];
        let late = |at: &[(f64, &str, u32)]| crate::schema::measures::LateTicks {
            t_s: at.iter().map(|a| a.0).collect(),
            wchan: at.iter().map(|a| Some(a.1.to_string())).collect(),
            state: at.iter().map(|_| Some("D".to_string())).collect(),
            stack: at.iter().map(|a| Some(a.2)).collect(),
        };
        let in_ls = (2.004, "__lock_buffer", 1);
        let in_read = (2.03, "folio_wait_bit_common", 0);
        tl.probe_late = late(&[in_ls, (2.015, in_read.1, 0), in_read, (2.05, in_read.1, 0)]);
        let found = find(&[r.clone()]);
        let slow = found.iter().find(|f| f.rule == "slow-read").expect("a slow-read finding");
        assert!(
            slow.sentence.contains("the probe's reads slowed while the workload ran (median 1.0 ms over 3 ticks); its slowest read while the workload ran took 54 ms, 2.0 s into it; inside it the probe itself was asleep in folio_wait_bit_common in 3 of 3 samples (its kernel stack): waiting for a page's or buffer's I/O, or its lock"),
            "{}",
            slow.sentence
        );
        assert!(!slow.names_cause, "where the probe waited is no cause");
        assert!(slow.evidence.iter().any(|e| e
            == "timeline.probe_late over 2.006–2.060 s (probe_read_ms 54.0): folio_wait_bit_common in 3 of 3 samples"));
        // Only the ls waited while late: nothing is said of the read.
        r.timeline.probe_late = late(&[in_ls]);
        assert!(find(&[r.clone()]).iter().all(|f| f.rule != "slow-read"));
        // Against a baseline whose slowest read took 30 ms, 54 ms is not slow.
        r.timeline.probe_late = late(&[in_read]);
        let mut before = r.clone();
        let tl = &mut before.timeline;
        (tl.probe_t_s, tl.probe_read_ms, tl.probe_ls_ms, tl.probe_response_ms) = (
            vec![-0.5, 1.0, 2.0, 3.0],
            vec![30.0, 0.5, 54.0, 1.0],
            vec![0.3, 0.3, 5.0, 0.5],
            vec![31.0, 1.0, 60.0, 2.0],
        );
        assert!(find(&[before.clone()]).iter().all(|f| f.rule != "slow-read"));
        // Against 20 ms it is, and the baseline is said.
        before.timeline.probe_read_ms[0] = 20.0;
        let found = find(&[before]);
        let said = &found.iter().find(|f| f.rule == "slow-read").expect("slow against 20 ms").sentence;
        assert!(said.contains("(median 1.0 ms over 3 ticks against at most 20.0 ms before it)"), "{said}");
        // A read under 10 ms is not slow, whatever was sampled.
        r.timeline.probe_read_ms[1] = 8.0;
        assert!(find(&[r]).iter().all(|f| f.rule != "slow-read"));
    }

    /// The probe's own wait at its worst tick: where the probe itself was
    /// sampled (its wchan and stack, not the writer's), and that tick's own
    /// parts rather than the run's longest read, which may be another tick's.
    #[test]
    fn a_stall_says_where_the_probe_itself_waited_in_its_worst_tick() {
        let mut r = write_run("b1", 0, "dirty40", 20.0, 4100.0, 380);
        r.kernel.release = Some("6.12.0".into());
        r.vm.insert("dirty_bytes".into(), Some(410 << 20));
        let tl = &mut r.timeline;
        // The worst tick is due at 2.0 s and lasts 4.1 s; its read took 3.9 s, its ls 0.1 s.
        tl.probe_read_ms = vec![0.5, 3900.0, 1.0];
        tl.probe_ls_ms = vec![0.3, 100.0, 0.5];
        let read_stack =
            ["folio_wait_bit_common+0x13d/0x350", "filemap_get_pages+0x2a0/0x6c0", "filemap_read+0xd9/0x350"];
        tl.stacks = vec![read_stack.map(String::from).to_vec()];
        tl.probe_wchan = tl
            .t_s
            .iter()
            .map(|t| Some(if (2.0..=6.1).contains(t) { "folio_wait_bit_common" } else { "0" }.into()))
            .collect();
        tl.probe_state = tl.t_s.iter().map(|t| Some(if (2.0..=6.1).contains(t) { "D" } else { "S" }.into())).collect();
        tl.probe_stack = tl.t_s.iter().map(|t| (2.0..=6.1).contains(t).then_some(0)).collect();
        let found = find(&[r.clone()]);
        let stall = &found.iter().find(|f| f.rule == "stall").unwrap();
        assert!(
            stall.sentence.contains("the probe itself was asleep in folio_wait_bit_common in 17 of 17 samples: waiting for a page's or buffer's I/O, or its lock"),
            "{}",
            stall.sentence
        );
        assert!(
            stall.sentence.contains("In that tick its longest part was the 4 KiB read (3900 ms)"),
            "{}",
            stall.sentence
        );
        assert!(
            stall
                .evidence
                .iter()
                .any(|e| e.starts_with("timeline.probe_wchan, probe_stack and probe_late during the stall"))
        );
        assert!(stall.sentence.contains("waited up to 4.1 s, 3 times over 1 s in the worst run"), "{}", stall.sentence);
        let mut once = r.clone();
        once.responsiveness.as_mut().unwrap().stalls_over_1s = 1;
        let found = find(&[once]);
        let said = &found.iter().find(|f| f.rule == "stall").unwrap().sentence;
        assert!(said.contains("waited up to 4.1 s, once over 1 s in the worst run"), "{said}");
        assert!(!stall.sentence.contains("PSI"), "no PSI series, nothing said of it");
        // PSI sampled (4.20+): I/O stalled some task half of the 4.25 s around the tick, every task a quarter.
        let n = r.timeline.t_s.len();
        let at = |rate: f64| r.timeline.t_s.iter().map(|t| Some((t * rate * 1e6) as u64)).collect::<Vec<_>>();
        let (some, full) = (at(0.5), at(0.25));
        r.timeline.series.insert("psi_io_some_us".into(), some);
        r.timeline.series.insert("psi_io_full_us".into(), full);
        assert_eq!(r.timeline.series["psi_io_full_us"].len(), n);
        let found = find(&[r.clone()]);
        let stall = &found.iter().find(|f| f.rule == "stall").unwrap().sentence;
        assert!(
            stall.contains("the kernel's pressure accounting (PSI) over 2.0–6.2 s: some task stalled on I/O 50 % of the time, every non-idle task 25 %"),
            "{stall}"
        );
        // Records from before the probe was sampled: nothing said of it.
        r.timeline.probe_wchan.clear();
        let found = find(&[r]);
        assert!(!found.iter().any(|f| f.sentence.contains("the probe itself")));
    }

    /// What the kernel compares is Dirty + Writeback at one moment, not the
    /// two peaks added; pauses the tracepoint saw are every task's, so with
    /// the writer never seen there they are "writers"; and a 2.6.24–3.13
    /// kernel's limit from free + page cache is a lower bound.
    #[test]
    fn the_dirty_limit_says_what_its_figures_are() {
        let mut r = write_run("b1", 0, "dirty40", 20.0, 4100.0, 380);
        let n = r.timeline.t_s.len();
        // Dirty peaks at the start, Writeback at the end: never 380 + 200 at once.
        let dirty: Vec<Option<u64>> = (0..n).map(|i| Some(((n - i) * 380 * 1024 / n) as u64)).collect();
        let writeback: Vec<Option<u64>> = (0..n).map(|i| Some((i * 200 * 1024 / n) as u64)).collect();
        r.timeline.series.insert("dirty_kib".into(), dirty);
        r.timeline.series.insert("writeback_kib".into(), writeback);
        assert_eq!(peak_sum_mib(&r, "dirty_kib", "writeback_kib").map(f64::round), Some(380.0));
        r.timeline.writer_wchan = r.timeline.t_s.iter().map(|_| Some("0".to_string())).collect();
        r.kernel.release = Some("5.10.0".into());
        r.vm.insert("dirty_bytes".into(), Some(400 << 20));
        let pause = crate::schema::events::Pauses { count: 9, total_ms: 900.0, max_ms: 200.0 };
        r.kernel_events = Some(crate::schema::events::KernelEvents {
            enabled: vec!["writeback:balance_dirty_pages".into()],
            dirty_pauses: crate::schema::events::Phased { writing: pause, ..Default::default() },
            ..Default::default()
        });
        let found = find(&[r.clone()]);
        let dirty = &found.iter().find(|f| f.rule == "dirty-limit").unwrap().sentence;
        assert!(
            dirty.starts_with(
                "writers were paused at the dirty limit (the kernel's tracepoint counts every task's pauses"
            ),
            "{dirty}"
        );
        assert!(
            dirty.contains("Dirty peaked at 380 MiB and Writeback at 195 MiB, together at most 380 MiB at one sample"),
            "{dirty}"
        );
        // 2.6.30: no vmstat threshold, the formula, and a lower bound.
        let mut old = r;
        old.kernel.release = Some("2.6.30".into());
        old.vm.insert("dirty_bytes".into(), Some(0));
        old.vm.insert("dirty_ratio".into(), Some(40));
        old.timeline.series.insert("mem_free_kib".into(), vec![Some(800 * 1024); n]);
        old.timeline.series.insert("cached_kib".into(), vec![Some(200 * 1024); n]);
        let (_, how) = dirty_limit_mib(&old).unwrap();
        assert!(how.ends_with("a lower bound: this kernel counts anonymous memory as dirtyable too"), "{how}");
    }

    /// A wchan of 0 is said by the kernel's version: running on 2.6 (and
    /// 5.16+), a sleep it may hide on x86_64 4.14–5.15 (5.10 in the demo).
    /// No mechanism is named from nothing, and no cause.
    #[test]
    fn a_zero_wchan_is_said_by_version_and_no_mechanism_is_named() {
        let mut r = write_run("b1", 0, "dirty40", 20.0, 4100.0, 380);
        r.timeline.writer_wchan = r.timeline.t_s.iter().map(|_| Some("0".to_string())).collect();
        let found = find(&[r.clone()]);
        let dirty = found.iter().find(|f| f.rule == "dirty-limit").unwrap();
        assert!(dirty.sentence.starts_with("the writer reached the dirty limit; no event shows it throttled there"));
        assert!(dirty.sentence.contains("it was running (on the CPU, not blocked) in 41 of 41 samples"), "{dirty:?}");
        assert!(!dirty.names_cause, "no pause, never seen in balance_dirty_pages: a candidate");
        r.kernel.release = Some("5.10.0-30-amd64".into());
        r.kernel.arch = Some("x86_64".into());
        r.vm.insert("dirty_bytes".into(), Some(400 << 20));
        let found = find(&[r.clone()]);
        let dirty = &found.iter().find(|f| f.rule == "dirty-limit").unwrap().sentence;
        assert!(
            dirty.contains("where the writer slept is unknown: its wchan read 0 in 41 of 41 samples, and this kernel reads 0 for a sleeping task too"),
            "{dirty}"
        );
        // The task's state, where kept, says which samples were running.
        let tl = &mut r.timeline;
        tl.writer_state =
            tl.t_s.iter().enumerate().map(|(i, _)| Some(if i % 2 == 0 { "R" } else { "D" }.into())).collect();
        let found = find(&[r]);
        let dirty = &found.iter().find(|f| f.rule == "dirty-limit").unwrap().sentence;
        assert!(dirty.contains("where the writer slept is unknown: it was running in 21 of 41 samples, and its wchan read 0 while not running in 20"), "{dirty}");
        assert!(!found.iter().any(|f| f.rule.contains("throttling") || f.rule == "wbt-ceiling"));
    }

    /// On an LV over RAID 1 the reads queue at the member disks: the
    /// read-starvation and flush rules name their schedulers and caches.
    #[test]
    fn under_an_lv_on_raid_the_rules_name_the_member_disks_queues() {
        use crate::schema::layer::Layer;
        let mut r = write_run("b1", 0, "dirty40", 20.0, 4100.0, 380);
        r.storage.scheduler = Some("none".into());
        let disk = |name: &str| Layer {
            name: name.into(),
            kind: "disk".into(),
            scheduler: Some("cfq".into()),
            write_cache: Some("write back".into()),
            ..Layer::default()
        };
        r.storage.layers = vec![
            Layer { name: "dm-0".into(), kind: "dm".into(), dm_targets: vec!["linear".into()], ..Layer::default() },
            Layer { name: "md127".into(), kind: "md".into(), md_level: Some("raid1".into()), ..Layer::default() },
            disk("sda"),
            disk("sdb"),
        ];
        let found = find(&[r]);
        let text = |rule: &str| found.iter().find(|f| f.rule == rule).unwrap().sentence.clone();
        let starved = text("read-starvation");
        assert!(
            starved.contains("sda cfq, sdb cfq of the member disks (the dm linear → md raid1 → 2 disks device: none)"),
            "{starved}"
        );
        assert!(
            text("flush").contains("member disks' write caches (sda write back, sdb write back)"),
            "{}",
            text("flush")
        );
    }

    /// A healthy run (no stall, Dirty far below the limit, data durable
    /// soon after the writes) triggers nothing.
    #[test]
    fn a_healthy_writer_triggers_nothing() {
        let mut r = write_run("b1", 0, "dirty10", 10.0, 40.0, 60);
        r.times.writes_returned_s = Some(9.5);
        assert_eq!(find(&[r]), []);
    }

    /// A missing counter is said, not guessed: no Dirty series, no
    /// dirty-limit finding and a stall that says the timeline cannot tell.
    #[test]
    fn missing_evidence_is_said_not_guessed() {
        let mut r = write_run("b1", 0, "dirty40", 20.0, 4100.0, 380);
        r.timeline.series.clear();
        r.timeline.writer_wchan.clear();
        let found = find(&[r]);
        assert!(!rules(&found, "dirty40").contains(&"dirty-limit"));
        let stall = found.iter().find(|f| f.rule == "stall").unwrap();
        assert!(stall.sentence.contains("has no Dirty/Writeback figures"), "{}", stall.sentence);
    }

    /// Variant vs the first variant: the stall that went away, the time
    /// change with its significance, and how many boots that rests on.
    #[test]
    fn a_comparison_cites_both_figures_and_how_many_boots() {
        let mut records = Vec::new();
        for (seq, wall) in [20.0, 21.0, 19.5].into_iter().enumerate() {
            records.push(write_run("b1", seq as u32 * 2, "dirty40", wall, 4100.0, 380));
            records.push(write_run("b1", seq as u32 * 2 + 1, "dirty10", wall + 0.3, 300.0, 90));
        }
        let found = find(&records);
        let cmp: Vec<&Finding> = found.iter().filter(|f| f.rule == "comparison").collect();
        assert_eq!(cmp.len(), 1, "{found:#?}");
        let s = &cmp[0].sentence;
        assert!(s.starts_with("dirty10 instead of dirty40: max stall 4.1 s → 0.3 s, probe p99 0 → 0 ms"), "{s}");
        assert!(s.contains("not significant") && s.contains("3 vs 3 runs from 1 and 1 boot(s)"), "{s}");
        assert!(s.contains("not yet across boots"), "one boot: {s}");
        // Same figures from three boots: the caveat goes.
        for (i, r) in records.iter_mut().enumerate() {
            r.run_id = format!("boot{}", i / 2);
        }
        let found = find(&records);
        let s = &found.iter().find(|f| f.rule == "comparison").unwrap().sentence;
        assert!(s.contains("from 3 and 3 boot(s)") && !s.contains("not yet across boots"), "{s}");
    }

    /// A machine turning sluggish (probe p99 tripled) is a comparison
    /// finding even with no stall over a second and no time difference.
    #[test]
    fn a_sluggish_probe_is_a_comparison_too() {
        let mut records = Vec::new();
        for seq in 0..2 {
            let mut calm = write_run("b1", seq * 2, "dirty40", 16.0, 40.0, 60);
            calm.responsiveness.as_mut().unwrap().p99_ms = 31.0;
            let mut sluggish = write_run("b1", seq * 2 + 1, "unprotected", 16.0, 115.0, 60);
            sluggish.responsiveness.as_mut().unwrap().p99_ms = 112.0;
            records.extend([calm, sluggish]);
        }
        let found = find(&records);
        let s = &found.iter().find(|f| f.rule == "comparison").expect("a comparison").sentence;
        assert!(s.contains("probe p99 31 → 112 ms") && s.contains("not significant"), "{s}");
        // Half as much change is not a finding.
        for r in records.iter_mut().filter(|r| r.variant.as_ref().unwrap().name == "unprotected") {
            r.responsiveness.as_mut().unwrap().p99_ms = 45.0;
        }
        assert!(find(&records).iter().all(|f| f.rule != "comparison"));
    }

    /// Each kernel's own dirty-limit formula: 2.6.9 caps the ratio at half
    /// the unmapped memory; current kernels take a share of free + page
    /// cache; dirty_bytes overrides both.
    #[test]
    fn the_dirty_limit_follows_each_kernels_formula() {
        let mut old = write_run("b1", 0, "dirty40", 20.0, 4100.0, 380);
        let samples = old.timeline.t_s.len();
        old.timeline.series.insert("mapped_kib".into(), vec![Some(600 * 1024); samples]);
        let (mib, how) = dirty_limit_mib(&old).unwrap();
        assert!((mib - 1024.0 * 0.21).abs() < 0.01, "{mib} {how}");
        assert!(how.contains("capped at half the unmapped memory: 21 %"), "{how}");

        let mut new = old.clone();
        new.kernel.release = Some("6.1.0-50-amd64".into());
        new.vm.insert("dirty_ratio".into(), Some(20));
        new.timeline.series.insert("mem_free_kib".into(), vec![Some(800 * 1024); samples]);
        new.timeline.series.insert("cached_kib".into(), vec![Some(200 * 1024); samples]);
        let (mib, how) = dirty_limit_mib(&new).unwrap();
        assert!((mib - 200.0).abs() < 0.01 && how.contains("of 1000 MiB free + page cache"), "{mib} {how}");

        new.vm.insert("dirty_bytes".into(), Some(64 << 20));
        assert_eq!(dirty_limit_mib(&new).unwrap().0, 64.0);
        // Where the kernel says its own threshold (vmstat, 2.6.37+), that is the limit.
        new.timeline.series.insert("nr_dirty_threshold".into(), vec![Some(25600); samples]);
        new.timeline.series.insert("nr_dirty_background_threshold".into(), vec![Some(12800); samples]);
        let (mib, how) = dirty_limit_mib(&new).unwrap();
        assert_eq!(mib, 100.0);
        assert_eq!(how, "the kernel's own nr_dirty_threshold at the start: 25600 pages of 4 KiB, background 50 MiB");
    }

    /// The dirty-limit rule reads the run whose writer the kernel held
    /// longest, not the one with the worst probe stall, and says how many of
    /// the group's traced runs were paused at all.
    #[test]
    fn the_dirty_limit_reads_the_most_throttled_run_and_counts_every_run() {
        let traced = |mut r: Record, pauses: u64| {
            let pause = crate::schema::events::Pauses { count: pauses, total_ms: 50.0 * pauses as f64, max_ms: 50.0 };
            r.kernel_events = Some(crate::schema::events::KernelEvents {
                enabled: vec!["writeback:balance_dirty_pages".into()],
                dirty_pauses: crate::schema::events::Phased { writing: pause, ..Default::default() },
                ..Default::default()
            });
            r
        };
        // The worst stall is run 0; the writer was paused longest in run 2; run 1 never.
        let records = [
            traced(write_run("s0", 0, "dirty40", 20.0, 4100.0, 380), 2),
            traced(write_run("s1", 0, "dirty40", 20.0, 900.0, 380), 0),
            traced(write_run("s2", 0, "dirty40", 20.0, 800.0, 380), 30),
        ];
        let found = find(&records);
        let dirty = found.iter().find(|f| f.rule == "dirty-limit").unwrap();
        assert_eq!(dirty.record.as_deref(), Some("s2:0"), "{dirty:?}");
        assert!(dirty.sentence.contains("paused writers 30 times, 1500 ms in all"), "{}", dirty.sentence);
        assert!(
            dirty.sentence.contains("over the group's 3 traced runs the kernel paused writers in 2 (1600 ms in all)"),
            "{}",
            dirty.sentence
        );
        let stall = found.iter().find(|f| f.rule == "stall").unwrap();
        assert_eq!(stall.record.as_deref(), Some("s0:0"), "the stall is still the worst stall's");
    }

    #[test]
    fn markdown_lists_each_finding_with_its_record() {
        let found = find(&[write_run("b1", 0, "dirty40", 20.0, 4100.0, 380)]);
        let md = markdown(&found);
        // One row: its dimensions but the first say nothing (said once above the table).
        assert!(md.starts_with("\n## Findings\n\n- **stall** (dirty40 · seqwrite): the machine"), "{md}");
        assert_eq!(md.matches("[record b1:0]").count(), 4);
        assert_eq!(markdown(&[]), "");
    }
}
