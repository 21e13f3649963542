//! Benchmarks that print figures beside a reference tool: the workloads
//! beside dd and fio (`disk`), the collector and the report beside grep.

pub mod collect;
pub mod disk;
pub mod report;
