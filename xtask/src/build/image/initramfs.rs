//! The initramfs of an entry: a common archive per architecture (the
//! static /init, device nodes old kernels need, the plans it does not have
//! compiled in, mkfs programs), the user's --include files in an archive of
//! their own (a program of theirs may be megabytes: the common archive has a
//! 1 MiB budget), and a per-kernel archive of modules with
//! /etc/bootmark/modules.json, concatenated (the kernel unpacks gzip'ed newc
//! archives one after another).

use super::sources::Kernel;
use super::{cpio, mkfs, modules};
use crate::host::fs;
use crate::host::fs::Context as _;
use crate::host::project::{Result, project_root};
use std::path::{Path, PathBuf};

/// The /init archive shared by every entry of one architecture.
pub fn common_archive(binary: &Path, mtime: u32, extra: &mkfs::Files) -> Result<Vec<u8>> {
    let mut a = cpio::Archive::new(mtime);
    for (path, data, mode) in extra {
        a.file(path, data.clone(), *mode);
    }
    a.file("init", fs::read(binary)?, 0o755);
    // Old kernels need these before /init runs (no devtmpfs, fds 0-2 open on /dev/console).
    a.char_dev("dev/console", 5, 1, 0o600);
    a.char_dev("dev/null", 1, 3, 0o666);
    for d in ["proc", "sys", "mnt", "results", "tmp"] {
        a.dir(d);
    }
    // The plans /init does not have compiled in (the demo's, the examples).
    let plans = project_root().join("image/plans");
    let in_init: Vec<String> = bootmark::plan::in_init().map(|n| format!("{n}.json")).collect();
    for e in fs::read_dir(&plans)?.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        if !in_init.contains(&name) {
            a.file(&format!("etc/bootmark/plans/{name}"), fs::read(e.path())?, 0o644);
        }
    }
    cpio::gzip_smallest(&a.to_bytes())
}

/// The --include files' archive, shared by every entry; empty without any.
pub fn included_archive(includes: &[super::include::Include], mtime: u32) -> Result<Vec<u8>> {
    if includes.is_empty() {
        return Ok(Vec::new());
    }
    let mut a = cpio::Archive::new(mtime);
    for (path, data, mode) in super::include::files(includes)? {
        a.file(&path, data, mode);
    }
    Ok(cpio::gzip(&a.to_bytes()))
}

/// The modules archive of one kernel: the closure of image/modules/*.list,
/// with /etc/bootmark/modules.json saying when /init loads each. Also
/// returns where each listed module was found, for the manifest.
/// A required module the kernel lacks stops the build unless `allow_missing`
/// names it.
pub fn modules_archive(
    k: &Kernel,
    mtime: u32,
    allow_missing: &[String],
) -> Result<(Vec<u8>, usize, modules::Whereabouts)> {
    use bootmark::contract::modules::{Module, ModuleSet};
    let mut a = cpio::Archive::new(mtime);
    let mut set = ModuleSet { release: k.release.clone(), modules: Vec::new() };
    let Some(tree) = &k.modules else {
        a.file("etc/bootmark/modules.json", serde_json::to_vec_pretty(&set).context("modules.json")?, 0o644);
        return Ok((cpio::gzip(&a.to_bytes()), 0, modules::Whereabouts::default()));
    };
    eprintln!("image: resolving modules of {}", k.release);
    let mut index = modules::Index::scan(tree)?;
    if let Some(c) = &k.config {
        index.add_builtin(c.built_in_modules());
    }
    let mut wanted = Vec::new();
    let mut list_of = std::collections::BTreeMap::new();
    let mut params = std::collections::BTreeMap::new();
    let lists = project_root().join("image/modules");
    let mut names: Vec<PathBuf> = fs::read_dir(&lists)?.flatten().map(|e| e.path()).collect();
    names.sort();
    for list in names {
        for (name, required, p) in modules::parse_list(&fs::read_to_string(&list)?) {
            if !p.is_empty() {
                params.insert(modules::normalize(&name), p);
            }
            let list_name = list.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
            list_of.insert(modules::normalize(&name), list_name);
            wanted.push((name, required));
        }
    }
    for name in index.unknown_required(&wanted) {
        eprintln!(
            "image: warning: module {name} is not in {} and, without modules.builtin or a kernel config, cannot be known to be built in: the image may miss a driver",
            tree.display()
        );
    }
    let missing = index.missing_required(&wanted);
    let allowed: Vec<String> = allow_missing.iter().map(|m| modules::normalize(m)).collect();
    let refused: Vec<(String, String)> = missing
        .iter()
        .filter(|m| !allowed.contains(m))
        .map(|m| (list_of.get(m).cloned().unwrap_or_default(), m.clone()))
        .collect();
    if !refused.is_empty() {
        return Err(modules::missing_error(&k.release, tree, &refused));
    }
    for m in &missing {
        eprintln!("image: {}: without {m} (--allow-missing): {}", k.release, modules::loss(&list_of[m], m));
    }
    let order = index.closure(&wanted);
    let mut whereabouts = index.whereabouts(&wanted);
    whereabouts.allowed_missing = missing;
    let needs: Vec<Vec<String>> = order.iter().map(|m| index.needs(m)).collect();
    for (m, needs_of_m) in order.iter().zip(&needs) {
        let rel =
            m.path.strip_prefix(tree).with_context(|| format!("{} is outside {}", m.path.display(), tree.display()))?;
        let inside = format!("lib/modules/{}/{}", k.release, rel.display());
        a.file(&inside, fs::read(&m.path)?, 0o644);
        let library = needs.iter().any(|n| n.contains(&m.name));
        let (when, aliases) = modules::when_to_load(m, whereabouts.found.contains(&m.name), library);
        set.modules.push(Module {
            name: m.name.clone(),
            path: inside,
            params: params.get(&m.name).cloned().unwrap_or_default(),
            needs: needs_of_m.clone(),
            when,
            aliases,
        });
    }
    a.file("etc/bootmark/modules.json", serde_json::to_vec_pretty(&set).context("modules.json")?, 0o644);
    Ok((cpio::gzip(&a.to_bytes()), order.len(), whereabouts))
}
