//! `bootmark lab run`: the steps not yet done, one after another, each a
//! cold boot of one server into one entry — boot pointed at the entry, the
//! boot device set for once, the console opened, the power cycled, the
//! console followed until the run record or the step's deadline — and the
//! state saved after each. A step without its run record by its deadline
//! is powered off and recorded as failed with the console's last words;
//! the lab goes on. Ctrl-C stops between two reads of the console: the
//! step it was in stays to do, nothing is powered on, the state is whole.
//!
//! Per step, in this order, whichever the BMC: the boot pointed at the
//! entry (PXE: the per-MAC configs; virtual media: eject, the ISO
//! published with the entry as default, inserted); the boot device for
//! the next boot only; the console opened; power off (if on), power on —
//! a cold boot, never a reset, and the boot device set seconds before it.
//!
//! Servers run side by side, each its own steps in order in a thread of
//! its own; the state, shared, is saved whenever any step ends.

use super::BootDevice;
use super::bmc::Controller;
use super::file::{Boot, Console, Lab, Server};
use super::ipmi::Ipmi;
use super::redfish::Media;
use super::state::{Outcome, State, Status};
use super::{ImageEntries, media, pxe};
use crate::workstation::output::say;
use crate::workstation::watch::source::Source;
use crate::workstation::watch::{self, Ending, Until};
use std::path::Path;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// A console quiet this long after it was opened is opened again: /init
/// prints a heartbeat every few seconds and a kernel prints as it boots, so
/// a silence this long is a session the BMC stopped feeding, or a hang.
const REOPEN_AFTER_S: u64 = 45;

/// How a session ended.
pub struct Ended {
    pub state: State,
    pub interrupted: bool,
}

/// Run every step without an outcome; returns the state at the end.
pub fn run(lab: &Lab) -> Result<Ended, String> {
    crate::interrupt::install();
    let (image, manifest_sha256) = ImageEntries::read_with_sha256(&lab.manifest)?;
    let dir = &lab.state_dir;
    let _only_runner = super::lock::lock(dir)?;
    let existing = State::load(dir)?;
    let seed = existing.as_ref().map(|s| s.seed).or(lab.seed).unwrap_or_else(seed_from_clock);
    let plans = super::plan_seeded(lab, &image, seed)?;
    let steps: Vec<_> = plans.into_iter().flat_map(|p| p.steps).collect();
    let planned = State::new(manifest_sha256, seed, &steps);
    let state = match existing {
        Some(s) => {
            s.check_same_lab(&planned, dir)?;
            let done = s.steps.iter().filter(|s| s.outcome.is_some()).count();
            if done == s.steps.len() {
                say(&format!("lab: every step is done ({}); the report of all of them:", dir.display()));
            } else {
                say(&format!("lab: resuming in {}: {done} of {} steps done", dir.display(), s.steps.len()));
            }
            s
        }
        None => {
            planned.save(dir)?;
            planned
        }
    };
    let servers = Servers::prepare(lab, &image, dir)?;
    let state = std::sync::Mutex::new(state);
    // Each server takes its own steps in its own thread: a lab of N servers
    // takes the time of its slowest, not of all of them added up.
    let ran: Vec<Result<bool, String>> = std::thread::scope(|scope| {
        let threads: Vec<_> = (0..servers.len())
            .map(|i| {
                let (servers, state) = (&servers, &state);
                scope.spawn(move || {
                    let ran = run_server(servers, i, state, dir);
                    if let Err(e) = &ran {
                        // Said now: the other servers go on with their steps, maybe for hours.
                        say(&format!("lab: server {} stopped: {e}", servers.server(i).name));
                    }
                    ran
                })
            })
            .collect();
        threads.into_iter().map(|t| t.join().unwrap_or_else(|_| Err("a server's thread panicked".into()))).collect()
    });
    let state = state.into_inner().map_err(|_| "the lab's state was poisoned by a panic".to_string())?;
    let mut interrupted = false;
    for r in &ran {
        match r {
            Ok(stopped) => interrupted |= stopped,
            Err(e) => {
                servers.finish()?;
                return Err(e.clone());
            }
        }
    }
    servers.finish()?;
    if interrupted {
        let next = state.to_do().next().map(|(_, s)| s.id.clone()).unwrap_or_default();
        say(&format!("lab: interrupted; `bootmark lab run {}` again resumes at {next}", lab.path.display()));
    }
    Ok(Ended { state, interrupted })
}

