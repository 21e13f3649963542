//! The report's pictures as a browser shows them: headless Chromium
//! (Debian's `chromium-headless-shell`) screenshots every figure of the
//! demo's report (`--svg DIR`, the same SVG the page inlines), and each
//! panel the report says it drew data in (the page's `data-drawn`) must have
//! ink of colour in its rows of pixels — a series, a bar, a strip's cells;
//! axes, grids and text are grey or black and do not count. The whole page
//! is screenshot too and must show colour. A figure whose data were lost
//! between the report and the screen (an empty series, a range that puts
//! every point off the plot, an SVG Chromium cannot draw) fails.

use crate::host::fs;
use crate::host::process::{cmd, run, shell};
use crate::host::project::{Result, project_root};
use std::path::Path;

/// The browser, and the package that provides it (`deps::TEST_TOOLS`).
pub const CHROMIUM: &str = "chromium-headless-shell";
/// The records drawn: the demo's (generations, traced: 3 kernels × 2 workloads × 3 runs).
const RECORDS: &str = "tests/data/report/generations-traced-records.jsonl";
/// Pixels of colour a drawn panel must show at least (a series of a few points is dozens).
const MIN_INK: usize = 20;

/// A pixel of colour: its channels differ (grey, black and white do not).
fn coloured(rgb: &[u8]) -> bool {
    let (max, min) = (rgb.iter().max().unwrap(), rgb.iter().min().unwrap());
    max - min >= 60
}

pub fn check() -> Result<()> {
    let root = project_root();
    let dir = root.join("target/pictures");
    let _ = std::fs::remove_dir_all(&dir);
    let svg_dir = dir.join("svg");
    fs::create_dir_all(&dir)?;
    let sh = shell()?;
    let records = root.join(RECORDS);
    let page = run(cmd!(sh, "cargo run -q --bin bootmark -- report {records} --format html --svg {svg_dir}"))?;
    let html = dir.join("report.html");
    fs::write(&html, page.as_bytes())?;
    let figures = figures(&page)?;
    if figures.len() < 10 {
        return Err(format!("{}: {} figures; the demo's records make 30", html.display(), figures.len()));
    }
    let mut least: Option<(usize, String)> = None;
    for (id, panels) in &figures {
        let svg = svg_dir.join(format!("{id}.svg"));
        let (width, height) = svg_size(&svg)?;
        let png = dir.join(format!("{id}.png"));
        screenshot(&svg, &png, width, height)?;
        let image = decode(&png)?;
        for (panel, top, bottom) in panels {
            let ink = image.coloured_in_rows(*top, *bottom);
            if ink < MIN_INK {
                return Err(format!(
                    "{}: panel {panel} (rows {top}–{bottom}) shows {ink} pixels of colour in Chromium; the report drew data there",
                    png.display()
                ));
            }
            if least.as_ref().is_none_or(|(n, _)| ink < *n) {
                least = Some((ink, format!("{id}: {panel}")));
            }
        }
    }
    let png = dir.join("report.png");
    screenshot(&html, &png, 1000, 4000)?;
    let whole = decode(&png)?.coloured_in_rows(0, 4000);
    if whole < 10_000 {
        return Err(format!("{}: the page shows {whole} pixels of colour", png.display()));
    }
    let panels: usize = figures.iter().map(|(_, p)| p.len()).sum();
    let (n, at) = least.unwrap_or_default();
    println!(
        "pictures: {} figures, {panels} drawn panels, each with colour in Chromium (least: {n} pixels, {at}); the page's first 4000 rows: {whole}",
        figures.len()
    );
    Ok(())
}

/// Each figure's id and its drawn panels (name, top row, bottom row), from the page.
type Panels = Vec<(String, u32, u32)>;

fn figures(page: &str) -> Result<Vec<(String, Panels)>> {
    let attr = |tag: &str, name: &str| -> Result<String> {
        let at = tag.find(&format!("{name}=\"")).ok_or(format!("a figure without {name}: {tag}"))? + name.len() + 2;
        let end = tag[at..].find('"').ok_or("an unclosed attribute")?;
        Ok(tag[at..at + end].to_string())
    };
    let mut out = Vec::new();
    for f in page.split("<figure ").skip(1) {
        let tag = &f[..f.find('>').ok_or("an unclosed <figure>")?];
        let mut panels = Vec::new();
        for p in attr(tag, "data-drawn")?.split_whitespace() {
            let parsed = p.split_once(':').and_then(|(n, rows)| {
                let (t, b) = rows.split_once('-')?;
                Some((n.to_string(), t.parse().ok()?, b.parse().ok()?))
            });
            panels.push(parsed.ok_or(format!("data-drawn {p}: not NAME:TOP-BOTTOM"))?);
        }
        out.push((attr(tag, "id")?, panels));
    }
    Ok(out)
}

