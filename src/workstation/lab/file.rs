//! The lab file (`LAB.toml`): the image every server boots, how often and
//! in which order, and per server its BMC, how it boots bootmark and where
//! its console is. Read once and checked whole before any BMC is asked
//! anything: an error names the server and the key. Credentials come from
//! a file or the environment (or the lab file itself, which must then not
//! be readable by others); they are never printed (`Secret`'s Debug).

use crate::workstation::template::{self, Value};
use serde::Deserialize;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

/// What the lab file says, as written.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct LabFile {
    image: PathBuf,
    #[serde(default = "one")]
    repeat: u32,
    #[serde(default)]
    order: Order,
    seed: Option<u64>,
    state: Option<PathBuf>,
    #[serde(rename = "server", default)]
    servers: Vec<ServerFile>,
}

fn one() -> u32 {
    1
}

/// The order of a server's steps. Interleaved (k0 k1 k0 k1 …) lets drift
/// over the session (a warming room, an aging disk) fall on every kernel
/// alike; random, from a seed, breaks any rhythm the interleaving has.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Order {
    #[default]
    Interleaved,
    Random,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ServerFile {
    name: String,
    ipmi: Option<IpmiFile>,
    redfish: Option<RedfishFile>,
    qemu: Option<QemuFile>,
    pxe: Option<Pxe>,
    virtual_media: Option<VirtualMedia>,
    console: String,
    entries: Option<Vec<String>>,
    #[serde(default = "default_boot_s")]
    boot_s: u64,
    max_step_s: Option<u64>,
}

/// A server's firmware, PXE and kernel boot, before /init runs: 2006's
/// machines and today's with their memory tests both fit in five minutes.
/// A step's time, at most: a week (a boot's deadline is counted from now).
const MAX_STEP_S: u64 = 7 * 86_400;
/// Boots of each entry per server, at most.
const MAX_REPEAT: u32 = 10_000;

fn default_boot_s() -> u64 {
    300
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct IpmiFile {
    host: String,
    #[serde(default = "ipmi_port")]
    port: u16,
    user: String,
    password_file: Option<PathBuf>,
    password_env: Option<String>,
    password: Option<String>,
    /// ipmitool's `-C`: the RMCP+ cipher suite (its default is 17; old BMCs
    /// and ipmi_sim speak 3).
    cipher_suite: Option<u8>,
}

fn ipmi_port() -> u16 {
    623
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RedfishFile {
    url: String,
    user: String,
    password_file: Option<PathBuf>,
    password_env: Option<String>,
    password: Option<String>,
    /// The CA certificate(s) the BMC's certificate is checked against
    /// (PEM; BMCs mostly have self-signed ones: their own certificate).
    ca_file: Option<PathBuf>,
    /// No certificate check at all (the password can be read on the way).
    #[serde(default)]
    insecure: bool,
    /// Which of the service's systems (an id or a path), when it has several.
    system: Option<String>,
}

/// A server that is a program while it is on: a QEMU guest (`cargo xtask
/// qemu …`), or any script that boots a machine and ends when it is off.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct QemuFile {
    /// Run by `sh -c` from the lab file's directory; `{entry}` becomes the
    /// step's entry (k0, k1, …), which the command boots itself; `{image}`
    /// the image's directory (a git bisect's image of the step's commit).
    command: String,
}

/// Where a BMC table says its password is: exactly one of the three.
struct PasswordFrom<'a> {
    file: &'a Option<PathBuf>,
    env: &'a Option<String>,
    inline: &'a Option<String>,
}

/// A password: its Debug never shows it, and nothing serialises it.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    pub(crate) fn new(text: String) -> Secret {
        Secret(text)
    }

    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Secret(…)")
    }
}

/// How the workstation reaches a server's BMC.
#[derive(Clone, Debug)]
pub enum Bmc {
    /// IPMI over LAN (`ipmitool -I lanplus`).
    Ipmi { host: String, port: u16, user: String, password: Secret, cipher_suite: Option<u8> },
    /// Redfish over HTTPS; `system` when the service has several.
    Redfish { url: String, user: String, password: Secret, tls: Tls, system: Option<String> },
    /// No BMC: power on runs `command` (with the step's entry in it), power
    /// off ends it: the lab's loop with QEMU standing in for a server.
    Qemu { command: String },
}

/// How the BMC's certificate is checked.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Tls {
    /// Mozilla's root certificates (a BMC with a certificate from a public CA).
    WebPki,
    /// The CA certificates (PEM) of this file: a lab's own CA, or the BMC's
    /// self-signed certificate itself.
    CaFile(std::path::PathBuf),
    /// No verification at all: anyone on the path can read the password.
    Insecure,
}

/// How a server boots bootmark.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Pxe {
    /// The directory the lab's TFTP server serves the image's pxe/ tree
    /// from: the lab writes the image and the per-MAC configs there.
    pub tftp_root: PathBuf,
    /// The server's MAC address, as the per-MAC config names are made of it.
    pub mac: String,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct VirtualMedia {
    /// A directory a web server serves: the lab writes the step's ISO there
    /// (`bootmark-SERVER.iso`, the step's entry as its menu's default).
    pub http_dir: PathBuf,
    /// The URL of that directory, as the BMC fetches from it.
    pub http_url: String,
}

