//! Memory and swap, from `/proc/meminfo`.

use std::collections::HashMap;

use dyno_model::Memory;

use crate::root::Root;

/// Reads `/proc/meminfo`.
pub(crate) fn capture(root: Root<'_>) -> Memory {
    root.read("proc/meminfo")
        .map(|text| from_meminfo(&text))
        .unwrap_or_default()
}

/// The four figures dyno records. `swap_used_bytes` needs both `SwapTotal`
/// and `SwapFree`.
pub(crate) fn from_meminfo(text: &str) -> Memory {
    let values = parse_meminfo(text);
    let get = |key: &str| values.get(key).copied();
    let (swap_total, swap_free) = (get("SwapTotal"), get("SwapFree"));
    Memory {
        total_bytes: get("MemTotal"),
        available_bytes: get("MemAvailable"),
        swap_total_bytes: swap_total,
        swap_used_bytes: swap_total
            .zip(swap_free)
            .and_then(|(t, f)| t.checked_sub(f)),
    }
}

/// Every well-formed `Key:   123 kB` line, in bytes (`kB` in meminfo means
/// KiB). Lines without a unit (`HugePages_Total:  0`) are counts and are
/// kept as they are; malformed lines are skipped.
fn parse_meminfo(text: &str) -> HashMap<&str, u64> {
    text.lines()
        .filter_map(|line| {
            let (key, rest) = line.split_once(':')?;
            let mut words = rest.split_ascii_whitespace();
            let number: u64 = words.next()?.parse().ok()?;
            let value = match (words.next(), words.next()) {
                (None, _) => number,
                (Some("kB"), None) => number.checked_mul(1024)?,
                _ => return None,
            };
            Some((key.trim(), value))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const MEMINFO: &str = "\
MemTotal:       24682416 kB
MemFree:        22145752 kB
MemAvailable:   24319748 kB
Buffers:           63124 kB
Cached:          2300308 kB
SwapCached:            0 kB
SwapTotal:       2097148 kB
SwapFree:        1048572 kB
HugePages_Total:       0
Hugepagesize:       2048 kB
";

    #[test]
    fn realistic_meminfo() {
        assert_eq!(
            from_meminfo(MEMINFO),
            Memory {
                total_bytes: Some(24_682_416 * 1024),
                available_bytes: Some(24_319_748 * 1024),
                swap_total_bytes: Some(2_097_148 * 1024),
                swap_used_bytes: Some(1_048_576 * 1024),
            }
        );
    }

    #[test]
    fn no_swap_configured_is_zero_not_unknown() {
        let text = "MemTotal: 1024 kB\nSwapTotal: 0 kB\nSwapFree: 0 kB\n";
        let memory = from_meminfo(text);
        assert_eq!(memory.swap_total_bytes, Some(0));
        assert_eq!(memory.swap_used_bytes, Some(0));
        assert_eq!(memory.available_bytes, None);
    }

    #[test]
    fn malformed_lines_are_unknown() {
        let text = "MemTotal: lots kB\nMemAvailable: 12 MB\nSwapTotal: 8 kB\nSwapFree:\n";
        assert_eq!(
            from_meminfo(text),
            Memory {
                total_bytes: None,
                available_bytes: None,
                swap_total_bytes: Some(8192),
                swap_used_bytes: None,
            }
        );
        assert_eq!(from_meminfo("\u{0}garbage\u{7f}"), Memory::default());
    }

    #[test]
    fn free_above_total_is_unknown() {
        let memory = from_meminfo("SwapTotal: 1 kB\nSwapFree: 2 kB\n");
        assert_eq!(memory.swap_used_bytes, None);
    }
}
