//! Confirming a candidate cause by experiment (`bootmark confirm`): one
//! kernel booted as found and booted with the one setting the cause names
//! changed, boot after boot, until a test across boots decides whether the
//! change moved the metric as the cause says it should.
//!
//! The question: the finding says a mechanism made the metric worse on
//! this kernel (or better on another). If so, changing the setting that
//! drives it must move the metric, and most of the way to where the cause
//! says it would be without it (`toward`, say the good kernel's figure).
//! The boot is the unit: each boot's value is the median of its runs
//! (`Metric::per_boot`).
//!
//! The test is looked at after 5, 6, … `cap` boots a side, the first
//! looks that decide ending it; each look at level ALPHA / looks
//! (Bonferroni), so that over all the looks a change that is not there is
//! called confirmed at most ALPHA / 2 of the time (two-sided tests, one
//! direction counted). At a look:
//! - **confirmed**: the changed boots differ from the found ones in the
//!   cause's direction (Mann–Whitney, p below the look's level), by more
//!   than the found boots' A/A noise floor (how far the kernel as found
//!   moves from itself), and not provably short of half the way;
//! - **refuted**: the changed boots are provably short of half the way
//!   (the same rank test, the found values moved half the way on a log
//!   scale): whatever the setting does, it does not explain the difference;
//! - neither at `cap`: **can't tell**, with the figures.
//!
//! Four boots a side cannot decide at any level under 0.029 (the rank
//! test's smallest p with 4 and 4), so the first look is at five.

use super::step::{Worse, aa_spread};
use crate::workstation::report::stats;
use crate::workstation::report::words::figure;

/// The chance, over all looks, of calling a change confirmed (or refuted) when the rank test's null holds.
pub const ALPHA: f64 = 0.05;
/// The first look: with four boots a side no p reaches a look's level.
pub const FIRST_LOOK: usize = 5;
/// The most boots a side a confirmation gets by default, and the range `--cap` may take.
pub const DEFAULT_CAP: usize = 8;
pub const CAP_RANGE: std::ops::RangeInclusive<usize> = FIRST_LOOK..=16;
/// The two sides' candidate names: the entry as found, and with the setting changed
/// (the variant its changed boots' records carry).
pub const AS_FOUND: &str = "as-found";
pub const CHANGED: &str = "changed";
/// Boots that may fail (no value) before the confirmation gives up.
pub const FAILURES_AT_MOST: usize = 3;
/// Found boots after which a `--toward` on their wrong side is said, before the first look.
const AIM_SEEN_AFTER: usize = 3;
/// Where no `toward` is given: the change a cause must explain, at least (20 %).
pub const DEFAULT_EFFECT: f64 = 0.2;

/// What the cause says the change should do.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Expected {
    /// Which way the metric is worse.
    pub worse: Worse,
    /// Whether the change removes the cause (the metric should get better)
    /// or gives it (worse: the good kernel given the bad one's setting).
    pub removes: bool,
    /// Where the metric would be without the cause (the good kernel's
    /// figure); None: DEFAULT_EFFECT of the found value that way.
    pub toward: Option<f64>,
}

/// A confirmation's state after its boots so far.
#[derive(Clone, Debug, PartialEq)]
pub enum Said {
    Confirmed(Evidence),
    Refuted(Evidence),
    /// Not decided yet: boot each side again.
    More,
    /// Not decided at the cap.
    CantTell(Evidence),
    /// No test can be made: why (a `toward` on the wrong side of the found value).
    Unfit(String),
}

/// What a look saw: the figures the verdict quotes.
#[derive(Clone, Debug, PartialEq)]
pub struct Evidence {
    /// Boots a side.
    pub boots: usize,
    /// The median of the boots' values: as found, then changed.
    pub medians: [f64; 2],
    /// Changed / found.
    pub ratio: f64,
    /// The expected ratio (where the cause would put it).
    pub expected: f64,
    /// The rank test's two-sided p of changed against found (exact, ties
    /// and all, up to 10 boots a side), and the look's level.
    pub p: f64,
    /// The same test against the found values moved half the way, where
    /// the changed ones lie short of them (None: they do not).
    pub half_way_p: Option<f64>,
    pub level: f64,
    /// The found side's A/A spread (|ratio − 1| of its first boots' median against its last's).
    pub floor: Option<f64>,
    /// How much of the expected change (on a log scale) the change made: 1 all of it.
    pub share: f64,
}

