//! The workstation side: what a user runs to get results and read them —
//! the collector (`collect`: serial logs, LAVA logs, sticks), the report
//! (`report`, records at a `glance`), the KCIDB export (`kcidb`), `watch`
//! and `lab`; `output` writes their files. Built only with the
//! `workstation` feature, so the static /init never carries it. It reads
//! what the image side wrote through `schema` and the shared leaves only.

pub mod bisect;
pub mod collect;
pub mod glance;
pub mod kcidb;
pub mod lab;
pub mod output;
pub mod report;
pub mod template;
pub mod watch;
