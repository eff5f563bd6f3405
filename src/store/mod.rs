//! The result store: one append-only file per test, bincode records framed with a length and
//! a CRC, each fsynced before the next run starts. A torn tail (a crash mid-write) is dropped
//! with a warning; corrupt records elsewhere are reported with file and offset and skipped,
//! keeping every intact record. Beside it, the findings `triage` keeps ([`findings`]). This
//! module only declares its parts and re-exports them.

mod append;
pub mod cache;
mod files;
pub mod findings;
mod fs;
mod index;
mod observation;
pub mod origin;
mod read;
mod record;
mod rewrite;
mod sample;

pub use append::Appender;
pub use files::{Pruned, Store};
pub use fs::{is_temp_name, replace_file, sync_dir, temp_file, try_sync_dir};
pub use index::IndexState;
pub use observation::{Head, Keep, Observation};
pub use record::{
    decode_file, decode_record, encode_frame, encode_frame_into, marker_frame, Marker, SampleV1,
    SampleV2, MARKER_VERSION,
};
pub use sample::{
    commit_key, intern, moment_values, moments, new_window, Import, Loaded, Run, Sample,
    StoreError, FORMAT_VERSION, INDEPENDENT, LEGACY_WINDOW, MAX_RECORD, RECORD_VERSION,
};

#[cfg(test)]
mod tests {
    use super::fs::try_sync_dir;
    use super::sample::{HEADER_LEN, MAGIC};
    use super::*;
    use std::fs::OpenOptions;
    use std::io::Write;
    use std::path::{Path, PathBuf};

    fn sample(i: u64) -> Sample {
        Sample {
            commit: [i as u8; 20],
            test_hash: 1,
            recipe_hash: 2,
            time: i,
            round: 0,
            wall: 0.5,
            user: 0.25,
            sys: 0.125,
            max_rss: 1024,
            value: Some(i as f64),
            error: None,
            fingerprint: 7,
            import: i.is_multiple_of(3).then(|| Import {
                round: Some(format!("R{i}").into()),
                ..Import::default()
            }),
            window: if i.is_multiple_of(3) { 0 } else { 1 + i / 2 },
            moment: (i % 2) as u32,
        }
    }

    fn write(dir: &Path, n: u64) -> PathBuf {
        let store = Store::new(dir);
        let mut a = store.appender("t").unwrap();
        for i in 0..n {
            a.append(&sample(i)).unwrap();
        }
        store.path("t")
    }

    #[test]
    fn round_trip() {
        let d = tempfile::tempdir().unwrap();
        write(d.path(), 10);
        let l = Store::new(d.path()).load("t").unwrap();
        assert_eq!(l.samples.len(), 10);
        assert_eq!(l.samples[3], sample(3));
        assert!(l.warnings.is_empty());
    }

    #[test]
    fn version_1_records_are_read_without_a_fingerprint() {
        let d = tempfile::tempdir().unwrap();
        let v1 = SampleV1 {
            commit: [3; 20],
            test_hash: 1,
            recipe_hash: 2,
            time: 5,
            round: 1,
            wall: 0.5,
            user: 0.25,
            sys: 0.125,
            max_rss: 1024,
            value: Some(9.5),
            error: Some("tail".into()),
        };
        let payload = bincode::serde::encode_to_vec(&v1, bincode::config::standard()).unwrap();
        let mut body = vec![1u8];
        body.extend_from_slice(&payload);
        let mut bytes = MAGIC.to_vec();
        bytes.extend_from_slice(&FORMAT_VERSION.to_le_bytes());
        bytes.extend_from_slice(&(body.len() as u32).to_le_bytes());
        bytes.extend_from_slice(&crc32fast::hash(&body).to_le_bytes());
        bytes.extend_from_slice(&body);
        std::fs::write(d.path().join("t.pbs"), &bytes).unwrap();
        let store = Store::new(d.path());
        // A writer appends version 2 after it; both are read.
        store.appender("t").unwrap().append(&sample(4)).unwrap();
        let l = store.load("t").unwrap();
        assert!(l.warnings.is_empty(), "{:?}", l.warnings);
        assert_eq!(l.samples.len(), 2);
        // Its window is made up on load: one of its own, marked as such.
        assert_eq!(l.samples[0].window & LEGACY_WINDOW, LEGACY_WINDOW);
        assert_eq!(
            l.samples[0],
            Sample {
                window: l.samples[0].window,
                ..Sample::from(v1)
            }
        );
        assert_eq!(l.samples[0].fingerprint, 0);
        assert!(l.samples[0].import.is_none());
        assert_eq!(l.samples[1], sample(4));
    }

