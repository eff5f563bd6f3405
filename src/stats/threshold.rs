//! What counts as a change: the [`Threshold`] a test sets, and the relative change every
//! report and test uses.

/// The smallest change of medians that matters for a test.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub enum Threshold {
    /// Relative change of the median: 0.02 = 2 %.
    Relative(f64),
    /// Change in the metric's own unit.
    Absolute(f64),
}

impl Threshold {
    /// True when the change from `before` to `after` (medians) reaches the threshold.
    ///
    /// A relative threshold against a `before` of 0 is reached by any non-zero `after`
    /// (the relative change is infinite). NaN inputs never reach a threshold.
    pub fn reached(&self, before: f64, after: f64) -> bool {
        if before.is_nan() || after.is_nan() {
            return false;
        }
        match *self {
            Threshold::Relative(r) => {
                let r = if r.is_nan() { 0.0 } else { r.abs() };
                if before == 0.0 {
                    return after != 0.0 || r == 0.0;
                }
                let rel = (after - before).abs() / before.abs();
                // Equal infinities give NaN: no change then.
                if rel.is_nan() {
                    return r == 0.0;
                }
                rel >= r
            }
            Threshold::Absolute(a) => {
                let a = if a.is_nan() { 0.0 } else { a.abs() };
                let d = (after - before).abs();
                if d.is_nan() {
                    return a == 0.0;
                }
                d >= a
            }
        }
    }
}

/// Relative change `(after - before) / |before|`: its sign is the direction of the move
/// (positive when the value went up), also for negative metrics. A zero `before` gives 0 (no
/// change) or ±inf; NaN in, NaN out. The one definition every report and test uses.
pub fn rel_change(before: f64, after: f64) -> f64 {
    if before.is_nan() || after.is_nan() {
        f64::NAN
    } else if before == 0.0 {
        if after == 0.0 {
            0.0
        } else {
            f64::INFINITY.copysign(after)
        }
    } else {
        (after - before) / before.abs()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relative_threshold() {
        let t = Threshold::Relative(0.02);
        assert!(t.reached(100.0, 102.0));
        assert!(t.reached(100.0, 98.0));
        assert!(!t.reached(100.0, 101.9));
        assert!(t.reached(0.0, 1.0));
        assert!(!t.reached(0.0, 0.0));
        assert!(!t.reached(f64::NAN, 1.0));
        assert!(Threshold::Relative(0.0).reached(5.0, 5.0));
    }

    #[test]
    fn absolute_threshold() {
        let t = Threshold::Absolute(8.0);
        assert!(t.reached(3064.0, 3072.0));
        assert!(!t.reached(3064.0, 3071.0));
        assert!(t.reached(3064.0, 3056.0));
    }

    #[test]
    fn rel_change_zero_before() {
        assert_eq!(rel_change(0.0, 0.0), 0.0);
        assert_eq!(rel_change(0.0, -1.0), f64::NEG_INFINITY);
        assert!((rel_change(100.0, 103.0) - 0.03).abs() < 1e-12);
    }

    #[test]
    fn rel_change_follows_the_direction_of_the_move_for_negative_values() {
        // Down from -100 to -110 is a 10 % drop, not a 10 % rise (`after / before - 1`
        // said +0.1 here).
        assert!((rel_change(-100.0, -110.0) + 0.1).abs() < 1e-12);
        assert!((rel_change(-100.0, -90.0) - 0.1).abs() < 1e-12);
        assert!((rel_change(-2.0, 2.0) - 2.0).abs() < 1e-12);
        assert!((rel_change(2.0, -2.0) + 2.0).abs() < 1e-12);
        assert!((rel_change(100.0, 90.0) + 0.1).abs() < 1e-12);
        assert_eq!(rel_change(0.0, 3.0), f64::INFINITY);
        assert!(rel_change(f64::NAN, 1.0).is_nan());
        assert!(rel_change(1.0, f64::NAN).is_nan());
        // Same sign as the move, whatever the sign of the level.
        for (b, a) in [
            (-5.0, -4.0),
            (-5.0, -6.0),
            (5.0, 6.0),
            (5.0, 4.0),
            (-1.0, 1.0),
        ] {
            assert_eq!(rel_change(b, a).signum(), (a - b).signum(), "{b} -> {a}");
        }
    }
}
