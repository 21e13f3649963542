//! `bootmark lab` end to end through a real BMC protocol: OpenIPMI's
//! `ipmi_sim` is the server's BMC on 127.0.0.1 (RMCP+ over UDP, serial over
//! LAN from the guest's serial port over TCP), Debian's `ipmitool` is the
//! client, and the server is a QEMU guest that ipmi_sim's chassis_control
//! script starts and stops, booting over the network when the one-time boot
//! device says so. QEMU's own TFTP serves the lab's TFTP root, where the
//! lab writes the image's tree and the per-MAC configs.
//!
//! A lab of one server, two entries × two repetitions, interleaved. The
//! server's second power-on hangs before its firmware (QEMU started with
//! its CPUs stopped: a console that says nothing): that step is powered off
//! at its deadline, recorded as failed, and the lab goes on. The
//! workstation process is killed after the third step; run again, it
//! resumes with the fourth without repeating a done step, and ends in the
//! report. No file the lab wrote, nor anything it printed, holds the
//! password.

use super::support::test_image;
use crate::boot::disks::scratch_disk;
use crate::boot::qemu;
use crate::build::image;
use crate::host::fs;
use crate::host::process::{Streams, cmd, shell, spawn};
use crate::host::project::Result;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

const PASSWORD: &str = "lab-test-pw-7d1f3c";
const MAC: &str = "52:54:00:be:e7:01";
/// The power-on that hangs.
const HANGS_AT_BOOT: u32 = 2;
/// The lab's cap on a step: a quick-plan boot over PXE takes 25–45 s here.
const MAX_STEP_S: u64 = 80;

/// The image both lab scenarios boot: three entries of one kernel (k0 is
/// the default; the Redfish lab boots k1 and k2, so its ISO's menus must
/// have been changed for each boot).
pub fn image(package: &str, base: &Path) -> Result<PathBuf> {
    image::build(&test_image(vec![package.to_string(); 3], base.join("lab-image"), None))
}

