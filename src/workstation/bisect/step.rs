//! How one bisect step is decided: by a sequential test across boots, not
//! by one run.
//!
//! The good and bad ends are measured first, several boots each. They must
//! be told apart (`Ends::check`): the rank test over their boots gives
//! p < 0.05, and their medians differ by more than either end differs from
//! itself (the A/A noise floor, where an end has the boots for one). From
//! their boots the step's model is built: each end's values as a kernel
//! density (a smooth histogram of its boots: a stall that comes one boot
//! in five is a second bump, not noise around a mean).
//!
//! A candidate is then booted until Wald's sequential probability ratio
//! test decides: after each boot the log-likelihood ratio of "like the bad
//! end" against "like the good end" is summed; above ln((1 − β)/α) it is
//! bad, below ln(β/(1 − α)) good, with α = β = 1 %. One boot counts for at
//! most ±ln 4 (a boot's evidence is capped, so that no single boot — an
//! outlier, a boot the model did not foresee — decides a step), so a step
//! takes four boots at least. At the cap on boots with no decision the step
//! is `Unsure`: reported as such, never guessed.

use crate::workstation::report::stats;

/// Wald's error rates: calling a good candidate bad (α), a bad one good (β).
pub const ALPHA: f64 = 0.01;
pub const BETA: f64 = 0.01;
/// The most one boot's log-likelihood ratio counts, either way: a boot is
/// at most four times likelier under one end than the other. The ends are
/// known from a few boots each, and a density fitted to them overstates how
/// sure one boot can be (an end that showed no stall in ten boots still
/// stalls now and then); in the simulated bisects a cap of ln 7.4 (±2) made
/// 4 % of the stall case's answers wrong, ln 4 about 1 %. So a step takes
/// four boots at least.
const PER_BOOT: f64 = 1.386_294_361_119_890_6; // ln 4
/// The rank test's level for telling the ends apart.
const ENDS_P: f64 = 0.05;
/// How far apart the ends' medians must be, in pooled standard deviations
/// of their boots: closer, a step's few boots could not be placed by either
/// (in the simulated bisects ends 2 % apart on a 3.8 % spread passed the
/// rank test now and then, and their steps then guessed).
const ENDS_SEPARATION: f64 = 2.0;
/// Boots each end needs before it can be told apart (four a side: the
/// rank test's smallest p is 0.029).
pub const END_BOOTS_AT_LEAST: usize = 4;

/// Whether a larger value of the metric is worse (times, waits, stalls) or better (throughput).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Worse {
    Larger,
    Smaller,
}

/// The two ends' values, one per boot (a boot's median over its runs).
#[derive(Clone, Debug, PartialEq)]
pub struct Ends {
    pub good: Vec<f64>,
    pub bad: Vec<f64>,
}

/// How the ends were told apart: what a bisect's report prints first.
#[derive(Clone, Debug, PartialEq)]
pub struct Apart {
    pub good_median: f64,
    pub bad_median: f64,
    /// Bad / good.
    pub ratio: f64,
    pub p: f64,
    /// How many of the ends' pooled standard deviations their medians are apart.
    pub separation: f64,
    /// The larger of the two ends' A/A spreads (|ratio − 1|), where an end has four boots.
    pub floor: Option<f64>,
}

impl Ends {
    /// Told apart, or why not (their numbers said). `worse`: which way
    /// the metric gets worse; ends the wrong way round are refused as swapped.
    pub fn check(&self, worse: Worse) -> Result<Apart, String> {
        let (g, b) = (&self.good, &self.bad);
        if g.len() < END_BOOTS_AT_LEAST || b.len() < END_BOOTS_AT_LEAST {
            return Err(format!(
                "the ends have {} and {} boots; each needs {END_BOOTS_AT_LEAST} for a rank test to tell them apart",
                g.len(),
                b.len()
            ));
        }
        let (gm, bm) = (stats::median(g).unwrap_or(0.0), stats::median(b).unwrap_or(0.0));
        let (_, p) = stats::mann_whitney(g, b).ok_or("an end has no boots")?;
        let ratio = bm / gm;
        let floor = [aa_spread(g), aa_spread(b)].into_iter().flatten().reduce(f64::max);
        let separation = separation(g, b);
        let said = format!(
            "good {gm:.4} against bad {bm:.4} (median of {} and {} boots; ratio {ratio:.3}, rank test p {p:.3}, {separation:.1} standard deviations apart{})",
            g.len(),
            b.len(),
            floor.map(|f| format!(", A/A noise floor {:.1} %", f * 100.0)).unwrap_or_default()
        );
        let swapped = match worse {
            Worse::Larger => bm < gm,
            Worse::Smaller => bm > gm,
        };
        if p >= ENDS_P || separation < ENDS_SEPARATION || floor.is_some_and(|f| (ratio - 1.0).abs() <= f) {
            return Err(format!("the ends are not distinct: {said}; nothing to bisect"));
        }
        if swapped {
            return Err(format!(
                "the ends look swapped: {said}, and the bad end is the better one; give them the other way round"
            ));
        }
        Ok(Apart { good_median: gm, bad_median: bm, ratio, p, separation, floor })
    }
}

