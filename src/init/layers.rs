//! A target inside the storage as installed: find the md arrays and LVM2
//! physical volumes on the disks, assemble only the arrays the target
//! needs (started read-only: read-auto, no resync), map only the target
//! logical volume, and take it all down again after the run.
//!
//! Never more writes than a plain target: no other LV is activated, no
//! metadata is written (md's own superblock updates when the target is
//! written are the kernel's: event count and clean/active state), and an
//! array that is degraded, stale, resyncing or reshaping is refused with
//! its state named. A disk that is an md member or an LVM PV is refused
//! as a plain target: writing it directly would corrupt what it is part of.

use super::cmdline::DiskSpec;
use super::devices::{self, BlockDev};
use super::fsprobe::{self, FsInfo};
use crate::layers::{Window, dm, lvm, md};
use serde_json::{Value, json};
use std::fs::File;
use std::path::{Path, PathBuf};

/// What /init set up for the target, to describe and to take down.
pub struct Activated {
    pub target: BlockDev,
    /// The disks and partitions under it (for the stick's safety check).
    pub members: Vec<BlockDev>,
    pub facts: Value,
    /// The LV's device-mapper name and the control device it was made through.
    dm: Option<(String, PathBuf)>,
    arrays: Vec<PathBuf>,
}

/// Why activation stopped: something not (yet) there is worth waiting
/// for; a refusal is final.
enum Stop {
    Missing(String),
    Refused(String),
}

/// One plain disk or partition and what layer metadata it carries.
struct Seen {
    dev: BlockDev,
    member: Option<md::Member>,
    label: Option<lvm::Label>,
}

fn look(all: &[BlockDev]) -> Vec<Seen> {
    all.iter()
        .filter(|d| !d.name.starts_with("dm-") && !d.name.starts_with("md"))
        .filter_map(|d| {
            let f = File::open(&d.node).ok()?;
            let member = md::read_member(&f, d.size_bytes).ok().flatten();
            // A PV label seen through an md member (0.90 and 1.0 keep the data at 0) belongs to the array.
            let label = if member.is_some() { None } else { lvm::read_label(&f).ok().flatten() };
            Some(Seen { dev: d.clone(), member, label })
        })
        .collect()
}

/// Why a plain target (LABEL=, /dev/…) must not be used: it is part of a layer.
pub fn plain_target_refusal(target: &BlockDev) -> Option<String> {
    let f = File::open(&target.node).ok()?;
    if let Ok(Some(m)) = md::read_member(&f, target.size_bytes) {
        return Some(format!(
            "the target {} is a member of the md array {} (raid{}): writing it directly would corrupt the array; name the array (bootmark.target=MD={}) or an LV on it",
            target.name, m.uuid, m.level, m.uuid
        ));
    }
    if let Ok(Some(_)) = lvm::read_label(&f) {
        return Some(format!(
            "the target {} is an LVM2 physical volume: name a logical volume on it (bootmark.target=LV=vg/lv)",
            target.name
        ));
    }
    None
}

