//! A newc ("070701") cpio writer for initramfs archives, as the kernel reads
//! them (Documentation/driver-api/early-userspace/buffer-format.rst):
//! 13 hex fields, name + NUL padded to 4, data padded to 4, `TRAILER!!!`.
//!
//! Reproducible by construction: entries sorted by path, parents added
//! before children, fixed uid/gid (0) and mtime, inode numbers in order,
//! nlink 1, device nodes as records (no root needed to build).

use std::collections::BTreeMap;

#[derive(Clone, Debug, PartialEq)]
enum Kind {
    Dir,
    File(Vec<u8>),
    CharDev(u32, u32),
}

#[derive(Clone, Debug, PartialEq)]
struct Entry {
    kind: Kind,
    perm: u32,
}

/// An archive being built; paths are relative ("init", "dev/console").
#[derive(Default)]
pub struct Archive {
    entries: BTreeMap<String, Entry>,
    mtime: u32,
}

fn clean(path: &str) -> String {
    path.trim_start_matches('/').trim_end_matches('/').to_string()
}

impl Archive {
    pub fn new(mtime: u32) -> Archive {
        Archive { entries: BTreeMap::new(), mtime }
    }

    fn add(&mut self, path: &str, entry: Entry) {
        let path = clean(path);
        // Parents first: every ancestor becomes a directory entry.
        let mut parent = String::new();
        for part in path.split('/').take(path.split('/').count() - 1) {
            if !parent.is_empty() {
                parent.push('/');
            }
            parent.push_str(part);
            self.entries.entry(parent.clone()).or_insert(Entry { kind: Kind::Dir, perm: 0o755 });
        }
        self.entries.insert(path, entry);
    }

    pub fn dir(&mut self, path: &str) {
        self.add(path, Entry { kind: Kind::Dir, perm: 0o755 });
    }

    pub fn file(&mut self, path: &str, data: Vec<u8>, perm: u32) {
        self.add(path, Entry { kind: Kind::File(data), perm });
    }

    pub fn char_dev(&mut self, path: &str, major: u32, minor: u32, perm: u32) {
        self.add(path, Entry { kind: Kind::CharDev(major, minor), perm });
    }

    /// The archive bytes. BTreeMap order puts "a" before "a/b": parents first.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::new();
        for (ino, (path, e)) in self.entries.iter().enumerate() {
            let (mode, data, rdev): (u32, &[u8], (u32, u32)) = match &e.kind {
                Kind::Dir => (0o040000 | e.perm, &[], (0, 0)),
                Kind::File(d) => (0o100000 | e.perm, d, (0, 0)),
                Kind::CharDev(ma, mi) => (0o020000 | e.perm, &[], (*ma, *mi)),
            };
            write_record(&mut out, path, ino as u32 + 1, mode, self.mtime, data, rdev);
        }
        write_record(&mut out, "TRAILER!!!", 0, 0, 0, &[], (0, 0));
        out
    }
}

fn pad4(out: &mut Vec<u8>) {
    while !out.len().is_multiple_of(4) {
        out.push(0);
    }
}

fn write_record(out: &mut Vec<u8>, name: &str, ino: u32, mode: u32, mtime: u32, data: &[u8], rdev: (u32, u32)) {
    let nlink = 1;
    let fields = [ino, mode, 0, 0, nlink, mtime, data.len() as u32, 0, 0, rdev.0, rdev.1, name.len() as u32 + 1, 0];
    out.extend_from_slice(b"070701");
    for f in fields {
        out.extend_from_slice(format!("{f:08X}").as_bytes());
    }
    out.extend_from_slice(name.as_bytes());
    out.push(0);
    pad4(out);
    out.extend_from_slice(data);
    pad4(out);
}

/// gzip with a fixed header (mtime 0, no name): the same bytes in, the same bytes out.
/// gzip because 2.6 kernels accept nothing else for an initramfs.
/// The smallest gzip stream we can make, for the common initramfs and its
/// 1 MiB budget: zopfli, which every gzip reader (the 2.6.9 kernel's
/// inflate too) decodes, 3.2 % smaller than `gzip -9` on /init (1,012,653
/// bytes against 1,046,470, 2026-12-04) at 5 iterations, in about 5 s.
/// Cached by content in target/cache/zopfli/, since most images of a run
/// share their common archive; the output depends on the input alone.
pub fn gzip_smallest(data: &[u8]) -> crate::host::project::Result<Vec<u8>> {
    use sha2::{Digest, Sha256};
    let key: String = Sha256::digest(data).iter().map(|b| format!("{b:02x}")).collect();
    let dir = crate::host::project::project_root().join("target/cache/zopfli");
    let cached = dir.join(format!("{key}.gz"));
    if let Ok(bytes) = std::fs::read(&cached) {
        return Ok(bytes);
    }
    let options = zopfli::Options { iteration_count: std::num::NonZeroU64::new(5).unwrap(), ..Default::default() };
    let mut out = Vec::new();
    zopfli::compress(options, zopfli::Format::Gzip, data, &mut out).map_err(|e| format!("zopfli: {e}"))?;
    // Written aside and renamed: two lanes may make the same archive at once.
    crate::host::fs::create_dir_all(&dir)?;
    let tmp = dir.join(format!("{key}.{}.tmp", std::process::id()));
    if std::fs::write(&tmp, &out).is_ok() {
        let _ = std::fs::rename(&tmp, &cached);
    }
    Ok(out)
}

