//! The modules an image needs, with everything they depend on — including
//! soft dependencies, which modules.dep does not record (and which the .deb
//! does not ship anyway) — read from each module's own `.modinfo` section.
//! The result is a load order (dependencies first) and per-module parameters.

use crate::host::project::Result;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// What a module says about itself.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ModInfo {
    pub name: String,
    pub path: PathBuf,
    pub depends: Vec<String>,
    pub softdep_pre: Vec<String>,
    pub softdep_post: Vec<String>,
    pub aliases: Vec<String>,
}

/// Module names use '_' in modinfo and either in file names.
pub fn normalize(name: &str) -> String {
    name.replace('-', "_")
}

/// The `.modinfo` section of a kernel module (ELF32 or ELF64), read with
/// the `object` crate: this runs on the workstation, where a maintained
/// ELF reader is worth more than a few kilobytes.
pub fn modinfo_section(elf: &[u8]) -> Option<&[u8]> {
    use object::{Object, ObjectSection};
    let file = object::File::parse(elf).ok()?;
    file.section_by_name(".modinfo")?.data().ok()
}

/// Parse `key=value\0…` into a ModInfo.
pub fn parse_modinfo(section: &[u8], path: &Path) -> ModInfo {
    let mut m = ModInfo { path: path.to_path_buf(), ..ModInfo::default() };
    for kv in section.split(|&b| b == 0).filter(|s| !s.is_empty()) {
        let kv = String::from_utf8_lossy(kv);
        let Some((k, v)) = kv.split_once('=') else { continue };
        match k {
            "name" => m.name = normalize(v),
            "depends" => m.depends.extend(v.split(',').filter(|s| !s.is_empty()).map(normalize)),
            "alias" => m.aliases.push(v.to_string()),
            "softdep" => {
                // "pre: a b post: c"
                let mut into_pre = true;
                for w in v.split_whitespace() {
                    match w {
                        "pre:" => into_pre = true,
                        "post:" => into_pre = false,
                        name if into_pre => m.softdep_pre.push(name.to_string()),
                        name => m.softdep_post.push(name.to_string()),
                    }
                }
            }
            _ => {}
        }
    }
    if m.name.is_empty() {
        let file = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        m.name = normalize(file.split(".ko").next().unwrap_or(&file));
    }
    m
}

/// Every module under a `lib/modules/<release>` tree, by name, plus aliases.
pub struct Index {
    pub modules: BTreeMap<String, ModInfo>,
    aliases: BTreeMap<String, Vec<String>>,
    builtin: BTreeSet<String>,
    /// Whether anything says what is built in (modules.builtin, or a kernel
    /// config through `add_builtin`). Without it a missing required module
    /// may be built in or absent: a warning, not an error.
    knows_builtins: bool,
}

impl Index {
    pub fn scan(tree: &Path) -> Result<Index> {
        let mut modules = BTreeMap::new();
        let mut stack = vec![tree.join("kernel")];
        while let Some(dir) = stack.pop() {
            for e in std::fs::read_dir(&dir).map_err(|e| format!("{}: {e}", dir.display()))?.flatten() {
                let p = e.path();
                if p.is_dir() {
                    stack.push(p);
                } else if p.to_string_lossy().ends_with(".ko") {
                    let data = std::fs::read(&p).map_err(|e| format!("{}: {e}", p.display()))?;
                    let info = parse_modinfo(modinfo_section(&data).unwrap_or(&[]), &p);
                    modules.insert(info.name.clone(), info);
                } else if p.to_string_lossy().contains(".ko.") {
                    return Err(format!(
                        "{} is compressed; bootmark images need plain .ko modules (2.6 kernels cannot load compressed ones): decompress the tree first",
                        p.display()
                    ));
                }
            }
        }
        let mut aliases: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for m in modules.values() {
            for a in &m.aliases {
                aliases.entry(a.clone()).or_default().push(m.name.clone());
            }
        }
        let listed = std::fs::read_to_string(tree.join("modules.builtin"));
        let knows_builtins = listed.is_ok();
        let builtin = listed
            .unwrap_or_default()
            .lines()
            .filter_map(|l| l.rsplit('/').next())
            .map(|f| normalize(f.trim_end_matches(".ko")))
            .collect();
        Ok(Index { modules, aliases, builtin, knows_builtins })
    }