/// One server's steps not yet done, in order, each saved into the shared
/// state as it ends; Ok(true) when Ctrl-C stopped it.
fn run_server(servers: &Servers, i: usize, state: &std::sync::Mutex<State>, dir: &Path) -> Result<bool, String> {
    let name = &servers.server(i).name;
    let lock = || state.lock().map_err(|_| "the lab's state was poisoned by a panic".to_string());
    let to_do: Vec<(usize, super::state::StepState)> =
        lock()?.to_do().filter(|(_, s)| &s.server == name).map(|(i, s)| (i, s.clone())).collect();
    let started = Instant::now();
    for (n, (i_step, step)) in to_do.iter().enumerate() {
        if crate::interrupt::interrupted() {
            return Ok(true);
        }
        let elapsed = started.elapsed().as_secs_f64();
        let eta = match n {
            0 => String::new(),
            r => format!(", about {} left", minutes(elapsed / r as f64 * (to_do.len() - n) as f64)),
        };
        say(&format!(
            "lab: {name}: step {} of {} to do: {} (deadline {} s; {} elapsed{eta})",
            n + 1,
            to_do.len(),
            step.id,
            step.deadline_s,
            minutes(elapsed)
        ));
        let Some(outcome) = servers.boot(i, (&step.entry, None), &step.id, step.deadline_s)? else { return Ok(true) };
        say(&format!("lab: {} {} in {:.0} s", step.id, status_word(outcome.status), outcome.seconds));
        let mut state = lock()?;
        state.steps[*i_step].outcome = Some(outcome);
        state.save(dir)?;
    }
    Ok(false)
}

/// A lab's servers made ready to boot (connected to their BMCs, their
/// boot pointed where the lab serves it): `bootmark lab run` and
/// `bootmark bisect` boot through this.
pub struct Servers<'a> {
    prepared: Vec<Prepared<'a>>,
    /// The image's entries: a boot's settings are checked against its line's room.
    entries: Vec<super::ImageEntry>,
    /// Where each boot's log and records go, under the server's name.
    dir: std::path::PathBuf,
}

/// A panic anywhere in a session (a step's thread, the state's writer)
/// unwinds through here: every server this session prepared is powered
/// off before the process ends, never left running on its own.
impl Drop for Servers<'_> {
    fn drop(&mut self) {
        if !std::thread::panicking() {
            return;
        }
        for p in &self.prepared {
            if let Err(e) = p.bmc.power_off() {
                eprintln!("bootmark: after a panic, server {:?} could not be powered off: {e}", p.server.name);
            }
        }
    }
}

impl<'a> Servers<'a> {
    pub fn prepare(lab: &'a Lab, image: &ImageEntries, dir: &Path) -> Result<Servers<'a>, String> {
        Servers::prepare_these(lab, image, dir, &(0..lab.servers.len()).collect::<Vec<_>>())
    }

    /// Only the lab's servers `which` (by index), in that order: a server
    /// left out is not asked anything (its BMC may be away).
    pub fn prepare_these(
        lab: &'a Lab,
        image: &ImageEntries,
        dir: &Path,
        which: &[usize],
    ) -> Result<Servers<'a>, String> {
        let prepared = which.iter().map(|&i| prepare(&lab.servers[i], lab, image, dir)).collect::<Result<_, _>>()?;
        Ok(Servers { prepared, entries: image.entries.clone(), dir: dir.to_path_buf() })
    }

    pub fn len(&self) -> usize {
        self.prepared.len()
    }

    pub fn is_empty(&self) -> bool {
        self.prepared.is_empty()
    }

