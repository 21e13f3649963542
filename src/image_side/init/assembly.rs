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
use crate::image_side::layers::unassembled::Unassembled;
use crate::image_side::layers::{ReadAt, Window, dm, lvm, md};
use serde_json::{Value, json};
use std::fs::File;
use std::path::{Path, PathBuf};

/// What /init set up for the target, to describe and to take down.
pub struct Activated {
    pub target: BlockDev,
    /// The disks and partitions under it (for the stick's safety check).
    pub members: Vec<BlockDev>,
    pub facts: Value,
    /// Removing the LV's mapping, then stopping the arrays.
    undo: Undo,
}

/// What /init set up, undone newest first when dropped: on every error
/// path after the first array is assembled, and when a panic unwinds past
/// its holder (PID 1 catches panics and goes on to power off), not only
/// after a run. Problems undoing are returned by `run`; a drop has no one
/// to tell, and the kernel cleans up at power-off.
#[derive(Default)]
pub struct Undo {
    steps: Vec<(String, UndoStep)>,
}

type UndoStep = Box<dyn FnOnce() -> Result<(), String>>;

impl Undo {
    fn push(&mut self, what: String, step: impl FnOnce() -> Result<(), String> + 'static) {
        self.steps.push((what, Box::new(step)));
    }

    /// Undo everything now, newest first; what failed, each named.
    pub fn run(&mut self) -> Vec<String> {
        let mut problems = Vec::new();
        while let Some((what, step)) = self.steps.pop() {
            if let Err(e) = step() {
                problems.push(format!("{what}: {e}"));
            }
        }
        problems
    }
}

impl Drop for Undo {
    fn drop(&mut self) {
        let _ = self.run();
    }
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
    /// Why its layer metadata cannot be used, if it cannot: a read failed
    /// where metadata may be, a superblock claims what md never writes, or
    /// it is a partition of a disk that is itself an md member. Such a
    /// device is neither a plain target nor a layer; the boot goes on
    /// without it unless the target needs it.
    unusable: Option<String>,
}

/// Every plain disk and partition (not the dm and md devices /init makes)
/// with its layer metadata. Disks beside the target are untrusted input:
/// nothing read here may stop the boot.
fn look(all: &[BlockDev]) -> Vec<Seen> {
    all.iter().filter(|d| !d.name.starts_with("dm-") && !d.name.starts_with("md")).map(|d| seen_one(d, all)).collect()
}

/// What layer metadata `d` carries, its whole disk considered for a partition.
fn seen_one(d: &BlockDev, all: &[BlockDev]) -> Seen {
    let mut seen = Seen { dev: d.clone(), member: None, label: None, unusable: None };
    // A whole-disk md member (0.90 and 1.0 keep the array's data from sector 0) shows the
    // array's partition table on the raw disk: its "partitions" are the array's data behind md's back.
    if d.partition.is_some()
        && let Some(whole) = all.iter().find(|w| w.partition.is_none() && w.name == d.disk)
    {
        let parent = File::open(&whole.node).map_err(|e| format!("opening {}: {e}", whole.node.display()));
        match parent.and_then(|f| md::read_member(&f, whole.size_bytes)) {
            Ok(None) => {}
            Ok(Some(m)) => {
                seen.unusable = Some(format!(
                    "{} is a partition of {}, which is a whole-disk member of the md array {} (raid{}): it is the array's data seen behind md's back",
                    d.name, whole.name, m.uuid, m.level
                ));
                return seen;
            }
            Err(e) => {
                seen.unusable = Some(format!(
                    "{} is a partition of {}, which cannot be told from an md member: {e}",
                    d.name, whole.name
                ));
                return seen;
            }
        }
    }
    let f = match File::open(&d.node) {
        Ok(f) => f,
        Err(e) => {
            seen.unusable = Some(format!("{}: opening {}: {e}", d.name, d.node.display()));
            return seen;
        }
    };
    match md::read_member(&f, d.size_bytes) {
        Ok(member) => seen.member = member,
        Err(e) => {
            seen.unusable = Some(format!("{}: {e}", d.name));
            return seen;
        }
    }
    // A PV label seen through an md member (0.90 and 1.0 keep the data at 0) belongs to the array.
    if seen.member.is_none() {
        match lvm::read_label(&f) {
            Ok(label) => seen.label = label,
            Err(e) => seen.unusable = Some(format!("{}: reading where an LVM2 label may be: {e}", d.name)),
        }
    }
    seen
}

/// Why a plain target (LABEL=, /dev/…) must not be used: it is part of a
/// layer, or what it is cannot be told. `all`: every device scanned (a
/// partition's whole disk is looked at too).
pub fn plain_target_refusal(target: &BlockDev, all: &[BlockDev]) -> Option<String> {
    let seen = seen_one(target, all);
    if let Some(why) = seen.unusable {
        return Some(format!("the target cannot be used: {why}; name another target"));
    }
    if let Some(m) = seen.member {
        return Some(format!(
            "the target {} is a member of the md array {} (raid{}): writing it directly would corrupt the array; name the array (bootmark.target=MD={}) or an LV on it",
            target.name, m.uuid, m.level, m.uuid
        ));
    }
    if seen.label.is_some() {
        return Some(format!(
            "the target {} is an LVM2 physical volume: name a logical volume on it (bootmark.target=LV=vg/lv)",
            target.name
        ));
    }
    None
}

