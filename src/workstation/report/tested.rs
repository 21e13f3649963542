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
/// The largest verdict file read: `bootmark confirm` writes a few KiB (its
/// words, at most 16 boots' run ids a side).
const MAX_FILE_BYTES: u64 = 1 << 20;
/// The longest words, field and run list a verdict may hold.
const MAX_WORDS: usize = 4096;
const MAX_FIELD: usize = 256;
const MAX_RUNS: usize = 1000;
/// The most values a side a confirmation takes (`--cap`, `--runs`: 16).
const MAX_SIDES: usize = 16;
/// The level a confirmation's test decides at (`confirm::ALPHA`).
const ALPHA: f64 = 0.05;

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
    /// confirmation's directory holding it. Only a regular file of at most
    /// 1 MiB is read (not a FIFO, not a device), and only a verdict whose
    /// figures can be what `bootmark confirm` wrote is taken: a report
    /// calls a candidate a cause on its word.
    pub fn read(path: &Path) -> Result<Tested, String> {
        let file = if path.is_dir() { path.join(FILE) } else { path.to_path_buf() };
        let meta = std::fs::metadata(&file).map_err(|e| match path.is_dir() {
            true => format!(
                "{}: no {FILE} in this directory ({e}): give the directory of a `bootmark confirm` that ended \
                 in a verdict",
                path.display()
            ),
            false => format!("cannot read {}: {e}", file.display()),
        })?;
        if !meta.is_file() || meta.len() > MAX_FILE_BYTES {
            return Err(format!(
                "{}: not a confirmation's verdict (a regular file of at most 1 MiB): give the {FILE} `bootmark \
                 confirm` wrote, or its directory",
                file.display()
            ));
        }
        let text = std::fs::read_to_string(&file).map_err(|e| format!("cannot read {}: {e}", file.display()))?;
        Tested::parse(&text).map_err(|why| format!("{}: {why}", file.display()))
    }

    /// A verdict file's text: as `bootmark confirm` writes it, or why not
    /// (the fuzzer feeds it any text).
    pub fn parse(text: &str) -> Result<Tested, String> {
        let tested: Tested = serde_json::from_str(text)
            .map_err(|e| format!("not a confirmation's verdict ({e}): give the {FILE} `bootmark confirm` wrote"))?;
        if tested.schema != SCHEMA {
            return Err(format!("schema {:?}, where this bootmark reads {SCHEMA}", tested.schema));
        }
        tested.check().map_err(|why| format!("not a verdict bootmark confirm writes: {why}"))?;
        Ok(tested)
    }

    /// What `bootmark confirm` writes and nothing else: text without
    /// control characters (a terminal's escapes, a line break that would
    /// forge a line of the report) and of bounded length; the kernel named
    /// (the report matches by it); a decided verdict with its figures — p a
    /// probability, medians positive, at most 16 values a side — and a
    /// confirmation below the test's level.
    fn check(&self) -> Result<(), String> {
        let fields = [("entry", &self.entry), ("metric", &self.metric), ("set", &self.set), ("unit", &self.unit)];
        let runs = self.runs.iter().map(|r| ("a run id", r));
        let kernel = self.kernel.iter().map(|k| ("kernel", k));
        for (name, text) in fields.into_iter().chain(runs).chain(kernel) {
            if text.len() > MAX_FIELD || text.chars().any(char::is_control) {
                return Err(format!("its {name} is over {MAX_FIELD} bytes or holds a control character"));
            }
        }
        if self.words.len() > MAX_WORDS || self.words.chars().any(char::is_control) {
            return Err(format!("its words are over {MAX_WORDS} bytes or hold a control character"));
        }
        if self.runs.len() > MAX_RUNS {
            return Err(format!("{} run ids, where a confirmation has at most {MAX_RUNS}", self.runs.len()));
        }
        if self.kernel.is_none() {
            return Err("it names no kernel, so no report can tell which kernel's cause it tested".into());
        }
        let decided = !matches!(self.outcome, Outcome::NoTest);
        match (self.sides, self.medians, self.p) {
            (Some(n), Some(m), Some(p)) => {
                if !(1..=MAX_SIDES).contains(&n)
                    || !(0.0..=1.0).contains(&p)
                    || m.iter().any(|v| !(v.is_finite() && *v > 0.0))
                {
                    return Err(format!("its figures cannot be a test's: {n} a side, p {p}, medians {m:?}"));
                }
                if self.outcome == Outcome::Confirmed && p >= ALPHA {
                    return Err(format!("it says confirmed at p {p}, not below the test's level {ALPHA}"));
                }
            }
            (None, None, None) if !decided => {}
            _ if decided => return Err("a verdict without its values a side, medians and p".into()),
            _ => return Err("figures given with no test made".into()),
        }
        Ok(())
    }

    /// Whether it tested the experiment `test` (`set` and `metric`, as the
    /// report's `causes[].test` gives them) by removing the cause, on the
    /// row's `kernel` (its value of the kernel dimension).
    pub fn tests(&self, (set, metric): (&str, &str), kernel: Option<&str>) -> bool {
        self.removes && self.set == set && self.metric == metric && kernel.is_some() && self.kernel.as_deref() == kernel
    }

    /// Whether its figures moved the way its outcome says, for a figure
    /// where larger is worse (the read's wait a request-size cause
    /// explains): a confirmed removal lowered the changed side's median.
    pub fn agrees_with_its_figures(&self) -> bool {
        match (self.outcome, self.medians) {
            (Outcome::Confirmed, Some([found, changed])) => changed < found,
            _ => true,
        }
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
            _ => format!(": {}", self.words.trim_start_matches("no test: ").trim_end_matches('.')),
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
    fn it_matches_its_experiment_on_its_kernel_only() {
        let t = tested(Outcome::Confirmed);
        let test = ("queue.max_sectors_kb=128", "seqwrite.read_p50_ms");
        let kernel = Some("6.12.118+deb13-amd64");
        assert!(t.tests(test, kernel));
        assert!(!t.tests(("queue.max_sectors_kb=64", test.1), kernel));
        assert!(!t.tests((test.0, "seqwrite.probe_p99_ms"), kernel), "another metric of the workload");
        assert!(!t.tests(test, Some("6.1.0-57-amd64")));
        assert!(!t.tests(test, None), "a report not grouped by kernel");
        let given = Tested { removes: false, ..t.clone() };
        assert!(!given.tests(test, kernel), "the cause given to a good kernel is not its removal");
        assert!(t.agrees_with_its_figures());
        assert!(!Tested { medians: Some([3.0, 15.0]), ..t }.agrees_with_its_figures());
    }

    #[test]
    fn only_what_confirm_writes_is_taken() {
        let good = tested(Outcome::Confirmed);
        assert_eq!(good.check(), Ok(()));
        let refused = [
            Tested { p: Some(0.2), ..good.clone() },
            Tested { p: Some(7.5), outcome: Outcome::CantTell, ..good.clone() },
            Tested { medians: Some([f64::MAX * 2.0, 1.0]), ..good.clone() },
            Tested { medians: Some([-5.0, 1.0]), ..good.clone() },
            Tested { sides: Some(1_000_000_000_000_000_000), ..good.clone() },
            Tested { medians: None, ..good.clone() },
            Tested { kernel: None, ..good.clone() },
            Tested { kernel: Some("\u{1b}]0;pwned\u{7}".into()), ..good.clone() },
            Tested { set: "a\nbootmark: error: fake".into(), ..good.clone() },
            Tested { words: "w".repeat(MAX_WORDS + 1), ..good.clone() },
            Tested { runs: vec!["r".into(); MAX_RUNS + 1], ..good.clone() },
        ];
        for t in refused {
            assert!(t.check().is_err(), "{t:?}");
        }
        let no_test = Tested { outcome: Outcome::NoTest, sides: None, medians: None, p: None, ..good };
        assert_eq!(no_test.check(), Ok(()));
    }

    #[test]
    fn the_summary_says_the_outcome_the_figures_and_the_runs() {
        let s = tested(Outcome::Confirmed).summary();
        assert!(s.starts_with("confirmed by experiment (bootmark confirm: with queue.max_sectors_kb=128"), "{s}");
        assert!(s.contains("went 15.5 → 3.15, medians of 5 runs a side, interleaved in one boot, p 0.0079"), "{s}");
        assert!(s.ends_with("; run 20261207-084656-6a27)"), "{s}");
        let mut none = tested(Outcome::NoTest);
        (none.medians, none.sides, none.runs) = (None, None, (0..5).map(|i| format!("r{i}")).collect());
        none.words = "no test: queue.max_sectors_kb=128 is untestable on this kernel: writing 128 failed.".into();
        let s = none.summary();
        assert!(s.contains("no test could be made (bootmark confirm: queue.max_sectors_kb=128 is untestable"), "{s}");
        assert!(s.ends_with("writing 128 failed; runs r0, r1, r2 and 2 more)"), "{s}");
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
        // Not a regular file: a device is never read (a FIFO would hang, /dev/zero never end).
        assert!(Tested::read(Path::new("/dev/zero")).unwrap_err().contains("a regular file of at most 1 MiB"));
        let mut forged = serde_json::to_value(&t).unwrap();
        forged["outcome"] = "confirmed".into();
        forged["p"] = 0.9.into();
        std::fs::write(&report, forged.to_string()).unwrap();
        assert!(Tested::read(&report).unwrap_err().contains("not below the test's level"));
        let mut newer = serde_json::to_value(&t).unwrap();
        newer["schema"] = "bootmark.confirmation/9".into();
        std::fs::write(&report, newer.to_string()).unwrap();
        assert!(Tested::read(&report).unwrap_err().contains("where this bootmark reads bootmark.confirmation/1"));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
