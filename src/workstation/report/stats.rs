//! Statistics for comparing runs: median and range for display, mean with a
//! 95% confidence interval (Student's t) for significance, harmonic mean for
//! rates — the conventions of mmtests' compare-kernels.

/// Summary of one metric over a group's repetitions.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct Summary {
    pub n: usize,
    pub median: f64,
    pub min: f64,
    pub max: f64,
    pub mean: f64,
    /// Half-width of the 95% confidence interval of the mean; None for n < 2.
    pub ci95: Option<f64>,
}

/// Two-sided 95% t quantiles for 1..=30 degrees of freedom.
const T95: [f64; 30] = [
    12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160, 2.145, 2.131, 2.120,
    2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042,
];

fn t95(df: usize) -> f64 {
    T95.get(df.wrapping_sub(1)).copied().unwrap_or(1.96)
}

pub fn summarize(values: &[f64]) -> Option<Summary> {
    let mut v: Vec<f64> = values.iter().copied().filter(|x| x.is_finite()).collect();
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    let n = v.len();
    let median = if n % 2 == 1 { v[n / 2] } else { (v[n / 2 - 1] + v[n / 2]) / 2.0 };
    let mean = v.iter().sum::<f64>() / n as f64;
    let ci95 = (n >= 2).then(|| {
        let var = v.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1) as f64;
        t95(n - 1) * (var / n as f64).sqrt()
    });
    Some(Summary { n, median, min: v[0], max: v[n - 1], mean, ci95 })
}

/// The harmonic mean: the right mean of rates (MiB/s) over equal amounts of work.
pub fn harmonic_mean(values: &[f64]) -> Option<f64> {
    let v: Vec<f64> = values.iter().copied().filter(|x| x.is_finite() && *x > 0.0).collect();
    (!v.is_empty()).then(|| v.len() as f64 / v.iter().map(|x| 1.0 / x).sum::<f64>())
}

/// Is the difference between two means real? Only when their 95% intervals
/// do not overlap (a conservative test; n = 1 on either side is never significant).
pub fn significant(a: &Summary, b: &Summary) -> bool {
    match (a.ci95, b.ci95) {
        (Some(ca), Some(cb)) => (a.mean - b.mean).abs() > ca + cb,
        _ => false,
    }
}

/// The Mann–Whitney U test, two-sided, as SciPy's `mannwhitneyu` computes
/// it by default (1.7+, method "auto"): `x`'s U (its rank sum less
/// n(n+1)/2, ties given their average rank) and the p-value — exact where
/// a sample has at most 8 values and nothing ties, else the normal
/// approximation with SciPy's tie and continuity corrections. A rank test
/// assumes nothing of the distributions' shape, which runs that stall now
/// and then do not have. None when a side is empty.
pub fn mann_whitney(x: &[f64], y: &[f64]) -> Option<(f64, f64)> {
    let (n1, n2) = (x.len(), y.len());
    if n1 == 0 || n2 == 0 {
        return None;
    }
    let mut all: Vec<(f64, bool)> = x.iter().map(|v| (*v, true)).chain(y.iter().map(|v| (*v, false))).collect();
    all.sort_by(|a, b| a.0.total_cmp(&b.0));
    let (mut rank_sum_x, mut ties_term, mut i) = (0.0, 0.0, 0);
    while i < all.len() {
        let j = i + all[i..].iter().take_while(|v| v.0 == all[i].0).count();
        let average_rank = (i + 1 + j) as f64 / 2.0;
        rank_sum_x += average_rank * all[i..j].iter().filter(|v| v.1).count() as f64;
        let t = (j - i) as f64;
        ties_term += t * t * t - t;
        i = j;
    }
    let u1 = rank_sum_x - (n1 * (n1 + 1)) as f64 / 2.0;
    let u = u1.max((n1 * n2) as f64 - u1);
    let p = if (n1 <= 8 || n2 <= 8) && ties_term == 0.0 && n1 * n2 <= EXACT_PAIRS_AT_MOST {
        2.0 * exact_u_at_least(u as usize, n1, n2)
    } else {
        let n = (n1 + n2) as f64;
        let mean = (n1 * n2) as f64 / 2.0;
        let sd = ((n1 * n2) as f64 / 12.0 * ((n + 1.0) - ties_term / (n * (n - 1.0)))).sqrt();
        2.0 * normal_sf((u - mean - 0.5) / sd)
    };
    Some((u1, p.min(1.0)))
}

