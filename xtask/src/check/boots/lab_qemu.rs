//! `bootmark lab` with a `[server.qemu]` server: no BMC, power on runs
//! `xtask qemu --entry-label {entry}` (a guest booting that entry on a
//! freshly formatted disk), power off ends it, the console is the serial
//! log it writes. The loop `cargo xtask demo` runs. Two steps (k1, then
//! k0): both ok, each run record from its own entry, no guest left running.
//! The arm64 image check runs the same lab on its arm64 entry: `xtask qemu`
//! takes the machine (virt, AAVMF) from the entry.

use super::lab_ipmi::tail;
use crate::host::fs;
use crate::host::process::{cmd, output, shell};
use crate::host::project::Result;
use std::path::Path;
use std::time::Instant;

pub fn test(image: &Path, base: &Path) -> Result<()> {
    let started = Instant::now();
    run(image, &base.join("lab-qemu"), &["k1", "k0"])?;
    println!(
        "e2e: lab qemu: [server.qemu] through xtask qemu --entry-label, k1 then k0, each on a fresh disk, both ok ({:.0} s)",
        started.elapsed().as_secs_f64()
    );
    Ok(())
}

/// A lab of one `[server.qemu]` server in `dir` booting `entries` of
/// `image` in turn: every step ok with one run record from its entry, and
/// no guest left running after it.
pub fn run(image: &Path, dir: &Path, entries: &[&str]) -> Result<()> {
    let _ = std::fs::remove_dir_all(dir);
    fs::create_dir_all(dir)?;
    let xtask = std::env::current_exe().map_err(|e| format!("lab-qemu: cannot find xtask's own binary: {e}"))?;
    fs::write(dir.join("serial.log"), "")?;
    let lab = dir.join("lab.toml");
    fs::write(
        &lab,
        format!(
            "image = \"{image}\"\n[[server]]\nname = \"vm\"\nconsole = \"file:serial.log\"\nentries = {entries:?}\n\
             boot_s = 60\nmax_step_s = 150\n[server.qemu]\n\
             command = \"{xtask} qemu --image {image} --entry-label {{entry}} --disk scratch.img --fresh-disk ext3 --log serial.log --timeout 200\"\n",
            image = image.display(),
            xtask = xtask.display()
        ),
    )?;
    let bootmark = crate::host::project::project_root().join("target/debug/bootmark");
    let sh = shell()?;
    let ran = output(cmd!(sh, "{bootmark} lab run {lab}"))?;
    let out = String::from_utf8_lossy(&ran.stdout).into_owned();
    if ran.status.code() != Some(0) {
        return Err(format!(
            "lab-qemu: `bootmark lab run` exited {:?}:\n{}\n{}{}",
            ran.status.code(),
            tail(&out),
            tail(&String::from_utf8_lossy(&ran.stderr)),
            super::support::guest_stalled(&dir.join("lab.state")).map_or(String::new(), |l| format!("\n{l}"))
        ));
    }
    let state_dir = dir.join("lab.state");
    let state = bootmark::lab::state::State::load(&state_dir)?.ok_or("lab-qemu: no state")?;
    let ids: Vec<&str> = state.steps.iter().map(|s| s.id.as_str()).collect();
    let want: Vec<String> = entries.iter().map(|e| format!("vm/{e}#1")).collect();
    if ids != want {
        return Err(format!("lab-qemu: steps {ids:?}"));
    }
    for s in &state.steps {
        let o = s.outcome.as_ref().ok_or(format!("lab-qemu: {} has no outcome", s.id))?;
        let records = fs::read_to_string(state_dir.join(&o.records))?;
        let from_entry = records.lines().filter(|l| l.contains(&format!("bootmark.entry={} ", s.entry))).count()
            + records.lines().filter(|l| l.contains(&format!("bootmark.entry={}\"", s.entry))).count();
        if o.status != bootmark::lab::state::Status::Ok || o.run_ids.len() != 1 || from_entry == 0 {
            return Err(format!(
                "lab-qemu: step {} ended {:?} with {} run records ({:?})",
                s.id,
                o.status,
                o.run_ids.len(),
                o.why
            ));
        }
    }
    let pid: Option<i32> = std::fs::read_to_string(state_dir.join("vm.power.pid"))
        .ok()
        .and_then(|p| p.split_whitespace().next()?.parse().ok());
    // The last guest powered itself off; its `xtask qemu` ends moments later.
    // SAFETY: kill(2) with signal 0 only asks whether the group still exists.
    let alive = || pid.is_some_and(|pid| unsafe { libc::kill(-pid, 0) } == 0);
    let since = Instant::now();
    while alive() {
        if since.elapsed() > std::time::Duration::from_secs(20) {
            return Err("lab-qemu: a guest is still running 20 s after the lab ended".into());
        }
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
    Ok(())
}
