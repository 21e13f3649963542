//! The verdict: the few lines a reader takes in before the table. For each
//! value of the first dimension (a kernel, a variant) against the baseline:
//! which workloads differ in real time, by how much, whether the difference
//! is significant, how the machine's responsiveness changed, and the cause
//! the findings name. Nothing here is measured anew: it reads the rows and
//! findings, and says "not significant" and "no difference" as plainly as a
//! difference.

use super::Row;
use super::findings::{Finding, device_share, kib, request_limit, request_sizes};
use super::tested::{Outcome, Tested};
use serde::Serialize;

/// A real-time difference under this share is called "the same".
const SAME_WITHIN: f64 = 0.03;
/// More workloads (× other dimensions) than this are summed up, not listed:
/// a fleet's 1200 groups per kernel make a line nobody reads.
const LISTED_AT_MOST: usize = 8;

/// One workload's (group's) comparison, as the verdict says it.
struct Part {
    text: String,
    differs: bool,
    significant: bool,
    /// |speedup - 1|, for picking the largest differences.
    size: f64,
}

/// The verdict's lines (Markdown-free text). `baseline_of`: each row's
/// baseline row, as the report marked them; `by`: the table's dimensions.
pub fn lines(
    rows: &[Row],
    baseline_of: &[Option<usize>],
    by: &[String],
    findings: &[Finding],
    given: &Confirmations,
) -> Vec<String> {
    let dimension = by.first().map_or("kernel", String::as_str);
    let mut values: Vec<&str> = Vec::new();
    for r in rows {
        if let Some(v) = r.key.first()
            && !values.contains(&v.as_str())
        {
            values.push(v);
        }
    }
    let Some(base) = rows.iter().find(|r| r.baseline).and_then(|r| r.key.first()) else {
        return Vec::new();
    };
    if values.len() < 2 {
        return vec![format!(
            "One {dimension} only ({base}): nothing to compare it with; the table gives its figures."
        )];
    }
    let mut out = Vec::new();
    for v in values.iter().filter(|v| **v != base.as_str()) {
        out.push(against_baseline(rows, baseline_of, v, base, (findings, given), dimension == "variant"));
    }
    out.extend(noise_floor_line(rows));
    out
}

/// A group's boots against themselves (an A/A comparison): the first half
/// of its boots, in the order they came, against the second half. Nothing
/// changed between them but the boot and the time, so the ratio is how far
/// apart one kernel lands on its own: a difference between kernels no
/// larger than that is not shown to be the kernel's. The halves are in time
/// order, not alternating, so that drift over the session (a disk warming, a
/// host getting busier) shows here rather than hiding in both halves.
#[derive(Clone, Debug, Serialize)]
pub struct NoiseFloor {
    pub group: Vec<String>,
    pub workload: String,
    /// Boots in each half, first then second.
    pub boots: [usize; 2],
    /// The median of each half's boot medians, real time in seconds.
    pub medians_s: [f64; 2],
    /// Second half / first half.
    pub ratio: f64,
    /// The rank test over the two halves' boot medians: a small p says the
    /// kernel's own boots differ, and the session drifted.
    pub mann_whitney_p: f64,
}

/// Boots a group needs for its A/A noise floor: two in each half.
const NOISE_FLOOR_BOOTS: usize = 4;

pub fn noise_floor(row: &Row) -> Option<NoiseFloor> {
    let medians = boot_medians(row);
    if medians.len() < NOISE_FLOOR_BOOTS {
        return None;
    }
    let (first, second) = medians.split_at(medians.len() / 2);
    let (a, b) = (super::stats::median(first)?, super::stats::median(second)?);
    let (_, p) = super::stats::mann_whitney(first, second)?;
    Some(NoiseFloor {
        group: row.key.clone(),
        workload: row.workload.clone(),
        boots: [first.len(), second.len()],
        medians_s: [a, b],
        ratio: b / a,
        mann_whitney_p: p,
    })
}

