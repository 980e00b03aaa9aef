//! Byte sizes as people type them: `512`, `64k`, `1m`, `4KiB`.
//!
//! Suffixes are powers of 1024 (k, m, g, t, optionally followed by `b` or
//! `ib`), the convention of disk and HTTP benchmark tools for block and body
//! sizes.

use std::fmt;

/// Why a size could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SizeError {
    #[error("empty size: give a number of bytes such as 512, 64k or 1m")]
    Empty,
    #[error("size '{0}' is negative: sizes count bytes and must be 0 or more")]
    Negative(String),
    #[error("size '{0}' has no number: write it as digits with an optional unit, such as 64k")]
    NoNumber(String),
    #[error(
        "size '{input}' has an unknown unit '{unit}': use k, m, g or t (powers of 1024), e.g. 64k"
    )]
    UnknownUnit { input: String, unit: String },
    #[error("size '{0}' is too large")]
    TooLarge(String),
}

/// Parses a byte size: digits, then an optional unit k, m, g or t (each a
/// power of 1024, case-insensitive, optionally followed by `b` or `ib`).
///
/// ```
/// use dyno_model::size::parse_size;
/// assert_eq!(parse_size("512").unwrap(), 512);
/// assert_eq!(parse_size("64k").unwrap(), 65_536);
/// assert_eq!(parse_size("1MiB").unwrap(), 1_048_576);
/// assert!(parse_size("1x").is_err());
/// ```
pub fn parse_size(input: &str) -> Result<u64, SizeError> {
    let s = input.trim();
    if s.is_empty() {
        return Err(SizeError::Empty);
    }
    if s.starts_with('-') {
        return Err(SizeError::Negative(input.to_owned()));
    }
    let digits_end = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
    let (digits, unit) = s.split_at(digits_end);
    if digits.is_empty() {
        return Err(SizeError::NoNumber(input.to_owned()));
    }
    let number: u64 = digits
        .parse()
        .map_err(|_| SizeError::TooLarge(input.to_owned()))?;
    let unit_lower = unit.trim().to_ascii_lowercase();
    let shift = match unit_lower.as_str() {
        "" | "b" => 0,
        "k" | "kb" | "kib" => 10,
        "m" | "mb" | "mib" => 20,
        "g" | "gb" | "gib" => 30,
        "t" | "tb" | "tib" => 40,
        _ => {
            return Err(SizeError::UnknownUnit {
                input: input.to_owned(),
                unit: unit.trim().to_owned(),
            });
        }
    };
    number
        .checked_mul(1u64 << shift)
        .ok_or_else(|| SizeError::TooLarge(input.to_owned()))
}

/// A byte count in binary units for people: `512 B`, `64 KiB`, `1.5 MiB`.
#[derive(Debug, Clone, Copy)]
pub struct BinarySize(pub u64);

impl fmt::Display for BinarySize {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        const UNITS: [&str; 6] = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];
        let mut value = self.0 as f64;
        let mut unit = 0;
        while value >= 1024.0 && unit < UNITS.len() - 1 {
            value /= 1024.0;
            unit += 1;
        }
        if unit == 0 || value.fract() == 0.0 {
            write!(f, "{value} {}", UNITS[unit])
        } else {
            write!(f, "{value:.1} {}", UNITS[unit])
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_plain_and_suffixed_sizes() {
        assert_eq!(parse_size("0").unwrap(), 0);
        assert_eq!(parse_size("512").unwrap(), 512);
        assert_eq!(parse_size("512b").unwrap(), 512);
        assert_eq!(parse_size("64k").unwrap(), 64 << 10);
        assert_eq!(parse_size("64K").unwrap(), 64 << 10);
        assert_eq!(parse_size("1m").unwrap(), 1 << 20);
        assert_eq!(parse_size("1MiB").unwrap(), 1 << 20);
        assert_eq!(parse_size("2g").unwrap(), 2 << 30);
        assert_eq!(parse_size("1t").unwrap(), 1 << 40);
        assert_eq!(parse_size(" 4k ").unwrap(), 4096);
    }

    #[test]
    fn rejects_malformed_sizes_with_a_reason() {
        assert_eq!(parse_size(""), Err(SizeError::Empty));
        assert_eq!(parse_size("-5"), Err(SizeError::Negative("-5".into())));
        assert!(
            matches!(parse_size("1x"), Err(SizeError::UnknownUnit { unit, .. }) if unit == "x")
        );
        assert!(matches!(parse_size("k"), Err(SizeError::NoNumber(_))));
        assert!(matches!(
            parse_size("1.5m"),
            Err(SizeError::UnknownUnit { .. })
        ));
        assert!(matches!(
            parse_size("99999999999999999999"),
            Err(SizeError::TooLarge(_))
        ));
        assert!(matches!(
            parse_size("20000000t"),
            Err(SizeError::TooLarge(_))
        ));
        let message = parse_size("1x").unwrap_err().to_string();
        assert!(
            message.contains("'1x'") && message.contains("64k"),
            "{message}"
        );
    }

    #[test]
    fn formats_binary_sizes() {
        assert_eq!(BinarySize(512).to_string(), "512 B");
        assert_eq!(BinarySize(65_536).to_string(), "64 KiB");
        assert_eq!(BinarySize(1_572_864).to_string(), "1.5 MiB");
        assert_eq!(BinarySize(24 << 30).to_string(), "24 GiB");
    }
}
