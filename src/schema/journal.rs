//! The results journal on the stick: `bootmark/journal.bin`, one file of
//! fixed size, zero-filled when the image is built, written in place.
//!
//! Why: a hung server gets reset, and FAT cannot survive a reset in the
//! middle of a metadata change (no atomic rename, no ordering guarantees for
//! the FAT, directory entries and data). So during a run the filesystem's
//! metadata never changes: /init asks the kernel where the journal's blocks
//! are (FIBMAP), then writes records straight to those blocks of the
//! partition and flushes after each one. The file's size, clusters and
//! directory entry stay as the image builder made them; a reset can only
//! tear the entry being written, which its SHA-256 then rejects.
//!
//! Layout, in 4 KiB blocks:
//! - block 0: the header, `BOOTMARK-JOURNAL 1` and a line of text (written
//!   by the image builder, never by /init);
//! - from block 1: entries, each starting on a block boundary:
//!   `@BMJ1 <len> <sha256-hex> <run-id> <seq>\n` + `len` bytes of JSON +
//!   `\n`, zero-padded to the next block. The SHA-256 is the same as the
//!   one the record carries on serial.
//!
//! Appending never overwrites anything that is not zero: the append point
//! is after the last non-zero block, found by walking the entries and then
//! looking `MAX_ENTRY` bytes past the end for a torn entry's stray blocks.
//! Everything here is pure (no I/O): `sink::stick` writes, `collect` reads.

use super::framing::sha256_hex;

pub const BLOCK: usize = 4096;
/// The file name on the stick, relative to its root.
pub const PATH: &str = "bootmark/journal.bin";
pub const MAGIC: &[u8] = b"BOOTMARK-JOURNAL 1\n";
const ENTRY_TAG: &[u8] = b"@BMJ1 ";
/// The largest entry (header + record): bounds how far a torn entry's
/// blocks can lie past the last whole one.
pub const MAX_ENTRY: usize = 1 << 20;
const MAX_ENTRY_BLOCKS: u64 = (MAX_ENTRY / BLOCK) as u64;
/// Default size of the journal file the image builder makes.
pub const DEFAULT_SIZE: u64 = 32 << 20;

/// The journal's block 0.
pub fn header_block() -> Vec<u8> {
    let mut b = MAGIC.to_vec();
    b.extend_from_slice(
        b"bootmark results journal: records are written in place, one per 4 KiB-aligned entry; \
          read it with `bootmark collect`. Do not edit; copying it off the stick is fine.\n",
    );
    b.resize(BLOCK, 0);
    b
}

/// One entry's bytes, padded to whole blocks. Err if it is too large.
pub fn encode_entry(run_id: &str, seq: u32, json: &[u8]) -> Result<Vec<u8>, String> {
    let mut e = format!("@BMJ1 {} {} {run_id} {seq}\n", json.len(), sha256_hex(json)).into_bytes();
    e.extend_from_slice(json);
    e.push(b'\n');
    if e.len() > MAX_ENTRY {
        return Err(format!("a record of {} bytes is larger than a journal entry may be ({MAX_ENTRY})", json.len()));
    }
    e.resize(e.len().div_ceil(BLOCK) * BLOCK, 0);
    Ok(e)
}

/// The parsed first line of an entry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EntryHeader {
    pub len: usize,
    pub sha256: String,
    pub run_id: String,
    pub seq: u32,
    /// Bytes of the header line, newline included.
    pub header_len: usize,
}

impl EntryHeader {
    /// Blocks the whole entry occupies.
    pub fn blocks(&self) -> u64 {
        (self.header_len + self.len + 1).div_ceil(BLOCK) as u64
    }
}

