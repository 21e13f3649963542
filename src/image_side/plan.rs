//! Plans: which workloads to run, how often, and how to watch them.
//!
//! A plan is JSON (format in docs/plans.md). The built-in plans live as files
//! in `image/plans/` — the same files the image builder puts in the initramfs —
//! and are compiled in, so `--plan quick` works anywhere.

use crate::image_side::variant::Variant;
use crate::image_side::workload::{Footprint, WorkloadSpec};
use serde::{Deserialize, Serialize};
use std::path::Path;

/// Built-in plans: (name, JSON text), everywhere.
const SHIPPED: [(&str, &str); 7] = [
    ("seed", include_str!("../../image/plans/seed.json")),
    ("quick", include_str!("../../image/plans/quick.json")),
    ("dd", include_str!("../../image/plans/dd.json")),
    ("sort", include_str!("../../image/plans/sort.json")),
    ("sweep", include_str!("../../image/plans/sweep.json")),
    ("seed-sweep", include_str!("../../image/plans/seed-sweep.json")),
    ("demo", include_str!("../../image/plans/demo.json")),
];

/// The demo's plans, built into the workstation's binary only: /init reads
/// them, as every plan, from the image's /etc/bootmark/plans (the common
/// initramfs has no room to spare for them twice).
#[cfg(feature = "workstation")]
const DEMO: [(&str, &str); 2] = [
    ("generations", include_str!("../../image/plans/generations.json")),
    ("requests", include_str!("../../image/plans/requests.json")),
];
#[cfg(not(feature = "workstation"))]
const DEMO: [(&str, &str); 0] = [];