/// The level of each look when a side gets at most `cap` boots.
pub fn level(cap: usize) -> f64 {
    ALPHA / (cap.saturating_sub(FIRST_LOOK) + 1) as f64
}

/// Decided from the boots so far (`found` and `changed`, in boot order;
/// a look uses the first n of each), as replayed on every call.
pub fn decide(expected: &Expected, found: &[f64], changed: &[f64], cap: usize) -> Said {
    // A --toward on the wrong side of the kernel as found is said as soon as
    // three found boots show it, not after five a side (boots spent on a
    // test that cannot be made; the directory then holds that experiment).
    if (AIM_SEEN_AFTER..FIRST_LOOK).contains(&found.len())
        && let Err(why) = stats::median(found).ok_or(String::new()).and_then(|m| expected_ratio(expected, m))
    {
        return Said::Unfit(why);
    }
    let have = found.len().min(changed.len());
    let mut last = None;
    for n in FIRST_LOOK..=have.min(cap) {
        match look(expected, &found[..n], &changed[..n], level(cap)) {
            Ok(Ok(said)) => return said,
            Ok(Err(undecided)) => last = Some(undecided),
            Err(why) => return Said::Unfit(why),
        }
    }
    match last {
        Some(e) if e.boots >= cap => Said::CantTell(e),
        _ => Said::More,
    }
}

/// One look at n boots a side: Ok(verdict) when it decides, else its figures.
/// Refuted when the changed boots are provably short of half the expected
/// change (the rank test against the found values moved half the way,
/// below `level`): the cause would have moved them at least that far.
fn look(expected: &Expected, found: &[f64], changed: &[f64], level: f64) -> Result<Result<Said, Evidence>, String> {
    let e = evidence(expected, found, changed, level)?;
    let toward_expected = (e.ratio < 1.0) == (e.expected < 1.0) && e.ratio != 1.0;
    let beyond_floor = e.floor.is_none_or(|f| (e.ratio - 1.0).abs() > f);
    if e.half_way_p.is_some_and(|p| p < level) {
        return Ok(Ok(Said::Refuted(e)));
    }
    if e.p < level && toward_expected && beyond_floor {
        return Ok(Ok(Said::Confirmed(e)));
    }
    Ok(Err(e))
}

/// The rank test's p of the changed boots against the found ones moved
/// half the way (by √expected), when the changed ones lie on the found
/// side of them; None when they lie beyond (no evidence of falling short).
fn half_way_p(found: &[f64], changed: &[f64], expected: f64) -> Option<f64> {
    let half = expected.sqrt();
    let moved: Vec<f64> = found.iter().map(|v| v * half).collect();
    let (u, p) = stats::rank_test_exact(changed, &moved)?;
    // u counts pairs where changed is the larger: many means changed stayed above.
    let pairs = (changed.len() * moved.len()) as f64;
    let changed_larger = u > pairs / 2.0;
    (changed_larger == (expected < 1.0)).then_some(p)
}

/// The figures of a look, or why no test fits.
fn evidence(expected: &Expected, found: &[f64], changed: &[f64], level: f64) -> Result<Evidence, String> {
    let (fm, cm) = (stats::median(found).unwrap_or(0.0), stats::median(changed).unwrap_or(0.0));
    if found.iter().chain(changed).any(|v| *v <= 0.0) || fm <= 0.0 {
        return Err("a boot's value is zero or negative: a ratio cannot be taken (choose a time or a rate)".into());
    }
    let ratio_expected = expected_ratio(expected, fm)?;
    let p = stats::rank_test_exact(changed, found).map_or(1.0, |(_, p)| p);
    // How far the kernel as found moves from itself (its first boots against
    // its last): a change no larger, it could have made alone. The changed
    // side's own spread says how steady the setting is, not whether it moved
    // the metric (a 5-boot side split 2 against 3 can spread 87 % while every
    // one of its boots lies below every found one).
    let floor = aa_spread(found);
    let ratio = cm / fm;
    Ok(Evidence {
        boots: found.len().min(changed.len()),
        medians: [fm, cm],
        ratio,
        expected: ratio_expected,
        p,
        half_way_p: half_way_p(found, changed, ratio_expected),
        level,
        floor,
        share: ratio.ln() / ratio_expected.ln(),
    })
}

