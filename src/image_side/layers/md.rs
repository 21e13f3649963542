//! Linux software RAID (md) members: their superblocks (metadata 0.90 and
//! 1.0/1.1/1.2), whether an array is whole and clean, and assembling it
//! through md's ioctls, as mdadm does, started read-only.
//!
//! The layouts are the kernel's (include/uapi/linux/raid/md_p.h). Reading
//! never writes; assembling lets the kernel update the superblocks as it
//! does when an array is used (its event count, clean/active state) and
//! nothing else.

use super::{ReadAt, u32_at, u64_at};
use std::fs::File;
use std::io;
use std::os::fd::AsRawFd;

const MAGIC: u32 = 0xa92b_4efc;
/// md's block major: /dev/mdN is (9, N).
pub const MD_MAJOR: u32 = 9;
/// 0.90's superblock sits in the last 64 KiB-aligned 64 KiB of the device.
const SB0_RESERVED: u64 = 64 * 1024;
const SB0_BYTES: usize = 4096;
/// A 1.x array is clean when nothing is owed a resync: resync_offset is all ones.
const MAX_SECTOR: u64 = u64::MAX;
const FEATURE_RECOVERY_OFFSET: u32 = 2;
const FEATURE_RESHAPE_ACTIVE: u32 = 4;
/// md's own limits on member slots: 0.90 describes 27 disks
/// (MD_SB_DISKS); a 1.x superblock's role table fills the rest of its
/// 4 KiB, 1920 entries. A superblock that claims more is not md's, however
/// valid its checksum: `raid_disks` sizes what bootmark builds from it.
const MAX_DISKS_0_90: u32 = 27;
const MAX_DISKS_1: u32 = (4096 - 256) / 2;

/// One member's superblock, as far as assembling and refusing need.
#[derive(Clone, Debug, PartialEq)]
pub struct Member {
    /// "0.90", "1.0", "1.1" or "1.2".
    pub version: String,
    /// The array's UUID as mdadm prints it (`xxxxxxxx:xxxxxxxx:…`).
    pub uuid: String,
    /// The array's name (1.x only: `host:name`).
    pub name: String,
    /// -1 linear, 0, 1, 4, 5, 6, 10.
    pub level: i32,
    pub raid_disks: u32,
    pub chunk_kib: u32,
    /// This device's slot; None for a spare or a faulty member.
    pub slot: Option<u32>,
    pub events: u64,
    /// Nothing owed a resync or a recovery, no reshape under way.
    pub clean: bool,
    /// Why it is not clean, in mdadm's words.
    pub state: String,
    /// Slots the superblock itself lists as active (a degraded array's
    /// members agree that a slot is empty).
    pub active_slots: Vec<u32>,
    /// Where the array's data starts on this member, in sectors.
    pub data_offset: u64,
    /// md's layout number for the level (raid5's parity rotation, raid10's copies).
    pub layout: u32,
    /// How much of this member holds the array's data, in sectors (0: not said).
    pub data_sectors: u64,
}

impl Member {
    /// Where the array's data lies on its members.
    pub fn geometry(&self) -> super::md_layout::Geometry {
        super::md_layout::Geometry {
            level: self.level,
            layout: self.layout,
            chunk_sectors: self.chunk_kib as u64 * 2,
            raid_disks: self.raid_disks,
            member_sectors: self.data_sectors,
        }
    }
}

fn hex(b: &[u8]) -> String {
    b.chunks(4).map(|c| c.iter().map(|x| format!("{x:02x}")).collect::<String>()).collect::<Vec<_>>().join(":")
}

/// A UUID as the command line may write it (dashes, colons, any case) in mdadm's form.
pub fn normalize_uuid(text: &str) -> Option<String> {
    let digits: String = text.chars().filter(|c| !matches!(c, ':' | '-')).collect::<String>().to_ascii_lowercase();
    (digits.len() == 32 && digits.chars().all(|c| c.is_ascii_hexdigit())).then(|| {
        digits.as_bytes().chunks(8).map(|c| String::from_utf8_lossy(c).into_owned()).collect::<Vec<_>>().join(":")
    })
}

/// md's 1.x checksum: the 32-bit little-endian words of the superblock
/// (its checksum field as zero) summed in 64 bits, then folded.
fn sb1_checksum(sb: &[u8]) -> u32 {
    let mut sum: u64 = 0;
    for (i, w) in sb.chunks_exact(4).enumerate() {
        if i != 216 / 4 {
            sum += u32::from_le_bytes(w.try_into().unwrap()) as u64;
        }
    }
    ((sum & 0xffff_ffff) + (sum >> 32)) as u32
}

