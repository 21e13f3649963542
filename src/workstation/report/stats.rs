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

    #[test]
    fn significance_needs_separated_intervals() {
        let slow = summarize(&[315.0, 310.0, 320.0]).unwrap();
        let fast = summarize(&[112.0, 110.0, 115.0]).unwrap();
        let noisy = summarize(&[100.0, 400.0, 250.0]).unwrap();
        assert!(significant(&slow, &fast));
        assert!(!significant(&slow, &noisy));
        assert!(!significant(&summarize(&[1.0]).unwrap(), &fast));
    }
}
