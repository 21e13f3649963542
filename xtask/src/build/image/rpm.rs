//! Kernel RPMs (SLES, RHEL/CentOS, Fedora), read in Rust: the 96-byte lead,
//! the signature header (padded to 8 bytes), the main header (for name,
//! version, release, arch) and the payload, a newc cpio archive compressed
//! with gzip, bzip2, xz, lzma or zstd (`compressed` reads them).
//! Its own reader because a 2005 package (rpm 4.3, MD5 digests, no payload
//! digest) is what a CentOS 4 or SLES 9 kernel is, and crates aimed at
//! current RPMs need tags those packages do not have.
//!
//! Only `boot/` and `lib/modules/` (or `usr/lib/modules/`) are unpacked.
//! Compressed modules (`.ko.gz`, `.ko.xz`, `.ko.zst`) are decompressed on
//! the host, as a .deb's are (`compressed::module`).

use super::compressed;
use crate::build::arch::Arch;
use crate::host::fs;
use crate::host::project::Result;
use std::path::{Path, PathBuf};

const LEAD_MAGIC: [u8; 4] = [0xed, 0xab, 0xee, 0xdb];
const HEADER_MAGIC: [u8; 3] = [0x8e, 0xad, 0xe8];
const TAG_NAME: u32 = 1000;
const TAG_VERSION: u32 = 1001;
const TAG_RELEASE: u32 = 1002;
const TAG_ARCH: u32 = 1022;

/// What a kernel RPM holds, unpacked.
#[derive(Debug)]
pub struct RpmKernel {
    pub name: String,
    /// version-release, as rpm -q prints it.
    pub version: String,
    /// None when the package does not say.
    pub arch: Option<Arch>,
    pub vmlinuz: PathBuf,
    pub modules: Option<PathBuf>,
    pub modules_decompressed: usize,
}

/// A header structure: (tag → string value) for the string tags we read,
/// and its length in bytes.
fn read_header(data: &[u8], at: usize, what: &str) -> Result<(Vec<(u32, String)>, usize)> {
    let h = data.get(at..at + 16).ok_or_else(|| format!("the {what} header is cut off"))?;
    if h[..3] != HEADER_MAGIC {
        return Err(format!("no {what} header where one must be (byte {at}): not an RPM, or a damaged one"));
    }
    let be = |b: &[u8]| u32::from_be_bytes(b.try_into().unwrap()) as usize;
    let (entries, store) = (be(&h[8..12]), be(&h[12..16]));
    let index_start = at + 16;
    let store_start =
        index_start.checked_add(entries.checked_mul(16).ok_or("header too large")?).ok_or("header too large")?;
    let end = store_start.checked_add(store).ok_or("header too large")?;
    let store_bytes = data.get(store_start..end).ok_or_else(|| format!("the {what} header is cut off"))?;
    let mut strings = Vec::new();
    for i in 0..entries {
        let e = &data[index_start + 16 * i..index_start + 16 * i + 16];
        let (tag, kind, offset) = (be(&e[0..4]) as u32, be(&e[4..8]), be(&e[8..12]));
        // STRING (6) and I18NSTRING (9): NUL-terminated in the store.
        if (kind == 6 || kind == 9) && offset < store_bytes.len() {
            let s = &store_bytes[offset..];
            let s = &s[..s.iter().position(|&b| b == 0).unwrap_or(s.len())];
            strings.push((tag, String::from_utf8_lossy(s).into_owned()));
        }
    }
    Ok((strings, end - at))
}

/// One entry of a newc (070701/070702) cpio archive.
pub struct CpioEntry<'a> {
    pub name: String,
    pub mode: u32,
    pub data: &'a [u8],
}