/// A `LABEL=` or `UUID=` whose filesystem is inside an LV or an md array:
/// the `LV=`/`MD=` spec that reaches it, found by reading the filesystem's
/// superblock through the layers (an LV's first extent on its PV, an
/// array's data area on its first member) without activating anything.
/// None when no layer holds it; an error when several do.
pub fn inside(spec: &DiskSpec, sys: &Path, dev: &Path) -> Result<Option<DiskSpec>, String> {
    let wanted = |fs: &FsInfo| match spec {
        DiskSpec::Label(l) => fs.label.as_deref() == Some(l.as_str()),
        DiskSpec::Uuid(u) => fs.uuid.as_deref() == Some(u.as_str()),
        _ => false,
    };
    let seen = look(&devices::scan(sys, dev));
    let mut found: Vec<DiskSpec> = Vec::new();
    for s in &seen {
        if let Some(m) = s.member.as_ref().filter(|m| m.slot == Some(0))
            && let Ok(f) = File::open(&s.dev.node)
            && fsprobe::probe_in(&Window { file: &f, offset: m.data_offset * 512 }).is_some_and(|fs| wanted(&fs))
        {
            found.push(DiskSpec::Md(m.uuid.clone()));
        }
    }
    for t in pv_texts(&seen).0 {
        let Ok(vg) = lvm::volume_group(&t.text) else { continue };
        let Some(me) = vg.pvs.iter().find(|p| p.uuid == t.label.uuid) else { continue };
        let Some((f, pv_offset)) = t.place.open() else { continue };
        for lv in &vg.lvs {
            // The filesystem's superblock is in the LV's first extent: on this PV if its first stripe is.
            let Some((key, first)) = lv.segments.first().and_then(|s| s.stripes.first()) else { continue };
            if key != &me.key {
                continue;
            }
            let offset = pv_offset + (me.pe_start + first * vg.extent_size) * 512;
            if fsprobe::probe_in(&Window { file: &f, offset }).is_some_and(|fs| wanted(&fs)) {
                found.push(DiskSpec::Lv { vg: vg.name.clone(), lv: lv.name.clone() });
            }
        }
    }
    found.sort_by_key(|s| s.to_string());
    found.dedup();
    match found.as_slice() {
        [] => Ok(None),
        [one] => Ok(Some(one.clone())),
        many => Err(format!(
            "{spec} is on {} layered volumes ({}): refusing to guess; name one with LV= or MD=",
            many.len(),
            many.iter().map(|s| s.to_string()).collect::<Vec<_>>().join(", ")
        )),
    }
}

/// Activate what `spec` (LV= or MD=) names, waiting up to `wait_s` for
/// its disks. `load` loads a module by name (dm_mod, md_mod, raid1…).
pub fn activate(
    spec: &DiskSpec,
    sys: &Path,
    dev: &Path,
    wait_s: f64,
    load: &mut dyn FnMut(&str),
) -> Result<Activated, String> {
    use crate::measure::clock::{mono_ns, sleep_until};
    let deadline = mono_ns() + (wait_s * 1e9) as u64;
    loop {
        let all = devices::scan(sys, dev);
        let seen = look(&all);
        let found = match spec {
            DiskSpec::Md(uuid) => find_array(uuid, &seen),
            DiskSpec::Lv { vg, lv } => find_lv(vg, lv, &seen),
            other => return Err(format!("{other} is not inside a layer")),
        };
        match found {
            Ok(plan) => return plan.apply(sys, dev, load),
            Err(Stop::Refused(e)) => return Err(e),
            Err(Stop::Missing(e)) if mono_ns() >= deadline => {
                return Err(format!("after waiting {wait_s:.0} s: {e}; disks seen: {}", devices::inventory(&all)));
            }
            Err(Stop::Missing(_)) => sleep_until(mono_ns() + 250_000_000),
        }
    }
}

/// An md array to assemble: its members (all found, checked).
struct Array {
    uuid: String,
    members: Vec<(BlockDev, md::Member)>,
}

/// What to set up: the arrays, then maybe one LV on them or on plain PVs.
struct Plan {
    arrays: Vec<Array>,
    lv: Option<LvPlan>,
}

struct LvPlan {
    vg: lvm::VolumeGroup,
    lv: String,
    /// PV key → a plain device, or the index of the array it is on.
    pvs: Vec<(String, Result<BlockDev, usize>)>,
}

fn array_of(uuid: &str, seen: &[Seen]) -> Result<Array, Stop> {
    let members: Vec<(BlockDev, md::Member)> = seen
        .iter()
        .filter_map(|s| s.member.as_ref().filter(|m| m.uuid == uuid).map(|m| (s.dev.clone(), m.clone())))
        .collect();
    if members.is_empty() {
        return Err(Stop::Missing(format!("no disk carries a member of the md array {uuid}")));
    }
    let only: Vec<md::Member> = members.iter().map(|(_, m)| m.clone()).collect();
    match md::refusal(uuid, &only) {
        // A member disk may still be coming up (USB, a slow HBA): wait for it, then refuse.
        Some(e) if e.contains("member disk is not here") => Err(Stop::Missing(e)),
        Some(e) => Err(Stop::Refused(e)),
        None => Ok(Array { uuid: uuid.to_string(), members }),
    }
}

