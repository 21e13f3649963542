//! Identifying filesystems by reading their superblocks: type, label, UUID.
//! Like blkid, but only for what /init needs (FAT, ext2/3/4, XFS, reiserfs)
//! and with no library: disks are found by what is on them, never by the
//! order the kernel named them in.

use crate::image_side::layers::ReadAt;
use std::fs::File;
use std::io;
use std::path::Path;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FsInfo {
    /// Kernel filesystem type name: vfat, ext2, ext3, ext4, xfs, reiserfs.
    pub fs: String,
    pub label: Option<String>,
    /// Lowercase, formatted as blkid prints it.
    pub uuid: Option<String>,
}

fn read_at(f: &dyn ReadAt, offset: u64, len: usize) -> io::Result<Vec<u8>> {
    let mut buf = vec![0u8; len];
    f.read_exact_at(&mut buf, offset)?;
    Ok(buf)
}

fn text(bytes: &[u8]) -> Option<String> {
    let s = String::from_utf8_lossy(bytes).trim_end_matches(['\0', ' ']).to_string();
    (!s.is_empty()).then_some(s)
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn uuid(b: &[u8]) -> Option<String> {
    if b.iter().all(|&x| x == 0) {
        return None;
    }
    Some(format!("{}-{}-{}-{}-{}", hex(&b[0..4]), hex(&b[4..6]), hex(&b[6..8]), hex(&b[8..10]), hex(&b[10..16])))
}

/// Probe the device or image at `path`; Ok(None) if no known filesystem.
pub fn probe(path: &Path) -> io::Result<Option<FsInfo>> {
    Ok(probe_in(&File::open(path)?))
}

/// Probe what `f` reads: a device, or a window into one (an LV's first
/// extent on its PV, an md array's data area on a member).
pub fn probe_in(f: &dyn ReadAt) -> Option<FsInfo> {
    probe_ext(f).or_else(|| probe_xfs(f)).or_else(|| probe_fat(f)).or_else(|| probe_reiserfs(f))
}

fn probe_ext(f: &dyn ReadAt) -> Option<FsInfo> {
    let sb = read_at(f, 1024, 256).ok()?;
    if u16::from_le_bytes([sb[56], sb[57]]) != 0xEF53 {
        return None;
    }
    let compat = u32::from_le_bytes(sb[92..96].try_into().unwrap());
    let incompat = u32::from_le_bytes(sb[96..100].try_into().unwrap());
    let ro_compat = u32::from_le_bytes(sb[100..104].try_into().unwrap());
    // ext4 features: extents, 64bit, flex_bg (incompat); huge_file, dir_nlink, extra_isize (ro_compat)
    let fs = if incompat & (0x40 | 0x80 | 0x200) != 0 || ro_compat & (0x8 | 0x20 | 0x40) != 0 {
        "ext4"
    } else if compat & 0x4 != 0 {
        "ext3" // has_journal
    } else {
        "ext2"
    };
    Some(FsInfo { fs: fs.into(), label: text(&sb[120..136]), uuid: uuid(&sb[104..120]) })
}

fn probe_xfs(f: &dyn ReadAt) -> Option<FsInfo> {
    let sb = read_at(f, 0, 128).ok()?;
    if &sb[0..4] != b"XFSB" {
        return None;
    }
    Some(FsInfo { fs: "xfs".into(), label: text(&sb[108..120]), uuid: uuid(&sb[32..48]) })
}

fn probe_fat(f: &dyn ReadAt) -> Option<FsInfo> {
    let bs = read_at(f, 0, 512).ok()?;
    if bs[510] != 0x55 || bs[511] != 0xAA {
        return None;
    }
    // FAT32 keeps the extended boot record at 0x40, FAT12/16 at 0x24.
    let (ebr, fstype) = if &bs[0x52..0x57] == b"FAT32" {
        (0x40, true)
    } else if &bs[0x36..0x39] == b"FAT" {
        (0x24, true)
    } else {
        (0, false)
    };
    if !fstype || bs[ebr + 2] != 0x29 {
        return None;
    }
    let id = &bs[ebr + 3..ebr + 7];
    let label = text(&bs[ebr + 7..ebr + 18]).filter(|l| l != "NO NAME");
    Some(FsInfo {
        fs: "vfat".into(),
        label,
        uuid: Some(format!("{:02x}{:02x}-{:02x}{:02x}", id[3], id[2], id[1], id[0])),
    })
}

fn probe_reiserfs(f: &dyn ReadAt) -> Option<FsInfo> {
    let sb = read_at(f, 65536, 128).ok()?;
    let magic = &sb[52..62];
    if !(magic.starts_with(b"ReIsErFs") || magic.starts_with(b"ReIsEr2Fs") || magic.starts_with(b"ReIsEr3Fs")) {
        return None;
    }
    Some(FsInfo { fs: "reiserfs".into(), label: text(&sb[100..116]), uuid: uuid(&sb[84..100]) })
}

/// PARTUUIDs of a whole disk's partitions, as (partition number, partuuid):
/// MBR: `<disk signature>-<nn>`; GPT: the partition's unique GUID.
pub fn partition_uuids(disk: &Path) -> io::Result<Vec<(u32, String)>> {
    let f = File::open(disk)?;
    let sector = logical_sector_size(&f);
    crate::partition_table::partition_uuids(&mut |at, len| read_at(&f, at, len), sector)
}

/// The disk's logical sector size (BLKSSZGET, every 2.6 kernel); 512 for
/// an image file.
fn logical_sector_size(f: &File) -> u64 {
    const BLKSSZGET: libc::c_ulong = 0x1268;
    let mut size: libc::c_int = 0;
    // SAFETY: BLKSSZGET writes one int; on a regular file it fails with ENOTTY.
    let r = unsafe { libc::ioctl(std::os::fd::AsRawFd::as_raw_fd(f), BLKSSZGET as _, &mut size) };
    if r == 0 && size >= 512 { size as u64 } else { 512 }
}
