//! `cargo xtask bench` (filled in below).
use crate::Result;

#[derive(clap::Args)]
pub struct Args {}

pub fn run(_args: &Args) -> Result<()> {
    Err("not yet".into())
}
