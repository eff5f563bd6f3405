//! The PNG's backend: plotters' bitmap, with its text drawn glyph by glyph where each glyph
//! belongs. plotters 0.3.7 (its ab_glyph text) puts every glyph's ink at the pen position and
//! drops the glyph's left side bearing, so a narrow glyph (a "1") is drawn left of its place
//! and a gap opens after it: the hash `dd17081` read as "dd1 7081". Here the ink starts at
//! the pen position plus the bearing, as the font says; widths are plotters' own (advances
//! and kerning), so the layout does not move. The SVG is text for the viewer to draw and
//! needs none of this.

use ab_glyph::{Font, FontRef, ScaleFont};
use plotters::prelude::*;
use plotters_backend::text_anchor::{HPos, VPos};
use plotters_backend::{
    BackendColor, BackendCoord, BackendStyle, BackendTextStyle, DrawingErrorKind,
};

use super::primitives::FONT;

/// A [`BitMapBackend`] whose text is drawn at each glyph's bearing; everything else is the
/// bitmap's own.
pub(super) struct Bitmap<'a> {
    inner: BitMapBackend<'a>,
    font: FontRef<'static>,
}

impl<'a> Bitmap<'a> {
    pub(super) fn with_buffer(buf: &'a mut [u8], size: (u32, u32)) -> anyhow::Result<Self> {
        Ok(Bitmap {
            inner: BitMapBackend::with_buffer(buf, size),
            font: FontRef::try_from_slice(FONT)
                .map_err(|_| anyhow::anyhow!("the font shipped with perfbisect cannot be read"))?,
        })
    }
}

/// Where each glyph of `text` is drawn at `size`, from the pen's start: (x, y, coverage)
/// of every pixel it inks, x and y relative to the text's top-left (as plotters places its
/// ink: a glyph's top at `size / 2` above its baseline-relative box).
fn ink(font: &FontRef<'static>, size: f64, text: &str) -> Vec<(i32, i32, f32)> {
    let scaled = font.as_scaled(size as f32);
    let mut out = Vec::new();
    let mut pen = 0f32;
    let mut prev = None;
    for c in text.chars() {
        let id = scaled.glyph_id(c);
        if let Some(p) = prev {
            pen += scaled.kern(p, id);
        }
        prev = Some(id);
        let glyph = id.with_scale_and_position(scaled.scale(), ab_glyph::point(pen, 0.0));
        if let Some(q) = font.outline_glyph(glyph) {
            let b = q.px_bounds();
            let (x0, y0) = (b.min.x.floor() as i32, (size as f32 / 2.0 + b.min.y) as i32);
            q.draw(|x, y, a| out.push((x0 + x as i32, y0 + y as i32, a)));
        }
        pen += scaled.h_advance(id);
    }
    out
}

impl DrawingBackend for Bitmap<'_> {
    type ErrorType = <BitMapBackend<'static> as DrawingBackend>::ErrorType;

    fn get_size(&self) -> (u32, u32) {
        self.inner.get_size()
    }

    fn ensure_prepared(&mut self) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        self.inner.ensure_prepared()
    }

    fn present(&mut self) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        self.inner.present()
    }

    fn draw_pixel(
        &mut self,
        point: BackendCoord,
        color: BackendColor,
    ) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        self.inner.draw_pixel(point, color)
    }

    fn draw_line<S: BackendStyle>(
        &mut self,
        from: BackendCoord,
        to: BackendCoord,
        style: &S,
    ) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        self.inner.draw_line(from, to, style)
    }

    fn draw_rect<S: BackendStyle>(
        &mut self,
        upper_left: BackendCoord,
        bottom_right: BackendCoord,
        style: &S,
        fill: bool,
    ) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        self.inner.draw_rect(upper_left, bottom_right, style, fill)
    }

    fn draw_path<S: BackendStyle, I: IntoIterator<Item = BackendCoord>>(
        &mut self,
        path: I,
        style: &S,
    ) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        self.inner.draw_path(path, style)
    }

    fn draw_circle<S: BackendStyle>(
        &mut self,
        center: BackendCoord,
        radius: u32,
        style: &S,
        fill: bool,
    ) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        self.inner.draw_circle(center, radius, style, fill)
    }

    fn fill_polygon<S: BackendStyle, I: IntoIterator<Item = BackendCoord>>(
        &mut self,
        vert: I,
        style: &S,
    ) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        self.inner.fill_polygon(vert, style)
    }

    fn blit_bitmap(
        &mut self,
        pos: BackendCoord,
        size: (u32, u32),
        src: &[u8],
    ) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        self.inner.blit_bitmap(pos, size, src)
    }

    /// plotters' own placement (its layout box and anchor, its transform), with the ink of
    /// [`ink`].
    fn draw_text<S: BackendTextStyle>(
        &mut self,
        text: &str,
        style: &S,
        pos: BackendCoord,
    ) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        let color = style.color();
        if color.alpha == 0.0 {
            return Ok(());
        }
        let ((min_x, min_y), (max_x, max_y)) = style
            .layout_box(text)
            .map_err(|e| DrawingErrorKind::FontError(Box::new(e)))?;
        let (width, height) = (max_x - min_x, max_y - min_y);
        let dx = match style.anchor().h_pos {
            HPos::Left => 0,
            HPos::Right => -width,
            HPos::Center => -width / 2,
        };
        let dy = match style.anchor().v_pos {
            VPos::Top => 0,
            VPos::Center => -height / 2,
            VPos::Bottom => -height,
        };
        let trans = style.transform();
        let (w, h) = self.get_size();
        for (x, y, a) in ink(&self.font, style.size(), text) {
            let (x, y) = trans.transform(x + dx - min_x, y + dy - min_y);
            let (x, y) = (pos.0 + x, pos.1 + y);
            if x >= 0 && x < w as i32 && y >= 0 && y < h as i32 {
                let c = BackendColor {
                    alpha: color.alpha * f64::from(a),
                    rgb: color.rgb,
                };
                self.inner.draw_pixel((x, y), c)?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The columns `text` inks (coverage over a third) at 11 px.
    fn columns(text: &str) -> Vec<i32> {
        let font = FontRef::try_from_slice(FONT).unwrap();
        let mut xs: Vec<i32> = ink(&font, 11.0, text)
            .iter()
            .filter(|p| p.2 > 0.3)
            .map(|p| p.0)
            .collect();
        xs.sort_unstable();
        xs.dedup();
        xs
    }

    /// The blank columns between the ink of `head` and that of the glyph after it in `text`.
    fn gap(head: &str, text: &str) -> i32 {
        let last = *columns(head).last().unwrap();
        let next = columns(text).into_iter().find(|&x| x > last).unwrap();
        next - last - 1
    }

    /// Issue 50: "dd17081" under a tick read "dd1 7081": the "1" was drawn at its ink box,
    /// not its bearing, and a gap opened after it. Now the gap after the "1" is the font's,
    /// no wider than the one before it.
    #[test]
    fn a_hash_is_drawn_without_a_gap_after_a_narrow_glyph() {
        let before = gap("dd", "dd1");
        let after = gap("dd1", "dd17");
        assert!(
            after <= before + 1,
            "{after} blank columns after the 1, {before} before it"
        );
    }
}