/// The larger A/A spread of a group and its baseline (|ratio − 1|), where either has one.
fn floor_of(row: &Row, b: &Row) -> Option<f64> {
    [noise_floor(row), noise_floor(b)].into_iter().flatten().map(|f| (f.ratio - 1.0).abs()).reduce(f64::max)
}

/// "A/A noise floor (each group's first boots against its last, real
/// time): …; the largest 2.1 %": None when no group has the boots.
fn noise_floor_line(rows: &[Row]) -> Option<String> {
    let floors: Vec<NoiseFloor> = rows.iter().filter_map(noise_floor).collect();
    let largest = floors.iter().map(|f| (f.ratio - 1.0).abs()).reduce(f64::max)?;
    let said: Vec<String> = floors
        .iter()
        .take(LISTED_AT_MOST)
        .map(|f| {
            let who = f.group.first().map_or(String::new(), |k| format!(" {k}"));
            format!(
                "{}{who} {:.3}× ({} vs {} boots, p {:.2})",
                f.workload, f.ratio, f.boots[0], f.boots[1], f.mann_whitney_p
            )
        })
        .collect();
    let more = floors.len().saturating_sub(LISTED_AT_MOST);
    let more = if more > 0 { format!("; and {more} more") } else { String::new() };
    Some(format!(
        "A/A noise floor (each group's first boots against its last, in real time): {}{more}; the largest {:.1} %: a difference between kernels no larger than its workload's floor is within what one kernel does against itself.",
        said.join("; "),
        largest * 100.0
    ))
}