/// Every entry of a newc archive, in order.
pub fn read_cpio(data: &[u8]) -> Result<Vec<CpioEntry<'_>>> {
    let mut entries = Vec::new();
    let mut pos = 0;
    loop {
        let h = data.get(pos..pos + 110).ok_or("the cpio archive is cut off")?;
        if &h[..6] != b"070701" && &h[..6] != b"070702" {
            return Err(format!("not a newc cpio header at byte {pos}"));
        }
        let field = |i: usize| -> Result<usize> {
            let s = std::str::from_utf8(&h[6 + 8 * i..14 + 8 * i]).map_err(|_| "bad cpio header")?;
            usize::from_str_radix(s, 16).map_err(|_| "bad cpio header".to_string())
        };
        let (mode, size, name_size) = (field(1)? as u32, field(6)?, field(11)?);
        let name_end = pos + 110 + name_size;
        let name = data.get(pos + 110..name_end.saturating_sub(1)).ok_or("the cpio archive is cut off")?;
        let name = String::from_utf8_lossy(name).into_owned();
        let data_start = name_end.div_ceil(4) * 4;
        if name == "TRAILER!!!" {
            return Ok(entries);
        }
        let body = data.get(data_start..data_start + size).ok_or("the cpio archive is cut off")?;
        entries.push(CpioEntry { name, mode, data: body });
        pos = (data_start + size).div_ceil(4) * 4;
    }
}

/// Unpack a kernel RPM into `dir`.
pub fn unpack(path: &Path, dir: &Path) -> Result<RpmKernel> {
    let data = std::fs::read(path).map_err(|e| format!("--kernel-rpm {}: {e}", path.display()))?;
    if data.len() < 96 || data[..4] != LEAD_MAGIC {
        return Err(format!("{} is not an RPM package (no RPM lead)", path.display()));
    }
    let (_, sig_len) = read_header(&data, 96, "signature")?;
    let main_at = (96 + sig_len).div_ceil(8) * 8;
    let (tags, main_len) = read_header(&data, main_at, "main")?;
    let tag = |t: u32| tags.iter().find(|(k, _)| *k == t).map(|(_, v)| v.clone()).unwrap_or_default();
    let name = tag(TAG_NAME);
    if !name.starts_with("kernel") {
        return Err(format!(
            "{} is the package '{name}', not a kernel (kernel, kernel-smp, kernel-default, …)",
            path.display()
        ));
    }
    let payload = compressed::decompress(&data[main_at + main_len..], &format!("{} payload", path.display()))?;
    let _ = std::fs::remove_dir_all(dir);
    std::fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    eprintln!("image: extracting {name}-{}-{}", tag(TAG_VERSION), tag(TAG_RELEASE));
    let mut decompressed = 0;
    for e in read_cpio(&payload)? {
        let rel = e.name.trim_start_matches("./").trim_start_matches('/');
        let wanted = rel.starts_with("boot/") || rel.starts_with("lib/modules/") || rel.starts_with("usr/lib/modules/");
        // Regular files only (no symlinks such as lib/modules/R/build, no devices).
        if !wanted || e.mode & 0o170000 != 0o100000 || rel.split('/').any(|p| p == "..") {
            continue;
        }
        let (rel, bytes) = compressed::module(rel, e.data)?;
        if rel.len() != e.name.trim_start_matches("./").trim_start_matches('/').len() {
            decompressed += 1;
        }
        let dest = dir.join(&rel);
        fs::create_dir_all(dest.parent().unwrap())?;
        std::fs::write(&dest, bytes).map_err(|e| format!("{}: {e}", dest.display()))?;
    }
    let (vmlinuz, _, modules) = super::deb::find_kernel_files(dir, &name)?;
    let arch = match tag(TAG_ARCH).as_str() {
        "" => None,
        other => Some(
            Arch::of_package(other)
                .ok_or_else(|| format!("{name} is for {other}; bootmark images are x86_64, i686 or aarch64"))?,
        ),
    };
    Ok(RpmKernel {
        version: format!("{}-{}", tag(TAG_VERSION), tag(TAG_RELEASE)),
        name,
        arch,
        vmlinuz,
        modules,
        modules_decompressed: decompressed,
    })
}

#[cfg(test)]
pub mod tests {
    use super::*;

    /// A header structure with string tags, as rpm writes it.
    fn header(tags: &[(u32, &str)]) -> Vec<u8> {
        let mut index = Vec::new();
        let mut store = Vec::new();
        for (tag, value) in tags {
            index.extend_from_slice(&tag.to_be_bytes());
            index.extend_from_slice(&6u32.to_be_bytes());
            index.extend_from_slice(&(store.len() as u32).to_be_bytes());
            index.extend_from_slice(&1u32.to_be_bytes());
            store.extend_from_slice(value.as_bytes());
            store.push(0);
        }
        let mut h = vec![0x8e, 0xad, 0xe8, 0x01, 0, 0, 0, 0];
        h.extend_from_slice(&(tags.len() as u32).to_be_bytes());
        h.extend_from_slice(&(store.len() as u32).to_be_bytes());
        h.extend_from_slice(&index);
        h.extend_from_slice(&store);
        h
    }

