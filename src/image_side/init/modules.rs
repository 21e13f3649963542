//! Loading the kernel modules the image builder put in the initramfs: only
//! the drivers of devices that are present, with what they need, in the
//! order and with the parameters the builder recorded.
//!
//! The builder writes `/etc/bootmark/modules.json` (a [`ModuleSet`]): every
//! module in load order (dependencies first), what it needs, and when to
//! load it. Controller drivers (PCI and virtio devices) load only when a
//! present device matches one of their aliases; disk drivers, USB storage
//! and filesystems always, since old kernels give SCSI disks no modalias and
//! a USB stick appears only after its host controller's driver binds.
//! Loading goes in passes until nothing new appears (virtio_pci's devices
//! show up only once it is loaded; virtio_blk matches them in pass 2).
//! finit_module (3.8+) is tried first, init_module (every kernel) after.

use super::modalias;
use crate::schema::modules::{Module, ModuleSet, When};
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::time::{Duration, Instant};

/// Passes of scan → load → settle; each pass loads only what the previous
/// one's drivers brought into view, so a handful is plenty.
const MAX_PASSES: usize = 5;

/// What became of the modules /init tried to load.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Outcome {
    /// In load order.
    pub loaded: Vec<String>,
    /// Built in or loaded before: the kernel said EEXIST.
    pub already: Vec<String>,
    /// Modules that found nothing to drive (ENODEV): CPU-specific variants
    /// such as crc32c_intel on a CPU without SSE4.2, beside a generic one.
    pub declined: Vec<String>,
    /// Module → the error.
    pub failed: BTreeMap<String, String>,
}

impl Outcome {
    fn note(&mut self, name: &str, result: std::io::Result<()>) {
        let name = name.to_string();
        match result {
            Ok(()) => self.loaded.push(name),
            Err(e) if e.raw_os_error() == Some(libc::EEXIST) => self.already.push(name),
            Err(e) if e.raw_os_error() == Some(libc::ENODEV) => self.declined.push(name),
            Err(e) => {
                self.failed.insert(name, e.to_string());
            }
        }
    }
}

/// What module loading did in this boot: the `modules` fact of the run record.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Report {
    #[serde(flatten)]
    pub outcome: Outcome,
    /// Device drivers with no device here.
    pub not_needed: usize,
    pub passes: usize,
    /// Devices (modaliases) seen in the last pass.
    pub devices: usize,
    /// From the first scan to the last module loaded.
    pub ms: u64,
    /// The problem with modules.json itself, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

impl Report {
    /// One line that shows a missing driver at a glance.
    pub fn summary_line(&self) -> String {
        if let Some(e) = &self.error {
            return format!("bootmark: modules not loaded: {e}");
        }
        let failed: Vec<String> = self.outcome.failed.iter().map(|(m, e)| format!("{m} ({e})")).collect();
        format!(
            "bootmark: {} modules loaded in {} ms ({} passes over {} devices; {} drivers for absent devices skipped{}){}",
            self.outcome.loaded.len(),
            self.ms,
            self.passes,
            self.devices,
            self.not_needed,
            if self.outcome.declined.is_empty() {
                String::new()
            } else {
                format!("; no hardware for {}", self.outcome.declined.join(", "))
            },
            if failed.is_empty() { String::new() } else { format!(", failed: {}", failed.join(", ")) }
        )
    }
}

/// Load what this machine needs from the set at `path`, looking at devices
/// under `sys`. Failures are reported, never fatal here.
pub fn load_for_machine(path: &Path, sys: &Path) -> Report {
    let set = match std::fs::read(path) {
        // An image for a kernel with every driver built in, or a test root.
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Report::default(),
        Err(e) => Err(format!("{}: {e}", path.display())),
        Ok(b) => serde_json::from_slice::<ModuleSet>(&b).map_err(|e| format!("{}: {e}", path.display())),
    };
    let set = match set {
        Ok(set) => set,
        Err(e) => return Report { error: Some(e), ..Report::default() },
    };
    load_in_passes(&set, sys, &mut |m| load(&Path::new("/").join(&m.path), &m.params))
}

