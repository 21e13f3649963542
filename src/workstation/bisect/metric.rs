//! What a bisect measures: one figure of one workload's records,
//! `WORKLOAD.FIGURE` (`seqwrite.read_p50_ms`, `manyfiles.real_s`), and the
//! value a boot gives it — the median over the boot's runs of that workload,
//! since the boot is the unit (runs in one boot share its state).

use super::step::Worse;
use crate::schema::record::{Record, Status};
use crate::workstation::report::stats;
use std::collections::BTreeMap;

/// A figure of a record a bisect can measure: its name, which way is
/// worse, what it is, and how to read it.
struct Figure {
    name: &'static str,
    worse: Worse,
    about: &'static str,
    of: fn(&Record) -> Option<f64>,
}

const FIGURES: &[Figure] = &[
    Figure { name: "real_s", worse: Worse::Larger, about: "the workload's wall time", of: |r| Some(r.times.wall_s) },
    Figure { name: "user_s", worse: Worse::Larger, about: "its user CPU", of: |r| Some(r.times.user_s) },
    Figure { name: "sys_s", worse: Worse::Larger, about: "its system CPU", of: |r| Some(r.times.sys_s) },
    Figure { name: "durable_s", worse: Worse::Larger, about: "until its data was on disk", of: |r| r.times.durable_s },
    Figure { name: "throughput_mib_s", worse: Worse::Smaller, about: "MiB/s moved", of: |r| Some(r.throughput_mib_s) },
    Figure {
        name: "probe_p99_ms",
        worse: Worse::Larger,
        about: "the probe's p99 wait",
        of: |r| r.responsiveness.as_ref().map(|p| p.p99_ms),
    },
    Figure {
        name: "max_stall_ms",
        worse: Worse::Larger,
        about: "the probe's worst wait",
        of: |r| r.responsiveness.as_ref().map(|p| p.max_ms),
    },
    Figure {
        name: "stalls_over_1s",
        worse: Worse::Larger,
        about: "the probe's waits over 1 s",
        of: |r| r.responsiveness.as_ref().map(|p| p.stalls_over_1s as f64),
    },
    Figure {
        name: "read_p50_ms",
        worse: Worse::Larger,
        about: "the probe's 4 KiB read, median",
        of: |r| r.responsiveness.as_ref().map(|p| p.read.p50_ms),
    },
    Figure {
        name: "read_max_ms",
        worse: Worse::Larger,
        about: "the probe's 4 KiB read, worst",
        of: |r| r.responsiveness.as_ref().map(|p| p.read.max_ms),
    },
    Figure {
        name: "ls_max_ms",
        worse: Worse::Larger,
        about: "the probe's ls, worst",
        of: |r| r.responsiveness.as_ref().map(|p| p.ls.max_ms),
    },
    Figure {
        name: "write_max_ms",
        worse: Worse::Larger,
        about: "the longest write() call",
        of: |r| (r.latency.write.count > 0).then_some(r.latency.write.max_ms),
    },
];

/// A metric: a workload and one of its figures.
#[derive(Clone, Debug, PartialEq)]
pub struct Metric {
    pub workload: String,
    figure: &'static str,
}

impl Metric {
    /// `WORKLOAD.FIGURE`, or what is wrong with it and the figures there are.
    pub fn parse(text: &str) -> Result<Metric, String> {
        let names: Vec<&str> = FIGURES.iter().map(|f| f.name).collect();
        let Some((workload, figure)) = text.split_once('.').filter(|(w, _)| !w.is_empty()) else {
            return Err(format!(
                "--metric {text}: give WORKLOAD.FIGURE (seqwrite.read_p50_ms); the figures: {}",
                names.join(", ")
            ));
        };
        match FIGURES.iter().find(|f| f.name == figure) {
            Some(f) => Ok(Metric { workload: workload.to_string(), figure: f.name }),
            None => Err(format!(
                "--metric {text}: no figure '{figure}'{}; the figures: {}",
                crate::suggest::did_you_mean(figure, &names),
                FIGURES.iter().map(|f| format!("{} ({})", f.name, f.about)).collect::<Vec<_>>().join(", ")
            )),
        }
    }