/// The most splits of the pooled values [`rank_test_exact`] enumerates
/// (C(16, 8) = 12,870 for eight boots a side; C(20, 10) = 184,756).
const SPLITS_AT_MOST: u64 = 250_000;

/// The Mann–Whitney U test with its two-sided p exact even where values
/// tie: every split of the pooled values into the two sides' sizes is
/// enumerated, U counted from the pooled average ranks, and p is the share
/// of splits whose U lies as far from its mean as the observed one (the
/// permutation distribution, conditional on the ties). [`mann_whitney`]
/// switches to the normal approximation at the first tie, which with a few
/// boots can be anti-conservative (eight a side, five of one value against
/// eight of another: 0.011 by the approximation, 0.026 exactly). Beyond
/// SPLITS_AT_MOST splits it is [`mann_whitney`]. Returns (U of x, p).
pub fn rank_test_exact(x: &[f64], y: &[f64]) -> Option<(f64, f64)> {
    let (n1, n) = (x.len(), x.len() + y.len());
    if n1 == 0 || y.is_empty() || choose(n as u64, n1 as u64) > SPLITS_AT_MOST {
        return mann_whitney(x, y);
    }
    // Average ranks of the pooled values, x's first.
    let pooled: Vec<f64> = x.iter().chain(y).copied().collect();
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by(|a, b| pooled[*a].total_cmp(&pooled[*b]));
    let mut rank = vec![0.0; n];
    let mut i = 0;
    while i < n {
        let j = i + order[i..].iter().take_while(|k| pooled[**k] == pooled[order[i]]).count();
        for k in &order[i..j] {
            rank[*k] = (i + 1 + j) as f64 / 2.0;
        }
        i = j;
    }
    let offset = (n1 * (n1 + 1)) as f64 / 2.0;
    let u_obs = rank[..n1].iter().sum::<f64>() - offset;
    let mean = (n1 * (n - n1)) as f64 / 2.0;
    let far = (u_obs - mean).abs() - 1e-9;
    // Every n1-subset of 0..n, as indices in increasing order.
    let mut pick: Vec<usize> = (0..n1).collect();
    let (mut as_far, mut splits) = (0u64, 0u64);
    loop {
        let u = pick.iter().map(|k| rank[*k]).sum::<f64>() - offset;
        splits += 1;
        as_far += u64::from((u - mean).abs() >= far);
        // The next subset: the rightmost index that can move, moved, the rest after it.
        let Some(at) = (0..n1).rev().find(|&a| pick[a] < n - n1 + a) else { break };
        pick[at] += 1;
        for b in at + 1..n1 {
            pick[b] = pick[b - 1] + 1;
        }
    }
    Some((u_obs, as_far as f64 / splits as f64))
}

/// C(n, k), saturating.
fn choose(n: u64, k: u64) -> u64 {
    if k > n {
        return 0;
    }
    (0..k.min(n - k)).fold(1u64, |c, i| c.saturating_mul(n - i) / (i + 1))
}

/// Fisher's exact test, two-sided, as SciPy's `fisher_exact` computes it:
/// for the table [[a, b], [c, d]] (here: boots with and without a stall over
/// 1 s, baseline then candidate), the probability of the tables with the
/// same margins that are no more likely than this one.
pub fn fisher_exact(a: u64, b: u64, c: u64, d: u64) -> f64 {
    let (row1, col1, n) = (a + b, a + c, a + b + c + d);
    // ln of C(n, k), by lgamma-free sums (n is a count of boots: small).
    let ln_choose = |n: u64, k: u64| -> f64 { (1..=k).map(|i| ((n - k + i) as f64).ln() - (i as f64).ln()).sum() };
    let ln_p = |x: u64| ln_choose(col1, x) + ln_choose(n - col1, row1 - x) - ln_choose(n, row1);
    let observed = ln_p(a);
    let lo = row1.saturating_sub(n - col1);
    let hi = row1.min(col1);
    // SciPy's relative tolerance for "no more likely" (1e-7).
    let p: f64 = (lo..=hi).map(ln_p).filter(|l| *l <= observed + (1.0 + 1e-7f64).ln()).map(f64::exp).sum();
    p.min(1.0)
}