/// The md member superblock on `dev` of `size` bytes, if any. An error
/// when it cannot be told: a read fails where a superblock may be, or a
/// superblock with a valid checksum claims what md never writes. Such a
/// disk is neither plain nor a member bootmark may use.
pub fn read_member(dev: &dyn ReadAt, size: u64) -> Result<Option<Member>, String> {
    // 1.1 at 0, 1.2 at 4 KiB, 1.0 at 8 KiB before the end (4 KiB aligned).
    let end_1_0 = (size / 512).saturating_sub(16) & !7;
    for (version, sector) in [("1.1", 0), ("1.2", 8), ("1.0", end_1_0)] {
        if let Some(m) = read_v1(dev, sector * 512, version, size)? {
            return Ok(Some(m));
        }
    }
    if size >= 2 * SB0_RESERVED {
        return read_v0(dev, (size & !(SB0_RESERVED - 1)) - SB0_RESERVED);
    }
    Ok(None)
}

/// Up to `buf.len()` bytes at `at`; a short read at the device's end is no error.
fn read_sb(dev: &dyn ReadAt, buf: &mut [u8], at: u64) -> Result<usize, String> {
    let mut n = 0;
    while n < buf.len() {
        match dev.read_at(&mut buf[n..], at + n as u64) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) => return Err(format!("reading where an md superblock may be (byte {at}): {e}")),
        }
    }
    Ok(n)
}

fn read_v1(dev: &dyn ReadAt, at: u64, version: &str, size: u64) -> Result<Option<Member>, String> {
    let mut sb = vec![0u8; 4096];
    if read_sb(dev, &mut sb, at)? < 1024 || u32_at(&sb, 0) != MAGIC || u32_at(&sb, 4) != 1 {
        return Ok(None);
    }
    let max_dev = (u32_at(&sb, 220) as usize).min(MAX_DISKS_1 as usize);
    let sb = &sb[..256 + 2 * max_dev];
    if sb1_checksum(sb) != u32_at(sb, 216) {
        return Ok(None);
    }
    // The superblock says where it is; a 1.2 found at 0 is no 1.2.
    if u64_at(sb, 144).checked_mul(512) != Some(at) {
        return Ok(None);
    }
    let what = format!("an md {version} superblock at byte {at} (checksum valid)");
    let raid_disks = u32_at(sb, 92);
    if raid_disks > MAX_DISKS_1 {
        return Err(format!("{what} claims {raid_disks} member disks; md allows at most {MAX_DISKS_1}"));
    }
    let data_offset = u64_at(sb, 128);
    if data_offset.checked_mul(512).is_none_or(|b| b >= size) {
        return Err(format!("{what} puts the array's data at sector {data_offset}, past the end of its disk"));
    }
    let features = u32_at(sb, 8);
    let dev_number = u32_at(sb, 160) as usize;
    let role = |i: usize| u16::from_le_bytes([sb[256 + 2 * i], sb[257 + 2 * i]]);
    let slot = (dev_number < max_dev).then(|| role(dev_number)).filter(|r| *r < 0xfffe).map(u32::from);
    let active_slots: Vec<u32> = (0..max_dev).map(role).filter(|r| (*r as u32) < raid_disks).map(u32::from).collect();
    let resync_offset = u64_at(sb, 208);
    let state = if features & FEATURE_RESHAPE_ACTIVE != 0 {
        "reshaping".to_string()
    } else if resync_offset != MAX_SECTOR {
        format!("not clean: a resync is owed from sector {resync_offset}")
    } else if features & FEATURE_RECOVERY_OFFSET != 0 {
        format!("recovering: this member is rebuilt up to sector {}", u64_at(sb, 152))
    } else {
        "clean".to_string()
    };
    let name = &sb[32..64];
    Ok(Some(Member {
        version: version.to_string(),
        uuid: hex(&sb[16..32]),
        name: String::from_utf8_lossy(&name[..name.iter().position(|c| *c == 0).unwrap_or(32)]).into_owned(),
        level: u32_at(sb, 72) as i32,
        raid_disks,
        chunk_kib: u32_at(sb, 88) / 2,
        slot,
        events: u64_at(sb, 200),
        clean: state == "clean",
        state,
        active_slots,
        data_offset,
        layout: u32_at(sb, 76),
        // data_size, else the "used size" the array was made with.
        data_sectors: if u64_at(sb, 136) != 0 { u64_at(sb, 136) } else { u64_at(sb, 80) },
    }))
}

