//! What differs between two builds of one commit (an incremental build and a pristine one):
//! which files, and in the first of them where the bytes first differ, with the ELF section
//! that holds that offset (`.rodata` for a stamped date, `.debug_str` for a path, `.text` for
//! code), so a warning about a stale build says what it saw.

use std::path::Path;

use super::cas::Manifest;

/// The files of `new` (in `new_dir`) that differ from `old`'s (in `old_dir`), described: the
/// files by name, and for the first one present in both, the first differing offset, the
/// section holding it, and how many bytes differ. Empty when the manifests agree.
pub fn describe(old: &Manifest, old_dir: &Path, new: &Manifest, new_dir: &Path) -> String {
    let mut changed = Vec::new();
    let mut only = Vec::new();
    for f in &new.files {
        match old.files.iter().find(|o| o.path == f.path) {
            Some(o) if o.hash != f.hash || o.exec != f.exec => changed.push(f.path.clone()),
            Some(_) => {}
            None => only.push(format!("`{}` only in the pristine build", f.path)),
        }
    }
    for o in &old.files {
        if !new.files.iter().any(|f| f.path == o.path) {
            only.push(format!("`{}` only in the incremental build", o.path));
        }
    }
    let mut parts = Vec::new();
    if let Some(first) = changed.first() {
        let detail = match (
            std::fs::read(old_dir.join(first)),
            std::fs::read(new_dir.join(first)),
        ) {
            (Ok(a), Ok(b)) => bytes(&a, &b),
            _ => String::new(),
        };
        let more = match changed.len() {
            1 => String::new(),
            n => format!(
                " (and {} other file{}: {})",
                n - 1,
                if n == 2 { "" } else { "s" },
                changed[1..]
                    .iter()
                    .take(4)
                    .map(|p| format!("`{p}`"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        };
        parts.push(format!("`{first}`{detail}{more}"));
    }
    parts.extend(only);
    parts.join("; ")
}

/// Where two versions of a file differ: ": 12 bytes from offset 0x1a2b0 (in section
/// .rodata)", or their sizes when those differ.
fn bytes(a: &[u8], b: &[u8]) -> String {
    let Some(first) = a.iter().zip(b).position(|(x, y)| x != y) else {
        return if a.len() == b.len() {
            String::new()
        } else {
            format!(": {} bytes, then {} bytes", a.len(), b.len())
        };
    };
    // An ELF file's sections by name: which of them moved says more than one offset (a
    // section that grew shifts every byte after it).
    if let Some(sections) = elf_sections_differing(a, b) {
        let sizes = if a.len() == b.len() {
            String::new()
        } else {
            format!(" (sizes {} and {} bytes)", a.len(), b.len())
        };
        return format!(": first at offset {first:#x}, {sections}{sizes}");
    }
    let differing = a.iter().zip(b).filter(|(x, y)| x != y).count();
    let section = elf_section(b, first as u64)
        .map(|s| format!(" (in section {s})"))
        .unwrap_or_default();
    let sizes = if a.len() == b.len() {
        String::new()
    } else {
        format!(", sizes {} and {} bytes", a.len(), b.len())
    };
    format!(
        ": {differing} byte{} differ{} from offset {first:#x}{section}{sizes}",
        if differing == 1 { "" } else { "s" },
        if differing == 1 { "s" } else { "" },
    )
}

/// One section of an ELF file: its name, where its bytes lie in the file, and whether it
/// holds any (`.bss` holds none).
#[derive(Debug, Clone, PartialEq, Eq)]
struct Section {
    name: String,
    offset: u64,
    size: u64,
    bits: bool,
}

/// The sections of the ELF file `f` (64- or 32-bit, little-endian); `None` for other files.
fn sections(f: &[u8]) -> Option<Vec<Section>> {
    if f.len() < 52 || &f[..4] != b"\x7fELF" || f[5] != 1 {
        return None;
    }
    let wide = f[4] == 2;
    let u16_at = |o: usize| -> Option<u64> {
        Some(u16::from_le_bytes(f.get(o..o + 2)?.try_into().ok()?).into())
    };
    let u32_at = |o: usize| -> Option<u64> {
        Some(u32::from_le_bytes(f.get(o..o + 4)?.try_into().ok()?).into())
    };
    let u64_at =
        |o: usize| -> Option<u64> { Some(u64::from_le_bytes(f.get(o..o + 8)?.try_into().ok()?)) };
    let word = |o: usize| if wide { u64_at(o) } else { u32_at(o) };
    let (shoff, shentsize, shnum, shstrndx) = if wide {
        (u64_at(0x28)?, u16_at(0x3a)?, u16_at(0x3c)?, u16_at(0x3e)?)
    } else {
        (u32_at(0x20)?, u16_at(0x2e)?, u16_at(0x30)?, u16_at(0x32)?)
    };
    let header = |i: u64| -> Option<(u64, u64, u64, u64)> {
        let h = usize::try_from(shoff.checked_add(i.checked_mul(shentsize)?)?).ok()?;
        let (offset, size) = if wide {
            (word(h + 0x18)?, word(h + 0x20)?)
        } else {
            (word(h + 0x10)?, word(h + 0x14)?)
        };
        Some((u32_at(h)?, u32_at(h + 4)?, offset, size))
    };
    let (_, _, strtab, _) = header(shstrndx)?;
    let mut out = Vec::new();
    for i in 1..shnum.min(4096) {
        let (name, kind, offset, size) = header(i)?;
        let start = usize::try_from(strtab.checked_add(name)?).ok()?;
        let rest = f.get(start..)?;
        let end = rest.iter().position(|&c| c == 0)?;
        out.push(Section {
            name: String::from_utf8_lossy(&rest[..end]).into_owned(),
            offset,
            size,
            // SHT_NOBITS (.bss) holds no bytes of the file.
            bits: kind != 8,
        });
    }
    Some(out)
}

/// The name of the section of the ELF file `f` that holds file offset `at`; `None` for other
/// files or an offset outside every section (the headers).
pub fn elf_section(f: &[u8], at: u64) -> Option<String> {
    sections(f)?
        .into_iter()
        .find(|s| s.bits && (s.offset..s.offset + s.size).contains(&at))
        .map(|s| s.name)
}

/// The sections of two ELF files whose bytes differ, by name: "`.rodata` (12 bytes differ),
/// `.debug_str` (8 bytes longer)"; `None` unless both are ELF files.
fn elf_sections_differing(a: &[u8], b: &[u8]) -> Option<String> {
    let (sa, sb) = (sections(a)?, sections(b)?);
    let bytes_of = |f: &[u8], s: &Section| -> Option<Vec<u8>> {
        let start = usize::try_from(s.offset).ok()?;
        let end = start.checked_add(usize::try_from(s.size).ok()?)?;
        s.bits
            .then(|| f.get(start..end).map(<[u8]>::to_vec))
            .flatten()
    };
    let mut said = Vec::new();
    for y in &sb {
        let Some(x) = sa.iter().find(|x| x.name == y.name) else {
            said.push(format!("`{}` only in the pristine build", y.name));
            continue;
        };
        let (bx, by) = (bytes_of(a, x), bytes_of(b, y));
        if x.size != y.size {
            let d = y.size as i64 - x.size as i64;
            said.push(format!(
                "`{}` ({} byte{} {})",
                y.name,
                d.unsigned_abs(),
                if d.abs() == 1 { "" } else { "s" },
                if d > 0 { "longer" } else { "shorter" }
            ));
        } else if bx != by {
            let n = match (&bx, &by) {
                (Some(p), Some(q)) => p.iter().zip(q).filter(|(u, v)| u != v).count(),
                _ => 0,
            };
            said.push(format!(
                "`{}` ({n} byte{} differ{})",
                y.name,
                if n == 1 { "" } else { "s" },
                if n == 1 { "s" } else { "" }
            ));
        }
    }
    for x in &sa {
        if !sb.iter().any(|y| y.name == x.name) {
            said.push(format!("`{}` only in the incremental build", x.name));
        }
    }
    if said.is_empty() {
        return Some("the same sections, other headers".to_string());
    }
    let more = said.len().saturating_sub(6);
    said.truncate(6);
    Some(format!(
        "in section{} {}{}",
        if said.len() == 1 { "" } else { "s" },
        said.join(", "),
        if more > 0 {
            format!(" and {more} more")
        } else {
            String::new()
        }
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_differing_bytes_are_placed_in_their_elf_section() {
        // This test binary is an ELF file: a byte of its .text is in .text.
        let me = std::fs::read(std::env::current_exe().unwrap()).unwrap();
        let mut other = me.clone();
        let shoff = u64::from_le_bytes(me[0x28..0x30].try_into().unwrap()) as usize;
        // Section 1's first byte (an offset that belongs to some named section).
        let h = shoff + 64;
        let off = u64::from_le_bytes(me[h + 0x18..h + 0x20].try_into().unwrap());
        other[off as usize] ^= 0xff;
        let said = bytes(&me, &other);
        let name = elf_section(&other, off).unwrap();
        assert!(said.starts_with(": first at offset"), "{said}");
        assert!(
            said.contains(&format!("in section `{name}` (1 byte differs)")),
            "{said}"
        );
        assert_eq!(bytes(b"abc", b"abc"), "");
        assert_eq!(bytes(b"abcd", b"abXd"), ": 1 byte differs from offset 0x2");
        assert_eq!(
            elf_section(
                b"not an elf file at all, just text, long enough to be read as one",
                3
            ),
            None
        );
    }
}
