//! A package from any Debian suite (`linux-image-amd64@trixie`), through apt
//! with a private state of its own under `target/cache/apt/<suite>/`: its
//! own sources list, package lists, cache and (empty) dpkg status, the
//! suite signed-by Debian's archive keyring. The system's apt configuration
//! is read (proxies) but never written: `/etc/apt` and `/var/lib/apt` stay
//! as they are, so a workstation on bookworm takes bullseye's 5.10 and
//! trixie's 6.12 without adding a source.
//!
//! apt does the work (signatures, hashes, the newest version across the
//! suite and its security and point-release updates): this module only
//! writes its configuration and reads its answers.

use crate::host::fs;
use crate::host::process::{Cmd, Shell, cmd, output, shell, shell_in};
use crate::host::project::Result;
use std::path::{Path, PathBuf};

/// Package lists younger than this are used as they are (a build that
/// needs the network only once a day; `apt-get update` when older).
const LISTS_FRESH_FOR: std::time::Duration = std::time::Duration::from_secs(24 * 3600);

/// Where a suite comes from.
#[derive(Clone, Debug)]
pub struct Archive {
    /// The main archive (`http://deb.debian.org/debian`).
    pub mirror: String,
    /// The security archive, when the suite has one (`SUITE-security`).
    pub security: Option<String>,
    /// The keyring its Release files are signed with.
    pub keyring: PathBuf,
}

impl Archive {
    /// Debian's archive, as Debian's own sources name it.
    pub fn debian() -> Archive {
        Archive {
            mirror: "http://deb.debian.org/debian".into(),
            security: Some("http://deb.debian.org/debian-security".into()),
            keyring: "/usr/share/keyrings/debian-archive-keyring.gpg".into(),
        }
    }
}

/// A package downloaded from a suite.
#[derive(Debug)]
pub struct Downloaded {
    pub deb: PathBuf,
    /// The exact package (a meta package such as linux-image-amd64 resolved).
    pub package: String,
    pub version: String,
}

impl Downloaded {
    /// The package's files unpacked into `dir` (`dpkg-deb -x`), once: while
    /// `marker`, a file the package holds (relative to `dir`), is there, the
    /// unpacked tree is taken as it is. Returns `dir`.
    pub fn unpacked_into(&self, dir: &Path, marker: &str) -> Result<PathBuf> {
        if !dir.join(marker).is_file() {
            let _ = std::fs::remove_dir_all(dir);
            fs::create_dir_all(dir)?;
            let (sh, deb) = (shell()?, &self.deb);
            crate::host::process::run(cmd!(sh, "dpkg-deb -x {deb} {dir}"))?;
            if !dir.join(marker).is_file() {
                return Err(format!("{} holds no {marker}: not the package bootmark knows", deb.display()));
            }
        }
        Ok(dir.to_path_buf())
    }
}

/// The suite arm64's boot and build packages come from (GRUB and its signed
/// chain, musl and the kernel headers for the cross builds): Debian's stable
/// release, as the e2e image's kernels.
pub const ARM64_SUITE: &str = "bookworm";

/// `PACKAGE@SUITE` split, or None for a plain name or path.
pub fn split(spec: &str) -> Option<(&str, &str)> {
    let (package, suite) = spec.rsplit_once('@')?;
    (!package.is_empty() && !suite.is_empty() && !spec.ends_with(".deb")).then_some((package, suite))
}

/// One suite's private apt state.
pub struct Suite {
    name: String,
    archive: Archive,
    dir: PathBuf,
    /// Debian's names of the architectures its lists hold, the native one first.
    architectures: &'static [&'static str],
}

/// An x86 state holds amd64 and i386 (linux-image-686 for i686 images);
/// an arm64 state, in a directory of its own, only arm64: x86 suites do
/// not download the arm64 lists they never use.
const X86: &[&str] = &["amd64", "i386"];
const ARM64: &[&str] = &["arm64"];

impl Suite {
    /// The x86 state for `name` under `cache/<name>` (written, not yet updated).
    pub fn new(name: &str, archive: Archive, cache: &Path) -> Result<Suite> {
        Suite::with_architectures(name, archive, cache.join(name), X86)
    }