/// changed / found as the cause would have it.
fn expected_ratio(expected: &Expected, found_median: f64) -> Result<f64, String> {
    // Removing a cause makes the metric better; giving it, worse.
    let better_is_lower = expected.worse == Worse::Larger;
    let lower = better_is_lower == expected.removes;
    let ratio = match expected.toward {
        Some(t) => t / found_median,
        None if lower => 1.0 - DEFAULT_EFFECT,
        None => 1.0 / (1.0 - DEFAULT_EFFECT),
    };
    if !(ratio.is_finite() && ratio > 0.0) || (ratio < 1.0) != lower || ratio == 1.0 {
        let way = if lower { "lower" } else { "higher" };
        return Err(format!(
            "--toward {} is not {way} than the found boots' median {found_median:.4}: the change it names is \
             not one this experiment could show (the cause would make it {way})",
            expected.toward.unwrap_or(f64::NAN)
        ));
    }
    Ok(ratio)
}

/// One boot's runs, seen all at once (`bootmark confirm --same-boot`): a
/// single look at level ALPHA, the first n runs of each side where n is
/// the fewer. Undecided is "can't tell": another boot is another experiment.
pub fn decide_once(expected: &Expected, found: &[f64], changed: &[f64]) -> Said {
    let n = found.len().min(changed.len());
    if n < FIRST_LOOK {
        return Said::Unfit(format!(
            "{n} run(s) a side with a value: the rank test needs {FIRST_LOOK} a side to decide at {ALPHA}"
        ));
    }
    match look(expected, &found[..n], &changed[..n], ALPHA) {
        Ok(Ok(said)) => said,
        Ok(Err(undecided)) => Said::CantTell(undecided),
        Err(why) => Said::Unfit(why),
    }
}

/// What a side's values are: each boot's median (the boot is the unit), or
/// each run of one boot (a same-boot comparison: it holds for that boot).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unit {
    Boots,
    RunsOfOneBoot,
}

impl Unit {
    fn side(self, n: usize) -> String {
        format!("{n} {}", self.name())
    }

    /// What a side's values are, after their count: "boots a side".
    pub fn name(self) -> &'static str {
        match self {
            Unit::Boots => "boots a side",
            Unit::RunsOfOneBoot => "runs a side, interleaved in one boot",
        }
    }
}