pub fn test(image: &Path, base: &Path) -> Result<()> {
    let started = Instant::now();
    let dir = base.join("lab");
    let _ = std::fs::remove_dir_all(&dir);
    fs::create_dir_all(&dir)?;
    let image = image.to_path_buf();
    let disk = dir.join("scratch.img");
    scratch_disk(&disk, "ext3", 512)?;
    let (lan_port, serial_port) = (free_port(true)?, free_port(false)?);
    let guest = qemu::Args {
        image: image.clone(),
        disks: vec![disk],
        pxe: true,
        tftp_root: Some(dir.join("tftp")),
        mac: Some(MAC.into()),
        serial_tcp: Some(serial_port),
        log: Some(dir.join("guest-serial.log")),
        ..qemu::Args::default()
    };
    fs::write(dir.join("qemu-pxe.cmd"), qemu::command_line(&guest)?)?;
    fs::write(dir.join("qemu-disk.cmd"), qemu::command_line(&qemu::Args { pxe: false, ..guest.clone() })?)?;
    let lab = write_lab(&dir, &image, lan_port)?;
    let bmc = Bmc::start(&dir, lan_port, serial_port)?;
    let bootmark = crate::host::project::project_root().join("target/debug/bootmark");

    // The first run, killed once three steps are done.
    let first_out = dir.join("run1.out");
    let sh = shell()?;
    let streams = Streams::default().stdout(fs::create(&first_out)?).stderr(fs::create(dir.join("run1.err"))?);
    let mut first = spawn(cmd!(sh, "{bootmark} lab run {lab}"), streams)?;
    let state_dir = dir.join("lab.state");
    let limit = Instant::now() + Duration::from_secs(3 * MAX_STEP_S + 120);
    while done_steps(&state_dir) < 3 {
        if Instant::now() > limit || first.try_wait().ok().flatten().is_some() {
            let _ = first.kill();
            return Err(format!(
                "lab: the first run did not finish three steps: {}",
                tail(&fs::read_to_string(&first_out).unwrap_or_default())
            ));
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    let _ = first.kill();
    let _ = first.wait();
    let done_logs = logs_of_done_steps(&state_dir)?;

    // Run again: the fourth step only, then the report.
    let second = crate::host::process::output(cmd!(sh, "{bootmark} lab run {lab}"))?;
    let out = String::from_utf8_lossy(&second.stdout).into_owned();
    let err = String::from_utf8_lossy(&second.stderr).into_owned();
    drop(bmc);
    check_second_run(&out, second.status.code())?;
    let state = bootmark::lab::state::State::load(&state_dir)?.ok_or("lab: no state after the second run")?;
    check_outcomes(&state, &state_dir)?;
    if !fs::read_to_string(state_dir.join("report.html"))?.contains("<svg") {
        return Err("lab: report.html in the state directory has no charts".into());
    }
    if logs_of_done_steps(&state_dir)?.iter().take(3).ne(done_logs.iter()) {
        return Err("lab: the resumed run changed a done step's log".into());
    }
    let [bios, uefi] = bootmark::lab::pxe::config_paths(&dir.join("tftp"), MAC);
    if bios.exists() || uefi.exists() {
        return Err(format!("lab: the per-MAC configs were left in the TFTP root: {}", bios.display()));
    }
    check_no_password(&state_dir, PASSWORD, &[&fs::read_to_string(&first_out)?, &out, &err])?;
    println!(
        "e2e: lab: ipmi_sim + ipmitool, PXE, SOL: 2 entries × 2, the hung step failed at its deadline and the lab went on, killed after 3 steps and resumed with the 4th only, report printed, no password anywhere ({:.0} s)",
        started.elapsed().as_secs_f64()
    );
    Ok(())
}

/// ipmi_sim with its config, emulator file and chassis_control script,
/// stopped (with any guest it started) when dropped.
struct Bmc {
    sim: std::process::Child,
    dir: PathBuf,
}

impl Bmc {
    fn start(dir: &Path, lan_port: u16, serial_port: u16) -> Result<Bmc> {
        let script = dir.join("chassis-control.sh");
        fs::write(&script, chassis_script(dir))?;
        set_mode(&script, 0o755)?;
        fs::write(
            dir.join("lan.conf"),
            format!(
                "name \"bootmarklab\"\nset_working_mc 0x20\n  startlan 1\n    addr 127.0.0.1 {lan_port}\n    priv_limit admin\n\
                 \x20   allowed_auths_callback none md2 md5 straight\n    allowed_auths_user none md2 md5 straight\n\
                 \x20   allowed_auths_operator none md2 md5 straight\n    allowed_auths_admin none md2 md5 straight\n\
                 \x20   guid a123456789abcdefa123456789abcdef\n  endlan\n  chassis_control \"{}\"\n\
                 \x20 sol \"tcp:127.0.0.1:{serial_port}\" 115200\n  user 2 true \"admin\" \"{PASSWORD}\" admin 10 none md2 md5 straight\n",
                script.display()
            ),
        )?;
        fs::write(
            dir.join("sim.emu"),
            "mc_setbmc 0x20\nmc_add 0x20 0 no-device-sdrs 0x23 9 8 0x9f 0x1291 0xf02\nmc_enable 0x20\n",
        )?;
        fs::create_dir_all(dir.join("sim-state"))?;
        let sh = shell()?;
        let (lan_conf, emu, state) = (dir.join("lan.conf"), dir.join("sim.emu"), dir.join("sim-state"));
        let streams =
            Streams::default().stdout(fs::create(dir.join("ipmi_sim.log"))?).stderr(std::process::Stdio::null());
        let sim = spawn(cmd!(sh, "ipmi_sim -c {lan_conf} -f {emu} -n -s {state}"), streams)?;
        let bmc = Bmc { sim, dir: dir.to_path_buf() };
        // Up when it answers.
        let pass = dir.join("bmc.pass");
        for _ in 0..50 {
            let port = lan_port.to_string();
            let answered = crate::host::process::succeeds(cmd!(
                sh,
                "ipmitool -I lanplus -C 3 -H 127.0.0.1 -p {port} -U admin -f {pass} chassis power status"
            ));
            if answered {
                return Ok(bmc);
            }
            std::thread::sleep(Duration::from_millis(200));
        }
        Err("lab: ipmi_sim did not answer ipmitool within 10 s".into())
    }
}

impl Drop for Bmc {
    fn drop(&mut self) {
        let _ = self.sim.kill();
        let _ = self.sim.wait();
        // The guest it started, if one is still running.
        if let Some(pid) = std::fs::read_to_string(self.dir.join("qemu.pid")).ok().and_then(|p| p.trim().parse().ok()) {
            // SAFETY: kill(2) with a pid the script wrote; no memory is involved.
            unsafe { libc::kill(pid, libc::SIGTERM) };
        }
    }
}

/// ipmi_sim's chassis_control protocol: `SCRIPT get power|boot` prints
/// `power:1`…, `SCRIPT set power 1|0`, `set boot pxe|default|none`. The
/// power is the QEMU guest: on = running. The boot device holds for the
/// next power-on only, as IPMI's `chassis bootdev` without `persistent`.
fn chassis_script(dir: &Path) -> String {
    format!(
        r#"#!/bin/sh
# chassis_control for bootmark's lab test: the server is a QEMU guest.
d='{dir}'
shift_op=$1; shift
running() {{ [ -f "$d/qemu.pid" ] && kill -0 "$(cat "$d/qemu.pid")" 2>/dev/null; }}
case $shift_op in
get)
  for p; do
    case $p in
      power) if running; then echo power:1; else echo power:0; fi ;;
      boot) echo "boot:$(cat "$d/boot" 2>/dev/null || echo default)" ;;
    esac
  done ;;
set)
  while [ $# -ge 2 ]; do
    case $1 in
      boot) echo "$2" > "$d/boot" ;;
      power)
        if [ "$2" = 1 ] && ! running; then
          n=$(( $(cat "$d/boots" 2>/dev/null || echo 0) + 1 )); echo $n > "$d/boots"
          if [ "$(cat "$d/boot" 2>/dev/null)" = pxe ]; then cmd=$(cat "$d/qemu-pxe.cmd"); else cmd=$(cat "$d/qemu-disk.cmd"); fi
          echo default > "$d/boot"
          # This power-on hangs before the firmware runs: a console that says nothing.
          [ $n = {HANGS_AT_BOOT} ] && cmd="$cmd -S"
          setsid sh -c "exec $cmd" > "$d/qemu-$n.out" 2>&1 < /dev/null &
          echo $! > "$d/qemu.pid"
        elif [ "$2" = 0 ] && running; then
          kill "$(cat "$d/qemu.pid")"; rm -f "$d/qemu.pid"
        fi ;;
    esac
    shift 2
  done ;;
