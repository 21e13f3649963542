//! Sweeps: a plan's `variants` are named sets of kernel settings applied
//! before the workloads run — vm sysctls and the target disk's queue — so
//! that one boot measures the same workloads under, say, dirty_ratio 40 and
//! 10, or with and without writeback throttling.
//!
//! Every setting is read back after it is written. A setting this kernel
//! does not have (no `dirty_bytes` before 2.6.29, no `wbt_lat_usec` before
//! 4.10, a scheduler it was not built with) or refuses is recorded as not
//! applied, with the reason: a record is never silently measured under
//! another setting than the one it names. Each variant starts from what was
//! there before the first (restored before it is applied), and that is
//! restored after the last.

use crate::fsutil::read_trimmed;
pub use crate::schema::variant::Variant;
use crate::schema::variant::{Applied, QUEUE_SETTINGS, VM_SETTINGS};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Where the settings live: `/proc/sys/vm` and the target disk's sysfs
/// queue directory (none when the target has no block device).
#[derive(Clone, Debug)]
pub struct Knobs {
    pub vm_dir: PathBuf,
    pub queue_dir: Option<PathBuf>,
    /// The running kernel's command line (/proc/cmdline).
    pub cmdline_file: PathBuf,
}

impl Knobs {
    /// The real ones for a target on `disk` (kernel name, e.g. sda).
    pub fn for_disk(disk: Option<&str>) -> Knobs {
        Knobs {
            vm_dir: PathBuf::from("/proc/sys/vm"),
            queue_dir: disk
                .map(|d| Path::new("/sys/block").join(crate::image_side::sysfs_block::sysfs_name(d)).join("queue")),
            cmdline_file: PathBuf::from("/proc/cmdline"),
        }
    }

    fn file(&self, key: &str) -> Result<PathBuf, String> {
        match key.split_once('.') {
            Some(("vm", name)) => Ok(self.vm_dir.join(name)),
            Some(("queue", name)) => match &self.queue_dir {
                Some(q) => Ok(q.join(name)),
                None => Err("the target has no block device (tmpfs, nfs…): no queue to set".into()),
            },
            _ => Err(format!("unknown setting {key}")),
        }
    }

    /// The value of `key` as the kernel shows it (the scheduler in use, not the list).
    pub fn read(&self, key: &str) -> Option<String> {
        let text = read_trimmed(self.file(key).ok()?)?;
        Some(if key == "queue.scheduler" { crate::image_side::tunables::active_scheduler(&text) } else { text })
    }

    /// Write one setting and read it back; Err says why it is not in effect.
    fn set(&self, key: &str, value: &str) -> Result<Option<String>, String> {
        let file = self.file(key)?;
        if !file.exists() {
            return Err(format!("this kernel has no {}", file.display()));
        }
        if key == "queue.scheduler"
            && let Some(list) = read_trimmed(&file)
            && !list.replace(['[', ']'], "").split_whitespace().any(|s| s == value)
        {
            return Err(format!("scheduler {value} is not available here (this kernel offers: {list})"));
        }
        std::fs::write(&file, value).map_err(|e| format!("writing {value} to {} failed: {e}", file.display()))?;
        let back = self.read(key);
        match &back {
            Some(b) if b == value => Ok(back),
            Some(b) => Err(format!("{} reads {b} after writing {value}", file.display())),
            None => Ok(None),
        }
    }
}

/// The values of every key any variant touches, as found: restored after the sweep.
#[derive(Clone, Debug, Default)]
pub struct Original(Vec<(String, String)>);

fn keys(variant: &Variant) -> Vec<(String, String)> {
    let vm = variant.vm.iter().map(|(k, v)| (format!("vm.{k}"), v.to_string()));
    vm.chain(variant.queue.iter().map(|(k, v)| (format!("queue.{k}"), v.clone()))).collect()
}

/// The kernel's dirty limits come in pairs: writing one of a pair zeroes the
/// other (page-writeback.c's dirty_*_handler), so changing one changes both.
const PAIRS: [(&str, &str); 2] =
    [("vm.dirty_ratio", "vm.dirty_bytes"), ("vm.dirty_background_ratio", "vm.dirty_background_bytes")];

/// A key, and its pair's other half if it has one.
fn with_partner(key: String) -> Vec<String> {
    let partner = PAIRS.iter().find_map(|(a, b)| match key.as_str() {
        k if k == *a => Some(b.to_string()),
        k if k == *b => Some(a.to_string()),
        _ => None,
    });
    std::iter::once(key).chain(partner).collect()
}

