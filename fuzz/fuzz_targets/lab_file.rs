//! Fuzz the lab file reader: any text, read as `lab.toml` beside a
//! directory that exists, gives a lab or an error — never a panic — and a
//! lab it gives keeps its promises: at least one server, each `[server.qemu]`
//! command fillable (no path placeholder inside quotes), each console file
//! its server's own and outside the state directory, numbers in their bounds.
#![no_main]

use bootmark::lab::file::{Bmc, Console, Lab};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let path = std::env::temp_dir().join("bootmark-fuzz-lab.toml");
    let Ok(lab) = Lab::parse_without_passwords(&path, text) else { return };
    assert!(!lab.servers.is_empty() && lab.repeat >= 1 && lab.repeat <= 10_000);
    let mut consoles = Vec::new();
    for s in &lab.servers {
        assert!(s.boot_s <= 7 * 86_400 && s.max_step_s.is_none_or(|m| (1..=7 * 86_400).contains(&m)));
        if let Console::File(log) = &s.console {
            assert!(!log.starts_with(&lab.state_dir), "{log:?} inside {:?}", lab.state_dir);
            assert!(!consoles.contains(log), "{log:?} twice");
            consoles.push(log.clone());
        }
        if let Bmc::Qemu { command } = &s.bmc {
            let power = bootmark::lab::qemu_server::QemuPower::new(command, &lab.state_dir, &lab.state_dir, &s.name)
                .with_image(std::path::Path::new("/image"));
            assert!(power.command_for("k0", None).is_ok(), "{command:?}");
        }
    }
});
