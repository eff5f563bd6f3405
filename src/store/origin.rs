//! Where an imported sample came from when another tool measured it (a benchmark-action
//! `data.js`, asv results, pytest-benchmark runs, BMF or hyperfine exports): the tool, the
//! series it filed the number under, the unit it reported, the benchmark code's version, and
//! the spread it reported around the number (a `± N`, a standard deviation, a confidence
//! interval, quartiles), kept as a spread and never as samples.
//!
//! It is stored as a trailer after a record's sample (a tag byte, then its bincode), so the
//! record layout stays version 3: a record without a trailer (every record
//! written before, every run measured here) reads as it always did, and a perfbisect from
//! before the trailer reads a record with one as the sample it holds (bincode decodes the
//! sample and leaves the rest of the payload alone; so does the reader of observations).
//! A trailer of a tag this build does not know is read past the same way.

use std::sync::Arc;

use serde::{Deserialize, Serialize};

/// The tag byte of the trailer this build writes.
const TAG_ORIGIN_1: u8 = 1;

/// What tool and series an imported number came from.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct Origin {
    /// The format it was read from: `benchmark-action`, `asv`, `pytest-benchmark`, `bmf`,
    /// `hyperfine`.
    pub source: Arc<str>,
    /// The series' id in that history (`end_to_end/http2_get`, `benchmarks.Time.time_x(10)`).
    pub series: Arc<str>,
    /// The unit the tool reported the number in, as it wrote it (`ns/iter`, `seconds`).
    pub unit: Option<Arc<str>>,
    /// The version of the benchmark's code (asv's hash of it), when the tool records one.
    pub version: Option<Arc<str>>,
}

/// What kind of spread a tool reported.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum SpreadKind {
    /// `± lo` in the value's unit (cargo's libtest range).
    PlusMinus,
    /// `± lo %` of the value (benchmark.js).
    PlusMinusPercent,
    /// A standard deviation `lo`.
    StdDev,
    /// A 99 % confidence interval `lo..hi` of the estimate (asv).
    Ci99,
    /// The quartiles `lo` (25 %) and `hi` (75 %).
    Quartiles,
    /// Lower and upper bounds `lo..hi` (BMF's `lower_value`, `upper_value`).
    Bounds,
    /// An interquartile range `lo`.
    Iqr,
}

impl SpreadKind {
    /// The name exports use.
    pub fn name(self) -> &'static str {
        match self {
            SpreadKind::PlusMinus => "plus-minus",
            SpreadKind::PlusMinusPercent => "plus-minus-percent",
            SpreadKind::StdDev => "stddev",
            SpreadKind::Ci99 => "ci99",
            SpreadKind::Quartiles => "quartiles",
            SpreadKind::Bounds => "bounds",
            SpreadKind::Iqr => "iqr",
        }
    }

    /// Whether the spread is an interval `lo..hi` (else one width `lo`).
    pub fn interval(self) -> bool {
        matches!(
            self,
            SpreadKind::Ci99 | SpreadKind::Quartiles | SpreadKind::Bounds
        )
    }
}

/// A spread a tool reported around one number.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Spread {
    pub kind: SpreadKind,
    pub lo: f64,
    /// The upper end of an interval; 0 for a width.
    pub hi: f64,
}

// Spreads are stored only when finite, so equality is an equivalence.
impl Eq for Spread {}

impl std::hash::Hash for Spread {
    fn hash<H: std::hash::Hasher>(&self, h: &mut H) {
        self.kind.hash(h);
        self.lo.to_bits().hash(h);
        self.hi.to_bits().hash(h);
    }
}

impl Spread {
    /// As text: `± 8021`, `± 1.2 %`, `stddev 0.0012`, `ci99 0.22..0.23`.
    pub fn describe(&self) -> String {
        use crate::base::text::fmt_num;
        match self.kind {
            SpreadKind::PlusMinus => format!("± {}", fmt_num(self.lo)),
            SpreadKind::PlusMinusPercent => format!("± {} %", fmt_num(self.lo)),
            SpreadKind::StdDev => format!("stddev {}", fmt_num(self.lo)),
            SpreadKind::Iqr => format!("iqr {}", fmt_num(self.lo)),
            k => format!("{} {}..{}", k.name(), fmt_num(self.lo), fmt_num(self.hi)),
        }
    }
}

/// The trailer as it lies in a record.
#[derive(Serialize, Deserialize)]
struct Trailer<'a> {
    #[serde(borrow)]
    source: &'a str,
    #[serde(borrow)]
    series: &'a str,
    #[serde(borrow)]
    unit: Option<&'a str>,
    #[serde(borrow)]
    version: Option<&'a str>,
    spread: Vec<Spread>,
}