    /// Modules a kernel config builds in (kernels before 2.6.33 have no modules.builtin).
    pub fn add_builtin(&mut self, names: Vec<String>) {
        self.builtin.extend(names.iter().map(|n| normalize(n)));
        self.knows_builtins = true;
    }

    /// Required modules neither in the tree nor known to be built in, when
    /// nothing says what is built in (they are skipped, with a warning).
    pub fn unknown_required(&self, wanted: &[(String, bool)]) -> Vec<String> {
        if self.knows_builtins {
            return Vec::new();
        }
        wanted
            .iter()
            .filter(|(name, required)| *required && self.resolve(name).is_empty())
            .map(|(name, _)| name.clone())
            .collect()
    }

    /// Module names a dependency word stands for: itself, or every module
    /// that declares it as an alias (e.g. crypto-crc32c → crc32c_generic, crc32c_intel).
    fn resolve(&self, word: &str) -> Vec<String> {
        let n = normalize(word);
        if self.modules.contains_key(&n) {
            return vec![n];
        }
        self.aliases.get(word).cloned().unwrap_or_default()
    }

    /// Required modules this kernel cannot have: neither in its tree nor
    /// built in, when something (modules.builtin, a config) says what is
    /// built in. The image builder stops on them unless told to go without.
    pub fn missing_required(&self, wanted: &[(String, bool)]) -> Vec<String> {
        if !self.knows_builtins {
            return Vec::new();
        }
        wanted
            .iter()
            .filter(|(name, required)| {
                *required && self.resolve(name).is_empty() && !self.builtin.contains(&normalize(name))
            })
            .map(|(name, _)| normalize(name))
            .collect()
    }

    /// Load order for `wanted`: (name, required?) pairs, dependencies
    /// first. What the tree lacks is skipped: `missing_required` says
    /// which of those matter.
    pub fn closure(&self, wanted: &[(String, bool)]) -> Vec<&ModInfo> {
        let mut order = Vec::new();
        let mut seen = BTreeSet::new();
        for (name, _) in wanted {
            for m in self.resolve(name) {
                self.visit(&m, &mut seen, &mut order);
            }
        }
        order
    }

    /// What a module must have loaded before it, as module names in the tree.
    pub fn needs(&self, m: &ModInfo) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for dep in m.softdep_pre.iter().chain(&m.depends).chain(&m.softdep_post) {
            for d in self.resolve(dep) {
                if !out.contains(&d) {
                    out.push(d);
                }
            }
        }
        out
    }

    /// Where each wanted module was found: in the tree, built into the
    /// kernel, or nowhere (for the manifest).
    pub fn whereabouts(&self, wanted: &[(String, bool)]) -> Whereabouts {
        let mut w = Whereabouts::default();
        for (name, _) in wanted {
            let n = normalize(name);
            if !self.resolve(name).is_empty() {
                w.found.push(n);
            } else if self.builtin.contains(&n) {
                w.built_in.push(n);
            } else {
                w.missing.push(n);
            }
        }
        w
    }

    fn visit<'a>(&'a self, name: &str, seen: &mut BTreeSet<String>, order: &mut Vec<&'a ModInfo>) {
        if !seen.insert(name.to_string()) {
            return;
        }
        let Some(m) = self.modules.get(name) else { return };
        for dep in m.softdep_pre.iter().chain(&m.depends) {
            for d in self.resolve(dep) {
                self.visit(&d, seen, order);
            }
        }
        order.push(m);
        for dep in &m.softdep_post {
            for d in self.resolve(dep) {
                self.visit(&d, seen, order);
            }
        }
    }
}

/// The manifest's account of the image/modules lists for one kernel.
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
pub struct Whereabouts {
    pub found: Vec<String>,
    pub built_in: Vec<String>,
    /// Optional modules this kernel has neither as a module nor (as far as
    /// anything says) built in; or, without a config, maybe built in.
    pub missing: Vec<String>,
    /// Required modules the kernel lacks, accepted with --allow-missing.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub allowed_missing: Vec<String>,
}

