//! The bisect's boots on `bootmark lab`'s servers: each boot is a lab
//! step (the boot pointed at the candidate's entry, the power cycled, the
//! console followed to the run record or the entry's deadline), its log
//! and records kept in the bisect's directory, and the metric read from
//! the records it wrote.

use super::metric::Metric;
use super::session::{Lab, Measured};
use crate::schema::record::{self, Record};
use crate::workstation::lab::ImageEntries;
use crate::workstation::lab::session::Servers;
use crate::workstation::lab::state::Status;
use crate::workstation::output::say;
use std::path::{Path, PathBuf};

/// The lab's servers a bisect boots, prepared (server `i` of the bisect is `servers`' `i`).
pub struct OnLab<'a> {
    pub servers: Servers<'a>,
    pub image: &'a ImageEntries,
    pub metric: Metric,
    pub dir: PathBuf,
    /// How its lines begin: "bisect" or "confirm" (`State::kind`).
    pub kind: &'static str,
}

impl Lab for OnLab<'_> {
    fn boot(
        &self,
        server: usize,
        (candidate, set): (&str, Option<&str>),
        id: &str,
    ) -> Result<Option<Measured>, String> {
        let machine = self.servers.server(server);
        let entry = self
            .image
            .entries
            .iter()
            .find(|e| e.label == candidate)
            .ok_or_else(|| format!("candidate {candidate} is not an entry of the image"))?;
        let deadline_s = crate::workstation::lab::step_deadline_s(machine, self.image, entry, set)?;
        let step = format!("{}/{id}", machine.name);
        let with = set.map_or(String::new(), |s| format!(" with {s}"));
        say(&format!("{}: {step}: booting {candidate} ({}){with}; deadline {deadline_s} s", self.kind, entry.title));
        let Some(outcome) = self.servers.boot(server, (candidate, set), &step, deadline_s)? else { return Ok(None) };
        let records = read_records(&self.dir.join(&outcome.records))?;
        let run_id = outcome.run_ids.first().cloned();
        let hardware = records.first().map(hardware);
        // A failed step measured nothing of the candidate: no record by its
        // deadline, or the records of another entry or other settings than
        // the step's (kept in its files, never counted for this candidate).
        // A boot whose settings were not all in force measured something else
        // than its candidate (a value the kernel refused: max_sectors_kb past
        // the device's limit, a scheduler it lacks): no value of it.
        let refused = set.and_then(|_| not_applied(&records));
        let value = match (outcome.status, &refused) {
            (Status::Failed, _) | (_, Some(_)) => None,
            _ => run_id.as_ref().and_then(|id| self.metric.per_boot(&records).get(id).copied()),
        };
        let why = match (&value, outcome.status) {
            (Some(_), _) => None,
            (None, _) if refused.is_some() => refused,
            (None, Status::Failed) => Some(outcome.why.unwrap_or_else(|| "the boot failed".into())),
            (None, _) if records.is_empty() => Some("the boot wrote no result record".into()),
            (None, _) => {
                let runs: Vec<&Record> = records.iter().filter(|r| r.workload.name == self.metric.workload).collect();
                if !runs.is_empty() && runs.iter().all(|r| r.status != record::Status::Ok) {
                    Some(format!("every run of {} in this boot failed", self.metric.workload))
                } else {
                    // Ok runs without the figure, or no run of the workload at all: the next
                    // boot will not have it either, so the bisect stops here and says which.
                    self.metric.check(&records)?;
                    Some(format!("no {} in this boot's records", self.metric.workload))
                }
            }
        };
        let hung = outcome.status == Status::Failed && outcome.run_ids.is_empty();
        Ok(Some(Measured { run_id, value, why, hardware, hung }))
    }
}

/// Why a boot's settings were not all in force: the first record whose
/// variant says a setting was not applied (the kernel refused the value, or
/// lacks the setting), as "queue.max_sectors_kb: writing 1280 … failed: Invalid
/// argument"; None when every record ran under all it asked.
pub fn not_applied(records: &[Record]) -> Option<String> {
    records.iter().filter_map(|r| r.variant.as_ref()).find_map(|v| {
        let (key, why) = v.not_applied.iter().next()?;
        Some(format!(
            "the boot's settings were not all in force ({key}: {why}): it measured something else than its candidate"
        ))
    })
}

/// The result records of one boot's records file (its run record aside).
pub(super) fn read_records(path: &Path) -> Result<Vec<Record>, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    let mut out = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let value: serde_json::Value = match serde_json::from_str(line) {
            Ok(v) => v,
            Err(e) => return Err(format!("{}:{}: not JSON: {e}", path.display(), n + 1)),
        };
        if value.get("schema").and_then(|s| s.as_str()) != Some(record::SCHEMA) {
            continue;
        }
        out.push(serde_json::from_value(value).map_err(|e| format!("{}:{}: {e}", path.display(), n + 1))?);
    }
    Ok(out)
}

/// The machine a record was measured on, as far as a bisect's servers must
/// agree: CPU, memory, board, the target disk. Not the host name or the
/// asset tag, which name one machine among alike ones.
pub fn hardware(r: &Record) -> String {
    let h = &r.host;
    let disk = r.storage.device.as_ref().map_or("?".to_string(), |d| {
        format!(
            "{} {}",
            d.model.as_deref().unwrap_or("?"),
            d.size_bytes.map_or("?".to_string(), |b| format!("{} MiB", b >> 20))
        )
    });
    format!(
        "{} ×{}, {} MiB, {} {}, disk {disk}",
        h.cpu_model.as_deref().unwrap_or("?"),
        h.cpus,
        h.mem_total_kib.map_or("?".to_string(), |k| (k >> 10).to_string()),
        h.dmi_vendor.as_deref().unwrap_or("?"),
        h.dmi_product.as_deref().unwrap_or("?"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A value the kernel refused (6.1 on the dl140's disk: max_sectors_kb
    /// 1280 past its max_hw_sectors_kb of 128) leaves the boot without a value.
    #[test]
    fn a_boot_whose_setting_was_refused_has_no_value() {
        let mut r = Record::blank("20261207-000000-0000", 0);
        assert_eq!(not_applied(std::slice::from_ref(&r)), None);
        let mut v = crate::schema::variant::Applied { name: "changed".into(), ..Default::default() };
        v.asked.insert("queue.max_sectors_kb".into(), "1280".into());
        r.variant = Some(v.clone());
        assert_eq!(not_applied(std::slice::from_ref(&r)), None, "asked and applied");
        v.not_applied.insert(
            "queue.max_sectors_kb".into(),
            "writing 1280 to /sys/block/sda/queue/max_sectors_kb failed: Invalid argument".into(),
        );
        r.variant = Some(v);
        let why = not_applied(&[r]).unwrap();
        assert!(why.contains("(queue.max_sectors_kb: writing 1280"), "{why}");
    }
}