/// The percentile bootstrap's 95 % interval of median(y) / median(x):
/// each side resampled with replacement `resamples` times (xorshift from
/// `seed`: the same data give the same interval). None when a side is empty.
pub fn bootstrap_median_ratio(x: &[f64], y: &[f64], resamples: usize, seed: u64) -> Option<[f64; 2]> {
    if x.is_empty() || y.is_empty() {
        return None;
    }
    let mut state = seed.max(1);
    let mut next = move |n: usize| {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        (state % n as u64) as usize
    };
    let mut ratios = Vec::with_capacity(resamples);
    let (mut xs, mut ys) = (vec![0.0; x.len()], vec![0.0; y.len()]);
    for _ in 0..resamples {
        xs.iter_mut().for_each(|v| *v = x[next(x.len())]);
        ys.iter_mut().for_each(|v| *v = y[next(y.len())]);
        ratios.push(median_of(&mut ys) / median_of(&mut xs));
    }
    ratios.sort_by(f64::total_cmp);
    Some([percentile(&ratios, 2.5), percentile(&ratios, 97.5)])
}

fn median_of(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 { v[n / 2] } else { (v[n / 2 - 1] + v[n / 2]) / 2.0 }
}

/// The q-th percentile of sorted values, interpolated linearly (NumPy's default).
fn percentile(sorted: &[f64], q: f64) -> f64 {
    let at = q / 100.0 * (sorted.len() - 1) as f64;
    let (i, frac) = (at.floor() as usize, at.fract());
    match sorted.get(i + 1) {
        Some(next) => sorted[i] + frac * (next - sorted[i]),
        None => sorted[i],
    }
}

/// The median of some values (None when there are none).
pub fn median(values: &[f64]) -> Option<f64> {
    let mut v: Vec<f64> = values.to_vec();
    (!v.is_empty()).then(|| median_of(&mut v))
}

/// Past this many pairs (n1·n2) the exact distribution is not counted
/// (its table grows with them) and the normal approximation stands in,
/// where SciPy would still count: at such sizes the two agree closely.
const EXACT_PAIRS_AT_MOST: usize = 100_000;

/// P(U ≥ u) when nothing ties: the share of the C(n1+n2, n1) orderings
/// whose U is at least u. `ways[a][k]`: orderings of a values of the
/// smaller sample among the larger one's first b with U = k, b growing —
/// the largest value is either one of the a (beating all b) or not.
fn exact_u_at_least(u: usize, n1: usize, n2: usize) -> f64 {
    let (small, large) = (n1.min(n2), n1.max(n2));
    let max = small * large;
    if u > max {
        return 0.0;
    }
    // With no value of the larger sample yet, each a has one ordering, U = 0.
    let mut ways: Vec<Vec<f64>> =
        (0..=small).map(|_| (0..=max).map(|k| if k == 0 { 1.0 } else { 0.0 }).collect()).collect();
    for b in 1..=large {
        for a in 1..=small {
            for k in (0..=a * b).rev() {
                let largest_is_small = if k >= b { ways[a - 1][k - b] } else { 0.0 };
                // ways[a][k] holds b − 1's count (the largest is the larger sample's).
                ways[a][k] += largest_is_small;
            }
        }
    }
    let all: f64 = ways[small].iter().sum();
    ways[small][u..].iter().sum::<f64>() / all
}

/// The standard normal's upper tail, 1 − Φ(z), from erfc (W. J. Cody's
/// rational approximations as in Numerical Recipes' erfcc: relative error
/// under 1.2e-7).
fn normal_sf(z: f64) -> f64 {
    0.5 * erfc(z / std::f64::consts::SQRT_2)
}

