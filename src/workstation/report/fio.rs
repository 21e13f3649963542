//! fio's own figures in the report. A `fio` row's runs each carry fio's
//! figures per job and direction — a "stream", "reader read" — and the row
//! shows their medians under it. Against the baseline row's same stream it
//! says how the completion p99 and the bandwidth changed, tested as real
//! time is: the boot as the unit (each boot's median) where both sides have
//! two boots or more, else the runs, which then hold for these boots only.
//! A fio row's real time is the job file's (a `time_based` job runs as long
//! as it is told), so for fio the streams are the comparison.

use super::stats::{self, Summary, boots_in_order};
use serde::Serialize;

/// A change under this share is "the same" (as for real time in the verdict).
const SAME_WITHIN: f64 = 0.03;

/// One run's figures of one stream.
#[derive(Clone, Debug)]
pub struct FioRun {
    /// The run's boot (its run id, hashed).
    pub boot: u64,
    pub mib_s: f64,
    pub iops: f64,
    pub clat_p99_ms: Option<f64>,
}

/// One stream over a row's runs, as the report shows and compares it.
#[derive(Clone, Debug, Serialize)]
pub struct FioRow {
    /// The job's name and the direction: "reader read".
    pub stream: String,
    pub mib_s: Option<Summary>,
    pub iops: Option<Summary>,
    /// fio's completion-latency p99.
    pub clat_p99_ms: Option<Summary>,
    /// Each run's figures, for the comparison (not printed).
    #[serde(skip)]
    pub runs: Vec<FioRun>,
    /// Against the baseline row's same stream; none on the baseline row,
    /// or where the baseline has no such stream.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub versus: Option<FioVersus>,
}

/// A stream against the baseline's.
#[derive(Clone, Debug, Serialize)]
pub struct FioVersus {
    /// What a sample is: `boots` (each boot's median) or `runs`.
    pub unit: &'static str,
    /// Samples, baseline then this.
    pub samples: [usize; 2],
    pub clat_p99_ms: Option<Change>,
    pub mib_s: Option<Change>,
}

/// One figure of a stream against the baseline's.
#[derive(Clone, Debug, Serialize)]
pub struct Change {
    /// The samples' medians, baseline then this.
    pub medians: [f64; 2],
    /// This over the baseline.
    pub ratio: f64,
    /// The Mann–Whitney U test's two-sided p over the samples; null under
    /// two samples a side (nothing to test).
    pub mann_whitney_p: Option<f64>,
    /// p < 0.05.
    pub significant: bool,
}

impl FioRow {
    /// A stream's row from its runs.
    pub fn of_runs(stream: String, runs: Vec<FioRun>) -> FioRow {
        let values = |f: fn(&FioRun) -> Option<f64>| runs.iter().filter_map(f).collect::<Vec<f64>>();
        FioRow {
            stream,
            mib_s: stats::summarize(&values(|r| Some(r.mib_s))),
            iops: stats::summarize(&values(|r| Some(r.iops))),
            clat_p99_ms: stats::summarize(&values(|r| r.clat_p99_ms)),
            runs,
            versus: None,
        }
    }

    /// "fio reader read: 25 IOPS, 0.1 MiB/s, clat p99 2.5 ms" (medians),
    /// and what differs from the baseline: "; against the baseline: clat
    /// p99 3.13× (significant across 3 vs 3 boots, p 0.05)".
    pub fn line(&self) -> String {
        let m = |s: &Option<Summary>, d: usize| s.as_ref().map_or("-".into(), |s| format!("{:.d$}", s.median));
        let mut line = format!(
            "fio {}: {} IOPS, {} MiB/s, clat p99 {} ms",
            self.stream,
            m(&self.iops, 0),
            m(&self.mib_s, 1),
            m(&self.clat_p99_ms, 2)
        );
        if let Some(v) = &self.versus {
            let said: Vec<String> =
                v.changes().map(|(name, c)| format!("{name} {:.2}× ({})", c.ratio, v.weight(c))).collect();
            line += &format!(
                "; against the baseline: {}",
                if said.is_empty() { "the same".into() } else { said.join(", ") }
            );
        }
        line
    }

