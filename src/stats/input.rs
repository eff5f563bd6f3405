//! The `detect --input FILE.csv` reader: `index,value` rows into per-commit samples.

use std::io::Read;

/// What is wrong with a `detect --input` CSV; every variant names the line.
#[derive(Debug, thiserror::Error)]
pub enum InputError {
    /// The first line is not the `index,value` header.
    #[error("line 1: expected header `index,value`, found `{found}`")]
    Header {
        /// The header as read.
        found: String,
    },
    /// A row without exactly two fields.
    #[error("line {line}: expected 2 fields `index,value`, found {found}")]
    FieldCount {
        /// 1-based line number.
        line: u64,
        /// Number of fields found.
        found: usize,
    },
    /// The index is not an integer.
    #[error("line {line}: index `{text}` is not an integer")]
    BadIndex {
        /// 1-based line number.
        line: u64,
        /// The offending text.
        text: String,
    },
    /// The value is not a number.
    #[error("line {line}: value `{text}` is not a number")]
    BadValue {
        /// 1-based line number.
        line: u64,
        /// The offending text.
        text: String,
    },
    /// The value parses but is NaN or infinite.
    #[error("line {line}: value `{text}` is not a finite number")]
    NonFinite {
        /// 1-based line number.
        line: u64,
        /// The offending text.
        text: String,
    },
    /// Indices go backwards.
    #[error(
        "line {line}: index {index} after index {previous}: rows must be in ascending index order"
    )]
    Order {
        /// 1-based line number.
        line: u64,
        /// The index on this line.
        index: i64,
        /// The index of the row before.
        previous: i64,
    },
    /// Broken CSV (bad quoting, invalid UTF-8) or a read error.
    #[error("line {line}: {message}")]
    Csv {
        /// 1-based line number (0 when unknown).
        line: u64,
        /// What the CSV reader reported.
        message: String,
    },
    /// A header but no data rows (or an empty file).
    #[error("no rows")]
    NoRows,
}

/// Per-commit samples read from a CSV.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Series {
    /// The distinct `index` values, ascending (gaps = commits not measured).
    pub index: Vec<i64>,
    /// `samples[k]` are the values of the rows with index `index[k]`, in file order.
    pub samples: Vec<Vec<f64>>,
}

fn field(rec: &csv::ByteRecord, i: usize) -> &str {
    // Byte records are raw: invalid UTF-8 shows as U+FFFD in messages and fails to parse.
    // Trimming here is cheaper than the reader's own trimming, which rebuilds every record.
    std::str::from_utf8(rec.get(i).unwrap_or(b""))
        .unwrap_or("\u{fffd}")
        .trim()
}