    /// A package shaped like a 2005 one: rpm 3 lead, a signature header of
    /// odd length (so the main header needs the 8-byte padding), gzip payload.
    pub fn package(name: &str, arch: &str, files: &[(&str, Vec<u8>)], compress: fn(&[u8]) -> Vec<u8>) -> Vec<u8> {
        let mut lead = vec![0u8; 96];
        lead[..4].copy_from_slice(&LEAD_MAGIC);
        lead[4] = 3;
        let mut p = lead;
        p.extend_from_slice(&header(&[(1000, "md5sum-here")]));
        p.resize(p.len().div_ceil(8) * 8, 0);
        p.extend_from_slice(&header(&[
            (TAG_NAME, name),
            (TAG_VERSION, "2.6.9"),
            (TAG_RELEASE, "42.EL"),
            (TAG_ARCH, arch),
        ]));
        let mut a = crate::build::image::cpio::Archive::new(0);
        for (path, data) in files {
            a.file(path, data.clone(), 0o644);
        }
        p.extend_from_slice(&compress(&a.to_bytes()));
        p
    }

    pub fn gzip(data: &[u8]) -> Vec<u8> {
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        std::io::Write::write_all(&mut e, data).unwrap();
        e.finish().unwrap()
    }

    /// `data` compressed by the `xz` tool (CRC64, as kmod's modules are).
    fn xz(data: &[u8]) -> Vec<u8> {
        let sh = crate::host::process::shell().unwrap();
        let out = crate::host::process::output(crate::host::process::cmd!(sh, "xz -c").stdin(data)).unwrap();
        assert!(out.status.success(), "xz -c: {}", crate::host::process::stderr_tail(&out));
        out.stdout
    }

