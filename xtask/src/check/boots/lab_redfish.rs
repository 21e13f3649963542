//! `bootmark lab` through Redfish with virtual media, end to end: OpenStack's
//! `sushy-tools` emulator (PyPI, its fake driver) is the server's BMC on
//! 127.0.0.1 over HTTPS with a self-signed certificate and Basic auth; the
//! lab checks the certificate against its `ca_file`. The fake driver
//! downloads each inserted ISO from the lab's web directory (Python's
//! http.server here) and tells every change of its system to a
//! notification URL: that is this rig's chassis, which starts a QEMU guest
//! booting the inserted ISO as a CD-ROM when the power goes on, and ends
//! it when the power goes off. The console is the log file the guest's
//! serial port writes (as a console server's log), `console = "file:…"`.
//!
//! A lab of one server, the image's entries k1 then k2 (neither its
//! default, so each boot proves the published ISO's menu chose it): the
//! first power-on boots under BIOS (ISOLINUX's menu), the second under
//! UEFI (GRUB's menu). Asserted: both steps ok with their own entry on
//! every run record; the BMC asked in the lab's order (eject, insert, boot
//! override once from Cd, power off, power on); the ISO the BMC fetched
//! boots the step's entry by default; a lab without the `ca_file` stops
//! before touching the power, naming the certificate; no password in
//! anything written or printed.

use super::lab_ipmi::{free_port, free_port_but, set_mode, tail};
use crate::boot::disks::scratch_disk;
use crate::boot::qemu;
use crate::host::fs;
use crate::host::process::{Streams, cmd, output, run, shell, spawn};
use crate::host::project::Result;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const PASSWORD: &str = "redfish-test-pw-41c9e2";
/// sushy-tools as tested here.
const SUSHY_TOOLS: &str = "sushy-tools==2.2.0";
const MAX_STEP_S: u64 = 150;

pub fn test(image: &Path, base: &Path) -> Result<()> {
    let started = Instant::now();
    let dir = base.join("lab-redfish");
    let _ = std::fs::remove_dir_all(&dir);
    fs::create_dir_all(&dir)?;
    let venv = sushy_tools()?;
    tls_certificate(&dir)?;
    let redfish_port = free_port(false)?;
    let notify_port = free_port_but(false, &[redfish_port])?;
    let http_port = free_port_but(false, &[redfish_port, notify_port])?;
    let www = dir.join("www");
    fs::create_dir_all(&www)?;
    let (sh, python, port) = (shell()?, venv.join("bin/python3"), http_port.to_string());
    let streams = Streams::default().stdout(std::process::Stdio::null()).stderr(fs::create(dir.join("http.log"))?);
    let _web = Child(spawn(cmd!(sh, "{python} -m http.server --bind 127.0.0.1 {port} --directory {www}"), streams)?);
    // The console server's log exists before the first boot, as conserver's does.
    fs::write(dir.join("console.log"), "")?;
    let chassis = Chassis::start(&dir, image, notify_port)?;
    let _bmc = start_sushy(&dir, &venv, redfish_port, notify_port)?;
    let lab = write_lab(&dir, image, redfish_port, http_port, true)?;
    let bootmark = crate::host::project::project_root().join("target/debug/bootmark");

    // Without the certificate's CA: refused before anything is asked of the power.
    let no_ca = write_lab(&dir, image, redfish_port, http_port, false)?;
    let refused = output(cmd!(sh, "{bootmark} lab run {no_ca}"))?;
    let refused_err = String::from_utf8_lossy(&refused.stderr).into_owned();
    if refused.status.code() != Some(2) || !refused_err.to_lowercase().contains("certificate") {
        return Err(format!(
            "lab-redfish: a BMC whose certificate is not trusted must stop the lab (exit 2, naming the certificate), got {:?}: {}",
            refused.status.code(),
            tail(&refused_err)
        ));
    }
    if requests(&dir)?.iter().any(|r| r.starts_with("POST")) {
        return Err("lab-redfish: the untrusted BMC was asked to do something".into());
    }

    let ran = output(cmd!(sh, "{bootmark} lab run {lab}"))?;
    let out = String::from_utf8_lossy(&ran.stdout).into_owned();
    let err = String::from_utf8_lossy(&ran.stderr).into_owned();
    let power_ons = chassis.stop();
    if ran.status.code() != Some(0) {
        return Err(format!(
            "lab-redfish: `bootmark lab run` exited {:?}:\n{}\n{}",
            ran.status.code(),
            tail(&out),
            tail(&err)
        ));
    }
    let state_dir = dir.join("lab.state");
    let state = bootmark::lab::state::State::load(&state_dir)?.ok_or("lab-redfish: no state")?;
    check_steps(&state, &state_dir)?;
    check_requests(&requests(&dir)?)?;
    if power_ons.len() != 2 || power_ons.iter().any(|p| !p.contains("boot Cd with the ISO")) {
        return Err(format!("lab-redfish: the guest was not booted from the inserted ISO twice: {power_ons:?}"));
    }
    if !out.contains("| kernel") {
        return Err(format!("lab-redfish: no report printed:\n{}", tail(&out)));
    }
    super::lab_ipmi::check_no_password(&state_dir, PASSWORD, &[&out, &err, &refused_err])?;
    println!(
        "e2e: lab Redfish: sushy-tools over HTTPS (its certificate checked), virtual media: k1 under BIOS, k2 under UEFI, \
         each booted from the ISO the lab published, in the lab's request order, no password anywhere ({:.0} s)",
        started.elapsed().as_secs_f64()
    );
    Ok(())
}