/// Read what is there now, for every key the variants will change, and the
/// other half of a dirty-limit pair they change: a variant that sets
/// dirty_bytes zeroes dirty_ratio, which only writing dirty_ratio back undoes
/// (the kernel refuses a dirty_bytes of 0).
pub fn remember(knobs: &Knobs, variants: &[Variant]) -> Original {
    let mut seen: Vec<(String, String)> = Vec::new();
    for key in variants.iter().flat_map(keys).flat_map(|(key, _)| with_partner(key)) {
        if !seen.iter().any(|(k, _)| *k == key)
            && let Some(v) = knobs.read(&key)
        {
            seen.push((key, v));
        }
    }
    Original(seen)
}

/// Apply one variant; the result goes into every record it covers.
pub fn apply(knobs: &Knobs, variant: &Variant) -> Applied {
    let mut applied = Applied { name: variant.name.clone(), note: variant.note.clone(), ..Applied::default() };
    // Kernel parameters cannot be set now, only found: this boot has them or not.
    let running = read_trimmed(&knobs.cmdline_file).unwrap_or_default();
    for word in variant.cmdline.split_whitespace() {
        let key = format!("cmdline.{word}");
        let present = running.split_whitespace().any(|w| w == word);
        applied.read_back.insert(key.clone(), present.then(|| word.to_string()));
        if !present {
            let why = "this boot's kernel command line lacks it: the variant needs its own boot entry (cargo xtask image makes one)";
            applied.not_applied.insert(key.clone(), why.into());
        }
        applied.asked.insert(key, word.to_string());
    }
    for (key, value) in keys(variant) {
        match knobs.set(&key, &value) {
            Ok(back) => {
                applied.read_back.insert(key.clone(), back);
            }
            Err(why) => {
                applied.read_back.insert(key.clone(), knobs.read(&key));
                applied.not_applied.insert(key.clone(), why);
            }
        }
        applied.asked.insert(key, value);
    }
    applied
}

/// Put back what `remember` found. The scheduler goes first: switching it
/// resets the queue's depth and the old scheduler's tunables to the new
/// one's defaults. The kernel pairs dirty_ratio with dirty_bytes (writing
/// one zeroes the other, and a *_bytes of 0 cannot be written): ratios go
/// next, then only the non-zero byte limits. Returns the keys that could not
/// be restored, with why; [`not_as_found`] then checks what the kernel shows.
pub fn restore(knobs: &Knobs, original: &Original) -> Vec<String> {
    let mut order: Vec<&(String, String)> = original.0.iter().collect();
    order.sort_by_key(|(k, _)| (k != "queue.scheduler", k.ends_with("_bytes")));
    let mut failed = Vec::new();
    for (key, value) in order {
        if key.ends_with("_bytes") && value == "0" {
            continue;
        }
        if let Err(e) = knobs.set(key, value) {
            failed.push(format!("{key}: {e}"));
        }
    }
    failed
}

/// Every setting `remember` found, read again now: those that differ, as
/// "vm.dirty_bytes reads 4194304 where the run found 0". After `restore`
/// this must be empty, or the next variant would run on the last one's
/// settings (the kernel's rules between settings — a ratio and its byte
/// limit, a minimum, a scheduler's own tunables — can defeat a restore).
pub fn not_as_found(knobs: &Knobs, original: &Original) -> Vec<String> {
    original
        .0
        .iter()
        .filter_map(|(key, found)| {
            let now = knobs.read(key);
            (now.as_deref() != Some(found.as_str()))
                .then(|| format!("{key} reads {} where the run found {found}", now.as_deref().unwrap_or("nothing")))
        })
        .collect()
}

/// The `not_applied` key of a variant that was not run because the
/// settings as found could not be put back before it.
pub const NOT_RESTORED: &str = "restore";

/// The variant not applied: the settings as found are not back (`wrong`,
/// from [`not_as_found`]), so its runs would measure another variant's.
pub fn refused(variant: &Variant, wrong: &[String]) -> Applied {
    let mut applied = Applied { name: variant.name.clone(), note: variant.note.clone(), ..Applied::default() };
    for (key, value) in keys(variant) {
        applied.asked.insert(key, value);
    }
    let why = format!(
        "the settings as found could not be restored before this variant ({}): it is not run, as it would measure the last variant's settings",
        wrong.join("; ")
    );
    applied.not_applied.insert(NOT_RESTORED.into(), why);
    applied
}

