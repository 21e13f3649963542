//! Filesystem identification against real images made by the real mkfs
//! tools (e2fsprogs, dosfstools, xfsprogs, reiserfsprogs) and partition
//! tables made by sfdisk, checked against blkid.

use bootmark::contract::fsprobe::{partition_uuids, probe};
use std::path::{Path, PathBuf};
use std::process::Command;

fn image(name: &str, mib: u64) -> PathBuf {
    let path = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("{name}-{}.img", std::process::id()));
    let f = std::fs::File::create(&path).unwrap();
    f.set_len(mib << 20).unwrap();
    path
}

fn sh(cmd: &str, args: &[&str]) {
    let out = Command::new(cmd).args(args).output().unwrap_or_else(|e| panic!("{cmd} is needed for this test: {e}"));
    assert!(out.status.success(), "{cmd} {args:?}: {}", String::from_utf8_lossy(&out.stderr));
}

fn blkid(path: &Path, tag: &str) -> String {
    let out = Command::new("blkid").args(["-p", "-o", "value", "-s", tag]).arg(path).output().unwrap();
    String::from_utf8_lossy(&out.stdout).trim().to_lowercase()
}

fn check(path: &Path, fs: &str, label: &str) {
    let info = probe(path).unwrap().unwrap_or_else(|| panic!("{fs} not recognised"));
    assert_eq!(info.fs, fs);
    assert_eq!(info.label.as_deref(), Some(label));
    assert_eq!(info.uuid.as_deref().unwrap(), blkid(path, "UUID"), "{fs} uuid");
    std::fs::remove_file(path).unwrap();
}

#[test]
fn ext2_ext3_ext4() {
    for (fs, label) in [("ext2", "OLD"), ("ext3", "SEED-EXT3"), ("ext4", "NEW_EXT4")] {
        let img = image(fs, 16);
        sh(&format!("mkfs.{fs}"), &["-q", "-F", "-L", label, img.to_str().unwrap()]);
        check(&img, fs, label);
    }
}

#[test]
fn vfat_fat16_and_fat32() {
    for (bits, mib) in [("16", 16), ("32", 64)] {
        let img = image(&format!("fat{bits}"), mib);
        sh("mkfs.vfat", &["-F", bits, "-n", "BOOTMARK", "-i", "1234ABCD", img.to_str().unwrap()]);
        let info = probe(&img).unwrap().unwrap();
        assert_eq!((info.fs.as_str(), info.label.as_deref()), ("vfat", Some("BOOTMARK")));
        assert_eq!(info.uuid.as_deref(), Some("1234-abcd"));
        assert_eq!(blkid(&img, "UUID"), "1234-abcd");
        std::fs::remove_file(&img).unwrap();
    }
}

#[test]
fn xfs_and_reiserfs() {
    let img = image("xfs", 300);
    sh("mkfs.xfs", &["-q", "-f", "-L", "XFSLBL", img.to_str().unwrap()]);
    check(&img, "xfs", "XFSLBL");
    let img = image("reiserfs", 64);
    sh("mkfs.reiserfs", &["-q", "-f", "-f", "-l", "REISER", img.to_str().unwrap()]);
    check(&img, "reiserfs", "REISER");
}

#[test]
fn unknown_content_is_none() {
    let img = image("blank", 1);
    assert_eq!(probe(&img).unwrap(), None);
    std::fs::remove_file(&img).unwrap();
}

fn sfdisk(img: &Path, script: &str) {
    use std::io::Write;
    let mut child = Command::new("sfdisk")
        .arg("-q")
        .arg(img)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .spawn()
        .expect("sfdisk (fdisk package) is needed");
    child.stdin.take().unwrap().write_all(script.as_bytes()).unwrap();
    assert!(child.wait().unwrap().success());
}

#[test]
fn partuuids_of_mbr_and_gpt_disks() {
    let img = image("mbr", 8);
    sfdisk(&img, "label: dos\nlabel-id: 0xdeadbeef\nstart=2048, size=4096, type=83\nstart=6144, type=c\n");
    assert_eq!(partition_uuids(&img).unwrap(), vec![(1, "deadbeef-01".into()), (2, "deadbeef-02".into())]);
    std::fs::remove_file(&img).unwrap();

    let img = image("gpt", 8);
    let guid = "0fc63daf-8483-4772-8e79-3d69d8477de4";
    sfdisk(
        &img,
        &format!("label: gpt\nstart=2048, size=4096, uuid=6a3c9f52-1b7e-4d2a-9c4f-0123456789ab, type={guid}\n"),
    );
    assert_eq!(partition_uuids(&img).unwrap(), vec![(1, "6a3c9f52-1b7e-4d2a-9c4f-0123456789ab".into())]);
    std::fs::remove_file(&img).unwrap();
}