fn find_array(uuid: &str, seen: &[Seen]) -> Result<Plan, Stop> {
    Ok(Plan { arrays: vec![array_of(uuid, seen)?], lv: None })
}

/// Where a PV is: a plain disk or partition, or inside an md array (read
/// through the data area of its member in slot 0 before assembling).
#[derive(Clone)]
enum Place {
    Disk(BlockDev),
    Array { uuid: String, member: BlockDev, data_offset: u64 },
}

impl Place {
    /// The device to read the PV through, and the PV's offset on it.
    fn open(&self) -> Option<(File, u64)> {
        match self {
            Place::Disk(d) => Some((File::open(&d.node).ok()?, 0)),
            Place::Array { member, data_offset, .. } => Some((File::open(&member.node).ok()?, data_offset * 512)),
        }
    }
}

/// One PV's label, newest metadata text and place.
struct PvText {
    text: String,
    label: lvm::Label,
    place: Place,
}

/// Every PV with metadata on the disks seen: on a plain device, or inside
/// an array (its label at the data area of the member in slot 0). Also
/// the arrays holding a PV whose metadata cannot be read before assembly.
fn pv_texts(seen: &[Seen]) -> (Vec<PvText>, Vec<String>) {
    let mut texts = Vec::new();
    let mut unreadable = Vec::new();
    for s in seen {
        if let Some(label) = &s.label
            && let Ok(f) = File::open(&s.dev.node)
            && let Ok(Some(text)) = lvm::read_metadata(&f, label)
        {
            texts.push(PvText { text, label: label.clone(), place: Place::Disk(s.dev.clone()) });
        }
        if let Some(m) = s.member.as_ref().filter(|m| m.slot == Some(0))
            && let Ok(f) = File::open(&s.dev.node)
        {
            let window = Window { file: &f, offset: m.data_offset * 512 };
            if let Ok(Some(label)) = lvm::read_label(&window) {
                let place = Place::Array { uuid: m.uuid.clone(), member: s.dev.clone(), data_offset: m.data_offset };
                // RAID 1 holds the metadata area whole on each member; striped levels only their first chunk.
                match lvm::read_metadata(&window, &label) {
                    Ok(Some(text)) => texts.push(PvText { text, label, place }),
                    _ => unreadable.push(format!(
                        "the md array {} (raid{}) holds an LVM2 physical volume whose metadata lies beyond the array's first chunk, which is all bootmark reads before assembling an array",
                        m.uuid, m.level
                    )),
                }
            }
        }
    }
    (texts, unreadable)
}

