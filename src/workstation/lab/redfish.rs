//! Redfish: the DMTF's HTTP interface of today's BMCs (iDRAC, iLO, XCC,
//! OpenBMC), through `ureq` with rustls. Certificates are verified, against
//! the lab file's `ca_file` when it gives one (BMCs mostly have
//! self-signed ones), else against Mozilla's roots; `insecure = true` skips
//! verification, and `lab plan` says so. The password goes in the
//! Authorization header of each request (HTTP Basic, which iDRAC, iLO 5+,
//! XCC and OpenBMC accept), never in a URL or an error.
//!
//! What the lab uses, as a user would ask it with curl:
//! - `GET /redfish/v1/Systems` → the one system (or the lab file's `system`);
//! - `POST {system}/Actions/ComputerSystem.Reset {"ResetType": "ForceOff"|"On"}`,
//!   then `GET {system}` until `PowerState` says so;
//! - `PATCH {system} {"Boot": {"BootSourceOverrideEnabled": "Once",
//!   "BootSourceOverrideTarget": "Cd"|"Pxe"|"Hdd"}}`;
//! - virtual media, found under the system (`{system}/VirtualMedia`) or
//!   under its manager (`Links.ManagedBy` → `{manager}/VirtualMedia`), as
//!   BMCs differ: the member whose `MediaTypes` has CD or DVD;
//!   `POST {media}/Actions/VirtualMedia.EjectMedia {}` and
//!   `…/VirtualMedia.InsertMedia {"Image": URL, "Inserted": true, "WriteProtected": true}`
//!   (a BMC that lists no such action gets `PATCH {media} {"Image": URL, "Inserted": true}`).
//!
//! A PATCH refused with 412/428 (BMCs that want `If-Match`) is sent again
//! with the resource's ETag.

use super::BootDevice;
use super::file::{Secret, Tls};
use serde_json::{Value, json};
use std::time::{Duration, Instant};

/// A BMC's Redfish service, with the system the lab drives found.
pub struct Redfish {
    /// `https://host[:port]`: every path the service gives is joined to it.
    origin: String,
    authorization: Secret,
    agent: ureq::Agent,
    /// The ComputerSystem's path (`/redfish/v1/Systems/1`).
    pub system: String,
    reset: String,
}

/// A CD/DVD virtual media device and its actions.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Media {
    pub path: String,
    insert: Option<String>,
    eject: Option<String>,
}

impl Redfish {
    /// Reach the service at `url` and find its system: `system` (an id or
    /// a path) when given, else the only one it has.
    pub fn connect(
        url: &str,
        user: &str,
        password: &Secret,
        tls: &Tls,
        system: Option<&str>,
    ) -> Result<Redfish, String> {
        let origin = origin(url)?;
        let mut redfish = Redfish {
            origin,
            authorization: basic_authorization(user, password),
            agent: agent(tls)?,
            system: String::new(),
            reset: String::new(),
        };
        let systems = redfish.get("/redfish/v1/Systems")?;
        let members = member_paths(&systems);
        redfish.system = match system {
            Some(want) => members
                .iter()
                .find(|m| *m == want || m.rsplit('/').next() == Some(want))
                .cloned()
                .ok_or_else(|| format!("{}: no system {want:?} (it has: {})", redfish.origin, members.join(", ")))?,
            None => match members.as_slice() {
                [one] => one.clone(),
                [] => return Err(format!("{}: /redfish/v1/Systems lists no system", redfish.origin)),
                many => {
                    return Err(format!(
                        "{}: {} systems ({}): name the server's in the lab file (redfish.system = \"…\")",
                        redfish.origin,
                        many.len(),
                        many.join(", ")
                    ));
                }
            },
        };
        let sys = redfish.get(&redfish.system)?;
        redfish.reset = sys
            .pointer("/Actions/#ComputerSystem.Reset/target")
            .and_then(Value::as_str)
            .map_or_else(|| format!("{}/Actions/ComputerSystem.Reset", redfish.system), str::to_string);
        Ok(redfish)
    }

    /// A resource's URL: `path` is ours or the BMC's (an `@odata.id`, an
    /// action's target), and the Authorization header goes with it, so it
    /// must be a path on this service's own origin. A BMC that names
    /// `evil.example/x` or `//other/x` would otherwise get the password
    /// sent to another host (`https://bmc` + `@evil…`).
    fn url(&self, path: &str) -> Result<String, String> {
        on_origin(&self.origin, path)
    }