fn read_v0(dev: &dyn ReadAt, at: u64) -> Result<Option<Member>, String> {
    let mut sb = vec![0u8; SB0_BYTES];
    if read_sb(dev, &mut sb, at)? < SB0_BYTES || u32_at(&sb, 0) != MAGIC || u32_at(&sb, 4) != 0 {
        return Ok(None);
    }
    let word = |i: usize| u32_at(&sb, 4 * i);
    let mut sum: u64 = (0..SB0_BYTES / 4).filter(|i| *i != 38).map(|i| word(i) as u64).sum();
    sum = (sum & 0xffff_ffff) + (sum >> 32);
    if sum as u32 != word(38) {
        return Ok(None);
    }
    // Disk descriptors: 32 words each from word 128; this_disk at word 992.
    let disk = |base: usize| (word(base), word(base + 3), word(base + 4)); // number, raid_disk, state
    let raid_disks = word(10);
    if raid_disks > MAX_DISKS_0_90 {
        return Err(format!(
            "an md 0.90 superblock at byte {at} (checksum valid) claims {raid_disks} member disks; 0.90 describes at most {MAX_DISKS_0_90}"
        ));
    }
    const ACTIVE: u32 = 1 << 1;
    const SYNC: u32 = 1 << 2;
    let (_, this_slot, this_state) = disk(992);
    let active_slots: Vec<u32> = (0..27)
        .map(|i| disk(128 + 32 * i))
        .filter(|(_, slot, state)| state & (ACTIVE | SYNC) == ACTIVE | SYNC && *slot < raid_disks)
        .map(|(_, slot, _)| slot)
        .collect();
    let clean = word(33) & 1 != 0;
    let uuid: Vec<u8> = [5, 13, 14, 15].iter().flat_map(|i| word(*i).to_be_bytes()).collect();
    Ok(Some(Member {
        version: "0.90".into(),
        uuid: hex(&uuid),
        name: String::new(),
        level: word(7) as i32,
        raid_disks,
        chunk_kib: word(65) / 1024,
        slot: (this_state & (ACTIVE | SYNC) == ACTIVE | SYNC).then_some(this_slot),
        events: ((word(40) as u64) << 32) | word(39) as u64,
        clean,
        state: if clean { "clean".into() } else { "not clean: a resync is owed".into() },
        active_slots,
        data_offset: 0,
        layout: word(64),
        data_sectors: word(8) as u64 * 2,
    }))
}

/// The kernel module that drives a RAID level (2.6.9 had raid5 and raid6
/// apart; raid456 since 2.6.18).
pub fn personality_modules(level: i32) -> &'static [&'static str] {
    match level {
        -1 => &["linear"],
        0 => &["raid0"],
        1 => &["raid1"],
        4..=6 => &["raid456", "raid5", "raid6"],
        10 => &["raid10"],
        _ => &[],
    }
}

/// Why the array `members` belong to may not be assembled as a target,
/// if it may not: members that disagree, an empty slot (degraded), a
/// stale member, a resync, recovery or reshape owed.
pub fn refusal(uuid: &str, members: &[Member]) -> Option<String> {
    let Some(newest) = members.iter().max_by_key(|m| m.events) else {
        return Some(format!("no member of the md array {uuid} was found"));
    };
    let what = format!("the md array {uuid} (raid{}, {} disks)", newest.level, newest.raid_disks);
    if let Some(m) = members.iter().find(|m| !m.clean) {
        return Some(format!("{what} is {}: refusing to use it (let the installed system finish first)", m.state));
    }
    let current: Vec<&Member> = members.iter().filter(|m| m.events == newest.events).collect();
    if current.len() < members.len() {
        return Some(format!(
            "{what} has a stale member (event count {} behind {}): refusing to assemble it",
            members.iter().map(|m| m.events).min().unwrap_or(0),
            newest.events
        ));
    }
    let mut found: Vec<u32> = current.iter().filter_map(|m| m.slot).collect();
    found.sort_unstable();
    found.dedup();
    let missing: Vec<String> = (0..newest.raid_disks).filter(|s| !found.contains(s)).map(|s| s.to_string()).collect();
    if !missing.is_empty() {
        let state = if newest.active_slots.len() < newest.raid_disks as usize {
            "degraded (its superblocks list a slot as empty)"
        } else {
            "degraded (a member disk is not here)"
        };
        return Some(format!(
            "{what} is {state}: {} of {} members found, slot{} {} missing; refusing it as a target",
            found.len(),
            newest.raid_disks,
            if missing.len() == 1 { "" } else { "s" },
            missing.join(", ")
        ));
    }
    None
}