/// What an image loses without a required module, by the list that names
/// it (image/modules/LIST.list), for the builder's refusal.
pub fn loss(list: &str, module: &str) -> String {
    let module = normalize(module);
    match (list, module.as_str()) {
        ("usb", _) | ("fs", "vfat" | "fat") => "the results stick: results go to the serial console only".into(),
        ("fs", m) if m.starts_with("nls_") => {
            "the results stick (vfat cannot mount without its codepage): results go to the serial console only".into()
        }
        ("fs", m) => format!("targets formatted as {m}"),
        ("storage", "sd_mod") => "every SCSI, SATA, SAS and USB disk: the target and the results stick".into(),
        ("layers", m) => format!("targets inside {m} (LVM2 or md RAID)"),
        (_, m) => format!("the disks behind {m}"),
    }
}

/// The builder's refusal when a kernel lacks required modules: what the
/// image would lose and the two ways on.
pub fn missing_error(release: &str, tree: &Path, missing: &[(String, String)]) -> String {
    let lines: String = missing.iter().map(|(list, m)| format!("\n  {m:<16} loses {}", loss(list, m))).collect();
    let names: Vec<&str> = missing.iter().map(|(_, m)| m.as_str()).collect();
    format!(
        "kernel {release}: {} has no {} and its config does not build {} in:{lines}\n\
         A /lib/modules copy that holds only what an initrd had lacks them. Either give the whole \
         /lib/modules/{release} of the machine the kernel comes from (--modules DIR), or build the \
         image without them: --allow-missing {}",
        tree.display(),
        names.join(", "),
        if names.len() == 1 { "it" } else { "them" },
        names.join(",")
    )
}

/// Buses whose devices the firmware enumerates before any driver is loaded
/// (PCI; ACPI's devices, as arm64 servers describe their SoC's AHCI and
/// xHCI; a device tree's, `of:`) or that a loaded PCI driver brings up
/// (virtio): their drivers are loaded only when a matching device is
/// present. ACPI aliases are written `acpi*:ID:*`.
const DEVICE_BUSES: [&str; 4] = ["pci:", "virtio:", "acpi", "of:"];

/// When /init loads a module, and the aliases it is matched by. `listed`:
/// named in image/modules (else it is only a dependency); `library`: some
/// other module in the image needs it (ehci_hcd for ehci_pci, mptscsih for
/// mptspi on current kernels), so it loads with its users, not by itself.
pub fn when_to_load(m: &ModInfo, listed: bool, library: bool) -> (bootmark::contract::modules::When, Vec<String>) {
    use bootmark::contract::modules::When;
    let path = m.path.to_string_lossy();
    if listed && path.contains("/kernel/fs/") && !path.contains("/kernel/fs/nls/") {
        // fs-ext3 etc. since 3.9; before, the module is named after its filesystem.
        let mut names: Vec<String> = m.aliases.iter().filter_map(|a| a.strip_prefix("fs-")).map(String::from).collect();
        if !names.contains(&m.name) {
            names.push(m.name.clone());
        }
        return (When::Filesystem, names);
    }
    if listed && path.contains("/kernel/drivers/md/") {
        // device-mapper, md and RAID levels: /init asks for them by name when the target is inside them.
        return (When::Layer, vec![m.name.clone()]);
    }
    let device: Vec<String> =
        m.aliases.iter().filter(|a| DEVICE_BUSES.iter().any(|b| a.starts_with(b))).cloned().collect();
    match (listed, device.is_empty()) {
        (true, false) => (When::Device, device),
        (true, true) if !library => (When::Always, Vec::new()),
        _ => (When::Needed, Vec::new()),
    }
}

