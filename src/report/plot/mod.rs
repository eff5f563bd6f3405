//! Plots of one test over commits, drawn with plotters into SVG or PNG: per commit the
//! min–max band and the median, change points and culprits as labelled vertical markers, the
//! stake as a horizontal line, unbuildable commits marked, and a second panel of box plots
//! (before/after each marker) on the same y scale.
//!
//! Text is drawn from DejaVu Sans shipped inside the crate (`fonts/`), never a system font, so
//! a PNG has the same labels on a machine without fonts. Layout is computed here in pixels
//! (plotters draws), so the same data gives the same bytes.

use std::path::Path;

use plotters::prelude::*;

mod bitmap;
mod model;
mod panels;
mod primitives;

pub use model::{BoxGroup, Chart, Marker, MarkerKind, PlotCommit, Style};
use panels::draw;
use primitives::register_font;

/// Picture formats, by file extension.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ImageFormat {
    Png,
    Svg,
}

impl ImageFormat {
    /// The format a path asks for by its extension; a usage error (exit 2) naming the path
    /// for anything but `.png` and `.svg`.
    pub fn of(path: &Path) -> anyhow::Result<ImageFormat> {
        let ext = path
            .extension()
            .and_then(|e| e.to_str())
            .map(str::to_ascii_lowercase);
        match ext.as_deref() {
            Some("png") => Ok(ImageFormat::Png),
            Some("svg") => Ok(ImageFormat::Svg),
            _ => Err(crate::error::UsageError::err(format!(
                "--plot {}: the file name must end in .png or .svg",
                path.display()
            ))),
        }
    }
}

/// The chart as an SVG document.
pub fn svg(chart: &Chart) -> anyhow::Result<String> {
    register_font()?;
    let mut out = String::new();
    {
        let root =
            SVGBackend::with_string(&mut out, (chart.width, chart.height)).into_drawing_area();
        draw(&root, chart).map_err(|e| anyhow::anyhow!("cannot draw the plot: {e}"))?;
        root.present()
            .map_err(|e| anyhow::anyhow!("cannot draw the plot: {e}"))?;
    }
    Ok(out)
}

/// The chart as PNG bytes (8-bit RGB).
pub fn png(chart: &Chart) -> anyhow::Result<Vec<u8>> {
    register_font()?;
    let (w, h) = (chart.width, chart.height);
    let mut rgb = vec![0u8; w as usize * h as usize * 3];
    {
        let root = bitmap::Bitmap::with_buffer(&mut rgb, (w, h))?.into_drawing_area();
        draw(&root, chart).map_err(|e| anyhow::anyhow!("cannot draw the plot: {e}"))?;
        root.present()
            .map_err(|e| anyhow::anyhow!("cannot draw the plot: {e}"))?;
    }
    let mut out = Vec::new();
    {
        let mut enc = png::Encoder::new(&mut out, w, h);
        enc.set_color(png::ColorType::Rgb);
        enc.set_depth(png::BitDepth::Eight);
        let mut writer = enc.write_header()?;
        writer.write_image_data(&rgb)?;
        writer.finish()?;
    }
    Ok(out)
}

/// Render `chart` in the format `path`'s extension names and write it there (through a temp
/// file and a rename, so a reader never sees half a picture).
pub fn write(chart: &Chart, path: &Path) -> anyhow::Result<()> {
    let bytes = match ImageFormat::of(path)? {
        ImageFormat::Png => png(chart)?,
        ImageFormat::Svg => svg(chart)?.into_bytes(),
    };
    write_file(path, &bytes)
}

