//! Results from the stick: its journal (`bootmark/journal.bin`, see
//! `journal`), found under a mounted stick, given as a file, or read from a
//! whole stick image through its FAT partition (no mounting, no root); and
//! the per-run `.jsonl` files of sticks written by bootmark before the
//! journal (`bootmark/results/`), or of `bootmark run --out`.

use super::{Collector, Problem};
use crate::schema::journal;
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::path::Path;

pub fn collect_dir(path: &Path, c: &mut Collector) -> io::Result<()> {
    if path.is_file() {
        let name = path.display().to_string();
        let mut f = std::fs::File::open(path)?;
        let mut head = Vec::new();
        (&mut f).take(4096).read_to_end(&mut head)?;
        if journal::is_journal(&head) {
            return collect_journal_file(&f, &name, c);
        }
        // JSON lines may be a fleet's worth: streamed, never read whole.
        f.seek(SeekFrom::Start(0))?;
        return collect_lines(io::BufReader::with_capacity(1 << 20, f), &name, c);
    }
    let mut found = false;
    let journal_file = path.join(journal::PATH);
    if journal_file.is_file() {
        collect_journal_file(&std::fs::File::open(&journal_file)?, &journal_file.display().to_string(), c)?;
        found = true;
    }
    let dirs = [path.join("bootmark/results"), path.join("results"), path.to_path_buf()];
    if let Some(dir) = dirs.into_iter().find(|d| d.is_dir()) {
        let mut files: Vec<_> = std::fs::read_dir(&dir)?
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|e| e == "jsonl"))
            .collect();
        files.sort();
        for f in files {
            collect_lines(io::BufReader::new(std::fs::File::open(&f)?), &f.display().to_string(), c)?;
            found = true;
        }
    }
    if !found {
        return Err(io::Error::other(format!("no {} and no .jsonl results here", journal::PATH)));
    }
    Ok(())
}

/// Every entry of a journal in memory (read from a stick image's FAT).
pub fn collect_journal(data: &[u8], file: &str, c: &mut Collector) -> io::Result<()> {
    let read_at = |at: u64, buf: &mut [u8]| {
        let at = at as usize;
        data.get(at..at + buf.len()).map(|src| buf.copy_from_slice(src)).ok_or_else(|| io::Error::other("past the end"))
    };
    collect_journal_at(data.len() as u64, read_at, file, c)
}

/// Every entry of a journal file, read block by block where it is: memory
/// holds one entry, whatever the file's size (a 2 GiB file that starts
/// like a journal is walked, not loaded).
fn collect_journal_file(f: &std::fs::File, file: &str, c: &mut Collector) -> io::Result<()> {
    use std::os::unix::fs::FileExt;
    let len = f.metadata()?.len();
    collect_journal_at(len, |at, buf| f.read_exact_at(buf, at), file, c)
}

/// Every entry of a journal of `len` bytes read with `read_at`: intact
/// ones accepted, torn or damaged ones and stray blocks reported.
fn collect_journal_at(
    len: u64,
    mut read_at: impl FnMut(u64, &mut [u8]) -> io::Result<()>,
    file: &str,
    c: &mut Collector,
) -> io::Result<()> {
    let block = journal::BLOCK as u64;
    if len < 2 * block || !len.is_multiple_of(block) {
        c.problems.push(problem(file, None, format!("the journal is truncated ({len} bytes)")));
    }
    let blocks = len / block;
    let scan = journal::scan(blocks, |b, buf| read_at(b * block, buf))?;
    for (at, header) in scan.entries {
        let start = at * block + header.header_len as u64;
        let mut json = vec![0u8; header.len];
        let why = if start + header.len as u64 > blocks * block {
            Some("the entry runs past the end of the journal")
        } else {
            read_at(start, &mut json)?;
            (crate::schema::framing::sha256_hex(&json) != header.sha256)
                .then_some("its SHA-256 does not match: torn by a reset while it was written, or damaged")
        };
        match why {
            None => c.accept_bytes(&json, file, None),
            Some(why) => c.problems.push(Problem {
                file: file.into(),
                line: None,
                run_id: Some(header.run_id),
                seq: Some(header.seq),
                why: format!("journal entry at block {at} rejected: {why}"),
            }),
        }
    }
    let stray = scan.stray_blocks;
    if let (Some(first), Some(last)) = (stray.first(), stray.last()) {
        c.problems.push(problem(
            file,
            None,
            format!(
                "{} journal blocks ({first}…{last}) belong to no whole entry: an entry torn by a reset while it was written",
                stray.len()
            ),
        ));
    }
    Ok(())
}

fn problem(file: &str, line: Option<u64>, why: String) -> Problem {
    Problem { file: file.into(), line, run_id: None, seq: None, why }
}

/// JSON lines; a line that is not a known document is a problem, never
/// accepted. An empty file is a problem too: a run that wrote nothing.
pub fn collect_text(data: &[u8], file: &str, c: &mut Collector) -> io::Result<()> {
    collect_lines(data, file, c)
}

/// The same from a reader, one line at a time (a file, or records piped in).
pub fn collect_lines(input: impl io::BufRead, file: &str, c: &mut Collector) -> io::Result<()> {
    // `bootmark run --out` writes such files on a workstation: records with
    // no run record, so their completeness cannot be judged.
    let was = std::mem::replace(&mut c.from_boot, false);
    let read = collect_lines_of(input, file, c);
    c.from_boot = was;
    read
}

