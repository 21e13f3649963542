//! The results stick: records appended to the journal file
//! (`bootmark/journal.bin`, see `journal`) by writing its blocks on the
//! partition directly, so that no filesystem metadata changes during a run
//! and a reset at any moment tears at most the entry being written.
//!
//! Opening asks the kernel where each block of the file lies (FIGETBSZ +
//! FIBMAP, available since Linux 2.2 on vfat and ext*), checks the mapping
//! by reading the header both through the filesystem and through the
//! partition, and finds the append point. Each entry is written with one
//! pwrite per extent, then fdatasync on the partition (the kernel sends the
//! device a cache flush where it has a write cache).

use super::Sink;
use crate::schema::journal::{self, BLOCK};
use crate::schema::record::Record;
use std::fs::{File, OpenOptions};
use std::io::{self, Read, Write};
use std::os::unix::fs::{FileExt, FileTypeExt};
use std::os::unix::io::AsRawFd;
use std::path::{Path, PathBuf};

const FIBMAP: libc::c_ulong = 1;
const FIGETBSZ: libc::c_ulong = 2;

/// A run of the journal file that is contiguous on the partition.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Extent {
    file_off: u64,
    dev_off: u64,
    len: u64,
}

pub struct Stick {
    dev: File,
    extents: Vec<Extent>,
    blocks: u64,
    next_block: u64,
    path: PathBuf,
    /// The journal did not exist and was made by this boot (before any record).
    pub created: bool,
    /// Entries and stray blocks found when it was opened.
    pub found_entries: usize,
    pub found_stray_blocks: usize,
    /// Entries appended by this boot, and the time they took (write + flush).
    pub appended: u32,
    pub append_ns: u64,
}

impl Stick {
    /// Open the journal under `stick_root` (the mounted results partition),
    /// whose block device is `partition` of `partition_bytes` bytes. A stick
    /// without a journal (made by hand, or by an older bootmark) gets one,
    /// zero-filled, before any record is written.
    pub fn open(stick_root: &Path, partition: &Path, partition_bytes: u64) -> io::Result<Stick> {
        let path = stick_root.join(journal::PATH);
        let created = !path.exists();
        if created {
            create(&path, journal::DEFAULT_SIZE / 2)?;
        }
        let file = File::open(&path)?;
        let size = file.metadata()?.len();
        let blocks = size / BLOCK as u64;
        let mut head = vec![0u8; BLOCK];
        (&file).read_exact(&mut head).map_err(|e| io::Error::other(format!("{}: {e}", path.display())))?;
        if !journal::is_journal(&head) || blocks < 2 {
            return Err(io::Error::other(format!("{} is not a bootmark journal", path.display())));
        }
        let extents = map_blocks(&file, size)?;
        let dev = OpenOptions::new().read(true).write(true).open(partition)?;
        if !dev.metadata()?.file_type().is_block_device() {
            return Err(io::Error::other(format!("{} is not a block device", partition.display())));
        }
        if let Some(e) = extents.iter().find(|e| e.dev_off.saturating_add(e.len) > partition_bytes) {
            return Err(io::Error::other(format!(
                "the kernel maps the journal past the end of {} (byte {}): not writing",
                partition.display(),
                e.dev_off + e.len
            )));
        }
        let mut stick = Stick {
            dev,
            extents,
            blocks,
            next_block: 1,
            path,
            created,
            found_entries: 0,
            found_stray_blocks: 0,
            appended: 0,
            append_ns: 0,
        };
        let mut through_dev = vec![0u8; BLOCK];
        stick.read_block(0, &mut through_dev)?;
        if through_dev != head {
            return Err(io::Error::other(format!(
                "the journal's first block reads differently through {} than through the filesystem: not writing",
                partition.display()
            )));
        }
        let scan = journal::scan(blocks, |b, buf| stick.read_block(b, buf))?;
        stick.next_block = scan.append_at;
        stick.found_entries = scan.entries.len();
        stick.found_stray_blocks = scan.stray_blocks.len();
        Ok(stick)
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Block where the next entry goes, and the journal's size in blocks.
    pub fn position(&self) -> (u64, u64) {
        (self.next_block, self.blocks)
    }

    /// Append one JSON document (a record or the run record), durably.
    pub fn append(&mut self, run_id: &str, seq: u32, json: &[u8]) -> io::Result<()> {
        let entry = journal::encode_entry(run_id, seq, json).map_err(io::Error::other)?;
        let needed = (entry.len() / BLOCK) as u64;
        if self.next_block + needed > self.blocks {
            return Err(io::Error::other(format!(
                "the journal on the stick is full ({} of {} blocks used): copy it off and rebuild the stick",
                self.next_block, self.blocks
            )));
        }
        let started = crate::image_side::measure::clock::mono_ns();
        let mut off = self.next_block * BLOCK as u64;
        for piece in self.pieces(off, entry.len() as u64) {
            let (dev_off, len) = piece?;
            let start = (off - self.next_block * BLOCK as u64) as usize;
            self.dev.write_all_at(&entry[start..start + len as usize], dev_off)?;
            off += len;
        }
        self.dev.sync_data()?;
        self.next_block += needed;
        self.appended += 1;
        self.append_ns += crate::image_side::measure::clock::mono_ns().saturating_sub(started);
        Ok(())
    }

    fn read_block(&self, block: u64, buf: &mut [u8]) -> io::Result<()> {
        let mut done = 0;
        for piece in self.pieces(block * BLOCK as u64, BLOCK as u64) {
            let (dev_off, len) = piece?;
            self.dev.read_exact_at(&mut buf[done..done + len as usize], dev_off)?;
            done += len as usize;
        }
        Ok(())
    }

    /// The partition ranges (offset, length) holding file bytes [off, off+len).
    fn pieces(&self, off: u64, len: u64) -> impl Iterator<Item = io::Result<(u64, u64)>> + '_ {
        let mut pos = off;
        let end = off + len;
        std::iter::from_fn(move || {
            if pos >= end {
                return None;
            }
            let Some(e) = self.extents.iter().find(|e| e.file_off <= pos && pos < e.file_off + e.len) else {
                pos = end;
                return Some(Err(io::Error::other("journal offset outside the mapped file")));
            };
            let n = (e.file_off + e.len).min(end) - pos;
            let piece = (e.dev_off + (pos - e.file_off), n);
            pos += n;
            Some(Ok(piece))
        })
    }
}