/// Every built-in plan: (name, JSON text).
pub fn builtin() -> impl Iterator<Item = (&'static str, &'static str)> {
    SHIPPED.iter().chain(DEMO.iter()).copied()
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Plan {
    pub name: String,
    #[serde(default)]
    pub description: String,
    /// How many times the whole workload list runs.
    #[serde(default = "one")]
    pub repeat: u32,
    #[serde(default)]
    pub probe: ProbeSettings,
    /// Timeline sampling period.
    #[serde(default = "default_sample_interval")]
    pub sample_interval_ms: u64,
    /// Watchdog for each workload: past it the workload is killed and
    /// reported with status "timeout" and its partial figures.
    #[serde(default = "default_deadline")]
    pub workload_deadline_s: f64,
    pub workloads: Vec<WorkloadSpec>,
    /// A sweep: the workloads run under each of these settings in turn, in
    /// every repetition (see `variant`). None: the kernel's settings as found.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub variants: Vec<Variant>,
    /// The variants' order reversed in every other repetition (A B, B A, A
    /// B…), so that no variant always runs first after the boot or after
    /// the other: a same-boot comparison (`bootmark.set=+NAME:`) sets it.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub alternate: bool,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ProbeSettings {
    pub enabled: bool,
    pub interval_ms: u64,
    /// Quiet time measured before each workload, the probe's baseline.
    pub baseline_s: f64,
    /// How long the probe keeps watching after a workload for recovery.
    pub recovery_deadline_s: f64,
}

impl Default for ProbeSettings {
    fn default() -> Self {
        ProbeSettings { enabled: true, interval_ms: 100, baseline_s: 2.0, recovery_deadline_s: 30.0 }
    }
}

fn one() -> u32 {
    1
}
fn default_sample_interval() -> u64 {
    250
}
fn default_deadline() -> f64 {
    3600.0
}

impl Plan {
    /// A built-in plan by name, or a JSON plan file by path.
    pub fn load(name_or_path: &str) -> Result<Plan, String> {
        const MAX_PLAN_BYTES: u64 = 1 << 20;
        if let Some((_, text)) = builtin().find(|(n, _)| *n == name_or_path) {
            return Plan::from_json(text).map_err(|e| format!("built-in plan '{name_or_path}' is broken: {e}"));
        }
        let path = Path::new(name_or_path);
        if !path.exists() {
            return Err(format!(
                "unknown plan '{name_or_path}': not a built-in plan ({}) and no such file{}; `bootmark plans` lists them",
                builtin_names().join(", "),
                crate::suggest::did_you_mean(name_or_path, &builtin_names())
            ));
        }
        // Only a regular file of sane size: a device or a FIFO is never read whole.
        let meta = std::fs::metadata(path).map_err(|e| format!("cannot read plan file {}: {e}", path.display()))?;
        if !meta.is_file() || meta.len() > MAX_PLAN_BYTES {
            return Err(format!("plan file {} is not a regular file of at most 1 MiB", path.display()));
        }
        let text =
            std::fs::read_to_string(path).map_err(|e| format!("cannot read plan file {}: {e}", path.display()))?;
        Plan::from_json(&text).map_err(|e| format!("plan file {}: {e}", path.display()))
    }

    pub fn from_json(text: &str) -> Result<Plan, String> {
        let plan: Plan = serde_json::from_str(text).map_err(|e| format!("not a valid plan: {e}"))?;
        plan.validate()?;
        Ok(plan)
    }

    pub fn validate(&self) -> Result<(), String> {
        if self.workloads.is_empty() {
            return Err("the plan has no workloads".into());
        }
        if self.repeat == 0 || self.repeat > 1000 {
            return Err(format!("repeat must be between 1 and 1000, not {}", self.repeat));
        }
        if self.probe.interval_ms == 0 || self.sample_interval_ms == 0 {
            return Err("probe.interval_ms and sample_interval_ms must be above 0".into());
        }
        // Bounded so that deadline arithmetic in nanoseconds cannot overflow.
        let within = |v: f64, min: f64, max: f64| v.is_finite() && v >= min && v <= max;
        if !within(self.workload_deadline_s, 0.001, MAX_DEADLINE_S)
            || !within(self.probe.baseline_s, 0.0, 3600.0)
            || !within(self.probe.recovery_deadline_s, 0.0, 86_400.0)
        {
            return Err(format!(
                "workload_deadline_s must be above 0 and at most {MAX_DEADLINE_S} (a week); probe.baseline_s 0 to 3600, probe.recovery_deadline_s 0 to 86400"
            ));
        }
        for (i, v) in self.variants.iter().enumerate() {
            v.validate()?;
            if self.variants[..i].iter().any(|w| w.name == v.name) {
                return Err(format!("two variants are named '{}'", v.name));
            }
        }
        self.workloads.iter().try_for_each(WorkloadSpec::validate)
    }

    /// How many workload runs the plan asks for: every repetition × variant
    /// × workload (what a boot's run record is checked against).
    pub fn runs(&self) -> u32 {
        let variants = self.variants.len().max(1) as u32;
        self.repeat.saturating_mul(variants).saturating_mul(self.workloads.len() as u32)
    }

    /// How long /init may spend on this plan, its own watchdogs included:
    /// (one workload run at its longest — its watchdog, the probe's quiet
    /// baseline and recovery wait, and a minute between runs for settings,
    /// remounting and records —, all the runs but never more than the
    /// whole-run watchdog `timeout_s` and a minute). `cargo xtask lava` and
    /// `bootmark lab` give a boot this long after the kernel starts.
    pub fn time_budget_s(&self, timeout_s: f64) -> (f64, f64) {
        const BETWEEN_RUNS_S: f64 = 60.0;
        let per_run =
            self.workload_deadline_s + self.probe.baseline_s + self.probe.recovery_deadline_s + BETWEEN_RUNS_S;
        (per_run, (per_run * self.runs() as f64).min(timeout_s + BETWEEN_RUNS_S))
    }

    /// Disk space the plan needs at its peak: files kept for the whole run
    /// (each name once, at its largest) plus the largest transient need,
    /// plus the probe's few files.
    pub fn space_needed(&self, mem_total: u64) -> u64 {
        let mut kept: Vec<(String, u64)> = Vec::new();
        let mut transient = 0;
        for w in &self.workloads {
            let Footprint { transient: t, kept: k } = w.footprint(mem_total);
            transient = transient.max(t);
            for (name, size) in k {
                match kept.iter_mut().find(|(n, _)| *n == name) {
                    Some(entry) => entry.1 = entry.1.max(size),
                    None => kept.push((name, size)),
                }
            }
        }
        // Saturating: a plan of absurd sizes must need "more than any disk", not wrap to little.
        kept.iter().fold(transient, |a, (_, s)| a.saturating_add(*s)).saturating_add(1 << 20)
    }
}

/// The longest a workload may be given (a week), in seconds.
pub const MAX_DEADLINE_S: f64 = 604_800.0;

pub fn builtin_names() -> Vec<&'static str> {
    builtin().map(|(n, _)| n).collect()
}