/// The settings as this system has them now, as a variant named `name`
/// (`bootmark capture`: a distribution's init scripts change what the kernel
/// defaults to, and a sweep can replay them next to the kernel's defaults).
/// Of a ratio and its byte limit only the one in force is kept: writing the
/// other would switch the kernel to it.
pub fn capture(knobs: &Knobs, name: &str, note: String) -> Variant {
    let mut vm = BTreeMap::new();
    for key in VM_SETTINGS {
        if let Some(v) = knobs.read(&format!("vm.{key}")).and_then(|v| v.parse::<u64>().ok()) {
            vm.insert(key.to_string(), v);
        }
    }
    let found = vm.clone();
    vm.retain(|k, _| !crate::schema::variant::not_in_force(&found, k));
    let mut queue = BTreeMap::new();
    for key in QUEUE_SETTINGS {
        if let Some(v) = knobs.read(&format!("queue.{key}")).filter(|v| !v.is_empty()) {
            queue.insert(key.to_string(), v);
        }
    }
    Variant { name: name.into(), vm, queue, note, ..Variant::default() }
}

/// Only the variants named in `wanted` (comma-separated), in the plan's order;
/// a name the plan does not have is an error naming the ones it has.
pub fn select(variants: &[Variant], wanted: &str) -> Result<Vec<Variant>, String> {
    let names: Vec<&str> = wanted.split(',').map(str::trim).filter(|n| !n.is_empty()).collect();
    let have: Vec<&str> = variants.iter().map(|v| v.name.as_str()).collect();
    if let Some(missing) = names.iter().find(|n| !have.contains(n)) {
        return Err(format!("the plan has no variant '{missing}'; it has: {}", have.join(", ")));
    }
    Ok(variants.iter().filter(|v| names.contains(&v.name.as_str())).cloned().collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A fake /proc/sys/vm and queue directory the tests can write.
    fn fake_knobs(name: &str) -> Knobs {
        let root = std::env::temp_dir().join(format!("bootmark-variant-{name}-{}", std::process::id()));
        let _ = crate::fsutil::remove_tree(&root);
        std::fs::create_dir_all(root.join("vm")).unwrap();
        std::fs::create_dir_all(root.join("queue")).unwrap();
        std::fs::write(root.join("vm/dirty_ratio"), "40\n").unwrap();
        std::fs::write(root.join("vm/dirty_background_ratio"), "10\n").unwrap();
        std::fs::write(root.join("queue/scheduler"), "noop anticipatory deadline [cfq]\n").unwrap();
        std::fs::write(root.join("queue/nr_requests"), "128\n").unwrap();
        std::fs::write(root.join("cmdline"), "ro quiet elevator=deadline\n").unwrap();
        Knobs { vm_dir: root.join("vm"), queue_dir: Some(root.join("queue")), cmdline_file: root.join("cmdline") }
    }

    fn variant(json: &str) -> Variant {
        let v: Variant = serde_json::from_str(json).unwrap();
        v.validate().unwrap();
        v
    }

    #[test]
    fn a_variant_is_applied_read_back_and_restored() {
        let knobs = fake_knobs("apply");
        let v = variant(r#"{"name": "ratio10", "vm": {"dirty_ratio": 10}, "queue": {"nr_requests": "512"}}"#);
        let original = remember(&knobs, std::slice::from_ref(&v));
        let applied = apply(&knobs, &v);
        assert!(applied.fully(), "{applied:?}");
        assert_eq!(applied.read_back["vm.dirty_ratio"].as_deref(), Some("10"));
        assert_eq!(knobs.read("queue.nr_requests").as_deref(), Some("512"));
        assert!(restore(&knobs, &original).is_empty());
        assert_eq!(knobs.read("vm.dirty_ratio").as_deref(), Some("40"));
        assert_eq!(knobs.read("queue.nr_requests").as_deref(), Some("128"));
    }

    /// What the run found is read back before each variant: a setting not
    /// back (the kernel keeps a variant's dirty_bytes where only writing the
    /// ratio clears it; here the restore is skipped to leave it) is named
    /// with both values, and the variant is refused, asking what it asked.
    #[test]
    fn settings_not_back_as_found_are_named_and_refuse_the_next_variant() {
        let knobs = fake_knobs("readback");
        std::fs::write(knobs.vm_dir.join("dirty_bytes"), "0\n").unwrap();
        let tiny = variant(r#"{"name": "tiny", "vm": {"dirty_bytes": 4194304}}"#);
        let wbt = variant(r#"{"name": "wbt", "queue": {"nr_requests": "64"}}"#);
        let original = remember(&knobs, &[tiny.clone(), wbt.clone()]);
        assert!(not_as_found(&knobs, &original).is_empty(), "nothing changed yet");
        assert!(apply(&knobs, &tiny).fully());
        let wrong = not_as_found(&knobs, &original);
        assert_eq!(wrong, ["vm.dirty_bytes reads 4194304 where the run found 0"]);
        let refused = refused(&wbt, &wrong);
        assert_eq!(refused.asked["queue.nr_requests"], "64");
        assert!(refused.not_applied[NOT_RESTORED].contains("vm.dirty_bytes reads 4194304 where the run found 0"));
        assert!(refused.read_back.is_empty(), "nothing of it was written");
        // Put back (on a real kernel, writing dirty_ratio zeroes dirty_bytes): nothing differs.
        std::fs::write(knobs.vm_dir.join("dirty_bytes"), "0\n").unwrap();
        assert!(restore(&knobs, &original).is_empty());
        assert!(not_as_found(&knobs, &original).is_empty());
    }

    /// 2.6.9 has no dirty_bytes and no wbt_lat_usec; its schedulers are
    /// noop/anticipatory/deadline/cfq: each is named as not applied, with why.
    #[test]
    fn what_this_kernel_lacks_is_reported_not_applied() {
        let knobs = fake_knobs("lacks");
        let v = variant(
            r#"{"name": "modern", "vm": {"dirty_bytes": 67108864},
                "queue": {"wbt_lat_usec": "0", "scheduler": "mq-deadline"}}"#,
        );
        let applied = apply(&knobs, &v);
        assert_eq!(applied.not_applied.len(), 3, "{applied:?}");
        assert!(applied.not_applied["vm.dirty_bytes"].contains("this kernel has no"));
        assert!(applied.not_applied["queue.scheduler"].contains("offers: noop anticipatory deadline [cfq]"));
        assert_eq!(applied.read_back["queue.scheduler"].as_deref(), Some("cfq"), "what is really in use");
        let ok = apply(&knobs, &variant(r#"{"name": "dl", "queue": {"scheduler": "deadline"}}"#));
        assert!(ok.fully());
        assert_eq!(knobs.read("queue.scheduler").as_deref(), Some("deadline"));
    }

    /// Kernel parameters are found, not set: a boot that has them applies the
    /// variant; one that lacks them skips it, saying it needs its own entry.
    #[test]
    fn boot_parameters_are_applied_only_by_a_boot_that_has_them() {
        let knobs = fake_knobs("cmdline");
        let here = variant(r#"{"name": "dl", "cmdline": "elevator=deadline", "vm": {"dirty_ratio": 10}}"#);
        assert!(here.needs_boot());
        let applied = apply(&knobs, &here);
        assert!(applied.fully(), "{applied:?}");
        assert_eq!(applied.read_back["cmdline.elevator=deadline"].as_deref(), Some("elevator=deadline"));
        let elsewhere = variant(r#"{"name": "as", "cmdline": "elevator=as"}"#);
        let applied = apply(&knobs, &elsewhere);
        assert!(applied.nothing_applied(), "skipped in this boot");
        assert!(applied.not_applied["cmdline.elevator=as"].contains("needs its own boot entry"));
        let bad = serde_json::from_str::<Variant>(r#"{"name": "x", "cmdline": "bootmark.plan=seed"}"#).unwrap();
        assert!(bad.validate().unwrap_err().contains("not a plain kernel parameter"));
    }

    #[test]
    fn restoring_ratios_never_writes_a_zero_byte_limit() {
        let knobs = fake_knobs("pairs");
        std::fs::write(knobs.vm_dir.join("dirty_bytes"), "0\n").unwrap();
        let v = variant(r#"{"name": "bytes", "vm": {"dirty_bytes": 67108864}}"#);
        let both = variant(r#"{"name": "r", "vm": {"dirty_ratio": 5}}"#);
        let original = remember(&knobs, &[v.clone(), both]);
        apply(&knobs, &v);
        // A file that refuses 0, like the kernel's dirty_bytes.
        assert!(restore(&knobs, &original).is_empty());
        assert_eq!(knobs.read("vm.dirty_bytes").as_deref(), Some("67108864"), "0 was not written back");
        assert_eq!(knobs.read("vm.dirty_ratio").as_deref(), Some("40"));
    }

    /// A variant that sets only dirty_bytes: the kernel zeroes dirty_ratio
    /// (written here by hand: files do not pair), and the restore must
    /// write the ratio back, the one write that clears dirty_bytes. Before,
    /// dirty_ratio was not remembered and every later variant ran under
    /// the byte limit.
    #[test]
    fn a_byte_limit_is_undone_by_writing_its_ratio_back() {
        let knobs = fake_knobs("partner");
        std::fs::write(knobs.vm_dir.join("dirty_bytes"), "0\n").unwrap();
        std::fs::write(knobs.vm_dir.join("dirty_background_bytes"), "0\n").unwrap();
        let tiny = variant(r#"{"name": "tiny", "vm": {"dirty_bytes": 4194304, "dirty_background_bytes": 1048576}}"#);
        let original = remember(&knobs, std::slice::from_ref(&tiny));
        assert!(apply(&knobs, &tiny).fully());
        // What the kernel does to each pair's other half.
        std::fs::write(knobs.vm_dir.join("dirty_ratio"), "0\n").unwrap();
        std::fs::write(knobs.vm_dir.join("dirty_background_ratio"), "0\n").unwrap();
        assert!(restore(&knobs, &original).is_empty());
        assert_eq!(knobs.read("vm.dirty_ratio").as_deref(), Some("40"));
        assert_eq!(knobs.read("vm.dirty_background_ratio").as_deref(), Some("10"));
    }

    /// What is there is captured as a variant that validates and, applied,
    /// changes nothing; of dirty_ratio and dirty_bytes only the one in force.
    #[test]
    fn the_settings_found_are_captured_as_a_variant() {
        let knobs = fake_knobs("capture");
        std::fs::write(knobs.vm_dir.join("dirty_bytes"), "0\n").unwrap();
        std::fs::write(knobs.vm_dir.join("dirty_background_bytes"), "33554432\n").unwrap();
        let v = capture(&knobs, "as-installed", "from a test".into());
        v.validate().unwrap();
        assert_eq!(v.vm.get("dirty_ratio"), Some(&40));
        assert_eq!(v.vm.get("dirty_bytes"), None, "0: the ratio is in force");
        assert_eq!(v.vm.get("dirty_background_bytes"), Some(&33554432));
        assert_eq!(v.vm.get("dirty_background_ratio"), None, "the byte limit is in force");
        assert_eq!(v.queue.get("scheduler").map(String::as_str), Some("cfq"), "the one in use, not the list");
        assert_eq!(v.queue.get("nr_requests").map(String::as_str), Some("128"));
        let applied = apply(&knobs, &v);
        assert!(applied.fully(), "{applied:?}");
        assert_eq!(knobs.read("vm.dirty_ratio").as_deref(), Some("40"));
    }

    #[test]
    fn bad_variants_and_selections_are_refused_by_name() {
        let bad =
            |json: &str| serde_json::from_str::<Variant>(json).map_err(|e| e.to_string()).and_then(|v| v.validate());
        assert!(bad(r#"{"name": "x", "vm": {"overcommit_memory": 1}}"#).unwrap_err().contains("vm.overcommit_memory"));
        assert!(bad(r#"{"name": "x", "queue": {"scheduler": "../../x"}}"#).unwrap_err().contains("not a plain value"));
        assert!(bad(r#"{"name": "a b"}"#).unwrap_err().contains("short word"));
        assert!(bad(r#"{"name": "x", "sysctl": {}}"#).unwrap_err().contains("unknown field"));
        let vs = [variant(r#"{"name": "a"}"#), variant(r#"{"name": "b"}"#), variant(r#"{"name": "c"}"#)];
        let picked: Vec<String> = select(&vs, "c,a").unwrap().into_iter().map(|v| v.name).collect();
        assert_eq!(picked, ["a", "c"], "the plan's order");
        assert!(select(&vs, "a,z").unwrap_err().contains("no variant 'z'; it has: a, b, c"));
    }
}