fn find_lv(vg_name: &str, lv_name: &str, seen: &[Seen]) -> Result<Plan, Stop> {
    let (texts, unreadable) = pv_texts(seen);
    let mut groups: Vec<lvm::VolumeGroup> = Vec::new();
    for PvText { text, .. } in &texts {
        match lvm::volume_group(text) {
            Ok(vg) if vg.name == vg_name => groups.push(vg),
            Ok(_) => {}
            Err(e) => return Err(Stop::Refused(format!("volume group metadata that cannot be read: {e}"))),
        }
    }
    // Of the copies on its PVs, the newest (a PV left behind by a reset may hold an older one).
    let Some(vg) = groups.into_iter().max_by_key(|vg| vg.seqno) else {
        let names: Vec<String> = texts.iter().filter_map(|t| lvm::volume_group(&t.text).ok().map(|v| v.name)).collect();
        let why = if unreadable.is_empty() { String::new() } else { format!("; {}", unreadable.join("; ")) };
        return Err(Stop::Missing(format!(
            "no volume group {vg_name} on any disk (volume groups seen: {}){why}",
            names.join(", ")
        )));
    };
    let lv = vg.lv(lv_name).map_err(Stop::Refused)?;
    if let Some(why) = vg.refusal(lv) {
        return Err(Stop::Refused(why));
    }
    let used: Vec<&str> = lv.segments.iter().flat_map(|s| s.stripes.iter().map(|(k, _)| k.as_str())).collect();
    let mut arrays: Vec<Array> = Vec::new();
    let mut pvs = Vec::new();
    for pv in vg.pvs.iter().filter(|p| used.contains(&p.key.as_str())) {
        let Some(PvText { place, .. }) = texts.iter().find(|t| t.label.uuid == pv.uuid) else {
            return Err(Stop::Missing(format!(
                "{vg_name}/{lv_name} needs the physical volume {} (last seen as {}), which no disk here carries",
                pv.key, pv.device_hint
            )));
        };
        let place = match place {
            Place::Disk(d) => Ok(d.clone()),
            Place::Array { uuid, .. } => {
                if !arrays.iter().any(|a| &a.uuid == uuid) {
                    arrays.push(array_of(uuid, seen)?);
                }
                Err(arrays.iter().position(|a| &a.uuid == uuid).unwrap_or(0))
            }
        };
        pvs.push((pv.key.clone(), place));
    }
    let lv = lv.name.clone();
    Ok(Plan { arrays, lv: Some(LvPlan { vg, lv, pvs }) })
}

impl Plan {
    fn apply(self, sys: &Path, dev: &Path, load: &mut dyn FnMut(&str)) -> Result<Activated, String> {
        let mut built: Vec<(PathBuf, BlockDev)> = Vec::new();
        let mut facts = serde_json::Map::new();
        let mut members = Vec::new();
        let mut md_facts = Vec::new();
        for array in &self.arrays {
            let (node, top, start_ro) = assemble(array, sys, dev, load)?;
            md_facts.push(json!({
                "uuid": array.uuid, "device": top.name, "metadata": array.members[0].1.version,
                "level": array.members[0].1.level, "raid_disks": array.members[0].1.raid_disks,
                "chunk_kib": array.members[0].1.chunk_kib, "events": array.members[0].1.events,
                "members": array.members.iter().map(|(d, _)| d.name.clone()).collect::<Vec<_>>(),
                "start_ro": start_ro,
            }));
            members.extend(array.members.iter().map(|(d, _)| d.clone()));
            built.push((node, top));
        }
        if !md_facts.is_empty() {
            facts.insert("md".into(), json!(md_facts));
        }
        let Some(plan) = self.lv else {
            let (node, target) = built.pop().ok_or("no array was assembled")?;
            return Ok(Activated { target, members, facts: Value::Object(facts), dm: None, arrays: vec![node] });
        };
        let device_of = |key: &str| -> Option<String> {
            let (_, place) = plan.pvs.iter().find(|(k, _)| k == key)?;
            Some(match place {
                Ok(d) => format!("{}:{}", d.major, d.minor),
                Err(i) => format!("{}:{}", built[*i].1.major, built[*i].1.minor),
            })
        };
        members.extend(plan.pvs.iter().filter_map(|(_, p)| p.as_ref().ok().cloned()));
        let lv = plan.vg.lv(&plan.lv)?;
        let table = plan.vg.table(lv, &|p: &lvm::PvEntry| device_of(&p.key))?;
        load("dm_mod");
        let control = control_node(dev)?;
        let dm = dm::Control::open(&control)?;
        let version = dm.version()?;
        let name = plan.vg.dm_name(lv);
        let (major, minor) = dm.create(&name, &plan.vg.dm_uuid(lv))?;
        let live = dm.load(&name, &table, false).and_then(|()| dm.resume(&name));
        if let Err(e) = live {
            let _ = dm.remove(&name);
            return Err(e);
        }
        facts.insert(
            "lvm".into(),
            json!({"vg": plan.vg.name, "lv": lv.name, "seqno": plan.vg.seqno, "dm_name": name,
                   "table": table.iter().map(|t| t.to_string()).collect::<Vec<_>>(),
                   "dm_version": format!("{}.{}.{}", version.0, version.1, version.2),
                   "other_lvs_left_inactive": plan.vg.lvs.len() - 1}),
        );
        let target = device_by_number(sys, dev, major, minor)?;
        let arrays = built.into_iter().map(|(n, _)| n).collect();
        Ok(Activated { target, members, facts: Value::Object(facts), dm: Some((name, control)), arrays })
    }
}