/// The longest line read as a record: a record with a long run's timeline
/// is a few hundred KiB; a longer "line" (a sparse file's zeros) is skipped.
pub const MAX_RECORD_LINE: u64 = 16 << 20;

fn collect_lines_of(mut input: impl io::BufRead, file: &str, c: &mut Collector) -> io::Result<()> {
    use io::BufRead;
    let mut line = Vec::new();
    let (mut number, mut bytes, mut last) = (0u64, 0u64, b'\n');
    loop {
        line.clear();
        let n = (&mut input).take(MAX_RECORD_LINE).read_until(b'\n', &mut line)?;
        if n == 0 {
            break;
        }
        number += 1;
        bytes += n as u64;
        last = line[n - 1];
        if last != b'\n' && n as u64 == MAX_RECORD_LINE {
            let skipped = skip_line(&mut input)?;
            bytes += skipped;
            last = b'\n';
            let why = format!(
                "line over {} MiB ({} bytes): not a record, skipped",
                MAX_RECORD_LINE >> 20,
                n as u64 + skipped
            );
            c.problems.push(problem(file, Some(number), why));
            continue;
        }
        let text = line.strip_suffix(b"\n").unwrap_or(&line);
        if !text.iter().all(u8::is_ascii_whitespace) {
            c.accept_bytes(text, file, Some(number));
        }
    }
    if bytes == 0 {
        c.problems.push(problem(file, None, "empty results file: the run wrote nothing here".into()));
    } else if last != b'\n' {
        c.problems.push(problem(file, None, "the file does not end with a newline: its last line may be cut".into()));
    }
    Ok(())
}

/// Consume up to and including the next line end; returns how many bytes.
fn skip_line(input: &mut impl io::BufRead) -> io::Result<u64> {
    let mut skipped = 0u64;
    loop {
        let buf = input.fill_buf()?;
        if buf.is_empty() {
            return Ok(skipped);
        }
        match memchr::memchr(b'\n', buf) {
            Some(i) => {
                input.consume(i + 1);
                return Ok(skipped + i as u64 + 1);
            }
            None => {
                let n = buf.len();
                input.consume(n);
                skipped += n as u64;
            }
        }
    }
}

/// A read-only window onto one partition of an image file.
struct Partition {
    file: std::fs::File,
    start: u64,
    pos: u64,
}

impl Read for Partition {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.file.seek(SeekFrom::Start(self.start + self.pos))?;
        let n = self.file.read(buf)?;
        self.pos += n as u64;
        Ok(n)
    }
}

impl Seek for Partition {
    fn seek(&mut self, to: SeekFrom) -> io::Result<u64> {
        self.pos = match to {
            SeekFrom::Start(p) => p,
            SeekFrom::Current(d) => {
                self.pos.checked_add_signed(d).ok_or_else(|| io::Error::other("seek before start"))?
            }
            SeekFrom::End(_) => return Err(io::Error::other("seek from end is not supported")),
        };
        Ok(self.pos)
    }
}

/// The image is the user's evidence: never written.
impl Write for Partition {
    fn write(&mut self, _: &[u8]) -> io::Result<usize> {
        Err(io::Error::new(io::ErrorKind::PermissionDenied, "stick images are read only"))
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// Where the FAT filesystem starts: the first FAT-type MBR partition, or 0
/// for a partition image (a FAT boot sector at the start). Stick images
/// have 512-byte sectors.
fn fat_offset(head: &[u8; 512]) -> Option<u64> {
    let fat_boot_sector = &head[0x52..0x57] == b"FAT32" || &head[0x36..0x39] == b"FAT";
    if fat_boot_sector {
        return Some(0);
    }
    let (_, parts) = crate::partition_table::mbr(head)?;
    let fat = parts.iter().find(|p| matches!(p.kind, 0x01 | 0x04 | 0x06 | 0x0b | 0x0c | 0x0e))?;
    Some(fat.start_sector * 512)
}

pub fn collect_image(path: &Path, c: &mut Collector) -> io::Result<()> {
    let mut file = std::fs::File::open(path)?;
    let mut head = [0u8; 512];
    file.read_exact(&mut head)?;
    let start = fat_offset(&head).ok_or_else(|| io::Error::other("no FAT partition in this image"))?;
    let fs = fatfs::FileSystem::new(Partition { file, start, pos: 0 }, fatfs::FsOptions::new())?;
    let root = fs.root_dir();
    let mut found = false;
    if let Ok(mut f) = root.open_file(journal::PATH) {
        let mut data = Vec::new();
        f.read_to_end(&mut data)?;
        collect_journal(&data, &format!("{}::{}", path.display(), journal::PATH), c)?;
        found = true;
    }
    if let Ok(dir) = root.open_dir("bootmark/results") {
        let mut names = Vec::new();
        for e in dir.iter() {
            let e = e?;
            if e.is_file() && e.file_name().ends_with(".jsonl") && !e.file_name().starts_with('.') {
                names.push(e.file_name());
            }
        }
        names.sort();
        for name in names {
            let mut data = Vec::new();
            dir.open_file(&name)?.read_to_end(&mut data)?;
            collect_text(&data, &format!("{}::bootmark/results/{name}", path.display()), c)?;
            found = true;
        }
    }
    if !found {
        return Err(io::Error::other(format!("the image has no {} and no bootmark/results files", journal::PATH)));
    }
    Ok(())
}