/// The verdict as a sentence: "confirmed: with queue.max_sectors_kb=128
/// seqwrite.probe_p99_ms went 49.0 → 15.2 (…)". `metric` names the
/// figure, `set` the change, `toward` where the cause would put it, `unit`
/// what each side's values are.
pub fn verdict(said: &Said, metric: &str, set: &str, toward: Option<f64>, unit: Unit) -> String {
    let moved = |e: &Evidence| {
        format!(
            "with {set} {metric} went {} → {} (×{:.2}, medians of {})",
            figure(e.medians[0]),
            figure(e.medians[1]),
            e.ratio,
            unit.side(e.boots)
        )
    };
    let looks = match unit {
        Unit::Boots => format!(" per look (α {ALPHA} over looks at {FIRST_LOOK} to the cap)"),
        Unit::RunsOfOneBoot => " (one look)".to_string(),
    };
    let found_side = match unit {
        Unit::Boots => "the found boots'",
        Unit::RunsOfOneBoot => "the found runs'",
    };
    // A same-boot verdict is about that boot: the kernel, its disk and its state then.
    let scope = match unit {
        Unit::Boots => "",
        Unit::RunsOfOneBoot => " It holds for this boot; across boots, run the confirmation without --same-boot.",
    };
    let aim = |e: &Evidence| match toward {
        Some(t) => format!("the {} the cause would explain", figure(t)),
        None => format!("the ×{:.2} a cause must explain (no --toward)", e.expected),
    };
    let test = |e: &Evidence| {
        format!(
            "rank test (Mann–Whitney, exact) p {:.4} against a level of {:.4}{looks}{}",
            e.p,
            e.level,
            e.floor.map_or(String::new(), |f| format!("; {found_side} A/A noise floor {:.1} %", f * 100.0))
        )
    };
    match said {
        Said::Confirmed(e) => format!(
            "confirmed: {}, {:.0} % of the way to {}; {}; and not provably short of half the way. \
             Changing this setting alone moves the metric as the cause says: on this kernel {set} \
             acts on the difference (a cause of it, tested{}).{scope}",
            moved(e),
            e.share * 100.0,
            aim(e),
            test(e),
            if e.share < 0.5 { ", perhaps of part of it" } else { "" }
        ),
        Said::Refuted(e) if e.p < e.level && e.share > 0.0 => format!(
            "refuted as the explanation: {}, a real change ({}), but only {:.0} % of the way to {}, \
             provably short of half of it (the rank test against the found values moved half the way: \
             p {:.4}). {set} may be a part of the difference; it does not explain most of it.{scope}",
            moved(e),
            test(e),
            e.share * 100.0,
            aim(e),
            e.half_way_p.unwrap_or(f64::NAN)
        ),
        Said::Refuted(e) => format!(
            "refuted: {}, {:.0} % of the way to {}: provably short of half of it (the rank test against \
             the found values moved half the way: p {:.4} against a level of {:.4}), and no change \
             beyond chance ({}). {set} does not explain the difference here.{scope}",
            moved(e),
            e.share * 100.0,
            aim(e),
            e.half_way_p.unwrap_or(f64::NAN),
            e.level,
            test(e)
        ),
        Said::CantTell(e) => format!(
            "can't tell after {}: {}, {:.0} % of the way to {}; {}. Neither confirmed nor \
             refuted: {}",
            unit.side(e.boots),
            moved(e),
            e.share * 100.0,
            aim(e),
            test(e),
            match unit {
                Unit::Boots =>
                    "a new confirmation with a higher --cap (its looks are fixed once it has boots: \
                                another --dir) or a quieter machine might decide",
                Unit::RunsOfOneBoot => "more --runs, or the confirmation across boots, might decide",
            }
        ),
        Said::More => "not decided yet".to_string(),
        Said::Unfit(why) => format!("no test: {why}"),
    }
}

/// A decided verdict kept beside the confirmation's boots (`verdict.json`),
/// and where, said: what `bootmark report --confirmation` reads.
pub fn keep(t: &crate::workstation::report::tested::Tested, dir: &std::path::Path) -> Result<(), String> {
    let path = t.write(dir)?;
    crate::workstation::output::say(&format!("the verdict for `bootmark report --confirmation`: {}", path.display()));
    Ok(())
}

/// A cause's test as the report's JSON gives it (`comparisons[].causes[].test`).
#[derive(Clone, Debug, PartialEq)]
pub struct FromReport {
    /// The cause's words, and which kernel against which.
    pub said: String,
    pub set: String,
    pub metric: String,
    pub toward: f64,
}

/// The first cause with a test in a report's JSON (`bootmark report
/// --format json`, or a bisect's `report.json`), or why there is none.
pub fn from_report(path: &std::path::Path) -> Result<FromReport, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    let json: serde_json::Value = serde_json::from_str(&text).map_err(|e| {
        format!("{}: not a report's JSON ({e}): give `bootmark report --format json`'s output", path.display())
    })?;
    let comparisons = json
        .get("comparisons")
        .and_then(|c| c.as_array())
        .ok_or_else(|| format!("{}: no comparisons: give `bootmark report --format json`'s output", path.display()))?;
    for c in comparisons {
        for cause in c.get("causes").and_then(|c| c.as_array()).into_iter().flatten() {
            let Some(test) = cause.get("test") else { continue };
            let text = |v: &serde_json::Value, key: &str| v.get(key).and_then(|x| x.as_str()).map(str::to_string);
            let (Some(set), Some(metric), Some(toward)) =
                (text(test, "set"), text(test, "metric"), test.get("toward").and_then(|t| t.as_f64()))
            else {
                return Err(format!("{}: a cause's test lacks its set, metric or toward: {test}", path.display()));
            };
            let said = format!(
                "{} against {}: {}",
                text(c, "candidate").unwrap_or_default(),
                text(c, "baseline").unwrap_or_default(),
                text(cause, "text").unwrap_or_default()
            );
            return Ok(FromReport { said, set, metric, toward });
        }
    }
    Err(format!(
        "{}: the report names no cause that one setting would test (a request size whose two sides ran under \
         one max_sectors_kb each): give --metric, --set and --toward yourself",
        path.display()
    ))
}

