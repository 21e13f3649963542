//! A config against the kernel it is for: every option it names must exist
//! in that tree's Kconfig files (a misspelt or later option is silently
//! ignored by the kernel's config step), and every option it sets must
//! still be set after the config step (an option whose dependencies are
//! missing is silently dropped).
//!
//! Where no tree is at hand (2.6.9 and 2.6.16.1 in CI), a line's
//! `kconfig-evidence.txt` says where each option was seen in a `.config`
//! that the version's own kconfig wrote; a test reads it.

use crate::build::kernel::config::KernelConfig;
use crate::host::project::Result;
use std::collections::BTreeSet;
use std::path::Path;

/// Every `config NAME` / `menuconfig NAME` in the tree's Kconfig files.
pub fn tree_symbols(tree: &Path) -> Result<BTreeSet<String>> {
    let mut symbols = BTreeSet::new();
    let mut stack = vec![tree.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let entries = std::fs::read_dir(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        for entry in entries.flatten() {
            let path = entry.path();
            let name = entry.file_name().to_string_lossy().into_owned();
            if path.is_dir() {
                if !name.starts_with('.') {
                    stack.push(path);
                }
            } else if name.starts_with("Kconfig") {
                let text = std::fs::read_to_string(&path).unwrap_or_default();
                symbols.extend(defined_symbols(&text));
            }
        }
    }
    if symbols.is_empty() {
        return Err(format!("{}: no Kconfig files: not a kernel source tree", tree.display()));
    }
    Ok(symbols)
}

fn defined_symbols(kconfig: &str) -> impl Iterator<Item = String> + '_ {
    kconfig.lines().filter_map(|l| {
        let mut words = l.split_whitespace();
        match (words.next(), words.next()) {
            (Some("config" | "menuconfig"), Some(name)) => Some(name.to_string()),
            _ => None,
        }
    })
}

/// Every option the config names (set or "not set").
pub fn named_options(config: &KernelConfig) -> BTreeSet<String> {
    config.values().keys().chain(config.unset()).cloned().collect()
}

/// Options the config names that the tree does not define.
pub fn unknown_options(config: &KernelConfig, known: &BTreeSet<String>) -> Vec<String> {
    named_options(config).into_iter().filter(|o| !known.contains(o)).collect()
}

/// Options `wanted` sets or unsets that `got` (the config step's result)
/// does not have as asked, each as "NAME: wanted → got".
pub fn dropped(wanted: &KernelConfig, got: &KernelConfig) -> Vec<String> {
    let mut out = Vec::new();
    for (name, value) in wanted.values() {
        if got.get(name) != Some(value.as_str()) {
            out.push(format!("CONFIG_{name}: {value} → {}", got.get(name).unwrap_or("not set")));
        }
    }
    for name in wanted.unset() {
        if let Some(v) = got.get(name).filter(|v| *v != "n") {
            out.push(format!("CONFIG_{name}: not set → {v}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::build::arch::Arch;
    use crate::build::kernel_src::line::Line;
    use std::collections::BTreeMap;

    /// A line's `kconfig-evidence.txt`: `source ID TEXT` lines name where the
    /// evidence comes from; `NAME ID` says NAME was seen in that source;
    /// `NAME ?` says it was not seen there (checked against the tree's Kconfig
    /// files when the kernel is built).
    #[derive(Debug, Default)]
    pub struct Evidence {
        pub sources: BTreeMap<String, String>,
        pub seen: BTreeMap<String, String>,
        pub unverified: BTreeSet<String>,
    }

    impl Evidence {
        pub fn read(path: &Path) -> Result<Evidence> {
            let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
            let mut ev = Evidence::default();
            for (n, line) in text.lines().enumerate() {
                let line = line.trim();
                if line.is_empty() || line.starts_with('#') {
                    continue;
                }
                let bad = || format!("{}:{}: expected `source ID TEXT`, `NAME ID` or `NAME ?`", path.display(), n + 1);
                let (first, rest) = line.split_once(char::is_whitespace).ok_or_else(bad)?;
                let rest = rest.trim();
                if first == "source" {
                    let (id, what) = rest.split_once(char::is_whitespace).ok_or_else(bad)?;
                    ev.sources.insert(id.to_string(), what.trim().to_string());
                } else if rest == "?" {
                    ev.unverified.insert(first.to_string());
                } else if ev.sources.contains_key(rest) {
                    ev.seen.insert(first.to_string(), rest.to_string());
                } else {
                    return Err(format!(
                        "{}:{}: {first} is said to be seen in {rest}, which no `source` line names",
                        path.display(),
                        n + 1
                    ));
                }
            }
            Ok(ev)
        }

        /// Options the config names that the evidence does not account for.
        pub fn unaccounted(&self, config: &KernelConfig) -> Vec<String> {
            named_options(config)
                .into_iter()
                .filter(|o| !self.seen.contains_key(o) && !self.unverified.contains(o))
                .collect()
        }
    }

    #[test]
    fn kconfig_definitions_are_read_and_unknown_options_named() {
        let kconfig =
            "menu \"SCSI\"\nconfig SCSI\n\ttristate \"SCSI\"\nmenuconfig SCSI_LOWLEVEL\n  bool\n# config NOT_ME\n";
        let known: BTreeSet<String> = defined_symbols(kconfig).collect();
        assert_eq!(known.iter().map(String::as_str).collect::<Vec<_>>(), ["SCSI", "SCSI_LOWLEVEL"]);
        let c = KernelConfig::parse("CONFIG_SCSI=y\n# CONFIG_SCSI_SATA_AHCI is not set\n", Path::new("x"));
        assert_eq!(unknown_options(&c, &known), ["SCSI_SATA_AHCI"]);
    }

    #[test]
    fn an_option_the_config_step_drops_or_changes_is_named() {
        let wanted = KernelConfig::parse(
            "CONFIG_A=y\nCONFIG_B=y\nCONFIG_S=\"x\"\n# CONFIG_C is not set\n# CONFIG_D is not set\n",
            Path::new("w"),
        );
        let got = KernelConfig::parse("CONFIG_A=y\nCONFIG_S=\"x\"\nCONFIG_C=y\n", Path::new("g"));
        assert_eq!(dropped(&wanted, &got), ["CONFIG_B: y → not set", "CONFIG_C: not set → y"]);
        assert!(dropped(&got, &got).is_empty());
    }

    /// The old lines cannot be configured here: every option they name is
    /// accounted for by the version's own .config files, or declared unverified.
    #[test]
    fn every_option_of_the_old_lines_was_seen_in_that_version_or_is_declared_unverified() {
        for line in Line::all().unwrap().iter().filter(|l| l.version() < (3, 0, 0)) {
            let ev = Evidence::read(&line.dir.join("kconfig-evidence.txt")).unwrap();
            assert!(!ev.sources.is_empty(), "{}: no sources", line.name);
            for arch in Arch::X86.map(Arch::name) {
                let missing = ev.unaccounted(&line.config(arch).unwrap());
                assert!(missing.is_empty(), "{} {arch}: not in kconfig-evidence.txt: {missing:?}", line.name);
            }
        }
    }
}
