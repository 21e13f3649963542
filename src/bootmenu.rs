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

/// Point GRUB's `set default=` at entry `index`.
pub fn grub_set_default(text: &str, index: usize) -> String {
    text.lines()
        .map(|l| if l.starts_with("set default=") { format!("set default={index}\n") } else { format!("{l}\n") })
        .collect()
}

/// Both menus under `root` (the stick's FAT root): make `label` the default.
pub fn set_default(root: &std::path::Path, label: &str) -> Result<(), String> {
    let sys_path = root.join("syslinux.cfg");
    let grub_path = root.join("boot/grub/grub.cfg");
    let sys = std::fs::read_to_string(&sys_path).map_err(|e| format!("{}: {e}", sys_path.display()))?;
    let index =
        labels(&sys).iter().position(|l| l == label).ok_or_else(|| format!("the boot menu has no entry {label}"))?;
    write_synced(&sys_path, &syslinux_set_default(&sys, label))?;
    if let Ok(grub) = std::fs::read_to_string(&grub_path) {
        write_synced(&grub_path, &grub_set_default(&grub, index))?;
    }
    Ok(())
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

#[cfg(test)]
mod tests {
    use super::*;

    const SYS: &str =
        "SERIAL 0 115200\nDEFAULT k0\n\nLABEL k0\n  KERNEL /boot/k0/vmlinuz\n\nLABEL k1\n  KERNEL /boot/k1/vmlinuz\n";

    #[test]
    fn defaults_change_and_nothing_else() {
        assert_eq!(labels(SYS), ["k0", "k1"]);
        let changed = syslinux_set_default(SYS, "k1");
        assert_eq!(changed, SYS.replace("DEFAULT k0", "DEFAULT k1"));
        assert_eq!(
            grub_set_default("set timeout=3\nset default=0\nmenuentry 'a' {\n}\n", 1),
            "set timeout=3\nset default=1\nmenuentry 'a' {\n}\n"
        );
    }

    #[test]
    fn set_default_on_a_stick_tree() {
        let root = std::env::temp_dir().join(format!("bootmark-menu-{}", std::process::id()));
        std::fs::create_dir_all(root.join("boot/grub")).unwrap();
        std::fs::write(root.join("syslinux.cfg"), SYS).unwrap();
        std::fs::write(root.join("boot/grub/grub.cfg"), "set default=0\n").unwrap();
        set_default(&root, "k1").unwrap();
        assert!(std::fs::read_to_string(root.join("syslinux.cfg")).unwrap().contains("DEFAULT k1"));
        assert_eq!(std::fs::read_to_string(root.join("boot/grub/grub.cfg")).unwrap(), "set default=1\n");
        assert!(set_default(&root, "k7").unwrap_err().contains("no entry k7"));
        crate::fsutil::remove_tree(&root).unwrap();
    }
}