/// How many pooled standard deviations of the ends' boots their medians
/// are apart, on the model's scale (log where every value is positive).
fn separation(good: &[f64], bad: &[f64]) -> f64 {
    let (_, g, b) = on_scale(good, bad);
    let (gm, bm) = (stats::median(&g).unwrap_or(0.0), stats::median(&b).unwrap_or(0.0));
    (bm - gm).abs() / pooled_sd(&g, &b).max(1e-12)
}

/// The ends' values on the scale the step works on: log where every value
/// is positive (a metric that changes by a factor is alike at 10 ms and at
/// 10 s), and whether that is log.
fn on_scale(good: &[f64], bad: &[f64]) -> (bool, Vec<f64>, Vec<f64>) {
    let log = good.iter().chain(bad).all(|v| *v > 0.0);
    let t = |v: &[f64]| -> Vec<f64> { v.iter().map(|x| if log { x.ln() } else { *x }).collect() };
    (log, t(good), t(bad))
}

/// The standard deviation of two samples pooled (each about its own mean).
fn pooled_sd(g: &[f64], b: &[f64]) -> f64 {
    let dof = (g.len() + b.len()).saturating_sub(2).max(1) as f64;
    (((g.len().max(1) - 1) as f64 * var(g) + (b.len().max(1) - 1) as f64 * var(b)) / dof).sqrt()
}

/// An end's first half of boots against its second, as |ratio − 1| of
/// their medians (`report::verdict::NoiseFloor`); None under four boots.
pub(crate) fn aa_spread(values: &[f64]) -> Option<f64> {
    if values.len() < 4 {
        return None;
    }
    let (first, second) = values.split_at(values.len() / 2);
    Some((stats::median(second)? / stats::median(first)? - 1.0).abs())
}

/// What one step's boots said.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Said {
    Good,
    Bad,
    /// No decision yet: another boot.
    More,
    /// No decision by the cap.
    Unsure,
}

/// The two ends' densities, on a log scale where every value is positive
/// (a metric that changes by a factor is alike at 10 ms and at 10 s).
#[derive(Clone, Debug)]
pub struct Model {
    log: bool,
    good: Vec<f64>,
    bad: Vec<f64>,
    /// The kernel density's bandwidth.
    h: f64,
    /// A broad density mixed in (2 %): a boot unlike either end weighs little, not infinitely.
    wide: (f64, f64),
}

impl Model {
    pub fn new(ends: &Ends) -> Model {
        let (log, good, bad) = on_scale(&ends.good, &ends.bad);
        let (gm, bm) = (mean(&good), mean(&bad));
        let pooled = pooled_sd(&good, &bad);
        let n = good.len().min(bad.len()).max(2) as f64;
        // Silverman's rule on the pooled spread, and never narrower than a
        // tenth of the ends' distance: a density of spikes at the few boots
        // seen would call any value between them unlike both.
        let h = (1.06 * pooled * n.powf(-0.2)).max(0.1 * (bm - gm).abs()).max(1e-9);
        let wide = ((gm + bm) / 2.0, (bm - gm).abs() + 4.0 * pooled + h);
        Model { log, good, bad, h, wide }
    }