    /// GET a resource as JSON.
    pub fn get(&self, path: &str) -> Result<Value, String> {
        let url = self.url(path)?;
        let mut resp = self
            .agent
            .get(&url)
            .header("Authorization", self.authorization.expose())
            .header("Accept", "application/json")
            .call()
            .map_err(|e| format!("GET {url}: {e}"))?;
        let status = resp.status().as_u16();
        let body = resp.body_mut().read_to_string().map_err(|e| format!("GET {url}: reading the answer: {e}"))?;
        if !(200..300).contains(&status) {
            return Err(format!("GET {url}: HTTP {status}{}", redfish_message(&body)));
        }
        serde_json::from_str(&body).map_err(|e| format!("GET {url}: not JSON: {e}"))
    }

    /// POST or PATCH `body`; 2xx is success (BMCs answer 200, 202 or 204).
    fn send(&self, method: &str, path: &str, body: &Value) -> Result<(), String> {
        let url = self.url(path)?;
        let mut etag: Option<String> = None;
        loop {
            let request = match method {
                "PATCH" => self.agent.patch(&url),
                _ => self.agent.post(&url),
            };
            let mut request = request
                .header("Authorization", self.authorization.expose())
                .header("Content-Type", "application/json")
                .header("Accept", "application/json");
            if let Some(tag) = &etag {
                request = request.header("If-Match", tag);
            }
            let mut resp = request.send(body.to_string()).map_err(|e| format!("{method} {url}: {e}"))?;
            let status = resp.status().as_u16();
            if (200..300).contains(&status) {
                return Ok(());
            }
            let text = resp.body_mut().read_to_string().unwrap_or_default();
            if (status == 412 || status == 428) && etag.is_none() && method == "PATCH" {
                etag = Some(self.etag(path)?);
                continue;
            }
            return Err(format!("{method} {url} {body}: HTTP {status}{}", redfish_message(&text)));
        }
    }

    /// A resource's ETag (header, or `@odata.etag`), for If-Match.
    fn etag(&self, path: &str) -> Result<String, String> {
        let url = self.url(path)?;
        let mut resp = self
            .agent
            .get(&url)
            .header("Authorization", self.authorization.expose())
            .call()
            .map_err(|e| format!("GET {url}: {e}"))?;
        if let Some(tag) = resp.headers().get("ETag").and_then(|v| v.to_str().ok()) {
            return Ok(tag.to_string());
        }
        let body: Value =
            serde_json::from_str(&resp.body_mut().read_to_string().unwrap_or_default()).unwrap_or_default();
        body.get("@odata.etag")
            .and_then(Value::as_str)
            .map(str::to_string)
            .ok_or_else(|| format!("GET {url}: the BMC wants If-Match but gives no ETag"))
    }

    pub fn power_is_on(&self) -> Result<bool, String> {
        let sys = self.get(&self.system)?;
        match sys.get("PowerState").and_then(Value::as_str) {
            Some("On" | "PoweringOff") => Ok(true),
            Some("Off" | "PoweringOn") => Ok(false),
            other => Err(format!("{}{}: PowerState {other:?}, neither On nor Off", self.origin, self.system)),
        }
    }

    fn reset(&self, reset_type: &str) -> Result<(), String> {
        self.send("POST", &self.reset, &json!({ "ResetType": reset_type }))
    }

    /// Off now (ForceOff: the server under test has nothing to save), and
    /// wait until the BMC says so (at most a minute).
    pub fn power_off(&self) -> Result<(), String> {
        if !self.power_is_on()? {
            return Ok(());
        }
        self.reset("ForceOff")?;
        self.wait_for(false)
    }

    /// On, and wait until the BMC says so (at most a minute): a boot
    /// override or media change must not race the power-on.
    pub fn power_on(&self) -> Result<(), String> {
        self.reset("On")?;
        self.wait_for(true)
    }

    fn wait_for(&self, on: bool) -> Result<(), String> {
        let since = Instant::now();
        while self.power_is_on()? != on {
            if since.elapsed() > Duration::from_secs(60) {
                let word = if on { "On" } else { "Off" };
                return Err(format!("{}{}: PowerState is not {word} a minute after asking", self.origin, self.system));
            }
            std::thread::sleep(Duration::from_millis(500));
        }
        Ok(())
    }

    /// The next boot only, from `device`.
    pub fn boot_once(&self, device: BootDevice) -> Result<(), String> {
        let target = match device {
            BootDevice::Pxe => "Pxe",
            BootDevice::Cdrom => "Cd",
            BootDevice::Disk => "Hdd",
        };
        self.send(
            "PATCH",
            &self.system,
            &json!({ "Boot": { "BootSourceOverrideEnabled": "Once", "BootSourceOverrideTarget": target } }),
        )
    }