/// One value against the baseline, workload by workload.
/// `variants`: the values are plan variants, run in the same boots as the
/// baseline: a mechanism present on one side only is then an experiment's
/// result (the variant's setting removed or brought it), not a boot's luck.
/// `given`: the confirmations given (`bootmark report --confirmation`).
fn against_baseline(
    rows: &[Row],
    baseline_of: &[Option<usize>],
    value: &str,
    base: &str,
    (findings, given): (&[Finding], &Confirmations),
    variants: bool,
) -> String {
    let mut parts = Vec::new();
    // Causes shown by a tested difference, and candidates: a request size
    // (until a run that changes it alone confirms it: `given`), or a
    // mechanism seen on one side of a comparison resting on one boot a side.
    // A candidate an experiment refuted is said apart, as not the cause.
    let mut causes = Vec::new();
    let mut candidates = Vec::new();
    let mut refuted = Vec::new();
    let mut across_boots = true;
    let mut all_same = true;
    // Whether any difference of this value is borne out by the runs: a
    // significant time, or the probe's p99 or worst stall (many probes per
    // run). Only such a difference gets a cause.
    let mut borne_out = false;
    let mut within_one_boot: Vec<String> = Vec::new();
    for (i, row) in rows.iter().enumerate().filter(|(_, r)| r.key.first().is_some_and(|k| k == value)) {
        let Some(speedup) = row.speedup else { continue };
        let Some(b) = baseline_of[i].map(|b| &rows[b]) else { continue };
        let change = speedup - 1.0;
        // In a sweep across kernels, say which kernel (the key's other values).
        let workload = match row.key.get(1..).filter(|rest| !rest.is_empty()) {
            Some(rest) => format!("{} on {}", row.name, rest.join(" · ")),
            None => row.name.clone(),
        };
        let runs = row.real_s.as_ref().map_or(0, |s| s.n).min(b.real_s.as_ref().map_or(0, |s| s.n));
        across_boots &= two_boots_a_side(row, b);
        let weight = match across_boots_said(row, b) {
            _ if runs < 2 => "one run each: not tested".to_string(),
            Some(said) => match floor_of(row, b) {
                Some(floor) if change.abs() <= floor => {
                    format!("{said}; within the A/A noise floor of {:.1} %", floor * 100.0)
                }
                _ => said,
            },
            // Repetitions inside one boot: the line says once what they can show.
            None => {
                let said = one_boot(row, b);
                if !within_one_boot.contains(&said) {
                    within_one_boot.push(said);
                }
                if row.significant { "significant" } else { "not significant" }.to_string()
            }
        };
        let p99 = |r: &Row| r.probe_p99_ms.as_ref().map_or(0.0, |s| s.median);
        let probe = if p99(row).max(p99(b)) >= 20.0 && p99(row).max(p99(b)) >= 2.0 * p99(row).min(p99(b)) {
            format!(", probe p99 {:.0} → {:.0} ms", p99(b), p99(row))
        } else {
            String::new()
        };
        let stall = |r: &Row| r.max_stall_ms.unwrap_or(0.0);
        let stall_text = if stall(row).max(stall(b)) >= 1000.0 && (stall(row) - stall(b)).abs() >= 500.0 {
            format!(", worst stall {:.1} → {:.1} s", stall(b) / 1000.0, stall(row) / 1000.0)
        } else {
            String::new()
        };
        // A fio row's streams (fio's own p99 and bandwidth per job and
        // direction): what differs of them, and whether significantly.
        let fio: Vec<(String, bool)> = row.fio.iter().filter_map(|f| f.verdict()).collect();
        let fio_significant = fio.iter().any(|(_, significant)| *significant);
        let fio_text: String = fio.iter().map(|(said, _)| format!("; {said}")).collect();
        if change.abs() < SAME_WITHIN && probe.is_empty() && stall_text.is_empty() && fio.is_empty() {
            parts.push(Part {
                text: format!("{workload} the same ({weight})"),
                differs: false,
                significant: false,
                size: 0.0,
            });
            continue;
        }
        all_same = false;
        let how = if change.abs() < SAME_WITHIN {
            "the same time".to_string()
        } else if speedup >= 1.0 {
            format!("{speedup:.2}× faster")
        } else {
            format!("{:.2}× slower", 1.0 / speedup)
        };
        let time_borne_out = row.significant && change.abs() >= SAME_WITHIN;
        borne_out |= time_borne_out || !probe.is_empty() || !stall_text.is_empty() || fio_significant;
        let text = format!("{workload} {how} ({weight}){probe}{stall_text}{fio_text}");
        let significant = row.significant || fio_significant;
        parts.push(Part { text, differs: true, significant, size: change.abs() });
        if let Some((said, _)) = request_cause(row, b, !probe.is_empty()) {
            let cause = format!("{workload}: its write requests were {said}");
            let tried = given.of(row, b);
            let said = tried.iter().map(|t| t.summary()).collect::<Vec<_>>().join("; and ");
            match (tried.is_empty(), one_outcome(&tried)) {
                (true, _) => candidates.push(cause),
                (false, Some(Outcome::Confirmed)) => causes.push(format!("{cause}, {said}")),
                (false, Some(Outcome::Refuted)) => refuted.push(format!("{cause}, {said}")),
                (false, Some(_)) => candidates.push(format!("{cause}, {said}")),
                (false, None) => candidates.push(format!("{cause}, tested with outcomes that differ: {said}")),
            }
        }
    }
    // A rule that fires for this value is a cause only of a difference, and
    // only if it does not fire for the baseline too.
    let fired_for = |f: &Finding, v: &str| f.subject.split("; ").any(|s| s.split(" · ").next() == Some(v));
    // Only findings that name a mechanism with its evidence (`names_cause`):
    // not writeback-throttling, which says where the writer waited, which a
    // kernel that hides its wchan (5.x before 5.16) cannot show, so its
    // absence on the baseline is no evidence of a difference (the demo's
    // 5.10 against 6.12); not a read's wait the block tracepoints place
    // outside the device without saying where.
    let boots_or_variants = variants || across_boots;
    for f in findings.iter().filter(|f| !all_same && borne_out && f.names_cause) {
        let also_base = findings.iter().any(|g| g.rule == f.rule && fired_for(g, base));
        let said = format!("the {} finding below", f.rule);
        if fired_for(f, value) && !also_base && !causes.contains(&said) && !candidates.contains(&said) {
            if boots_or_variants { causes.push(said) } else { candidates.push(said) }
        }
    }
    if parts.is_empty() {
        let unpooled =
            |v: &str| rows.iter().any(|r| r.key.first().is_some_and(|k| k == v) && !r.settings_differ.is_empty());
        if unpooled(value) || unpooled(base) {
            return format!(
                "{value}: not compared with {base}: a group's runs were measured under different settings in force (the settings-differ finding below)."
            );
        }
        return format!("{value}: no workload to compare with {base}.");
    }
    let head = if all_same {
        format!("{value} against {base}: no difference beyond {:.0} % in real time — ", SAME_WITHIN * 100.0)
    } else {
        format!("{value} against {base}: ")
    };
    let mut line = head + &listed(parts);
    if !causes.is_empty() {
        line += &format!(". Cause: {}", at_most_three(causes));
    }
    if !candidates.is_empty() {
        let test = match boots_or_variants {
            true => "a run that changes that setting alone would confirm it",
            false => "one boot a side: more boots, or a plan variant that removes it, would test it",
        };
        line += &format!(". Candidate cause ({test}): {}", at_most_three(candidates));
    }
    if !refuted.is_empty() {
        line += &format!(". Not the cause: {}", at_most_three(refuted));
    }
    if !within_one_boot.is_empty() {
        let said = within_one_boot.join("; ");
        line += &format!(". {}{}", said[..1].to_uppercase(), &said[1..]);
    }
    line + "."
}

