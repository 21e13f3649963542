//! manifest.json: every input and output of an image with its SHA-256, the
//! bootmark version, the plan and each entry's command line; and
//! `--verify`, which re-checks an image directory against it.

use crate::host::fs::sha256_file;
use crate::host::project::Result;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::Path;

/// The schema of manifest.json.
pub const SCHEMA: &str = "bootmark.image/1";

/// manifest.json: written once by `cargo xtask image`, read by `--verify`,
/// `cargo xtask qemu` (the default entry's architecture) and the tests.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Manifest {
    pub schema: String,
    pub bootmark_version: String,
    /// Every timestamp inside the image (SOURCE_DATE_EPOCH, or 0).
    pub source_date_epoch: u32,
    pub plan: String,
    /// The plan itself, as validated when the image was built (images built
    /// before it was recorded lack it).
    #[serde(default)]
    pub plan_definition: Option<bootmark::plan::Plan>,
    pub default_entry: usize,
    pub entries: Vec<Entry>,
    /// With --secure-boot: Debian's signed packages, each file's SHA-256 and
    /// each kernel's signers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secure_boot: Option<super::secure_boot::Facts>,
    /// Where bootmark.iso holds its menus (`bootmark lab` changes their
    /// default in a copy); images built before lack it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub iso_menus: Option<bootmark::bootmenu::IsoMenus>,
    /// Every file of the image directory (but this one) → its SHA-256.
    pub outputs: BTreeMap<String, String>,
}

/// One boot entry: a kernel, its initramfs and its command line.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Entry {
    /// k0, k1, …: the menu label and the directory under boot/.
    pub label: String,
    pub title: String,
    pub cmdline: String,
    /// The bytes `cmdline` may grow to and still reach the kernel whole:
    /// its boot header's limit less what the bootloaders add. `bootmark
    /// lab` checks a step's `bootmark.set=` against it. Images built
    /// before it was recorded lack it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cmdline_room: Option<usize>,
    /// Why the line has no `trace_event=` (a kernel before the option, or no room for it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub without_events: Option<String>,
    pub kernel_release: String,
    pub kernel_version: String,
    pub arch: String,
    /// Where the kernel came from (a file, a .deb, an RPM) with its SHA-256.
    pub origin: Value,
    /// Modules in the entry's initramfs.
    pub modules: usize,
    /// Which drivers of image/modules/*.list were found, built in or missing.
    pub listed_modules: super::modules::Whereabouts,
    /// The kernel config's file name and SHA-256, when one was found or given.
    pub kernel_config: Option<String>,
    pub kernel_config_sha256: Option<String>,
    pub initramfs: InitramfsSizes,
    pub bootmark_binary_sha256: String,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct InitramfsSizes {
    /// The archive every entry of one architecture shares (/init, mkfs programs).
    pub common_gzip_bytes: usize,
    /// The entry's own modules archive, appended to the common one.
    pub modules_gzip_bytes: usize,
    /// The user's files (`--include`), an archive of their own between the
    /// two, outside the common archive's 1 MiB budget; 0 without any.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub included_gzip_bytes: usize,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

impl Manifest {
    /// Read DIR/manifest.json.
    pub fn read(dir: &Path) -> Result<Manifest> {
        let text = std::fs::read_to_string(dir.join("manifest.json"))
            .map_err(|e| format!("{}: no manifest.json ({e}): is this a bootmark image directory?", dir.display()))?;
        serde_json::from_str(&text)
            .map_err(|e| format!("{}: manifest.json is not a {SCHEMA} manifest: {e}", dir.display()))
    }

    /// The entry booted by default.
    pub fn default_entry(&self) -> Option<&Entry> {
        self.entries.get(self.default_entry)
    }
}

/// Every regular file under `dir`, relative path → sha256 (sorted).
pub fn hash_tree(dir: &Path) -> Result<Vec<(String, String)>> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).map_err(|e| format!("{}: {e}", d.display()))?.flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if p.file_name().is_some_and(|n| n != "manifest.json") {
                out.push((p.strip_prefix(dir).unwrap().to_string_lossy().into_owned(), sha256_file(&p)?));
            }
        }
    }
    out.sort();
    Ok(out)
}

/// Every file under `dir` (but manifest.json) → its SHA-256.
pub fn outputs(dir: &Path) -> Result<BTreeMap<String, String>> {
    Ok(hash_tree(dir)?.into_iter().collect())
}

/// Re-hash every output listed in DIR/manifest.json; Err lists each mismatch.
pub fn verify(dir: &Path) -> Result<String> {
    let manifest = Manifest::read(dir)?;
    let outputs = &manifest.outputs;
    let mut problems = Vec::new();
    for (name, want) in outputs {
        match sha256_file(&dir.join(name)) {
            Ok(got) if got == *want => {}
            Ok(_) => problems.push(format!("{name}: content changed (SHA-256 differs)")),
            Err(e) => problems.push(format!("{name}: {e}")),
        }
    }
    let on_disk = hash_tree(dir)?;
    for (name, _) in &on_disk {
        if !outputs.contains_key(name) {
            problems.push(format!("{name}: not in the manifest"));
        }
    }
    if problems.is_empty() {
        Ok(format!("{} files match manifest.json", outputs.len()))
    } else {
        Err(format!("{} problems:\n  {}", problems.len(), problems.join("\n  ")))
    }
}