/// The two medians a verdict quotes ("went 19.7 → 4.37 (×0.22, …"), as
/// found then changed; None for a verdict without them (no test).
pub fn quoted_medians(words: &str) -> Option<(f64, f64)> {
    let (_, rest) = words.split_once(" went ")?;
    let (pair, _) = rest.split_once(" (×")?;
    let (a, b) = pair.split_once(" → ")?;
    Some((a.parse().ok()?, b.parse().ok()?))
}

/// Whether a verdict's words quote `medians` (as found, changed) as
/// [`figure`] prints them: three significant figures, within 1 %.
pub fn quotes(words: &str, medians: (f64, f64)) -> bool {
    let close = |q: f64, real: f64| (q - real).abs() <= 0.01 * real.abs().max(1.0);
    quoted_medians(words).is_some_and(|(f, c)| close(f, medians.0) && close(c, medians.1))
}

#[cfg(test)]
mod tests {
    use super::*;

    const REMOVES: Expected = Expected { worse: Worse::Larger, removes: true, toward: Some(15.0) };

    /// A small deterministic generator (xorshift): the same seed, the same numbers.
    fn xorshift(seed: u64) -> impl FnMut() -> u64 {
        let mut s = seed.max(1);
        move || {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            s
        }
    }

    /// Values around `median` with a spread of `cv`, from `seed`.
    fn boots(seed: u64, n: usize, median: f64, cv: f64) -> Vec<f64> {
        let mut next = xorshift(seed);
        let mut uniform = move || (next() >> 11) as f64 / (1u64 << 53) as f64;
        // A normal from two uniforms (Box–Muller), on a log scale.
        (0..n)
            .map(|_| {
                let (a, b) = (uniform().max(1e-12), uniform());
                let z = (-2.0 * a.ln()).sqrt() * (2.0 * std::f64::consts::PI * b).cos();
                median * (cv * z).exp()
            })
            .collect()
    }

    #[test]
    fn the_looks_share_alpha() {
        assert_eq!(level(5), 0.05);
        assert_eq!(level(8), 0.0125);
        // Five a side, apart: the rank test's p (0.0079) passes a look of cap 8.
        assert!(stats::mann_whitney(&[1.0, 2.0, 3.0, 4.0, 5.0], &[6.0, 7.0, 8.0, 9.0, 10.0]).unwrap().1 < level(8));
    }

    /// The README's case: 6.12's probe p99 about 49 ms, 15 with requests capped.
    #[test]
    fn a_cause_that_moves_the_metric_all_the_way_is_confirmed_at_the_first_look() {
        let found = boots(1, 8, 49.0, 0.1);
        let changed = boots(2, 8, 15.0, 0.1);
        assert_eq!(decide(&REMOVES, &found[..4], &changed[..4], 8), Said::More, "four a side decide nothing");
        let Said::Confirmed(e) = decide(&REMOVES, &found, &changed, 8) else { panic!() };
        assert_eq!(e.boots, 5);
        assert!(e.p < 0.0125 && e.share > 0.8, "{e:?}");
    }

    /// A setting that changes nothing: refuted, never confirmed.
    #[test]
    fn a_setting_that_changes_nothing_is_refuted() {
        let found = boots(3, 8, 49.0, 0.1);
        let changed = boots(4, 8, 49.0, 0.1);
        let Said::Refuted(e) = decide(&REMOVES, &found, &changed, 8) else { panic!() };
        assert!(e.share.abs() < 0.2, "{e:?}");
    }