    /// The CD/DVD virtual media device: under the system, else under the
    /// managers that manage it (or every manager, when it names none).
    pub fn find_cd(&self) -> Result<Media, String> {
        let sys = self.get(&self.system)?;
        let mut collections = Vec::new();
        if let Some(p) = sys.pointer("/VirtualMedia/@odata.id").and_then(Value::as_str) {
            collections.push(p.to_string());
        }
        let managers = match sys.pointer("/Links/ManagedBy").and_then(Value::as_array) {
            Some(list) if !list.is_empty() => {
                list.iter().filter_map(|m| m.get("@odata.id").and_then(Value::as_str).map(str::to_string)).collect()
            }
            _ => self.get("/redfish/v1/Managers").map(|m| member_paths(&m)).unwrap_or_default(),
        };
        for m in managers {
            if let Ok(manager) = self.get(&m)
                && let Some(p) = manager.pointer("/VirtualMedia/@odata.id").and_then(Value::as_str)
                && !collections.iter().any(|c| c == p)
            {
                collections.push(p.to_string());
            }
        }
        let mut seen = Vec::new();
        for c in &collections {
            for member in member_paths(&self.get(c)?) {
                let media = self.get(&member)?;
                let types: Vec<&str> = media
                    .get("MediaTypes")
                    .and_then(Value::as_array)
                    .map(|t| t.iter().filter_map(Value::as_str).collect())
                    .unwrap_or_default();
                if types.iter().any(|t| matches!(*t, "CD" | "DVD")) {
                    let action = |name: &str| {
                        media
                            .pointer(&format!("/Actions/#VirtualMedia.{name}/target"))
                            .and_then(Value::as_str)
                            .map(str::to_string)
                    };
                    return Ok(Media {
                        path: member.clone(),
                        insert: action("InsertMedia"),
                        eject: action("EjectMedia"),
                    });
                }
                seen.push(format!("{member} ({})", types.join("/")));
            }
        }
        Err(format!(
            "{}: no CD/DVD virtual media under the system or its managers (looked in: {}; found: {})",
            self.origin,
            if collections.is_empty() {
                "nothing: neither lists VirtualMedia".to_string()
            } else {
                collections.join(", ")
            },
            if seen.is_empty() { "none".to_string() } else { seen.join(", ") }
        ))
    }

    /// Eject whatever the device holds (nothing inserted is not an error).
    pub fn eject(&self, media: &Media) -> Result<(), String> {
        let now = self.get(&media.path)?;
        if now.get("Inserted").and_then(Value::as_bool) == Some(false)
            && now.get("Image").is_none_or(|i| i.is_null() || i.as_str() == Some(""))
        {
            return Ok(());
        }
        match &media.eject {
            Some(action) => self.send("POST", action, &json!({})),
            None => self.send("PATCH", &media.path, &json!({ "Image": null, "Inserted": false })),
        }
    }

    /// Insert the ISO at `image_url`, read-only.
    pub fn insert(&self, media: &Media, image_url: &str) -> Result<(), String> {
        match &media.insert {
            Some(action) => {
                self.send("POST", action, &json!({ "Image": image_url, "Inserted": true, "WriteProtected": true }))
            }
            None => self.send("PATCH", &media.path, &json!({ "Image": image_url, "Inserted": true })),
        }
    }
}

/// HTTP Basic (RFC 7617): `Basic base64(user:password)`.
fn basic_authorization(user: &str, password: &Secret) -> Secret {
    Secret::new(format!(
        "Basic {}",
        crate::schema::framing::base64_encode(format!("{user}:{}", password.expose()).as_bytes())
    ))
}

/// `https://bmc:8443/redfish/v1` → `https://bmc:8443`.
/// `path` as a URL on `origin`: an absolute path, or a URL on the same origin.
fn on_origin(origin: &str, path: &str) -> Result<String, String> {
    let path = path.strip_prefix(origin).filter(|p| p.starts_with('/')).unwrap_or(path);
    let allowed = |c: char| c.is_ascii_graphic() && !matches!(c, '\\' | '@');
    if !path.starts_with('/') || path.starts_with("//") || !path.chars().all(allowed) {
        return Err(format!(
            "{origin}: the service named {path:?} as one of its resources, which is not a path on it: not following it (the password would go with it)"
        ));
    }
    Ok(format!("{origin}{path}"))
}

fn origin(url: &str) -> Result<String, String> {
    let (scheme, rest) = url
        .split_once("://")
        .filter(|(s, _)| *s == "https" || *s == "http")
        .ok_or_else(|| format!("redfish.url {url:?} must start with https://"))?;
    let authority = rest.split('/').next().unwrap_or("");
    if authority.is_empty() {
        return Err(format!("redfish.url {url:?} names no host"));
    }
    Ok(format!("{scheme}://{authority}"))
}