/// Append the trailer of `origin` and `spread` to a record's payload in `buf`.
pub(crate) fn encode(
    origin: &Origin,
    spread: &[Spread],
    buf: &mut Vec<u8>,
) -> Result<(), bincode::error::EncodeError> {
    buf.push(TAG_ORIGIN_1);
    let t = Trailer {
        source: &origin.source,
        series: &origin.series,
        unit: origin.unit.as_deref(),
        version: origin.version.as_deref(),
        spread: spread.to_vec(),
    };
    bincode::serde::encode_into_std_write(&t, buf, bincode::config::standard()).map(|_| ())
}

/// What a trailer holds: the origin (shared) and the spreads.
pub(crate) type Trailed = (Arc<Origin>, Vec<Spread>);

/// The origin and spread of a record's trailer `rest` (the bytes after its sample); none when
/// there is no trailer or one of a tag this build does not know.
pub(crate) fn decode(rest: &[u8]) -> Result<Option<Trailed>, String> {
    match rest.split_first() {
        Some((&TAG_ORIGIN_1, body)) => {
            let (t, _) = bincode::serde::borrow_decode_from_slice::<Trailer<'_>, _>(
                body,
                bincode::config::standard(),
            )
            .map_err(|e| format!("its origin cannot be decoded: {e}"))?;
            let origin = shared(&Origin {
                source: Arc::from(t.source),
                series: Arc::from(t.series),
                unit: t.unit.map(Arc::from),
                version: t.version.map(Arc::from),
            });
            Ok(Some((origin, t.spread)))
        }
        _ => Ok(None),
    }
}

/// One shared copy of each origin: the samples of one series share it.
pub fn shared(o: &Origin) -> Arc<Origin> {
    use std::cell::RefCell;
    use std::collections::HashSet;
    thread_local! {
        static ORIGINS: RefCell<HashSet<Arc<Origin>, foldhash::fast::FixedState>> =
            RefCell::new(HashSet::default());
    }
    ORIGINS.with(|t| {
        let mut t = t.borrow_mut();
        if let Some(a) = t.get(o) {
            return a.clone();
        }
        if t.len() >= 4096 {
            t.clear();
        }
        let a = Arc::new(o.clone());
        t.insert(a.clone());
        a
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::{decode_record, encode_frame, Import, Keep, Observation, Run, Sample};

    fn imported(origin: Option<Origin>, spread: Vec<Spread>) -> Sample {
        Sample {
            commit: [7; 20],
            test_hash: 1,
            recipe_hash: 2,
            time: 1_700_000_000,
            round: 0,
            wall: 0.0,
            user: 0.0,
            sys: 0.0,
            max_rss: 0,
            value: Some(59874.0),
            error: None,
            fingerprint: 0,
            import: Some(Import {
                round: Some("end_to_end@1605571384450".into()),
                machine: Some("end_to_end".into()),
                origin: origin.map(|o| shared(&o)),
                spread,
            }),
            window: 0,
            moment: 0,
        }
    }

    fn payload(frame: &[u8]) -> &[u8] {
        &frame[crate::store::sample::FRAME_HEAD + 1..]
    }

    #[test]
    fn an_origin_and_its_spreads_come_back_and_old_readers_read_past_them() {
        let o = Origin {
            source: "asv".into(),
            series: "benchmarks.Time.time_x(10, '<f8')".into(),
            unit: Some("seconds".into()),
            version: Some("87acd4d238cf".into()),
        };
        let spread = vec![
            Spread {
                kind: SpreadKind::Ci99,
                lo: 0.2231,
                hi: 0.23038,
            },
            Spread {
                kind: SpreadKind::Quartiles,
                lo: 0.22427,
                hi: 0.2272,
            },
        ];
        let s = imported(Some(o), spread);
        let frame = encode_frame(&s).unwrap();
        let back = decode_record(3, payload(&frame)).unwrap();
        assert_eq!(back, s);
        // What a reader before the trailer decodes: the sample alone, the same numbers.
        let (old, n) = bincode::serde::borrow_decode_from_slice::<Sample, _>(
            payload(&frame),
            bincode::config::standard(),
        )
        .unwrap();
        assert!(n < payload(&frame).len());
        assert_eq!(old.value, s.value);
        assert_eq!(
            old.import.as_ref().unwrap().round,
            s.import.as_ref().unwrap().round
        );
        let (_, obs) = Observation::decode(payload(&frame)).unwrap();
        assert_eq!(obs.value(), Some(59874.0));
        assert_eq!(obs.moment_key(), s.moment_key());
    }

    #[test]
    fn records_without_an_origin_are_the_bytes_they_always_were() {
        let s = imported(None, Vec::new());
        let frame = encode_frame(&s).unwrap();
        let mut plain = Vec::new();
        bincode::serde::encode_into_std_write(&s, &mut plain, bincode::config::standard()).unwrap();
        assert_eq!(payload(&frame), &plain[..]);
        assert_eq!(decode_record(3, payload(&frame)).unwrap(), s);
        // A trailer of a tag this build does not know is read past.
        let mut later = plain.clone();
        later.extend_from_slice(&[9, 1, 2, 3]);
        assert_eq!(decode_record(3, &later).unwrap(), s);
    }
}