/// The scanned block device with these numbers (waiting a moment for sysfs).
fn device_by_number(sys: &Path, dev: &Path, major: u32, minor: u32) -> Result<BlockDev, String> {
    for _ in 0..40 {
        if let Some(d) = devices::scan(sys, dev).into_iter().find(|d| d.major == major && d.minor == minor) {
            return Ok(d);
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    Err(format!("the device {major}:{minor} /init set up did not appear in {}", sys.join("block").display()))
}

/// Assemble one array read-auto; returns its node, its device and whether start_ro took.
fn assemble(
    array: &Array,
    sys: &Path,
    dev: &Path,
    load: &mut dyn FnMut(&str),
) -> Result<(PathBuf, BlockDev, bool), String> {
    let first = &array.members[0].1;
    load("md_mod");
    for m in md::personality_modules(first.level) {
        load(m);
    }
    // 2.6.17+: arrays start read-auto. Older kernels have no such switch; a clean array stays clean until written.
    let start_ro = std::fs::write(sys.join("module/md_mod/parameters/start_ro"), "1").is_ok();
    let minor =
        (0..=127u32).rev().find(|n| !sys.join(format!("block/md{n}")).exists()).ok_or("no free md device number")?;
    let node = dev.join(format!("md{minor}"));
    devices::ensure_block_node(&node, md::MD_MAJOR, minor);
    let f = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(&node)
        .map_err(|e| format!("opening {} to assemble the md array {}: {e}", node.display(), array.uuid))?;
    let numbers: Vec<(u32, u32)> = array.members.iter().map(|(d, _)| (d.major, d.minor)).collect();
    if let Err(e) = md::assemble(&f, &first.version, &numbers) {
        let _ = md::stop(&f);
        return Err(format!("assembling the md array {} from {}: {e}", array.uuid, names(&array.members)));
    }
    Ok((node, device_by_number(sys, dev, md::MD_MAJOR, minor)?, start_ro))
}

fn names(members: &[(BlockDev, md::Member)]) -> String {
    members.iter().map(|(d, _)| d.name.as_str()).collect::<Vec<_>>().join(", ")
}

/// /dev/mapper/control: devtmpfs makes it; before 2.6.32 we do, with the
/// minor /proc/misc gives device-mapper.
fn control_node(dev: &Path) -> Result<PathBuf, String> {
    let node = dev.join("mapper/control");
    if node.exists() {
        return Ok(node);
    }
    let misc = std::fs::read_to_string("/proc/misc").unwrap_or_default();
    let minor: u64 = misc
        .lines()
        .find_map(|l| l.trim().strip_suffix("device-mapper").and_then(|n| n.trim().parse().ok()))
        .ok_or("device-mapper is not in this kernel (no dm_mod module, not built in): an LV cannot be the target")?;
    let _ = std::fs::create_dir_all(dev.join("mapper"));
    nix::sys::stat::mknod(
        &node,
        nix::sys::stat::SFlag::S_IFCHR,
        nix::sys::stat::Mode::from_bits_truncate(0o600),
        nix::sys::stat::makedev(10, minor),
    )
    .map_err(|e| format!("making {}: {e}", node.display()))?;
    Ok(node)
}

impl Activated {
    /// After the target is unmounted: remove the LV's mapping, then stop
    /// the arrays (the kernel marks them clean). Problems are returned
    /// for the console; nothing else can be done about them.
    pub fn tear_down(self) -> Vec<String> {
        let mut problems = Vec::new();
        if let Some((name, control)) = &self.dm {
            let r = dm::Control::open(control).and_then(|c| c.remove(name));
            problems.extend(r.err());
        }
        for node in &self.arrays {
            let r = File::open(node).map_err(|e| format!("{}: {e}", node.display())).and_then(|f| md::stop(&f));
            problems.extend(r.err());
        }
        problems
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A fake machine: sysfs with one disk `sda` whose "node" is a regular
    /// file holding the first 32 KiB of a real PV (tests/data/layers/pv0.bin:
    /// VG tvg, lv1 linear on it, lv2 striped over it and a second PV that is
    /// not here), and an ext3 superblock labelled INLV at lv1's start.
    fn machine(name: &str) -> PathBuf {
        let root = std::env::temp_dir().join(format!("bootmark-layers-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        std::fs::create_dir_all(root.join("sys/block/sda")).unwrap();
        std::fs::create_dir_all(root.join("dev")).unwrap();
        let mut disk = std::fs::read(format!("{}/tests/data/layers/pv0.bin", env!("CARGO_MANIFEST_DIR"))).unwrap();
        // lv1 starts at the PV's first extent: pe_start 2048 sectors = 1 MiB.
        disk.resize((1 << 20) + 4096, 0);
        let sb = (1 << 20) + 1024;
        disk[sb + 56..sb + 58].copy_from_slice(&0xEF53u16.to_le_bytes());
        disk[sb + 92] = 0x4; // has_journal: ext3
        disk[sb + 120..sb + 124].copy_from_slice(b"INLV");
        std::fs::write(root.join("dev/sda"), &disk).unwrap();
        std::fs::write(root.join("sys/block/sda/dev"), "8:0\n").unwrap();
        std::fs::write(root.join("sys/block/sda/size"), format!("{}\n", disk.len() / 512)).unwrap();
        root
    }

    fn seen(root: &Path) -> Vec<Seen> {
        look(&devices::scan(&root.join("sys"), &root.join("dev")))
    }

    #[test]
    fn an_lv_is_planned_from_the_metadata_on_its_pv() {
        let root = machine("plan");
        let plan = find_lv("tvg", "lv1", &seen(&root)).ok().expect("lv1 lies on sda alone");
        let lv = plan.lv.expect("an LV to map");
        assert!(plan.arrays.is_empty());
        assert_eq!(lv.pvs.len(), 1);
        assert!(matches!(&lv.pvs[0].1, Ok(d) if d.name == "sda"));
        let missing = |r: Result<Plan, Stop>| match r {
            Err(Stop::Missing(e)) => e,
            _ => panic!("expected a wait for a missing disk"),
        };
        assert!(missing(find_lv("tvg", "lv2", &seen(&root))).contains("needs the physical volume pv1"));
        assert!(
            missing(find_lv("vg9", "x", &seen(&root)))
                .contains("no volume group vg9 on any disk (volume groups seen: tvg)")
        );
        match find_lv("tvg", "nope", &seen(&root)) {
            Err(Stop::Refused(e)) => assert!(e.contains("has no logical volume nope; it has: lv1, lv2, lv3"), "{e}"),
            _ => panic!("an LV the VG lacks is refused at once"),
        }
        std::fs::remove_dir_all(root).unwrap();
    }

    #[test]
    fn a_label_inside_an_lv_is_found_without_activating_it_and_the_pv_is_no_plain_target() {
        let root = machine("inside");
        let (sys, dev) = (root.join("sys"), root.join("dev"));
        let found = inside(&DiskSpec::Label("INLV".into()), &sys, &dev).unwrap();
        assert_eq!(found, Some(DiskSpec::Lv { vg: "tvg".into(), lv: "lv1".into() }));
        assert_eq!(inside(&DiskSpec::Label("ELSEWHERE".into()), &sys, &dev).unwrap(), None);
        let pv = devices::scan(&sys, &dev).into_iter().find(|d| d.name == "sda").unwrap();
        assert!(plain_target_refusal(&pv).unwrap().contains("is an LVM2 physical volume"));
        std::fs::remove_dir_all(root).unwrap();
    }
}