/// Parses CSV `index,value` (header required; several rows may share an index = repeats;
/// indices ascending, gaps allowed). Returns the distinct indices and, for each, its samples.
/// Values must be finite numbers. Surrounding spaces in fields are ignored; blank lines skipped.
pub fn read_series_csv<R: Read>(r: R) -> Result<Series, InputError> {
    let mut rdr = csv::ReaderBuilder::new()
        .has_headers(false)
        .flexible(true)
        .buffer_capacity(1 << 16)
        .from_reader(r);
    let mut rec = csv::ByteRecord::new();
    let line_of = |rec: &csv::ByteRecord| rec.position().map_or(0, |p| p.line());
    let csv_err = |e: csv::Error| InputError::Csv {
        line: e.position().map_or(0, |p| p.line()),
        message: e.to_string(),
    };
    if !rdr.read_byte_record(&mut rec).map_err(csv_err)? {
        return Err(InputError::NoRows);
    }
    let header_ok = rec.len() == 2
        && field(&rec, 0).trim_start_matches('\u{feff}') == "index"
        && field(&rec, 1) == "value";
    if !header_ok {
        let found: Vec<&str> = (0..rec.len()).map(|i| field(&rec, i)).collect();
        return Err(InputError::Header {
            found: found.join(","),
        });
    }
    let mut out = Series::default();
    while rdr.read_byte_record(&mut rec).map_err(csv_err)? {
        let line = line_of(&rec);
        if rec.len() != 2 {
            return Err(InputError::FieldCount {
                line,
                found: rec.len(),
            });
        }
        let it = field(&rec, 0);
        let index: i64 = it.parse().map_err(|_| InputError::BadIndex {
            line,
            text: it.to_string(),
        })?;
        let vt = field(&rec, 1);
        let value: f64 = vt.parse().map_err(|_| InputError::BadValue {
            line,
            text: vt.to_string(),
        })?;
        if !value.is_finite() {
            return Err(InputError::NonFinite {
                line,
                text: vt.to_string(),
            });
        }
        match out.index.last() {
            Some(&prev) if prev == index => {
                if let Some(s) = out.samples.last_mut() {
                    s.push(value);
                }
            }
            Some(&prev) if index < prev => {
                return Err(InputError::Order {
                    line,
                    index,
                    previous: prev,
                })
            }
            _ => {
                out.index.push(index);
                out.samples.push(vec![value]);
            }
        }
    }
    if out.index.is_empty() {
        return Err(InputError::NoRows);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err(s: &str) -> String {
        read_series_csv(s.as_bytes()).unwrap_err().to_string()
    }

    #[test]
    fn parses_repeats_and_gaps() {
        let s = read_series_csv("index,value\n0,1.5\n0,1.7\n2,3\n5, 4e2\n".as_bytes()).unwrap();
        assert_eq!(s.index, vec![0, 2, 5]);
        assert_eq!(s.samples, vec![vec![1.5, 1.7], vec![3.0], vec![400.0]]);
        let s = read_series_csv("index,value\r\n1,2\r\n\r\n1,3\r\n".as_bytes()).unwrap();
        assert_eq!(s.samples, vec![vec![2.0, 3.0]]);
    }

    #[test]
    fn errors_name_the_line() {
        assert_eq!(err(""), "no rows");
        assert_eq!(err("index,value\n"), "no rows");
        assert_eq!(
            err("idx,val\n1,2\n"),
            "line 1: expected header `index,value`, found `idx,val`"
        );
        assert_eq!(
            err("1,2\n"),
            "line 1: expected header `index,value`, found `1,2`"
        );
        assert_eq!(
            err("index,value\n1,2\n1,2\n1,2\n1,2\n1,2\n1,abc\n"),
            "line 7: value `abc` is not a number"
        );
        assert_eq!(
            err("index,value\n5,1\n3,1\n"),
            "line 3: index 3 after index 5: rows must be in ascending index order"
        );
        assert_eq!(
            err("index,value\nx,1\n"),
            "line 2: index `x` is not an integer"
        );
        assert_eq!(
            err("index,value\n1,2,3\n"),
            "line 2: expected 2 fields `index,value`, found 3"
        );
        assert_eq!(
            err("index,value\n1,NaN\n"),
            "line 2: value `NaN` is not a finite number"
        );
        assert_eq!(
            err("index,value\n1\n"),
            "line 2: expected 2 fields `index,value`, found 1"
        );
    }

    proptest::proptest! {
        #![proptest_config(crate::stats::testing::proptest_config(256))]
        #[test]
        fn never_panics(text in "[-0-9a-z,.\n\r \"]{0,200}") {
            let _ = read_series_csv(text.as_bytes());
            let with_header = format!("index,value\n{text}");
            if let Ok(s) = read_series_csv(with_header.as_bytes()) {
                proptest::prop_assert_eq!(s.index.len(), s.samples.len());
                proptest::prop_assert!(s.index.windows(2).all(|w| w[0] < w[1]));
                proptest::prop_assert!(s.samples.iter().all(|v| !v.is_empty()));
            }
        }
    }

    /// A million rows are read whole and grouped by index. The speed is measured, not asserted,
    /// by `scripts/bench-cpd.sh` (it times `detect --input FILE.csv`).
    #[test]
    fn million_rows() {
        let mut s = String::from("index,value\n");
        for i in 0..1_000_000u32 {
            s.push_str(&format!("{},{}.{}\n", i / 3, 1000 + i % 17, i % 10));
        }
        let r = read_series_csv(s.as_bytes()).unwrap();
        assert_eq!(r.index.len(), 333_334);
        assert_eq!(r.index[333_333], 333_333);
        assert_eq!(r.samples[0], vec![1000.0, 1001.1, 1002.2]);
        let last: f64 = format!("{}.9", 1000 + 999_999 % 17).parse().unwrap();
        assert_eq!(r.samples[333_333], vec![last]);
        assert_eq!(r.samples.iter().map(Vec::len).sum::<usize>(), 1_000_000);
    }
}
