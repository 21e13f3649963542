//! A kernel as SUSE, Red Hat and Fedora ship it: an RPM. The test makes
//! one with Debian's `rpmbuild` from Debian's kernel, the way a 2005
//! distribution did as closely as rpm 4.18 allows (gzip payload, MD5 file
//! digests) but with the modules `.ko.xz` as current distributions ship
//! them, plus `/boot/config-R`; takes it through `cargo xtask image
//! --kernel-rpm` into an image, boots it in QEMU and checks the records.

use crate::boot::disks::scratch_disk;
use crate::build::image;
use crate::check::boots::support::{boot_and_check, test_boot, test_image};
use crate::host::fs;
use crate::host::fs::Context as _;
use crate::host::process::{Cmd, cmd, shell};
use crate::host::project::{Result, project_root};
use std::path::Path;

pub fn test(deb_image_out: &Path, package: &str, base: &Path) -> Result<()> {
    let started = std::time::Instant::now();
    let sh = shell()?;
    let dir = base.join("rpm");
    let _ = std::fs::remove_dir_all(&dir);
    let root = dir.join("buildroot");
    fs::create_dir_all(&root)?;
    // Debian's kernel, unpacked: vmlinuz, config, and the modules the image needs.
    let deb = image::deb::fetch_deb(package, &project_root().join("target/cache/debs"))?;
    let tree = dir.join("deb");
    let k = image::deb::unpack_deb(&deb, &tree)?;
    let release = &k.release;
    for f in [format!("vmlinuz-{release}"), format!("config-{release}")] {
        copy(&tree.join("boot").join(&f), &root.join("boot").join(&f))?;
    }
    let set = crate::check::boots::support::module_set(deb_image_out)?;
    let mut files = vec![format!("/boot/vmlinuz-{release}"), format!("/boot/config-{release}")];
    for m in &set.modules {
        // lib/modules/R/kernel/… .ko → the same path, xz-compressed, in the package.
        let inside = m.path.trim_start_matches(&format!("lib/modules/{release}/"));
        let dest = root.join(format!("lib/modules/{release}/{inside}.xz"));
        copy(&k.modules.join(inside), &dest.with_extension(""))?;
        let plain = dest.with_extension("");
        run(cmd!(sh, "xz -f {plain}"))?;
        files.push(format!("/lib/modules/{release}/{inside}.xz"));
    }
    let spec = dir.join("kernel.spec");
    std::fs::write(
        &spec,
        format!(
            "Name: kernel-default\nVersion: {}\nRelease: 1\nSummary: Debian's kernel repackaged for a test\nLicense: GPL\n\
             AutoReqProv: no\n%description\nA kernel RPM for bootmark's tests.\n%install\ncp -a {}/. %{{buildroot}}/\n\
             %files\n{}\n",
            release.split('-').next().unwrap_or("6.1"),
            root.display(),
            files.join("\n")
        ),
    )
    .with_context(|| format!("cannot write {}", spec.display()))?;
    let topdir = dir.join("rpmbuild");
    let topdir_define = format!("_topdir {}", topdir.display());
    run(cmd!(sh, "rpmbuild -bb --target x86_64 --define {topdir_define}")
        // As 2005 packages were: gzip payload, MD5 file digests; and nothing post-processed.
        .args(["--define", "_binary_payload w9.gzdio", "--define", "_binary_filedigest_algorithm 1"])
        .args(["--define", "__os_install_post %{nil}", "--define", "debug_package %{nil}"])
        .arg(&spec))?;
    let rpm = find_rpm(&topdir.join("RPMS"))?;
    let out = image::build(&image::Args {
        kernel_rpms: vec![rpm.clone()],
        ..test_image(Vec::new(), dir.join("image"), None)
    })?;
    let disk = dir.join("scratch.img");
    scratch_disk(&disk, "ext3", 512)?;
    let seconds = boot_and_check(&test_boot(out, disk, dir.join("serial.log")), &rpm.display().to_string())?;
    println!(
        "e2e: kernel RPM: {} (gzip payload, MD5 digests, {} .ko.xz modules) → --kernel-rpm → booted, 6 records on serial and stick ({seconds:.1} s boot, {:.0} s in all)",
        rpm.file_name().unwrap().to_string_lossy(),
        files.len() - 2,
        started.elapsed().as_secs_f64()
    );
    Ok(())
}

fn copy(from: &Path, to: &Path) -> Result<()> {
    fs::create_dir_all(to.parent().unwrap())?;
    std::fs::copy(from, to).map(|_| ()).map_err(|e| format!("{}: {e}", from.display()))
}

fn run(c: Cmd<'_>) -> Result<()> {
    crate::host::process::run(c).map(|_| ())
}

/// rpmbuild puts the package in RPMS/<arch>/ (x86_64 here: `--target x86_64`).
fn find_rpm(rpms: &Path) -> Result<std::path::PathBuf> {
    let dir = rpms.join("x86_64");
    std::fs::read_dir(&dir)
        .map_err(|e| format!("{}: {e}", dir.display()))?
        .flatten()
        .map(|e| e.path())
        .find(|p| p.extension().is_some_and(|x| x == "rpm"))
        .ok_or_else(|| format!("rpmbuild left no .rpm in {}", dir.display()))
}