    /// A real change short of half the way (49 → 15 toward 2: a third of
    /// the log distance) is refuted as the explanation, and said to be a
    /// real change that may be a part of the difference; a change that is
    /// not there is refuted plainly. (From a review: "refuted" alone said
    /// of a real partial cause claimed more than the test shows.)
    #[test]
    fn a_real_change_short_of_half_the_way_is_refuted_as_the_explanation_only() {
        let far = Expected { toward: Some(2.0), ..REMOVES };
        let (found, changed) = (boots(12, 8, 49.0, 0.1), boots(13, 8, 15.0, 0.1));
        let said = decide(&far, &found, &changed, 8);
        let Said::Refuted(e) = &said else { panic!("{said:?}") };
        assert!(e.p < e.level && e.share > 0.3 && e.share < 0.5, "{e:?}");
        let words = verdict(&said, "seqwrite.probe_p99_ms", "queue.max_sectors_kb=128", Some(2.0), Unit::Boots);
        assert!(words.starts_with("refuted as the explanation: with queue.max_sectors_kb=128"), "{words}");
        assert!(words.contains("may be a part of the difference"), "{words}");
        let nothing = decide(&far, &found, &boots(14, 8, 49.0, 0.1), 8);
        let words = verdict(&nothing, "seqwrite.probe_p99_ms", "vm.swappiness=10", Some(2.0), Unit::Boots);
        assert!(
            words.starts_with("refuted: with vm.swappiness=10") && words.contains("no change beyond chance"),
            "{words}"
        );
        let confirmed = decide(&REMOVES, &found, &changed, 8);
        let words = verdict(&confirmed, "seqwrite.probe_p99_ms", "queue.max_sectors_kb=128", Some(15.0), Unit::Boots);
        assert!(words.starts_with("confirmed: with queue.max_sectors_kb=128 seqwrite.probe_p99_ms went "), "{words}");
    }

    /// Half the way and noisy: nothing decided at the cap, said as such
    /// (boots spread 18 to 70 ms, the changed ones overlapping the found).
    #[test]
    fn a_partial_change_in_noise_is_cant_tell_at_the_cap() {
        let found = [30.0, 70.0, 40.0, 60.0, 49.0, 35.0, 65.0, 45.0];
        let changed = [20.0, 55.0, 25.0, 35.0, 27.0, 18.0, 45.0, 30.0];
        let Said::CantTell(e) = decide(&REMOVES, &found, &changed, 8) else { panic!() };
        assert!(e.p > e.level && e.share > 0.3 && e.share < 0.7, "{e:?}");
        assert_eq!(decide(&REMOVES, &found[..6], &changed[..6], 8), Said::More);
    }

    /// A `toward` on the wrong side, and values a ratio cannot take, are refused.
    #[test]
    fn a_test_that_cannot_be_made_says_why() {
        // Said after three found boots, before the first look (from a hostile
        // user's run: five boots a side were spent first).
        let three = boots(7, 3, 10.0, 0.1);
        assert_eq!(decide(&REMOVES, &three[..2], &[], 8), Said::More);
        assert!(matches!(decide(&REMOVES, &three, &[], 8), Said::Unfit(_)));
        let found = boots(7, 5, 10.0, 0.1);
        let Said::Unfit(why) = decide(&REMOVES, &found, &found, 8) else { panic!() };
        assert!(why.contains("--toward 15 is not lower than the found boots' median"), "{why}");
        let zero = [0.0; 5];
        let no_toward = Expected { toward: None, ..REMOVES };
        assert!(matches!(decide(&no_toward, &zero, &zero, 8), Said::Unfit(_)));
    }

    /// Giving the good kernel the bad one's setting should make it worse;
    /// with a throughput metric, worse is lower.
    #[test]
    fn giving_a_cause_is_confirmed_by_a_change_the_other_way() {
        let gives = Expected { worse: Worse::Larger, removes: false, toward: Some(49.0) };
        let (found, changed) = (boots(8, 8, 15.0, 0.1), boots(9, 8, 47.0, 0.1));
        assert!(matches!(decide(&gives, &found, &changed, 8), Said::Confirmed(_)));
        let rate = Expected { worse: Worse::Smaller, removes: true, toward: None };
        let (found, changed) = (boots(10, 8, 100.0, 0.05), boots(11, 8, 140.0, 0.05));
        assert!(matches!(decide(&rate, &found, &changed, 8), Said::Confirmed(_)));
        assert!(matches!(decide(&rate, &changed, &found, 8), Said::Refuted(_)));
    }

