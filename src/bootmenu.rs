//! The boot menus on the stick are plain text files; this is how their
//! default entry is changed — by `cargo xtask qemu --entry` on the
//! workstation and by /init when a sequence moves to its next step.

/// The `LABEL` names of a syslinux.cfg, in order.
pub fn labels(syslinux_cfg: &str) -> Vec<String> {
    syslinux_cfg.lines().filter_map(|l| l.trim().strip_prefix("LABEL ")).map(|l| l.trim().to_string()).collect()
}

/// Point syslinux's `DEFAULT` at `label`.
pub fn syslinux_set_default(text: &str, label: &str) -> String {
    text.lines()
        .map(|l| if l.starts_with("DEFAULT ") { format!("DEFAULT {label}\n") } else { format!("{l}\n") })
        .collect()
}

/// The `--id` of each GRUB menuentry, in the order the file has them.
pub fn grub_ids(grub_cfg: &str) -> Vec<String> {
    grub_cfg.lines().filter_map(grub_entry_id).map(str::to_string).collect()
}

/// The `--id` of a line that starts a menuentry.
fn grub_entry_id(line: &str) -> Option<&str> {
    line.starts_with("menuentry ").then(|| line.split_whitespace().skip_while(|w| *w != "--id").nth(1)).flatten()
}

/// Point GRUB's `set default=` at the entry whose id is `label`. By id, not
/// by number: an image for two architectures has a block of entries per
/// architecture, and GRUB numbers only the block it runs. On the other
/// architecture the id is not in the menu and GRUB boots its first entry.
pub fn grub_set_default(text: &str, label: &str) -> String {
    text.lines()
        .map(|l| if l.starts_with("set default=") { format!("set default={label}\n") } else { format!("{l}\n") })
        .collect()
}

/// Which of the two menus list `label`: (syslinux's, GRUB's). An x86 entry
/// is in both, an arm64 entry in GRUB's only (arm64 boots UEFI only).
fn menus_listing(syslinux: Option<&str>, grub: Option<&str>, label: &str) -> (bool, bool) {
    let has = |list: Vec<String>| list.iter().any(|l| l == label);
    (syslinux.is_some_and(|s| has(labels(s))), grub.is_some_and(|g| has(grub_ids(g))))
}

/// The kernel parameter that gives one boot its settings (`bootmark bisect settings`).
const SET: &str = "bootmark.set=";

/// A `bootmark.set=` value as it may go onto a kernel line in a menu file
/// and through `sh -c`: `NAME:KEY=VALUE,…` of letters, digits and `.`, `_`,
/// `-`, `=`, `,`, `:`, `+` — no space (another kernel argument), no line
/// end (another menu line), nothing a shell or GRUB treats specially.
pub fn check_set(set: &str) -> Result<(), String> {
    let plain = |c: char| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-' | '=' | ',' | ':' | '+');
    match set.chars().all(plain) {
        true => Ok(()),
        false => Err(format!(
            "settings {set:?} are not NAME=VALUE,… of letters, digits and . _ - = , : +: not put on a kernel command line"
        )),
    }
}

/// `label`'s kernel line in a syslinux.cfg (its `APPEND`) with `bootmark.set=SET`
/// in it, or with none when `set` is None; any earlier one is replaced, so
/// the menu of a stick or TFTP tree reused boot after boot carries only this boot's.
pub fn syslinux_with_set(text: &str, label: &str, set: Option<&str>) -> String {
    let entry = |l: &str| l.trim().strip_prefix("LABEL ").map(|name| name.trim() == label);
    with_set_on_kernel_line(text, entry, "APPEND", set)
}

/// The same for GRUB: the `linux` line of the menuentry whose `--id` is `label`.
pub fn grub_with_set(text: &str, label: &str, set: Option<&str>) -> String {
    let entry = |l: &str| l.starts_with("menuentry ").then(|| grub_entry_id(l) == Some(label));
    with_set_on_kernel_line(text, entry, "linux", set)
}

