//! Which response statuses a run expects. An answer with any other status
//! is counted as a failed request of class [`crate::ErrorClass::Status`],
//! so a server that answers every request with 503 cannot pass as fast.

use std::fmt;

/// A set of status codes (100–999), one bit each: `Copy`, 128 bytes, and a
/// lookup per response is one shift and one mask.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct StatusSet {
    bits: [u64; 16],
}

/// Why a `--expect-status` list was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "'{item}' is not a status: give codes (503), classes (2xx) or ranges (200-399) from 100 to 999, separated by commas, e.g. 2xx,3xx,404 (or any)"
)]
pub struct StatusSetError {
    item: String,
}

impl StatusSet {
    /// No status at all.
    pub const EMPTY: StatusSet = StatusSet { bits: [0; 16] };

    /// Every status: nothing is an error for its status alone.
    pub fn any() -> StatusSet {
        let mut set = StatusSet::EMPTY;
        set.insert_range(100, 999);
        set
    }

    /// Whether `code` is expected.
    pub fn contains(&self, code: u16) -> bool {
        let i = usize::from(code);
        i < 1024 && self.bits[i / 64] & (1 << (i % 64)) != 0
    }

    fn insert_range(&mut self, from: u16, to: u16) {
        for code in from..=to {
            let i = usize::from(code);
            self.bits[i / 64] |= 1 << (i % 64);
        }
    }

    /// Parses a list such as `2xx,3xx`, `503` or `200-299,404`.
    pub fn parse(list: &str) -> Result<StatusSet, StatusSetError> {
        let mut set = StatusSet::EMPTY;
        for item in list.split(',') {
            let item = item.trim();
            let bad = || StatusSetError { item: item.into() };
            let code = |s: &str| -> Result<u16, StatusSetError> {
                match s.trim().parse::<u16>() {
                    Ok(c) if (100..=999).contains(&c) && s.trim().len() == 3 => Ok(c),
                    _ => Err(bad()),
                }
            };
            let lower = item.to_ascii_lowercase();
            if lower == "any" {
                set.insert_range(100, 999);
            } else if let Some(class) = lower.strip_suffix("xx") {
                let digit = class.parse::<u16>().map_err(|_| bad())?;
                if class.len() != 1 || digit == 0 {
                    return Err(bad());
                }
                set.insert_range(digit * 100, digit * 100 + 99);
            } else if let Some((from, to)) = item.split_once('-') {
                let (from, to) = (code(from)?, code(to)?);
                if from > to {
                    return Err(bad());
                }
                set.insert_range(from, to);
            } else {
                let c = code(item)?;
                set.insert_range(c, c);
            }
        }
        Ok(set)
    }
}

/// 2xx and 3xx: what wrk and ab count as a successful answer.
impl Default for StatusSet {
    fn default() -> StatusSet {
        let mut set = StatusSet::EMPTY;
        set.insert_range(200, 399);
        set
    }
}

/// The set as ranges: `200-399`, `200-299,404`.
impl fmt::Display for StatusSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut first = true;
        let mut code = 100u16;
        while code <= 999 {
            if !self.contains(code) {
                code += 1;
                continue;
            }
            let start = code;
            while code < 999 && self.contains(code + 1) {
                code += 1;
            }
            if !first {
                f.write_str(",")?;
            }
            first = false;
            if start == code {
                write!(f, "{start}")?;
            } else {
                write!(f, "{start}-{code}")?;
            }
            code += 1;
        }
        if first {
            f.write_str("none")?;
        }
        Ok(())
    }
}

impl fmt::Debug for StatusSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "StatusSet({self})")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_expects_2xx_and_3xx() {
        let set = StatusSet::default();
        assert!(set.contains(200) && set.contains(304) && set.contains(399));
        assert!(!set.contains(199) && !set.contains(404) && !set.contains(503));
        assert_eq!(set.to_string(), "200-399");
    }

    #[test]
    fn lists_of_codes_classes_and_ranges_parse() {
        let set = StatusSet::parse("2xx, 404,500-502").unwrap();
        assert!(set.contains(200) && set.contains(299) && set.contains(404));
        assert!(set.contains(501) && !set.contains(503) && !set.contains(300));
        assert_eq!(set.to_string(), "200-299,404,500-502");
        assert_eq!(StatusSet::parse("503").unwrap().to_string(), "503");
        assert_eq!(StatusSet::parse("5XX").unwrap().to_string(), "500-599");
        assert_eq!(StatusSet::any().to_string(), "100-999");
        assert_eq!(StatusSet::parse("any").unwrap(), StatusSet::any());
        assert!(StatusSet::any().contains(101) && !StatusSet::any().contains(1000));
    }

    #[test]
    fn bad_lists_say_what_is_wrong() {
        for bad in [
            "", "abc", "99", "1000", "0xx", "10x", "500-400", "2xx,", "20",
        ] {
            let e = StatusSet::parse(bad).unwrap_err().to_string();
            assert!(e.contains("e.g. 2xx,3xx,404"), "{bad}: {e}");
        }
    }
}