    /// The false-confirmation rate in simulation: both sides from one
    /// distribution (A/A), 4000 confirmations to the cap, spreads from 3 %
    /// to 60 %: confirmed must stay under ALPHA / 2 (2.5 %) — counted.
    #[test]
    fn no_change_is_confirmed_at_most_at_the_tests_level_simulated() {
        let mut confirmed = 0;
        let trials = 4000;
        for t in 0..trials {
            let cv = [0.03, 0.1, 0.3, 0.6][t % 4];
            let found = boots(1000 + 2 * t as u64, 8, 49.0, cv);
            let changed = boots(1001 + 2 * t as u64, 8, 49.0, cv);
            let toward = Expected { toward: None, ..REMOVES };
            if matches!(decide(&toward, &found, &changed, 8), Said::Confirmed(_)) {
                confirmed += 1;
            }
        }
        let rate = confirmed as f64 / trials as f64;
        eprintln!("A/A confirmations, simulated: {confirmed} of {trials}");
        // The bound is 2.5 %; the looks are nested and most fall well under
        // their share, so the rate is far below it (3 of 4000 when first
        // counted): a rate past 0.5 % would be a changed test.
        assert!(rate <= 0.005, "{confirmed} of {trials} A/A confirmations confirmed ({:.2} %)", rate * 100.0);
    }

    /// One boot's runs at once (`--same-boot`): a planted cause confirmed, a
    /// setting that changes nothing refuted, fewer than five runs a side no test.
    #[test]
    fn one_boots_runs_decide_at_one_look() {
        let (found, cause, nothing) = (boots(20, 6, 49.0, 0.1), boots(21, 6, 15.0, 0.1), boots(22, 6, 49.0, 0.1));
        assert!(matches!(decide_once(&REMOVES, &found, &cause), Said::Confirmed(ref e) if e.level == ALPHA));
        assert!(matches!(decide_once(&REMOVES, &found, &nothing), Said::Refuted(_)));
        assert!(matches!(decide_once(&REMOVES, &found[..4], &cause), Said::Unfit(ref why) if why.contains("4 run(s)")));
        // Undecided is can't tell, never "more": the boot is over.
        let noisy = (boots(23, 5, 49.0, 0.6), boots(24, 5, 30.0, 0.6));
        assert!(matches!(decide_once(&REMOVES, &noisy.0, &noisy.1), Said::CantTell(_)));
        let words = verdict(
            &decide_once(&REMOVES, &found, &cause),
            "seqwrite.probe_p99_ms",
            "queue.max_sectors_kb=128",
            Some(15.0),
            Unit::RunsOfOneBoot,
        );
        assert!(words.contains("medians of 6 runs a side, interleaved in one boot"), "{words}");
        assert!(words.contains("(one look)") && words.contains("the found runs' A/A"), "{words}");
        assert!(words.ends_with("It holds for this boot; across boots, run the confirmation without --same-boot."));
        // A reader of the verdict finds the medians it quotes.
        let medians = (stats::median(&found).unwrap(), stats::median(&cause).unwrap());
        assert!(quotes(&words, medians), "{words} {medians:?}");
        assert!(!quotes(&words, (medians.0 * 1.05, medians.1)));
        assert_eq!(quoted_medians("no test: a --toward on the wrong side"), None);
    }