pub fn gzip(data: &[u8]) -> Vec<u8> {
    use std::io::Write;
    let mut enc = flate2::GzBuilder::new().mtime(0).write(Vec::new(), flate2::Compression::best());
    enc.write_all(data).expect("writing to memory");
    enc.finish().expect("writing to memory")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::host::process::{Streams, shell, shell_in};
    use std::process::Stdio;

    fn sample() -> Archive {
        let mut a = Archive::new(1_700_000_000);
        a.file("init", b"#!/bin/true\n".to_vec(), 0o755);
        a.char_dev("dev/console", 5, 1, 0o600);
        a.char_dev("dev/null", 1, 3, 0o666);
        a.file("etc/bootmark/plans/quick.json", b"{}".to_vec(), 0o644);
        a.file("/lib/modules/6.1/kernel/a.ko", vec![7u8; 1001], 0o644);
        a
    }

    fn gnu_cpio(args: &[&str], input: &[u8], dir: Option<&std::path::Path>) -> String {
        use std::io::Write;
        let sh = match dir {
            Some(d) => shell_in(d).unwrap(),
            None => shell().unwrap(),
        };
        let piped = Streams::default().stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped());
        let mut child = crate::host::process::spawn(sh.cmd("cpio").args(args), piped)
            .expect("GNU cpio is needed for this test (apt-get install cpio)");
        child.stdin.take().unwrap().write_all(input).unwrap();
        let out = child.wait_with_output().unwrap();
        assert!(out.status.success(), "cpio {args:?}: {}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    #[test]
    fn gnu_cpio_lists_every_entry_with_its_type_and_parents_first() {
        let bytes = sample().to_bytes();
        let listing = gnu_cpio(&["-it", "--quiet"], &bytes, None);
        let names: Vec<&str> = listing.lines().collect();
        assert_eq!(
            names,
            [
                "dev",
                "dev/console",
                "dev/null",
                "etc",
                "etc/bootmark",
                "etc/bootmark/plans",
                "etc/bootmark/plans/quick.json",
                "init",
                "lib",
                "lib/modules",
                "lib/modules/6.1",
                "lib/modules/6.1/kernel",
                "lib/modules/6.1/kernel/a.ko"
            ]
        );
        let long = gnu_cpio(&["-itv", "--quiet"], &bytes, None);
        let line = |name: &str| long.lines().find(|l| l.ends_with(name)).unwrap().to_string();
        assert!(line("dev/console").starts_with("crw-------"), "{}", line("dev/console"));
        assert!(line("dev/console").contains("5,   1"), "{}", line("dev/console"));
        assert!(line(" init").starts_with("-rwxr-xr-x"));
        assert!(line("a.ko").contains("1001"));
    }

    #[test]
    fn gnu_cpio_extracts_the_same_bytes() {
        let dir = std::env::temp_dir().join(format!("bootmark-cpio-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let mut a = Archive::new(0);
        a.file("x/y.bin", (0..=255u8).cycle().take(5000).collect(), 0o644);
        gnu_cpio(&["-id", "--quiet", "--no-absolute-filenames"], &a.to_bytes(), Some(&dir));
        assert_eq!(std::fs::read(dir.join("x/y.bin")).unwrap(), (0..=255u8).cycle().take(5000).collect::<Vec<_>>());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn same_input_same_bytes_and_gzip_is_deterministic() {
        assert_eq!(sample().to_bytes(), sample().to_bytes());
        let g1 = gzip(&sample().to_bytes());
        assert_eq!(g1, gzip(&sample().to_bytes()));
        assert_eq!(&g1[..4], &[0x1f, 0x8b, 8, 0], "gzip, deflate, no name");
        assert_eq!(&g1[4..8], &[0, 0, 0, 0], "mtime 0");
    }

    #[test]
    fn records_are_aligned() {
        let bytes = sample().to_bytes();
        assert_eq!(bytes.len() % 4, 0);
        assert!(bytes.ends_with(b"TRAILER!!!\0\0\0\0") || bytes.windows(10).any(|w| w == b"TRAILER!!!"));
    }
}