/// Write `bytes` to `path` through a temp file beside it and a rename.
pub fn write_file(path: &Path, bytes: &[u8]) -> anyhow::Result<()> {
    use anyhow::Context as _;
    use std::io::Write as _;
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => std::path::PathBuf::from("."),
    };
    if !dir.is_dir() {
        std::fs::create_dir_all(&dir).with_context(|| {
            format!(
                "cannot write {}: cannot create {}",
                path.display(),
                dir.display()
            )
        })?;
    }
    let mut tmp = tempfile::Builder::new()
        .prefix(".perfbisect-")
        .tempfile_in(&dir)
        .map_err(|e| {
            anyhow::anyhow!(
                "cannot write {}: {}",
                path.display(),
                std::io::Error::from(e.kind())
            )
        })?;
    tmp.write_all(bytes)
        .with_context(|| format!("cannot write {}", path.display()))?;
    // Readable like any file the user makes (the temp file is 0600).
    let _ = tmp
        .as_file()
        .set_permissions(std::os::unix::fs::PermissionsExt::from_mode(0o644));
    tmp.persist(path)
        .map_err(|e| anyhow::anyhow!("cannot write {}: {}", path.display(), e.error))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::primitives::{drawn_points, tukey};
    use super::*;

    fn commits(n: usize) -> Vec<PlotCommit> {
        (0..n)
            .map(|i| PlotCommit {
                label: format!("{:07x}", i * 7919),
                values: vec![100.0 + (i >= n / 2) as u8 as f64 * 5.0, 101.0, 99.5],
                failed: false,
            })
            .collect()
    }

    #[test]
    fn down_sampling_keeps_every_extreme_in_the_band() {
        let mut cs = commits(1000);
        cs[417].values = vec![100.0, 180.0, 101.0];
        let (pts, down) = drawn_points(&cs, 100);
        assert!(down);
        assert!(pts.len() <= 100, "{}", pts.len());
        let hi = pts.iter().map(|p| p.3).fold(f64::MIN, f64::max);
        assert_eq!(hi, 180.0);
        let (pts, down) = drawn_points(&cs[..50], 100);
        assert!(!down);
        assert_eq!(pts.len(), 50);
    }

    #[test]
    fn image_format_comes_from_the_extension() {
        assert_eq!(
            ImageFormat::of(Path::new("a/b.PNG")).unwrap(),
            ImageFormat::Png
        );
        assert_eq!(
            ImageFormat::of(Path::new("b.svg")).unwrap(),
            ImageFormat::Svg
        );
        let e = ImageFormat::of(Path::new("b.jpg")).unwrap_err();
        assert!(crate::error::is_usage(&e));
        assert!(format!("{e}").contains("b.jpg"), "{e}");
    }

    #[test]
    fn odd_values_never_panic() {
        let mut cs = commits(10);
        cs[2].values = vec![f64::INFINITY, 100.0];
        cs[3].values = vec![f64::NAN];
        cs[4].values = vec![f64::NEG_INFINITY];
        let chart = Chart {
            title: String::new(),
            subtitle: String::new(),
            unit: String::new(),
            commits: cs,
            markers: vec![Marker {
                index: 99,
                label: "far".into(),
                kind: MarkerKind::Culprit,
            }],
            stake: Some(f64::NAN),
            boxes: vec![BoxGroup {
                label: "x".into(),
                sub: String::new(),
                values: vec![f64::INFINITY],
                highlight: true,
            }],
            boxes_title: String::new(),
            style: Style::Band,
            width: 600,
            height: 400,
        };
        assert!(svg(&chart).is_ok());
        assert!(png(&chart).is_ok());
        for (width, height) in [(1, 1), (120, 80), (2000, 30)] {
            let tiny = Chart {
                width,
                height,
                ..chart.clone()
            };
            assert!(svg(&tiny).is_ok() && png(&tiny).is_ok(), "{width}x{height}");
        }
    }

    #[test]
    fn tukey_boxes_put_far_values_outside_the_whiskers() {
        let mut v: Vec<f64> = (0..20).map(|i| 100.0 + i as f64 * 0.1).collect();
        v.push(150.0);
        let (lo, q1, med, q3, hi, out) = tukey(&v).unwrap();
        assert!(lo <= q1 && q1 <= med && med <= q3 && q3 <= hi);
        assert!(hi < 150.0);
        assert_eq!(out, vec![150.0]);
    }

    /// The trial's unreadable plot: twelve culprits brought in by one merge, a best guess, a
    /// change point close by, and before/after boxes too narrow for their names.
    fn crowded() -> Chart {
        let mut markers: Vec<Marker> = (0..12)
            .map(|i| Marker {
                index: 20,
                label: format!("{:07x} (merged here)", 0x911abcd + i),
                kind: MarkerKind::Culprit,
            })
            .collect();
        markers.push(Marker {
            index: 21,
            label: "change".into(),
            kind: MarkerKind::ChangePoint,
        });
        markers.push(Marker {
            index: 30,
            label: "best guess 5e5e5e5?".into(),
            kind: MarkerKind::Guess,
        });
        let boxes = ["before", "after 911abcd", "before", "after 5e5e5e5?"]
            .iter()
            .enumerate()
            .map(|(i, l)| BoxGroup {
                label: l.to_string(),
                sub: "911abcd..5e5e5e5".into(),
                values: vec![100.0 + i as f64, 101.0 + i as f64, 102.0],
                highlight: i % 2 == 1,
            })
            .collect();
        Chart {
            title: "value: crowded".into(),
            subtitle: String::new(),
            unit: "MB/s".into(),
            commits: commits(40),
            markers,
            stake: None,
            boxes,
            boxes_title: "runs before / after".into(),
            style: Style::Band,
            width: 1000,
            height: 520,
        }
    }

    #[test]
    fn crowded_markers_get_one_label_each_place_and_guesses_say_so() {
        let chart = crowded();
        let out = svg(&chart).unwrap();
        if let Some(dir) = std::env::var_os("PERFBISECT_PLOT_DUMP") {
            std::fs::write(
                std::path::Path::new(&dir).join("crowded.png"),
                png(&chart).unwrap(),
            )
            .unwrap();
        }
        // Twelve culprits at one commit: one label, with how many more.
        assert_eq!(out.matches("(merged here)").count(), 1, "{out}");
        assert!(out.contains("+11 more"), "{out}");
        // The guess is labelled as one, and the legend says what a dashed red line is.
        assert!(out.contains("best guess 5e5e5e5?"));
        assert!(out.contains("not confirmed (a best guess)"));
        // Box names are said shorter, never cut.
        assert!(!out.contains("after 911…"), "{out}");
        assert!(!out.contains('…'), "no text is cut: {out}");
    }
}