/// Whether a comparison rests on two boots or more on each side: the least
/// on which a mechanism seen on one side only is called a cause.
fn two_boots_a_side(row: &Row, b: &Row) -> bool {
    row.boots.len() >= 2 && b.boots.len() >= 2
}

/// Causes in a line: the first three, and how many more.
fn at_most_three(mut causes: Vec<String>) -> String {
    if causes.len() > 3 {
        let more = causes.len() - 3;
        causes.truncate(3);
        causes.push(format!("and {more} more"));
    }
    causes.join("; ")
}

/// The request size as a candidate cause of `row`'s difference from its
/// baseline `b`: "1.1 MiB where 5.10's were 126 KiB (…): a read queued
/// behind a larger request waits longer (the disk held its reads …)", or
/// None. A read queued behind a larger request waits for all of it — but
/// that is named only where the kernel's own block events show it: the
/// probe's p99 changed (`probe_changed`, many probes per run) in the
/// direction of the sizes, and the block tracepoints timed the reads in the
/// device on both sides with the device carrying the read's change. Sizes
/// that merely differ beside a time that differs, or reads untimed in the
/// device, are a correlation, not a cause. Even then a candidate: only a run
/// that changes the size alone confirms it.
/// Also returns the metric it explains: `probe_p99_ms`.
fn request_cause(row: &Row, b: &Row, probe_changed: bool) -> Option<(String, &'static str)> {
    let (this, that) = request_sizes(row, b)?;
    let p99 = |r: &Row| r.probe_p99_ms.as_ref().map_or(0.0, |s| s.median);
    let (d_this, d_that, carries) = device_share(row, b)?;
    if !(probe_changed && carries && (this > that) == (p99(row) > p99(b))) {
        return None;
    }
    let proof =
        format!(" (the disk held its reads {d_this:.1} ms against {d_that:.1} ms at the median: block tracepoints)");
    let (effect, explains) = match this > that {
        true => (format!(": a read queued behind a larger request waits longer{proof}"), "probe_p99_ms"),
        false => (format!(": a read queued behind a smaller request waits less{proof}"), "probe_p99_ms"),
    };
    let base = b.key.first().map_or("the baseline", String::as_str);
    let said = format!("{} where {base}'s were {} ({}){effect}", kib(this), kib(that), request_limit(row, b));
    Some((said, explains))
}