/// Parse an entry's header from the start of a block.
pub fn parse_header(block: &[u8]) -> Option<EntryHeader> {
    if !block.starts_with(ENTRY_TAG) {
        return None;
    }
    let end = block.iter().take(256).position(|&b| b == b'\n')?;
    let line = std::str::from_utf8(&block[ENTRY_TAG.len()..end]).ok()?;
    let mut f = line.split(' ');
    let len: usize = f.next()?.parse().ok()?;
    let sha256 = f.next()?.to_string();
    let run_id = f.next()?.to_string();
    let seq = f.next()?.parse().ok()?;
    let ok = f.next().is_none()
        && sha256.len() == 64
        && sha256.bytes().all(|b| b.is_ascii_hexdigit())
        && end + 1 + len < MAX_ENTRY;
    ok.then_some(EntryHeader { len, sha256, run_id, seq, header_len: end + 1 })
}

/// What a walk over the journal found.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Scan {
    /// (first block, header) of every entry whose header parses.
    pub entries: Vec<(u64, EntryHeader)>,
    /// Non-zero blocks that belong to no entry (a torn entry's stray blocks).
    pub stray_blocks: Vec<u64>,
    /// Where the next entry goes: past the last non-zero block.
    pub append_at: u64,
}

/// Walk the journal of `blocks` blocks, reading single blocks with
/// `read_block` (so /init reads only entry headers and the tail, not the
/// whole file). A read error stops the walk.
pub fn scan(blocks: u64, mut read_block: impl FnMut(u64, &mut [u8]) -> std::io::Result<()>) -> std::io::Result<Scan> {
    let mut scan = Scan { append_at: 1, ..Scan::default() };
    let mut buf = vec![0u8; BLOCK];
    let mut pos = 1;
    while pos < blocks && pos - scan.append_at < MAX_ENTRY_BLOCKS {
        read_block(pos, &mut buf)?;
        if let Some(h) = parse_header(&buf) {
            let end = (pos + h.blocks()).min(blocks);
            scan.entries.push((pos, h));
            scan.append_at = end;
            pos = end;
        } else if buf.iter().any(|&b| b != 0) {
            scan.stray_blocks.push(pos);
            pos += 1;
            scan.append_at = pos;
        } else {
            pos += 1;
        }
    }
    Ok(scan)
}

/// An entry read back and checked.
#[derive(Debug, PartialEq, Eq)]
pub enum Checked<'a> {
    Ok {
        header: EntryHeader,
        json: &'a [u8],
    },
    /// The header parsed but the record does not match its SHA-256 (torn by a
    /// reset while it was written, or corrupted on the stick).
    Corrupt {
        header: EntryHeader,
        why: String,
    },
}

