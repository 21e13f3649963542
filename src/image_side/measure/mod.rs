//! Measurements: clocks, latency histograms, the responsiveness probe, the
//! /proc timeline sampler and the evidence that identifies a run's machine.
//! Nothing here writes to the filesystem under test except the probe's own files.

pub mod blocked;
pub mod clock;
pub mod evidence;
pub mod footprint;
pub mod histogram;
pub mod klog;
pub mod probe;
pub mod procstat;
pub mod progress;
pub mod sampler;
pub mod trace_lines;
pub mod tracing;