impl Sink for Stick {
    fn write(&mut self, record: &Record) -> io::Result<()> {
        self.append(&record.run_id, record.seq, &serde_json::to_vec(record)?)
    }
}

/// Make a journal file: header, zeros, all durable (file, its directory).
fn create(path: &Path, size: u64) -> io::Result<()> {
    let dir = path.parent().unwrap_or(Path::new("/"));
    std::fs::create_dir_all(dir)?;
    let mut f = OpenOptions::new().write(true).create_new(true).open(path)?;
    f.write_all(&journal::header_block())?;
    let zeros = vec![0u8; 1 << 20];
    let mut left = size - BLOCK as u64;
    while left > 0 {
        let n = left.min(zeros.len() as u64) as usize;
        f.write_all(&zeros[..n])?;
        left -= n as u64;
    }
    f.sync_all()?;
    File::open(dir)?.sync_all()
}

/// Ask the kernel where every filesystem block of `file` lies on its
/// device, coalesced into extents. A hole (block 0) is an error: writing
/// there would hit whatever the filesystem puts at block 0.
fn map_blocks(file: &File, size: u64) -> io::Result<Vec<Extent>> {
    let fd = file.as_raw_fd();
    let mut bsz: libc::c_int = 0;
    // SAFETY: FIGETBSZ writes one int to the pointer given.
    if unsafe { libc::ioctl(fd, FIGETBSZ as _, &mut bsz) } != 0 || bsz <= 0 {
        return Err(io::Error::other(format!("FIGETBSZ on the journal: {}", io::Error::last_os_error())));
    }
    let bsz = bsz as u64;
    let mut extents: Vec<Extent> = Vec::new();
    for i in 0..size.div_ceil(bsz) {
        let mut b: libc::c_int = i as libc::c_int;
        // SAFETY: FIBMAP reads and writes one int at the pointer given.
        if unsafe { libc::ioctl(fd, FIBMAP as _, &mut b) } != 0 {
            return Err(io::Error::other(format!("FIBMAP on the journal: {}", io::Error::last_os_error())));
        }
        if b <= 0 {
            return Err(io::Error::other(format!("the journal has a hole at block {i}: not writing")));
        }
        let (file_off, dev_off) = (i * bsz, b as u64 * bsz);
        match extents.last_mut() {
            Some(e) if e.file_off + e.len == file_off && e.dev_off + e.len == dev_off => e.len += bsz,
            _ => extents.push(Extent { file_off, dev_off, len: bsz }),
        }
    }
    if let Some(last) = extents.last_mut() {
        last.len = last.len.min(size - last.file_off);
    }
    Ok(extents)
}
