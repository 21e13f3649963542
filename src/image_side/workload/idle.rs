//! `idle`: do nothing for a while. Measures the probe's view of a quiet
//! machine (a baseline run), and lets tests check that waiting burns no CPU.

use super::{Context, Outcome, PhaseTimes, since};
use crate::image_side::measure::clock::{mono_ns, sleep_until};
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Params {
    pub seconds: f64,
}

impl Default for Params {
    fn default() -> Self {
        Params { seconds: 1.0 }
    }
}

impl Params {
    pub fn validate(&self) -> Result<(), String> {
        if !(0.0..=86_400.0).contains(&self.seconds) {
            return Err(format!("seconds must be between 0 and 86400, not {}", self.seconds));
        }
        Ok(())
    }
}

pub fn run(p: &Params, _ctx: &Context) -> std::io::Result<Outcome> {
    let start = mono_ns();
    sleep_until(start + (p.seconds * 1e9) as u64);
    Ok(Outcome {
        times: PhaseTimes { wall_s: since(start), ..PhaseTimes::default() },
        start_ns: start,
        end_ns: mono_ns(),
        ..Outcome::default()
    })
}
