//! Pointing a server's network boot at one entry: the image's pxe/ tree
//! copied into the lab's TFTP root once, then per step a config of the
//! server's own beside the shared default — `pxelinux.cfg/01-<mac>` for
//! BIOS (pxelinux looks for it before `default`) and
//! `grub/grub.cfg-01-<mac>` for UEFI (GRUB's netboot looks for it before
//! `grub.cfg`) — with that entry as the default and no wait at the menu.
//! Other servers booting from the same root are not affected. What a
//! per-MAC name and the shared menus (`pxelinux.cfg/default`,
//! `grub/grub.cfg`, which the image's tree replaces) held before the lab
//! is kept and put back at the end.

use crate::bootmenu;
use std::path::{Path, PathBuf};

/// The per-MAC config names of `mac` (`52:54:00:ab:cd:ef`).
pub fn config_paths(tftp_root: &Path, mac: &str) -> [PathBuf; 2] {
    let dashed = mac.replace(':', "-");
    [tftp_root.join(format!("pxelinux.cfg/01-{dashed}")), tftp_root.join(format!("grub/grub.cfg-01-{dashed}"))]
}

/// Copy the image's pxe/ tree into `tftp_root` (files that differ or are
/// missing; nothing else there is touched). Returns how many were written.
pub fn install_tree(image_pxe: &Path, tftp_root: &Path) -> Result<usize, String> {
    let mut written = 0;
    let mut stack = vec![PathBuf::new()];
    while let Some(rel) = stack.pop() {
        let from = image_pxe.join(&rel);
        for entry in std::fs::read_dir(&from).map_err(|e| format!("cannot read {}: {e}", from.display()))? {
            let entry = entry.map_err(|e| format!("cannot read {}: {e}", from.display()))?;
            let rel = rel.join(entry.file_name());
            let (src, dst) = (image_pxe.join(&rel), tftp_root.join(&rel));
            if entry.file_type().map_err(|e| format!("{}: {e}", src.display()))?.is_dir() {
                std::fs::create_dir_all(&dst).map_err(|e| format!("cannot create {}: {e}", dst.display()))?;
                stack.push(rel);
            } else {
                let bytes = std::fs::read(&src).map_err(|e| format!("cannot read {}: {e}", src.display()))?;
                if std::fs::read(&dst).ok().as_deref() != Some(&bytes[..]) {
                    std::fs::write(&dst, &bytes).map_err(|e| format!("cannot write {}: {e}", dst.display()))?;
                    written += 1;
                }
            }
        }
    }
    Ok(written)
}

/// The shared menus every server of the root reads when it has no per-MAC config.
fn shared_menus(tftp_root: &Path) -> [PathBuf; 2] {
    [tftp_root.join("pxelinux.cfg/default"), tftp_root.join("grub/grub.cfg")]
}

/// What the per-MAC names and the shared menus held before the lab wrote
/// them (None: nothing). Kept in the state directory, so that a lab
/// resumed after the workstation died still puts back what was there
/// before it started. Taken before the image's tree is installed.
#[derive(serde::Serialize, serde::Deserialize)]
pub struct Saved(Vec<(PathBuf, Option<Vec<u8>>)>);

pub fn save(tftp_root: &Path, mac: &str) -> Saved {
    let paths = config_paths(tftp_root, mac).into_iter().chain(shared_menus(tftp_root));
    Saved(paths.map(|p| (p.clone(), std::fs::read(&p).ok())).collect())
}

/// The `Saved` in `file` if a run of this lab took it, else taken now and
/// written there (before anything is changed).
pub fn save_once(file: &Path, tftp_root: &Path, mac: &str) -> Result<Saved, String> {
    if let Ok(text) = std::fs::read_to_string(file) {
        return serde_json::from_str(&text).map_err(|e| format!("{}: {e}", file.display()));
    }
    let saved = save(tftp_root, mac);
    bootmenu::write_synced(file, &serde_json::to_string(&saved).expect("serialises"))?;
    Ok(saved)
}

/// Put back what `save` found.
pub fn restore(saved: &Saved) -> Result<(), String> {
    for (path, before) in &saved.0 {
        let done = match before {
            Some(bytes) => std::fs::write(path, bytes),
            None => match std::fs::remove_file(path) {
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
                other => other,
            },
        };
        done.map_err(|e| format!("cannot restore {}: {e}", path.display()))?;
    }
    Ok(())
}

/// Make `entry` (a label, with `set` its settings for this boot) the one server `mac` boots, from the shared
/// configs the image put in `tftp_root`.
pub fn point_at(tftp_root: &Path, mac: &str, entry: &str, set: Option<&str>) -> Result<(), String> {
    if let Some(set) = set {
        bootmenu::check_set(set)?;
    }
    let shared = shared_menus(tftp_root);
    let [syslinux_mac, grub_mac] = config_paths(tftp_root, mac);
    let syslinux =
        std::fs::read_to_string(&shared[0]).map_err(|e| format!("cannot read {}: {e}", shared[0].display()))?;
    let grub = std::fs::read_to_string(&shared[1]).ok();
    let in_sys = bootmenu::labels(&syslinux).iter().any(|l| l == entry);
    let in_grub = grub.as_deref().is_some_and(|g| bootmenu::grub_ids(g).iter().any(|l| l == entry));
    if !in_sys && !in_grub {
        let mut all = bootmenu::labels(&syslinux);
        for id in grub.as_deref().map(bootmenu::grub_ids).unwrap_or_default() {
            if !all.contains(&id) {
                all.push(id);
            }
        }
        return Err(format!(
            "{} has no entry {entry} (it has {}): is it this image's tree?",
            shared[0].display(),
            all.join(", ")
        ));
    }
    // No wait at the menu: nobody is there to choose. An arm64 entry is in
    // GRUB's menu only (arm64 boots UEFI only).
    if in_sys {
        let text = with_line(&bootmenu::syslinux_set_default(&syslinux, entry), "TIMEOUT ", "TIMEOUT 1");
        let text = bootmenu::syslinux_with_set(&text, entry, set);
        bootmenu::write_synced(&syslinux_mac, &text)?;
    }
    if let (true, Some(grub)) = (in_grub, grub) {
        let text = with_line(&bootmenu::grub_set_default(&grub, entry), "set timeout=", "set timeout=0");
        let text = bootmenu::grub_with_set(&text, entry, set);
        bootmenu::write_synced(&grub_mac, &text)?;
    }
    Ok(())
}