    pub fn server(&self, i: usize) -> &'a Server {
        self.prepared[i].server
    }

    /// One cold boot of server `i` into `entry` (with `set`, its settings
    /// for this boot: `bootmark.set=` on its command line), `id` naming
    /// its files (`SERVER/ENTRY#N` → `SERVER/ENTRY-N.log`, `.jsonl`); None
    /// when Ctrl-C stopped it (nothing of it counts).
    pub fn boot(
        &self,
        i: usize,
        (entry, set): (&str, Option<&str>),
        id: &str,
        deadline_s: u64,
    ) -> Result<Option<Outcome>, String> {
        if let (Some(set), Some(e)) = (set, self.entries.iter().find(|e| e.label == entry)) {
            e.check_set_fits(set)?;
        }
        run_step(&self.prepared[i], (entry, set), id, deadline_s, &self.dir)
    }

    /// Put the servers back as the lab found them once a session ends
    /// (done, interrupted or failed; a resumed session points them again):
    /// the TFTP root's menus restored, the virtual CD ejected.
    pub fn finish(&self) -> Result<(), String> {
        // Newest save first: servers sharing a TFTP root saved its menus one after another.
        for p in self.prepared.iter().rev() {
            if let Some(saved) = &p.saved_pxe {
                pxe::restore(saved)?;
            }
            if let (Some(cd), Some(redfish)) = (&p.cd, p.bmc.redfish()) {
                // The server's next boot is not ours.
                redfish.eject(cd)?;
            }
        }
        Ok(())
    }
}

/// A server with what its boot needs set up once per session.
struct Prepared<'a> {
    server: &'a Server,
    bmc: Controller,
    saved_pxe: Option<pxe::Saved>,
    /// Virtual media: the BMC's CD device, and the image's ISO with where its menus are.
    cd: Option<Media>,
    iso: Option<(std::path::PathBuf, crate::bootmenu::IsoMenus)>,
}

fn prepare<'a>(server: &'a Server, lab: &Lab, image: &ImageEntries, dir: &Path) -> Result<Prepared<'a>, String> {
    if let super::file::Bmc::Redfish { url, tls: super::file::Tls::Insecure, .. } = &server.bmc {
        say(&format!(
            "lab: WARNING: server {:?}: the certificate of {url} is not checked (insecure = true): anyone on the \
             path can read its password; give ca_file instead",
            server.name
        ));
    }
    let lab_dir = lab.path.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let image_dir = lab.manifest.parent().unwrap_or(Path::new("."));
    let bmc = Controller::connect(server, lab_dir, image_dir, dir)?;
    let mut prepared = Prepared { server, bmc, saved_pxe: None, cd: None, iso: None };
    match &server.boot {
        Boot::Command => {}
        Boot::Pxe(p) => {
            let image_pxe = image_dir.join("pxe");
            std::fs::create_dir_all(&p.tftp_root)
                .map_err(|e| format!("cannot create {}: {e}", p.tftp_root.display()))?;
            // What the root held, before the image's tree replaces its shared menus.
            let file = dir.join(format!("{}.pxe-before.json", server.name));
            prepared.saved_pxe = Some(pxe::save_once(&file, &p.tftp_root, &p.mac)?);
            let written = pxe::install_tree(&image_pxe, &p.tftp_root)?;
            if written > 0 {
                say(&format!("lab: {} files of {} put in {}", written, image_pxe.display(), p.tftp_root.display()));
            }
        }
        Boot::VirtualMedia(_) => {
            let menus = image.iso_menus.clone().ok_or_else(|| {
                format!(
                    "{}: this image's manifest does not say where its ISO's menus are (built by an older bootmark): \
                     rebuild it with `cargo xtask image`",
                    lab.manifest.display()
                )
            })?;
            let redfish = prepared.bmc.redfish().expect("virtual media needs Redfish (checked with the lab file)");
            prepared.cd = Some(redfish.find_cd().map_err(|e| format!("server {:?}: {e}", server.name))?);
            prepared.iso = Some((image_dir.join("bootmark.iso"), menus));
        }
    }
    Ok(prepared)
}