/// One group against its baseline group, for a program to act on (the JSON
/// report's `comparisons`, beside the verdict's sentences).
#[derive(Clone, Debug, Serialize)]
pub struct Comparison {
    /// The group's first --by value, and the baseline's.
    pub candidate: String,
    pub baseline: String,
    /// The whole group: its --by values and workload.
    pub group: Vec<String>,
    pub workload: String,
    /// The metric compared: the workload's real (wall) time, in seconds.
    pub metric: &'static str,
    pub baseline_median: f64,
    pub candidate_median: f64,
    /// Candidate mean / baseline mean: above 1, slower.
    pub ratio: f64,
    /// The ratio's bounds from the two means' 95 % intervals; null under 2 runs a side.
    pub ratio_interval: Option<[f64; 2]>,
    /// How `significant` is decided, and its answer.
    pub test: &'static str,
    pub significant: bool,
    /// The Mann–Whitney U test's two-sided p over the runs' times (SciPy's method).
    pub mann_whitney_p: Option<f64>,
    pub runs: [usize; 2],
    pub boots: [usize; 2],
    /// The probe's p99 and the worst stall, baseline then candidate.
    pub probe_p99_ms: [f64; 2],
    pub max_stall_ms: [f64; 2],
    /// With two boots or more a side: the same comparison with the boot as the unit.
    pub across_boots: Option<AcrossBoots>,
    /// With four boots or more on a side: the larger of the two groups'
    /// A/A spreads (|ratio − 1| of its first boots against its last,
    /// `NoiseFloor`); a |ratio − 1| no larger is within it.
    pub noise_floor: Option<f64>,
    pub causes: Vec<Cause>,
}

/// Two groups compared boot against boot: each boot's median real time is
/// one sample (repetitions inside a boot share its state — its page cache's
/// history, its disk's layout — and are not independent).
#[derive(Clone, Debug, Serialize)]
pub struct AcrossBoots {
    pub boots: [usize; 2],
    /// The median of the boots' medians, baseline then candidate.
    pub medians_s: [f64; 2],
    /// Candidate / baseline of those, with the percentile bootstrap's 95 % interval
    /// (null under four boots a side: too few values to resample).
    pub ratio: f64,
    pub ratio_interval: Option<[f64; 2]>,
    /// The Mann–Whitney U test's two-sided p over the boots' medians; significant below 0.05.
    pub mann_whitney_p: f64,
    pub significant: bool,
    /// Boots in which a run stalled over 1 s, and Fisher's exact test of the two proportions.
    pub stalled_boots: [usize; 2],
    pub fisher_p: f64,
}

/// "significant across 5 vs 5 boots, p 0.01", without the bootstrap the
/// structured comparison adds; None unless each side has two boots or more.
fn across_boots_said(row: &Row, b: &Row) -> Option<String> {
    let p = boots_p(row, b)?;
    let word = if p < 0.05 { "significant" } else { "not significant" };
    Some(format!("{word} across {} vs {} boots, p {p:.2}", row.boots.len(), b.boots.len()))
}

/// What runs inside one boot (on either side) can show: "3 runs in one boot
/// each: holds for these boots".
fn one_boot(row: &Row, b: &Row) -> String {
    let runs = |r: &Row| r.real_s.as_ref().map_or(0, |s| s.n);
    match (row.boots.len(), b.boots.len()) {
        (1, 1) if runs(row) == runs(b) => format!("{} runs in one boot each: holds for these boots", runs(row)),
        (1, 1) => format!("{} and {} runs in one boot each: holds for these boots", runs(b), runs(row)),
        _ => "one side's runs in one boot: holds for these boots".to_string(),
    }
}

