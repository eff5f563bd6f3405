//! Writing to a store file: one record at a time, each on disk before the next run starts,
//! or a batch of many (an import, a merge) that counts all at once or not at all.

use std::fs::{File, OpenOptions};
use std::io::{Read, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::PathBuf;

use anyhow::Context;

use super::files::Store;
use super::fs::{bytes_from, open_error, try_sync_dir};
use super::index;
use super::record::{self, marker_frame, Marker};
use super::record::{decode_file, encode_frame};
use super::sample::{Loaded, Sample, FORMAT_VERSION, HEADER_LEN, MAGIC};

/// Bytes of a batch gathered before they are written.
const BATCH_BUFFER: usize = 1 << 20;

/// Appends samples to one test's file, durably.
pub struct Appender {
    file: File,
    path: PathBuf,
    /// Length of the file: where the next record goes (only the lock holder appends).
    end: u64,
    /// The open batch: where its begin marker is, its frames not yet written, and how many
    /// samples it holds.
    batch: Option<(u64, Vec<u8>, usize)>,
    /// Problems found when the file was opened.
    pub warnings: Vec<String>,
}

impl Store {
    /// Open a test's file for appending, creating it, and cutting off a torn tail (or an
    /// unfinished batch). Only the tail past the file's index is read, so opening costs the
    /// same however much history the file holds.
    pub fn appender(&self, test: &str) -> anyhow::Result<Appender> {
        std::fs::create_dir_all(&self.dir)
            .with_context(|| format!("cannot create {}", self.dir.display()))?;
        let path = self.path(test);
        let exists = path.exists();
        let mut file = OpenOptions::new()
            .read(true)
            .append(true)
            .create(true)
            .custom_flags(libc::O_NOFOLLOW)
            .open(&path)
            .map_err(|e| open_error(e, &path))?;
        let loaded = match index::refresh(&path, &file) {
            Some(idx) => {
                let mut l = Loaded::default();
                let tail = bytes_from(&file, idx.covered_end)
                    .with_context(|| format!("cannot read {}", path.display()))?;
                record::decode_records(
                    &path,
                    &tail,
                    0,
                    idx.covered_end as usize,
                    &mut l,
                    &mut |_| false,
                );
                l
            }
            None => {
                let mut bytes = Vec::new();
                file.read_to_end(&mut bytes)
                    .with_context(|| format!("cannot read {}", path.display()))?;
                if bytes.is_empty() {
                    Loaded::default()
                } else {
                    decode_file(&path, &bytes)?
                }
            }
        };
        let mut len = file
            .metadata()
            .with_context(|| format!("cannot read {}", path.display()))?
            .len();
        if loaded.torn_tail {
            file.set_len(loaded.valid_end)
                .and_then(|()| file.sync_all())
                .with_context(|| format!("cannot cut the torn tail of {}", path.display()))?;
            len = loaded.valid_end;
        }
        if len == 0 {
            // A new file, or one whose header a crash or a full disk cut short: (re)write the
            // header, or records appended now would follow no header.
            let mut header = Vec::with_capacity(HEADER_LEN);
            header.extend_from_slice(MAGIC);
            header.extend_from_slice(&FORMAT_VERSION.to_le_bytes());
            if let Err(e) = file.write_all(&header).and_then(|()| file.sync_all()) {
                let _ = file.set_len(0);
                return Err(e).with_context(|| format!("cannot write {}", path.display()));
            }
            if !exists {
                // The new file's name must be durable too, or a crash loses every record.
                try_sync_dir(&self.dir)?;
            }
            len = HEADER_LEN as u64;
        }
        Ok(Appender {
            end: len,
            file,
            path,
            batch: None,
            warnings: loaded.warnings,
        })
    }

    /// Add `samples` to `test`'s file all at once: as one batch (see [`Appender::begin`]), so
    /// a crash, a kill or a full disk leaves none of them, never some. Records already there
    /// stay as they are. The caller holds the cache lock.
    pub fn add_atomically(&self, test: &str, samples: &[Sample]) -> anyhow::Result<()> {
        if samples.is_empty() {
            return Ok(());
        }
        let mut a = self.appender(test)?;
        a.begin()?;
        for s in samples {
            a.push(s)?;
        }
        a.commit()?;
        self.refresh_index(test);
        Ok(())
    }
}

impl Appender {
    /// Append one sample and wait until it is on disk. On an error (a full disk) the file is
    /// cut back to where it was, so no half record stays behind.
    pub fn append(&mut self, sample: &Sample) -> anyhow::Result<()> {
        anyhow::ensure!(self.batch.is_none(), "a batch is open");
        let frame = encode_frame(sample)?;
        self.write_synced(&frame)
    }

    fn write_synced(&mut self, frame: &[u8]) -> anyhow::Result<()> {
        let before = self.end;
        // One write of the whole frame: a crash leaves either nothing or a torn tail.
        let written = self
            .file
            .write_all(frame)
            .and_then(|()| self.file.sync_data());
        if let Err(e) = written {
            let _ = self
                .file
                .set_len(before)
                .and_then(|()| self.file.sync_data());
            return Err(e).with_context(|| format!("cannot append to {}", self.path.display()));
        }
        self.end += frame.len() as u64;
        Ok(())
    }

    /// Open a batch: the samples [`push`](Appender::push)ed from now on count only once
    /// [`commit`](Appender::commit) has written its marker; until then every reader leaves
    /// them out, and a batch that never commits (an error, a crash, a kill) is dropped whole
    /// (an error or a drop cuts it off at once; a crash, on the next open).
    pub fn begin(&mut self) -> anyhow::Result<()> {
        anyhow::ensure!(self.batch.is_none(), "a batch is already open");
        let begin = self.end;
        let mut buf = Vec::with_capacity(BATCH_BUFFER + 4096);
        buf.extend_from_slice(&marker_frame(Marker::Begin));
        self.batch = Some((begin, buf, 0));
        Ok(())
    }

    /// Add a sample to the open batch. Nothing is synced until the commit.
    pub fn push(&mut self, sample: &Sample) -> anyhow::Result<()> {
        let Some((_, buf, n)) = &mut self.batch else {
            anyhow::bail!("no batch is open");
        };
        *n += 1;
        super::record::encode_frame_into(sample, buf)?;
        if buf.len() >= BATCH_BUFFER {
            self.flush_batch()?;
        }
        Ok(())
    }

    fn flush_batch(&mut self) -> anyhow::Result<()> {
        let Some((_, buf, _)) = &mut self.batch else {
            return Ok(());
        };
        if let Err(e) = self.file.write_all(buf) {
            self.abort();
            return Err(e).with_context(|| format!("cannot append to {}", self.path.display()));
        }
        self.end += buf.len() as u64;
        buf.clear();
        Ok(())
    }

    /// Write the batch's last records, sync them, then its commit marker, synced: from then
    /// on the batch counts.
    pub fn commit(&mut self) -> anyhow::Result<()> {
        if self.batch.as_ref().is_some_and(|(_, _, n)| *n == 0) {
            // An empty batch: nothing to write at all.
            self.batch = None;
            return Ok(());
        }
        self.flush_batch()?;
        let Some((begin, _, _)) = self.batch else {
            anyhow::bail!("no batch is open");
        };
        if let Err(e) = self.file.sync_data() {
            self.abort();
            return Err(e).with_context(|| format!("cannot sync {}", self.path.display()));
        }
        let commit = marker_frame(Marker::Commit { begin });
        self.batch = None;
        if let Err(e) = self.write_synced(&commit) {
            // The marker may or may not be on disk: cut the whole batch off.
            let _ = self
                .file
                .set_len(begin)
                .and_then(|()| self.file.sync_data());
            self.end = begin;
            return Err(e);
        }
        Ok(())
    }

    /// Drop the open batch: the file is cut back to where it began.
    pub fn abort(&mut self) {
        if let Some((begin, _, _)) = self.batch.take() {
            let _ = self
                .file
                .set_len(begin)
                .and_then(|()| self.file.sync_data());
            self.end = begin;
        }
    }
}

impl Drop for Appender {
    fn drop(&mut self) {
        self.abort();
    }
}