/// Every entry of an in-memory journal, checked, in order; plus the stray
/// blocks. The JSON of an intact entry is borrowed from `journal`.
pub fn read_entries(journal: &[u8]) -> (Vec<(u64, Checked<'_>)>, Vec<u64>) {
    let blocks = (journal.len() / BLOCK) as u64;
    let scan = scan(blocks, |b, buf| {
        let start = b as usize * BLOCK;
        buf.copy_from_slice(&journal[start..start + BLOCK]);
        Ok(())
    })
    .expect("reading memory cannot fail");
    let entries = scan
        .entries
        .into_iter()
        .map(|(block, header)| {
            let start = block as usize * BLOCK + header.header_len;
            let checked = match journal.get(start..start + header.len) {
                None => Checked::Corrupt { header, why: "the entry runs past the end of the journal".into() },
                Some(json) if sha256_hex(json) == header.sha256 => Checked::Ok { header, json },
                Some(_) => Checked::Corrupt {
                    header,
                    why: "its SHA-256 does not match: torn by a reset while it was written, or damaged".into(),
                },
            };
            (block, checked)
        })
        .collect();
    (entries, scan.stray_blocks)
}

/// Is this the start of a journal file?
pub fn is_journal(data: &[u8]) -> bool {
    data.starts_with(MAGIC)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn journal(blocks: usize) -> Vec<u8> {
        let mut j = header_block();
        j.resize(blocks * BLOCK, 0);
        j
    }

    fn append(j: &mut [u8], run: &str, seq: u32, json: &[u8]) -> u64 {
        let at = scan((j.len() / BLOCK) as u64, |b, buf| {
            buf.copy_from_slice(&j[b as usize * BLOCK..(b as usize + 1) * BLOCK]);
            Ok(())
        })
        .unwrap()
        .append_at;
        let e = encode_entry(run, seq, json).unwrap();
        j[at as usize * BLOCK..at as usize * BLOCK + e.len()].copy_from_slice(&e);
        at
    }

    fn ok_records(j: &[u8]) -> Vec<Vec<u8>> {
        read_entries(j)
            .0
            .into_iter()
            .filter_map(|(_, c)| match c {
                Checked::Ok { json, .. } => Some(json.to_vec()),
                Checked::Corrupt { .. } => None,
            })
            .collect()
    }

    #[test]
    fn entries_append_and_read_back() {
        let mut j = journal(64);
        assert_eq!(append(&mut j, "r1", 0, b"{\"a\":1}"), 1);
        let big = vec![b'x'; 5000];
        assert_eq!(append(&mut j, "r1", 1, &big), 2);
        assert_eq!(append(&mut j, "r2", 0, b"{}"), 4, "the 5000-byte entry took two blocks");
        assert_eq!(ok_records(&j), vec![b"{\"a\":1}".to_vec(), big, b"{}".to_vec()]);
    }

    #[test]
    fn a_torn_entry_is_rejected_and_never_overwritten() {
        let mut j = journal(600);
        append(&mut j, "r1", 0, b"{\"first\":1}");
        // A 3-block entry of which only the last block reached the stick.
        let torn = encode_entry("r1", 1, &vec![b'y'; 10000]).unwrap();
        j[4 * BLOCK..5 * BLOCK].copy_from_slice(&torn[2 * BLOCK..]);
        let (_, stray) = read_entries(&j);
        assert_eq!(stray, vec![4]);
        // The next boot appends after the stray block, not over it.
        assert_eq!(append(&mut j, "r2", 0, b"{\"next\":1}"), 5);
        assert_eq!(ok_records(&j), vec![b"{\"first\":1}".to_vec(), b"{\"next\":1}".to_vec()]);

        // Header landed, payload did not: rejected by its SHA-256, and skipped whole.
        let mut j = journal(600);
        let e = encode_entry("r3", 0, &vec![b'z'; 9000]).unwrap();
        j[BLOCK..2 * BLOCK].copy_from_slice(&e[..BLOCK]);
        let (entries, _) = read_entries(&j);
        assert!(matches!(&entries[0].1, Checked::Corrupt { why, .. } if why.contains("SHA-256")));
        assert_eq!(append(&mut j, "r4", 0, b"{}"), 4);
    }

    #[test]
    fn a_flipped_byte_is_caught() {
        let mut j = journal(8);
        append(&mut j, "r", 0, b"{\"v\":12345}");
        let at = BLOCK + j[BLOCK..].iter().position(|&b| b == b'1').unwrap();
        j[at] = b'9';
        assert!(ok_records(&j).is_empty());
    }

    #[test]
    fn oversized_records_and_bad_headers_are_refused() {
        assert!(encode_entry("r", 0, &vec![b'a'; MAX_ENTRY]).is_err());
        assert_eq!(parse_header(b"@BMJ1 10 nothex r 0\n"), None);
        assert_eq!(parse_header(format!("@BMJ1 99999999999 {} r 0\n", "a".repeat(64)).as_bytes()), None);
        let h = parse_header(format!("@BMJ1 5 {} run-1 7\n", "a".repeat(64)).as_bytes()).unwrap();
        assert_eq!((h.len, h.seq, h.run_id.as_str(), h.blocks()), (5, 7, "run-1", 1));
    }

    #[test]
    fn the_scan_reads_headers_and_the_tail_not_every_block() {
        let mut j = journal(2000);
        for i in 0..10 {
            append(&mut j, "r", i, &vec![b'q'; 20000]); // 5 blocks each
        }
        let mut reads = 0;
        let s = scan(2000, |b, buf| {
            reads += 1;
            buf.copy_from_slice(&j[b as usize * BLOCK..(b as usize + 1) * BLOCK]);
            Ok(())
        })
        .unwrap();
        assert_eq!(s.append_at, 51);
        assert_eq!(reads, 10 + MAX_ENTRY_BLOCKS as usize);
    }
}