/// `_IOW(MD_MAJOR, nr, size)`.
fn iow(nr: u64, size: u64) -> u64 {
    (1 << 30) | (size << 16) | ((MD_MAJOR as u64) << 8) | nr
}

/// Assemble the array on the open /dev/mdN `array` from members with
/// device numbers `devices`, then run it. The kernel reads each member's
/// superblock itself; we only say which version to expect. Run with md's
/// `start_ro` set, the array starts read-auto: no resync starts, and it
/// turns read-write only when the target is first written.
pub fn assemble(array: &File, version: &str, devices: &[(u32, u32)]) -> Result<(), String> {
    let (major, minor) = match version {
        "0.90" => (0, 90),
        v => (1, v.strip_prefix("1.").and_then(|m| m.parse().ok()).unwrap_or(2)),
    };
    // mdu_array_info_t: 18 ints; only the version set means "read the superblocks".
    let mut info = [0i32; 18];
    info[0] = major;
    info[1] = minor;
    let fd = array.as_raw_fd();
    let ioctl = |req: u64, arg: *const libc::c_void, what: &str| {
        // SAFETY: each argument is the structure md expects for the request, alive across the call.
        if unsafe { libc::ioctl(fd, req as _, arg) } < 0 {
            Err(format!("md: {what}: {}", io::Error::last_os_error()))
        } else {
            Ok(())
        }
    };
    ioctl(iow(0x23, 72), info.as_ptr().cast(), "SET_ARRAY_INFO")?;
    for (maj, min) in devices {
        // mdu_disk_info_t: number, major, minor, raid_disk, state.
        let disk = [0i32, *maj as i32, *min as i32, 0, 0];
        ioctl(iow(0x21, 20), disk.as_ptr().cast(), &format!("adding member {maj}:{min}"))?;
    }
    ioctl(iow(0x30, 12), std::ptr::null(), "RUN_ARRAY")
}

