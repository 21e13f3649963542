//! Virtual media: per step, the image's bootmark.iso is published in the
//! lab's web directory as `bootmark-SERVER.iso` with the step's entry as
//! its menus' default, so the server boots that kernel with nobody at its
//! menu. The copy is changed in place at the spans the manifest records
//! (`bootmenu::IsoMenus`), written beside the final name and renamed over
//! it: a BMC reading the previous step's ISO never sees half of one.

use crate::bootmenu::{self, IsoMenus, Span};
use std::fs::File;
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

/// The file name the lab publishes `server`'s ISO under.
pub fn published_name(server: &str) -> String {
    format!("bootmark-{server}.iso")
}

/// Publish `iso` (the image's bootmark.iso) in `dir` as
/// `bootmark-SERVER.iso`, booting `entry` by default (with `set`, its
/// settings for this boot); returns its path.
pub fn publish(
    iso: &Path,
    menus: &IsoMenus,
    (entry, set): (&str, Option<&str>),
    dir: &Path,
    server: &str,
) -> Result<PathBuf, String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let out = dir.join(published_name(server));
    let tmp = dir.join(format!(".{}.new", published_name(server)));
    std::fs::copy(iso, &tmp).map_err(|e| format!("cannot copy {} to {}: {e}", iso.display(), tmp.display()))?;
    let changed = (|| {
        let mut f = File::options().read(true).write(true).open(&tmp).map_err(|e| format!("{}: {e}", tmp.display()))?;
        let sys = read_span(&mut f, menus.syslinux).map_err(|e| format!("{}: {e}", iso.display()))?;
        let grub = read_span(&mut f, menus.grub).map_err(|e| format!("{}: {e}", iso.display()))?;
        let (sys, grub) = bootmenu::iso_menus_set_default(&sys, &grub, entry, set)
            .map_err(|e| format!("{}: {e} (rebuild the image with `cargo xtask image`)", iso.display()))?;
        for (span, bytes) in [(menus.syslinux, sys), (menus.grub, grub)] {
            f.seek(SeekFrom::Start(span.offset))
                .and_then(|_| f.write_all(&bytes))
                .map_err(|e| format!("{}: {e}", tmp.display()))?;
        }
        f.sync_all().map_err(|e| format!("{}: {e}", tmp.display()))
    })();
    if let Err(e) = changed {
        let _ = std::fs::remove_file(&tmp);
        return Err(e);
    }
    std::fs::rename(&tmp, &out).map_err(|e| format!("cannot rename {} to {}: {e}", tmp.display(), out.display()))?;
    Ok(out)
}

fn read_span(f: &mut File, span: Span) -> std::io::Result<Vec<u8>> {
    let mut buf = vec![0; span.len as usize];
    f.seek(SeekFrom::Start(span.offset))?;
    f.read_exact(&mut buf)?;
    Ok(buf)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An "ISO": bytes around two menus at known places, as xorriso lays files out.
    fn fake_iso(dir: &Path) -> (PathBuf, IsoMenus, Vec<u8>) {
        let sys = bootmenu::with_room("# bootmark boot menu (BIOS).\nDEFAULT k0\n\nLABEL k0\n\nLABEL k1\n");
        let grub = bootmenu::with_room(
            "# bootmark boot menu (UEFI).\nset default=k0\nmenuentry 'a' --id k0 {\n}\nmenuentry 'b' --id k1 {\n}\n",
        );
        let mut bytes = vec![0xee; 6144];
        bytes[2048..2048 + sys.len()].copy_from_slice(sys.as_bytes());
        bytes[4096..4096 + grub.len()].copy_from_slice(grub.as_bytes());
        let iso = dir.join("bootmark.iso");
        std::fs::write(&iso, &bytes).unwrap();
        let menus = IsoMenus {
            syslinux: Span { offset: 2048, len: sys.len() as u64 },
            grub: Span { offset: 4096, len: grub.len() as u64 },
        };
        (iso, menus, bytes)
    }

    #[test]
    fn the_published_copy_differs_in_its_menus_only() {
        let dir = std::env::temp_dir().join(format!("bootmark-media-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let (iso, menus, before) = fake_iso(&dir);
        let www = dir.join("www");
        let out = publish(&iso, &menus, ("k1", None), &www, "dl140").unwrap();
        assert_eq!(out, www.join("bootmark-dl140.iso"));
        let after = std::fs::read(&out).unwrap();
        assert_eq!(after.len(), before.len());
        assert_eq!(std::fs::read(&iso).unwrap(), before, "the image's own ISO is untouched");
        let differ: Vec<usize> = (0..before.len()).filter(|i| before[*i] != after[*i]).collect();
        let inside = |i: &usize, s: Span| (s.offset..s.offset + s.len).contains(&(*i as u64));
        assert!(!differ.is_empty() && differ.iter().all(|i| inside(i, menus.syslinux) || inside(i, menus.grub)));
        let text = String::from_utf8_lossy(&after);
        assert!(text.contains("DEFAULT k1\n") && text.contains("set default=k1\n"));
        // Another image's ISO (nothing at the spans) is refused, and no half file is left.
        std::fs::write(&iso, vec![0u8; 6144]).unwrap();
        let e = publish(&iso, &menus, ("k0", None), &www, "dl140").unwrap_err();
        assert!(e.contains("not this image's ISO") && e.contains("cargo xtask image"), "{e}");
        assert!(!www.join(".bootmark-dl140.iso.new").exists());
        assert_eq!(std::fs::read(&out).unwrap(), after, "the published ISO stays as it was");
        crate::fsutil::remove_tree(&dir).unwrap();
    }
}