    #[test]
    fn add_atomically_keeps_what_was_there_and_adds_all() {
        let d = tempfile::tempdir().unwrap();
        let p = write(d.path(), 3);
        // A torn tail is left out of the rewrite.
        let len = std::fs::metadata(&p).unwrap().len();
        OpenOptions::new()
            .write(true)
            .open(&p)
            .unwrap()
            .set_len(len - 2)
            .unwrap();
        let store = Store::new(d.path());
        store
            .add_atomically("t", &[sample(10), sample(11)])
            .unwrap();
        let l = store.load("t").unwrap();
        let times: Vec<u64> = l.samples.iter().map(|s| s.time).collect();
        assert_eq!(times, [0, 1, 10, 11]);
        assert!(l.warnings.is_empty(), "{:?}", l.warnings);
        // No temp file stays behind; the index beside the store is all there is besides.
        let mut names: Vec<String> = std::fs::read_dir(d.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        assert_eq!(names, ["t.idx", "t.pbs"]);
        store.add_atomically("new", &[sample(1)]).unwrap();
        assert_eq!(store.load("new").unwrap().samples, vec![sample(1)]);
        // Not a store: refused, and left as it is.
        std::fs::write(store.path("bad"), b"hello world, not a store").unwrap();
        assert!(store.add_atomically("bad", &[sample(1)]).is_err());
        assert_eq!(
            std::fs::read(store.path("bad")).unwrap(),
            b"hello world, not a store"
        );
    }

    #[test]
    fn a_record_too_large_to_read_back_is_never_written() {
        let d = tempfile::tempdir().unwrap();
        let store = Store::new(d.path());
        let mut big = sample(3);
        big.import = Some(Import {
            machine: Some("m".repeat(MAX_RECORD + 100).into()),
            ..Import::default()
        });
        let e = encode_frame(&big).unwrap_err();
        assert!(format!("{e:#}").contains("`machine`"), "{e:#}");
        assert!(store
            .add_atomically("t", &[sample(1), big.clone()])
            .is_err());
        assert!(store.appender("t").unwrap().append(&big).is_err());
        let l = store.load("t").unwrap();
        assert!(l.samples.is_empty() && l.warnings.is_empty(), "{l:?}");
    }

    #[test]
    fn torn_tail_is_dropped_and_cut() {
        let d = tempfile::tempdir().unwrap();
        let p = write(d.path(), 5);
        let len = std::fs::metadata(&p).unwrap().len();
        let f = OpenOptions::new().write(true).open(&p).unwrap();
        f.set_len(len - 3).unwrap();
        let l = Store::new(d.path()).load("t").unwrap();
        assert_eq!(l.samples.len(), 4);
        assert!(l.torn_tail);
        let mut a = Store::new(d.path()).appender("t").unwrap();
        assert_eq!(a.warnings.len(), 1);
        a.append(&sample(9)).unwrap();
        let l = Store::new(d.path()).load("t").unwrap();
        assert_eq!(l.samples.len(), 5);
        assert!(l.warnings.is_empty());
    }

    #[test]
    fn flipped_byte_in_the_middle_keeps_the_rest() {
        let d = tempfile::tempdir().unwrap();
        let p = write(d.path(), 5);
        let mut bytes = std::fs::read(&p).unwrap();
        let frame = encode_frame(&sample(0)).unwrap().len();
        bytes[HEADER_LEN + frame + 12] ^= 0x40;
        std::fs::write(&p, &bytes).unwrap();
        let l = Store::new(d.path()).load("t").unwrap();
        assert_eq!(l.samples.len(), 4);
        assert!(!l.torn_tail);
        assert!(l.warnings[0].contains(&format!("bytes {}", HEADER_LEN + frame)));
    }

    #[test]
    fn cut_header_is_written_again_before_appending() {
        let d = tempfile::tempdir().unwrap();
        let p = write(d.path(), 1);
        let bytes = std::fs::read(&p).unwrap();
        for cut in [0, 1, 5, HEADER_LEN - 1] {
            std::fs::write(&p, &bytes[..cut]).unwrap();
            let mut a = Store::new(d.path()).appender("t").unwrap();
            a.append(&sample(7)).unwrap();
            let l = Store::new(d.path()).load("t").unwrap();
            assert_eq!(l.samples, vec![sample(7)], "cut at {cut}");
            assert!(l.warnings.is_empty(), "cut at {cut}: {:?}", l.warnings);
        }
    }

    #[test]
    fn prune_keeps_current_and_unreadable_records_and_rewrites_atomically() {
        let d = tempfile::tempdir().unwrap();
        let p = write(d.path(), 6);
        // A record of a newer layout: kept, whatever it holds.
        let mut newer = encode_frame(&sample(100)).unwrap();
        newer[8] = RECORD_VERSION + 1;
        let crc = crc32fast::hash(&newer[8..]);
        newer[4..8].copy_from_slice(&crc.to_le_bytes());
        let mut f = OpenOptions::new().append(true).open(&p).unwrap();
        f.write_all(&newer).unwrap();
        drop(f);
        let store = Store::new(d.path());
        let got = store.prune("t", &|s| s.time % 2 == 1).unwrap();
        assert_eq!(got.removed, 3);
        assert_eq!(got.kept, 4);
        assert_eq!(got.corrupt_bytes, 0);
        let l = store.load("t").unwrap();
        let times: Vec<u64> = l.samples.iter().map(|s| s.time).collect();
        assert_eq!(times, [0, 2, 4]);
        assert_eq!(l.warnings.len(), 1, "{:?}", l.warnings);
        // Nothing stale: the file is left as it is.
        let before = std::fs::metadata(&p).unwrap().modified().unwrap();
        let again = store.prune("t", &|s| s.time % 2 == 1).unwrap();
        assert_eq!((again.removed, again.kept), (0, 4));
        assert_eq!(std::fs::metadata(&p).unwrap().modified().unwrap(), before);
        // No temp file is left behind, and appending goes on after the rewrite.
        assert_eq!(store.tests(), ["t"]);
        assert_eq!(std::fs::read_dir(d.path()).unwrap().count(), 1);
        store.appender("t").unwrap().append(&sample(8)).unwrap();
        assert_eq!(store.load("t").unwrap().samples.len(), 4);
        assert_eq!(
            store.prune("missing", &|_| true).unwrap(),
            Pruned::default()
        );
    }

    #[test]
    fn stale_note_is_news_once_per_count() {
        let d = tempfile::tempdir().unwrap();
        let store = Store::new(d.path().join("results"));
        assert!(store.stale_note("t", 0).is_none());
        let n = store.stale_note("t", 3).unwrap();
        assert!(
            n.contains("3 stored samples of `t`") && n.contains("cache prune"),
            "{n}"
        );
        assert!(store.stale_note("t", 3).is_none());
        assert!(store.stale_note("u", 3).is_some());
        let one = store.stale_note("t", 1).unwrap();
        assert!(one.contains("1 stored sample of `t` comes"), "{one}");
        assert!(store.stale_note("t", 0).is_none());
        assert!(store.stale_note("t", 1).is_some());
    }

    #[test]
    fn newer_format_is_an_error() {
        let d = tempfile::tempdir().unwrap();
        let p = write(d.path(), 1);
        let mut bytes = std::fs::read(&p).unwrap();
        bytes[8] = 9;
        std::fs::write(&p, &bytes).unwrap();
        let e = Store::new(d.path()).load("t").unwrap_err();
        assert!(format!("{e:#}").contains("newer perfbisect"));
    }

    #[test]
    fn directory_sync_errors_are_reported() {
        let d = tempfile::tempdir().unwrap();
        try_sync_dir(d.path()).unwrap();
        let gone = d.path().join("gone");
        let e = try_sync_dir(&gone).unwrap_err();
        assert!(
            format!("{e:#}").contains(&gone.display().to_string()),
            "{e:#}"
        );
    }

    #[test]
    fn garbage_never_panics() {
        let path = Path::new("x.pbs");
        let mut rng = 0x1234_5678_u64;
        for len in 0..400 {
            let mut bytes: Vec<u8> = MAGIC.to_vec();
            bytes.extend_from_slice(&1u32.to_le_bytes());
            for _ in 0..len {
                rng ^= rng << 13;
                rng ^= rng >> 7;
                rng ^= rng << 17;
                bytes.push(rng as u8);
            }
            let _ = decode_file(path, &bytes);
        }
    }
}