/// Remove every module file of the set at `path`, once every mount is made:
/// nothing in this boot loads a module again (a sequence's next step boots
/// afresh, with its own initramfs). On the initramfs (ramfs: never
/// reclaimed) the files are memory the server does not get back — memory
/// the dirty limits are computed without, and more of it for a kernel with
/// more modules: 19.5 MiB of Debian 12's 6.1 image. The files and bytes freed.
pub fn release_files(path: &Path) -> (usize, u64) {
    match std::fs::read(path).ok().and_then(|b| serde_json::from_slice::<ModuleSet>(&b).ok()) {
        Some(set) => release(&set, Path::new("/")),
        None => (0, 0),
    }
}

/// [`release_files`] under `root`.
fn release(set: &ModuleSet, root: &Path) -> (usize, u64) {
    let mut freed = (0, 0);
    for m in &set.modules {
        let file = root.join(&m.path);
        let Ok(meta) = std::fs::symlink_metadata(&file) else { continue };
        if meta.is_file() && std::fs::remove_file(&file).is_ok() {
            freed = (freed.0 + 1, freed.1 + meta.len());
        }
    }
    freed
}

/// The passes, with the loader given (tests count instead of loading).
pub fn load_in_passes(set: &ModuleSet, sys: &Path, loader: &mut dyn FnMut(&Module) -> std::io::Result<()>) -> Report {
    let start = Instant::now();
    let mut report = Report::default();
    let mut tried = BTreeSet::new();
    let mut devices = modalias::present(sys);
    while report.passes < MAX_PASSES {
        let wanted = wanted(set, &devices);
        let new: Vec<&Module> =
            set.modules.iter().filter(|m| wanted.contains(&m.name) && !tried.contains(&m.name)).collect();
        if new.is_empty() {
            break;
        }
        report.passes += 1;
        for m in new {
            tried.insert(m.name.clone());
            report.outcome.note(&m.name, loader(m));
        }
        report.ms = start.elapsed().as_millis() as u64;
        devices = settle(sys, devices);
    }
    report.devices = devices.len();
    report.not_needed = set.modules.iter().filter(|m| m.when == When::Device && !tried.contains(&m.name)).count();
    report
}

/// Modules to load for these devices: the always-loaded ones, the device
/// drivers with a match, and everything they need.
pub fn wanted(set: &ModuleSet, devices: &BTreeSet<String>) -> BTreeSet<String> {
    with_needs(set, |m| match m.when {
        When::Always => true,
        When::Device => m.aliases.iter().any(|a| devices.iter().any(|d| modalias::matches(a, d))),
        When::Needed | When::Filesystem | When::Layer => false,
    })
}

/// The modules `root` picks, and everything they need, by name.
fn with_needs(set: &ModuleSet, root: impl Fn(&Module) -> bool) -> BTreeSet<String> {
    let by_name: BTreeMap<&str, &Module> = set.modules.iter().map(|m| (m.name.as_str(), m)).collect();
    let mut todo: Vec<&str> = set.modules.iter().filter(|m| root(m)).map(|m| m.name.as_str()).collect();
    let mut out = BTreeSet::new();
    while let Some(name) = todo.pop() {
        if out.insert(name.to_string())
            && let Some(m) = by_name.get(name)
        {
            todo.extend(m.needs.iter().map(String::as_str));
        }
    }
    out
}

/// What loading one filesystem's modules did.
#[derive(Clone, Debug, Default, Serialize)]
pub struct FsLoad {
    #[serde(flatten)]
    pub outcome: Outcome,
    pub ms: u64,
}

/// Load the modules that provide filesystem `fs` (if the image has them:
/// it may be built in), with what they need, before mounting it. Storage
/// layers' modules (`When::Layer`) load the same way, by module name.
pub fn load_filesystem(path: &Path, fs: &str) -> FsLoad {
    let Ok(set) =
        std::fs::read(path).map_err(|_| ()).and_then(|b| serde_json::from_slice::<ModuleSet>(&b).map_err(|_| ()))
    else {
        return FsLoad::default();
    };
    load_filesystem_from(&set, fs, &mut |m| load(&Path::new("/").join(&m.path), &m.params))
}

pub fn load_filesystem_from(
    set: &ModuleSet,
    fs: &str,
    loader: &mut dyn FnMut(&Module) -> std::io::Result<()>,
) -> FsLoad {
    let start = Instant::now();
    let on_demand = |m: &Module| matches!(m.when, When::Filesystem | When::Layer);
    let wanted = with_needs(set, |m| on_demand(m) && (m.name == fs || m.aliases.iter().any(|a| a == fs)));
    let mut out = FsLoad::default();
    for m in set.modules.iter().filter(|m| wanted.contains(&m.name)) {
        out.outcome.note(&m.name, loader(m));
    }
    out.ms = start.elapsed().as_millis() as u64;
    out
}