/// sushy-tools in a virtualenv of its own under target/cache.
fn sushy_tools() -> Result<PathBuf> {
    let venv = crate::host::project::project_root().join("target/cache/sushy-tools");
    if venv.join("bin/sushy-emulator").exists() {
        return Ok(venv);
    }
    let _ = std::fs::remove_dir_all(&venv);
    let sh = shell()?;
    if !crate::host::process::succeeds(cmd!(sh, "python3 -m venv {venv}")) {
        if crate::host::deps::can_install() {
            crate::host::apt::install(&["python3-venv"])?;
            let _ = std::fs::remove_dir_all(&venv);
            run(cmd!(sh, "python3 -m venv {venv}"))?;
        } else {
            return Err("lab-redfish: `python3 -m venv` failed: install python3-venv (Debian)".into());
        }
    }
    eprintln!("e2e: pip install {SUSHY_TOOLS} into {}", venv.display());
    let pip = venv.join("bin/pip");
    run(cmd!(sh, "{pip} install -q {SUSHY_TOOLS}"))?;
    Ok(venv)
}

/// A self-signed certificate for 127.0.0.1 (cert.pem, key.pem): the BMC's
/// own, as BMCs ship, and the lab's `ca_file`.
fn tls_certificate(dir: &Path) -> Result<()> {
    let (sh, key, cert) = (shell()?, dir.join("key.pem"), dir.join("cert.pem"));
    run(cmd!(
        sh,
        "openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=127.0.0.1
            -addext subjectAltName=IP:127.0.0.1 -addext basicConstraints=critical,CA:FALSE
            -keyout {key} -out {cert}"
    ))
    .map(|_| ())
}