/// Every disk whose layer metadata bootmark passed over, and why, and the
/// ambiguities lvm2 would refuse (two VGs of one name): for the run
/// record, so that what a disk beside the target holds is named.
pub fn ignored(sys: &Path, dev: &Path) -> Vec<String> {
    let seen = look(&devices::scan(sys, dev));
    let mut out: Vec<String> = seen.iter().filter_map(|s| s.unusable.clone()).collect();
    let PvScan { texts, problems, .. } = pv_texts(&seen, &arrays_seen(&seen));
    out.extend(problems);
    let mut groups: Vec<(String, String, String)> = Vec::new();
    for t in &texts {
        match lvm::volume_group(&t.text) {
            Ok(vg) => groups.push((vg.name, vg.id, t.place.name())),
            Err(e) => out.push(format!("{}: LVM2 metadata that cannot be read: {e}", t.place.name())),
        }
    }
    groups.sort();
    for (name, _, _) in &groups {
        let same: Vec<&(String, String, String)> = groups.iter().filter(|g| &g.0 == name).collect();
        let mut ids: Vec<&str> = same.iter().map(|g| g.1.as_str()).collect();
        ids.dedup();
        let said = format!("volume group {name}: ");
        if ids.len() > 1 && !out.iter().any(|o| o.starts_with(&said)) {
            let mut places: Vec<&str> = same.iter().map(|g| g.2.as_str()).collect();
            places.sort_unstable();
            out.push(format!(
                "{said}{} different volume groups carry this name (on {}): lvm2 refuses it, and an LV= target in it is refused",
                ids.len(),
                places.join(", ")
            ));
        }
    }
    out
}

