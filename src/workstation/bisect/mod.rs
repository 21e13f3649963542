//! `bootmark bisect`: from "this kernel is worse" to the candidate that
//! made it worse — a kernel in a ladder, a commit, a setting — each step
//! decided by a sequential test across boots (`step`), the candidates
//! searched as `git bisect` does, with skips (`search`), kept on disk and
//! driven through a lab (`session`): `bootmark lab`'s servers (`on_lab`),
//! a git range's commits built and booted there (`git`, its log `git_log`),
//! as `bootmark bisect` asks (`command`); and a candidate cause tested by
//! experiment, across boots (`confirm`) or in one boot (`same_boot`).

pub mod command;
pub mod confirm;
pub mod git;
pub mod git_log;
pub mod metric;
pub mod on_lab;
pub mod same_boot;
pub mod search;
pub mod session;
pub mod settings;
pub mod step;
