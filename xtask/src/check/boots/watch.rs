//! `bootmark watch` on a real boot: QEMU serves the guest's serial console
//! on a loopback TCP port, as a console server would, and the watcher
//! follows it live. Its records must be the ones in QEMU's own log, and it
//! must end with exit status 0 at the run record.

use crate::boot::disks::scratch_disk;
use crate::boot::qemu;
use crate::check::boots::support::{serial_documents, test_boot};
use crate::host::fs;
use crate::host::fs::Context as _;
use crate::host::project::Result;
use std::path::Path;
use std::time::{Duration, Instant};

pub fn test(image: &Path, base: &Path) -> Result<()> {
    let dir = base.join("watch");
    let _ = std::fs::remove_dir_all(&dir);
    fs::create_dir_all(&dir)?;
    let disk = dir.join("scratch.img");
    scratch_disk(&disk, "ext3", 512)?;
    // A free loopback port: bound, read, released for QEMU.
    let port =
        std::net::TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()).context("a free loopback port")?.port();
    let args = qemu::Args { serial_tcp: Some(port), ..test_boot(image.to_path_buf(), disk, dir.join("qemu.log")) };
    let boot = std::thread::spawn(move || qemu::boot(&args));
    let opts = bootmark::watch::Options {
        source: format!("tcp:127.0.0.1:{port}"),
        baud: 115200,
        log: Some(dir.join("watched.log")),
        out: Some(dir.join("records.jsonl")),
        until: bootmark::watch::Until::Runs(1),
        silence: Duration::from_secs(40),
        give_up: Duration::from_secs(300),
    };
    // QEMU listens once it has started: try for a while.
    let started = Instant::now();
    let (ending, documents) = loop {
        match bootmark::watch::watch(&opts) {
            Err(e) if e.contains("cannot connect") && started.elapsed() < Duration::from_secs(30) => {
                std::thread::sleep(Duration::from_millis(200));
            }
            other => break other?,
        }
    };
    let booted = boot.join().map_err(|_| "the QEMU thread panicked".to_string())??;
    if ending != bootmark::watch::Ending::AllOk {
        return Err(format!("watch ended {ending:?}\n{}", qemu::tail(&booted.serial, 20)));
    }
    let logged = serial_documents(&booted.serial);
    if documents.len() != 7 || documents != logged {
        return Err(format!("watch verified {} documents, QEMU's log holds {}", documents.len(), logged.len()));
    }
    let out = fs::read_to_string(dir.join("records.jsonl"))?;
    if out.lines().count() != 7 {
        return Err(format!("records.jsonl has {} lines, not 7", out.lines().count()));
    }
    println!(
        "e2e: watch: a real boot followed live over QEMU's TCP serial: 6 records and the run record verified as they came, the same as QEMU's log, exit 0 ({:.1} s)",
        booted.elapsed.as_secs_f64()
    );
    Ok(())
}