/// The plans compiled into /init itself (the demo's are not): /init finds
/// them before looking in the image's /etc/bootmark/plans, so the image
/// builder need not carry them as files.
pub fn in_init() -> impl Iterator<Item = &'static str> {
    SHIPPED.iter().map(|(n, _)| *n)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// docs/plans.md stays true: its example is a valid plan whose settings
    /// are the defaults it claims, and its workload table lists every
    /// workload with exactly the params that workload takes.
    #[test]
    fn the_plan_docs_match_the_plan_types() {
        let docs = include_str!("../../docs/plans.md");
        let example = docs.split("```json\n").nth(1).unwrap().split("```").next().unwrap();
        let documented = Plan::from_json(example).expect("the docs' example is a valid plan");
        let minimal = Plan::from_json(r#"{"name": "mine", "workloads": [{"name": "idle"}]}"#).unwrap();
        let settings = |p: &Plan| (p.repeat, p.probe.clone(), p.sample_interval_ms, p.workload_deadline_s);
        assert_eq!(settings(&documented), settings(&minimal), "the example shows the defaults");
        // The sweep section's example and field table name what a Variant takes.
        let sweep = docs.split("## Sweeps").nth(1).unwrap();
        let example = sweep.split("```\n").nth(1).unwrap();
        let object: serde_json::Value = serde_json::from_str(&format!("{{{example}}}")).unwrap();
        let variants: Vec<Variant> = serde_json::from_value(object["variants"].clone()).unwrap();
        variants.iter().for_each(|v| v.validate().unwrap());
        for setting in crate::schema::variant::VM_SETTINGS.iter().chain(&crate::schema::variant::QUEUE_SETTINGS) {
            assert!(sweep.contains(&format!("`{setting}`")), "docs/plans.md does not name {setting}");
        }

        let rows: Vec<(&str, &str)> = docs
            .split("## Sweeps")
            .next()
            .unwrap()
            .lines()
            .filter(|l| l.starts_with("| `"))
            .filter_map(|l| l.trim_matches('|').split_once(" | "))
            .map(|(name, params)| (name.trim().trim_matches('`'), params))
            .collect();
        let names: Vec<&str> = rows.iter().map(|(n, _)| *n).collect();
        assert_eq!(names, crate::image_side::workload::NAMES);
        for (name, params) in rows {
            // The first `word` of each comma-separated part is a param's name.
            let mut listed: Vec<&str> =
                params.split(", ").filter_map(|part| part.split('`').nth(1)).collect::<Vec<_>>();
            listed.sort();
            // instances has one param without a default: the workload it repeats.
            let base = match name {
                "instances" => serde_json::json!({"workload": {"name": "idle"}}),
                "command" => serde_json::json!({"program": "true"}),
                "fio" => serde_json::json!({"job": "[x]"}),
                _ => serde_json::json!({}),
            };
            let spec = WorkloadSpec::from_parts(name, base.clone()).unwrap();
            let defaults: Vec<String> = spec.params_json().as_object().unwrap().keys().cloned().collect();
            for p in &defaults {
                assert!(listed.contains(&p.as_str()), "docs/plans.md does not list {name}'s param {p}");
            }
            // Optional params without a default (sort's size) are not in
            // params_json: the workload must still take them (unknown ones are errors).
            for p in listed.iter().filter(|p| !defaults.iter().any(|d| d == *p)) {
                let mut given = base.clone();
                given[*p] = match *p {
                    "cwd" | "job" | "job_file" => serde_json::json!("/a/string"),
                    _ => serde_json::json!(1048576),
                };
                assert!(WorkloadSpec::from_parts(name, given).is_ok(), "docs/plans.md lists {name}'s param {p}");
            }
        }
    }

    #[test]
    fn every_builtin_plan_parses_and_validates() {
        for (name, _) in builtin() {
            let p = Plan::load(name).unwrap();
            assert_eq!(p.name, name);
            assert!(!p.description.is_empty(), "{name} needs a description for `bootmark plans`");
        }
    }

    #[test]
    fn seed_plan_is_the_seed_experiment() {
        let p = Plan::load("seed").unwrap();
        let names: Vec<&str> = p.workloads.iter().map(|w| w.name()).collect();
        assert_eq!(names, ["manyfiles", "seqwrite", "seqread", "instances"]);
        match &p.workloads[0] {
            WorkloadSpec::Manyfiles(m) => assert_eq!((m.files, m.file_size.0), (1000, 1 << 20)),
            other => panic!("{other:?}"),
        }
        match &p.workloads[3] {
            WorkloadSpec::Instances(i) => assert_eq!(i.count, 5),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn bad_plans_are_rejected_with_the_reason() {
        let err = |t: &str| Plan::from_json(t).unwrap_err();
        assert!(err("{").contains("not a valid plan"));
        assert!(err(r#"{"name":"x","workloads":[{"name":"nope"}]}"#).contains("unknown workload 'nope'"));
        assert!(
            err(r#"{"name":"x","workloads":[{"name":"seqwrite","params":{"sise":1}}]}"#)
                .contains("unknown field `sise`")
        );
        assert!(err(r#"{"name":"x","workloads":[{"name":"seqwrite","params":{"size":"1.5G"}}]}"#).contains("size"));
        assert!(err(r#"{"name":"x","workloads":[]}"#).contains("no workloads"));
        assert!(err(r#"{"name":"x","workloads":[{"name":"seqwrite","params":{"block":0}}]}"#).contains("block"));
        assert!(
            err(r#"{"name":"x","workloads":[{"name":"seqwrite","params":{"file":"../etc/passwd"}}]}"#)
                .contains("plain file name")
        );
        let nested = r#"{"name":"x","workloads":[{"name":"instances","params":{"workload":{"name":"instances","params":{"workload":{"name":"idle"}}}}}]}"#;
        assert!(err(nested).contains("cannot contain instances"));
        assert!(Plan::load("no-such-plan").unwrap_err().contains("unknown plan"));
        assert!(err(r#"{"name":"x","workload_deadline_s":1e12,"workloads":[{"name":"idle"}]}"#).contains("a week"));
        assert!(Plan::load("/dev/zero").unwrap_err().contains("not a regular file"));
    }

    #[test]
    fn absurd_sizes_need_more_than_any_disk_instead_of_wrapping() {
        let p = Plan::from_json(
            r#"{"name":"x","workloads":[{"name":"manyfiles","params":{"files":16384,"file_size":"1024TiB"}}]}"#,
        )
        .unwrap();
        assert_eq!(p.space_needed(0), u64::MAX);
        let p = Plan::from_json(
            r#"{"name":"x","workloads":[{"name":"instances","params":{"count":64,"workload":{"name":"manyfiles","params":{"files":100000,"file_size":"1024TiB"}}}}]}"#,
        )
        .unwrap();
        assert_eq!(p.space_needed(0), u64::MAX);
    }

    #[test]
    fn params_default_and_serialize_fully() {
        let p = Plan::from_json(r#"{"name":"x","workloads":[{"name":"seqwrite"}]}"#).unwrap();
        let v = p.workloads[0].params_json();
        assert_eq!(v["size"], 1u64 << 30);
        assert_eq!(v["block"], 16384);
        assert_eq!(v["sync"], "end");
    }

    #[test]
    fn space_counts_kept_files_once() {
        let p = Plan::from_json(
            r#"{"name":"x","workloads":[
              {"name":"seqwrite","params":{"size":"10MiB"}},
              {"name":"seqread","params":{"size":"10MiB"}},
              {"name":"manyfiles","params":{"files":4,"file_size":"1MiB"}}]}"#,
        )
        .unwrap();
        assert_eq!(p.space_needed(0), (10 << 20) + (4 << 20) + (1 << 20));
    }
}
