//! Test-case lines for LAVA, printed on the serial console next to the
//! framed records: one line per figure of every planned workload run, which
//! a LAVA `monitors` test action (`PATTERN`) turns into a test case with a
//! result and a measurement. The format is LAVA's own test-case signal, so a
//! lab that runs `bootmark run` inside a lava-test-shell gets the same cases.
//! docs/lava.md describes the cases; `cargo xtask lava` writes the jobs.
//!
//! Case ids are made of lowercase letters, digits and `_` only, so that the
//! id LAVA stores (it lowercases and turns `\W+` into `_`) is the id printed.

use crate::image_side::plan::Plan;
use crate::schema::record::{Record, Status};

/// The `monitors` pattern: named groups as LAVA wants them. Every line has
/// a measurement and units (LAVA's database refuses a case without units).
pub const PATTERN: &str = r"<LAVA_SIGNAL_TESTCASE TEST_CASE_ID=(?P<test_case_id>[a-z0-9_]+) RESULT=(?P<result>pass|fail|skip|unknown) MEASUREMENT=(?P<measurement>[-+0-9.eE]+) UNITS=(?P<units>[^\s>]+)>";
/// The line /init prints before anything else (monitors wait for it).
pub const START: &str = r"bootmark \S+: run \S+ starting as /init";
/// The line /init prints last, after every case and the run record.
pub const END: &str = r"bootmark: run \S+ done";
/// The case that says whether the whole boot was clean.
pub const RUN_CASE: &str = "bootmark_run";

/// One test-case line.
pub fn line(id: &str, result: &str, measurement: f64, units: &str) -> String {
    let m = if measurement.is_finite() { measurement } else { 0.0 };
    format!("<LAVA_SIGNAL_TESTCASE TEST_CASE_ID={id} RESULT={result} MEASUREMENT={m:.3} UNITS={units}>")
}

/// `Unprotected-Dirty5` → `unprotected_dirty5`: what LAVA would make of it.
fn id_part(s: &str) -> String {
    let mut out = String::new();
    for c in s.chars() {
        if c.is_ascii_alphanumeric() {
            out.push(c.to_ascii_lowercase());
        } else if !out.ends_with('_') {
            out.push('_');
        }
    }
    out.trim_matches('_').to_string()
}

/// The base id of one workload run: `[variant_]workload[_K][_rN]`, K when
/// the plan has the workload more than once, N when it repeats.
fn base_id(variant: Option<&str>, workload: &str, occurrence: Option<usize>, repetition: Option<u32>) -> String {
    let mut parts: Vec<String> = variant.map(id_part).into_iter().collect();
    parts.push(id_part(workload));
    parts.extend(occurrence.map(|k| k.to_string()));
    parts.extend(repetition.map(|r| format!("r{}", r + 1)));
    parts.join("_")
}

/// One planned workload run and whether its record came.
#[derive(Clone, Debug)]
struct Planned {
    id: String,
    workload: String,
    repetition: u32,
    variant: Option<String>,
    reported: bool,
}

/// The cases a boot owes LAVA: every workload run of its plan, in order.
#[derive(Clone, Debug, Default)]
pub struct Cases {
    planned: Vec<Planned>,
}

impl Cases {
    /// Every repetition × variant × workload of `plan` (the plan as the
    /// boot runs it: repeat and variants from the command line applied).
    pub fn planned(plan: &Plan) -> Cases {
        let variants: Vec<Option<&str>> = if plan.variants.is_empty() {
            vec![None]
        } else {
            plan.variants.iter().map(|v| Some(v.name.as_str())).collect()
        };
        let mut planned = Vec::new();
        for repetition in 0..plan.repeat {
            for variant in &variants {
                for (i, spec) in plan.workloads.iter().enumerate() {
                    let name = spec.name();
                    let same = plan.workloads.iter().filter(|w| w.name() == name).count();
                    let occurrence =
                        (same > 1).then(|| plan.workloads[..=i].iter().filter(|w| w.name() == name).count());
                    planned.push(Planned {
                        id: base_id(*variant, name, occurrence, (plan.repeat > 1).then_some(repetition)),
                        workload: name.to_string(),
                        repetition,
                        variant: variant.map(str::to_string),
                        reported: false,
                    });
                }
            }
        }
        Cases { planned }
    }

    /// The lines of one record: its planned case (the first not yet
    /// reported with the same workload, repetition and variant), or an id
    /// made from the record when it was not planned.
    pub fn lines_for(&mut self, record: &Record) -> Vec<String> {
        let variant = record.variant.as_ref().map(|v| v.name.as_str());
        let planned = self.planned.iter_mut().find(|p| {
            !p.reported
                && p.workload == record.workload.name
                && p.repetition == record.repetition
                && p.variant.as_deref() == variant
        });
        let id = match planned {
            Some(p) => {
                p.reported = true;
                p.id.clone()
            }
            None => base_id(variant, &record.workload.name, None, Some(record.repetition).filter(|r| *r > 0)),
        };
        record_lines(&id, record)
    }

    /// After the last record: `skip` for every planned run that never
    /// reported, then the run's own case (pass only if the boot ended well,
    /// every planned run reported and none failed). `records` is the count.
    pub fn finish(&mut self, boot_ok: bool, records: u32, failed: u32) -> Vec<String> {
        let mut out = Vec::new();
        for p in self.planned.iter_mut().filter(|p| !p.reported) {
            p.reported = true;
            out.push(line(&p.id, "skip", 0.0, "MiB/s"));
        }
        let clean = boot_ok && out.is_empty() && failed == 0;
        out.push(line(RUN_CASE, if clean { "pass" } else { "fail" }, f64::from(records), "records"));
        out
    }

