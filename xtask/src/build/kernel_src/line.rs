//! One kernel line of `kernel-configs/` (`2.6.9/`, `2.6.16.1/`, `6.1/`): the
//! source it is built from (`source.json`: tarball, SHA-256 and where that
//! hash comes from, the config step, the toolchain that builds it) and a
//! config per architecture (`x86_64.config`, `i686.config`).

use crate::build::kernel::config::KernelConfig;
use crate::host::project::{Result, project_root};
use serde::Deserialize;
use std::path::{Path, PathBuf};

/// `source.json`.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Source {
    /// The kernel version the configs are for (`2.6.16.1`, `6.1.176`).
    pub version: String,
    /// The tarball's file name, as published.
    pub tarball: String,
    /// Its SHA-256; null when it could not be recorded (the build then
    /// prints the hash and needs --allow-unknown).
    pub sha256: Option<String>,
    /// Where the hash comes from, or why there is none.
    pub sha256_from: String,
    /// The Debian package whose installed tarball this line takes without
    /// its hash recorded here, verified by dpkg against the package's own
    /// checksums (`debian_package.rs`): `linux-source-6.1`.
    #[serde(default)]
    pub debian_package: Option<String>,
    /// `olddefconfig` (3.7+) or `oldconfig` (answered with empty lines: each new option's default).
    pub config_step: String,
    /// The oldest and newest of each tool known to build this line.
    pub toolchain: Toolchain,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Toolchain {
    pub gcc: Range,
    pub make: Range,
    pub binutils: Range,
    /// Where to get a matching set (an archived Debian release, …).
    pub how: String,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Range {
    pub min: String,
    /// The newest known to work (older trees break with newer tools); null: no known limit.
    pub max: Option<String>,
}

/// A line: its folder, its source and which architectures it has configs for.
#[derive(Clone, Debug)]
pub struct Line {
    pub dir: PathBuf,
    pub name: String,
    pub source: Source,
}

impl Line {
    pub fn read(dir: &Path) -> Result<Line> {
        let file = dir.join("source.json");
        let text = std::fs::read_to_string(&file).map_err(|e| {
            format!("{}: {e} (a kernel-configs line holds source.json and one config per arch)", file.display())
        })?;
        let source: Source = serde_json::from_str(&text).map_err(|e| format!("{}: {e}", file.display()))?;
        let name = dir.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        Ok(Line { dir: dir.to_path_buf(), name, source })
    }

    /// Every line in kernel-configs/.
    pub fn all() -> Result<Vec<Line>> {
        let root = project_root().join("kernel-configs");
        let mut dirs: Vec<PathBuf> = std::fs::read_dir(&root)
            .map_err(|e| format!("{}: {e}", root.display()))?
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.is_dir())
            .collect();
        dirs.sort();
        dirs.iter().map(|d| Line::read(d)).collect()
    }

    pub fn config_path(&self, arch: &str) -> PathBuf {
        self.dir.join(format!("{arch}.config"))
    }

    pub fn config(&self, arch: &str) -> Result<KernelConfig> {
        KernelConfig::read(&self.config_path(arch))
    }

    /// What the line asks for, option by option: its fragments
    /// (`common.fragment` + `ARCH.fragment`) where the config was generated
    /// from them (6.1: `make allnoconfig KCONFIG_ALLCONFIG=…`), else the
    /// config itself (the old lines' configs are partial).
    pub fn wanted(&self, arch: &str) -> Result<KernelConfig> {
        let (common, own) = (self.dir.join("common.fragment"), self.dir.join(format!("{arch}.fragment")));
        if !common.exists() {
            return self.config(arch);
        }
        let mut text = String::new();
        for f in [&common, &own] {
            text += &std::fs::read_to_string(f).map_err(|e| format!("{}: {e}", f.display()))?;
            text.push('\n');
        }
        Ok(KernelConfig::parse(&text, &own))
    }

    /// Whether a tree of `version` is this line's: its exact version, or a
    /// later point release of it (Debian's linux-source-6.1 moves with
    /// bookworm's updates; 2.6.16.2 is not 2.6.16.1's line).
    pub fn is_for(&self, version: &str) -> bool {
        version == self.source.version
            || (self.version() >= (3, 0, 0) && version.starts_with(&format!("{}.", self.name)))
    }

    /// (major, minor, patch) of the version.
    pub fn version(&self) -> (u32, u32, u32) {
        version_triple(&self.source.version)
    }
}

/// The first three numbers of a version (`2.6.16.1` → (2, 6, 16), `6.1.176` → (6, 1, 176)).
pub fn version_triple(v: &str) -> (u32, u32, u32) {
    let mut n = v.split(|c: char| !c.is_ascii_digit()).filter(|p| !p.is_empty()).map(|p| p.parse().unwrap_or(0));
    (n.next().unwrap_or(0), n.next().unwrap_or(0), n.next().unwrap_or(0))
}