/// The emulator, serving HTTPS with Basic auth, its fake system telling
/// the chassis every change.
fn start_sushy(dir: &Path, venv: &Path, port: u16, notify_port: u16) -> Result<Child> {
    let (sh, python) = (shell()?, venv.join("bin/python3"));
    let script = format!("import bcrypt; print(bcrypt.hashpw(b'{PASSWORD}', bcrypt.gensalt()).decode())");
    let hash = run(cmd!(sh, "{python} -c {script}"))?;
    fs::write(dir.join("htpasswd"), format!("admin:{}\n", hash.trim()))?;
    fs::write(
        dir.join("sushy.conf"),
        format!(
            "SUSHY_EMULATOR_AUTH_FILE = '{auth}'\n\
             SUSHY_EMULATOR_STATE_DIR = '{state}'\n\
             SUSHY_EMULATOR_FAKE_SYSTEMS = [{{'uuid': '7fd8b9a2-0bd1-4c59-8f8e-3c6c7b1f6a01', 'name': 'lab-server', \
             'power_state': 'Off', 'external_notifier': True, 'nics': [{{'mac': '52:54:00:be:e7:02', 'ip': '127.0.0.2'}}]}}]\n\
             EXTERNAL_NOTIFICATION_URL = 'http://127.0.0.1:{notify_port}/'\n",
            auth = dir.join("htpasswd").display(),
            state = dir.join("sushy-state").display(),
        ),
    )?;
    let (emulator, config, port) = (venv.join("bin/sushy-emulator"), dir.join("sushy.conf"), port.to_string());
    let (cert, key) = (dir.join("cert.pem"), dir.join("key.pem"));
    let streams =
        Streams::default().stdout(fs::create(dir.join("sushy.out"))?).stderr(fs::create(dir.join("sushy.log"))?);
    let child = Child(spawn(
        cmd!(sh, "{emulator} --config {config} --fake -i 127.0.0.1 -p {port} --ssl-certificate {cert} --ssl-key {key}"),
        streams,
    )?);
    let url = format!("https://127.0.0.1:{port}/redfish/v1/");
    for _ in 0..100 {
        if crate::host::process::succeeds(cmd!(sh, "curl -sf --cacert {cert} {url}")) {
            return Ok(child);
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    Err(format!(
        "lab-redfish: sushy-emulator did not answer {url} within 20 s: {}",
        tail(&fs::read_to_string(dir.join("sushy.log"))?)
    ))
}

fn write_lab(dir: &Path, image: &Path, redfish_port: u16, http_port: u16, with_ca: bool) -> Result<PathBuf> {
    let pass = dir.join("bmc.pass");
    fs::write(&pass, format!("{PASSWORD}\n"))?;
    set_mode(&pass, 0o600)?;
    let lab = dir.join(if with_ca { "lab.toml" } else { "lab-no-ca.toml" });
    fs::write(
        &lab,
        format!(
            "image = \"{image}\"\n{state}\n[[server]]\nname = \"rf\"\nconsole = \"file:console.log\"\n\
             entries = [\"k1\", \"k2\"]\nboot_s = 90\nmax_step_s = {MAX_STEP_S}\n\
             [server.redfish]\nurl = \"https://127.0.0.1:{redfish_port}\"\nuser = \"admin\"\npassword_file = \"bmc.pass\"\n{ca}\
             [server.virtual_media]\nhttp_dir = \"www\"\nhttp_url = \"http://127.0.0.1:{http_port}\"\n",
            image = image.display(),
            state = if with_ca { "" } else { "state = \"no-ca.state\"\n" },
            ca = if with_ca { "ca_file = \"cert.pem\"\n" } else { "" },
        ),
    )?;
    Ok(lab)
}

/// rf/k1#1 and rf/k2#1 ok, each run record from its own entry.
fn check_steps(state: &bootmark::lab::state::State, state_dir: &Path) -> Result<()> {
    use bootmark::lab::state::Status;
    let got: Vec<(String, Option<Status>)> =
        state.steps.iter().map(|s| (s.id.clone(), s.outcome.as_ref().map(|o| o.status))).collect();
    let want = vec![("rf/k1#1".to_string(), Some(Status::Ok)), ("rf/k2#1".to_string(), Some(Status::Ok))];
    if got != want {
        let why: Vec<_> = state.steps.iter().filter_map(|s| s.outcome.as_ref().and_then(|o| o.why.clone())).collect();
        return Err(format!("lab-redfish: steps ended {got:?}, expected {want:?} ({why:?})"));
    }
    for s in &state.steps {
        let o = s.outcome.as_ref().expect("checked above");
        let text = fs::read_to_string(state_dir.join(&o.records))?;
        let mut runs = 0;
        for line in text.lines() {
            let doc: serde_json::Value = serde_json::from_str(line).map_err(|e| format!("{}: {e}", o.records))?;
            let cmdline = doc.pointer("/kernel/cmdline").and_then(|c| c.as_str());
            if bootmark::record::boot_entry(cmdline) != Some(s.entry.as_str()) {
                return Err(format!("lab-redfish: step {} has a record of another entry: {cmdline:?}", s.id));
            }
            runs += usize::from(doc.get("schema").and_then(|x| x.as_str()) == Some(bootmark::record::RUN_SCHEMA));
        }
        if runs != 1 {
            return Err(format!("lab-redfish: step {} has {runs} run records", s.id));
        }
    }
    Ok(())
}

/// The emulator's access log: `METHOD PATH` of every request, in order.
fn requests(dir: &Path) -> Result<Vec<String>> {
    let log = fs::read_to_string(dir.join("sushy.log"))?;
    Ok(log
        .lines()
        .filter_map(|l| {
            let quoted = without_colours(l.split('"').nth(1)?);
            let mut words = quoted.split_whitespace();
            let (method, path) = (words.next()?, words.next()?);
            matches!(method, "GET" | "POST" | "PATCH" | "PUT" | "DELETE").then(|| format!("{method} {path}"))
        })
        .collect())
}

/// werkzeug colours its access log (`ESC[35m`…`ESC[0m`) even into a file.
fn without_colours(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut in_escape = false;
    for c in text.chars() {
        match (in_escape, c) {
            (false, '\x1b') => in_escape = true,
            (false, c) => out.push(c),
            (true, c) => in_escape = !c.is_ascii_alphabetic(),
        }
    }
    out
}

/// Per step: eject (when something is in), insert, the boot override (a
/// PATCH of the system), power off (when on), power on; at the end, eject.
fn check_requests(all: &[String]) -> Result<()> {
    let changes: Vec<String> = all
        .iter()
        .filter(|r| !r.starts_with("GET"))
        .map(|r| {
            let action = r.rsplit('/').next().unwrap_or("");
            match r.split(' ').next() {
                Some("PATCH") => "boot-override".to_string(),
                _ => action.to_string(),
            }
        })
        .collect();
    // Step 1: the CD is empty and the server off, so neither is asked.
    // Step 2: the guest powered itself off but the emulator still says On
    // (nothing tells it), so the lab switches it off. At the end, eject.
    let want = [
        "VirtualMedia.InsertMedia",
        "boot-override",
        "ComputerSystem.Reset",
        "VirtualMedia.EjectMedia",
        "VirtualMedia.InsertMedia",
        "boot-override",
        "ComputerSystem.Reset",
        "ComputerSystem.Reset",
        "VirtualMedia.EjectMedia",
    ];
    if changes.iter().map(String::as_str).ne(want) {
        return Err(format!("lab-redfish: the BMC was asked {changes:?}, expected {want:?}"));
    }
    Ok(())
}

/// The rig's chassis: the emulator's notification URL. A system whose
/// power goes on starts a QEMU guest booting the inserted CD (BIOS on odd
/// power-ons, UEFI on even ones); power off ends it (a guest that powered
/// itself off has ended already: the emulator, like a BMC that missed it,
/// still says On until the lab switches it off).
struct Chassis {
    power_ons: Arc<Mutex<Vec<String>>>,
    stop: Arc<std::sync::atomic::AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Chassis {
    fn start(dir: &Path, image: &Path, port: u16) -> Result<Chassis> {
        let listener =
            TcpListener::bind(("127.0.0.1", port)).map_err(|e| format!("lab-redfish: bind 127.0.0.1:{port}: {e}"))?;
        listener.set_nonblocking(true).map_err(|e| format!("lab-redfish: {e}"))?;
        let disk = dir.join("scratch.img");
        scratch_disk(&disk, "ext3", 512)?;
        let power_ons = Arc::new(Mutex::new(Vec::new()));
        let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let (dir, image) = (dir.to_path_buf(), image.to_path_buf());
        let (ons, stopping) = (power_ons.clone(), stop.clone());
        let thread = std::thread::spawn(move || {
            let mut guest: Option<std::process::Child> = None;
            // Every change of the system is told, with its whole state: the
            // power switches when `power_state` changes, as a chassis's would.
            let mut power = "Off".to_string();
            while !stopping.load(std::sync::atomic::Ordering::Relaxed) {
                match listener.accept() {
                    Ok((stream, _)) => {
                        if let Some(system) = read_put(stream) {
                            let now = system.get("power_state").and_then(|p| p.as_str()).unwrap_or("").to_string();
                            if now != power {
                                act(&system, &mut guest, &dir, &image, &disk, &ons);
                                power = now;
                            }
                        }
                    }
                    Err(_) => std::thread::sleep(Duration::from_millis(50)),
                }
            }
            if let Some(mut g) = guest {
                let _ = g.kill();
                let _ = g.wait();
            }
        });
        Ok(Chassis { power_ons, stop, thread: Some(thread) })
    }

    /// End the rig (and any guest); what each power-on booted.
    fn stop(mut self) -> Vec<String> {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        self.power_ons.lock().map(|v| v.clone()).unwrap_or_default()
    }
}

/// One notification: the system's JSON, answered 200.
fn read_put(stream: std::net::TcpStream) -> Option<serde_json::Value> {
    stream.set_nonblocking(false).ok()?;
    stream.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
    let mut reader = BufReader::new(stream);
    let mut length = 0usize;
    loop {
        let mut line = String::new();
        reader.read_line(&mut line).ok()?;
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        if let Some((k, v)) = line.split_once(':')
            && k.eq_ignore_ascii_case("content-length")
        {
            length = v.trim().parse().ok()?;
        }
    }
    let mut body = vec![0; length];
    reader.read_exact(&mut body).ok()?;
    let _ = reader.get_mut().write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
    serde_json::from_slice(&body).ok()
}

fn act(
    system: &serde_json::Value,
    guest: &mut Option<std::process::Child>,
    dir: &Path,
    image: &Path,
    disk: &Path,
    ons: &Mutex<Vec<String>>,
) {
    match system.get("power_state").and_then(|p| p.as_str()) {
        Some("On") => {
            let n = ons.lock().map(|v| v.len()).unwrap_or(0) + 1;
            let cd = system.pointer("/boot_image/Cd").and_then(|c| c.as_array());
            let iso = cd.and_then(|c| c.first()).and_then(|p| p.as_str()).map(PathBuf::from);
            let inserted = cd.and_then(|c| c.get(2)).and_then(|i| i.as_bool()) == Some(true);
            let from_cd = system.get("boot_device").and_then(|b| b.as_str()) == Some("Cd");
            let said = match (&iso, inserted && from_cd) {
                (Some(iso), true) => format!("power-on {n}: boot Cd with the ISO {}", iso.display()),
                _ => format!("power-on {n}: not from an inserted CD ({system})"),
            };
            let _ = ons.lock().map(|mut v| v.push(said));
            let Some(iso) = iso.filter(|_| inserted && from_cd) else { return };
            // A new console file each boot, as a console server's log rotates.
            let log = dir.join("console.log");
            let _ = std::fs::remove_file(&log);
            let args = qemu::Args {
                image: image.to_path_buf(),
                cdrom: true,
                iso: Some(iso),
                no_stick: true,
                uefi: n.is_multiple_of(2),
                disks: vec![disk.to_path_buf()],
                log: Some(log),
                ..qemu::Args::default()
            };
            let Ok(line) = qemu::command_line(&args) else { return };
            let out = std::fs::File::create(dir.join(format!("qemu-{n}.out"))).ok();
            let Ok(sh) = shell() else { return };
            let exec = format!("exec {line}");
            let streams = Streams::null().stdout(out.map_or(std::process::Stdio::null(), Into::into));
            *guest = spawn(cmd!(sh, "sh -c {exec}"), streams).ok();
        }
        Some("Off") => {
            if let Some(mut g) = guest.take() {
                let _ = g.kill();
                let _ = g.wait();
            }
        }
        _ => {}
    }
}

/// A child process ended when dropped.
struct Child(std::process::Child);

impl Drop for Child {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}
