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

/// The name of the section of the ELF file `f` (64- or 32-bit, little-endian) that holds
/// file offset `at`; `None` for other files or an offset outside every section.
pub fn elf_section(f: &[u8], at: u64) -> Option<String> {
    if f.len() < 52 || &f[..4] != b"\x7fELF" || f[5] != 1 {
        return None;
    }
    let wide = f[4] == 2;
    let u16_at = |o: usize| -> Option<u64> {
        Some(u16::from_le_bytes(f.get(o..o + 2)?.try_into().ok()?) as u64)
    };
    let u32_at = |o: usize| -> Option<u64> {
        Some(u32::from_le_bytes(f.get(o..o + 4)?.try_into().ok()?) as u64)
    };
    let u64_at =
        |o: usize| -> Option<u64> { u64::from_le_bytes(f.get(o..o + 8)?.try_into().ok()?).into() };
    let word = |o: usize| if wide { u64_at(o) } else { u32_at(o) };
    let (shoff, shentsize, shnum, shstrndx) = if wide {
        (u64_at(0x28)?, u16_at(0x3a)?, u16_at(0x3c)?, u16_at(0x3e)?)
    } else {
        (u32_at(0x20)?, u16_at(0x2e)?, u16_at(0x30)?, u16_at(0x32)?)
    };
    let header = |i: u64| -> Option<(u64, u64, u64, u64)> {
        let h = usize::try_from(shoff + i * shentsize).ok()?;
        let name = u32_at(h)?;
        let kind = u32_at(h + 4)?;
        let (offset, size) = if wide {
            (word(h + 0x18)?, word(h + 0x20)?)
        } else {
            (word(h + 0x10)?, word(h + 0x14)?)
        };
        Some((name, kind, offset, size))
    };
    let (_, _, strtab, _) = header(shstrndx)?;
    for i in 0..shnum {
        let (name, kind, offset, size) = header(i)?;
        // SHT_NOBITS (.bss) holds no bytes of the file.
        if kind == 8 || !(offset..offset + size).contains(&at) {
            continue;
        }
        let start = usize::try_from(strtab + name).ok()?;
        let rest = f.get(start..)?;
        let end = rest.iter().position(|&c| c == 0)?;
        return Some(String::from_utf8_lossy(&rest[..end]).into_owned());
    }
    None
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
        assert!(said.starts_with(": 1 byte differs from offset"), "{said}");
        assert!(said.contains("(in section ."), "{said}");
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
