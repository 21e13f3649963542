//! One group of the report (a row of the table), built one record at a
//! time: only the figures its summaries need, the notes, the boots it came
//! from, and what its findings need (`findings::Evidence`, which keeps a
//! whole record only when a rule would use it). A fleet's records stream
//! through in memory that grows with groups × runs, not with the records.

use super::findings::Evidence;
use super::fio::{FioRow, FioRun};
use super::{Row, in_force, stats};
use crate::schema::record::Status;
use crate::workstation::glance::Glance;
use serde_json::Value;
use std::collections::HashSet;
use std::hash::{Hash, Hasher};

/// The figures of a group's ok runs, in the order seen.
#[derive(Default)]
struct Figures {
    real: Vec<f64>,
    user: Vec<f64>,
    sys: Vec<f64>,
    durable: Vec<f64>,
    throughput: Vec<f64>,
    probe_p99: Vec<f64>,
    /// The probe's ticks per run: what its p99 is of.
    probe_ticks: Vec<f64>,
    read_p50: Vec<f64>,
    /// The median time the device held a read, per traced run (block tracepoints).
    device_read_p50: Vec<f64>,
    queued_read_p50: Vec<f64>,
    stalls: Vec<f64>,
    recovery: Vec<f64>,
    /// fio's figures per job and direction ("reader read"), a run each.
    fio: Vec<(String, Vec<FioRun>)>,
    /// The average write request the device got, KiB (diskstats' sectors per write).
    write_request_kib: Vec<f64>,
    /// The target queue's max_sectors_kb of each run, each value once.
    max_sectors_kb: Vec<String>,
    /// Each ok run's boot (its run id, hashed) and whether it stalled over 1 s,
    /// beside `real`: the boot is the unit of a comparison across boots.
    boot_of: Vec<u64>,
    stalled: Vec<bool>,
}

pub(super) struct Group {
    /// The --by values (with the variant first while the default grouping is undecided).
    pub key: Vec<String>,
    pub workload: String,
    /// The workload's parameters as JSON text.
    pub params: String,
    n: usize,
    not_ok: usize,
    /// "status: error" of each failed run, once per distinct text, with a count.
    failures: Vec<(String, usize)>,
    /// Notes of ok runs, each once.
    notes: Vec<String>,
    figures: Figures,
    /// The worst probe wait of every run, failed ones too.
    max_stall_ms: Option<f64>,
    /// Distinct boots (run ids, hashed).
    boots: HashSet<u64>,
    /// The settings in force of its ok runs: pooled only where they agree.
    settings: in_force::Seen,
    pub evidence: Evidence,
}

impl Group {
    pub fn new(key: Vec<String>, workload: String, params: String) -> Group {
        Group {
            key,
            workload,
            params,
            n: 0,
            not_ok: 0,
            failures: Vec::new(),
            notes: Vec::new(),
            figures: Figures::default(),
            max_stall_ms: None,
            boots: HashSet::new(),
            settings: in_force::Seen::default(),
            evidence: Evidence::default(),
        }
    }