/// An SVG's width and height in pixels, from its root element.
fn svg_size(svg: &Path) -> Result<(u32, u32)> {
    let text = fs::read_to_string(svg)?;
    let head = &text[..text.find('>').unwrap_or(text.len())];
    let number = |name: &str| -> Option<u32> {
        let at = head.find(&format!("{name}=\""))? + name.len() + 2;
        head[at..].split('"').next()?.parse().ok()
    };
    match (number("width"), number("height")) {
        (Some(w), Some(h)) => Ok((w, h)),
        _ => Err(format!("{}: no width and height on its <svg>", svg.display())),
    }
}

fn screenshot(page: &Path, png: &Path, width: u32, height: u32) -> Result<()> {
    let sh = shell()?;
    let url = format!("file://{}", page.display());
    let size = format!("--window-size={width},{height}");
    let out = format!("--screenshot={}", png.display());
    run(cmd!(sh, "{CHROMIUM} --headless --no-sandbox --disable-gpu --hide-scrollbars {size} {out} {url}"))
        .map_err(|e| format!("could not screenshot {}: {e}", page.display()))?;
    if !png.exists() {
        return Err(format!("{CHROMIUM} wrote no {}", png.display()));
    }
    Ok(())
}

/// A decoded screenshot: RGB rows.
struct Image {
    width: usize,
    channels: usize,
    pixels: Vec<u8>,
}

impl Image {
    /// Pixels of colour in rows top..bottom.
    fn coloured_in_rows(&self, top: u32, bottom: u32) -> usize {
        let stride = self.width * self.channels;
        let rows = self.pixels.len() / stride.max(1);
        (top as usize..(bottom as usize).min(rows))
            .flat_map(|y| self.pixels[y * stride..(y + 1) * stride].chunks(self.channels))
            .filter(|px| coloured(&px[..3]))
            .count()
    }
}

fn decode(png: &Path) -> Result<Image> {
    let file = std::fs::File::open(png).map_err(|e| format!("{}: {e}", png.display()))?;
    let mut decoder = png::Decoder::new(std::io::BufReader::new(file));
    decoder.set_transformations(png::Transformations::EXPAND | png::Transformations::STRIP_16);
    let mut reader = decoder.read_info().map_err(|e| format!("{}: {e}", png.display()))?;
    let mut pixels = vec![0; reader.output_buffer_size().ok_or("a screenshot too large to decode")?];
    let info = reader.next_frame(&mut pixels).map_err(|e| format!("{}: {e}", png.display()))?;
    let channels = match info.color_type {
        png::ColorType::Rgb => 3,
        png::ColorType::Rgba => 4,
        other => return Err(format!("{}: a {other:?} screenshot, not RGB", png.display())),
    };
    pixels.truncate(info.buffer_size());
    Ok(Image { width: info.width as usize, channels, pixels })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn colour_is_ink_grey_and_black_are_not() {
        assert!(coloured(&[31, 119, 180]));
        assert!(coloured(&[214, 39, 40]));
        assert!(!coloured(&[0, 0, 0]) && !coloured(&[204, 204, 204]) && !coloured(&[255, 255, 255]));
    }

    #[test]
    fn the_page_names_each_figure_and_its_drawn_panels() {
        let page = "<figure id=\"run-a-0\" data-x=\"0..1\" data-drawn=\"probe:21-221 disk:501-660\" data-records=\"a:0\"><svg></svg></figure><figure id=\"cdf-x\" data-drawn=\"\">";
        let got = figures(page).unwrap();
        assert_eq!(got[0], ("run-a-0".into(), vec![("probe".into(), 21, 221), ("disk".into(), 501, 660)]));
        assert_eq!(got[1], ("cdf-x".into(), vec![]));
    }
}