    #[test]
    fn a_2005_shaped_kernel_rpm_unpacks_with_modules_decompressed() {
        let dir = std::env::temp_dir().join(format!("bootmark-rpm-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let elf = b"\x7fELF fake module".to_vec();
        let files = [
            ("./boot/vmlinuz-2.6.9-42.ELsmp", b"kernel".to_vec()),
            ("./boot/config-2.6.9-42.ELsmp", b"CONFIG_X86=y\n".to_vec()),
            ("./lib/modules/2.6.9-42.ELsmp/kernel/drivers/scsi/sd_mod.ko", elf.clone()),
            ("./lib/modules/2.6.9-42.ELsmp/kernel/fs/vfat/vfat.ko.xz", xz(&elf)),
            ("./lib/modules/2.6.9-42.ELsmp/kernel/fs/fat/fat.ko.gz", gzip(&elf)),
            ("./usr/share/doc/kernel/README", b"not needed".to_vec()),
        ];
        let rpm = dir.join("kernel-smp-2.6.9-42.EL.i686.rpm");
        std::fs::write(&rpm, package("kernel-smp", "i686", &files, gzip)).unwrap();
        let k = unpack(&rpm, &dir.join("out")).unwrap();
        assert_eq!((k.name.as_str(), k.version.as_str(), k.arch), ("kernel-smp", "2.6.9-42.EL", Some(Arch::I686)));
        assert!(k.vmlinuz.ends_with("boot/vmlinuz-2.6.9-42.ELsmp"));
        let m = k.modules.unwrap();
        assert_eq!(std::fs::read(m.join("kernel/fs/vfat/vfat.ko")).unwrap(), elf, ".ko.xz decompressed");
        assert_eq!(std::fs::read(m.join("kernel/fs/fat/fat.ko")).unwrap(), elf, ".ko.gz decompressed");
        assert_eq!(k.modules_decompressed, 2);
        assert!(!dir.join("out/usr/share").exists(), "only boot/ and lib/modules/ are unpacked");
        // Not a kernel, not an RPM, cut off: clear errors.
        std::fs::write(&rpm, package("bash", "i686", &files, gzip)).unwrap();
        assert!(unpack(&rpm, &dir.join("out")).unwrap_err().contains("not a kernel"));
        std::fs::write(&rpm, b"hello").unwrap();
        assert!(unpack(&rpm, &dir.join("out")).unwrap_err().contains("not an RPM"));
        let whole = package("kernel", "i686", &files, gzip);
        std::fs::write(&rpm, &whole[..200]).unwrap();
        assert!(unpack(&rpm, &dir.join("out")).unwrap_err().contains("cut off"));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// A kernel package as `rpmbuild` makes it with `payload` (e.g. `w6.xzdio`).
    fn rpmbuild(dir: &Path, payload: &str, files: &[(&str, Vec<u8>)]) -> PathBuf {
        let root = dir.join("root");
        let _ = std::fs::remove_dir_all(&root);
        for (path, data) in files {
            std::fs::create_dir_all(root.join(path).parent().unwrap()).unwrap();
            std::fs::write(root.join(path), data).unwrap();
        }
        let listed: Vec<String> = files.iter().map(|(p, _)| format!("/{p}")).collect();
        let spec = dir.join("kernel.spec");
        std::fs::write(
            &spec,
            format!(
                "Name: kernel-default\nVersion: 6.4.0\nRelease: 150600.1\nSummary: test\nLicense: GPL\nAutoReqProv: no\n\
                 %description\ntest\n%install\ncp -a {}/. %{{buildroot}}/\n%files\n{}\n",
                root.display(),
                listed.join("\n")
            ),
        )
        .unwrap();
        let top = dir.join(format!("rpmbuild-{payload}"));
        let sh = crate::host::process::shell().unwrap();
        let (topdir, binary_payload) = (format!("_topdir {}", top.display()), format!("_binary_payload {payload}"));
        crate::host::process::run(
            crate::host::process::cmd!(sh, "rpmbuild -bb --target x86_64 --define {topdir} --define {binary_payload}")
                .args(["--define", "__os_install_post %{nil}", "--define", "debug_package %{nil}"])
                .arg(&spec),
        )
        .unwrap_or_else(|e| panic!("rpmbuild with {payload}: {e}"));
        let rpms = top.join("RPMS/x86_64");
        std::fs::read_dir(&rpms).unwrap().flatten().map(|e| e.path()).next().unwrap()
    }

    #[test]
    fn packages_rpmbuild_makes_unpack_with_every_payload_compressor() {
        let dir = std::env::temp_dir().join(format!("bootmark-rpmbuild-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let elf = b"\x7fELF fake module".repeat(100);
        let files = [
            ("boot/vmlinuz-6.4.0-150600.1-default", b"kernel".repeat(1000)),
            ("lib/modules/6.4.0-150600.1-default/kernel/fs/ext4/ext4.ko.xz", xz(&elf)),
            ("lib/modules/6.4.0-150600.1-default/kernel/fs/jbd2/jbd2.ko", elf.clone()),
        ];
        // gzip (rpm 4.3 to today), bzip2 (SUSE's old default), xz (RHEL 6+,
        // SLES 12+, Fedora until 31; rpm writes xz with a SHA-256 check),
        // lzma (Fedora 9-11), zstd (Fedora 31+, RHEL 9).
        for payload in ["w9.gzdio", "w9.bzdio", "w6.xzdio", "w6.lzdio", "w19.zstdio"] {
            let rpm = rpmbuild(&dir, payload, &files);
            let out = dir.join(format!("out-{payload}"));
            let k = unpack(&rpm, &out).unwrap_or_else(|e| panic!("{payload}: {e}"));
            assert_eq!((k.name.as_str(), k.version.as_str()), ("kernel-default", "6.4.0-150600.1"), "{payload}");
            assert_eq!(std::fs::read(&k.vmlinuz).unwrap(), files[0].1, "{payload}: vmlinuz");
            let m = k.modules.unwrap();
            assert_eq!(std::fs::read(m.join("kernel/fs/ext4/ext4.ko")).unwrap(), elf, "{payload}: .ko.xz decompressed");
            assert_eq!(std::fs::read(m.join("kernel/fs/jbd2/jbd2.ko")).unwrap(), elf, "{payload}: plain .ko");
            assert_eq!(k.modules_decompressed, 1, "{payload}");
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
