//! Splitting an object into part ranges.

use std::ops::Range;

/// Part ranges covering `[first_end, total)` in `part_size` steps, after a first part that
/// already covers `[0, first_end)`. The last part may be shorter.
pub(crate) fn later_parts(first_end: u64, total: u64, part_size: u64) -> impl Iterator<Item = Range<u64>> {
    let mut start = first_end;
    std::iter::from_fn(move || {
        if start >= total {
            return None;
        }
        let end = (start + part_size).min(total);
        let r = start..end;
        start = end;
        Some(r)
    })
}

#[cfg(test)]
mod tests {
    use super::later_parts;

    #[test]
    fn covers_without_gaps() {
        for total in [0u64, 1, 9, 10, 11, 100, 107] {
            let first_end = total.min(10);
            let mut expect = first_end;
            for r in later_parts(first_end, total, 10) {
                assert_eq!(r.start, expect);
                assert!(r.end - r.start <= 10 && r.end > r.start);
                expect = r.end;
            }
            assert_eq!(expect, total);
        }
        assert_eq!(later_parts(10, 107, 10).count(), 10);
        assert_eq!(later_parts(10, 10, 10).count(), 0);
    }
}
