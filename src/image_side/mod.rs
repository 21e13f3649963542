//! The image side: what runs on the machine under test, as PID 1 of the
//! boot image on any kernel from 2.6.9 on, or as `bootmark run`. /init
//! (`init`) brings the machine up and finds the target (through `layers`
//! when it lies inside an LV or md array), `run` runs the plan's workloads
//! (`workload`) under a variant's settings (`variant`, `tunables`) while
//! `measure` watches, and `sink` writes the records. It writes what
//! `schema` defines and never imports the workstation side.

pub mod confine;
pub mod exec;
pub mod init;
pub mod layers;
pub mod measure;
pub mod plan;
pub mod process;
pub mod run;
pub mod sink;
pub mod sysfs_block;
pub mod tunables;
pub mod variant;
pub mod workload;