/// `text` with the kernel line (`keyword PARAMS`) of one entry holding
/// `set` and no other `bootmark.set=`; `entry` says of a line that starts
/// an entry whether it is the one. The settings go before `panic=` (an
/// image's line ends in words that are not bootmark's: a line a kernel cut
/// ends in one of bootmark's, which /init refuses), else at the end.
fn with_set_on_kernel_line(
    text: &str,
    entry: impl Fn(&str) -> Option<bool>,
    keyword: &str,
    set: Option<&str>,
) -> String {
    let mut in_entry = false;
    let mut out = String::new();
    for l in text.lines() {
        in_entry = entry(l).unwrap_or(in_entry);
        match l.trim_start().strip_prefix(keyword).and_then(|rest| rest.strip_prefix(' ')) {
            Some(params) if in_entry => {
                let mut words: Vec<String> =
                    params.split_whitespace().filter(|w| !w.starts_with(SET)).map(str::to_string).collect();
                if let Some(s) = set {
                    let at = words.iter().position(|w| w.starts_with("panic=")).unwrap_or(words.len());
                    words.insert(at, format!("{SET}{s}"));
                }
                out += &format!("  {keyword} {}\n", words.join(" "));
            }
            _ => out += &format!("{l}\n"),
        }
    }
    out
}

/// The menus under `root` (the stick's FAT root) that list `label`: make it
/// their default.
pub fn set_default(root: &std::path::Path, label: &str) -> Result<(), String> {
    let sys_path = root.join("syslinux.cfg");
    let grub_path = root.join("boot/grub/grub.cfg");
    let read = |p: &std::path::Path| std::fs::read_to_string(p).map_err(|e| format!("{}: {e}", p.display()));
    let (sys, grub) = (read(&sys_path), read(&grub_path));
    match menus_listing(sys.as_deref().ok(), grub.as_deref().ok(), label) {
        (false, false) => match (sys, grub) {
            (Err(e), Err(_)) => Err(e),
            _ => Err(format!("the boot menu has no entry {label}")),
        },
        (in_sys, in_grub) => {
            if let (true, Ok(sys)) = (in_sys, &sys) {
                write_synced(&sys_path, &syslinux_set_default(sys, label))?;
            }
            if let (true, Ok(grub)) = (in_grub, &grub) {
                write_synced(&grub_path, &grub_set_default(grub, label))?;
            }
            Ok(())
        }
    }
}

/// Replace a file's content durably: temp file, fsync, rename, fsync dir.
pub fn write_synced(path: &std::path::Path, text: &str) -> Result<(), String> {
    let tmp = path.with_extension("new");
    let go = || -> std::io::Result<()> {
        let mut f = std::fs::File::create(&tmp)?;
        std::io::Write::write_all(&mut f, text.as_bytes())?;
        f.sync_all()?;
        std::fs::rename(&tmp, path)?;
        if let Some(dir) = path.parent() {
            std::fs::File::open(dir)?.sync_all()?;
        }
        Ok(())
    };
    go().map_err(|e| format!("{}: {e}", path.display()))
}

/// Where bootmark.iso holds its two menus, byte for byte (recorded in the
/// image's manifest): `bootmark lab` boots a server from a copy of the ISO
/// whose default entry it changes in place, as ISO 9660 stores a file's
/// bytes whole and unencoded, so no ISO tool is needed on the workstation.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct IsoMenus {
    /// isolinux/isolinux.cfg (BIOS).
    pub syslinux: Span,
    /// boot/grub/grub.cfg (UEFI).
    pub grub: Span,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Span {
    pub offset: u64,
    pub len: u64,
}

/// Blank lines after the ISO's menus: room for a longer default entry's
/// name and a step's settings (`bootmark.set=`) when the lab changes them
/// (both bootloaders skip blank lines).
pub const ISO_MENU_ROOM: usize = 512;

/// A menu as the ISO carries it: with `ISO_MENU_ROOM` blank lines at its end.
pub fn with_room(menu: &str) -> String {
    format!("{menu}{}", "\n".repeat(ISO_MENU_ROOM))
}