    /// What the verdict says of the stream, when it differs from the
    /// baseline's: "fio reader read clat p99 11.2 → 35.0 ms (significant
    /// across 3 vs 3 boots, p 0.05)"; and whether a difference is significant.
    pub fn verdict(&self) -> Option<(String, bool)> {
        let v = self.versus.as_ref()?;
        let said: Vec<String> = v
            .changes()
            .map(|(name, c)| {
                let unit = if name == "MiB/s" { " MiB/s" } else { " ms" };
                let digits = if c.medians[0].max(c.medians[1]) >= 100.0 { 0 } else { 1 };
                let (a, b) = (c.medians[0], c.medians[1]);
                format!("{name} {a:.digits$} → {b:.digits$}{unit} ({})", v.weight(c))
            })
            .collect();
        (!said.is_empty())
            .then(|| (format!("fio {} {}", self.stream, said.join(", ")), v.changes().any(|(_, c)| c.significant)))
    }
}

impl FioVersus {
    /// The figures that changed beyond SAME_WITHIN, by their names.
    fn changes(&self) -> impl Iterator<Item = (&'static str, &Change)> {
        [("clat p99", &self.clat_p99_ms), ("MiB/s", &self.mib_s)]
            .into_iter()
            .filter_map(|(name, c)| c.as_ref().map(|c| (name, c)))
            .filter(|(_, c)| (c.ratio - 1.0).abs() >= SAME_WITHIN)
    }

    /// "significant across 3 vs 3 boots, p 0.03", "not significant over 2
    /// vs 2 runs in one boot each, p 0.33", "one run each: not tested".
    fn weight(&self, c: &Change) -> String {
        let [a, b] = self.samples;
        let Some(p) = c.mann_whitney_p else {
            return format!("{} {} each: not tested", if a.min(b) == 1 { "one" } else { "too few" }, self.unit_word(1));
        };
        let word = if c.significant { "significant" } else { "not significant" };
        match self.unit {
            "boots" => format!("{word} across {a} vs {b} boots, p {p:.2}"),
            _ => format!("{word} over {a} vs {b} runs: holds for these boots, p {p:.2}"),
        }
    }

    fn unit_word(&self, n: usize) -> &'static str {
        match (self.unit, n) {
            ("boots", 1) => "boot",
            ("boots", _) => "boots",
            (_, 1) => "run",
            _ => "runs",
        }
    }
}

/// `this` stream against the baseline's `base`.
pub fn compare(this: &FioRow, base: &FioRow) -> FioVersus {
    let boots = |r: &FioRow| boots_in_order(r.runs.iter().map(|x| x.boot)).len();
    let by_boot = boots(this) >= 2 && boots(base) >= 2;
    let change = |value: fn(&FioRun) -> Option<f64>| {
        let (b, t) = (samples(&base.runs, by_boot, value), samples(&this.runs, by_boot, value));
        let (mb, mt) = (stats::median(&b)?, stats::median(&t)?);
        let p = (b.len() >= 2 && t.len() >= 2).then(|| stats::mann_whitney(&t, &b).map(|(_, p)| p)).flatten();
        Some(Change {
            medians: [mb, mt],
            ratio: if mb > 0.0 { mt / mb } else { f64::NAN },
            mann_whitney_p: p,
            significant: p.is_some_and(|p| p < 0.05),
        })
    };
    let count = |r: &FioRow| if by_boot { boots(r) } else { r.runs.len() };
    FioVersus {
        unit: if by_boot { "boots" } else { "runs" },
        samples: [count(base), count(this)],
        clat_p99_ms: change(|r| r.clat_p99_ms),
        mib_s: change(|r| Some(r.mib_s)),
    }
}