/// Point `p`'s next boot at `entry` with `set`; the boot device it boots from.
fn point_boot(p: &Prepared, (entry, set): (&str, Option<&str>)) -> Result<BootDevice, String> {
    match &p.server.boot {
        // The power-on command boots the entry: the device is its business.
        Boot::Command => Ok(BootDevice::Disk),
        Boot::Pxe(x) => {
            pxe::point_at(&x.tftp_root, &x.mac, entry, set)?;
            Ok(BootDevice::Pxe)
        }
        Boot::VirtualMedia(v) => {
            let (Some(cd), Some(redfish), Some((iso, menus))) = (&p.cd, p.bmc.redfish(), &p.iso) else {
                unreachable!("prepared for virtual media")
            };
            // Out before the file changes: a BMC never reads two ISOs as one.
            redfish.eject(cd)?;
            media::publish(iso, menus, (entry, set), &v.http_dir, &p.server.name)?;
            redfish.insert(cd, &format!("{}/{}", v.http_url, media::published_name(&p.server.name)))?;
            Ok(BootDevice::Cdrom)
        }
    }
}

/// One step; None when interrupted (the step stays to do).
fn run_step(
    p: &Prepared,
    (entry, set): (&str, Option<&str>),
    id: &str,
    deadline_s: u64,
    dir: &Path,
) -> Result<Option<Outcome>, String> {
    let server = p.server;
    let base = format!("{}/{}", server.name, id.split('/').nth(1).unwrap_or(id).replace('#', "-"));
    let (log, records) = (format!("{base}.log"), format!("{base}.jsonl"));
    let (log_path, records_path) = (dir.join(&log), dir.join(&records));
    std::fs::create_dir_all(dir.join(&server.name)).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    for stale in [&log_path, &records_path] {
        // What an interrupted attempt of this step left.
        let _ = std::fs::remove_file(stale);
    }
    let device = point_boot(p, (entry, set))?;
    p.bmc.boot_once(device)?;
    // The console before the power: the whole boot is on it. One that cannot be opened yet
    // (a log its power-on program creates, a console server not yet listening) is tried
    // again after the power-on, within the step's deadline: it fails the step, never the lab.
    let mut console = StepConsole::new(&server.console, p.bmc.ipmi());
    let early = console.open(true);
    let started_unix = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
    let started = Instant::now();
    // Ctrl-C before the power: nothing is switched on.
    if crate::interrupt::interrupted() {
        console.end();
        return Ok(None);
    }
    p.bmc.power_off()?;
    p.bmc.power_on(entry, set)?;
    let mut waited = Duration::ZERO;
    let source = match early {
        Ok(source) => source,
        Err(first) => {
            say(&format!("lab: {id}: {first}; trying again until the step's deadline"));
            let since = Instant::now();
            let opened = console.open_until(since + Duration::from_secs(deadline_s), &|| p.bmc.ended());
            waited = since.elapsed();
            match opened {
                Ok(Some(source)) => source,
                Ok(None) => return Ok(None),
                Err(unopened) => {
                    p.bmc.power_off()?;
                    let why = match unopened {
                        Unopened::Deadline(e) => {
                            format!("the console could not be opened within the step's deadline of {deadline_s} s: {e}")
                        }
                        Unopened::ServerEnded(why) => format!("{why}; its console was never there"),
                    };
                    std::fs::write(&records_path, b"")
                        .map_err(|e| format!("cannot write {}: {e}", records_path.display()))?;
                    sync_step(&[&records_path], &dir.join(&server.name))?;
                    let seconds = started.elapsed().as_secs_f64();
                    let run_ids = Vec::new();
                    return Ok(Some(Outcome {
                        status: Status::Failed,
                        why: Some(why),
                        started_unix,
                        seconds,
                        log,
                        records,
                        run_ids,
                    }));
                }
            }
        }
    };
    // What is left of the step's deadline after waiting for a console that was not there yet.
    let left = Duration::from_secs(deadline_s).saturating_sub(waited);
    let how = watch::Follow {
        log: Some(log_path.clone()),
        out: Some(records_path.clone()),
        until: Until::Runs(1),
        silence: Duration::from_secs(60),
        give_up: left,
        deadline: Some(left),
        prefix: format!("[{id}] "),
        reopen_after: Some(Duration::from_secs(REOPEN_AFTER_S)),
        server_ended: Some(&|| p.bmc.ended()),
    };
    let followed = if console.reopens() {
        let mut again = || console.open(false);
        watch::follow(source, &how, Some(&mut again))
    } else {
        watch::follow(source, &how, None)
    };
    console.end();
    let (ending, documents) = followed?;
    let (mut status, mut why) = match ending {
        Ending::AllOk => (Status::Ok, None),
        Ending::Failures => (Status::Failures, None),
        Ending::Interrupted => return Ok(None),
        Ending::Lost(why) => {
            // Never left running into the next step's time.
            p.bmc.power_off()?;
            // A server that went off by itself said why; its console's silence is not the firmware's.
            let silent = printed_nothing(&log_path) && !why.contains("power-on command ended");
            let why = if silent {
                // The lab switched the power itself: a console that said
                // nothing at all is a server stuck before its kernel, or a
                // console that is not the server's serial port.
                format!(
                    "{why} (the console printed nothing at all after the power-on: the server hung in its \
                     firmware or network boot, or its serial port is not the one SOL carries — check \
                     the BIOS's console redirection)"
                )
            } else {
                why
            };
            (Status::Failed, Some(why))
        }
    };
    if !records_path.exists() {
        std::fs::write(&records_path, b"").map_err(|e| format!("cannot write {}: {e}", records_path.display()))?;
    }
    let runs: Vec<&crate::schema::record::RunRecord> = documents
        .iter()
        .filter_map(|d| match d {
            crate::workstation::collect::Document::Run(r) => Some(&**r),
            crate::workstation::collect::Document::Result(_) => None,
        })
        .collect();
    if let Some(wrong) = wrong_entry(&runs, entry).or_else(|| wrong_settings(&runs, set)) {
        // Its records are kept (they are true of the kernel that booted)
        // but the step is not done: it is that entry's step that ran.
        (status, why) = (Status::Failed, Some(wrong));
    }
    let run_ids = runs.iter().map(|r| r.run_id.clone()).collect();
    // On the disk before the state says the step is done: a step resume never redoes must not be lost.
    sync_step(&[&log_path, &records_path], &dir.join(&server.name))?;
    Ok(Some(Outcome { status, why, started_unix, seconds: started.elapsed().as_secs_f64(), log, records, run_ids }))
}