fn agent(tls: &Tls) -> Result<ureq::Agent, String> {
    use ureq::tls::{PemItem, RootCerts, TlsConfig};
    let tls_config = match tls {
        Tls::WebPki => TlsConfig::builder().build(),
        Tls::Insecure => TlsConfig::builder().disable_verification(true).build(),
        Tls::CaFile(path) => {
            let pem =
                std::fs::read(path).map_err(|e| format!("cannot read redfish.ca_file {}: {e}", path.display()))?;
            let certs: Vec<_> = ureq::tls::parse_pem(&pem)
                .filter_map(|item| match item {
                    Ok(PemItem::Certificate(c)) => Some(c),
                    _ => None,
                })
                .collect();
            if certs.is_empty() {
                return Err(format!("redfish.ca_file {}: no PEM certificate in it", path.display()));
            }
            TlsConfig::builder().root_certs(RootCerts::new_with_certs(&certs)).build()
        }
    };
    Ok(ureq::Agent::config_builder()
        .tls_config(tls_config)
        .http_status_as_error(false)
        .timeout_global(Some(Duration::from_secs(120))) // InsertMedia may fetch the whole ISO first
        .build()
        .into())
}

/// The `@odata.id` of a collection's members.
fn member_paths(collection: &Value) -> Vec<String> {
    collection
        .get("Members")
        .and_then(Value::as_array)
        .map(|m| m.iter().filter_map(|x| x.get("@odata.id").and_then(Value::as_str).map(str::to_string)).collect())
        .unwrap_or_default()
}

/// What a Redfish error body says: `error.message`, and the first extended
/// message (where BMCs put the useful part).
fn redfish_message(body: &str) -> String {
    let Ok(v) = serde_json::from_str::<Value>(body) else {
        let line = body.lines().find(|l| !l.trim().is_empty()).unwrap_or("").trim();
        return if line.is_empty() {
            String::new()
        } else {
            format!(": {}", line.chars().take(200).collect::<String>())
        };
    };
    let main = v.pointer("/error/message").and_then(Value::as_str);
    let extended = v.pointer("/error/@Message.ExtendedInfo/0/Message").and_then(Value::as_str);
    match (main, extended) {
        (Some(m), Some(x)) if m != x => format!(": {m} ({x})"),
        (Some(m), _) | (None, Some(m)) => format!(": {m}"),
        (None, None) => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn basic_authorization_is_rfc_7617s() {
        // RFC 7617's example.
        let header = basic_authorization("Aladdin", &Secret::new("open sesame".into()));
        assert_eq!(header.expose(), "Basic QWxhZGRpbjpvcGVuIHNlc2FtZQ==");
        assert_eq!(format!("{header:?}"), "Secret(…)");
    }

    #[test]
    fn the_origin_is_taken_from_any_url_of_the_service() {
        assert_eq!(origin("https://bmc:8443/redfish/v1/").unwrap(), "https://bmc:8443");
        assert_eq!(origin("http://127.0.0.1:8000").unwrap(), "http://127.0.0.1:8000");
        assert!(origin("bmc.example").unwrap_err().contains("must start with https://"));
        assert!(origin("https:///redfish").unwrap_err().contains("names no host"));
    }

    #[test]
    fn only_paths_on_the_services_own_origin_are_followed() {
        let o = "https://bmc:8443";
        assert_eq!(on_origin(o, "/redfish/v1/Systems/1").unwrap(), "https://bmc:8443/redfish/v1/Systems/1");
        assert_eq!(on_origin(o, "https://bmc:8443/redfish/v1").unwrap(), "https://bmc:8443/redfish/v1");
        for hostile in
            ["redfish/v1", "@evil.example/x", "//evil.example/x", "https://evil.example/x", "/a@b", "/a b", ""]
        {
            let e = on_origin(o, hostile).unwrap_err();
            assert!(e.contains("not a path on it"), "{hostile}: {e}");
        }
    }

    #[test]
    fn error_bodies_say_what_the_bmc_said() {
        let body = r#"{"error":{"code":"Base.1.0.GeneralError","message":"A general error has occurred.",
            "@Message.ExtendedInfo":[{"Message":"The property Boot is read only."}]}}"#;
        assert_eq!(redfish_message(body), ": A general error has occurred. (The property Boot is read only.)");
        assert_eq!(redfish_message("<html>\nBad Gateway</html>"), ": <html>");
        assert_eq!(redfish_message(""), "");
    }

    #[test]
    fn a_ca_file_without_certificates_is_named() {
        let f = std::env::temp_dir().join(format!("bootmark-redfish-ca-{}", std::process::id()));
        std::fs::write(&f, "not a certificate\n").unwrap();
        let e = agent(&Tls::CaFile(f.clone())).err().unwrap();
        assert!(e.contains("no PEM certificate") && e.contains(&f.display().to_string()), "{e}");
        std::fs::remove_file(&f).unwrap();
    }
}
