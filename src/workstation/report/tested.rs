//! A cause tested by experiment, as the report folds it in: what
//! `bootmark confirm` decided, written beside its boots as `verdict.json`,
//! read by `bootmark report --confirmation`. The report then calls a
//! candidate a cause only when the confirmation on that kernel, of that
//! setting, for that workload, said confirmed; a refuted one it says is
//! not the cause; one undecided stays a candidate, with what was tried. Each
//! says which records decided it.

use super::words::figure;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// The file's schema: what a confirmation writes.
pub const SCHEMA: &str = "bootmark.confirmation/1";
/// Its name in the confirmation's directory.
pub const FILE: &str = "verdict.json";
/// Run ids a sentence lists before "and N more".
const RUNS_LISTED: usize = 3;

/// What a confirmation decided.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    Confirmed,
    Refuted,
    /// The test ran to its end undecided.
    CantTell,
    /// No test could be made (untestable on this kernel, runs that failed).
    NoTest,
}

/// One confirmation's verdict, with what a reader needs to trust it: the
/// kernel and setting, the figures, the test's p and the records' run ids.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Tested {
    pub schema: String,
    /// The lab image's entry booted, and its kernel's release as the records say.
    pub entry: String,
    pub kernel: Option<String>,
    /// `WORKLOAD.FIGURE`, and the change made (`KEY=VALUE`, as `bootmark.set=` takes it).
    pub metric: String,
    pub set: String,
    /// The change removes the cause (or gives it to a kernel without it).
    pub removes: bool,
    pub toward: Option<f64>,
    pub outcome: Outcome,
    /// What each side's values are: "boots a side", or "runs a side, interleaved in one boot".
    pub unit: String,
    /// Values a side the verdict rests on, their medians (as found, changed) and the rank test's p.
    pub sides: Option<usize>,
    pub medians: Option<[f64; 2]>,
    pub p: Option<f64>,
    /// The verdict as `bootmark confirm` said it.
    pub words: String,
    /// The run ids of the boots whose records decided it.
    pub runs: Vec<String>,
}

impl Tested {
    /// Written into a confirmation's directory, whole or not at all (a
    /// report must never read half a verdict).
    pub fn write(&self, dir: &Path) -> Result<PathBuf, String> {
        let path = dir.join(FILE);
        let partial = dir.join(format!("{FILE}.partial"));
        let text = serde_json::to_string_pretty(self).map_err(|e| format!("{}: {e}", path.display()))?;
        std::fs::write(&partial, text + "\n").map_err(|e| format!("cannot write {}: {e}", partial.display()))?;
        std::fs::rename(&partial, &path).map_err(|e| format!("cannot write {}: {e}", path.display()))?;
        Ok(path)
    }

    /// A confirmation's verdict: `path` is its `verdict.json` or the
    /// confirmation's directory holding it.
    pub fn read(path: &Path) -> Result<Tested, String> {
        let file = if path.is_dir() { path.join(FILE) } else { path.to_path_buf() };
        let text = std::fs::read_to_string(&file).map_err(|e| match path.is_dir() {
            true => format!(
                "{}: no {FILE} in this directory ({e}): give the directory of a `bootmark confirm` that ended \
                 in a verdict",
                path.display()
            ),
            false => format!("cannot read {}: {e}", file.display()),
        })?;
        let tested: Tested = serde_json::from_str(&text).map_err(|e| {
            format!("{}: not a confirmation's verdict ({e}): give the {FILE} `bootmark confirm` wrote", file.display())
        })?;
        if tested.schema != SCHEMA {
            return Err(format!("{}: schema {:?}, where this bootmark reads {SCHEMA}", file.display(), tested.schema));
        }
        Ok(tested)
    }

    /// Whether it tested `set` on the kernel of a row (`key`: its --by
    /// values) for that row's `workload`.
    pub fn tests(&self, set: &str, key: &[String], workload: &str) -> bool {
        let on_kernel = self.kernel.as_ref().is_some_and(|k| key.contains(k)) || key.contains(&self.entry);
        self.set == set && on_kernel && self.metric.split('.').next() == Some(workload)
    }

    /// What the report says of the cause it tested: "confirmed by experiment
    /// (bootmark confirm: with queue.max_sectors_kb=128 seqwrite.read_p50_ms
    /// went 15.5 → 3.15, medians of 5 runs a side, interleaved in one boot,
    /// p 0.0079; run 20261207-…)".
    pub fn summary(&self) -> String {
        let word = match self.outcome {
            Outcome::Confirmed => "confirmed by experiment",
            Outcome::Refuted => "refuted by experiment",
            Outcome::CantTell => "tested, undecided (can't tell)",
            Outcome::NoTest => "tested, but no test could be made",
        };
        let figures = match (self.medians, self.sides) {
            (Some([found, changed]), Some(n)) => format!(
                ": with {} {} went {} → {}, medians of {n} {}{}",
                self.set,
                self.metric,
                figure(found),
                figure(changed),
                self.unit,
                self.p.map_or(String::new(), |p| format!(", p {p:.4}"))
            ),
            // No figures: the reason is in the words, after "no test: ".
            _ => format!(": {}", self.words.trim_start_matches("no test: ")),
        };
        format!("{word} (bootmark confirm{figures}; {})", self.runs_said())
    }

