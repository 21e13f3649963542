//! Log-linear latency histogram: ≤0.4% relative error, no upper clamp.
//!
//! fio clamps latencies above 2^34 ns (≈17 s) into one bucket; the stalls this
//! tool exists to expose are exactly that long, so every u64 nanosecond value
//! keeps its own bucket here. Values below 128 ns are exact; above, each power
//! of two is split into 128 linear sub-buckets, and a percentile is reported as
//! the bucket's midpoint (error ≤ half a bucket width = 1/256 of the value).

use crate::schema::measures::LatencySummary;
use serde::{Deserialize, Serialize};

const SUB_BITS: u32 = 7;
const SUB_COUNT: u64 = 1 << SUB_BITS;
/// 128 exact buckets plus 57 power-of-two groups of 128 buckets.
const BUCKETS: usize = ((64 - SUB_BITS as usize) + 1) * SUB_COUNT as usize;

/// A histogram of nanosecond values.
#[derive(Clone, Debug, PartialEq)]
pub struct Histogram {
    counts: Vec<u64>,
    count: u64,
    sum_ns: u128,
    min_ns: u64,
    max_ns: u64,
}

/// Compact form sent between processes: only the non-empty buckets.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct SparseHistogram {
    pub buckets: Vec<(u32, u64)>,
    pub count: u64,
    pub sum_ns: u128,
    pub min_ns: u64,
    pub max_ns: u64,
}

impl Default for Histogram {
    fn default() -> Self {
        Self::new()
    }
}

fn bucket_index(v: u64) -> usize {
    if v < SUB_COUNT {
        return v as usize;
    }
    let msb = 63 - v.leading_zeros();
    let shift = msb - SUB_BITS;
    let sub = (v >> shift) & (SUB_COUNT - 1);
    ((shift as u64 + 1) * SUB_COUNT + sub) as usize
}

/// Lowest value and width of a bucket.
fn bucket_range(index: usize) -> (u64, u64) {
    let index = index as u64;
    if index < SUB_COUNT {
        return (index, 1);
    }
    let shift = index / SUB_COUNT - 1;
    let sub = index % SUB_COUNT;
    ((SUB_COUNT + sub) << shift, 1 << shift)
}

impl Histogram {
    pub fn new() -> Self {
        Histogram { counts: vec![0; BUCKETS], count: 0, sum_ns: 0, min_ns: u64::MAX, max_ns: 0 }
    }

    pub fn record(&mut self, ns: u64) {
        self.counts[bucket_index(ns)] += 1;
        self.count += 1;
        self.sum_ns += ns as u128;
        self.min_ns = self.min_ns.min(ns);
        self.max_ns = self.max_ns.max(ns);
    }

    /// `n` values of `ns` at once (another tool's histogram bins).
    pub fn record_n(&mut self, ns: u64, n: u64) {
        if n == 0 {
            return;
        }
        self.counts[bucket_index(ns)] += n;
        self.count += n;
        self.sum_ns += ns as u128 * n as u128;
        self.min_ns = self.min_ns.min(ns);
        self.max_ns = self.max_ns.max(ns);
    }

    pub fn count(&self) -> u64 {
        self.count
    }

    pub fn max_ns(&self) -> u64 {
        self.max_ns
    }

    pub fn merge(&mut self, other: &Histogram) {
        for (a, b) in self.counts.iter_mut().zip(&other.counts) {
            *a += b;
        }
        self.count += other.count;
        self.sum_ns += other.sum_ns;
        self.min_ns = self.min_ns.min(other.min_ns);
        self.max_ns = self.max_ns.max(other.max_ns);
    }

    /// The value at quantile `q` (0..=1): the midpoint of the bucket holding
    /// it, clamped to the exact observed min and max.
    pub fn quantile_ns(&self, q: f64) -> u64 {
        if self.count == 0 {
            return 0;
        }
        let rank = ((q * self.count as f64).ceil() as u64).clamp(1, self.count);
        let mut seen = 0;
        for (i, &c) in self.counts.iter().enumerate() {
            seen += c;
            if seen >= rank {
                let (low, width) = bucket_range(i);
                return (low + width / 2).clamp(self.min_ns, self.max_ns);
            }
        }
        self.max_ns
    }