/// STOP_ARRAY: the kernel writes the superblocks clean and lets go of the members.
pub fn stop(array: &File) -> Result<(), String> {
    // SAFETY: _IO(MD_MAJOR, 0x32) takes no argument.
    if unsafe { libc::ioctl(array.as_raw_fd(), (((MD_MAJOR as u64) << 8) | 0x32) as _, 0) } < 0 {
        return Err(format!("md: STOP_ARRAY: {}", io::Error::last_os_error()));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::image_side::layers::crafted::{md_disk, md_sb1, set_sb1_u32, set_sb1_u64};

    fn sb1(slot: u16, events: u64, resync_offset: u64, roles: &[u16]) -> Vec<u8> {
        md_sb1(0x11, 2, slot, events, resync_offset, roles)
    }

    fn member_of(sb: Vec<u8>) -> Option<Member> {
        let disk = md_disk(&sb, 2 << 20);
        read_member(&disk, disk.len() as u64).unwrap()
    }

    /// A device whose every read fails, as a dying disk's sectors do.
    struct Eio;
    impl ReadAt for Eio {
        fn read_at(&self, _: &mut [u8], _: u64) -> io::Result<usize> {
            Err(io::Error::from_raw_os_error(libc::EIO))
        }
    }

    #[test]
    fn a_superblock_claiming_more_than_md_allows_is_an_error_found_at_once() {
        // 20,000,000 disks took 4.9 s and 1.4 GB to refuse; u32::MAX aborted PID 1.
        for claim in [20_000_000, u32::MAX, MAX_DISKS_1 + 1] {
            let mut sb = sb1(0, 20, MAX_SECTOR, &[0, 1]);
            set_sb1_u32(&mut sb, 92, claim);
            let started = std::time::Instant::now();
            let disk = md_disk(&sb, 2 << 20);
            let e = read_member(&disk, disk.len() as u64).unwrap_err();
            assert!(e.contains(&format!("claims {claim} member disks; md allows at most 1920")), "{e}");
            assert!(started.elapsed().as_secs() < 1);
        }
        let mut sb = sb1(0, 20, MAX_SECTOR, &[0, 1]);
        set_sb1_u64(&mut sb, 128, u64::MAX / 256);
        let disk = md_disk(&sb, 2 << 20);
        assert!(read_member(&disk, disk.len() as u64).unwrap_err().contains("past the end of its disk"));
        // 1920 slots is md's own maximum and still reads.
        let mut sb = sb1(0, 20, MAX_SECTOR, &[0, 1]);
        set_sb1_u32(&mut sb, 92, MAX_DISKS_1);
        assert_eq!(member_of(sb).unwrap().raid_disks, 1920);
    }

    #[test]
    fn superblocks_mdadm_wrote_read_as_mdadm_reads_them() {
        let fixture =
            |name: &str| std::fs::read(format!("{}/tests/data/layers/{name}", env!("CARGO_MANIFEST_DIR"))).unwrap();
        let disk = fixture("md-1.2-mdadm.bin");
        let m = read_member(&disk, disk.len() as u64 + (1 << 20)).unwrap().expect("a 1.2 member");
        assert_eq!((m.version.as_str(), m.name.as_str(), m.level, m.raid_disks), ("1.2", "bootmark:0", 1, 2));
        assert_eq!(m.uuid, "599f795a:b2d39dca:6af56a2d:40135f26");
        assert_eq!((m.slot, m.events, m.data_offset, m.clean), (Some(0), 6, 2048, true));
        let disk = fixture("md-0.90-mdadm.bin");
        let m = read_member(&disk, disk.len() as u64).unwrap().expect("a 0.90 member");
        assert_eq!((m.version.as_str(), m.level, m.raid_disks, m.slot, m.events), ("0.90", 1, 2, Some(0), 5));
        assert_eq!(m.uuid, "0df7064a:ae65e469:43fdb68a:4518245b");
        assert!(m.clean);
    }

    #[test]
    fn a_failed_read_where_a_superblock_may_be_is_not_a_plain_disk() {
        let e = read_member(&Eio, 1 << 30).unwrap_err();
        assert!(e.contains("reading where an md superblock may be (byte 0)"), "{e}");
        // A device shorter than a superblock is plain, not an error.
        assert_eq!(read_member(&vec![0u8; 100], 100).unwrap(), None);
    }

    #[test]
    fn a_1_2_member_reads_with_its_slot_and_state() {
        let m = member_of(sb1(1, 20, MAX_SECTOR, &[0, 1])).unwrap();
        assert_eq!(m.version, "1.2");
        assert_eq!(m.uuid, "11111111:11111111:11111111:11111111");
        assert_eq!((m.name.as_str(), m.level, m.raid_disks, m.slot, m.events), ("host:md0", 1, 2, Some(1), 20));
        assert!(m.clean);
        let mut bad = sb1(1, 20, MAX_SECTOR, &[0, 1]);
        bad[201] ^= 1;
        assert_eq!(member_of(bad), None, "a checksum that does not match is no superblock");
    }

    #[test]
    fn degraded_dirty_and_stale_arrays_are_refused_with_their_state() {
        let a = member_of(sb1(0, 20, MAX_SECTOR, &[0, 1])).unwrap();
        let b = member_of(sb1(1, 20, MAX_SECTOR, &[0, 1])).unwrap();
        let uuid = &a.uuid.clone();
        assert_eq!(refusal(uuid, &[a.clone(), b.clone()]), None);
        let one = refusal(uuid, std::slice::from_ref(&a)).unwrap();
        assert!(one.contains("degraded (a member disk is not here): 1 of 2 members found, slot 1 missing"), "{one}");
        let emptied = member_of(sb1(0, 22, MAX_SECTOR, &[0, 0xfffe])).unwrap();
        assert!(refusal(uuid, &[emptied]).unwrap().contains("superblocks list a slot as empty"));
        let dirty = member_of(sb1(1, 20, 4096, &[0, 1])).unwrap();
        assert!(refusal(uuid, &[a.clone(), dirty]).unwrap().contains("resync is owed from sector 4096"));
        let stale = member_of(sb1(1, 12, MAX_SECTOR, &[0, 1])).unwrap();
        assert!(refusal(uuid, &[a, stale]).unwrap().contains("stale member (event count 12 behind 20)"));
    }

    #[test]
    fn uuids_as_users_write_them() {
        let u = "3b1f6e7a:0c2d4e5f:11223344:aabbccdd";
        assert_eq!(normalize_uuid("3B1F6E7A-0C2D-4E5F-1122-3344AABBCCDD").as_deref(), Some(u));
        assert_eq!(normalize_uuid(u).as_deref(), Some(u));
        assert_eq!(normalize_uuid("3b1f"), None);
    }

    #[test]
    fn ioctl_numbers_match_mdadm() {
        assert_eq!(iow(0x23, 72), 0x40480923, "SET_ARRAY_INFO");
        assert_eq!(iow(0x21, 20), 0x40140921, "ADD_NEW_DISK");
        assert_eq!(iow(0x30, 12), 0x400c0930, "RUN_ARRAY");
    }
}