/// fsync a step's files (those that exist) and their directory; an error
/// stops the lab before the step is marked done, so a resume runs it again.
fn sync_step(files: &[&Path], dir: &Path) -> Result<(), String> {
    for f in files.iter().filter(|f| f.exists()) {
        std::fs::File::open(f).and_then(|f| f.sync_all()).map_err(|e| format!("cannot sync {}: {e}", f.display()))?;
    }
    std::fs::File::open(dir).and_then(|d| d.sync_all()).map_err(|e| format!("cannot sync {}: {e}", dir.display()))
}

/// A step's console: opened before the power is switched, opened again
/// when it ends or goes quiet (BMCs drop SOL sessions across power cycles,
/// console servers drop connections), ended after the step.
struct StepConsole<'a> {
    console: &'a Console,
    /// The BMC that carries serial over LAN (`console = "sol"` needs IPMI).
    ipmi: Option<&'a Ipmi>,
    /// A SOL session's ipmitool.
    child: Option<std::process::Child>,
}

impl<'a> StepConsole<'a> {
    fn new(console: &'a Console, ipmi: Option<&'a Ipmi>) -> StepConsole<'a> {
        StepConsole { console, ipmi, child: None }
    }

    /// Open the console; a log file is read from its end when it is
    /// opened before the power-on (`before_power`), else from its start.
    fn open(&mut self, before_power: bool) -> Result<Source, String> {
        self.end();
        match self.console {
            Console::Sol => {
                let ipmi = self.ipmi.expect("console = \"sol\" needs IPMI (checked with the lab file)");
                let mut child = ipmi.sol()?;
                let stdout = child.stdout.take().expect("piped");
                self.child = Some(child);
                Ok(Source::program(stdout, &format!("serial over LAN of {}", ipmi.host)))
            }
            Console::Tcp(spec) => Source::open(spec, 115200),
            Console::File(path) => {
                let mut source = Source::open(&path.display().to_string(), 115200)?;
                if before_power {
                    source.skip_what_is_there().map_err(|e| format!("{}: {e}", path.display()))?;
                }
                Ok(source)
            }
        }
    }

    /// Open the console after the power-on, trying each second until
    /// `until`; None when Ctrl-C stops the lab meanwhile.
    /// Open it, trying every second until `until`; given up on sooner once
    /// the server went off by itself (`ended` says why: a console its
    /// program would have made never will be).
    fn open_until(&mut self, until: Instant, ended: &dyn Fn() -> Option<String>) -> Result<Option<Source>, Unopened> {
        loop {
            let server_ended = ended();
            match self.open(false) {
                Ok(source) => return Ok(Some(source)),
                Err(_) if server_ended.is_some() => {
                    return Err(Unopened::ServerEnded(server_ended.unwrap_or_default()));
                }
                Err(e) if Instant::now() >= until => return Err(Unopened::Deadline(e)),
                Err(_) if crate::interrupt::interrupted() => return Ok(None),
                Err(_) => std::thread::sleep(Duration::from_secs(1)),
            }
        }
    }

    /// A followed log file needs no reopening (`watch` follows rotation).
    fn reopens(&self) -> bool {
        !matches!(self.console, Console::File(_))
    }

    /// End a SOL session's ipmitool (the BMC's session is closed by the
    /// next `sol deactivate`).
    fn end(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// Why a step's console was never opened.
enum Unopened {
    /// Not there by the step's deadline: the error of the last try.
    Deadline(String),
    /// The server went off by itself first, and why.
    ServerEnded(String),
}

/// A run record from another entry than the step's: the server ignored
/// where the lab pointed its boot (a BMC that kept an older ISO, a DHCP
/// server that hands out another boot file, a menu default not honoured).
fn wrong_entry(runs: &[&crate::schema::record::RunRecord], entry: &str) -> Option<String> {
    runs.iter().find_map(|r| {
        let booted = crate::schema::record::boot_entry(r.kernel.cmdline.as_deref());
        (booted != Some(entry)).then(|| {
            format!(
                "the server booted entry {} ({}), not {entry}: it did not boot what the lab pointed it at \
                 (its boot order, its DHCP server's boot file, or a BMC that kept an older ISO?)",
                booted.unwrap_or("none"),
                r.kernel.release.as_deref().unwrap_or("unknown kernel")
            )
        })
    })
}

/// A run record whose command line lacks the step's settings (or has
/// others): the boot did not run under what the step measures.
fn wrong_settings(runs: &[&crate::schema::record::RunRecord], set: Option<&str>) -> Option<String> {
    runs.iter().find_map(|r| {
        let booted = crate::schema::record::boot_settings(r.kernel.cmdline.as_deref());
        (booted != set).then(|| {
            format!(
                "the server booted with settings {}, not {}: the boot menu it read was not the one the lab wrote",
                booted.unwrap_or("none"),
                set.unwrap_or("none")
            )
        })
    })
}

/// Did the step's console show nothing but ipmitool's own session lines?
fn printed_nothing(log: &Path) -> bool {
    let bytes = std::fs::read(log).unwrap_or_default();
    String::from_utf8_lossy(&bytes).lines().map(str::trim).all(|l| l.is_empty() || l.starts_with("[SOL Session"))
}

fn status_word(s: Status) -> &'static str {
    match s {
        Status::Ok => "ok",
        Status::Failures => "ended with failures",
        Status::Failed => "FAILED",
    }
}

