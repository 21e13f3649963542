//! `bootmark lab`: a few servers reached only through their BMCs, taken
//! through every kernel of an image, repeated and interleaved, from the
//! workstation. The lab file (`file.rs`) → the steps and their deadlines
//! (`steps.rs`, here `plan`) → a session (`session.rs`: per step the boot
//! pointed with `pxe.rs` or `media.rs`, the power through `bmc.rs` —
//! `ipmi.rs` or `redfish.rs` —, the console followed by `watch`) → the
//! state after every step (`state.rs`)
//! → the report of every step's records. `bootmark lab plan` prints the
//! steps without asking any BMC anything.

pub mod bmc;
pub mod file;
pub mod ipmi;
pub mod lock;
pub mod media;
pub mod pxe;
pub mod qemu_server;
pub mod redfish;
pub mod session;
pub mod state;
pub mod steps;

use crate::image_side::plan::Plan;
use file::{Bmc, Boot, Console, Lab};
use serde::Deserialize;
use std::path::Path;

/// Where a server's next boot comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BootDevice {
    Pxe,
    Cdrom,
    Disk,
}

/// What the lab reads of an image's manifest.json (written by `cargo xtask
/// image`, whose type holds much more: serde skips the rest).
#[derive(Deserialize)]
pub struct ImageEntries {
    pub entries: Vec<ImageEntry>,
    pub plan_definition: Option<Plan>,
    /// Where bootmark.iso holds its menus (images built before the lab
    /// booted ISOs lack it).
    #[serde(default)]
    pub iso_menus: Option<crate::bootmenu::IsoMenus>,
}

#[derive(Clone, Deserialize)]
pub struct ImageEntry {
    pub label: String,
    pub title: String,
    pub cmdline: String,
    /// The bytes `cmdline` may grow to and still reach its kernel whole
    /// (images built before it was recorded lack it).
    #[serde(default)]
    pub cmdline_room: Option<usize>,
    /// Its kernel's release (`6.1.192-bootmark-g1a2b3c4d5e6f`).
    #[serde(default)]
    pub kernel_release: Option<String>,
}

impl ImageEntry {
    /// Refuse settings (`bootmark.set=SET`) that would push the entry's
    /// command line past what its kernel keeps: the kernel would cut the
    /// line silently and the boot would run under other settings.
    pub fn check_set_fits(&self, set: &str) -> Result<(), String> {
        let words = format!(" bootmark.set={set}");
        match self.cmdline_room {
            Some(room) if self.cmdline.len() + words.len() > room => Err(format!(
                "entry {}: bootmark.set={set} makes its command line {} bytes, and its kernel keeps {room} of \
                 them (the image's manifest, cmdline_room; {} of them this entry's own): give fewer settings, or \
                 shorter ones",
                self.label,
                self.cmdline.len() + words.len(),
                self.cmdline.len()
            )),
            _ => Ok(()),
        }
    }
}

impl ImageEntries {
    pub fn read(manifest: &Path) -> Result<ImageEntries, String> {
        ImageEntries::read_with_sha256(manifest).map(|(entries, _)| entries)
    }

    /// `read`, and the manifest's SHA-256 (of the same bytes).
    pub fn read_with_sha256(manifest: &Path) -> Result<(ImageEntries, String), String> {
        let bytes = std::fs::read(manifest).map_err(|e| {
            format!("cannot read the image's manifest {}: {e} (build it with `cargo xtask image`)", manifest.display())
        })?;
        let entries = serde_json::from_slice(&bytes)
            .map_err(|e| format!("{}: not an image manifest: {e}", manifest.display()))?;
        Ok((entries, crate::schema::framing::sha256_hex(&bytes)))
    }

    /// The seconds a boot of `entry` may take after the kernel starts:
    /// /init's wait for disks and the plan's budget, as its command line
    /// sets them.
    pub fn budget_s(&self, entry: &ImageEntry, set: Option<&str>) -> Result<(f64, f64), String> {
        // A boot's settings may change its repetitions and variants (a same-boot comparison).
        let line = match set {
            Some(set) => format!("{} bootmark.set={set}", entry.cmdline),
            None => entry.cmdline.clone(),
        };
        let settings = crate::contract::cmdline::parse(&line)
            .map_err(|e| format!("entry {}: its command line: {e}", entry.label))?;
        let mut plan = match &self.plan_definition {
            Some(p) => p.clone(),
            None => Plan::load(&settings.plan)?,
        };
        settings.apply_to(&mut plan)?;
        Ok((settings.device_wait_s, plan.time_budget_s(settings.timeout_s).1))
    }
}

