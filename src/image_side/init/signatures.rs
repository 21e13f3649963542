//! Is a partition that holds no filesystem bootmark recognises really
//! blank? Before `mkfs` runs on such a partition, its usual metadata places
//! are read: any known signature (LUKS, LVM2, swap, mdraid, btrfs, NTFS, a
//! partition table, …) or any non-zero data there means someone's data, and
//! formatting is refused with what was found. Only all-zero areas pass.

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::Path;

/// Bytes read at the start, and at the end, of the partition.
const HEAD: u64 = 128 << 10;
const TAIL: u64 = 128 << 10;

/// Known signatures: (name, offset from the start, bytes).
const AT_START: [(&str, u64, &[u8]); 11] = [
    ("a LUKS encrypted volume", 0, b"LUKS\xba\xbe"),
    ("a LUKS2 encrypted volume (secondary header)", 0x4000, b"SKUL\xba\xbe"),
    ("an LVM2 physical volume", 512 + 24, b"LVM2 001"),
    ("an LVM2 physical volume", 24, b"LVM2 001"),
    ("swap space", 4096 - 10, b"SWAPSPACE2"),
    ("swap space (old format)", 4096 - 10, b"SWAP-SPACE"),
    ("a btrfs filesystem", 0x10040, b"_BHRfS_M"),
    ("an NTFS filesystem", 3, b"NTFS    "),
    ("an exFAT filesystem", 3, b"EXFAT   "),
    ("a GPT partition table", 512, b"EFI PART"),
    ("a bcache or ZFS or other volume", 0x1018, b"\xc6\x85\x73\xf6\x4e\x1a\x45\xca"),
];
/// The md RAID superblock magic, little-endian.
const MD_MAGIC: [u8; 4] = [0xfc, 0x4e, 0x2b, 0xa9];

/// Ok if the partition looks blank; else what was found there.
pub fn check_blank(node: &Path, size_bytes: u64) -> Result<(), String> {
    let f = File::open(node).map_err(|e| format!("cannot read {} to check it is blank: {e}", node.display()))?;
    let head_len = HEAD.min(size_bytes);
    let mut head = vec![0u8; head_len as usize];
    f.read_exact_at(&mut head, 0).map_err(|e| format!("cannot read {}: {e}", node.display()))?;
    let tail_start = size_bytes.saturating_sub(TAIL).max(head_len);
    let mut tail = vec![0u8; (size_bytes - tail_start) as usize];
    f.read_exact_at(&mut tail, tail_start).map_err(|e| format!("cannot read {}: {e}", node.display()))?;
    match identify(&head, &tail, size_bytes) {
        Some(what) => Err(format!(
            "it holds {what}; bootmark formats only blank partitions or its own scratch filesystems. Wipe it yourself (wipefs -a) if it is really free"
        )),
        None => Ok(()),
    }
}

/// What the first and last bytes of a partition of `size` bytes hold: a
/// named signature, "data" for unknown non-zero bytes, None when all zero.
pub fn identify(head: &[u8], tail: &[u8], size: u64) -> Option<String> {
    let at = |off: u64, sig: &[u8]| head.get(off as usize..off as usize + sig.len()) == Some(sig);
    if let Some((name, _, _)) = AT_START.iter().find(|(_, off, sig)| at(*off, sig)) {
        return Some(name.to_string());
    }
    // Swap on machines with larger pages: the signature ends the first page.
    for page in [8192u64, 16384, 65536] {
        if at(page - 10, b"SWAPSPACE2") {
            return Some("swap space".into());
        }
    }
    // md RAID 1.1 at 0, 1.2 at 4 KiB; 0.90 and 1.0 near the end.
    if at(0, &MD_MAGIC) || at(4096, &MD_MAGIC) || md_at_end(tail, size) {
        return Some("an md RAID member".into());
    }
    if head.len() >= 512 && head[510] == 0x55 && head[511] == 0xaa {
        return Some("a boot sector or an MBR partition table (0x55AA at byte 510)".into());
    }
    if let Some(i) = head.iter().position(|&b| b != 0) {
        return Some(format!("data that is not a filesystem bootmark knows (non-zero bytes from offset {i})"));
    }
    if let Some(i) = tail.iter().position(|&b| b != 0) {
        return Some(format!("data near its end (non-zero bytes {} bytes before the end)", tail.len() - i));
    }
    None
}

fn md_at_end(tail: &[u8], size: u64) -> bool {
    let tail_start = size - tail.len() as u64;
    let v090 = (size & !(64 * 1024 - 1)).saturating_sub(64 * 1024);
    let v10 = (size.saturating_sub(8 * 1024)) & !(4 * 1024 - 1);
    [v090, v10].iter().any(|&off| {
        off >= tail_start && tail.get((off - tail_start) as usize..(off - tail_start) as usize + 4) == Some(&MD_MAGIC)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn zeros() -> (Vec<u8>, Vec<u8>) {
        (vec![0; HEAD as usize], vec![0; TAIL as usize])
    }

    #[test]
    fn blank_passes_and_each_signature_is_named() {
        let size = 64 << 20;
        let (head, tail) = zeros();
        assert_eq!(identify(&head, &tail, size), None);
        let cases: [(u64, &[u8], &str); 6] = [
            (0, b"LUKS\xba\xbe", "LUKS"),
            (536, b"LVM2 001", "LVM2"),
            (4086, b"SWAPSPACE2", "swap"),
            (0x10040, b"_BHRfS_M", "btrfs"),
            (3, b"NTFS    ", "NTFS"),
            (4096, &MD_MAGIC, "md RAID"),
        ];
        for (off, sig, name) in cases {
            let (mut head, tail) = zeros();
            head[off as usize..off as usize + sig.len()].copy_from_slice(sig);
            let found = identify(&head, &tail, size).unwrap();
            assert!(found.contains(name), "{name}: {found}");
        }
        let (mut head, tail) = zeros();
        head[70000] = 7;
        assert!(identify(&head, &tail, size).unwrap().contains("offset 70000"));
        let (head, mut tail) = zeros();
        let md090 = (size & !(65535)) - 65536;
        tail[(md090 - (size - TAIL)) as usize..][..4].copy_from_slice(&MD_MAGIC);
        assert!(identify(&head, &tail, size).unwrap().contains("md RAID"));
    }
}
