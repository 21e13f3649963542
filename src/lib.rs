//! bootmark: run the same disk benchmark under many kernels and compare.
//!
//! The image side (workloads, measurements, records, sinks; later /init)
//! and the workstation side (later: collect, report) meet in [`record`].
//! See ARCHITECTURE.md for the data flow and the module map.

pub mod bootmenu;
#[cfg(feature = "workstation")]
pub mod collect;
pub mod framing;
pub mod fsutil;
pub mod init;
pub mod measure;
pub mod plan;
pub mod process;
pub mod record;
#[cfg(feature = "workstation")]
pub mod report;
pub mod run;
pub mod sink;
pub mod size;
pub mod workload;