/// One server's steps, with each step's deadline in seconds.
pub struct ServerPlan {
    pub steps: Vec<(steps::Step, u64)>,
}

/// Steps of a lab, at most (a hundred days of boots of a minute each).
const MAX_STEPS: usize = 150_000;

/// Every server's steps, checked against the image (the entries the lab
/// names must be the image's), in the order the lab's seed gives.
pub fn plan(lab: &Lab, image: &ImageEntries) -> Result<Vec<ServerPlan>, String> {
    plan_seeded(lab, image, lab.seed.unwrap_or(0))
}

/// `plan` with the seed a session keeps in its state.
pub fn plan_seeded(lab: &Lab, image: &ImageEntries, seed: u64) -> Result<Vec<ServerPlan>, String> {
    let mut out = Vec::new();
    let mut total = 0usize;
    for server in &lab.servers {
        let names: Vec<String> = match &server.entries {
            Some(names) => {
                for (i, n) in names.iter().enumerate() {
                    // Steps are named SERVER/ENTRY#N: one entry twice would give two steps one name.
                    if names[..i].contains(n) {
                        return Err(format!(
                            "server {:?}: entry {n:?} is listed twice; repeat = N boots each entry N times",
                            server.name
                        ));
                    }
                    if !image.entries.iter().any(|e| &e.label == n) {
                        let have: Vec<&str> = image.entries.iter().map(|e| e.label.as_str()).collect();
                        return Err(format!(
                            "server {:?}: entry {n:?} is not in the image (its entries: {})",
                            server.name,
                            have.join(", ")
                        ));
                    }
                }
                names.clone()
            }
            None => image.entries.iter().map(|e| e.label.clone()).collect(),
        };
        total = total.saturating_add(names.len().saturating_mul(lab.repeat as usize));
        if total > MAX_STEPS {
            return Err(format!(
                "{} entries × repeat {} on {} server(s) is more than {MAX_STEPS} steps: a lab of that size is several labs",
                names.len(),
                lab.repeat,
                lab.servers.len()
            ));
        }
        let mut planned = Vec::new();
        for step in steps::for_server(&server.name, &names, lab.repeat, lab.order, seed) {
            let entry = image.entries.iter().find(|e| e.label == step.entry).expect("checked above");
            let deadline = step_deadline_s(server, image, entry, None)?;
            planned.push((step, deadline));
        }
        out.push(ServerPlan { steps: planned });
    }
    Ok(out)
}

/// How long a boot of `entry` on `server` may take: its own boot, /init's
/// wait for disks and the plan's budget (`steps::deadline_s`), never more
/// than the server's `max_step_s`.
pub fn step_deadline_s(
    server: &file::Server,
    image: &ImageEntries,
    entry: &ImageEntry,
    set: Option<&str>,
) -> Result<u64, String> {
    let (device_wait_s, budget_s) = image.budget_s(entry, set)?;
    let deadline = steps::deadline_s(server.boot_s, device_wait_s, budget_s);
    Ok(server.max_step_s.map_or(deadline, |max| deadline.min(max)))
}