/// Wait until the drivers just loaded have brought their devices into view:
/// the device list is the same twice in a row, 50 ms apart (at most 1 s).
fn settle(sys: &Path, before: BTreeSet<String>) -> BTreeSet<String> {
    let deadline = Instant::now() + Duration::from_secs(1);
    let mut last = before;
    loop {
        std::thread::sleep(Duration::from_millis(50));
        let now = modalias::present(sys);
        if now == last || Instant::now() > deadline {
            return now;
        }
        last = now;
    }
}

/// Load one module file: finit_module, or init_module where that is ENOSYS.
pub fn load(path: &Path, params: &str) -> std::io::Result<()> {
    let cparams = std::ffi::CString::new(params).map_err(|_| std::io::Error::other("NUL in parameters"))?;
    let file = std::fs::File::open(path)?;
    // SAFETY: finit_module(fd, params, flags) with a valid fd and C string.
    let r =
        unsafe { libc::syscall(libc::SYS_finit_module, std::os::fd::AsRawFd::as_raw_fd(&file), cparams.as_ptr(), 0) };
    if r == 0 {
        return Ok(());
    }
    let err = std::io::Error::last_os_error();
    if err.raw_os_error() != Some(libc::ENOSYS) {
        return Err(err);
    }
    let image = std::fs::read(path)?;
    // SAFETY: init_module(image, len, params) with a buffer that outlives the call.
    let r = unsafe { libc::syscall(libc::SYS_init_module, image.as_ptr(), image.len(), cparams.as_ptr()) };
    if r == 0 { Ok(()) } else { Err(std::io::Error::last_os_error()) }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn module(name: &str, when: When, needs: &[&str], aliases: &[&str]) -> Module {
        Module {
            name: name.into(),
            path: format!("lib/modules/6.1/{name}.ko"),
            params: String::new(),
            needs: needs.iter().map(|s| s.to_string()).collect(),
            when,
            aliases: aliases.iter().map(|s| s.to_string()).collect(),
        }
    }

    fn set() -> ModuleSet {
        ModuleSet {
            release: "6.1".into(),
            modules: vec![
                module("scsi_mod", When::Needed, &[], &[]),
                module("sd_mod", When::Always, &["scsi_mod"], &[]),
                module("libata", When::Needed, &["scsi_mod"], &[]),
                module("ahci", When::Device, &["libata"], &["pci:v*d*sv*sd*bc01sc06i01*"]),
                module("sym53c8xx", When::Device, &["scsi_mod"], &["pci:v00001000d00000012sv*sd*bc*sc*i*"]),
                module("virtio_pci", When::Device, &[], &["pci:v00001AF4d*sv*sd*bc*sc*i*"]),
                module("virtio_blk", When::Device, &[], &["virtio:d00000002v*"]),
                module("jbd2", When::Needed, &[], &[]),
                module("ext4", When::Filesystem, &["jbd2"], &["ext2", "ext3", "ext4"]),
                module("xfs", When::Filesystem, &[], &["xfs"]),
            ],
        }
    }

    /// Every module file of the set goes, once; a file already gone is not
    /// an error, and nothing outside the set is touched.
    #[test]
    fn the_sets_module_files_are_released_once() {
        let root = std::env::temp_dir().join(format!("bootmark-release-{}", std::process::id()));
        let set = set();
        for m in &set.modules {
            let file = root.join(&m.path);
            std::fs::create_dir_all(file.parent().unwrap()).unwrap();
            std::fs::write(&file, vec![0u8; 1000]).unwrap();
        }
        let other = root.join("lib/modules/6.1/modules.dep");
        std::fs::write(&other, b"kept").unwrap();
        std::fs::remove_file(root.join(&set.modules[0].path)).unwrap();
        let n = set.modules.len() - 1;
        assert_eq!(release(&set, &root), (n, 1000 * n as u64));
        assert!(set.modules.iter().all(|m| !root.join(&m.path).exists()));
        assert!(other.exists(), "only the set's files");
        assert_eq!(release(&set, &root), (0, 0), "released once");
        std::fs::remove_dir_all(&root).unwrap();
    }

    #[test]
    fn only_present_devices_drivers_load_with_what_they_need() {
        let ahci = ["pci:v00008086d00002922sv00001AF4sd00001100bc01sc06i01".to_string()].into();
        let w = wanted(&set(), &ahci);
        assert_eq!(w, ["ahci", "libata", "scsi_mod", "sd_mod"].map(String::from).into());
        let none = wanted(&set(), &BTreeSet::new());
        assert_eq!(none, ["scsi_mod", "sd_mod"].map(String::from).into(), "disk drivers always");
    }

    /// virtio_pci's device is there from the start; virtio_blk's appears
    /// only once virtio_pci is loaded: a second pass loads it.
    #[test]
    fn passes_go_on_until_nothing_new_appears() {
        let sys = std::env::temp_dir().join(format!("bootmark-passes-{}", std::process::id()));
        let pci = sys.join("bus/pci/devices/0000:00:04.0");
        std::fs::create_dir_all(&pci).unwrap();
        std::fs::write(pci.join("modalias"), "pci:v00001AF4d00001001sv00001AF4sd00000002bc01sc00i00\n").unwrap();
        let mut order = Vec::new();
        let report = load_in_passes(&set(), &sys, &mut |m| {
            order.push(m.name.clone());
            if m.name == "virtio_pci" {
                let dev = sys.join("bus/virtio/devices/virtio0");
                std::fs::create_dir_all(&dev)?;
                std::fs::write(dev.join("modalias"), "virtio:d00000002v00001AF4\n")?;
            }
            if m.name == "sd_mod" { Err(std::io::Error::from_raw_os_error(libc::EEXIST)) } else { Ok(()) }
        });
        std::fs::remove_dir_all(&sys).unwrap();
        assert_eq!(order, ["scsi_mod", "sd_mod", "virtio_pci", "virtio_blk"]);
        assert_eq!(report.passes, 2);
        assert_eq!(report.outcome.loaded, ["scsi_mod", "virtio_pci", "virtio_blk"]);
        assert_eq!(report.outcome.already, ["sd_mod"]);
        assert_eq!(report.not_needed, 2, "ahci and sym53c8xx: no such controller here");
        assert_eq!(report.devices, 2);
    }

    /// Filesystems load only when one is about to be mounted: ext3 is
    /// provided by ext4 on current kernels, xfs stays out.
    #[test]
    fn a_filesystem_loads_its_module_and_what_that_needs() {
        let mut order = Vec::new();
        let r = load_filesystem_from(&set(), "ext3", &mut |m| {
            order.push(m.name.clone());
            Ok(())
        });
        assert_eq!(order, ["jbd2", "ext4"]);
        assert_eq!(r.outcome.loaded, order);
        let none = load_filesystem_from(&set(), "btrfs", &mut |_| panic!("nothing provides btrfs"));
        assert!(
            none.outcome.loaded.is_empty() && none.outcome.failed.is_empty(),
            "built in, or absent: mount will say"
        );
        assert!(!wanted(&set(), &BTreeSet::new()).contains("xfs"), "no filesystem at start-up");
    }

    #[test]
    fn a_missing_or_broken_set_is_reported_not_fatal() {
        let r = load_for_machine(Path::new("/nonexistent/modules.json"), Path::new("/sys"));
        assert!(r.error.is_none() && r.outcome.loaded.is_empty(), "no set: nothing to load");
        let broken = std::env::temp_dir().join(format!("bootmark-modules-{}.json", std::process::id()));
        std::fs::write(&broken, b"{\"release\": 1").unwrap();
        let r = load_for_machine(&broken, Path::new("/sys"));
        std::fs::remove_file(&broken).unwrap();
        assert!(r.error.unwrap().contains("bootmark-modules"), "a broken set is named");
        assert!(load(Path::new("/nonexistent/x.ko"), "").unwrap_err().kind() == std::io::ErrorKind::NotFound);
    }

    #[test]
    fn the_set_round_trips_through_json() {
        let s = set();
        let text = serde_json::to_string(&s).unwrap();
        assert!(text.contains(r#""when":"device""#), "{text}");
        assert_eq!(serde_json::from_str::<ModuleSet>(&text).unwrap(), s);
    }
}