fn minutes(seconds: f64) -> String {
    format!("{:.0} min", (seconds / 60.0).round())
}

/// A random order's seed when the lab file gives none: from the clock,
/// then kept in the state.
fn seed_from_clock() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_nanos() as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A lab of one `[server.qemu]` named vm (console `vm.log`) running
    /// `command`, in `dir`, and an image of one entry, k0.
    fn one_qemu_server(dir: &Path, command: &str) -> (super::super::file::Lab, ImageEntries) {
        let text = format!(
            "image = \"image\"\nstate = \"st\"\n[[server]]\nname = \"vm\"\nconsole = \"file:vm.log\"\n[server.qemu]\ncommand = \"{command}\"\n"
        );
        let lab = super::super::file::Lab::parse_without_passwords(&dir.join("lab.toml"), &text).unwrap();
        let entry = super::super::ImageEntry {
            label: "k0".into(),
            title: "k0".into(),
            cmdline: "console=ttyS0 bootmark.plan=quick bootmark.entry=k0".into(),
            cmdline_room: None,
            kernel_release: None,
        };
        std::fs::create_dir_all(&lab.state_dir).unwrap();
        (lab, ImageEntries { entries: vec![entry], plan_definition: None, iso_menus: None })
    }

    /// A panic while a server runs: the session's servers are powered off
    /// as the panic unwinds (a lab that panicked left QEMU running).
    #[test]
    fn a_panic_powers_the_servers_off() {
        let dir = std::env::temp_dir().join(format!("bootmark-lab-panic-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let (lab, image) = one_qemu_server(&dir, "sleep 60 # {entry}");
        let servers = Servers::prepare(&lab, &image, &lab.state_dir).unwrap();
        servers.prepared[0].bmc.power_on("k0", None).unwrap();
        let pid_file = lab.state_dir.join("vm.power.pid");
        let pid: i32 = std::fs::read_to_string(&pid_file).unwrap().split_whitespace().next().unwrap().parse().unwrap();
        // SAFETY: kill with signal 0 only asks whether the group exists.
        assert_eq!(unsafe { libc::kill(-pid, 0) }, 0, "the server's process group runs");
        let unwound = std::panic::catch_unwind(std::panic::AssertUnwindSafe(move || {
            let _held = servers;
            panic!("a step's thread panicked");
        }));
        assert!(unwound.is_err());
        // SAFETY: kill with signal 0 only asks whether the group exists.
        assert_ne!(unsafe { libc::kill(-pid, 0) }, 0, "the server's process group still runs");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn ipmitools_own_session_lines_are_not_console_output() {
        let dir = std::env::temp_dir().join(format!("bootmark-lab-session-{}", std::process::id()));
        // A directory left by an earlier run under the same PID must not hold a log already.
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let log = dir.join("step.log");
        assert!(printed_nothing(&log), "no log yet: nothing printed");
        std::fs::write(&log, "[SOL Session operational.  Use ~? for help]\n\n").unwrap();
        assert!(printed_nothing(&log));
        std::fs::write(&log, "[SOL Session operational.  Use ~? for help]\nSeaBIOS (version 1.16.2)\n").unwrap();
        assert!(!printed_nothing(&log));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_run_record_from_another_entry_fails_the_step() {
        let run = |cmdline: Option<&str>| -> crate::schema::record::RunRecord {
            serde_json::from_value(serde_json::json!({
                "schema": crate::schema::record::RUN_SCHEMA, "run_id": "r", "seq": 2, "status": "ok", "error": null,
                "started_unix_s": 0.0, "finished_unix_s": 1.0, "bootmark": {"version": "0"},
                "kernel": {"release": "6.1.0-41-amd64", "cmdline": cmdline},
                "host": crate::schema::record::Host::default(), "records": 2, "failed_records": 0, "facts": {},
                "kernel_log": crate::schema::record::KernelLog::default(),
            }))
            .unwrap()
        };
        let k1 = run(Some("console=ttyS0,115200 bootmark.plan=quick bootmark.entry=k1"));
        assert_eq!(wrong_entry(&[&k1], "k1"), None);
        let why = wrong_entry(&[&k1], "k0").unwrap();
        assert!(why.starts_with("the server booted entry k1 (6.1.0-41-amd64), not k0"), "{why}");
        let none = run(Some("console=ttyS0"));
        assert!(wrong_entry(&[&none], "k0").unwrap().contains("booted entry none"));
        assert_eq!(wrong_entry(&[], "k0"), None, "no run record: the deadline decides");
    }

    /// A qemu server whose program cannot start (QEMU not installed, a
    /// typo in the command): the step fails with the program's own words
    /// once its console has settled (at once where it never made one), not
    /// at its deadline with a guess about the firmware or console.
    #[test]
    fn a_power_on_program_that_ends_at_once_fails_the_step_with_its_own_words() {
        let dir = std::env::temp_dir().join(format!("bootmark-lab-ended-{}", std::process::id()));
        // Its console made before it ended, and never made.
        for made in ["touch vm.log;", ""] {
            let _ = std::fs::remove_dir_all(&dir);
            std::fs::create_dir_all(&dir).unwrap();
            let command =
                format!("sh -c \\\"echo 'missing host tools: qemu-system-x86_64' >&2; {made} exit 3\\\" # {{entry}}");
            let (lab, image) = one_qemu_server(&dir, &command);
            let servers = Servers::prepare(&lab, &image, &lab.state_dir).unwrap();
            let since = Instant::now();
            let outcome =
                run_step(&servers.prepared[0], ("k0", None), "lab/k0#b1", 300, &lab.state_dir).unwrap().unwrap();
            assert!(
                since.elapsed() < Duration::from_secs(60),
                "{made:?}: not the 300 s deadline: {:?}",
                since.elapsed()
            );
            assert_eq!(outcome.status, Status::Failed);
            let why = outcome.why.unwrap();
            assert!(why.contains("the server's power-on command ended (exit status: 3)"), "{made:?}: {why}");
            assert!(why.contains("its last lines: missing host tools: qemu-system-x86_64"), "{made:?}: {why}");
            assert!(!why.contains("firmware") && !why.contains("console=ttyS0"), "{made:?}: no guess: {why}");
            drop(servers);
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_console_log_that_appears_after_the_power_on_is_waited_for_and_read_whole() {
        let dir = std::env::temp_dir().join(format!("bootmark-lab-console-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("serial.log");
        let console = Console::File(path.clone());
        let mut step = StepConsole::new(&console, None);
        assert!(step.open(true).err().unwrap().contains("serial.log"), "not there yet");
        // The power-on program creates it a moment later, its first lines already in.
        let writer = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(1500));
            std::fs::write(&path, "SeaBIOS (version 1.16.2)\n").unwrap();
        });
        let Ok(Some(mut source)) = step.open_until(Instant::now() + Duration::from_secs(20), &|| None) else {
            panic!("opened")
        };
        writer.join().unwrap();
        match source.read(500).unwrap() {
            crate::workstation::watch::source::Chunk::Data(bytes) => {
                assert!(String::from_utf8_lossy(&bytes).contains("SeaBIOS"))
            }
            _ => panic!("the lines written before it was opened are read"),
        }
        // Never there: an error once the deadline has passed, for the step to fail.
        let never = Console::File(dir.join("never.log"));
        let since = Instant::now();
        let unopened = StepConsole::new(&never, None).open_until(Instant::now() + Duration::from_secs(1), &|| None);
        let Err(Unopened::Deadline(e)) = unopened else { panic!("the deadline, nothing else, ends the wait") };
        assert!(e.contains("never.log") && since.elapsed() < Duration::from_secs(5), "{e}");
        std::fs::remove_dir_all(dir).unwrap();
    }
}