    /// A record of the group; an error when it had to be read whole for the
    /// findings and did not parse (its figures are counted all the same).
    pub fn add(&mut self, r: &Glance) -> Result<(), String> {
        self.n += 1;
        let mut h = std::hash::DefaultHasher::new();
        r.run_id.hash(&mut h);
        let boot = h.finish();
        self.boots.insert(boot);
        let probe = r.responsiveness.as_ref();
        if let Some(p) = probe {
            self.max_stall_ms = Some(self.max_stall_ms.map_or(p.max_ms, |m| m.max(p.max_ms)));
        }
        if r.status != Status::Ok {
            self.not_ok += 1;
            let text = format!("{}: {}", r.status.name(), r.error.as_deref().unwrap_or(""));
            match self.failures.iter_mut().find(|(t, _)| *t == text) {
                Some((_, count)) => *count += 1,
                None => self.failures.push((text, 1)),
            }
            return Ok(());
        }
        for n in &r.notes {
            if !self.notes.iter().any(|kept| kept == n) {
                self.notes.push(n.to_string());
            }
        }
        self.settings.add(in_force::of(r));
        let f = &mut self.figures;
        f.real.push(r.times.wall_s);
        f.boot_of.push(boot);
        f.stalled.push(probe.is_some_and(|p| p.max_ms >= 1000.0));
        f.user.push(r.times.user_s);
        f.sys.push(r.times.sys_s);
        f.durable.extend(r.times.durable_s);
        f.throughput.push(r.throughput_mib_s);
        if let Some(p) = probe {
            f.probe_p99.push(p.p99_ms);
            f.probe_ticks.push(p.samples as f64);
            f.read_p50.push(p.read.p50_ms);
            f.stalls.push(p.stalls_over_1s as f64);
            f.recovery.extend(p.recovery_s);
        }
        f.device_read_p50.extend(r.device_read_p50_ms());
        f.queued_read_p50.extend(r.queued_read_p50_ms());
        if let Some(d) = r.counters.disk_delta.as_ref().filter(|d| d.writes > 0) {
            f.write_request_kib.push(d.sectors_written as f64 / 2.0 / d.writes as f64);
        }
        for job in &r.details.fio {
            for (dir, d) in [("read", &job.read), ("write", &job.write)] {
                let Some(d) = d else { continue };
                let stream = format!("{} {dir}", job.name);
                let at = match f.fio.iter().position(|(s, _)| *s == stream) {
                    Some(i) => i,
                    None => {
                        f.fio.push((stream, Vec::new()));
                        f.fio.len() - 1
                    }
                };
                let mib_s = d.bw_bytes / (1 << 20) as f64;
                f.fio[at].1.push(FioRun { boot, mib_s, iops: d.iops, clat_p99_ms: d.clat.p99_ms });
            }
        }
        if let Some(kb) = r.storage.queue.get("queue/max_sectors_kb")
            && !f.max_sectors_kb.iter().any(|k| k == kb)
        {
            f.max_sectors_kb.push(kb.to_string());
        }
        self.evidence.offer(r)
    }

    /// How many boots the group's runs come from.
    pub fn boots(&self) -> usize {
        self.boots.len()
    }

    /// The table's row (baseline and speedup are set once all rows exist).
    pub fn row(&self) -> Row {
        let f = &self.figures;
        let mut notes: Vec<String> = self
            .failures
            .iter()
            .map(|(text, count)| if *count > 1 { format!("{text} (×{count})") } else { text.clone() })
            .collect();
        for n in &self.notes {
            if !notes.contains(n) {
                notes.push(n.clone());
            }
        }
        Row {
            key: self.key.clone(),
            workload: self.workload.clone(),
            name: self.workload.clone(),
            params: serde_json::from_str(&self.params).unwrap_or(Value::Null),
            n: self.n,
            not_ok: self.not_ok,
            real_s: stats::summarize(&f.real),
            real_runs: f.real.clone(),
            boots: per_boot(&f.boot_of, &f.real, &f.stalled),
            user_s: stats::summarize(&f.user),
            sys_s: stats::summarize(&f.sys),
            durable_s: stats::summarize(&f.durable),
            throughput_harmonic_mean: stats::harmonic_mean(&f.throughput),
            throughput_mib_s: stats::summarize(&f.throughput),
            probe_p99_ms: stats::summarize(&f.probe_p99),
            probe_ticks: stats::summarize(&f.probe_ticks),
            probe_read_p50_ms: stats::summarize(&f.read_p50),
            device_read_p50_ms: stats::summarize(&f.device_read_p50),
            queued_read_p50_ms: stats::summarize(&f.queued_read_p50),
            max_stall_ms: self.max_stall_ms,
            stalls_over_1s: stats::summarize(&f.stalls),
            recovery_s: stats::summarize(&f.recovery),
            write_request_kib: stats::summarize(&f.write_request_kib),
            settings_differ: self.settings.differing(),
            max_sectors_kb: f.max_sectors_kb.clone(),
            fio: f.fio.iter().map(|(stream, runs)| FioRow::of_runs(stream.clone(), runs.clone())).collect(),
            speedup: None,
            significant: false,
            baseline: false,
            notes,
        }
    }
}

/// Each boot's median real time and whether any of its runs stalled over
/// 1 s, boots in the order first seen.
fn per_boot(boot_of: &[u64], real: &[f64], stalled: &[bool]) -> Vec<(f64, bool)> {
    stats::boots_in_order(boot_of.iter().copied())
        .iter()
        .map(|boot| {
            let runs = || boot_of.iter().zip(real.iter().zip(stalled)).filter(|(b, _)| *b == boot);
            let times: Vec<f64> = runs().map(|(_, (t, _))| *t).collect();
            (stats::median(&times).unwrap_or(f64::NAN), runs().any(|(_, (_, s))| *s))
        })
        .collect()
}