fn erfc(x: f64) -> f64 {
    let z = x.abs();
    let t = 1.0 / (1.0 + 0.5 * z);
    let poly = -z * z - 1.26551223
        + t * (1.00002368
            + t * (0.37409196
                + t * (0.09678418
                    + t * (-0.18628806
                        + t * (0.27886807
                            + t * (-1.13520398 + t * (1.48851587 + t * (-0.82215223 + t * 0.17087277))))))));
    let r = t * poly.exp();
    if x >= 0.0 { r } else { 2.0 - r }
}

/// Each boot once, in the order its runs were first seen (the boots a
/// row's runs came from, as a comparison across boots takes them).
pub fn boots_in_order(boot_of: impl IntoIterator<Item = u64>) -> Vec<u64> {
    let mut order = Vec::new();
    for boot in boot_of {
        if !order.contains(&boot) {
            order.push(boot);
        }
    }
    order
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summary_of_known_values() {
        let s = summarize(&[2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0]).unwrap();
        assert_eq!((s.n, s.median, s.min, s.max, s.mean), (8, 4.5, 2.0, 9.0, 5.0));
        // sample sd = 2.138; t(7) = 2.365; half-width = 2.365 * 2.138 / sqrt(8) = 1.788
        assert!((s.ci95.unwrap() - 1.788).abs() < 0.001, "{s:?}");
        assert_eq!(summarize(&[3.0]).unwrap().ci95, None);
        assert_eq!(summarize(&[]), None);
    }

    #[test]
    fn harmonic_mean_of_rates() {
        // 1 GiB at 100 MiB/s and 1 GiB at 300 MiB/s = 2 GiB in 13.65 s = 150 MiB/s.
        assert!((harmonic_mean(&[100.0, 300.0]).unwrap() - 150.0).abs() < 1e-9);
    }

    /// Against SciPy 1.10.1's figures, computed once (Debian 12's python3-scipy):
    /// /usr/bin/python3 -c "from scipy.stats import mannwhitneyu as m; print(m(X, Y, alternative='two-sided'))"
    /// for each pair below (the wide ones: X and list(range(1, 21)) or (1, 31) as floats).
    #[test]
    fn mann_whitney_matches_scipy() {
        let cases: [(&[f64], &[f64], f64, f64); 5] = [
            (&[12.17, 12.34, 12.44], &[12.08, 12.26, 13.31], 5.0, 1.0),
            (&[1.0, 2.0, 3.0], &[4.0, 5.0, 6.0], 0.0, 0.1),
            (&[3.1, 4.7, 2.2, 5.9, 4.4], &[6.3, 7.7, 5.1, 8.8, 6.6, 7.2, 9.4, 5.5], 2.0, 0.006216006216006216),
            (
                &[20.0, 21.0, 21.0, 22.0, 25.0, 25.0],
                &[21.0, 23.0, 25.0, 26.0, 26.0, 27.0, 30.0],
                7.0,
                0.050835582280956304,
            ),
            (
                &[0.9, 1.3, 2.2, 2.9, 3.1, 3.8, 4.0, 4.4, 5.2, 6.1],
                &[2.5, 3.3, 4.1, 4.9, 5.5, 5.8, 6.4, 6.9, 7.3, 7.7, 8.1, 9.9],
                19.0,
                0.007574042066784554,
            ),
        ];
        // One side over 8: still exact (the smaller one decides).
        let twenty: Vec<f64> = (1..=20).map(f64::from).collect();
        let thirty: Vec<f64> = (1..=30).map(f64::from).collect();
        let wide: [(&[f64], &[f64], f64, f64); 2] = [
            (&[1.5, 7.25, 13.5, 20.75], &twenty, 41.0, 0.9700734048560136),
            (&[30.5, 31.5, 32.5], &thirty, 90.0, 0.00036656891495601173),
        ];
        for (x, y, u, p) in cases.into_iter().chain(wide) {
            let (got_u, got_p) = mann_whitney(x, y).unwrap();
            assert_eq!(got_u, u, "{x:?} {y:?}");
            assert!((got_p - p).abs() <= 1e-6 * p.max(1e-3), "{x:?} {y:?}: p {got_p} against SciPy's {p}");
        }
        assert_eq!(mann_whitney(&[], &[1.0]), None);
    }

    /// Against SciPy 1.10.1: fisher_exact(TABLE, alternative='two-sided')[1].
    #[test]
    fn fisher_exact_matches_scipy() {
        let cases = [
            ([3, 1, 1, 3], 0.48571428571428565),
            ([0, 5, 4, 1], 0.04761904761904762),
            ([2, 7, 8, 2], 0.02301413756522116),
            ([1, 9, 11, 3], 0.0027594561852200836),
            ([5, 0, 0, 5], 0.007936507936507938),
        ];
        for ([a, b, c, d], p) in cases {
            let got = fisher_exact(a, b, c, d);
            assert!((got - p).abs() <= 1e-9, "{a} {b} {c} {d}: {got} against SciPy's {p}");
        }
    }

    /// Against SciPy 1.10.1's bootstrap((x, y), median(y)/median(x),
    /// method='percentile', n_resamples=20000, random_state=1..3): its
    /// interval (1.04591, 1.09128) moved by under 3e-4 across seeds, so a
    /// bootstrap of the same data must land within 2e-3 of it.
    #[test]
    fn the_bootstrap_interval_matches_scipys() {
        let x = [12.1, 12.4, 12.2, 12.9, 12.3, 12.5, 12.2, 12.6, 12.35, 12.45, 12.15, 12.8];
        let y = [12.9, 13.4, 13.1, 13.0, 13.8, 13.2, 12.95, 13.5, 13.25, 13.05, 13.6, 13.15];
        let [lo, hi] = bootstrap_median_ratio(&x, &y, 20_000, 7).unwrap();
        assert!((lo - 1.0459081836327346).abs() < 2e-3 && (hi - 1.0912778904665315).abs() < 2e-3, "{lo} {hi}");
        assert_eq!(bootstrap_median_ratio(&x, &y, 1000, 7), bootstrap_median_ratio(&x, &y, 1000, 7), "seeded");
        assert_eq!(bootstrap_median_ratio(&[], &y, 10, 1), None);
        assert_eq!(median(&[3.0, 1.0, 2.0, 10.0]), Some(2.5));
    }

    #[test]
    fn significance_needs_separated_intervals() {
        let slow = summarize(&[315.0, 310.0, 320.0]).unwrap();
        let fast = summarize(&[112.0, 110.0, 115.0]).unwrap();
        let noisy = summarize(&[100.0, 400.0, 250.0]).unwrap();
        assert!(significant(&slow, &fast));
        assert!(!significant(&slow, &noisy));
        assert!(!significant(&summarize(&[1.0]).unwrap(), &fast));
    }

    /// Without ties the enumeration is the exact distribution mann_whitney
    /// uses; with them, exact where the normal approximation is not: eight
    /// 2s against five 1s and three 2s, p = 2·C(8,5)/C(16,5) = 0.0256 (the
    /// five 1s all on one side), where the approximation says 0.011.
    #[test]
    fn the_rank_test_is_exact_with_ties() {
        let (x, y) = ([3.1, 4.7, 2.2, 5.9, 4.4], [6.3, 7.7, 5.1, 8.8, 6.6, 7.2, 9.4, 5.5]);
        let (u, p) = rank_test_exact(&x, &y).unwrap();
        assert_eq!(u, 2.0);
        assert!((p - 0.006216006216006216).abs() < 1e-12, "{p}");
        let found = [2.0; 8];
        let changed = [1.0, 1.0, 1.0, 1.0, 1.0, 2.0, 2.0, 2.0];
        let approximated = mann_whitney(&changed, &found).unwrap().1;
        let exact = rank_test_exact(&changed, &found).unwrap().1;
        assert!(approximated < 0.0125 && (exact - 0.025_641_025_641_025_64).abs() < 1e-9, "{approximated} {exact}");
        assert_eq!((choose(16, 8), choose(5, 7), choose(32, 16)), (12_870, 0, 601_080_390));
    }
}