/// Resamples of the bootstrap interval, and its seed (the same records give the same interval).
const BOOTSTRAP_RESAMPLES: usize = 10_000;
const BOOTSTRAP_SEED: u64 = 0x5eed_b007;
/// Boots a side below which no bootstrap interval is given.
const BOOTSTRAP_BOOTS_AT_LEAST: usize = 4;

/// Whether `row`'s boots differ from its baseline's in real time (the rank
/// test over each boot's median, p < 0.05); None unless each side has two
/// boots or more. The table's and the verdict's significance, cheap enough
/// for a fleet's every group.
pub fn boots_differ(row: &Row, b: &Row) -> Option<bool> {
    boots_p(row, b).map(|p| p < 0.05)
}

/// Each boot's median real time: one sample per boot.
fn boot_medians(r: &Row) -> Vec<f64> {
    r.boots.iter().map(|(m, _)| *m).collect()
}

/// The rank test's two-sided p over the two rows' boot medians; None unless
/// each side has two boots or more.
fn boots_p(row: &Row, b: &Row) -> Option<f64> {
    if row.boots.len() < 2 || b.boots.len() < 2 {
        return None;
    }
    super::stats::mann_whitney(&boot_medians(row), &boot_medians(b)).map(|(_, p)| p)
}

/// `row` against its baseline row `b` across boots; None unless each side has two boots or more.
pub fn across_boots(row: &Row, b: &Row) -> Option<AcrossBoots> {
    let p = boots_p(row, b)?;
    let (this, that) = (boot_medians(row), boot_medians(b));
    let (this_median, that_median) = (super::stats::median(&this)?, super::stats::median(&that)?);
    let stalled = |r: &Row| r.boots.iter().filter(|(_, s)| *s).count();
    let (k_this, k_that) = (stalled(row), stalled(b));
    let fisher_p = super::stats::fisher_exact(
        k_that as u64,
        (that.len() - k_that) as u64,
        k_this as u64,
        (this.len() - k_this) as u64,
    );
    Some(AcrossBoots {
        boots: [that.len(), this.len()],
        medians_s: [that_median, this_median],
        ratio: this_median / that_median,
        // Resampling two or three boots sees too few values to bound anything: it would
        // give a narrow interval the rank test (p 0.33 at best with two a side) denies.
        ratio_interval: (this.len().min(that.len()) >= BOOTSTRAP_BOOTS_AT_LEAST)
            .then(|| super::stats::bootstrap_median_ratio(&that, &this, BOOTSTRAP_RESAMPLES, BOOTSTRAP_SEED))
            .flatten(),
        mann_whitney_p: p,
        significant: p < 0.05,
        stalled_boots: [k_that, k_this],
        fisher_p,
    })
}

/// A cause a comparison names: a code a program can match, the mechanism, the words.
#[derive(Clone, Debug, Serialize)]
pub struct Cause {
    pub code: &'static str,
    pub mechanism: &'static str,
    /// The metric it explains (`probe_p99_ms`, `real_s`); null for a finding,
    /// whose words say what it shows.
    pub explains: Option<&'static str>,
    /// `candidate` until tested: a request size until the confirmations given
    /// to the report decided it (`cause` when they confirmed it, `refuted`
    /// when they refuted it; outcomes that differ leave it a candidate), a
    /// finding's mechanism under two boots a side unless the two sides are
    /// variants of the same boots; else `cause`.
    pub status: &'static str,
    pub text: String,
    /// The experiment that would test it, for `bootmark confirm` (null where
    /// no one setting removes it, or the records do not say its value).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub test: Option<CauseTest>,
    /// The confirmations of that experiment given to the report
    /// (`--confirmation`): each one's outcome, figures, words and run ids.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub confirmations: Vec<Tested>,
}

/// A cause's status as a confirmation's outcome makes it.
fn status_of(outcome: Outcome) -> &'static str {
    match outcome {
        Outcome::Confirmed => "cause",
        Outcome::Refuted => "refuted",
        Outcome::CantTell | Outcome::NoTest => "candidate",
    }
}