/// A figure's samples: each run's, or each boot's median of its runs'.
fn samples(runs: &[FioRun], by_boot: bool, value: fn(&FioRun) -> Option<f64>) -> Vec<f64> {
    if !by_boot {
        return runs.iter().filter_map(value).collect();
    }
    boots_in_order(runs.iter().map(|r| r.boot))
        .into_iter()
        .filter_map(|boot| stats::median(&runs.iter().filter(|r| r.boot == boot).filter_map(value).collect::<Vec<_>>()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stream(runs: &[(u64, f64, f64)]) -> FioRow {
        let runs =
            runs.iter().map(|&(boot, mib_s, p99)| FioRun { boot, mib_s, iops: mib_s * 256.0, clat_p99_ms: Some(p99) });
        FioRow::of_runs("reader read".into(), runs.collect())
    }

    #[test]
    fn boots_are_the_unit_where_each_side_has_two() {
        // Four boots a side, two runs each, no boot's median tying another's (the exact
        // test): the p99 tripled, the bandwidth held.
        let base = stream(&[
            (1, 0.1, 10.0),
            (1, 0.1, 12.0),
            (2, 0.1, 11.0),
            (2, 0.1, 12.0),
            (3, 0.1, 10.0),
            (3, 0.1, 11.0),
            (4, 0.1, 9.5),
            (4, 0.1, 10.5),
        ]);
        let this = stream(&[
            (5, 0.1, 30.0),
            (5, 0.1, 36.0),
            (6, 0.1, 33.0),
            (6, 0.1, 34.0),
            (7, 0.1, 31.0),
            (7, 0.1, 34.0),
            (8, 0.1, 40.0),
            (8, 0.1, 28.0),
        ]);
        let v = compare(&this, &base);
        assert_eq!((v.unit, v.samples), ("boots", [4, 4]));
        let p99 = v.clat_p99_ms.as_ref().unwrap();
        assert_eq!(p99.medians, [10.75, 33.25]);
        assert!((p99.mann_whitney_p.unwrap() - 0.028571428571428577).abs() < 1e-12 && p99.significant, "{p99:?}");
        assert_eq!(v.mib_s.as_ref().unwrap().ratio, 1.0);
        let mut row = this.clone();
        row.versus = Some(v);
        let (said, significant) = row.verdict().unwrap();
        assert_eq!(said, "fio reader read clat p99 10.8 → 33.2 ms (significant across 4 vs 4 boots, p 0.03)");
        assert!(significant);
        assert!(
            row.line().ends_with("; against the baseline: clat p99 3.09× (significant across 4 vs 4 boots, p 0.03)"),
            "{}",
            row.line()
        );
    }

    #[test]
    fn runs_of_one_boot_hold_for_it_and_one_run_each_is_not_tested() {
        let base = stream(&[(1, 100.0, 5.0), (1, 101.0, 5.0), (1, 99.0, 5.0)]);
        let this = stream(&[(2, 80.0, 5.0), (2, 81.0, 5.1), (2, 79.0, 4.9)]);
        let v = compare(&this, &base);
        assert_eq!((v.unit, v.samples), ("runs", [3, 3]));
        let mut row = this.clone();
        row.versus = Some(v);
        // Three runs a side can give p 0.1 at best: not significant, and said so.
        let (said, significant) = row.verdict().unwrap();
        assert_eq!(
            said,
            "fio reader read MiB/s 100 → 80 MiB/s (not significant over 3 vs 3 runs: holds for these boots, p 0.10)"
        );
        assert!(!significant);
        let one = compare(&stream(&[(2, 50.0, 9.0)]), &stream(&[(1, 100.0, 5.0)]));
        let mib = one.mib_s.as_ref().unwrap();
        assert_eq!((mib.ratio, mib.mann_whitney_p, mib.significant), (0.5, None, false));
        assert_eq!(one.weight(mib), "one run each: not tested");
    }

    #[test]
    fn a_stream_within_three_percent_is_the_same() {
        let base = stream(&[(1, 100.0, 5.0), (2, 100.0, 5.0)]);
        let mut row = stream(&[(3, 101.0, 5.1), (4, 99.0, 5.05)]);
        row.versus = Some(compare(&row, &base));
        assert!(row.verdict().is_none());
        assert!(row.line().ends_with("; against the baseline: the same"), "{}", row.line());
    }
}