/// A `LABEL=` or `UUID=` whose filesystem is inside an LV or an md array:
/// the `LV=`/`MD=` spec that reaches it, found by reading the filesystem's
/// superblock through the layers (an LV's first extent on its PV, an
/// array's start through its members as md lays it out) without
/// activating anything. None when no layer holds it; an error when
/// several do.
pub fn inside(spec: &DiskSpec, sys: &Path, dev: &Path) -> Result<Option<DiskSpec>, String> {
    let wanted = |fs: &FsInfo| match spec {
        DiskSpec::Label(l) => fs.label.as_deref() == Some(l.as_str()),
        DiskSpec::Uuid(u) => fs.uuid.as_deref() == Some(u.as_str()),
        _ => false,
    };
    let seen = look(&devices::scan(sys, dev));
    let arrays = arrays_seen(&seen);
    let mut found: Vec<DiskSpec> = Vec::new();
    for a in &arrays {
        if let Ok(array) = a.reader()
            && fsprobe::probe_in(&array).is_some_and(|fs| wanted(&fs))
        {
            found.push(DiskSpec::Md(a.uuid.clone()));
        }
    }
    for t in pv_texts(&seen, &arrays).texts {
        let Ok(vg) = lvm::volume_group(&t.text) else { continue };
        let Some(me) = vg.pvs.iter().find(|p| p.uuid == t.label.uuid) else { continue };
        let Some(pv) = t.place.reader(&arrays) else { continue };
        for lv in &vg.lvs {
            // The filesystem's superblock is in the LV's first extent: on this PV if its first stripe is.
            let Some(first) = vg.extents(lv).ok().and_then(|e| e.into_iter().next()) else { continue };
            if first.pv != me.key {
                continue;
            }
            let Some(offset) = first.start.checked_mul(512) else { continue };
            if fsprobe::probe_in(&Window { dev: &*pv, offset }).is_some_and(|fs| wanted(&fs)) {
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

/// The md arrays on the disks whose data bootmark cannot read before
/// assembling them (a layout it does not place), each with why: a
/// `LABEL=` not found anywhere may lie inside one, and the refusal says so.
pub fn unreadable_arrays(sys: &Path, dev: &Path) -> Vec<String> {
    arrays_seen(&look(&devices::scan(sys, dev))).iter().filter_map(SeenArray::unreadable).collect()
}

/// An md array whose members are on the disks seen, each open (newest
/// superblock first), to read it before it is assembled.
struct SeenArray {
    uuid: String,
    members: Vec<(md::Member, File)>,
}

impl SeenArray {
    /// The array read through its members as md lays it out.
    fn reader(&self) -> Result<Unassembled<'_>, String> {
        let devs: Vec<(&md::Member, &dyn ReadAt)> = self.members.iter().map(|(m, f)| (m, f as &dyn ReadAt)).collect();
        Unassembled::new(&devs)
    }

    /// Why its data cannot be placed on its members, if it cannot.
    fn unreadable(&self) -> Option<String> {
        let g = self.members.first()?.0.geometry();
        g.locate(0).err().map(|e| format!("the md array {} ({e})", self.uuid))
    }
}

fn arrays_seen(seen: &[Seen]) -> Vec<SeenArray> {
    let mut arrays: Vec<SeenArray> = Vec::new();
    for s in seen {
        let Some(m) = &s.member else { continue };
        let Ok(f) = File::open(&s.dev.node) else { continue };
        match arrays.iter_mut().find(|a| a.uuid == m.uuid) {
            Some(a) => a.members.push((m.clone(), f)),
            None => arrays.push(SeenArray { uuid: m.uuid.clone(), members: vec![(m.clone(), f)] }),
        }
    }
    for a in &mut arrays {
        a.members.sort_by_key(|(m, _)| std::cmp::Reverse(m.events));
    }
    arrays
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
    use crate::image_side::measure::clock::{mono_ns, sleep_until};
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
            Ok(plan) => return plan.apply(&mut LiveKernel { sys, dev, load }),
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
/// through its members before assembling).
#[derive(Clone)]
enum Place {
    Disk(BlockDev),
    Array { uuid: String },
}

impl Place {
    /// What to call it in a message.
    fn name(&self) -> String {
        match self {
            Place::Disk(d) => d.name.clone(),
            Place::Array { uuid } => format!("the md array {uuid}"),
        }
    }

    /// The PV read from its start.
    fn reader<'a>(&self, arrays: &'a [SeenArray]) -> Option<Box<dyn ReadAt + 'a>> {
        match self {
            Place::Disk(d) => Some(Box::new(File::open(&d.node).ok()?)),
            Place::Array { uuid } => Some(Box::new(arrays.iter().find(|a| &a.uuid == uuid)?.reader().ok()?)),
        }
    }
}

/// One PV's label, newest metadata text and place.
struct PvText {
    text: String,
    label: lvm::Label,
    place: Place,
}

/// What the PVs on the disks seen say: each one's newest metadata text
/// (on a plain device, or inside an array read through its members), what
/// could not be read (damaged metadata, an array bootmark cannot read
/// before assembly), and arrays not whole yet (a member still to come).
struct PvScan {
    texts: Vec<PvText>,
    problems: Vec<String>,
    incomplete: Vec<String>,
}

fn pv_texts(seen: &[Seen], arrays: &[SeenArray]) -> PvScan {
    let mut scan = PvScan { texts: Vec::new(), problems: Vec::new(), incomplete: Vec::new() };
    for s in seen {
        let Some(label) = &s.label else { continue };
        let metadata = File::open(&s.dev.node)
            .map_err(|e| format!("opening {}: {e}", s.dev.node.display()))
            .and_then(|f| lvm::read_metadata(&f, label));
        match metadata {
            Ok(Some(text)) => scan.texts.push(PvText { text, label: label.clone(), place: Place::Disk(s.dev.clone()) }),
            Ok(None) => {}
            Err(e) => scan
                .problems
                .push(format!("{}: an LVM2 physical volume whose metadata cannot be used: {e}", s.dev.name)),
        }
    }
    for a in arrays {
        if let Some(why) = a.unreadable() {
            scan.problems.push(format!("{why}: what it holds is not seen before assembly"));
            continue;
        }
        let array = match a.reader() {
            Ok(array) => array,
            Err(e) => {
                scan.problems.push(e);
                continue;
            }
        };
        let read = lvm::read_label(&array).map_err(|e| (e.kind(), e.to_string())).and_then(|label| match label {
            Some(label) => lvm::read_metadata(&array, &label)
                .map(|text| text.map(|text| (label, text)))
                .map_err(|e| (std::io::ErrorKind::InvalidData, e)),
            None => Ok(None),
        });
        match read {
            Ok(Some((label, text))) => {
                scan.texts.push(PvText { text, label, place: Place::Array { uuid: a.uuid.clone() } })
            }
            Ok(None) => {}
            Err((std::io::ErrorKind::NotFound, e)) => scan.incomplete.push(format!("the md array {} ({e})", a.uuid)),
            Err((_, e)) if e.contains("is not here") => scan.incomplete.push(format!("the md array {} ({e})", a.uuid)),
            Err((_, e)) => scan.problems.push(format!(
                "the md array {} holds an LVM2 physical volume whose metadata cannot be used: {e}",
                a.uuid
            )),
        }
    }
    scan
}

fn find_lv(vg_name: &str, lv_name: &str, seen: &[Seen]) -> Result<Plan, Stop> {
    let PvScan { texts, mut problems, incomplete } = pv_texts(seen, &arrays_seen(seen));
    let mut groups: Vec<(lvm::VolumeGroup, &PvText)> = Vec::new();
    let mut names = Vec::new();
    for t in &texts {
        // Another VG's unreadable text is passed over (named if ours is not found): it is not our target.
        match lvm::volume_group(&t.text) {
            Ok(vg) if vg.name == vg_name => groups.push((vg, t)),
            Ok(vg) => names.push(vg.name),
            Err(e) => problems.push(format!("{}: LVM2 metadata that cannot be read: {e}", t.place.name())),
        }
    }
    let mut ids: Vec<&str> = groups.iter().map(|(vg, _)| vg.id.as_str()).collect();
    ids.sort_unstable();
    ids.dedup();
    if ids.len() > 1 {
        return Err(Stop::Refused(format!(
            "{} different volume groups are named {vg_name} (ids {}): lvm2 refuses this too; rename one on the installed system (vgrename by its id) or remove the other's disks",
            ids.len(),
            ids.join(", ")
        )));
    }
    // Of the copies on its PVs, the newest (a PV left behind by a reset may hold an older one).
    let Some((vg, _)) = groups.iter().max_by_key(|(vg, _)| vg.seqno) else {
        if !problems.is_empty() {
            // A damaged copy may be this VG's: waiting does not mend it, and guessing around it is not safe.
            return Err(Stop::Refused(format!(
                "no readable metadata of a volume group {vg_name} (volume groups seen: {}); metadata that cannot be used: {}",
                names.join(", "),
                problems.join("; ")
            )));
        }
        let waiting =
            if incomplete.is_empty() { String::new() } else { format!("; not whole yet: {}", incomplete.join("; ")) };
        return Err(Stop::Missing(format!(
            "no volume group {vg_name} on any disk (volume groups seen: {}){waiting}",
            names.join(", ")
        )));
    };
    let vg = vg.clone();
    let lv = vg.lv(lv_name).map_err(Stop::Refused)?;
    if let Some(why) = vg.refusal(lv) {
        return Err(Stop::Refused(why));
    }
    let used: Vec<&str> = lv.segments.iter().flat_map(|s| s.stripes.iter().map(|(k, _)| k.as_str())).collect();
    let mut arrays: Vec<Array> = Vec::new();
    let mut pvs = Vec::new();
    for pv in vg.pvs.iter().filter(|p| used.contains(&p.key.as_str())) {
        let carriers: Vec<&PvText> = texts.iter().filter(|t| t.label.uuid == pv.uuid).collect();
        if carriers.len() > 1 {
            return Err(Stop::Refused(format!(
                "{vg_name}/{lv_name} needs the physical volume {} ({}), which {} devices carry ({}): a cloned disk or a path seen twice; lvm2 refuses this too, and so does bootmark",
                pv.key,
                pv.uuid,
                carriers.len(),
                carriers.iter().map(|t| t.place.name()).collect::<Vec<_>>().join(", ")
            )));
        }
        let Some(PvText { place, .. }) = carriers.first() else {
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
    fn apply(self, kernel: &mut dyn Kernel) -> Result<Activated, String> {
        let mut built: Vec<BlockDev> = Vec::new();
        // From the first array on, any error below takes down what was set up (Undo's drop).
        let mut undo = Undo::default();
        let mut facts = serde_json::Map::new();
        let mut members = Vec::new();
        let mut md_facts = Vec::new();
        for array in &self.arrays {
            let (top, start_ro) = kernel.assemble(array, &mut undo)?;
            md_facts.push(json!({
                "uuid": array.uuid, "device": top.name, "metadata": array.members[0].1.version,
                "level": array.members[0].1.level, "raid_disks": array.members[0].1.raid_disks,
                "chunk_kib": array.members[0].1.chunk_kib, "events": array.members[0].1.events,
                "members": array.members.iter().map(|(d, _)| d.name.clone()).collect::<Vec<_>>(),
                "start_ro": start_ro,
            }));
            members.extend(array.members.iter().map(|(d, _)| d.clone()));
            built.push(top);
        }
        if !md_facts.is_empty() {
            facts.insert("md".into(), json!(md_facts));
        }
        let Some(plan) = self.lv else {
            let target = built.pop().ok_or("no array was assembled")?;
            return Ok(Activated { target, members, facts: Value::Object(facts), undo });
        };
        let device_of = |key: &str| -> Option<String> {
            let (_, place) = plan.pvs.iter().find(|(k, _)| k == key)?;
            Some(match place {
                Ok(d) => format!("{}:{}", d.major, d.minor),
                Err(i) => format!("{}:{}", built[*i].major, built[*i].minor),
            })
        };
        members.extend(plan.pvs.iter().filter_map(|(_, p)| p.as_ref().ok().cloned()));
        let lv = plan.vg.lv(&plan.lv)?;
        let table = plan.vg.table(lv, &|p: &lvm::PvEntry| device_of(&p.key))?;
        let name = plan.vg.dm_name(lv);
        let ((major, minor), version) = kernel.map(&name, &plan.vg.dm_uuid(lv), &table, &mut undo)?;
        facts.insert(
            "lvm".into(),
            json!({"vg": plan.vg.name, "lv": lv.name, "seqno": plan.vg.seqno, "dm_name": name,
                   "table": table.iter().map(|t| t.to_string()).collect::<Vec<_>>(),
                   "dm_version": version,
                   "other_lvs_left_inactive": plan.vg.lvs.len() - 1}),
        );
        let target = kernel.device(major, minor)?;
        Ok(Activated { target, members, facts: Value::Object(facts), undo })
    }
}

/// What `Plan::apply` asks of the kernel, each step's undoing pushed on
/// `undo` as soon as the step took: the seam where the tests inject a
/// failure after an array is assembled. `LiveKernel` is the real one.
trait Kernel {
    /// Assemble one array read-auto; its device and whether start_ro took.
    fn assemble(&mut self, array: &Array, undo: &mut Undo) -> Result<(BlockDev, bool), String>;
    /// Map `table` as the device-mapper device `name`; its numbers and dm's version.
    fn map(
        &mut self,
        name: &str,
        uuid: &str,
        table: &[dm::Target],
        undo: &mut Undo,
    ) -> Result<((u32, u32), String), String>;
    /// The block device with these numbers, once sysfs shows it.
    fn device(&mut self, major: u32, minor: u32) -> Result<BlockDev, String>;
}

/// md's and device-mapper's ioctls on this machine; `load` loads a module by name.
struct LiveKernel<'a> {
    sys: &'a Path,
    dev: &'a Path,
    load: &'a mut dyn FnMut(&str),
}

impl Kernel for LiveKernel<'_> {
    fn assemble(&mut self, array: &Array, undo: &mut Undo) -> Result<(BlockDev, bool), String> {
        assemble(array, self.sys, self.dev, self.load, undo)
    }

    fn map(
        &mut self,
        name: &str,
        uuid: &str,
        table: &[dm::Target],
        undo: &mut Undo,
    ) -> Result<((u32, u32), String), String> {
        (self.load)("dm_mod");
        let control = control_node(self.dev)?;
        let dm = dm::Control::open(&control)?;
        let version = dm.version()?;
        let numbers = dm.create(name, uuid)?;
        let removed = name.to_string();
        undo.push(format!("removing the mapping {name}"), move || dm::Control::open(&control)?.remove(&removed));
        dm.load(name, table, false).and_then(|()| dm.resume(name))?;
        Ok((numbers, format!("{}.{}.{}", version.0, version.1, version.2)))
    }

    fn device(&mut self, major: u32, minor: u32) -> Result<BlockDev, String> {
        device_by_number(self.sys, self.dev, major, minor)
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

/// Assemble one array read-auto, its stop pushed on `undo`; returns its
/// device and whether start_ro took.
fn assemble(
    array: &Array,
    sys: &Path,
    dev: &Path,
    load: &mut dyn FnMut(&str),
    undo: &mut Undo,
) -> Result<(BlockDev, bool), String> {
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
    let stopped = node.clone();
    undo.push(format!("stopping {}", node.display()), move || {
        File::open(&stopped).map_err(|e| format!("{}: {e}", stopped.display())).and_then(|f| md::stop(&f))
    });
    Ok((device_by_number(sys, dev, md::MD_MAJOR, minor)?, start_ro))
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
    pub fn tear_down(mut self) -> Vec<String> {
        self.undo.run()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::image_side::layers::crafted::{
        self, md_disk, md_sb1, pv0, pv0_with_ids, set_area_size, set_label_uuid, set_locn, set_text,
    };

    /// A fake machine: sysfs in a temp dir, each disk's "node" a regular file.
    struct Machine {
        root: PathBuf,
        minor: u32,
    }

    impl Machine {
        fn new(name: &str) -> Machine {
            let root = std::env::temp_dir().join(format!("bootmark-layers-{name}-{}", std::process::id()));
            let _ = std::fs::remove_dir_all(&root);
            std::fs::create_dir_all(root.join("dev")).unwrap();
            Machine { root, minor: 0 }
        }

        /// A whole disk, or with `of` a partition of that disk.
        fn add(&mut self, name: &str, of: Option<&str>, bytes: &[u8]) -> &mut Machine {
            let dir = match of {
                None => self.root.join("sys/block").join(name),
                Some(disk) => self.root.join("sys/block").join(disk).join(name),
            };
            std::fs::create_dir_all(&dir).unwrap();
            std::fs::write(dir.join("dev"), format!("8:{}\n", self.minor)).unwrap();
            std::fs::write(dir.join("size"), format!("{}\n", bytes.len() / 512)).unwrap();
            if of.is_some() {
                std::fs::write(dir.join("partition"), "1\n").unwrap();
            }
            std::fs::write(self.root.join("dev").join(name), bytes).unwrap();
            self.minor += 16;
            self
        }

        fn sys(&self) -> PathBuf {
            self.root.join("sys")
        }

        fn dev(&self) -> PathBuf {
            self.root.join("dev")
        }

        fn scan(&self) -> Vec<BlockDev> {
            devices::scan(&self.sys(), &self.dev())
        }
    }

    impl Drop for Machine {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.root);
        }
    }

    /// The first 32 KiB of a real PV (VG tvg: lv1 linear on it, lv2 striped
    /// over it and a second PV that is not here) and an ext3 superblock
    /// labelled INLV at lv1's start.
    fn pv_with_inlv() -> Vec<u8> {
        let mut disk = pv0();
        // lv1 starts at the PV's first extent: pe_start 2048 sectors = 1 MiB.
        disk.resize((1 << 20) + 4096, 0);
        let sb = (1 << 20) + 1024;
        disk[sb + 56..sb + 58].copy_from_slice(&0xEF53u16.to_le_bytes());
        disk[sb + 92] = 0x4; // has_journal: ext3
        disk[sb + 120..sb + 124].copy_from_slice(b"INLV");
        disk
    }

    /// sda: the PV above.
    fn machine(name: &str) -> Machine {
        let mut m = Machine::new(name);
        m.add("sda", None, &pv_with_inlv());
        m
    }

    fn seen(m: &Machine) -> Vec<Seen> {
        look(&m.scan())
    }

    fn refused(r: Result<Plan, Stop>) -> String {
        match r {
            Err(Stop::Refused(e)) => e,
            Err(Stop::Missing(e)) => panic!("expected a refusal, got a wait: {e}"),
            Ok(_) => panic!("expected a refusal, got a plan"),
        }
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
    }

    #[test]
    fn a_label_inside_an_lv_is_found_without_activating_it_and_the_pv_is_no_plain_target() {
        let root = machine("inside");
        let (sys, dev) = (root.sys(), root.dev());
        let found = inside(&DiskSpec::Label("INLV".into()), &sys, &dev).unwrap();
        assert_eq!(found, Some(DiskSpec::Lv { vg: "tvg".into(), lv: "lv1".into() }));
        assert_eq!(inside(&DiskSpec::Label("ELSEWHERE".into()), &sys, &dev).unwrap(), None);
        let pv = devices::scan(&sys, &dev).into_iter().find(|d| d.name == "sda").unwrap();
        assert!(plain_target_refusal(&pv, &root.scan()).unwrap().contains("is an LVM2 physical volume"));
    }

    /// A disk that is a whole-disk md 1.2 member (raid1 of 2, slot 0).
    fn md_member(uuid_byte: u8) -> Vec<u8> {
        md_disk(&md_sb1(uuid_byte, 2, 0, 20, u64::MAX, &[0, 1]), 4 << 20)
    }

    #[test]
    fn hostile_disks_beside_the_target_are_named_and_passed_over() {
        let mut m = machine("hostile");
        // A PV whose area claims 1 PiB and whose text 32 TiB (both CRCs valid).
        let mut huge = pv0();
        set_label_uuid(&mut huge, &"H".repeat(32));
        set_area_size(&mut huge, 1 << 50);
        set_locn(&mut huge, 4608, 32 << 40, 0);
        // A PV whose checksummed text nests 100,000 deep.
        let mut deep = pv0();
        set_label_uuid(&mut deep, &"D".repeat(32));
        set_text(&mut deep, &format!("tvg {{\nseqno = {}\n}}\n", "[".repeat(100_000)));
        // An md superblock claiming u32::MAX disks.
        let mut many = md_sb1(0x22, 2, 0, 20, u64::MAX, &[0, 1]);
        crafted::set_sb1_u32(&mut many, 92, u32::MAX);
        // A partition of a whole-disk member, holding a copy of sda's PV: the array's data behind md's back.
        m.add("sdb", None, &huge).add("sdc", None, &deep).add("sdd", None, &md_disk(&many, 4 << 20));
        m.add("sde", None, &md_member(0x33)).add("sde1", Some("sde"), &pv_with_inlv());
        let started = std::time::Instant::now();
        let plan = find_lv("tvg", "lv1", &seen(&m)).ok().expect("lv1 is planned from sda alone");
        assert!(matches!(&plan.lv.unwrap().pvs[0].1, Ok(d) if d.name == "sda"));
        let found = inside(&DiskSpec::Label("INLV".into()), &m.sys(), &m.dev()).unwrap();
        assert_eq!(found, Some(DiskSpec::Lv { vg: "tvg".into(), lv: "lv1".into() }));
        let ignored = ignored(&m.sys(), &m.dev()).join("\n");
        for why in [
            "sdb: an LVM2 physical volume whose metadata cannot be used: the metadata text at byte 4096+4608 claims 35184372088832 bytes",
            "sdc: LVM2 metadata that cannot be read: LVM2 metadata, line 2: sections or lists nest deeper than 16 levels",
            "sdd: an md 1.2 superblock at byte 4096 (checksum valid) claims 4294967295 member disks",
            "sde1 is a partition of sde, which is a whole-disk member of the md array 33333333:33333333:33333333:33333333 (raid1)",
        ] {
            assert!(ignored.contains(why), "{why}\nnot in:\n{ignored}");
        }
        assert!(started.elapsed().as_secs() < 5, "{:?}", started.elapsed());
        // Neither the member's partition nor a disk that cannot be told is a plain target.
        let all = m.scan();
        let by = |n: &str| all.iter().find(|d| d.name == n).unwrap().clone();
        assert!(plain_target_refusal(&by("sde1"), &all).unwrap().contains("whole-disk member of the md array"));
        assert!(plain_target_refusal(&by("sdd"), &all).unwrap().contains("claims 4294967295 member disks"));
    }

    #[test]
    fn two_vgs_of_one_name_and_one_pv_on_two_disks_are_refused_as_lvm2_refuses_them() {
        let mut m = machine("dup-pv");
        m.add("sdb", None, &pv_with_inlv());
        let e = refused(find_lv("tvg", "lv1", &seen(&m)));
        assert!(
            e.contains(
                "needs the physical volume pv0 (fcH57veDwPK3gqDp0fsThqrCYsEMiFVD), which 2 devices carry (sda, sdb)"
            ),
            "{e}"
        );

        let mut m = machine("dup-vg");
        m.add(
            "sdb",
            None,
            &pv0_with_ids("OTHERS-jU3a-oCmR-tCJC-30YU-5fx9-vInEA0", "OTHERP-eDwP-K3gq-Dp0f-sThq-rCYs-EMiFVD"),
        );
        let e = refused(find_lv("tvg", "lv1", &seen(&m)));
        assert!(e.contains("2 different volume groups are named tvg (ids OTHERS-"), "{e}");
        // A plain target beside them is not refused; the run record names the ambiguity.
        let ignored = ignored(&m.sys(), &m.dev()).join("\n");
        assert!(
            ignored.contains("volume group tvg: 2 different volume groups carry this name (on sda, sdb)"),
            "{ignored}"
        );
    }

    #[test]
    fn damaged_metadata_is_named_at_once_instead_of_waited_for() {
        let mut m = Machine::new("damaged");
        let mut pv = pv_with_inlv();
        pv[crafted::MDA_AT + 4608 + 20] ^= 0x20;
        m.add("sda", None, &pv);
        let e = refused(find_lv("tvg", "lv1", &seen(&m)));
        assert!(
            e.contains("no readable metadata of a volume group tvg (volume groups seen: ); metadata that cannot be used: sda: an LVM2 physical volume whose metadata cannot be used: the metadata text at byte 4096+4608 fails its checksum"),
            "{e}"
        );
    }

    #[test]
    fn what_was_set_up_is_undone_newest_first_on_error_and_on_panic() {
        use std::cell::RefCell;
        use std::rc::Rc;
        let log = Rc::new(RefCell::new(Vec::new()));
        let step = |what: &'static str| {
            let log = log.clone();
            move || {
                log.borrow_mut().push(what);
                if what == "array" { Err("EBUSY".to_string()) } else { Ok(()) }
            }
        };
        // An error after assembly: the guard goes out of scope through `?`.
        let failing = || -> Result<(), String> {
            let mut undo = Undo::default();
            undo.push("stopping md127".into(), step("array"));
            undo.push("removing tvg-lv1".into(), step("mapping"));
            Err("the device did not appear".into())
        };
        assert!(failing().is_err());
        assert_eq!(*log.borrow(), ["mapping", "array"]);
        // A panic unwinding past it (PID 1 catches panics).
        log.borrow_mut().clear();
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            let mut undo = Undo::default();
            undo.push("stopping md127".into(), step("array"));
            panic!("a workload bug");
        }));
        assert!(r.is_err());
        assert_eq!(*log.borrow(), ["array"]);
        // Run by hand: problems named, and nothing undone twice when it is dropped after.
        log.borrow_mut().clear();
        let mut undo = Undo::default();
        undo.push("stopping md127".into(), step("array"));
        assert_eq!(undo.run(), ["stopping md127: EBUSY"]);
        drop(undo);
        assert_eq!(*log.borrow(), ["array"]);
    }

    #[test]
    fn a_label_inside_an_lv_on_raid5_and_on_raid6_is_found_where_md_put_it() {
        // The real PV at the array's start; lv1's first extent 1 MiB into the array, which on
        // a 3-disk left-symmetric raid5 with 64 KiB chunks is chunk 16: stripe 8, member slot 1.
        let mut disks = crafted::md_array(0x88, 5, 2, 64, 3, 3 << 20);
        crafted::write_through(&mut disks, 0, &pv0());
        crafted::write_through(&mut disks, (1 << 20) + 1024, &crafted::ext3_superblock("INR5"));
        let mut m = Machine::new("raid5");
        m.add("sda", None, &disks[0]).add("sdb", None, &disks[1]).add("sdc", None, &disks[2]);
        let found = inside(&DiskSpec::Label("INR5".into()), &m.sys(), &m.dev()).unwrap();
        assert_eq!(found, Some(DiskSpec::Lv { vg: "tvg".into(), lv: "lv1".into() }));
        let plan = find_lv("tvg", "lv1", &seen(&m)).ok().expect("lv1 planned on the array");
        assert_eq!(plan.arrays.len(), 1);
        assert_eq!(plan.arrays[0].members.len(), 3);
        // One member missing: the PV still reads (its chunk is on slot 0) and the array is waited for.
        let mut two = Machine::new("raid5-two");
        two.add("sda", None, &disks[0]).add("sdb", None, &disks[1]);
        match find_lv("tvg", "lv1", &seen(&two)) {
            Err(Stop::Missing(e)) => {
                assert!(e.contains("degraded (a member disk is not here): 2 of 3 members found, slot 2 missing"), "{e}")
            }
            _ => panic!("a PV on an array missing a member is waited for"),
        }
        // Without the member holding the PV's chunk, the wait says which array is not whole.
        let mut late = Machine::new("raid5-late");
        late.add("sdb", None, &disks[1]).add("sdc", None, &disks[2]);
        match find_lv("tvg", "lv1", &seen(&late)) {
            Err(Stop::Missing(e)) => assert!(
                e.contains(
                    "not whole yet: the md array 88888888:88888888:88888888:88888888 (member slot 0 is not here)"
                ),
                "{e}"
            ),
            _ => panic!("a PV on an array missing a member is waited for"),
        }

        // ext3 straight on a 4-disk raid6: its first chunk is on member slot 1 (Q D0 D1 P).
        let mut disks = crafted::md_array(0x99, 6, 2, 64, 4, 2 << 20);
        crafted::write_through(&mut disks, 1024, &crafted::ext3_superblock("INR6"));
        assert_eq!(&disks[1][(1 << 20) + 1024 + 120..(1 << 20) + 1024 + 124], b"INR6", "placed on slot 1");
        let mut m = Machine::new("raid6");
        for (name, disk) in ["sda", "sdb", "sdc", "sdd"].iter().zip(&disks) {
            m.add(name, None, disk);
        }
        let found = inside(&DiskSpec::Label("INR6".into()), &m.sys(), &m.dev()).unwrap();
        assert_eq!(found, Some(DiskSpec::Md("99999999:99999999:99999999:99999999".into())));
        assert!(unreadable_arrays(&m.sys(), &m.dev()).is_empty());

        // A layout bootmark does not place (raid6 rotating-N-continue, DDF's): named, with why.
        let disks = crafted::md_array(0xaa, 6, 10, 64, 4, 2 << 20);
        let mut m = Machine::new("raid6-ddf");
        for (name, disk) in ["sda", "sdb", "sdc", "sdd"].iter().zip(&disks) {
            m.add(name, None, disk);
        }
        assert_eq!(
            unreadable_arrays(&m.sys(), &m.dev()),
            [
                "the md array aaaaaaaa:aaaaaaaa:aaaaaaaa:aaaaaaaa (raid6 layout 10 is not a layout bootmark reads before assembling)"
            ]
        );
    }

    /// A kernel that assembles and maps in name only, logging each undoing,
    /// and fails at the step named by `fail` ("map" or "device").
    struct Injected {
        log: std::rc::Rc<std::cell::RefCell<Vec<String>>>,
        fail: &'static str,
        disk: BlockDev,
    }

    impl Kernel for Injected {
        fn assemble(&mut self, _: &Array, undo: &mut Undo) -> Result<(BlockDev, bool), String> {
            let log = self.log.clone();
            undo.push("stopping md127".into(), move || {
                log.borrow_mut().push("stopped md127".into());
                Ok(())
            });
            let mut md = self.disk.clone();
            (md.sysfs.name, md.sysfs.major, md.sysfs.minor) = ("md127".into(), 9, 127);
            Ok((md, true))
        }

        fn map(
            &mut self,
            name: &str,
            _: &str,
            _: &[dm::Target],
            undo: &mut Undo,
        ) -> Result<((u32, u32), String), String> {
            if self.fail == "map" {
                return Err("device-mapper: DM_TABLE_LOAD: Invalid argument".into());
            }
            let (log, name) = (self.log.clone(), name.to_string());
            undo.push(format!("removing {name}"), move || {
                log.borrow_mut().push(format!("removed {name}"));
                Ok(())
            });
            Ok(((253, 0), "4.47.0".into()))
        }

        fn device(&mut self, major: u32, minor: u32) -> Result<BlockDev, String> {
            Err(format!("the device {major}:{minor} /init set up did not appear"))
        }
    }

    #[test]
    fn a_failure_after_an_array_is_assembled_takes_down_what_was_set_up() {
        let m = machine("inject");
        let disk = m.scan().into_iter().find(|d| d.name == "sda").unwrap();
        let vg = lvm::volume_group(&crafted::text(&pv0())).unwrap();
        let member =
            md::read_member(&md_disk(&md_sb1(0x66, 1, 0, 20, u64::MAX, &[0]), 4 << 20), 4 << 20).unwrap().unwrap();
        let plan = || Plan {
            arrays: vec![Array { uuid: member.uuid.clone(), members: vec![(disk.clone(), member.clone())] }],
            lv: Some(LvPlan { vg: vg.clone(), lv: "lv1".into(), pvs: vec![("pv0".into(), Err(0))] }),
        };
        let log = std::rc::Rc::new(std::cell::RefCell::new(Vec::new()));
        // The LV's table refused after the array was assembled: the array is stopped.
        let mut kernel = Injected { log: log.clone(), fail: "map", disk: disk.clone() };
        let e = plan().apply(&mut kernel).err().expect("the injected failure");
        assert!(e.contains("DM_TABLE_LOAD"), "{e}");
        assert_eq!(*log.borrow(), ["stopped md127"]);
        // The mapped device never showing up: the mapping removed, then the array stopped.
        log.borrow_mut().clear();
        let mut kernel = Injected { log: log.clone(), fail: "device", disk: disk.clone() };
        assert!(plan().apply(&mut kernel).is_err());
        assert_eq!(*log.borrow(), ["removed tvg-lv1", "stopped md127"]);
    }

    /// sda: 64 KiB of ext3 labelled TARGET, a plain target.
    fn plain_target() -> Vec<u8> {
        let mut target = vec![0u8; 64 << 10];
        target[1024 + 56..1024 + 58].copy_from_slice(&0xEF53u16.to_le_bytes());
        target[1024 + 92] = 0x4;
        target[1024 + 120..1024 + 126].copy_from_slice(b"TARGET");
        target
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig { cases: 200, failure_persistence: None, ..Default::default() })]

        /// Any bytes on a disk beside a plain target — zeros, a real PV or an md
        /// superblock (checksums valid) with bytes changed, cut anywhere — leave
        /// the target plain and unclaimed, and nothing panics or aborts.
        #[test]
        fn any_disk_beside_a_plain_target_leaves_it_the_target(
            base in 0usize..3,
            changes in proptest::collection::vec((0usize..40_000, proptest::prelude::any::<u8>()), 0..24),
            len in 0usize..48_000,
        ) {
            let mut disk = match base {
                0 => vec![0u8; 48_000],
                1 => pv0(),
                _ => {
                    // A member whose data starts at 8 KiB, within this small disk.
                    let mut sb = md_sb1(0x55, 2, 0, 20, u64::MAX, &[0, 1]);
                    crafted::set_sb1_u64(&mut sb, 128, 16);
                    md_disk(&sb, 48_000)
                }
            };
            for (at, byte) in changes {
                if let Some(b) = disk.get_mut(at) {
                    *b = byte;
                }
            }
            disk.truncate(len);
            let mut m = Machine::new("any-bytes");
            m.add("sda", None, &plain_target()).add("sdb", None, &disk);
            let all = m.scan();
            let target = all.iter().find(|d| d.name == "sda").unwrap();
            proptest::prop_assert_eq!(plain_target_refusal(target, &all), None);
            let _ = ignored(&m.sys(), &m.dev());
            proptest::prop_assert_eq!(inside(&DiskSpec::Label("TARGET".into()), &m.sys(), &m.dev()), Ok(None));
        }
    }
}
