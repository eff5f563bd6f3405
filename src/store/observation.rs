//! What a reader keeps of each record it reads: the whole [`Sample`], or, for statistics over
//! a long history (`detect`), an [`Observation`] of a fifth of its size, decoded without
//! copying a text; and the [`Head`] every reader judges a record by before keeping it.

use super::sample::{machine_key, moment_key, Run, Sample, RECORD_VERSION};

/// The fields a record is judged by before it is kept (stale, set aside, another machine's):
/// the same for every kind of reader.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Head {
    pub commit: [u8; 20],
    pub test_hash: u64,
    pub recipe_hash: u64,
    pub time: u64,
    pub fingerprint: u64,
    /// Taken in by `perfbisect import`.
    pub imported: bool,
}

impl Head {
    /// The head of a whole sample.
    pub fn of(s: &Sample) -> Head {
        Head {
            commit: s.commit,
            test_hash: s.test_hash,
            recipe_hash: s.recipe_hash,
            time: s.time,
            fingerprint: s.fingerprint,
            imported: s.import.is_some(),
        }
    }
}

/// A run as change points see it: its value and the moment it was taken in. 32 bytes where a
/// [`Sample`] takes 176 and owns its texts: a store of millions of cron rows fits, and is
/// dropped, at a fraction of the cost.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Observation {
    value: f64,
    key: (u64, u64),
    /// [`super::sample::machine_key`] (32 bits: the observation stays 32 bytes).
    machine: u32,
    ok: bool,
    imported: bool,
}

impl Observation {
    /// The observation of a whole sample.
    pub fn of(s: &Sample) -> Observation {
        Observation {
            value: s.value.unwrap_or(0.0),
            key: s.moment_key(),
            machine: s.machine_key() as u32,
            ok: s.value.is_some(),
            imported: s.import.is_some(),
        }
    }
}

impl Run for Observation {
    fn value(&self) -> Option<f64> {
        self.ok.then_some(self.value)
    }
    fn moment_key(&self) -> (u64, u64) {
        self.key
    }
    fn imported(&self) -> bool {
        self.imported
    }
    fn machine(&self) -> u64 {
        u64::from(self.machine)
    }
}

/// How a reader makes what it keeps from a record of the current layout, or from a sample
/// decoded otherwise (an older layout, a file read whole).
pub trait Keep: Sized + Send {
    /// Decode the payload of a record of [`RECORD_VERSION`].
    fn decode(payload: &[u8]) -> Result<(Head, Self), String>;
    /// From a sample already decoded.
    fn from_sample(s: Sample) -> (Head, Self);
}

impl Keep for Sample {
    fn decode(payload: &[u8]) -> Result<(Head, Sample), String> {
        let s = super::record::decode_record(RECORD_VERSION, payload)?;
        Ok((Head::of(&s), s))
    }
    fn from_sample(s: Sample) -> (Head, Sample) {
        (Head::of(&s), s)
    }
}

impl Keep for Observation {
    fn decode(payload: &[u8]) -> Result<(Head, Observation), String> {
        let (v, _) =
            bincode::borrow_decode_from_slice::<View<'_>, _>(payload, bincode::config::standard())
                .map_err(|e| e.to_string())?;
        let round = v.import.as_ref().and_then(|i| i.round);
        let machine = machine_key(v.fingerprint, v.import.as_ref().map(|i| i.machine));
        Ok((
            Head {
                commit: v.commit,
                test_hash: v.test_hash,
                recipe_hash: v.recipe_hash,
                time: v.time,
                fingerprint: v.fingerprint,
                imported: v.import.is_some(),
            },
            Observation {
                value: v.value.unwrap_or(0.0),
                key: moment_key(v.window, v.moment, round.map(str::as_bytes), v.time),
                machine: machine as u32,
                ok: v.value.is_some(),
                imported: v.import.is_some(),
            },
        ))
    }
    fn from_sample(s: Sample) -> (Head, Observation) {
        (Head::of(&s), Observation::of(&s))
    }
}

/// A record of the current layout as it lies in the file: [`Sample`]'s fields in its order,
/// the texts borrowed from the bytes. bincode lays a struct out as its fields in order, names
/// unused, and its own decoder reads the layout its serde one wrote (varint integers, a tag
/// byte per option, length-prefixed text, arrays as their elements), without serde's visitor
/// per field: a third of the time. Texts are borrowed and checked as UTF-8, as a whole
/// sample's are, so both readers take and refuse the same records. `_` marks what is read
/// past.
#[derive(bincode::BorrowDecode)]
struct View<'a> {
    commit: [u8; 20],
    test_hash: u64,
    recipe_hash: u64,
    time: u64,
    _round: u32,
    _wall: f64,
    _user: f64,
    _sys: f64,
    _max_rss: u64,
    value: Option<f64>,
    _error: Option<&'a str>,
    fingerprint: u64,
    import: Option<ImportView<'a>>,
    window: u64,
    moment: u32,
}

#[derive(bincode::BorrowDecode)]
struct ImportView<'a> {
    round: Option<&'a str>,
    machine: Option<&'a str>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::sample::Import;
    use proptest::prelude::*;

    fn sample() -> impl Strategy<Value = Sample> {
        (
            any::<[u8; 20]>(),
            any::<(u64, u64, u64, u32)>(),
            proptest::option::of(-1e9f64..1e9),
            proptest::option::of(".{0,20}"),
            any::<u64>(),
            proptest::option::of((
                proptest::option::of("[a-zA-Z0-9]{0,8}"),
                proptest::option::of(".{0,8}"),
            )),
            (0u64..4, any::<u32>()),
        )
            .prop_map(
                |(commit, (th, rh, time, round), value, error, fp, import, (window, moment))| {
                    Sample {
                        commit,
                        test_hash: th,
                        recipe_hash: rh,
                        time,
                        round,
                        wall: 0.5,
                        user: 0.25,
                        sys: 0.125,
                        max_rss: 77,
                        value,
                        error,
                        fingerprint: fp,
                        import: import.map(|(r, m)| Import {
                            round: r.map(Into::into),
                            machine: m.map(Into::into),
                            ..Import::default()
                        }),
                        window,
                        moment,
                    }
                },
            )
    }

    proptest! {
        #![proptest_config(crate::stats::testing::proptest_config(256))]
        /// Decoding a record straight into an observation gives what the whole sample says.
        #[test]
        fn an_observation_reads_what_the_sample_holds(s in sample()) {
            let frame = crate::store::record::encode_frame(&s).unwrap();
            let payload = &frame[super::super::sample::FRAME_HEAD + 1..];
            let (head, o) = Observation::decode(payload).unwrap();
            let (h2, whole) = Sample::decode(payload).unwrap();
            prop_assert_eq!(&whole, &s);
            prop_assert_eq!(head, h2);
            prop_assert_eq!(head, Head::of(&s));
            prop_assert_eq!(o.value(), s.value);
            prop_assert_eq!(Run::moment_key(&o), s.moment_key());
            prop_assert_eq!(o.imported(), s.import.is_some());
            prop_assert_eq!(Observation::from_sample(s.clone()), (head, o));
        }
    }
}
