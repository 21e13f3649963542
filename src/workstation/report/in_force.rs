//! The settings in force a run was measured under, as its record read them
//! (the vm sysctls a plan variant may set, the target queue's scheduler and
//! settings), and how a group's runs differ in them. Runs of one group are
//! pooled into one row's statistics only where these agree: a variant whose
//! restore failed once left the next one running under its dirty_bytes, and
//! the report grouped runs at 20 % and at 4 MiB as "each alike".

use super::Row;
use super::findings::{Finding, SETTINGS_DIFFER};
use crate::schema::variant::{QUEUE_SETTINGS, VM_SETTINGS, not_in_force};
use crate::workstation::glance::Glance;
use std::collections::BTreeMap;

/// The dirty limits, each a ratio or a byte limit, whichever is in force.
const LIMITS: [(&str, &str, &str); 2] = [
    ("the dirty limit", "dirty_ratio", "dirty_bytes"),
    ("the background dirty limit", "dirty_background_ratio", "dirty_background_bytes"),
];

/// "the dirty limit" → "vm.dirty_bytes=4194304", "queue.scheduler" →
/// "mq-deadline": what the record has of each. A dirty limit is its ratio
/// or its byte limit, whichever is in force (the other reads 0); a setting
/// the record lacks (older records, older kernels) is left out, so it never
/// counts as a difference.
pub fn of(r: &Glance) -> BTreeMap<String, String> {
    let vm: BTreeMap<String, u64> =
        r.vm.iter()
            .filter(|(k, _)| VM_SETTINGS.contains(&k.as_ref()))
            .filter_map(|(k, v)| Some((k.to_string(), u64::try_from((*v)?).ok()?)))
            .collect();
    let paired = |k: &str| LIMITS.iter().any(|(_, ratio, bytes)| k == *ratio || k == *bytes);
    let mut out: BTreeMap<String, String> =
        vm.iter().filter(|(k, _)| !paired(k)).map(|(k, v)| (format!("vm.{k}"), v.to_string())).collect();
    for (limit, ratio, bytes) in LIMITS {
        if let Some(in_force) = [bytes, ratio].into_iter().find(|k| vm.contains_key(*k) && !not_in_force(&vm, k)) {
            out.insert(limit.to_string(), format!("vm.{in_force}={}", vm[in_force]));
        }
    }
    if let Some(s) = &r.storage.scheduler {
        out.insert("queue.scheduler".into(), s.to_string());
    }
    for name in QUEUE_SETTINGS.iter().filter(|n| **n != "scheduler") {
        if let Some(v) = r.storage.queue.get(format!("queue/{name}").as_str()) {
            out.insert(format!("queue.{name}"), v.to_string());
        }
    }
    out
}

/// A group's runs, setting by setting: every value each setting had.
#[derive(Debug, Default)]
pub struct Seen(BTreeMap<String, Vec<(String, usize)>>);

impl Seen {
    /// One run's settings (`of`), counted by value.
    pub fn add(&mut self, settings: BTreeMap<String, String>) {
        for (key, value) in settings {
            let values = self.0.entry(key).or_default();
            match values.iter_mut().find(|(v, _)| *v == value) {
                Some((_, n)) => *n += 1,
                None => values.push((value, 1)),
            }
        }
    }

    /// The settings the runs did not share, each with its values and how
    /// many runs had each: "vm.dirty_bytes 4194304 in 1 run, 0 in 1" — where
    /// a run lacks the setting it is not counted against the others.
    pub fn differing(&self) -> Vec<String> {
        self.0
            .iter()
            .filter(|(_, values)| values.len() > 1)
            .map(|(key, values)| {
                let each: Vec<String> = values
                    .iter()
                    .enumerate()
                    .map(|(i, (v, n))| match (i, n) {
                        (0, 1) => format!("{v} in 1 run"),
                        (0, n) => format!("{v} in {n} runs"),
                        (_, n) => format!("{v} in {n}"),
                    })
                    .collect();
                format!("{key} {}", each.join(", "))
            })
            .collect()
    }
}

/// What a row whose runs differ in the settings in force says instead of
/// being compared; None where they agree.
pub fn finding(row: &Row, subject: String) -> Option<Finding> {
    if row.settings_differ.is_empty() {
        return None;
    }
    Some(Finding {
        rule: SETTINGS_DIFFER,
        subject,
        sentence: format!(
            "its runs were measured under different settings in force ({}): they are not one sample, so this row is compared with nothing. Group by the setting to see each (--by with its path in the record, e.g. `--by kernel,vm.dirty_bytes`), or run the plan again: since 2026-12-07 a variant whose settings cannot be put back as found is not run",
            row.settings_differ.join("; ")
        ),
        evidence: row.settings_differ.iter().map(|d| format!("vm and storage of its records: {d}")).collect(),
        record: None,
        names_cause: false,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::record::Record;

    fn record(vm: &[(&str, i64)], scheduler: &str, max_sectors_kb: Option<&str>) -> Record {
        let mut r = Record::blank("b", 0);
        r.vm = vm.iter().map(|(k, v)| (k.to_string(), Some(*v))).collect();
        r.storage.scheduler = Some(scheduler.into());
        if let Some(kb) = max_sectors_kb {
            r.storage.queue.insert("queue/max_sectors_kb".into(), kb.into());
        }
        r
    }

    /// The case: `asfound`'s second run still under tinydirty's 4 MiB.
    #[test]
    fn runs_under_another_dirty_limit_are_told_apart_by_the_one_in_force() {
        let found = record(&[("dirty_ratio", 20), ("dirty_bytes", 0), ("swappiness", 60)], "mq-deadline", Some("1280"));
        let leaked = record(&[("dirty_ratio", 0), ("dirty_bytes", 4194304), ("swappiness", 60)], "mq-deadline", None);
        let settings = of(&Glance::of(&found));
        assert_eq!(settings["the dirty limit"], "vm.dirty_ratio=20", "dirty_bytes 0 is not in force");
        assert_eq!(settings["vm.swappiness"], "60");
        assert_eq!(settings["queue.max_sectors_kb"], "1280");
        let mut seen = Seen::default();
        for r in [&found, &found, &leaked] {
            seen.add(of(&Glance::of(r)));
        }
        // max_sectors_kb: missing from one record, not a difference; swappiness alike.
        assert_eq!(seen.differing(), ["the dirty limit vm.dirty_ratio=20 in 2 runs, vm.dirty_bytes=4194304 in 1"]);
        let mut alike = Seen::default();
        alike.add(of(&Glance::of(&found)));
        alike.add(of(&Glance::of(&found)));
        assert!(alike.differing().is_empty());
    }
}
