//! Compressed data in kernel packages, read on the host: an RPM's payload
//! (gzip, bzip2, xz, lzma or zstd, found by its magic bytes, so a 2005
//! package without a payload-compressor tag reads the same as a 2024 one)
//! and compressed modules (`.ko.gz`, `.ko.xz`, `.ko.zst`) from an RPM or a
//! .deb — one code path for both. Modules are decompressed because
//! `init_module` takes raw ELF and old kernels cannot decompress.
//!
//! xz is read by lzma-rust2, a pure-Rust decoder that verifies every xz
//! check type (CRC32, CRC64 and SHA-256, the one rpm writes); lzma-rs,
//! used before, stopped at SHA-256. Pure Rust keeps xtask free of a C
//! library to install or link.

use crate::host::fs;
use crate::host::project::Result;
use std::io::Read;
use std::path::Path;

/// The suffixes of compressed modules, as kmod names them.
const MODULE_SUFFIXES: [&str; 3] = [".ko.gz", ".ko.xz", ".ko.zst"];

/// A compression bootmark reads, known by its magic bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    Gzip,
    Xz,
    Zstd,
    Bzip2,
    /// Legacy .lzma: its "magic" is only the usual properties byte and
    /// dictionary size, so it says little about unknown data.
    Lzma,
}

impl Format {
    /// The format `data` starts with, if any.
    pub fn of(data: &[u8]) -> Option<Format> {
        const MAGIC: [(&[u8], Format); 5] = [
            (&[0x1f, 0x8b], Format::Gzip),
            (&[0xfd, b'7', b'z', b'X', b'Z', 0], Format::Xz),
            (&[0x28, 0xb5, 0x2f, 0xfd], Format::Zstd),
            (b"BZh", Format::Bzip2),
            (&[0x5d, 0, 0], Format::Lzma),
        ];
        MAGIC.iter().find(|(m, _)| data.starts_with(m)).map(|(_, f)| *f)
    }

    /// Its tool's name: "gzip", "xz", …
    pub fn name(self) -> &'static str {
        match self {
            Format::Gzip => "gzip",
            Format::Xz => "xz",
            Format::Zstd => "zstd",
            Format::Bzip2 => "bzip2",
            Format::Lzma => "lzma",
        }
    }
}

/// `data` decompressed, its format found by its magic bytes (`what` names
/// it in errors). Uncompressed cpio passes through.
pub fn decompress(data: &[u8], what: &str) -> Result<Vec<u8>> {
    let mut out = Vec::new();
    let err = |e: std::io::Error| format!("{what}: cannot decompress: {e}");
    match Format::of(data) {
        Some(Format::Gzip) => {
            flate2::read::MultiGzDecoder::new(data).read_to_end(&mut out).map_err(err)?;
        }
        // Concatenated streams are valid xz (pixz, parallel xz).
        Some(Format::Xz) => {
            lzma_rust2::XzReader::new(data, true).read_to_end(&mut out).map_err(err)?;
        }
        Some(Format::Zstd) => {
            ruzstd::decoding::StreamingDecoder::new(data)
                .map_err(|e| format!("{what}: cannot decompress: {e}"))?
                .read_to_end(&mut out)
                .map_err(err)?;
        }
        Some(Format::Bzip2) => {
            bzip2_rs::DecoderReader::new(data).read_to_end(&mut out).map_err(err)?;
        }
        Some(Format::Lzma) => {
            lzma_rust2::LzmaReader::new_mem_limit(data, u32::MAX, None)
                .map_err(err)?
                .read_to_end(&mut out)
                .map_err(err)?;
        }
        None if data.starts_with(b"0707") => out = data.to_vec(),
        None => {
            return Err(format!("{what}: unknown compression (first bytes {:02x?})", &data[..data.len().min(6)]));
        }
    }
    Ok(out)
}

/// A module file's name and bytes as the image needs them: `x.ko.xz` →
/// (`x.ko`, raw ELF); anything else as it is.
pub fn module(name: &str, data: &[u8]) -> Result<(String, Vec<u8>)> {
    for suffix in MODULE_SUFFIXES {
        if let Some(stem) = name.strip_suffix(suffix) {
            return Ok((format!("{stem}.ko"), decompress(data, name)?));
        }
    }
    Ok((name.to_string(), data.to_vec()))
}

