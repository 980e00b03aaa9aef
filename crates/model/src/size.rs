//! Byte sizes as people type them: `512`, `64k`, `1m`, `1.5m`, `4KiB`, `1MB`.
//!
//! One rule, the one MB/s follows (methodology.md): a bare letter (k, m,
//! g, t) or an IEC unit (KiB, MiB, GiB, TiB) is a power of 1024, the
//! convention of disk and HTTP benchmark tools for block and body sizes;
//! an SI unit spelled with B (kB/KB, MB, GB, TB) is a power of 1000, as in
//! MB/s and as dd reads it. Decimals are accepted where they come to a
//! whole number of bytes (`1.5m`, `0.5g`).

use std::fmt;

/// Why a size could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SizeError {
    #[error("empty size: give a number of bytes such as 512, 64k or 1m")]
    Empty,
    #[error("size '{0}' is negative: a size must be positive (a number of bytes, such as 64k)")]
    Negative(String),
    #[error("size '{0}' has no number: write it as digits with an optional unit, such as 64k")]
    NoNumber(String),
    #[error(
        "size '{input}' has an unknown unit '{unit}': use k, m, g or t (or KiB, MiB, GiB, TiB: powers of 1024), or kB, MB, GB, TB (powers of 1000), e.g. 64k or 1.5m"
    )]
    UnknownUnit { input: String, unit: String },
    #[error(
        "size '{0}' is not a whole number of bytes: give more digits of a smaller unit, e.g. 1536k"
    )]
    Fraction(String),
    #[error("size '{0}' is too large")]
    TooLarge(String),
}

/// Parses a byte size: a number (decimals allowed), then an optional unit:
/// k, m, g, t or KiB … TiB are powers of 1024; kB, MB, GB, TB powers of
/// 1000 (case-insensitive except that an `ib` ending is binary).
///
/// ```
/// use dyno_model::size::parse_size;
/// assert_eq!(parse_size("512").unwrap(), 512);
/// assert_eq!(parse_size("64k").unwrap(), 65_536);
/// assert_eq!(parse_size("1MiB").unwrap(), 1_048_576);
/// assert_eq!(parse_size("1MB").unwrap(), 1_000_000);
/// assert_eq!(parse_size("1.5m").unwrap(), 1_572_864);
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
    let number_end = s
        .find(|c: char| !c.is_ascii_digit() && c != '.')
        .unwrap_or(s.len());
    let (number, unit) = s.split_at(number_end);
    if !number.chars().any(|c| c.is_ascii_digit()) {
        return Err(SizeError::NoNumber(input.to_owned()));
    }
    let unit_lower = unit.trim().to_ascii_lowercase();
    let (base, power): (u64, u32) = match unit_lower.as_str() {
        "" | "b" => (1, 0),
        "k" | "kib" => (1024, 1),
        "m" | "mib" => (1024, 2),
        "g" | "gib" => (1024, 3),
        "t" | "tib" => (1024, 4),
        "kb" => (1000, 1),
        "mb" => (1000, 2),
        "gb" => (1000, 3),
        "tb" => (1000, 4),
        _ => {
            return Err(SizeError::UnknownUnit {
                input: input.to_owned(),
                unit: unit.trim().to_owned(),
            });
        }
    };
    let multiplier = base.pow(power);
    let too_large = || SizeError::TooLarge(input.to_owned());
    let (whole, fraction) = number.split_once('.').unwrap_or((number, ""));
    if fraction.contains('.') {
        return Err(SizeError::NoNumber(input.to_owned()));
    }
    let whole: u64 = if whole.is_empty() {
        0
    } else {
        whole.parse().map_err(|_| too_large())?
    };
    let mut bytes = whole.checked_mul(multiplier).ok_or_else(too_large)?;
    // The fraction exactly, in integers: digits × multiplier / 10^len.
    let fraction = fraction.trim_end_matches('0');
    if !fraction.is_empty() {
        let scale = 10u128
            .checked_pow(fraction.len() as u32)
            .ok_or_else(|| SizeError::Fraction(input.to_owned()))?;
        let digits: u128 = fraction.parse().map_err(|_| too_large())?;
        let part = digits * u128::from(multiplier);
        if !part.is_multiple_of(scale) {
            return Err(SizeError::Fraction(input.to_owned()));
        }
        let part = u64::try_from(part / scale).map_err(|_| too_large())?;
        bytes = bytes.checked_add(part).ok_or_else(too_large)?;
    }
    Ok(bytes)
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

    /// Defect 22: decimals, and SI units (with B) as powers of 1000 like
    /// MB/s; bare letters and IEC units stay binary.
    #[test]
    fn decimals_and_si_units() {
        assert_eq!(parse_size("1.5m").unwrap(), 1_572_864);
        assert_eq!(parse_size("0.5g").unwrap(), 512 << 20);
        assert_eq!(parse_size(".5k").unwrap(), 512);
        assert_eq!(parse_size("2.0k").unwrap(), 2048);
        assert_eq!(parse_size("1MB").unwrap(), 1_000_000);
        assert_eq!(parse_size("1mb").unwrap(), 1_000_000);
        assert_eq!(parse_size("4kB").unwrap(), 4000);
        assert_eq!(parse_size("1.5GB").unwrap(), 1_500_000_000);
        assert_eq!(parse_size("2TB").unwrap(), 2_000_000_000_000);
        assert_eq!(parse_size("1GiB").unwrap(), 1 << 30);
    }

    #[test]
    fn rejects_malformed_sizes_with_a_reason() {
        assert_eq!(parse_size(""), Err(SizeError::Empty));
        assert_eq!(parse_size("-5"), Err(SizeError::Negative("-5".into())));
        assert!(
            matches!(parse_size("1x"), Err(SizeError::UnknownUnit { unit, .. }) if unit == "x")
        );
        assert!(matches!(parse_size("k"), Err(SizeError::NoNumber(_))));
        assert!(matches!(parse_size("0.1k"), Err(SizeError::Fraction(_))));
        assert!(matches!(parse_size("1.5"), Err(SizeError::Fraction(_))));
        assert!(matches!(parse_size("."), Err(SizeError::NoNumber(_))));
        assert!(matches!(parse_size("1.2.3m"), Err(SizeError::NoNumber(_))));
        assert!(
            parse_size("-5")
                .unwrap_err()
                .to_string()
                .contains("must be positive")
        );
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