/// A version as comparable numbers (`3.4.6` → [3, 4, 6]).
pub fn version_numbers(v: &str) -> Vec<u32> {
    v.split(|c: char| !c.is_ascii_digit()).filter(|p| !p.is_empty()).map(|p| p.parse().unwrap_or(0)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::build::arch::Arch;

    /// What is wrong with one config of a line: not a config, cannot run the
    /// image, or missing what servers need built in.
    pub fn config_problems(line: &Line, arch: &str) -> Vec<String> {
        let config = match line.config(arch) {
            Ok(c) => c,
            Err(e) => return vec![e],
        };
        let mut problems = Vec::new();
        match config.check_can_run_image() {
            Ok(warnings) => problems.extend(warnings),
            Err(e) => problems.push(e),
        }
        problems.extend(config.missing_for_servers(line.version()));
        if config.arch().map(Arch::name) != Some(arch) {
            problems.push(format!("{}: does not say it is for {arch}", config.path.display()));
        }
        problems
    }

    #[test]
    fn a_line_takes_its_version_and_for_current_kernels_their_point_releases() {
        let lines = Line::all().unwrap();
        let line = |n: &str| lines.iter().find(|l| l.name == n).unwrap();
        assert!(line("6.1").is_for("6.1.176") && line("6.1").is_for("6.1.180"));
        assert!(!line("6.1").is_for("6.12.1") && !line("6.1").is_for("2.6.16.1"));
        assert!(line("2.6.16.1").is_for("2.6.16.1") && !line("2.6.16.1").is_for("2.6.16.2"));
        assert!(line("2.6.9").is_for("2.6.9") && !line("2.6.9").is_for("2.6.16.1"));
    }

    #[test]
    fn versions_compare_by_their_numbers() {
        assert_eq!(version_triple("2.6.16.1"), (2, 6, 16));
        assert_eq!(version_triple("6.1.176"), (6, 1, 176));
        assert!(version_numbers("3.4.6") < version_numbers("4.1"));
        assert!(version_numbers("3.81") < version_numbers("3.82"));
        assert!(version_numbers("12.2.0") > version_numbers("5.1"));
    }

    #[test]
    fn every_line_has_a_source_and_configs_a_server_image_can_boot() {
        let lines = Line::all().unwrap();
        let names: Vec<&str> = lines.iter().map(|l| l.name.as_str()).collect();
        assert_eq!(names, ["2.6.16.1", "2.6.9", "6.1"], "the three lines the design names");
        assert!(lines[2].config_path("aarch64").exists(), "6.1 has an arm64 config");
        for line in &lines {
            assert!(line.source.tarball.starts_with("linux-"), "{}: {}", line.name, line.source.tarball);
            assert!(["olddefconfig", "oldconfig"].contains(&line.source.config_step.as_str()));
            if let Some(h) = &line.source.sha256 {
                assert!(h.len() == 64 && h.bytes().all(|b| b.is_ascii_hexdigit()), "{}: {h}", line.name);
            }
            assert!(!line.source.sha256_from.is_empty());
            // Every line has x86 configs; a line has an arm64 one where the kernel had the architecture.
            let arm64 = line.config_path(Arch::Aarch64.name()).exists().then_some(Arch::Aarch64);
            for arch in Arch::X86.into_iter().chain(arm64).map(Arch::name) {
                let problems = config_problems(line, arch);
                assert!(problems.is_empty(), "{} {arch}:\n{}", line.name, problems.join("\n"));
                // A config generated from fragments still has every option they ask for.
                let dropped = super::super::kconfig::dropped(&line.wanted(arch).unwrap(), &line.config(arch).unwrap());
                assert!(dropped.is_empty(), "{} {arch}: {dropped:?}", line.name);
            }
        }
    }

    #[test]
    fn a_config_without_what_servers_need_is_refused_by_name() {
        let dir = std::env::temp_dir().join(format!("bootmark-line-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let src = project_root().join("kernel-configs/6.1");
        std::fs::copy(src.join("source.json"), dir.join("source.json")).unwrap();
        let text = std::fs::read_to_string(src.join("x86_64.config")).unwrap();
        let text = text.replace("CONFIG_SCSI_SYM53C8XX_2=y", "# CONFIG_SCSI_SYM53C8XX_2 is not set");
        let text = text.replace("CONFIG_SERIAL_8250_CONSOLE=y", "# CONFIG_SERIAL_8250_CONSOLE is not set");
        std::fs::write(dir.join("x86_64.config"), text).unwrap();
        let problems = config_problems(&Line::read(&dir).unwrap(), "x86_64").join("\n");
        assert!(problems.contains("sym53c8xx"), "{problems}");
        assert!(problems.contains("SERIAL_8250_CONSOLE"), "{problems}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