/// Decompress every compressed module under `tree` (a `lib/modules/R`
/// tree unpacked from a package) in place: `x.ko.xz` becomes `x.ko` and
/// the compressed file goes. Returns how many there were.
pub fn decompress_module_tree(tree: &Path) -> Result<usize> {
    let mut count = 0;
    let mut stack = vec![tree.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for e in fs::read_dir(&dir)?.flatten() {
            let path = e.path();
            let name = e.file_name().to_string_lossy().into_owned();
            if e.file_type().is_ok_and(|t| t.is_dir()) {
                stack.push(path);
            } else if MODULE_SUFFIXES.iter().any(|s| name.ends_with(s)) {
                let (plain, bytes) = module(&path.display().to_string(), &fs::read(&path)?)?;
                fs::write(&plain, bytes)?;
                fs::remove_file(&path)?;
                count += 1;
            }
        }
    }
    Ok(count)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::host::process::{cmd, run, shell};

    /// `data` compressed by a real tool (`xz --check=sha256`, `zstd`, `gzip`):
    /// what packages hold, not what a Rust encoder writes.
    fn compress_with(tool: &[&str], data: &[u8], dir: &Path) -> Vec<u8> {
        let file = dir.join(format!("plain-{}", tool[0]));
        std::fs::write(&file, data).unwrap();
        let (sh, program, options) = (shell().unwrap(), tool[0], &tool[1..]);
        run(cmd!(sh, "{program} {options...} -k -f {file}")).unwrap();
        let ext = match tool[0] {
            "xz" => "xz",
            "zstd" => "zst",
            _ => "gz",
        };
        std::fs::read(file.with_file_name(format!("plain-{}.{ext}", tool[0]))).unwrap()
    }

    #[test]
    fn a_module_tree_from_a_deb_is_decompressed_in_place_whatever_the_xz_check() {
        let dir = std::env::temp_dir().join(format!("bootmark-compressed-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let tree = dir.join("usr/lib/modules/6.12.117+deb13-amd64");
        std::fs::create_dir_all(tree.join("kernel/drivers/nvme/host")).unwrap();
        std::fs::create_dir_all(tree.join("kernel/fs/ext4")).unwrap();
        let elf = b"\x7fELF fake module with some text to compress, compress, compress".repeat(50);
        let put = |rel: &str, tool: &[&str]| {
            std::fs::write(tree.join(rel), compress_with(tool, &elf, &dir)).unwrap();
        };
        put("kernel/drivers/nvme/host/nvme.ko.xz", &["xz", "--check=sha256"]);
        put("kernel/drivers/nvme/host/nvme-core.ko.xz", &["xz", "--check=crc32"]);
        put("kernel/fs/ext4/ext4.ko.zst", &["zstd", "-q"]);
        put("kernel/fs/ext4/jbd2.ko.gz", &["gzip"]);
        std::fs::write(tree.join("kernel/fs/ext4/mbcache.ko"), &elf).unwrap();
        assert_eq!(decompress_module_tree(&tree).unwrap(), 4);
        for m in
            ["drivers/nvme/host/nvme", "drivers/nvme/host/nvme-core", "fs/ext4/ext4", "fs/ext4/jbd2", "fs/ext4/mbcache"]
        {
            assert_eq!(std::fs::read(tree.join(format!("kernel/{m}.ko"))).unwrap(), elf, "{m}.ko");
        }
        let left: Vec<_> = walk(&tree).into_iter().filter(|p| !p.ends_with(".ko")).collect();
        assert!(left.is_empty(), "compressed files left: {left:?}");
        // A damaged module is an error naming it, not a half-written tree.
        let mut bad = compress_with(&["xz", "--check=sha256"], &elf, &dir);
        let at = bad.len() - 40;
        bad[at] ^= 0xff;
        std::fs::write(tree.join("kernel/fs/ext4/crc16.ko.xz"), bad).unwrap();
        let e = decompress_module_tree(&tree).unwrap_err();
        assert!(e.contains("crc16.ko.xz: cannot decompress"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    fn walk(dir: &Path) -> Vec<String> {
        let mut out = Vec::new();
        for e in std::fs::read_dir(dir).unwrap().flatten() {
            if e.path().is_dir() {
                out.extend(walk(&e.path()));
            } else {
                out.push(e.path().display().to_string());
            }
        }
        out
    }

    #[test]
    fn unknown_data_is_named_with_its_first_bytes() {
        let e = decompress(b"PK\x03\x04zip", "x payload").unwrap_err();
        assert!(e.contains("x payload: unknown compression") && e.contains("50, 4b"), "{e}");
    }
}