    /// The arm64 state for `name`, in a directory of its own under
    /// `cache/<name>-arm64` (written, not yet updated).
    pub fn arm64(name: &str, archive: Archive, cache: &Path) -> Result<Suite> {
        Suite::with_architectures(name, archive, cache.join(format!("{name}-arm64")), ARM64)
    }

    fn with_architectures(
        name: &str,
        archive: Archive,
        dir: PathBuf,
        architectures: &'static [&'static str],
    ) -> Result<Suite> {
        if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '-') {
            return Err(format!("@{name}: a suite is a name such as bullseye, bookworm, trixie or bookworm-backports"));
        }
        if !archive.keyring.exists() {
            return Err(format!(
                "{}: no such keyring, needed to check {name}'s signature (apt-get install debian-archive-keyring)",
                archive.keyring.display()
            ));
        }
        let suite = Suite { name: name.to_string(), archive, dir, architectures };
        suite.write_config()?;
        Ok(suite)
    }

    /// sources.list, apt.conf and the empty directories apt expects.
    fn write_config(&self) -> Result<()> {
        for d in ["lists/partial", "cache/archives/partial", "sources.list.d", "preferences.d", "debs"] {
            fs::create_dir_all(self.dir.join(d))?;
        }
        let status = self.dir.join("status");
        if !status.exists() {
            fs::write(&status, "")?;
        }
        fs::write(self.dir.join("sources.list"), self.sources_list())?;
        let conf = [
            ("Dir::Etc::SourceList", self.dir.join("sources.list")),
            ("Dir::Etc::SourceParts", self.dir.join("sources.list.d")),
            ("Dir::Etc::Preferences", self.dir.join("preferences")),
            ("Dir::Etc::PreferencesParts", self.dir.join("preferences.d")),
            ("Dir::State::Lists", self.dir.join("lists")),
            ("Dir::State::status", status),
            ("Dir::Cache", self.dir.join("cache")),
        ]
        .iter()
        .map(|(k, v)| format!("{k} \"{}\";\n", v.display()))
        .collect::<String>()
            // i686 images take linux-image-686 (arch i386) from the same lists.
            + &format!(
                "APT::Architecture \"{}\";\nAPT::Architectures {{ {} }};\n",
                self.architectures[0],
                self.architectures.iter().map(|a| format!("\"{a}\";")).collect::<Vec<_>>().join(" ")
            )
            + "Acquire::Languages \"none\";\n\
               // The state is ours (under target/), which apt's _apt user may not write.\n\
               APT::Sandbox::User \"root\";\n";
        fs::write(self.dir.join("apt.conf"), conf)
    }

    /// The suite, its point-release updates and its security updates
    /// (backports and testing have neither).
    fn sources_list(&self) -> String {
        let (mirror, key, suite) = (&self.archive.mirror, self.archive.keyring.display(), &self.name);
        let mut lines = vec![format!("deb [signed-by={key}] {mirror} {suite} main")];
        let stable_release =
            !suite.contains('-') && !["sid", "unstable", "testing", "experimental"].contains(&suite.as_str());
        if stable_release {
            lines.push(format!("deb [signed-by={key}] {mirror} {suite}-updates main"));
            if let Some(security) = &self.archive.security {
                lines.push(format!("deb [signed-by={key}] {security} {suite}-security main"));
            }
        }
        lines.join("\n") + "\n"
    }

    /// apt-get or apt-cache with this suite's configuration, never asking questions.
    fn apt<'sh>(&self, sh: &'sh Shell, program: &str) -> Cmd<'sh> {
        let conf = self.dir.join("apt.conf");
        cmd!(sh, "{program} -c {conf}").env("DEBIAN_FRONTEND", "noninteractive")
    }

    /// `apt-get update` unless the lists are fresh. A suite the archive does
    /// not serve is an error naming it; a failed refresh of lists that exist
    /// is a warning (the build goes on offline with what it has).
    pub fn update(&self) -> Result<()> {
        let _apt = crate::host::apt::one_at_a_time();
        let lists = self.dir.join("lists");
        let stamp = self.dir.join("updated");
        let fresh = std::fs::metadata(&stamp)
            .and_then(|m| m.modified())
            .is_ok_and(|t| t.elapsed().is_ok_and(|age| age < LISTS_FRESH_FOR));
        if fresh {
            return Ok(());
        }
        eprintln!("image: apt-get update for {} (its own state in {})", self.name, self.dir.display());
        let sh = shell()?;
        let out = output(self.apt(&sh, "apt-get").args(["update", "-q"]))?;
        let said = String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
        // apt exits 0 even when a source has no Release file; its E: and W: lines tell.
        let main_release = format!(" {} Release", self.name);
        let (mut errors, mut partial) = (Vec::new(), Vec::new());
        for line in said.lines().filter(|l| l.starts_with("E:")) {
            let no_release = line.contains("does not have a Release file") || line.contains("404");
            if no_release && line.contains(&main_release) {
                return Err(format!(
                    "@{}: {} serves no suite '{}' (it serves e.g. bullseye, bookworm, trixie, bookworm-backports, sid)",
                    self.name, self.archive.mirror, self.name
                ));
            }
            // A mirror without the suite's -updates or -security: the suite alone is still the suite.
            if no_release { partial.push(line) } else { errors.push(line) }
        }
        for line in &partial {
            eprintln!("image: warning: {line}");
        }
        // apt exits 100 for a missing -updates too: only other errors fail.
        let failed = !errors.is_empty() || (!out.status.success() && partial.is_empty());
        let has_lists = std::fs::read_dir(&lists)
            .is_ok_and(|d| d.flatten().any(|e| e.file_name().to_string_lossy().contains("_Packages")));
        if failed {
            let why = if errors.is_empty() { crate::host::process::stderr_tail(&out) } else { errors.join("\n") };
            if !has_lists {
                return Err(format!("apt-get update for @{} failed:\n{why}", self.name));
            }
            eprintln!(
                "image: warning: apt-get update for @{} failed; going on with its lists from before:\n{why}",
                self.name
            );
            return Ok(());
        }
        if !has_lists {
            return Err(format!("apt-get update for @{} left no package lists in {}", self.name, lists.display()));
        }
        fs::write(&stamp, "")
    }

    /// `package` as the suite knows it, with its versions newest first:
    /// itself, or `package:i386` (linux-image-686 is an i386 package, found
    /// as such on an amd64 workstation); None if neither.
    fn known(&self, package: &str) -> Result<Option<(String, Vec<String>)>> {
        let versions = self.versions(package)?;
        if !versions.is_empty() {
            return Ok(Some((package.to_string(), versions)));
        }
        if package.contains(':') || !self.architectures.contains(&"i386") {
            return Ok(None);
        }
        let i386 = format!("{package}:i386");
        let versions = self.versions(&i386)?;
        Ok((!versions.is_empty()).then_some((i386, versions)))
    }

    /// Every version of `package` the suite's sources offer, newest first (apt's order).
    fn versions(&self, package: &str) -> Result<Vec<String>> {
        let sh = shell()?;
        let out = output(self.apt(&sh, "apt-cache").args(["madison", package]))?;
        let mut versions: Vec<String> = Vec::new();
        for v in String::from_utf8_lossy(&out.stdout).lines().filter_map(|l| l.split('|').nth(1)) {
            if !versions.iter().any(|known| known == v.trim()) {
                versions.push(v.trim().to_string());
            }
        }
        Ok(versions)
    }

    /// The exact package and version behind `package` at `version`: itself,
    /// or for a meta package (linux-image-amd64) the linux-image it depends on.
    fn resolve_at(&self, package: &str, version: &str) -> Result<(String, String)> {
        let (mut name, mut version) = (package.to_string(), version.to_string());
        for _ in 0..3 {
            match self.image_dependency(&format!("{name}={version}"))? {
                Some(dep) if dep != name => {
                    version = self.versions(&dep)?.into_iter().next().ok_or_else(|| self.missing(&dep))?;
                    name = dep;
                }
                _ => return Ok((name, version)),
            }
        }
        Err(format!("@{}: {package} leads through more than three meta packages", self.name))
    }

    /// A linux-image package `package` (NAME or NAME=VERSION) depends on.
    fn image_dependency(&self, package: &str) -> Result<Option<String>> {
        let sh = shell()?;
        let out = output(self.apt(&sh, "apt-cache").args(["depends", "--no-recommends", "--no-suggests", package]))?;
        let deps = String::from_utf8_lossy(&out.stdout);
        let name = package.split('=').next().unwrap_or(package);
        let arch = name.split_once(':').map(|(_, a)| format!(":{a}")).unwrap_or_default();
        Ok(deps.lines().filter_map(|l| l.trim().strip_prefix("Depends: ")).find(|d| d.starts_with("linux-image-")).map(
            |d| {
                let d = d.trim_matches(|c| c == '<' || c == '>');
                if d.contains(':') { d.to_string() } else { format!("{d}{arch}") }
            },
        ))
    }

    /// The error for a package the suite lacks, naming the kernels it has.
    fn missing(&self, package: &str) -> String {
        let prefix = package.split(['0', '1', '2', '3', '4', '5', '6', '7', '8', '9']).next().unwrap_or(package);
        let prefix = if prefix.starts_with("linux-image-") { "linux-image-" } else { prefix };
        let names = shell()
            .and_then(|sh| output(self.apt(&sh, "apt-cache").args(["pkgnames", prefix])))
            .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
            .unwrap_or_default();
        let mut names: Vec<&str> =
            names.lines().filter(|n| !n.contains("-dbg") && !n.contains("-unsigned") && !n.ends_with("-dev")).collect();
        names.sort();
        let shown = if names.is_empty() {
            "none".to_string()
        } else if names.len() > 24 {
            format!("{} … ({} in all)", names[..24].join(", "), names.len())
        } else {
            names.join(", ")
        };
        format!("@{}: no package '{package}' in {}; its {prefix}* packages: {shown}", self.name, self.name)
    }

    /// Download `package` (resolved first), or take it from this suite's
    /// cache. Its newest version first; when a source's file cannot be had
    /// (a mirror without the security pool's copy), the next version down,
    /// said on the terminal and in what is returned.
    pub fn download(&self, package: &str) -> Result<Downloaded> {
        self.update()?;
        let (name, versions) = self.known(package)?.ok_or_else(|| self.missing(package))?;
        let mut failures = Vec::new();
        for version in versions {
            let (exact, exact_version) = self.resolve_at(&name, &version)?;
            match self.fetch(&exact, &exact_version) {
                Ok(deb) => {
                    if !failures.is_empty() {
                        eprintln!(
                            "image: warning: took {exact} {exact_version}, not the newest {package} in {}:\n{}",
                            self.name,
                            failures.join("\n")
                        );
                    }
                    return Ok(Downloaded { deb, package: exact, version: exact_version });
                }
                Err(e) => failures.push(e),
            }
        }
        Err(format!("@{}: no version of {package} could be downloaded:\n{}", self.name, failures.join("\n")))
    }

    /// `package` at `version` from the cache, or downloaded into it.
    fn fetch(&self, package: &str, version: &str) -> Result<PathBuf> {
        let _apt = crate::host::apt::one_at_a_time();
        let debs = self.dir.join("debs");
        let file_prefix = format!("{}_{}_", package.split(':').next().unwrap_or(package), version.replace(':', "%3a"));
        let find = || {
            std::fs::read_dir(&debs).ok().and_then(|d| {
                d.flatten()
                    .map(|e| e.path())
                    .find(|p| p.file_name().is_some_and(|n| n.to_string_lossy().starts_with(&file_prefix)))
            })
        };
        if let Some(deb) = find() {
            eprintln!("image: using cached {}", deb.display());
            return Ok(deb);
        }
        eprintln!("image: downloading {package} {version} from {} …", self.name);
        let sh = shell_in(&debs)?;
        crate::host::process::run(
            self.apt(&sh, "apt-get").args(["download", "-q"]).arg(format!("{package}={version}")),
        )?;
        let deb =
            find().ok_or_else(|| format!("apt-get download {package}={version} left no .deb in {}", debs.display()))?;
        eprintln!("image: downloaded {} ({})", deb.display(), fs::human_size(&deb));
        Ok(deb)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::host::process::{cmd, run, shell, shell_in};

    #[test]
    fn package_at_suite_is_split_and_a_path_is_not() {
        assert_eq!(split("linux-image-amd64@trixie"), Some(("linux-image-amd64", "trixie")));
        assert_eq!(split("linux-image-686:i386@bullseye"), Some(("linux-image-686:i386", "bullseye")));
        assert_eq!(split("linux-image-amd64"), None);
        assert_eq!(split("/tmp/a@b/linux.deb"), None);
        assert_eq!(split("x@"), None);
    }

    /// A kernel package (or a meta package depending on `depends`) as a .deb.
    fn deb(dir: &Path, name: &str, version: &str, depends: Option<&str>) {
        deb_for(dir, "amd64", name, version, depends)
    }

    fn deb_for(dir: &Path, arch: &str, name: &str, version: &str, depends: Option<&str>) {
        let root = dir.join(format!("build-{name}"));
        std::fs::create_dir_all(root.join("DEBIAN")).unwrap();
        let control = format!(
            "Package: {name}\nVersion: {version}\nArchitecture: {arch}\nMaintainer: test <t@example.org>\n{}Description: test\n",
            depends.map(|d| format!("Depends: {d}\n")).unwrap_or_default()
        );
        std::fs::write(root.join("DEBIAN/control"), control).unwrap();
        if depends.is_none() {
            std::fs::create_dir_all(root.join("boot")).unwrap();
            std::fs::write(root.join(format!("boot/vmlinuz-{name}")), b"kernel").unwrap();
        }
        let pool = dir.join("repo/pool/main");
        std::fs::create_dir_all(&pool).unwrap();
        let (sh, deb) = (shell().unwrap(), pool.join(format!("{name}_{version}_{arch}.deb")));
        run(cmd!(sh, "dpkg-deb --build -Zgzip {root} {deb}")).unwrap();
    }

    /// A file-based archive serving `suite`, its InRelease signed with a
    /// throwaway key; returns the keyring that checks it.
    fn signed_archive(dir: &Path, suite: &str) -> PathBuf {
        let repo = dir.join("repo");
        deb(dir, "linux-image-9.9.9-1-amd64", "9.9.9-1", None);
        deb(dir, "linux-image-9.8.0-3-amd64", "9.8.0-3", None);
        deb(dir, "linux-image-amd64", "9.9.9+1", Some("linux-image-9.9.9-1-amd64 (= 9.9.9-1)"));
        deb(dir, "linux-image-amd64", "9.8.0+3", Some("linux-image-9.8.0-3-amd64 (= 9.8.0-3)"));
        deb_for(dir, "arm64", "linux-image-9.9.9-1-arm64", "9.9.9-1", None);
        deb_for(dir, "arm64", "linux-image-arm64", "9.9.9+1", Some("linux-image-9.9.9-1-arm64 (= 9.9.9-1)"));
        let in_repo = shell_in(&repo).unwrap();
        let mut sums = String::new();
        for arch in ["amd64", "arm64"] {
            let packages = run(cmd!(in_repo, "dpkg-scanpackages -m -a {arch} pool")).unwrap();
            let index = repo.join(format!("dists/{suite}/main/binary-{arch}"));
            std::fs::create_dir_all(&index).unwrap();
            std::fs::write(index.join("Packages"), &packages).unwrap();
            let sha = crate::host::fs::sha256_file(&index.join("Packages")).unwrap();
            sums += &format!(" {sha} {} main/binary-{arch}/Packages\n", packages.len());
        }
        let release = format!(
            "Origin: test\nSuite: {suite}\nCodename: {suite}\nDate: Wed, 02 Dec 2026 00:00:00 UTC\n\
             Architectures: amd64 arm64\nComponents: main\nSHA256:\n{sums}"
        );
        let dists = repo.join(format!("dists/{suite}"));
        std::fs::write(dists.join("Release"), release).unwrap();
        let gnupg = dir.join("gnupg");
        std::fs::create_dir_all(&gnupg).unwrap();
        let sh = shell().unwrap();
        let gpg = || cmd!(sh, "gpg --homedir {gnupg} --batch --quiet --pinentry-mode loopback --passphrase ''");
        run(gpg().args(["--quick-gen-key", "bootmark test archive <t@example.org>", "ed25519", "sign", "never"]))
            .unwrap();
        let (in_release, release) = (dists.join("InRelease"), dists.join("Release"));
        run(gpg().args(["--clearsign", "-o"]).arg(&in_release).arg(&release)).unwrap();
        let keyring = dir.join("keyring.gpg");
        run(gpg().args(["--export", "-o"]).arg(&keyring)).unwrap();
        keyring
    }

    #[test]
    fn a_suite_of_a_signed_file_archive_resolves_meta_packages_and_names_what_it_lacks() {
        let dir = std::env::temp_dir().join(format!("bootmark-apt-suite-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let keyring = signed_archive(&dir, "testsuite");
        let archive = Archive {
            mirror: format!("file:{}", dir.join("repo").display()),
            security: None,
            keyring: keyring.clone(),
        };
        let cache = dir.join("cache/apt");
        let suite = Suite::new("testsuite", archive.clone(), &cache).unwrap();
        // The meta package resolves to the kernel it depends on, downloaded and checked by apt.
        let got = suite.download("linux-image-amd64").unwrap();
        assert_eq!((got.package.as_str(), got.version.as_str()), ("linux-image-9.9.9-1-amd64", "9.9.9-1"));
        assert!(got.deb.starts_with(cache.join("testsuite/debs")), "{}", got.deb.display());
        let original = dir.join("repo/pool/main/linux-image-9.9.9-1-amd64_9.9.9-1_amd64.deb");
        assert_eq!(std::fs::read(&got.deb).unwrap(), std::fs::read(original).unwrap());
        // The state is the suite's own: its lists and sources are under the cache.
        assert!(std::fs::read_to_string(cache.join("testsuite/sources.list")).unwrap().contains("testsuite main"));
        assert!(
            std::fs::read_dir(cache.join("testsuite/lists"))
                .unwrap()
                .flatten()
                .any(|e| e.file_name().to_string_lossy().contains("_Packages"))
        );
        // The newest kernel's file gone from the mirror (a proxy without the
        // security pool's copy): the next version down, not a failed build.
        std::fs::remove_file(&got.deb).unwrap();
        std::fs::remove_file(dir.join("repo/pool/main/linux-image-9.9.9-1-amd64_9.9.9-1_amd64.deb")).unwrap();
        let older = suite.download("linux-image-amd64").unwrap();
        assert_eq!((older.package.as_str(), older.version.as_str()), ("linux-image-9.8.0-3-amd64", "9.8.0-3"));
        // A package the suite lacks: the error names the kernels it has.
        let e = suite.download("linux-image-7.0.0-1-amd64").unwrap_err();
        assert!(e.contains("no package 'linux-image-7.0.0-1-amd64'"), "{e}");
        assert!(e.contains("linux-image-9.8.0-3-amd64, linux-image-9.9.9-1-amd64, linux-image-amd64"), "{e}");
        // arm64's packages come only through an arm64 state of its own, whose
        // lists hold nothing else; the x86 state does not see them.
        let e = suite.download("linux-image-arm64").unwrap_err();
        assert!(e.contains("no package 'linux-image-arm64'"), "{e}");
        let arm64 = Suite::arm64("testsuite", archive.clone(), &cache).unwrap().download("linux-image-arm64").unwrap();
        assert_eq!((arm64.package.as_str(), arm64.version.as_str()), ("linux-image-9.9.9-1-arm64", "9.9.9-1"));
        assert!(arm64.deb.starts_with(cache.join("testsuite-arm64/debs")), "{}", arm64.deb.display());
        let lists: Vec<String> = std::fs::read_dir(cache.join("testsuite-arm64/lists"))
            .unwrap()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n.contains("_Packages"))
            .collect();
        assert!(!lists.is_empty() && lists.iter().all(|n| n.contains("binary-arm64")), "{lists:?}");
        // A suite the archive does not serve.
        let e = Suite::new("nosuch", archive.clone(), &cache).unwrap().download("linux-image-amd64").unwrap_err();
        assert!(e.contains("serves no suite 'nosuch'"), "{e}");
        // An archive signed by another key is refused by apt: nothing downloaded.
        let other = Archive { keyring: dir.join("other.gpg"), ..archive.clone() };
        std::fs::write(&other.keyring, b"").unwrap();
        let e = Suite::new("testsuite", other, &dir.join("cache/other")).unwrap().download("linux-image-amd64");
        assert!(e.is_err(), "an unsigned-for-us archive was used");
        assert!(!dir.join("cache/other/testsuite/debs").read_dir().unwrap().any(|_| true));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