    /// "run 20261207-…" or "runs A, B, C and 7 more".
    fn runs_said(&self) -> String {
        match self.runs.as_slice() {
            [] => "no run ids in its records".to_string(),
            [one] => format!("run {one}"),
            many => {
                let listed = many.iter().take(RUNS_LISTED).cloned().collect::<Vec<_>>().join(", ");
                let more = many.len().saturating_sub(RUNS_LISTED);
                if more > 0 { format!("runs {listed} and {more} more") } else { format!("runs {listed}") }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tested(outcome: Outcome) -> Tested {
        Tested {
            schema: SCHEMA.into(),
            entry: "k2".into(),
            kernel: Some("6.12.118+deb13-amd64".into()),
            metric: "seqwrite.read_p50_ms".into(),
            set: "queue.max_sectors_kb=128".into(),
            removes: true,
            toward: Some(3.3),
            outcome,
            unit: "runs a side, interleaved in one boot".into(),
            sides: Some(5),
            medians: Some([15.5, 3.15]),
            p: Some(0.0079),
            words: "confirmed: …".into(),
            runs: vec!["20261207-084656-6a27".into()],
        }
    }

    #[test]
    fn it_matches_its_setting_on_its_kernel_for_its_workload_only() {
        let t = tested(Outcome::Confirmed);
        let key = vec!["6.12.118+deb13-amd64".to_string()];
        assert!(t.tests("queue.max_sectors_kb=128", &key, "seqwrite"));
        assert!(!t.tests("queue.max_sectors_kb=64", &key, "seqwrite"));
        assert!(!t.tests("queue.max_sectors_kb=128", &key, "manyfiles"));
        assert!(!t.tests("queue.max_sectors_kb=128", &["6.1.0-57-amd64".to_string()], "seqwrite"));
        // Grouped by the image's entry instead of the release.
        assert!(t.tests("queue.max_sectors_kb=128", &["k2".to_string()], "seqwrite"));
    }

    #[test]
    fn the_summary_says_the_outcome_the_figures_and_the_runs() {
        let s = tested(Outcome::Confirmed).summary();
        assert!(s.starts_with("confirmed by experiment (bootmark confirm: with queue.max_sectors_kb=128"), "{s}");
        assert!(s.contains("went 15.5 → 3.15, medians of 5 runs a side, interleaved in one boot, p 0.0079"), "{s}");
        assert!(s.ends_with("; run 20261207-084656-6a27)"), "{s}");
        let mut none = tested(Outcome::NoTest);
        (none.medians, none.sides, none.runs) = (None, None, (0..5).map(|i| format!("r{i}")).collect());
        none.words = "no test: queue.max_sectors_kb=128 is untestable on this kernel: …".into();
        let s = none.summary();
        assert!(s.contains("no test could be made (bootmark confirm: queue.max_sectors_kb=128 is untestable"), "{s}");
        assert!(s.ends_with("runs r0, r1, r2 and 2 more)"), "{s}");
    }

    #[test]
    fn a_verdict_is_read_back_as_written_and_anything_else_is_refused_by_name() {
        let dir = std::env::temp_dir().join(format!("bootmark-tested-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let t = tested(Outcome::Refuted);
        t.write(&dir).unwrap();
        assert_eq!(Tested::read(&dir).unwrap(), t);
        assert_eq!(Tested::read(&dir.join(FILE)).unwrap(), t);
        assert!(!dir.join(format!("{FILE}.partial")).exists());
        let report = dir.join("report.json");
        std::fs::write(&report, "{\"comparisons\": []}").unwrap();
        let e = Tested::read(&report).unwrap_err();
        assert!(e.contains("report.json: not a confirmation's verdict"), "{e}");
        let empty = dir.join("empty");
        std::fs::create_dir_all(&empty).unwrap();
        assert!(Tested::read(&empty).unwrap_err().contains("no verdict.json in this directory"));
        let mut newer = serde_json::to_value(&t).unwrap();
        newer["schema"] = "bootmark.confirmation/9".into();
        std::fs::write(&report, newer.to_string()).unwrap();
        assert!(Tested::read(&report).unwrap_err().contains("where this bootmark reads bootmark.confirmation/1"));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