/// `bootmark lab plan`: the lab as it would run, one line per step, and
/// how each server is reached (credentials never shown).
pub fn describe(lab: &Lab, image: &ImageEntries, plans: &[ServerPlan]) -> String {
    let mut s = format!(
        "lab {}: image {} ({} entries), {} server(s), {} repetition(s), {:?} order{}; state in {}\n",
        lab.path.display(),
        lab.manifest.display(),
        image.entries.len(),
        lab.servers.len(),
        lab.repeat,
        lab.order,
        match (lab.order, lab.seed) {
            (_, Some(s)) => format!(", seed {s}"),
            (file::Order::Random, None) => ", seed chosen when the lab starts (shown here for seed 0)".into(),
            (file::Order::Interleaved, None) => String::new(),
        },
        lab.state_dir.display()
    );
    for (server, plan) in lab.servers.iter().zip(plans) {
        let bmc = match &server.bmc {
            Bmc::Ipmi { host, port, user, .. } => format!("IPMI {user}@{host}:{port}"),
            Bmc::Redfish { url, user, tls, system, .. } => format!(
                "Redfish {user} at {url}{}{}",
                system.as_ref().map_or(String::new(), |s| format!(" system {s}")),
                match tls {
                    file::Tls::Insecure if url.starts_with("http://") =>
                        " (plain http, insecure = true: the password goes in clear)".to_string(),
                    file::Tls::Insecure =>
                        " (certificate NOT verified: the password can be read on the way)".to_string(),
                    file::Tls::CaFile(f) => format!(" (certificate checked against {})", f.display()),
                    file::Tls::WebPki => String::new(),
                }
            ),
            Bmc::Qemu { command } => format!("no BMC: on while `{command}` runs"),
        };
        let boot = match &server.boot {
            Boot::Pxe(p) => format!("PXE (MAC {}, TFTP root {})", p.mac, p.tftp_root.display()),
            Boot::Command => "the entry in its command".to_string(),
            Boot::VirtualMedia(v) => format!(
                "virtual media {}/{} (written to {})",
                v.http_url,
                media::published_name(&server.name),
                v.http_dir.display()
            ),
        };
        let console = match &server.console {
            Console::Sol => "serial over LAN".to_string(),
            Console::Tcp(t) => t.clone(),
            Console::File(f) => format!("file {}", f.display()),
        };
        let total: u64 = plan.steps.iter().map(|(_, d)| d).sum();
        s += &format!(
            "server {}: {bmc}, boots by {boot}, console {console}; {} steps, at most {} in all\n",
            server.name,
            plan.steps.len(),
            hours_minutes(total)
        );
        for (i, (step, deadline)) in plan.steps.iter().enumerate() {
            let title = image.entries.iter().find(|e| e.label == step.entry).map_or("", |e| e.title.as_str());
            s += &format!("  {:>3}. {:<24} deadline {:>5} s  {title}\n", i + 1, step.id(), deadline);
        }
    }
    s
}

/// 5400 → `1h30m`, 300 → `5m`.
fn hours_minutes(seconds: u64) -> String {
    let minutes = seconds.div_ceil(60);
    match (minutes / 60, minutes % 60) {
        (0, m) => format!("{m}m"),
        (h, m) => format!("{h}h{m:02}m"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An entry listed twice would give two steps one name (their logs one
    /// file); a lab of more steps than any could run is refused, not planned.
    #[test]
    fn a_plan_has_no_two_steps_of_one_name_and_a_bounded_size() {
        let entries = (0..200)
            .map(|i| ImageEntry {
                label: format!("k{i}"),
                title: format!("kernel {i}"),
                cmdline: format!("console=ttyS0 bootmark.plan=quick bootmark.entry=k{i}"),
                cmdline_room: None,
                kernel_release: None,
            })
            .collect();
        let image = ImageEntries { entries, plan_definition: None, iso_menus: None };
        let dir = std::env::temp_dir();
        let lab = |extra: &str| {
            let text = format!(
                "image = \"image\"\n{extra}\n[[server]]\nname = \"a\"\nconsole = \"file:a.log\"\n{}\n[server.qemu]\ncommand = \"x {{entry}}\"\n",
                if extra.contains("repeat") { "" } else { "entries = [\"k0\", \"k1\", \"k0\"]" }
            );
            file::Lab::parse_without_passwords(&dir.join("lab.toml"), &text).unwrap()
        };
        let e = plan(&lab(""), &image).err().unwrap();
        assert!(e.contains("entry \"k0\" is listed twice"), "{e}");
        let started = std::time::Instant::now();
        let e = plan(&lab("repeat = 10000"), &image).err().unwrap();
        assert!(e.contains("200 entries × repeat 10000 on 1 server(s) is more than 150000 steps"), "{e}");
        assert!(started.elapsed().as_secs() < 5, "planned before refusing");
    }

    /// A boot's settings go on its entry's line only as far as its kernel keeps it.
    #[test]
    fn settings_that_would_overflow_the_kernels_line_are_refused() {
        let entry = |room| ImageEntry {
            label: "k0".into(),
            title: "2.6.10".into(),
            cmdline: "console=ttyS0,115200 bootmark.plan=quick bootmark.entry=k0 panic=30".into(),
            cmdline_room: room,
            kernel_release: None,
        };
        let set = "bad-settings:vm.dirty_ratio=40,vm.dirty_background_ratio=10";
        let line = entry(None).cmdline.len() + " bootmark.set=".len() + set.len();
        assert!(entry(Some(line)).check_set_fits(set).is_ok(), "exactly full");
        let e = entry(Some(line - 1)).check_set_fits(set).unwrap_err();
        assert!(e.contains(&format!("{line} bytes, and its kernel keeps {}", line - 1)), "{e}");
        assert!(entry(None).check_set_fits(set).is_ok(), "an image from before the room was recorded");
    }
}
