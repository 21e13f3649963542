//! A kernel tarball as Debian's package installed it: trusted by what
//! Debian signs instead of a hash recorded in `kernel-configs/`, which
//! every update of the archive would outdate (bookworm's security updates
//! replace `linux-source-6.1` every few weeks). apt checked the package
//! against the archive's signed Release file when it installed it; `dpkg
//! --verify` checks the file against the package's own checksums since.

use super::line::Line;
use crate::host::process::{cmd, output, shell};
use crate::host::project::Result;
use std::path::Path;

/// How `tarball` is known to be Debian's, unchanged: "Debian's
/// linux-source-6.1 6.1.176-1, unchanged since apt installed it (dpkg
/// --verify)". None when no package of the line's (`debian_package` in its
/// source.json) owns the file; an error when one does and the file was
/// changed, or the package is of another line.
pub fn verified(tarball: &Path, line: &Line) -> Result<Option<String>> {
    let Some(package) = &line.source.debian_package else { return Ok(None) };
    let sh = shell()?;
    let owner = output(cmd!(sh, "dpkg-query -S {tarball}")).ok().filter(|o| o.status.success());
    let owns = owner.is_some_and(|o| String::from_utf8_lossy(&o.stdout).split(':').next() == Some(package.as_str()));
    if !owns {
        return Ok(None);
    }
    let format = "-f=${Version}";
    let version = output(cmd!(sh, "dpkg-query -W {format} {package}"))?;
    let version = String::from_utf8_lossy(&version.stdout).trim().to_string();
    if !line.is_for(version.split('-').next().unwrap_or("")) {
        return Err(format!("{}: {package} {version} is not of kernel line {}", tarball.display(), line.name));
    }
    // dpkg --verify prints one line per file that differs from the package's checksums.
    let verify = output(cmd!(sh, "dpkg --verify {package}"))?;
    let shown = tarball.to_string_lossy();
    let changed = String::from_utf8_lossy(&verify.stdout).lines().find(|l| l.ends_with(&*shown)).map(str::to_string);
    if let Some(line) = changed {
        return Err(format!(
            "{}: changed since {package} {version} installed it (dpkg --verify: {line}): reinstall the package, or build it with --allow-unknown",
            tarball.display()
        ));
    }
    Ok(Some(format!("Debian's {package} {version}, unchanged since apt installed it (dpkg --verify)")))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Debian's installed linux-source-6.1 is 6.1's, whatever its revision;
    /// a tarball no package owns, or a line without a package, is not.
    #[test]
    fn the_installed_package_is_verified_and_nothing_else() {
        let six_one = Line::read(&crate::host::project::project_root().join("kernel-configs/6.1")).unwrap();
        let installed = Path::new("/usr/src/linux-source-6.1.tar.xz");
        assert!(installed.exists(), "{} is missing: cargo xtask test installs linux-source-6.1", installed.display());
        let how = verified(installed, &six_one).unwrap().expect("owned by linux-source-6.1");
        assert!(how.starts_with("Debian's linux-source-6.1 6.1.") && how.ends_with("(dpkg --verify)"), "{how}");
        let copy = std::env::temp_dir().join(format!("bootmark-not-debian-{}.tar.xz", std::process::id()));
        std::fs::write(&copy, b"not Debian's").unwrap();
        assert_eq!(verified(&copy, &six_one).unwrap(), None);
        let old = Line::read(&crate::host::project::project_root().join("kernel-configs/2.6.9")).unwrap();
        assert_eq!(verified(installed, &old).unwrap(), None, "2.6.9 names no Debian package");
        std::fs::remove_file(&copy).unwrap();
    }
}
