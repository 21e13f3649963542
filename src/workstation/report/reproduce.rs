//! What a reader needs to run the comparison again, gathered from the
//! records as they stream by: each kernel with the build its version
//! string names and the command line it booted with, the plans, and the
//! runs (boots) the figures come from. `--format text` prints it as the
//! block a kernel developer pastes under the table.

use crate::workstation::glance::Glance;

/// Runs named one by one, at most; the rest are counted.
const RUNS_NAMED: usize = 12;

#[derive(Debug, Default)]
pub struct Reproducer {
    /// (release, build, command line) of each kernel, in the order first seen.
    pub kernels: Vec<(String, String, String)>,
    pub plans: Vec<String>,
    /// (run id, records of it), in the order first seen; `runs` counts them all.
    pub named_runs: Vec<(String, usize)>,
    pub runs: usize,
}

impl Reproducer {
    pub fn offer(&mut self, g: &Glance) {
        let release = g.kernel.release.as_deref().unwrap_or("?");
        if !self.kernels.iter().any(|(r, _, _)| r == release) {
            let build = build(g.kernel.version.as_deref().unwrap_or(""));
            self.kernels.push((release.to_string(), build, cmdline(g.kernel.cmdline.as_deref().unwrap_or(""))));
        }
        if !self.plans.iter().any(|p| p == g.plan.name.as_ref()) {
            self.plans.push(g.plan.name.to_string());
        }
        let named = self.named_runs.len();
        match self.named_runs.iter_mut().find(|(id, _)| id == g.run_id.as_ref()) {
            Some((_, n)) => *n += 1,
            None if named < RUNS_NAMED => {
                self.runs += 1;
                self.named_runs.push((g.run_id.to_string(), 1));
            }
            // Past the named ones each record of another run counts: a run
            // is not told from the next without keeping every id.
            None => self.runs += 1,
        }
    }
}

/// The build a kernel's version string names: its distribution's package
/// version ("Debian 5.10.262-1"), else its build number and date ("#1 SMP
/// PREEMPT_DYNAMIC Mon Jan 5 2026").
fn build(version: &str) -> String {
    // After the compiler's own "(Debian 10.2.1-6)": the part from "#1 SMP".
    let tail = version.rfind(" #").map_or(version, |at| &version[at + 1..]).trim();
    for distro in ["Debian ", "Ubuntu ", "SUSE "] {
        if let Some(at) = tail.find(distro) {
            return tail[at..].split(" (").next().unwrap_or(tail).trim().to_string();
        }
    }
    tail.to_string()
}

/// The command line without what only the bootloader's layout decides.
fn cmdline(line: &str) -> String {
    line.split_whitespace()
        .filter(|w| !w.starts_with("BOOT_IMAGE=") && !w.starts_with("initrd="))
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_kernels_build_and_command_line_are_kept_without_the_bootloaders_paths() {
        let debian = "Linux version 5.10.0-46-amd64 (debian-kernel@lists.debian.org) (gcc-10 (Debian 10.2.1-6) 10.2.1 20210110, GNU ld (GNU Binutils for Debian) 2.35.2) #1 SMP Debian 5.10.262-1 (2026-07-31)";
        // The compiler's "(Debian 10.2.1-6)" comes first: the package's is the one after "#1 SMP".
        assert_eq!(build(debian), "Debian 5.10.262-1");
        assert_eq!(
            build("Linux version 6.18.0 (me@box) (gcc 14) #3 SMP PREEMPT_DYNAMIC Tue Dec 1 2026"),
            "#3 SMP PREEMPT_DYNAMIC Tue Dec 1 2026"
        );
        assert_eq!(
            cmdline("BOOT_IMAGE=/boot/k0/vmlinuz console=ttyS0 bootmark.plan=generations initrd=/boot/k0/initrd.gz"),
            "console=ttyS0 bootmark.plan=generations"
        );
    }
}