#[derive(Clone, Debug)]
pub enum Boot {
    Pxe(Pxe),
    VirtualMedia(VirtualMedia),
    /// The power-on command boots the step's entry itself (`[server.qemu]`).
    Command,
}

/// Where a server's console is read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Console {
    /// Serial over LAN through the server's IPMI BMC.
    Sol,
    /// A console server or ser2net port: `tcp:HOST:PORT`.
    Tcp(String),
    /// A log a console server writes: `file:PATH`.
    File(PathBuf),
}

#[derive(Clone, Debug)]
pub struct Server {
    pub name: String,
    pub bmc: Bmc,
    pub boot: Boot,
    pub console: Console,
    /// The image entries this server boots (default: all of them).
    pub entries: Option<Vec<String>>,
    /// Added to each step's deadline for the firmware and the boot.
    pub boot_s: u64,
    /// A step's deadline at most (a plan known to be quick on this server;
    /// by default the plan's own watchdogs decide).
    pub max_step_s: Option<u64>,
}

/// Looks up an environment variable (`std::env::var`, or a test's table).
pub type Env<'a> = &'a dyn Fn(&str) -> Option<String>;

/// A lab, checked: paths made absolute from the lab file's directory.
#[derive(Clone, Debug)]
pub struct Lab {
    pub path: PathBuf,
    /// The image's manifest.json.
    pub manifest: PathBuf,
    pub repeat: u32,
    pub order: Order,
    pub seed: Option<u64>,
    /// Where the state file, the consoles' logs and the report go.
    pub state_dir: PathBuf,
    pub servers: Vec<Server>,
}

impl Lab {
    /// This lab booting the image in `image_dir` instead of its own (a git
    /// bisect's image of one commit).
    pub fn with_image(&self, image_dir: &Path) -> Lab {
        Lab { manifest: image_dir.join("manifest.json"), ..self.clone() }
    }

    /// Read and check `path`; `env` looks up `password_env` variables.
    pub fn read(path: &Path, env: &dyn Fn(&str) -> Option<String>) -> Result<Lab, String> {
        Lab::read_with(path, Some(env))
    }

    /// Read `path` for what it says about servers and steps, without
    /// reading any password (`bootmark lab status`): every password empty.
    pub fn read_without_passwords(path: &Path) -> Result<Lab, String> {
        Lab::read_with(path, None)
    }