/// Read a module list from image/modules: one name per line, `name?` for
/// optional, `name param=value …` for parameters, `#` comments.
pub fn parse_list(text: &str) -> Vec<(String, bool, String)> {
    text.lines()
        .map(|l| l.split('#').next().unwrap_or("").trim())
        .filter(|l| !l.is_empty())
        .map(|l| {
            let (name, params) = l.split_once(char::is_whitespace).unwrap_or((l, ""));
            let optional = name.ends_with('?');
            (name.trim_end_matches('?').to_string(), !optional, params.trim().to_string())
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn info(name: &str, depends: &[&str], pre: &[&str], aliases: &[&str]) -> ModInfo {
        ModInfo {
            name: name.into(),
            path: PathBuf::from(format!("{name}.ko")),
            depends: depends.iter().map(|s| s.to_string()).collect(),
            softdep_pre: pre.iter().map(|s| s.to_string()).collect(),
            softdep_post: vec![],
            aliases: aliases.iter().map(|s| s.to_string()).collect(),
        }
    }

    #[test]
    fn modinfo_fields_including_softdeps() {
        let sec = b"license=GPL\0softdep=pre: crc32c post: foo\0depends=mbcache,jbd2\0name=ext4\0alias=fs-ext4\0";
        let m = parse_modinfo(sec, Path::new("/x/ext4.ko"));
        assert_eq!(m.name, "ext4");
        assert_eq!(m.depends, ["mbcache", "jbd2"]);
        assert_eq!(m.softdep_pre, ["crc32c"]);
        assert_eq!(m.softdep_post, ["foo"]);
        assert_eq!(m.aliases, ["fs-ext4"]);
    }

    #[test]
    fn closure_puts_dependencies_and_soft_dependencies_first() {
        let mut modules = BTreeMap::new();
        for m in [
            info("ext4", &["jbd2", "mbcache"], &["crc32c"], &[]),
            info("jbd2", &[], &[], &[]),
            info("mbcache", &[], &[], &[]),
            info("crc32c_generic", &[], &[], &["crc32c", "crypto-crc32c"]),
            info("usb_storage", &["usbcore"], &[], &[]),
            info("usbcore", &[], &[], &[]),
        ] {
            modules.insert(m.name.clone(), m);
        }
        let mut aliases: BTreeMap<String, Vec<String>> = BTreeMap::new();
        aliases.insert("crc32c".into(), vec!["crc32c_generic".into()]);
        let idx = Index { modules, aliases, builtin: ["sd_mod".to_string()].into(), knows_builtins: true };
        let want = |v: &[(&str, bool)]| v.iter().map(|(n, r)| (n.to_string(), *r)).collect::<Vec<_>>();
        let order: Vec<&str> = idx
            .closure(&want(&[("usb-storage", true), ("ext4", true), ("sd_mod", true), ("cciss", false)]))
            .iter()
            .map(|m| m.name.as_str())
            .collect();
        assert_eq!(order, ["usbcore", "usb_storage", "crc32c_generic", "jbd2", "mbcache", "ext4"]);
        assert_eq!(
            idx.missing_required(&want(&[("nonexistent", true), ("cciss", false), ("sd_mod", true)])),
            ["nonexistent"]
        );
    }

    /// A 2.6.9 tree: no modules.builtin. Without a config a missing required
    /// module is a warning; with one, built-in drivers pass and absent ones fail.
    #[test]
    fn old_trees_use_the_config_to_tell_built_in_from_missing() {
        let mut modules = BTreeMap::new();
        let m = info("usb_storage", &[], &[], &[]);
        modules.insert(m.name.clone(), m);
        let mut idx = Index { modules, aliases: BTreeMap::new(), builtin: BTreeSet::new(), knows_builtins: false };
        let wanted = vec![("usb_storage".to_string(), true), ("sd_mod".to_string(), true), ("vfat".to_string(), true)];
        assert_eq!(idx.unknown_required(&wanted), ["sd_mod", "vfat"]);
        assert_eq!(idx.closure(&wanted).len(), 1);
        assert!(idx.missing_required(&wanted).is_empty(), "without a config: skipped with a warning, not an error");
        let config = crate::build::kernel::config::KernelConfig::parse(
            "CONFIG_X86=y\nCONFIG_BLK_DEV_SD=y\nCONFIG_VFAT_FS=m\n",
            std::path::Path::new("config-2.6.9"),
        );
        idx.add_builtin(config.built_in_modules());
        assert!(idx.unknown_required(&wanted).is_empty());
        assert_eq!(idx.missing_required(&wanted), ["vfat"], "=m but not in the tree: really missing");
        assert!(idx.missing_required(&wanted[..2]).is_empty(), "sd_mod is built in");
    }

    /// Controllers wait for their device, disk drivers and USB storage load
    /// always, libraries with their users, filesystems before their mount.
    #[test]
    fn when_each_module_loads() {
        use bootmark::contract::modules::When;
        let at = |path: &str, aliases: &[&str]| ModInfo {
            path: PathBuf::from(path),
            name: path.rsplit('/').next().unwrap().trim_end_matches(".ko").replace('-', "_"),
            aliases: aliases.iter().map(|s| s.to_string()).collect(),
            ..ModInfo::default()
        };
        let ahci = at("/m/kernel/drivers/ata/ahci.ko", &["pci:v*d*sv*sd*bc01sc06i01*"]);
        assert_eq!(when_to_load(&ahci, true, false), (When::Device, ahci.aliases.clone()));
        let virtio_blk = at("/m/kernel/drivers/block/virtio_blk.ko", &["virtio:d00000002v*"]);
        assert_eq!(when_to_load(&virtio_blk, true, false).0, When::Device);
        // An arm64 SoC's AHCI: found by its ACPI id or device-tree node, not on PCI.
        let xgene =
            at("/m/kernel/drivers/ata/ahci_xgene.ko", &["acpi*:APMC0D0D:*", "of:N*T*Capm,xgene-ahci", "platform:x"]);
        assert_eq!(when_to_load(&xgene, true, false), (When::Device, xgene.aliases[..2].to_vec()));
        let sd = at("/m/kernel/drivers/scsi/sd_mod.ko", &["scsi:t-0x00*", "scsi:t-0x0e*"]);
        assert_eq!(when_to_load(&sd, true, false), (When::Always, vec![]), "old kernels give disks no modalias");
        let usb_storage = at("/m/kernel/drivers/usb/storage/usb-storage.ko", &["usb:v*p*d*dc*dsc*dp*ic08isc06ip50in*"]);
        assert_eq!(when_to_load(&usb_storage, true, false).0, When::Always);
        let ehci_hcd = at("/m/kernel/drivers/usb/host/ehci-hcd.ko", &[]);
        assert_eq!(when_to_load(&ehci_hcd, true, true).0, When::Needed, "ehci_pci needs it on current kernels");
        assert_eq!(when_to_load(&ahci, false, true).0, When::Needed, "not listed: only a dependency");
        let ext4 = at("/m/kernel/fs/ext4/ext4.ko", &["fs-ext4", "ext3", "fs-ext3", "fs-ext2"]);
        assert_eq!(
            when_to_load(&ext4, true, false),
            (When::Filesystem, vec!["ext4".into(), "ext3".into(), "ext2".into()])
        );
        let old_ext3 = at("/m/kernel/fs/ext3/ext3.ko", &[]);
        assert_eq!(
            when_to_load(&old_ext3, true, false),
            (When::Filesystem, vec!["ext3".into()]),
            "2.6.9: no fs- aliases"
        );
        let nls = at("/m/kernel/fs/nls/nls_cp437.ko", &[]);
        assert_eq!(when_to_load(&nls, true, false).0, When::Always, "vfat asks for its codepage at mount");
        let mut raid1 = info("raid1", &["md_mod"], &[], &["md-personality-3", "md-raid1", "md-level-1"]);
        raid1.path = PathBuf::from("/lib/modules/6.1.0/kernel/drivers/md/raid1.ko");
        assert_eq!(
            when_to_load(&raid1, true, false),
            (When::Layer, vec!["raid1".into()]),
            "only when the target needs it"
        );
    }

    /// The 2.6.10 case: a /boot tree whose /lib/modules copy holds only what
    /// the initrd had. The refusal says what the image loses and both ways on.
    #[test]
    fn a_missing_required_module_is_refused_with_what_it_costs() {
        let missing = [("fs".to_string(), "nls_cp437".to_string()), ("usb".to_string(), "usb_storage".to_string())];
        let e = missing_error("2.6.10-5-386", Path::new("/srv/k/lib/modules/2.6.10-5-386"), &missing);
        assert!(e.contains("has no nls_cp437, usb_storage"), "{e}");
        assert!(e.contains("nls_cp437        loses the results stick"), "{e}");
        assert!(e.contains("results go to the serial console only"), "{e}");
        assert!(e.contains("--modules DIR") && e.ends_with("--allow-missing nls_cp437,usb_storage"), "{e}");
        assert!(!e.contains("image/modules"), "no advice to edit the project's own files: {e}");
        assert_eq!(loss("fs", "reiserfs"), "targets formatted as reiserfs");
        assert_eq!(loss("storage", "mptsas"), "the disks behind mptsas");
        assert!(loss("storage", "sd_mod").contains("the target and the results stick"));
    }

    #[test]
    fn list_format() {
        let l = parse_list("ahci\ncciss? # old HP\nusb-storage delay_use=0\n");
        assert_eq!(
            l,
            [
                ("ahci".into(), true, "".into()),
                ("cciss".into(), false, "".into()),
                ("usb-storage".into(), true, "delay_use=0".into())
            ]
        );
    }
}