/// Both menus of an ISO (as found at their spans) with `label` the
/// default and `set` its settings, each the same length as before: the
/// blank lines at the end absorb the change.
pub fn iso_menus_set_default(
    syslinux: &[u8],
    grub: &[u8],
    label: &str,
    set: Option<&str>,
) -> Result<(Vec<u8>, Vec<u8>), String> {
    let text = |bytes: &[u8], what: &str| {
        String::from_utf8(bytes.to_vec())
            .map_err(|_| format!("the ISO's {what} menu is not text: not this image's ISO"))
    };
    let (sys, grub) = (text(syslinux, "BIOS")?, text(grub, "UEFI")?);
    if !sys.starts_with("# bootmark boot menu (BIOS)") || !grub.starts_with("# bootmark boot menu (UEFI)") {
        return Err("the ISO's menus are not where the manifest says: not this image's ISO".into());
    }
    let (in_sys, in_grub) = menus_listing(Some(&sys), Some(&grub), label);
    if !in_sys && !in_grub {
        return Err(format!("the ISO's boot menu has no entry {label}"));
    }
    let fit = |changed: String, len: usize| -> Result<Vec<u8>, String> {
        let body = changed.trim_end_matches('\n');
        if body.len() + 1 > len {
            return Err(format!("entry {label}: its name and settings do not fit the room the ISO's menu has"));
        }
        Ok(format!("{body}{}", "\n".repeat(len - body.len())).into_bytes())
    };
    // A menu that does not list the entry stays as it is.
    let (sys_len, grub_len) = (syslinux.len(), grub.len());
    let sys = if in_sys { syslinux_with_set(&syslinux_set_default(&sys, label), label, set) } else { sys };
    let grub = if in_grub { grub_with_set(&grub_set_default(&grub, label), label, set) } else { grub };
    Ok((fit(sys, sys_len)?, fit(grub, grub_len)?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_set_that_would_add_a_kernel_argument_or_a_menu_line_is_refused() {
        assert_eq!(check_set("d1+d3:vm.dirty_ratio=40,queue.scheduler=mq-deadline"), Ok(()));
        for bad in
            ["a:queue.scheduler=bfq init=/bin/sh", "a:x=1\n  KERNEL http://x", "a:x=$(reboot)", "a:x=1;y", "a:x='1'"]
        {
            assert!(check_set(bad).unwrap_err().contains("not put on a kernel command line"), "{bad}");
        }
    }

    const SYS: &str =
        "SERIAL 0 115200\nDEFAULT k0\n\nLABEL k0\n  KERNEL /boot/k0/vmlinuz\n\nLABEL k1\n  KERNEL /boot/k1/vmlinuz\n";

    #[test]
    fn defaults_change_and_nothing_else() {
        assert_eq!(labels(SYS), ["k0", "k1"]);
        let changed = syslinux_set_default(SYS, "k1");
        assert_eq!(changed, SYS.replace("DEFAULT k0", "DEFAULT k1"));
        assert_eq!(
            grub_set_default("set timeout=3\nset default=k0\nmenuentry 'a' --id k0 {\n}\n", "k1"),
            "set timeout=3\nset default=k1\nmenuentry 'a' --id k0 {\n}\n"
        );
        assert_eq!(
            grub_ids("menuentry 'a' --id k0 {\n}\nif x; then\nmenuentry 'b c' --id k1-v {\n}\nfi\n"),
            ["k0", "k1-v"]
        );
    }

    /// A boot's settings go on its entry's kernel line only, and replace the last boot's.
    #[test]
    fn settings_go_on_one_entrys_line_and_replace_earlier_ones() {
        let sys = "DEFAULT k0\n\nLABEL k0\n  KERNEL /boot/k0/vmlinuz\n  APPEND console=ttyS0 bootmark.entry=k0\n\nLABEL k1\n  APPEND console=ttyS0 bootmark.entry=k1\n";
        let once = syslinux_with_set(sys, "k1", Some("vm.dirty_ratio=20"));
        assert_eq!(once, sys.replace("bootmark.entry=k1", "bootmark.entry=k1 bootmark.set=vm.dirty_ratio=20"));
        let twice = syslinux_with_set(&once, "k1", Some("queue.max_sectors_kb=128"));
        assert!(twice.ends_with("bootmark.entry=k1 bootmark.set=queue.max_sectors_kb=128\n"), "{twice}");
        assert_eq!(syslinux_with_set(&twice, "k1", None), sys);
        let grub = "set default=0\nmenuentry 'a' --id k0 {\n  linux /boot/k0/vmlinuz bootmark.entry=k0\n}\nmenuentry 'b' --id k1 {\n  linux /boot/k1/vmlinuz bootmark.entry=k1\n}\n";
        let set = grub_with_set(grub, "k0", Some("vm.swappiness=1"));
        assert_eq!(set, grub.replace("entry=k0\n", "entry=k0 bootmark.set=vm.swappiness=1\n"));
        assert_eq!(grub_with_set(&set, "k0", None), grub);
        // An image's line: the settings before panic= and the tracepoints, never last.
        let image = "menuentry 'a' --id k0 {\n  linux /boot/k0/vmlinuz bootmark.entry=k0 panic=30 trace_event=a:b\n}\n";
        let set = grub_with_set(image, "k0", Some("vm.swappiness=1"));
        assert!(set.contains("bootmark.entry=k0 bootmark.set=vm.swappiness=1 panic=30 trace_event=a:b\n"), "{set}");
    }

    #[test]
    fn set_default_on_a_stick_tree() {
        let root = std::env::temp_dir().join(format!("bootmark-menu-{}", std::process::id()));
        std::fs::create_dir_all(root.join("boot/grub")).unwrap();
        std::fs::write(root.join("syslinux.cfg"), SYS).unwrap();
        let grub =
            "set default=k0\nmenuentry 'a' --id k0 {\n}\nmenuentry 'b' --id k1 {\n}\nmenuentry 'arm64' --id k2 {\n}\n";
        std::fs::write(root.join("boot/grub/grub.cfg"), grub).unwrap();
        set_default(&root, "k1").unwrap();
        assert!(std::fs::read_to_string(root.join("syslinux.cfg")).unwrap().contains("DEFAULT k1"));
        let read_grub = || std::fs::read_to_string(root.join("boot/grub/grub.cfg")).unwrap();
        assert_eq!(read_grub(), grub.replace("default=k0", "default=k1"));
        // An arm64 entry is GRUB's alone: syslinux keeps its own default.
        set_default(&root, "k2").unwrap();
        assert!(std::fs::read_to_string(root.join("syslinux.cfg")).unwrap().contains("DEFAULT k1"));
        assert_eq!(read_grub(), grub.replace("default=k0", "default=k2"));
        assert!(set_default(&root, "k7").unwrap_err().contains("no entry k7"));
        crate::fsutil::remove_tree(&root).unwrap();
    }

    #[test]
    fn iso_menus_change_their_default_and_keep_their_length() {
        let sys = with_room(&format!("# bootmark boot menu (BIOS).\n{SYS}\nLABEL k1-a-long-variant-name\n"));
        let grub = with_room(
            "# bootmark boot menu (UEFI).\nset timeout=0\nset default=k0\nmenuentry 'a' --id k0 {\n}\nmenuentry 'b' --id k1-a-long-variant-name {\n}\n",
        );
        let (s, g) = iso_menus_set_default(sys.as_bytes(), grub.as_bytes(), "k1-a-long-variant-name", None).unwrap();
        assert_eq!((s.len(), g.len()), (sys.len(), grub.len()));
        let (s, g) = (String::from_utf8(s).unwrap(), String::from_utf8(g).unwrap());
        assert!(s.contains("\nDEFAULT k1-a-long-variant-name\n") && !s.contains("DEFAULT k0"), "{s}");
        assert!(g.contains("set default=k1-a-long-variant-name\n"), "{g}");
        // And back: the room is not used up by changing the default again.
        let (s2, _) = iso_menus_set_default(s.as_bytes(), g.as_bytes(), "k0", None).unwrap();
        assert_eq!(String::from_utf8(s2).unwrap(), sys);
        let e = iso_menus_set_default(b"MZ\x90\0", grub.as_bytes(), "k0", None).unwrap_err();
        assert!(e.contains("not this image's ISO"), "{e}");
        assert!(
            iso_menus_set_default(sys.as_bytes(), grub.as_bytes(), "k9", None).unwrap_err().contains("no entry k9")
        );
        let tight = format!("# bootmark boot menu (BIOS).\n{SYS}\nLABEL k10000000\n\n");
        let e = iso_menus_set_default(tight.as_bytes(), grub.as_bytes(), "k10000000", None).unwrap_err();
        assert!(e.contains("do not fit"), "{e}");
    }
}