    fn read_with(path: &Path, env: Option<Env>) -> Result<Lab, String> {
        // A lab file is a page of TOML: anything past 1 MiB is not one, and is not read into memory.
        let len = std::fs::metadata(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?.len();
        if len > 1 << 20 {
            return Err(format!("{}: {len} bytes: not a lab file (at most 1 MiB)", path.display()));
        }
        let text = std::fs::read_to_string(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        Lab::parse(path, &text, env)
    }

    /// `text` as the lab file at `path` would be read, no password read
    /// (the fuzz target's way in: any text gives a lab or an error, never a panic).
    pub fn parse_without_passwords(path: &Path, text: &str) -> Result<Lab, String> {
        Lab::parse(path, text, None)
    }

    fn parse(path: &Path, text: &str, env: Option<Env>) -> Result<Lab, String> {
        let file: LabFile = toml::from_str(text).map_err(|e| toml_error(path, text, &e))?;
        // Every path of the file is resolved once, against the file's own
        // directory made absolute: a server's command runs there, and a
        // relative `{image}` would name another place from there.
        let real_dir = path.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
        let real_dir = std::fs::canonicalize(real_dir).map_err(|e| format!("{}: {e}", path.display()))?;
        let path = &real_dir.join(path.file_name().unwrap_or_default());
        let dir = real_dir.as_path();
        let at = |p: &Path| if p.is_absolute() { p.to_path_buf() } else { dir.join(p) };
        if file.servers.is_empty() {
            return Err(format!("{}: no [[server]]: add one (see docs/lab.md)", path.display()));
        }
        if file.repeat == 0 {
            return Err(format!("{}: repeat = 0 runs nothing", path.display()));
        }
        if file.repeat > MAX_REPEAT {
            return Err(format!(
                "{}: repeat = {}: at most {MAX_REPEAT} boots of each entry",
                path.display(),
                file.repeat
            ));
        }
        let mut servers = Vec::new();
        for s in file.servers {
            server_name(&s.name).map_err(|e| format!("{}: {e}", path.display()))?;
            if servers.iter().any(|o: &Server| o.name == s.name) {
                return Err(format!("{}: two servers are named {:?}", path.display(), s.name));
            }
            let server = check_server(s, path, &at, env).map_err(|e| format!("{}: {e}", path.display()))?;
            servers.push(server);
        }
        let manifest = at(&file.image);
        let manifest = if manifest.is_dir() { manifest.join("manifest.json") } else { manifest };
        let state_dir = file.state.map(|s| at(&s)).unwrap_or_else(|| path.with_extension("state"));
        check_consoles(&servers, &state_dir).map_err(|e| format!("{}: {e}", path.display()))?;
        Ok(Lab {
            path: path.to_path_buf(),
            manifest,
            repeat: file.repeat,
            order: file.order,
            seed: file.seed,
            state_dir,
            servers,
        })
    }
}

fn check_server(s: ServerFile, lab: &Path, at: &dyn Fn(&Path) -> PathBuf, env: Option<Env>) -> Result<Server, String> {
    let name = s.name;
    let inside = |e: String| format!("server {name:?}: {e}");
    let bmc = match (s.ipmi, s.redfish, s.qemu) {
        (None, None, Some(q)) => {
            if !q.command.contains("{entry}") {
                return Err(inside(format!(
                    "qemu.command {:?} has no {{entry}}: every step would boot the same kernel",
                    q.command
                )));
            }
            // A path placeholder inside quotes: refused with the lab file, not at the first step.
            let dry =
                [("image", Value::Path(Path::new("/image"))), ("entry", Value::Plain("k0")), ("set", Value::Plain(""))];
            template::fill(&q.command, &dry, "qemu.command").map_err(inside)?;
            Bmc::Qemu { command: q.command }
        }
        (Some(i), None, None) => Bmc::Ipmi {
            password: password(
                PasswordFrom { file: &i.password_file, env: &i.password_env, inline: &i.password },
                "ipmi",
                lab,
                at,
                env,
            )
            .map_err(inside)?,
            host: i.host,
            port: i.port,
            user: i.user,
            cipher_suite: i.cipher_suite,
        },
        (None, Some(r), None) => {
            no_userinfo("redfish.url", &r.url).map_err(inside)?;
            // Basic auth goes with every request: over plain http anyone on the path reads the password.
            if !(r.url.starts_with("https://") || (r.url.starts_with("http://") && r.insecure)) {
                return Err(inside(format!(
                    "redfish.url {:?} must start with https:// (plain http:// sends the password in clear; only with insecure = true)",
                    r.url
                )));
            }
            Bmc::Redfish {
                password: password(
                    PasswordFrom { file: &r.password_file, env: &r.password_env, inline: &r.password },
                    "redfish",
                    lab,
                    at,
                    env,
                )
                .map_err(inside)?,
                url: r.url.trim_end_matches('/').to_string(),
                user: r.user,
                tls: match (r.insecure, r.ca_file) {
                    (true, Some(_)) => return Err(inside("redfish: insecure = true and a ca_file: give one".into())),
                    (true, None) => Tls::Insecure,
                    (false, Some(f)) => Tls::CaFile(at(&f)),
                    (false, None) => Tls::WebPki,
                },
                system: r.system,
            }
        }
        _ => {
            return Err(inside(
                "give exactly one BMC: an [server.ipmi] or a [server.redfish] table (or [server.qemu] for a guest)"
                    .into(),
            ));
        }
    };
    let boot = match (s.pxe, s.virtual_media) {
        (None, None) if matches!(bmc, Bmc::Qemu { .. }) => Boot::Command,
        (_, _) if matches!(bmc, Bmc::Qemu { .. }) => {
            return Err(inside(
                "[server.qemu] boots the entry itself: drop [server.pxe] and [server.virtual_media]".into(),
            ));
        }
        (Some(mut p), None) => {
            p.mac = mac(&p.mac).map_err(inside)?;
            p.tftp_root = at(&p.tftp_root);
            Boot::Pxe(p)
        }
        (None, Some(mut v)) => {
            no_userinfo("virtual_media.http_url", &v.http_url).map_err(inside)?;
            if !(v.http_url.starts_with("http://") || v.http_url.starts_with("https://")) {
                return Err(inside(format!(
                    "virtual_media.http_url {:?} must start with http:// or https://",
                    v.http_url
                )));
            }
            v.http_url = v.http_url.trim_end_matches('/').to_string();
            v.http_dir = at(&v.http_dir);
            Boot::VirtualMedia(v)
        }
        _ => return Err(inside("give exactly one way to boot: [server.pxe] or [server.virtual_media]".into())),
    };
    let console = match s.console.as_str() {
        "sol" if matches!(bmc, Bmc::Ipmi { .. }) => Console::Sol,
        "sol" => return Err(inside("console = \"sol\" needs an IPMI BMC; use tcp:HOST:PORT or file:PATH".into())),
        c if c.starts_with("tcp:") => Console::Tcp(c.to_string()),
        c if c.starts_with("file:") => Console::File(at(Path::new(&c["file:".len()..]))),
        c => return Err(inside(format!("console {c:?}: use \"sol\", \"tcp:HOST:PORT\" or \"file:PATH\""))),
    };
    if matches!(boot, Boot::VirtualMedia(_)) && !matches!(bmc, Bmc::Redfish { .. }) {
        return Err(inside("virtual media is inserted through Redfish: give [server.redfish]".into()));
    }
    if s.max_step_s == Some(0) {
        return Err(inside("max_step_s = 0 leaves no time for a boot".into()));
    }
    for (key, value) in [("boot_s", Some(s.boot_s)), ("max_step_s", s.max_step_s)] {
        if value.is_some_and(|v| v > MAX_STEP_S) {
            return Err(inside(format!("{key} = {}: at most {MAX_STEP_S} (a week)", value.unwrap_or(0))));
        }
    }
    Ok(Server { name, bmc, boot, console, entries: s.entries, boot_s: s.boot_s, max_step_s: s.max_step_s })
}

/// The password of a BMC table (`what`: its name), from exactly one place
/// (`env`: None when passwords are not to be read).
/// Each server's console is its own, and none is a file the lab writes:
/// two servers on one log would take each other's boots for their own,
/// and a console inside the state directory (a step's own log) would feed
/// the log back into itself.
fn check_consoles(servers: &[Server], state_dir: &Path) -> Result<(), String> {
    use std::os::unix::fs::MetadataExt;
    let state = crate::fsutil::resolved(state_dir);
    let mut seen: Vec<(PathBuf, &str)> = Vec::new();
    // One file under two names (a hard link) is one console too.
    let same_file = |a: &Path, b: &Path| match (std::fs::metadata(a), std::fs::metadata(b)) {
        (Ok(a), Ok(b)) => (a.dev(), a.ino()) == (b.dev(), b.ino()),
        _ => false,
    };
    for s in servers {
        let Console::File(log) = &s.console else { continue };
        let log = crate::fsutil::resolved(log);
        if let Some((_, other)) = seen.iter().find(|(p, _)| *p == log || same_file(p, &log)) {
            return Err(format!(
                "servers {other:?} and {:?} both read the console file {}: each server needs its own, or one would take the other's boots for its own",
                s.name,
                log.display()
            ));
        }
        if log.starts_with(&state) {
            return Err(format!(
                "server {:?}: its console file {} is inside the lab's state directory {}, where the lab writes each step's log: give the file the console server writes",
                s.name,
                log.display(),
                state.display()
            ));
        }
        seen.push((log, &s.name));
    }
    Ok(())
}

/// An environment variable's name as they are written (`IPMI_PASSWORD`):
/// `[A-Z_][A-Z0-9_]*`. Stricter than the shell, so that a password typed
/// in its place (`Hunt3rPW`) is told apart and not echoed in "is not set".
fn is_variable_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars.next().is_some_and(|c| c.is_ascii_uppercase() || c == '_')
        && chars.all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_')
}

fn password(
    p: PasswordFrom,
    what: &str,
    lab: &Path,
    at: &dyn Fn(&Path) -> PathBuf,
    env: Option<Env>,
) -> Result<Secret, String> {
    let given = [p.file.is_some(), p.env.is_some(), p.inline.is_some()].iter().filter(|g| **g).count();
    if given != 1 {
        return Err(format!("{what}: give exactly one of password_file, password_env and password"));
    }
    // A password typed where its variable's name goes is never echoed.
    if let Some(var) = p.env
        && !is_variable_name(var)
    {
        return Err(format!(
            "{what}.password_env must name an environment variable as they are written (capitals, digits and _, \
             such as IPMI_PASSWORD), and what it holds does not look like one, so it is not shown: if it is the \
             password, put it in such a variable, or in a password_file"
        ));
    }
    let Some(env) = env else { return Ok(Secret(String::new())) };
    match (p.file, p.env, p.inline) {
        (Some(file), None, None) => {
            let file = at(file);
            refuse_if_others_can_read(&file)?;
            let text = std::fs::read_to_string(&file).map_err(|e| format!("cannot read {}: {e}", file.display()))?;
            // A password file ends with a newline, which is not part of it.
            Ok(Secret(text.strip_suffix('\n').unwrap_or(&text).to_string()))
        }
        (None, Some(var), None) => {
            env(var).map(Secret).ok_or_else(|| format!("{what}.password_env: ${var} is not set"))
        }
        (None, None, Some(inline)) => {
            refuse_if_others_can_read(lab)?;
            Ok(Secret(inline.clone()))
        }
        _ => Err(format!("{what}: give exactly one of password_file, password_env and password")),
    }
}

fn refuse_if_others_can_read(path: &Path) -> Result<(), String> {
    let mode =
        std::fs::metadata(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?.permissions().mode();
    if mode & 0o004 != 0 {
        return Err(format!(
            "{} holds a password and anyone on this machine can read it: chmod o-r {}",
            path.display(),
            path.display()
        ));
    }
    Ok(())
}

/// A TOML error as the lab file's reader says it, without quoting the
/// file: toml's own message shows the offending line, and a value it
/// could not take (`password = 12345`, an unterminated string) would be
/// printed. Where the message would show a value of a password key, or
/// the line is one, only the place and the key's kind are said.
fn toml_error(path: &Path, text: &str, e: &toml::de::Error) -> String {
    let place = e.span().map(|span| {
        let before = &text[..span.start.min(text.len())];
        let line = before.matches('\n').count() + 1;
        let column = before.len() - before.rfind('\n').map_or(0, |n| n + 1) + 1;
        (line, column)
    });
    let at = place.map_or(String::new(), |(line, column)| format!(" line {line}, column {column}:"));
    let secrets: Vec<&str> = text.lines().filter(|l| is_secret_line(l)).collect();
    let offending = place.and_then(|(line, _)| text.lines().nth(line - 1)).unwrap_or("");
    let message = e.message().trim();
    let shows_secret = secrets.iter().filter_map(|l| secret_value(l)).any(|v| message.contains(v));
    // "unknown field `pasword`" names the key only: worth showing for a typo'd key.
    let key_only = message.starts_with("unknown field");
    if shows_secret || (is_secret_line(offending) && !key_only) {
        return format!(
            "{}:{at} a password key's value is not valid TOML or not a string (not shown here): write it as password = \"…\", or better, use password_file",
            path.display()
        );
    }
    format!("{}:{at} {}", path.display(), without_values(message))
}

/// A TOML error's message with the values it quotes (`invalid type:
/// integer \`98765432\``) not shown: a password in an inline table or
/// under an escaped key is no line a check of keys finds. Messages that
/// quote keys (an unknown or missing field) keep them.
fn without_values(message: &str) -> String {
    if ["unknown field", "missing field", "duplicate key", "unknown variant"].iter().any(|k| message.starts_with(k)) {
        return message.to_string();
    }
    let mut out = String::new();
    for (i, part) in message.split('`').enumerate() {
        // Odd parts were between backticks.
        out.push_str(if i % 2 == 1 { "(not shown)" } else { part });
    }
    out
}

/// A line that sets a password-like key (`password`, `pasword`, `passwd`, `secret`, `token`…).
fn is_secret_line(line: &str) -> bool {
    let key = line.split('=').next().unwrap_or("").trim().to_ascii_lowercase();
    line.contains('=') && ["pas", "pwd", "secret", "token"].iter().any(|k| key.contains(k))
}

/// The value of a secret line, without quotes (none when empty).
fn secret_value(line: &str) -> Option<&str> {
    let value = line.split_once('=')?.1.trim().trim_matches(['"', '\'']);
    (!value.is_empty()).then_some(value)
}

/// A URL must not carry a user or password (`https://root:pw@bmc`): it
/// would be printed with every message that names the URL.
fn no_userinfo(key: &str, url: &str) -> Result<(), String> {
    let authority = url.split_once("://").map_or(url, |(_, rest)| rest).split(['/', '?', '#']).next().unwrap_or("");
    if authority.contains('@') {
        return Err(format!(
            "{key} holds a user or password before '@' (not shown here): give the user as `user` and the password as password_file"
        ));
    }
    Ok(())
}

/// Server names become file names in the state directory and the TFTP
/// and web roots: letters, digits, `.`, `_` and `-`, not starting with `.`.
fn server_name(name: &str) -> Result<(), String> {
    let allowed = |c: char| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-');
    if name.is_empty() || name.starts_with('.') || !name.chars().all(allowed) || name.len() > 64 {
        return Err(format!(
            "server name {name:?}: use up to 64 letters, digits, '.', '_' and '-', not starting with '.' (it names files in the state directory)"
        ));
    }
    Ok(())
}

/// `52:54:00:AB:cd:ef` or with dashes → `52:54:00:ab:cd:ef`.
fn mac(text: &str) -> Result<String, String> {
    let parts: Vec<&str> = text.split([':', '-']).collect();
    if parts.len() != 6 || parts.iter().any(|p| p.len() != 2 || !p.chars().all(|c| c.is_ascii_hexdigit())) {
        return Err(format!("pxe.mac {text:?} is not a MAC address (six hex pairs)"));
    }
    Ok(parts.join(":").to_ascii_lowercase())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dir(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("bootmark-lab-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    fn write(path: &Path, text: &str, mode: u32) {
        std::fs::write(path, text).unwrap();
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
    }

    const IPMI_PXE: &str = r#"
image = "image"
repeat = 2
[[server]]
name = "dl140"
console = "sol"
[server.ipmi]
host = "127.0.0.1"
port = 9001
user = "admin"
password_file = "dl140.pass"
[server.pxe]
tftp_root = "tftp"
mac = "52-54-00-AB-CD-EF"
"#;

    fn no_env(_: &str) -> Option<String> {
        None
    }

    #[test]
    fn an_ipmi_pxe_lab_reads_with_paths_beside_the_file() {
        let d = dir("read");
        write(&d.join("lab.toml"), IPMI_PXE, 0o644);
        write(&d.join("dl140.pass"), "s3cret\n", 0o600);
        let lab = Lab::read(&d.join("lab.toml"), &no_env).unwrap();
        assert_eq!((lab.repeat, lab.order, lab.state_dir.clone()), (2, Order::Interleaved, d.join("lab.state")));
        assert_eq!(lab.manifest, d.join("image"));
        let s = &lab.servers[0];
        let Bmc::Ipmi { port, password, .. } = &s.bmc else { panic!("{:?}", s.bmc) };
        assert_eq!((*port, password.expose()), (9001, "s3cret"));
        let Boot::Pxe(p) = &s.boot else { panic!() };
        assert_eq!((p.mac.as_str(), p.tftp_root.clone()), ("52:54:00:ab:cd:ef", d.join("tftp")));
        assert_eq!((s.console.clone(), s.boot_s), (Console::Sol, 300));
        assert!(!format!("{lab:?}").contains("s3cret"), "Debug shows no password");
    }

    const REDFISH_MEDIA: &str = r#"
image = "image"
[[server]]
name = "r650"
console = "tcp:consoles:3001"
[server.redfish]
url = "https://idrac-r650/redfish/v1/"
user = "root"
password_env = "REDFISH_PASSWORD"
ca_file = "idrac.pem"
system = "System.Embedded.1"
[server.virtual_media]
http_dir = "www"
http_url = "http://10.0.0.1/bootmark/"
"#;

    #[test]
    fn a_redfish_lab_with_virtual_media_reads_with_its_certificate_policy() {
        let d = dir("redfish");
        write(&d.join("lab.toml"), REDFISH_MEDIA, 0o644);
        let env = |v: &str| (v == "REDFISH_PASSWORD").then(|| "calvin".to_string());
        let lab = Lab::read(&d.join("lab.toml"), &env).unwrap();
        let s = &lab.servers[0];
        let Bmc::Redfish { url, tls, system, password, .. } = &s.bmc else { panic!("{:?}", s.bmc) };
        assert_eq!(url, "https://idrac-r650/redfish/v1");
        assert_eq!(tls, &Tls::CaFile(d.join("idrac.pem")));
        assert_eq!((system.as_deref(), password.expose()), (Some("System.Embedded.1"), "calvin"));
        let Boot::VirtualMedia(v) = &s.boot else { panic!() };
        assert_eq!((v.http_dir.clone(), v.http_url.as_str()), (d.join("www"), "http://10.0.0.1/bootmark"));
        assert_eq!(s.console, Console::Tcp("tcp:consoles:3001".into()));
        let cases = [
            (REDFISH_MEDIA.replace("ca_file = \"idrac.pem\"", "insecure = true"), None),
            (
                REDFISH_MEDIA.replace("ca_file = \"idrac.pem\"", "ca_file = \"a.pem\"\ninsecure = true"),
                Some("give one"),
            ),
            (REDFISH_MEDIA.replace("console = \"tcp:consoles:3001\"", "console = \"sol\""), Some("needs an IPMI BMC")),
            (REDFISH_MEDIA.replace("http://10.0.0.1", "ftp://10.0.0.1"), Some("http_url \"ftp://")),
            (REDFISH_MEDIA.replace("https://idrac-r650", "idrac-r650"), Some("must start with https://")),
            (REDFISH_MEDIA.replace("https://idrac-r650", "http://idrac-r650"), Some("sends the password in clear")),
            (
                REDFISH_MEDIA
                    .replace("https://idrac-r650", "http://idrac-r650")
                    .replace("ca_file = \"idrac.pem\"", "insecure = true"),
                None,
            ),
            (
                REDFISH_MEDIA.replace("https://idrac-r650", "https://root:calvin@idrac-r650"),
                Some("before '@' (not shown here)"),
            ),
            (
                REDFISH_MEDIA.replace("http://10.0.0.1", "http://u:calvin@10.0.0.1"),
                Some("virtual_media.http_url holds a user"),
            ),
        ];
        for (text, want) in cases {
            write(&d.join("lab.toml"), &text, 0o644);
            match (Lab::read(&d.join("lab.toml"), &env), want) {
                (Ok(lab), None) => assert!(matches!(lab.servers[0].bmc, Bmc::Redfish { tls: Tls::Insecure, .. })),
                (Err(e), Some(want)) => assert!(e.contains(want) && !e.contains("calvin"), "want {want:?} in: {e}"),
                (got, _) => panic!("{want:?}: {:?}", got.map(|l| l.servers[0].bmc.clone())),
            }
        }
    }

    /// Each server reads its own console, never one the lab writes, and
    /// every path is resolved once against the lab file's directory.
    #[test]
    fn consoles_are_each_servers_own_and_paths_resolve_against_the_lab_file() {
        let d = dir("consoles");
        let server = |name: &str, console: &str| {
            format!(
                "[[server]]\nname = \"{name}\"\nconsole = \"file:{console}\"\n[server.qemu]\ncommand = \"xtask qemu --image {{image}} --entry-label {{entry}}\"\n"
            )
        };
        let cases = [
            (
                server("a", "shared.log") + &server("b", "./shared.log"),
                "servers \"a\" and \"b\" both read the console file",
            ),
            (server("a", "lab.state/a/k0-1.log"), "is inside the lab's state directory"),
            (format!("state = \"s\"\n{}", server("a", "s/a.log")), "is inside the lab's state directory"),
            // Other spellings of one file, none of them there yet (found by trying).
            (server("a", "shared.log") + &server("b", &format!("sub/{UP}/shared.log")), "both read the console file"),
            (server("a", "shared.log") + &server("b", "here/shared.log"), "both read the console file"),
            (server("a", &format!("sub/{UP}/lab.state/a.log")), "is inside the lab's state directory"),
            (server("a", "real.log") + &server("b", "hard.log"), "both read the console file"),
        ];
        std::os::unix::fs::symlink(".", d.join("here")).unwrap();
        const UP: &str = "..";
        std::fs::write(d.join("real.log"), "").unwrap();
        std::fs::hard_link(d.join("real.log"), d.join("hard.log")).unwrap();
        for (servers, want) in cases {
            write(&d.join("lab.toml"), &format!("image = \"image\"\n{servers}"), 0o644);
            let e = Lab::read(&d.join("lab.toml"), &no_env).unwrap_err();
            assert!(e.contains(want), "want {want:?} in: {e}");
        }
        // Read through a path relative to the working directory: absolute paths all the same.
        write(&d.join("lab.toml"), &format!("image = \"image\"\n{}", server("a", "a.log")), 0o644);
        let up = std::env::current_dir().unwrap().components().count() - 1;
        let relative = Path::new(&"../".repeat(up)).join(d.strip_prefix("/").unwrap()).join("lab.toml");
        assert!(relative.is_relative());
        let lab = Lab::read(&relative, &no_env).unwrap();
        assert_eq!((lab.manifest.clone(), lab.state_dir.clone()), (d.join("image"), d.join("lab.state")));
        assert_eq!(lab.servers[0].console, Console::File(d.join("a.log")));
    }

    #[test]
    fn a_file_past_a_mebibyte_is_no_lab_file_and_is_not_read() {
        let d = dir("huge");
        write(&d.join("lab.toml"), &format!("{IPMI_PXE}#{}\n", "x".repeat(1 << 20)), 0o600);
        let e = Lab::read(&d.join("lab.toml"), &no_env).unwrap_err();
        assert!(e.contains("not a lab file (at most 1 MiB)"), "{e}");
    }

    /// The fuzz target's seeds are lab files that read, so it starts from real ones.
    #[test]
    fn the_fuzz_seeds_are_lab_files_that_read() {
        let d = dir("fuzz-seeds");
        for seed in [
            include_str!("../../../fuzz/seeds/lab_file/ipmi-pxe.toml"),
            include_str!("../../../fuzz/seeds/lab_file/qemu-two.toml"),
        ] {
            let lab = Lab::parse_without_passwords(&d.join("lab.toml"), seed).unwrap();
            assert!(!lab.servers.is_empty());
        }
    }

    #[test]
    fn a_qemu_server_needs_its_entry_in_its_command_and_no_other_boot() {
        let d = dir("qemu");
        let lab = "image = \"image\"\n[[server]]\nname = \"vm\"\nconsole = \"file:serial.log\"\n\
                   [server.qemu]\ncommand = \"cargo xtask qemu --entry-label {entry} --log serial.log\"\n";
        write(&d.join("lab.toml"), lab, 0o644);
        let read = Lab::read(&d.join("lab.toml"), &no_env).unwrap();
        let s = &read.servers[0];
        assert!(matches!(&s.bmc, Bmc::Qemu { command } if command.contains("{entry}")), "{:?}", s.bmc);
        assert!(matches!(s.boot, Boot::Command));
        assert_eq!(s.console, Console::File(d.join("serial.log")));
        let cases = [
            (lab.replace(" {entry}", ""), "has no {entry}"),
            (lab.replace("{entry}", "{entry} --image \\\"{image}\\\""), "{image} stands inside quotes"),
            (format!("{lab}[server.pxe]\ntftp_root = \"t\"\nmac = \"52:54:00:00:00:01\"\n"), "drop [server.pxe]"),
            (lab.replace("file:serial.log", "sol"), "needs an IPMI BMC"),
        ];
        for (text, want) in cases {
            write(&d.join("lab.toml"), &text, 0o644);
            let e = Lab::read(&d.join("lab.toml"), &no_env).unwrap_err();
            assert!(e.contains(want), "want {want:?} in: {e}");
        }
    }

    #[test]
    fn passwords_others_can_read_are_refused() {
        let d = dir("perm");
        write(&d.join("lab.toml"), IPMI_PXE, 0o644);
        write(&d.join("dl140.pass"), "s3cret\n", 0o644);
        let e = Lab::read(&d.join("lab.toml"), &no_env).unwrap_err();
        assert!(e.contains("anyone on this machine can read it: chmod o-r"), "{e}");
        let inline = IPMI_PXE.replace("password_file = \"dl140.pass\"", "password = \"s3cret\"");
        write(&d.join("lab.toml"), &inline, 0o644);
        let e = Lab::read(&d.join("lab.toml"), &no_env).unwrap_err();
        assert!(e.contains("lab.toml holds a password") && !e.contains("s3cret"), "{e}");
        write(&d.join("lab.toml"), &inline, 0o600);
        assert!(Lab::read(&d.join("lab.toml"), &no_env).is_ok());
    }

    #[test]
    fn no_error_quotes_a_password_line() {
        let d = dir("quote");
        let inline = |line: &str| IPMI_PXE.replace("password_file = \"dl140.pass\"", line);
        let cases = [
            (inline("pasword = \"hunter2\""), "unknown field `pasword`"),
            (inline("password = \"hunter2"), "a password key's value is not valid"),
            (inline("password = 20061994"), "a password key's value is not valid"),
            (inline("password = hunter2"), "a password key's value is not valid"),
            (inline("passwd = \"hunter2\""), "unknown field `passwd`"),
        ];
        for (text, want) in cases {
            write(&d.join("lab.toml"), &text, 0o600);
            let e = Lab::read(&d.join("lab.toml"), &no_env).unwrap_err();
            assert!(e.contains(want), "want {want:?} in: {e}");
            assert!(!e.contains("hunter2") && !e.contains("20061994"), "the password is printed: {e}");
            assert!(e.contains("line 11, column"), "the place is named: {e}");
        }
        // Errors on other lines still say what is wrong.
        let e = {
            write(&d.join("lab.toml"), &IPMI_PXE.replace("port = 9001", "port = \"ninety\""), 0o600);
            Lab::read(&d.join("lab.toml"), &no_env).unwrap_err()
        };
        assert!(e.contains("line 9, column 8: invalid type: string \"ninety\", expected u16"), "{e}");
        // In an inline table, or under an escaped key, no line says "password =": the value is still not shown.
        let ipmi =
            "[server.ipmi]\nhost = \"127.0.0.1\"\nport = 9001\nuser = \"admin\"\npassword_file = \"dl140.pass\"\n";
        for table in [
            "ipmi = { host = \"10.0.0.5\", user = \"admin\", password = 98765432 }\n",
            "[server.ipmi]\nhost = \"10.0.0.5\"\nuser = \"admin\"\n\"p\\u0061ssword\" = 98765432\n",
        ] {
            write(&d.join("lab.toml"), &IPMI_PXE.replace(ipmi, table), 0o600);
            let e = Lab::read(&d.join("lab.toml"), &no_env).unwrap_err();
            assert!(!e.contains("98765432") && e.contains("(not shown)"), "the password is printed: {e}");
        }
    }

    #[test]
    fn server_names_are_file_names_that_stay_in_their_directory() {
        let d = dir("names");
        write(&d.join("dl140.pass"), "x", 0o600);
        for bad in ["", "../../outside", "/abs/path", "rack1/dl140", ".hidden", "a b"] {
            write(&d.join("lab.toml"), &IPMI_PXE.replace("name = \"dl140\"", &format!("name = {bad:?}")), 0o600);
            let e = Lab::read(&d.join("lab.toml"), &no_env).unwrap_err();
            assert!(e.contains(&format!("server name {bad:?}: use up to 64 letters")), "{bad}: {e}");
        }
        write(&d.join("lab.toml"), &IPMI_PXE.replace("name = \"dl140\"", "name = \"rack1-dl140.b_2\""), 0o600);
        assert!(Lab::read(&d.join("lab.toml"), &no_env).is_ok());
    }

    #[test]
    fn the_environment_gives_a_password_when_asked() {
        let d = dir("env");
        let text = IPMI_PXE.replace("password_file = \"dl140.pass\"", "password_env = \"IPMI_PASSWORD\"");
        write(&d.join("lab.toml"), &text, 0o644);
        let e = Lab::read(&d.join("lab.toml"), &no_env).unwrap_err();
        assert!(e.contains("$IPMI_PASSWORD is not set"), "{e}");
        // The password typed where the variable's name goes: refused, not shown, even by `lab status`.
        for typed in ["Hunt3rPW", "9LIVES", "hunter 2"] {
            let mistyped = text.replace("IPMI_PASSWORD", typed);
            write(&d.join("lab.toml"), &mistyped, 0o644);
            for e in [
                Lab::read(&d.join("lab.toml"), &no_env).unwrap_err(),
                Lab::read_without_passwords(&d.join("lab.toml")).unwrap_err(),
            ] {
                assert!(e.contains("must name an environment variable") && !e.contains(typed), "{e}");
            }
        }
        write(&d.join("lab.toml"), &text, 0o644);
        // `lab status` reads no password, so it needs none.
        let lab = Lab::read_without_passwords(&d.join("lab.toml")).unwrap();
        let Bmc::Ipmi { password, .. } = &lab.servers[0].bmc else { panic!() };
        assert_eq!(password.expose(), "");
        let env = |v: &str| (v == "IPMI_PASSWORD").then(|| "from-env".to_string());
        let lab = Lab::read(&d.join("lab.toml"), &env).unwrap();
        let Bmc::Ipmi { password, .. } = &lab.servers[0].bmc else { panic!() };
        assert_eq!(password.expose(), "from-env");
    }

    #[test]
    fn mistakes_are_named_with_their_server_and_key() {
        let d = dir("bad");
        write(&d.join("dl140.pass"), "x", 0o600);
        let cases = [
            (IPMI_PXE.replace("mac = \"52-54-00-AB-CD-EF\"", "mac = \"52:54\""), "server \"dl140\": pxe.mac \"52:54\""),
            (IPMI_PXE.replace("console = \"sol\"", "console = \"com1\""), "console \"com1\": use"),
            (
                IPMI_PXE.replace(
                    "[server.pxe]",
                    "[server.virtual_media]\nhttp_dir = \"www\"\nhttp_url = \"http://x/\"\n[server.pxe]",
                ),
                "exactly one way to boot",
            ),
            (IPMI_PXE.replace("repeat = 2", "repeat = 2\ncolour = \"red\""), "unknown field `colour`"),
            (IPMI_PXE.replace("repeat = 2", "repeat = 0"), "repeat = 0"),
            (IPMI_PXE.replace("repeat = 2", "repeat = 4294967295"), "at most 10000 boots"),
            (
                IPMI_PXE.replace("console = \"sol\"", "console = \"sol\"\nboot_s = 9223372036854775807"),
                "boot_s = 9223372036854775807: at most 604800",
            ),
            (
                IPMI_PXE.replace("console = \"sol\"", "console = \"sol\"\nmax_step_s = 604801"),
                "max_step_s = 604801: at most 604800",
            ),
            (IPMI_PXE.replace("[server.ipmi]", "[server.nothing]"), "unknown field `nothing`"),
            (
                format!("{IPMI_PXE}{}", &IPMI_PXE[IPMI_PXE.find("[[server]]").unwrap()..]),
                "two servers are named \"dl140\"",
            ),
        ];
        for (text, want) in cases {
            write(&d.join("lab.toml"), &text, 0o600);
            let e = Lab::read(&d.join("lab.toml"), &no_env).unwrap_err();
            assert!(e.contains(want), "want {want:?} in: {e}");
        }
    }
}