    fn figure(&self) -> &'static Figure {
        FIGURES.iter().find(|f| f.name == self.figure).expect("parsed from FIGURES")
    }

    pub fn worse(&self) -> Worse {
        self.figure().worse
    }

    /// The value of one run: its figure, when it is an ok run of the workload.
    pub fn of_run(&self, r: &Record) -> Option<f64> {
        if r.workload.name != self.workload || r.status != Status::Ok {
            return None;
        }
        (self.figure().of)(r).filter(|v| v.is_finite())
    }

    /// The value of each boot (by run id) with an ok run of the workload
    /// that has the figure: the median of its runs.
    pub fn per_boot<'a>(&self, records: impl IntoIterator<Item = &'a Record>) -> BTreeMap<String, f64> {
        let mut runs: BTreeMap<String, Vec<f64>> = BTreeMap::new();
        for r in records {
            if let Some(v) = self.of_run(r) {
                runs.entry(r.run_id.clone()).or_default().push(v);
            }
        }
        runs.into_iter().filter_map(|(boot, v)| Some((boot, stats::median(&v)?))).collect()
    }

    /// Refuses a metric no record of `records` has: its workload is in
    /// none of them (the workloads there are named), or no ok run of it has the figure.
    pub fn check<'a>(&self, records: impl IntoIterator<Item = &'a Record> + Clone) -> Result<(), String> {
        if !self.per_boot(records.clone()).is_empty() {
            return Ok(());
        }
        let mut workloads: Vec<&str> = records.into_iter().map(|r| r.workload.name.as_str()).collect();
        workloads.sort();
        workloads.dedup();
        if !workloads.contains(&self.workload.as_str()) {
            return Err(format!(
                "--metric {}.{}: no record of workload '{}'{}; the records' workloads: {}",
                self.workload,
                self.figure,
                self.workload,
                crate::suggest::did_you_mean(&self.workload, &workloads),
                workloads.join(", ")
            ));
        }
        Err(format!(
            "--metric {}.{}: no ok run of {} has {} ({})",
            self.workload,
            self.figure,
            self.workload,
            self.figure,
            self.figure().about
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn records() -> Vec<Record> {
        let text =
            std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/report/boots6-records.jsonl"))
                .unwrap();
        text.lines().filter(|l| l.contains("bootmark.result/1")).map(|l| serde_json::from_str(l).unwrap()).collect()
    }

    /// The six-boot demo: one value per boot and kernel, the median of its runs.
    #[test]
    fn a_metric_reads_one_value_per_boot() {
        let records = records();
        let m = Metric::parse("seqwrite.read_p50_ms").unwrap();
        assert_eq!(m.worse(), Worse::Larger);
        let boots = m.per_boot(&records);
        assert_eq!(boots.len(), 12, "six boots of each kernel");
        let of_kernel = |k: &str| -> Vec<f64> {
            let ids: Vec<&str> = records
                .iter()
                .filter(|r| r.kernel.release.as_deref().is_some_and(|v| v.starts_with(k)))
                .map(|r| r.run_id.as_str())
                .collect();
            boots.iter().filter(|(b, _)| ids.contains(&b.as_str())).map(|(_, v)| *v).collect()
        };
        let (old, new) = (of_kernel("6.1."), of_kernel("6.12."));
        assert!(stats::median(&new).unwrap() > 3.0 * stats::median(&old).unwrap(), "{old:?} {new:?}");
        assert_eq!(Metric::parse("seqwrite.throughput_mib_s").unwrap().worse(), Worse::Smaller);
    }

    #[test]
    fn a_metric_no_record_has_is_refused_with_the_choices() {
        let records = records();
        let err = Metric::parse("seqwrite.read_p5_ms").unwrap_err();
        assert!(
            err.contains(
                "no figure 'read_p5_ms' (did you mean 'read_p50_ms'?); the figures: real_s (the workload's wall time)"
            ),
            "{err}"
        );
        assert!(Metric::parse("seqwrite").unwrap_err().contains("give WORKLOAD.FIGURE"));
        assert!(Metric::parse(".probe_p99_ms").unwrap_err().contains("give WORKLOAD.FIGURE"));
        let err = Metric::parse("seqwrit.real_s").unwrap().check(&records).unwrap_err();
        assert!(err.contains("(did you mean 'seqwrite'?); the records' workloads: manyfiles, seqwrite"), "{err}");
        assert!(Metric::parse("seqwrite.real_s").unwrap().check(&records).is_ok());
    }
}