    /// One boot's evidence: ln(p_bad(x) / p_good(x)), capped at ±PER_BOOT.
    pub fn llr(&self, x: f64) -> f64 {
        let x = if self.log { x.max(1e-12).ln() } else { x };
        let kde = |at: &[f64]| at.iter().map(|c| normal(x, *c, self.h)).sum::<f64>() / at.len() as f64;
        // Each end's density as seen in its n boots, with one boot's weight
        // given to both ends' together: what an end did not show in n boots
        // it may still do about once in n + 1 (a stall its few boots missed).
        let both = (kde(&self.good) * self.good.len() as f64 + kde(&self.bad) * self.bad.len() as f64)
            / (self.good.len() + self.bad.len()) as f64;
        let density = |at: &[f64]| {
            let n = at.len() as f64;
            let seen = (n * kde(at) + both) / (n + 1.0);
            0.98 * seen + 0.02 * normal(x, self.wide.0, self.wide.1)
        };
        (density(&self.bad).ln() - density(&self.good).ln()).clamp(-PER_BOOT, PER_BOOT)
    }

    /// A step's boots so far, judged; `cap`: the most boots a step gets.
    pub fn judge(&self, values: &[f64], cap: usize) -> (Said, f64) {
        let upper = ((1.0 - BETA) / ALPHA).ln();
        let lower = (BETA / (1.0 - ALPHA)).ln();
        let llr: f64 = values.iter().map(|v| self.llr(*v)).sum();
        let said = if llr >= upper {
            Said::Bad
        } else if llr <= lower {
            Said::Good
        } else if values.len() >= cap {
            Said::Unsure
        } else {
            Said::More
        };
        (said, llr)
    }
}

fn normal(x: f64, mean: f64, sd: f64) -> f64 {
    let z = (x - mean) / sd;
    (-0.5 * z * z).exp() / (sd * (2.0 * std::f64::consts::PI).sqrt())
}

fn mean(v: &[f64]) -> f64 {
    v.iter().sum::<f64>() / v.len().max(1) as f64
}

fn var(v: &[f64]) -> f64 {
    let m = mean(v);
    v.iter().map(|x| (x - m) * (x - m)).sum::<f64>() / (v.len().max(2) - 1) as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The six-boot demo's seqwrite real times (tests/data/report/boots6-records.jsonl):
    /// 6.1 and 6.12 are 3 % apart, within 6.1's own 2.6 % … barely not: the
    /// rank test's p 0.39 refuses them as ends.
    #[test]
    fn ends_must_be_told_apart_by_the_rank_test_and_the_floor() {
        let g = vec![13.40, 13.20, 13.75, 13.75, 14.35, 12.58];
        let b = vec![12.83, 12.71, 12.94, 13.01, 13.52, 13.40];
        let err = Ends { good: g.clone(), bad: b.clone() }.check(Worse::Larger).unwrap_err();
        assert!(err.starts_with("the ends are not distinct: good 13.5750 against bad 12.9750"), "{err}");
        let slow: Vec<f64> = g.iter().map(|v| v * 1.3).collect();
        let apart = Ends { good: g.clone(), bad: slow.clone() }.check(Worse::Larger).unwrap();
        assert!(apart.p < 0.01 && (apart.ratio - 1.3).abs() < 1e-9, "{apart:?}");
        let err = Ends { good: slow, bad: g.clone() }.check(Worse::Larger).unwrap_err();
        assert!(err.contains("look swapped"), "{err}");
        let err = Ends { good: g[..3].to_vec(), bad: b }.check(Worse::Larger).unwrap_err();
        assert!(err.contains("each needs 4"), "{err}");
    }

    /// A value at the bad end's boots is bad after four boots; fewer
    /// never decide; a value between the ends stays undecided to the cap.
    #[test]
    fn a_step_takes_four_boots_at_least_and_says_unsure_in_between() {
        let ends = Ends { good: vec![10.0, 10.3, 9.8, 10.1], bad: vec![13.0, 12.7, 13.2, 13.1] };
        let m = Model::new(&ends);
        assert_eq!(m.judge(&[13.0, 12.9, 13.1], 8).0, Said::More, "three boots");
        assert_eq!(m.judge(&[13.0, 12.9, 13.1, 13.0], 8).0, Said::Bad);
        assert_eq!(m.judge(&[10.0, 10.2, 9.9, 10.1], 8).0, Said::Good);
        let (said, llr) = m.judge(&[11.5; 8], 8);
        assert_eq!(said, Said::Unsure, "halfway: {llr}");
        assert_eq!(m.judge(&[11.5; 3], 8).0, Said::More);
    }
}