esac
"#,
        dir = dir.display()
    )
}

fn write_lab(dir: &Path, image: &Path, lan_port: u16) -> Result<PathBuf> {
    let pass = dir.join("bmc.pass");
    fs::write(&pass, format!("{PASSWORD}\n"))?;
    set_mode(&pass, 0o600)?;
    let lab = dir.join("lab.toml");
    fs::write(
        &lab,
        format!(
            "image = \"{}\"\nrepeat = 2\n\n[[server]]\nname = \"sim\"\nconsole = \"sol\"\nentries = [\"k0\", \"k1\"]\nboot_s = 60\nmax_step_s = {MAX_STEP_S}\n\
             [server.ipmi]\nhost = \"127.0.0.1\"\nport = {lan_port}\nuser = \"admin\"\npassword_file = \"bmc.pass\"\ncipher_suite = 3\n\
             [server.pxe]\ntftp_root = \"tftp\"\nmac = \"{MAC}\"\n",
            image.display()
        ),
    )?;
    Ok(lab)
}

pub(super) fn set_mode(path: &Path, mode: u32) -> Result<()> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode))
        .map_err(|e| format!("cannot chmod {}: {e}", path.display()))
}

/// A port free on 127.0.0.1 now (UDP for the BMC, TCP for the serial
/// line), below the kernel's ephemeral range (32768 and up): ipmi_sim
/// keeps connecting to the serial port while no guest listens there, and a
/// connect whose own ephemeral port happens to be the one it dials
/// connects to itself (TCP's simultaneous open) and never to the guest.
pub(super) fn free_port(udp: bool) -> Result<u16> {
    free_port_but(udp, &[])
}

/// `free_port`, other than the ports in `taken` (chosen but not yet bound).
pub(super) fn free_port_but(udp: bool, taken: &[u16]) -> Result<u16> {
    let start = 20000 + (std::process::id() % 10000) as u16;
    for port in (start..32000).chain(20000..start).filter(|p| !taken.contains(p)) {
        let free = if udp {
            std::net::UdpSocket::bind(("127.0.0.1", port)).is_ok()
        } else {
            std::net::TcpListener::bind(("127.0.0.1", port)).is_ok()
        };
        if free {
            return Ok(port);
        }
    }
    Err("lab: no free port on 127.0.0.1 between 20000 and 32000".into())
}