    pub fn summary(&self) -> LatencySummary {
        let ms = |ns: u64| ns as f64 / 1e6;
        if self.count == 0 {
            return LatencySummary::default();
        }
        LatencySummary {
            count: self.count,
            mean_ms: self.sum_ns as f64 / self.count as f64 / 1e6,
            min_ms: ms(self.min_ns),
            p50_ms: ms(self.quantile_ns(0.50)),
            p90_ms: ms(self.quantile_ns(0.90)),
            p99_ms: ms(self.quantile_ns(0.99)),
            p99_9_ms: ms(self.quantile_ns(0.999)),
            max_ms: ms(self.max_ns),
        }
    }

    pub fn to_sparse(&self) -> SparseHistogram {
        SparseHistogram {
            buckets: (self.counts.iter().enumerate()).filter(|(_, c)| **c > 0).map(|(i, c)| (i as u32, *c)).collect(),
            count: self.count,
            sum_ns: self.sum_ns,
            min_ns: self.min_ns,
            max_ns: self.max_ns,
        }
    }

    pub fn from_sparse(s: &SparseHistogram) -> Self {
        let mut h = Histogram::new();
        for &(i, c) in &s.buckets {
            if let Some(slot) = h.counts.get_mut(i as usize) {
                *slot += c;
            }
        }
        h.count = s.count;
        h.sum_ns = s.sum_ns;
        h.min_ns = s.min_ns;
        h.max_ns = s.max_ns;
        h
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_are_contiguous_and_cover_u64() {
        let mut expected_low = 0u64;
        for i in 0..BUCKETS {
            let (low, width) = bucket_range(i);
            assert_eq!(low, expected_low, "bucket {i}");
            assert_eq!(bucket_index(low), i);
            assert_eq!(bucket_index(low + (width - 1)), i);
            expected_low = low.wrapping_add(width);
        }
        assert_eq!(expected_low, 0, "last bucket ends at 2^64");
        assert_eq!(bucket_index(u64::MAX), BUCKETS - 1);
    }

    #[test]
    fn quantiles_within_half_percent_even_for_minute_long_stalls() {
        for &v in &[1u64, 127, 128, 1000, 123_456, 17_000_000_000, 90_000_000_000, u64::MAX / 3] {
            let mut h = Histogram::new();
            h.record(v / 2); // keep min below v so clamping does not hide the error
            h.record(v);
            h.record(v.saturating_mul(2).max(v));
            let got = h.quantile_ns(0.5) as f64;
            let err = (got - v as f64).abs() / v as f64;
            assert!(err <= 1.0 / 256.0 + 1e-12, "v={v} got={got} err={err}");
        }
    }

    #[test]
    fn percentiles_of_a_uniform_series() {
        let mut h = Histogram::new();
        for ms in 1..=1000u64 {
            h.record(ms * 1_000_000);
        }
        let s = h.summary();
        assert_eq!(s.count, 1000);
        assert!((s.p50_ms - 500.0).abs() / 500.0 < 0.005, "{s:?}");
        assert!((s.p99_ms - 990.0).abs() / 990.0 < 0.005, "{s:?}");
        assert_eq!(s.max_ms, 1000.0);
        assert_eq!(s.min_ms, 1.0);
        assert!((s.mean_ms - 500.5).abs() < 1e-9);
    }

    #[test]
    fn sparse_round_trip_and_merge() {
        let mut a = Histogram::new();
        let mut b = Histogram::new();
        for i in 0..500 {
            a.record(i * 7919);
            b.record(i * 104_729);
        }
        let a2 = Histogram::from_sparse(&a.to_sparse());
        assert_eq!(a, a2);
        let mut m = a.clone();
        m.merge(&b);
        assert_eq!(m.count(), 1000);
        assert_eq!(m.max_ns(), 499 * 104_729);
    }
}
