//! The probe's waits of every run of a group, kept as counts on a log
//! scale: what a CDF per workload is drawn from without keeping the runs.
//! Bins are a twentieth of a decade wide (12 % apart), from 0.1 ms to
//! 100 s; a wait outside is counted in the first or last bin.

/// Bins per decade.
const PER_DECADE: f64 = 20.0;
/// The lowest bin's lower edge, log10 of ms (0.1 ms).
const LOW: f64 = -1.0;
/// 0.1 ms to 100 s: six decades.
const BINS: usize = 6 * PER_DECADE as usize;

#[derive(Clone, Debug, Default)]
pub struct LogHistogram {
    /// Empty until the first wait: groups without a probe cost nothing.
    counts: Vec<u32>,
    pub n: u64,
    pub min_ms: f64,
    pub max_ms: f64,
}

impl LogHistogram {
    pub fn add(&mut self, ms: f64) {
        if !ms.is_finite() || ms < 0.0 {
            return;
        }
        if self.counts.is_empty() {
            self.counts = vec![0; BINS];
            (self.min_ms, self.max_ms) = (ms, ms);
        }
        let bin = ((ms.max(1e-9).log10() - LOW) * PER_DECADE).floor().clamp(0.0, (BINS - 1) as f64) as usize;
        self.counts[bin] += 1;
        self.n += 1;
        self.min_ms = self.min_ms.min(ms);
        self.max_ms = self.max_ms.max(ms);
    }

    /// The CDF as (wait in ms, fraction of waits at most that long): one
    /// point per bin holding waits, at its upper edge (the last at the
    /// largest wait itself, so that the curve ends where the data does).
    pub fn cdf(&self) -> Vec<(f64, f64)> {
        let mut seen = 0u64;
        let mut out = Vec::new();
        for (i, &c) in self.counts.iter().enumerate().filter(|(_, c)| **c > 0) {
            seen += c as u64;
            let upper = 10f64.powf(LOW + (i + 1) as f64 / PER_DECADE);
            out.push((upper.min(self.max_ms).max(self.min_ms), seen as f64 / self.n as f64));
        }
        if let Some(last) = out.last_mut() {
            last.0 = self.max_ms;
        }
        out
    }

    /// The wait a fraction `q` of waits were at most, to the bin's upper edge.
    pub fn quantile(&self, q: f64) -> Option<f64> {
        self.cdf().into_iter().find(|(_, f)| *f >= q).map(|(ms, _)| ms)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 90 waits of 2 ms and 10 of 900 ms: nine tenths at 2 ms (within its
    /// bin's 12 %), all by 900 ms; the curve ends at the largest wait.
    #[test]
    fn the_cdf_rises_where_the_waits_are() {
        let mut h = LogHistogram::default();
        (0..90).for_each(|_| h.add(2.0));
        (0..10).for_each(|_| h.add(900.0));
        let cdf = h.cdf();
        assert_eq!(cdf.len(), 2);
        assert!((2.0..2.0 * 1.13).contains(&cdf[0].0), "{cdf:?}");
        assert_eq!(cdf[0].1, 0.9);
        assert_eq!(cdf[1], (900.0, 1.0));
        assert_eq!(h.quantile(0.5).map(|q| q < 2.3), Some(true));
        assert_eq!(h.quantile(0.99), Some(900.0));
        assert_eq!((h.n, h.min_ms, h.max_ms), (100, 2.0, 900.0));
    }

    /// Waits beyond the range land in the end bins, not out of bounds; a
    /// NaN is not a wait.
    #[test]
    fn waits_outside_the_range_are_kept_at_its_ends() {
        let mut h = LogHistogram::default();
        for ms in [0.0, 0.001, 1e7, f64::NAN, -1.0] {
            h.add(ms);
        }
        assert_eq!(h.n, 3);
        let cdf = h.cdf();
        assert_eq!(cdf.first().map(|p| p.1), Some(2.0 / 3.0));
        assert_eq!(cdf.last(), Some(&(1e7, 1.0)));
    }
}