/// The confirmations given to a report, and where its rows' keys hold the
/// kernel (None: the report is not grouped by kernel, and no cause can be
/// matched to the kernel a confirmation tested).
pub struct Confirmations<'a> {
    pub tested: &'a [Tested],
    pub kernel_at: Option<usize>,
}

impl<'a> Confirmations<'a> {
    /// `tested` for a report grouped by `by`.
    pub fn new(tested: &'a [Tested], by: &[String]) -> Self {
        Confirmations { tested, kernel_at: by.iter().position(|d| d == "kernel") }
    }

    /// Those of `row`'s request-size cause against its baseline `b`: the
    /// experiment its `test` names (the baseline's max_sectors_kb, the
    /// probe read's median) removing it on `row`'s kernel, whose figures
    /// agree with their outcome.
    pub fn of(&self, row: &Row, b: &Row) -> Vec<&Tested> {
        let Some(test) = request_size_test(row, b) else { return Vec::new() };
        let kernel = self.kernel_at.and_then(|i| row.key.get(i)).map(String::as_str);
        (self.tested.iter())
            .filter(|t| t.tests((test.set.as_str(), test.metric.as_str()), kernel) && t.agrees_with_its_figures())
            .collect()
    }
}

/// The outcome every one of them says; None for none, or for outcomes that
/// differ (then the cause stays a candidate, each said).
fn one_outcome(tried: &[&Tested]) -> Option<Outcome> {
    let first = tried.first()?.outcome;
    tried.iter().all(|t| t.outcome == first).then_some(first)
}

/// How to test a cause: on the candidate's kernel, set `set` (the
/// baseline's value of the setting the cause names); the metric should
/// move toward the baseline's figure (`bootmark confirm --set SET --metric
/// METRIC --toward TOWARD`).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CauseTest {
    /// `KEY=VALUE` as `bootmark.set=` takes it: queue.max_sectors_kb=128.
    pub set: String,
    /// `WORKLOAD.FIGURE`: seqwrite.read_p50_ms.
    pub metric: String,
    /// The baseline's figure of the metric (median).
    pub toward: f64,
}

/// The test of a request-size cause: the candidate's requests capped at
/// the baseline's max_sectors_kb, the probe read's median its metric (what
/// a read queued behind a larger request waits on directly: the p99 the
/// cause explains is of about 130 ticks a run, near a run's worst, and
/// five runs a side rarely tell it apart). None unless each side ran under
/// one value of max_sectors_kb and they differ (a size made by merging has
/// no one setting), or the baseline has no probe read.
fn request_size_test(row: &Row, b: &Row) -> Option<CauseTest> {
    let ([this], [that]) = (row.max_sectors_kb.as_slice(), b.max_sectors_kb.as_slice()) else { return None };
    let toward = b.probe_read_p50_ms.as_ref()?.median;
    (this != that && toward > 0.0).then(|| CauseTest {
        set: format!("queue.max_sectors_kb={that}"),
        metric: format!("{}.read_p50_ms", row.workload),
        toward,
    })
}