fn done_steps(state_dir: &Path) -> usize {
    bootmark::lab::state::State::load(state_dir)
        .ok()
        .flatten()
        .map_or(0, |s| s.steps.iter().filter(|s| s.outcome.is_some()).count())
}

/// Each done step's console log, in step order.
fn logs_of_done_steps(state_dir: &Path) -> Result<Vec<Vec<u8>>> {
    let state = bootmark::lab::state::State::load(state_dir)?.ok_or("lab: no state")?;
    state.steps.iter().filter_map(|s| s.outcome.as_ref()).map(|o| fs::read(state_dir.join(&o.log))).collect()
}

fn check_second_run(out: &str, code: Option<i32>) -> Result<()> {
    let said = |what: &str| out.contains(what);
    if !said("resuming in") || !said("3 of 4 steps done") || !said("step 1 of 1 to do: sim/k1#2") {
        return Err(format!("lab: the second run did not resume at the fourth step alone:\n{}", tail(out)));
    }
    if !said("| kernel") {
        return Err(format!("lab: the second run printed no report:\n{}", tail(out)));
    }
    if code != Some(1) {
        return Err(format!("lab: a lab with a failed step must exit 1, not {code:?}"));
    }
    Ok(())
}

/// k0#1 ok, k1#1 (the hung power-on) failed at its deadline, k0#2 and k1#2 ok.
fn check_outcomes(state: &bootmark::lab::state::State, state_dir: &Path) -> Result<()> {
    use bootmark::lab::state::Status;
    let got: Vec<(String, Option<Status>)> =
        state.steps.iter().map(|s| (s.id.clone(), s.outcome.as_ref().map(|o| o.status))).collect();
    let want =
        [("sim/k0#1", Status::Ok), ("sim/k1#1", Status::Failed), ("sim/k0#2", Status::Ok), ("sim/k1#2", Status::Ok)];
    let want: Vec<(String, Option<Status>)> = want.iter().map(|(id, s)| (id.to_string(), Some(*s))).collect();
    if got != want {
        // A step that should have passed, whose guest says the host kept it off its CPU.
        let starved =
            state.steps.iter().zip(&want).filter(|(s, w)| s.outcome.as_ref().map(|o| o.status) != w.1).find_map(
                |(s, _)| {
                    let log = qemu::console_text(&state_dir.join(&s.outcome.as_ref()?.log)).ok()?;
                    Some(format!("{}: {}", s.id, qemu::starved(&log)?.trim()))
                },
            );
        let why = starved.map(|line| format!("{} ({line}); ", qemu::STARVED)).unwrap_or_default();
        return Err(format!("{why}lab: steps ended {got:?}, expected {want:?}"));
    }
    let failed = state.steps[1].outcome.as_ref().unwrap();
    let why = failed.why.as_deref().unwrap_or("");
    if !why.contains("deadline") || !why.contains("the console printed nothing at all after the power-on") {
        return Err(format!("lab: the hung step's reason does not say what happened: {why:?}"));
    }
    for s in [0, 2, 3] {
        let o = state.steps[s].outcome.as_ref().unwrap();
        if o.run_ids.len() != 1 {
            return Err(format!("lab: step {} has {} run records", state.steps[s].id, o.run_ids.len()));
        }
    }
    Ok(())
}

/// Every file under the state directory and everything printed, without the password.
pub(super) fn check_no_password(state_dir: &Path, password: &str, printed: &[&str]) -> Result<()> {
    let mut stack = vec![state_dir.to_path_buf()];
    let mut files = 0;
    while let Some(d) = stack.pop() {
        for e in fs::read_dir(&d)?.flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else {
                files += 1;
                if String::from_utf8_lossy(&fs::read(&p)?).contains(password) {
                    return Err(format!("lab: {} holds the BMC's password", p.display()));
                }
            }
        }
    }
    if files < 5 || printed.iter().any(|t| t.contains(password)) {
        return Err(format!("lab: the password was printed, or the state holds too few files ({files})"));
    }
    Ok(())
}

pub(super) fn tail(text: &str) -> String {
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(30)..].join("\n")
}