    /// The report's JSON gives a request-size cause's test; `--from` reads it.
    #[test]
    fn a_cause_and_its_test_are_read_from_the_reports_json() {
        let golden = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/report/boots.json");
        let t = from_report(std::path::Path::new(golden)).unwrap();
        assert_eq!((t.set.as_str(), t.metric.as_str()), ("queue.max_sectors_kb=128", "seqwrite.read_p50_ms"));
        assert!(t.toward > 0.0 && t.said.starts_with("6.12.") && t.said.contains("against 6.1."), "{t:?}");
        let dir = std::env::temp_dir().join(format!("bootmark-from-report-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let write = |name: &str, text: &str| {
            std::fs::write(dir.join(name), text).unwrap();
            dir.join(name)
        };
        assert!(from_report(&write("a.json", "not json")).unwrap_err().contains("not a report's JSON"));
        assert!(from_report(&write("b.json", "{}")).unwrap_err().contains("no comparisons"));
        let none = write("c.json", r#"{"comparisons": [{"causes": [{"code": "stall"}]}]}"#);
        assert!(from_report(&none).unwrap_err().contains("names no cause that one setting would test"));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// The same-boot false-confirmation rate in simulation: one look at
    /// ALPHA, a direction counted: at most 2.5 % — counted, 4000 trials of
    /// five and of eight runs a side, spreads from 3 % to 60 %.
    #[test]
    fn no_change_is_confirmed_in_one_boot_at_most_at_the_tests_level_simulated() {
        let (mut confirmed, trials) = (0, 4000);
        for t in 0..trials {
            let (cv, n) = ([0.03, 0.1, 0.3, 0.6][t % 4], [5, 8][t / 4 % 2]);
            let found = boots(9000 + 2 * t as u64, n, 49.0, cv);
            let changed = boots(9001 + 2 * t as u64, n, 49.0, cv);
            if matches!(decide_once(&Expected { toward: None, ..REMOVES }, &found, &changed), Said::Confirmed(_)) {
                confirmed += 1;
            }
        }
        let rate = confirmed as f64 / trials as f64;
        eprintln!("A/A same-boot confirmations, simulated: {confirmed} of {trials}");
        // 2.5 % with a binomial allowance (its standard error at 4000 is 0.25 %).
        assert!(rate <= 0.03, "{confirmed} of {trials} A/A same-boot confirmations confirmed ({:.2} %)", rate * 100.0);
    }

    /// The A/A records the project holds (tests/data/report/boots6-records.jsonl:
    /// six boots each of 6.1 and 6.12): each kernel's boots against themselves,
    /// both sides resampled from its six values (eight a side, to the cap),
    /// 20 resamplings per kernel and figure. Confirmed must appear no more
    /// often than the test's level allows: at 2.5 %, 3 or more of 20 would
    /// happen by chance 1.3 % of the time. Counted, and said when it fails.
    #[test]
    fn no_change_is_confirmed_on_the_projects_aa_boots() {
        use crate::schema::record::Record;
        use crate::workstation::bisect::metric::Metric;
        let text =
            std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/report/boots6-records.jsonl"))
                .unwrap();
        let records: Vec<Record> = text
            .lines()
            .filter(|l| l.contains("bootmark.result/1"))
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        let mut next = xorshift(0x5eed);
        let mut pick = move |n: usize| (next() % n as u64) as usize;
        let mut said = Vec::new();
        for figure in ["seqwrite.probe_p99_ms", "seqwrite.real_s", "manyfiles.real_s", "seqwrite.read_p50_ms"] {
            let metric = Metric::parse(figure).unwrap();
            let boots = metric.per_boot(&records);
            for kernel in ["6.1.", "6.12."] {
                let runs: std::collections::BTreeSet<&str> = records
                    .iter()
                    .filter(|r| r.kernel.release.as_deref().is_some_and(|v| v.starts_with(kernel)))
                    .map(|r| r.run_id.as_str())
                    .collect();
                let of_kernel: Vec<f64> = runs.iter().filter_map(|id| boots.get(*id).copied()).collect();
                assert_eq!(of_kernel.len(), 6, "{figure} {kernel}");
                let expected = Expected { worse: metric.worse(), removes: true, toward: None };
                let mut confirmed = 0;
                for _ in 0..20 {
                    let mut draw = || (0..8).map(|_| of_kernel[pick(6)]).collect::<Vec<f64>>();
                    let (found, changed) = (draw(), draw());
                    if matches!(decide(&expected, &found, &changed, 8), Said::Confirmed(_)) {
                        confirmed += 1;
                    }
                }
                said.push(format!("{figure} {kernel}: {confirmed} of 20"));
                assert!(confirmed <= 2, "{said:?}");
            }
        }
        eprintln!("A/A confirmations on the six-boot records: {}", said.join("; "));
    }
}