/// `text` with each line starting with `starts` replaced by `line`.
fn with_line(text: &str, starts: &str, line: &str) -> String {
    text.lines().map(|l| if l.trim().starts_with(starts) { line } else { l }).map(|l| format!("{l}\n")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const SYSLINUX: &str = "SERIAL 0 115200\nPROMPT 1\nTIMEOUT 30\nDEFAULT k0\n\nLABEL k0\n  KERNEL boot/k0/vmlinuz\n\nLABEL k1\n  KERNEL boot/k1/vmlinuz\n";
    const GRUB: &str = "set timeout=3\nset default=k0\n\nmenuentry 'a' --id k0 {\n}\nmenuentry 'b' --id k1 {\n}\n";

    fn tree(name: &str) -> (PathBuf, PathBuf) {
        let base = std::env::temp_dir().join(format!("bootmark-lab-pxe-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&base);
        let image = base.join("image-pxe");
        std::fs::create_dir_all(image.join("pxelinux.cfg")).unwrap();
        std::fs::create_dir_all(image.join("grub")).unwrap();
        std::fs::write(image.join("pxelinux.cfg/default"), SYSLINUX).unwrap();
        std::fs::write(image.join("grub/grub.cfg"), GRUB).unwrap();
        std::fs::write(image.join("pxelinux.0"), b"loader").unwrap();
        let root = base.join("tftp");
        std::fs::create_dir_all(&root).unwrap();
        (image, root)
    }

    #[test]
    fn the_server_gets_its_entry_and_others_keep_the_default() {
        let (image, root) = tree("point");
        std::fs::write(root.join("other-lab-file"), b"kept").unwrap();
        assert_eq!(install_tree(&image, &root).unwrap(), 3);
        assert_eq!(install_tree(&image, &root).unwrap(), 0, "an unchanged tree is not written again");
        let mac = "52:54:00:ab:cd:ef";
        let saved = save(&root, mac);
        point_at(&root, mac, "k1", None).unwrap();
        let [bios, uefi] = config_paths(&root, mac);
        assert!(bios.ends_with("pxelinux.cfg/01-52-54-00-ab-cd-ef"), "{}", bios.display());
        let text = std::fs::read_to_string(&bios).unwrap();
        assert!(
            text.contains("DEFAULT k1\n") && text.contains("TIMEOUT 1\n") && !text.contains("TIMEOUT 30"),
            "{text}"
        );
        let grub = std::fs::read_to_string(&uefi).unwrap();
        assert!(grub.contains("set default=k1\n") && grub.contains("set timeout=0\n"), "{grub}");
        assert_eq!(
            std::fs::read_to_string(root.join("pxelinux.cfg/default")).unwrap(),
            SYSLINUX,
            "shared default untouched"
        );
        let e = point_at(&root, mac, "k7", None).unwrap_err();
        assert!(e.contains("has no entry k7 (it has k0, k1)"), "{e}");
        restore(&saved).unwrap();
        assert!(!bios.exists() && !uefi.exists());
        assert_eq!(std::fs::read(root.join("other-lab-file")).unwrap(), b"kept");
    }

    #[test]
    fn a_config_the_server_had_before_comes_back() {
        let (image, root) = tree("restore");
        install_tree(&image, &root).unwrap();
        let mac = "52:54:00:00:00:01";
        let [bios, _] = config_paths(&root, mac);
        std::fs::write(&bios, "DEFAULT local\n").unwrap();
        let saved = save(&root, mac);
        point_at(&root, mac, "k0", None).unwrap();
        assert!(std::fs::read_to_string(&bios).unwrap().contains("DEFAULT k0"));
        restore(&saved).unwrap();
        assert_eq!(std::fs::read_to_string(&bios).unwrap(), "DEFAULT local\n");
        // Taken once: a second run (a resumed lab) gets the first one's.
        let file = root.join("saved.json");
        save_once(&file, &root, mac).unwrap();
        point_at(&root, mac, "k1", None).unwrap();
        restore(&save_once(&file, &root, mac).unwrap()).unwrap();
        assert_eq!(std::fs::read_to_string(&bios).unwrap(), "DEFAULT local\n");
    }

    #[test]
    fn the_shared_menus_a_root_had_come_back_and_ones_it_lacked_go() {
        let (image, root) = tree("shared");
        std::fs::create_dir_all(root.join("pxelinux.cfg")).unwrap();
        std::fs::write(root.join("pxelinux.cfg/default"), "DEFAULT install\n").unwrap();
        let mac = "52:54:00:00:00:02";
        let saved = save(&root, mac);
        install_tree(&image, &root).unwrap();
        point_at(&root, mac, "k1", None).unwrap();
        assert_eq!(std::fs::read_to_string(root.join("pxelinux.cfg/default")).unwrap(), SYSLINUX);
        restore(&saved).unwrap();
        assert_eq!(std::fs::read_to_string(root.join("pxelinux.cfg/default")).unwrap(), "DEFAULT install\n");
        assert!(!root.join("grub/grub.cfg").exists(), "a menu the root did not have is removed");
    }
}