    /// The ids of every planned case's main line (what a job must show).
    pub fn ids(&self) -> impl Iterator<Item = &str> {
        self.planned.iter().map(|p| p.id.as_str())
    }
}

/// A record's lines: the main figure (MiB/s), then the probe's p99 and
/// worst stall (ms) and stalls over 1 s, then the time to durable (s) when
/// the workload made its data durable. All carry the record's verdict.
pub fn record_lines(id: &str, r: &Record) -> Vec<String> {
    let result = if r.status == Status::Ok { "pass" } else { "fail" };
    let mut out = vec![line(id, result, r.throughput_mib_s, "MiB/s")];
    if let Some(p) = &r.responsiveness {
        out.push(line(&format!("{id}_probe_p99"), result, p.p99_ms, "ms"));
        out.push(line(&format!("{id}_max_stall"), result, p.max_ms, "ms"));
        out.push(line(&format!("{id}_stalls_over_1s"), result, p.stalls_over_1s as f64, "stalls"));
    }
    if let Some(d) = r.times.durable_s {
        out.push(line(&format!("{id}_durable"), result, d, "s"));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::record::tests::record;

    fn pattern_groups(l: &str) -> Option<(String, String, f64, String)> {
        // The PATTERN's shape, checked by hand (no regex engine in the image).
        let rest = l.strip_prefix("<LAVA_SIGNAL_TESTCASE TEST_CASE_ID=")?.strip_suffix('>')?;
        let f: Vec<&str> = rest.split(' ').collect();
        let [id, result, m, units] = f[..] else { return None };
        let id_ok = id.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
        id_ok.then_some(())?;
        Some((
            id.into(),
            result.strip_prefix("RESULT=")?.into(),
            m.strip_prefix("MEASUREMENT=")?.parse().ok()?,
            units.strip_prefix("UNITS=")?.into(),
        ))
    }

    #[test]
    fn every_planned_run_gets_a_case_and_the_missing_ones_are_skipped() {
        let plan = Plan::load("sweep").unwrap();
        let mut cases = Cases::planned(&plan);
        let ids: Vec<&str> = cases.ids().collect();
        assert_eq!(ids.len(), 8, "{ids:?}");
        assert_eq!(plan.runs(), 8, "the run record's count of planned runs agrees with LAVA's cases");
        assert_eq!(ids[0], "dirty40_seqwrite");
        assert!(ids.contains(&"boot15_manyfiles"), "{ids:?}");
        let mut r = record();
        r.workload.name = "seqwrite".into();
        r.variant = Some(crate::schema::variant::Applied { name: "dirty40".into(), ..Default::default() });
        r.throughput_mib_s = 57.25;
        r.times.durable_s = Some(1.5);
        let lines = cases.lines_for(&r);
        assert_eq!(
            lines[0],
            "<LAVA_SIGNAL_TESTCASE TEST_CASE_ID=dirty40_seqwrite RESULT=pass MEASUREMENT=57.250 UNITS=MiB/s>"
        );
        assert_eq!(lines.last().unwrap(), &line("dirty40_seqwrite_durable", "pass", 1.5, "s"));
        let end = cases.finish(true, 1, 0);
        assert_eq!(end.len(), 8, "7 skipped and the run: {end:?}");
        assert!(end[0].contains("TEST_CASE_ID=dirty40_manyfiles RESULT=skip"), "{end:?}");
        assert!(end[7].contains("TEST_CASE_ID=bootmark_run RESULT=fail MEASUREMENT=1.000 UNITS=records"));
        for l in lines.iter().chain(&end) {
            assert!(pattern_groups(l).is_some(), "{l}");
        }
    }

    #[test]
    fn repeated_and_duplicated_workloads_get_distinct_ids_in_order() {
        let mut plan = Plan::load("quick").unwrap();
        plan.repeat = 2;
        plan.workloads.truncate(2);
        plan.workloads.push(plan.workloads[1].clone());
        let mut cases = Cases::planned(&plan);
        let ids: Vec<String> = cases.ids().map(str::to_string).collect();
        assert_eq!(
            ids,
            ["manyfiles_r1", "seqwrite_1_r1", "seqwrite_2_r1", "manyfiles_r2", "seqwrite_1_r2", "seqwrite_2_r2"]
        );
        let mut r = record();
        r.workload.name = "seqwrite".into();
        r.status = Status::Timeout;
        r.responsiveness = Some(Default::default());
        assert!(cases.lines_for(&r)[0].contains("seqwrite_1_r1 RESULT=fail"));
        let second = cases.lines_for(&r);
        assert!(second[0].contains("seqwrite_2_r1 RESULT=fail"), "{second:?}");
        assert_eq!(second.len(), 4, "main, p99, max stall, stalls: {second:?}");
        // A record nobody planned still gets a line.
        r.repetition = 5;
        r.workload.name = "sort".into();
        assert!(cases.lines_for(&r)[0].contains("TEST_CASE_ID=sort_r6 "));
    }

    #[test]
    fn a_clean_run_passes_and_odd_names_become_lava_ids() {
        let mut plan = Plan::load("dd").unwrap();
        plan.variants = vec![serde_json::from_str(r#"{"name": "Unprotected-Dirty5"}"#).unwrap()];
        let mut cases = Cases::planned(&plan);
        assert_eq!(cases.ids().collect::<Vec<_>>(), ["unprotected_dirty5_seqwrite"]);
        let mut r = record();
        r.workload.name = "seqwrite".into();
        r.variant = Some(crate::schema::variant::Applied { name: "Unprotected-Dirty5".into(), ..Default::default() });
        r.throughput_mib_s = f64::NAN;
        assert!(cases.lines_for(&r)[0].contains("MEASUREMENT=0.000"));
        assert_eq!(cases.finish(true, 1, 0), [line(RUN_CASE, "pass", 1.0, "records")]);
    }
}