/// Each group that has a baseline group, compared with it.
pub fn comparisons(
    rows: &[Row],
    baseline_of: &[Option<usize>],
    boots: &[usize],
    findings: &[Finding],
    variants: bool,
    given: &Confirmations,
) -> Vec<Comparison> {
    let mut out = Vec::new();
    for (i, row) in rows.iter().enumerate() {
        let Some(bi) = baseline_of[i].filter(|b| *b != i) else { continue };
        let b = &rows[bi];
        let (Some(this), Some(that)) = (&row.real_s, &b.real_s) else { continue };
        let interval = match (this.ci95, that.ci95) {
            (Some(c), Some(d)) if that.mean > d => {
                Some([(this.mean - c) / (that.mean + d), (this.mean + c) / (that.mean - d)])
            }
            _ => None,
        };
        let p99 = |r: &Row| r.probe_p99_ms.as_ref().map_or(0.0, |s| s.median);
        let stall = |r: &Row| r.max_stall_ms.unwrap_or(0.0);
        let probe_changed = p99(row).max(p99(b)) >= 20.0 && p99(row).max(p99(b)) >= 2.0 * p99(row).min(p99(b));
        let mut causes = Vec::new();
        if let Some((said, explains)) = request_cause(row, b, probe_changed) {
            let mechanism = "the disk's write request size";
            let tried = given.of(row, b);
            causes.push(Cause {
                code: "request-size",
                mechanism,
                explains: Some(explains),
                status: one_outcome(&tried).map_or("candidate", status_of),
                text: said,
                test: request_size_test(row, b),
                confirmations: tried.into_iter().cloned().collect(),
            });
        }
        let (subject, base_subject) = (super::findings::subject(row), super::findings::subject(b));
        let boots_or_variants = variants || two_boots_a_side(row, b);
        for f in findings.iter().filter(|f| f.names_cause) {
            let fired = |s: &str| f.subject.split("; ").any(|x| x == s);
            if fired(&subject) && !fired(&base_subject) {
                causes.push(Cause {
                    code: f.rule,
                    mechanism: mechanism_of(f.rule),
                    explains: None,
                    status: if boots_or_variants { "cause" } else { "candidate" },
                    text: f.sentence.clone(),
                    test: None,
                    confirmations: Vec::new(),
                });
            }
        }
        out.push(Comparison {
            candidate: row.key.first().cloned().unwrap_or_default(),
            baseline: b.key.first().cloned().unwrap_or_default(),
            group: row.key.clone(),
            workload: row.workload.clone(),
            metric: "real_s",
            baseline_median: that.median,
            candidate_median: this.median,
            ratio: this.mean / that.mean,
            ratio_interval: interval,
            test: if row.boots.len() >= 2 && b.boots.len() >= 2 {
                "across boots: Mann-Whitney U over the boots' median times, p < 0.05"
            } else {
                "the means' 95 % intervals (Student's t) do not overlap"
            },
            significant: row.significant,
            mann_whitney_p: super::stats::mann_whitney(&row.real_runs, &b.real_runs).map(|(_, p)| p),
            runs: [that.n, this.n],
            boots: [boots[bi], boots[i]],
            probe_p99_ms: [p99(b), p99(row)],
            max_stall_ms: [stall(b), stall(row)],
            across_boots: across_boots(row, b),
            noise_floor: floor_of(row, b),
            causes,
        });
    }
    out
}

/// The mechanism a finding that names a cause stands for.
fn mechanism_of(rule: &str) -> &'static str {
    match rule {
        "dirty-limit" => "dirty throttling (balance_dirty_pages)",
        "read-starvation" => "a read held in the device behind the writes",
        "stall" => "the machine stopped responding (see the finding for where the writer waited)",
        _ => "see the finding",
    }
}

/// The parts, each said, or summed up with the largest differences when there are many.
fn listed(mut parts: Vec<Part>) -> String {
    if parts.len() <= LISTED_AT_MOST {
        return parts.iter().map(|p| p.text.as_str()).collect::<Vec<_>>().join("; ");
    }
    let n = parts.len();
    let differ = parts.iter().filter(|p| p.differs).count();
    let significant = parts.iter().filter(|p| p.significant).count();
    parts.retain(|p| p.differs);
    parts.sort_by(|a, b| b.significant.cmp(&a.significant).then(b.size.total_cmp(&a.size)));
    let largest: Vec<&str> = parts.iter().take(3).map(|p| p.text.as_str()).collect();
    let mut text = format!("{n} groups: {} the same, {differ} differ ({significant} significantly)", n - differ);
    if !largest.is_empty() {
        text += &format!("; the largest: {}", largest.join("; "));
    }
    text
}
