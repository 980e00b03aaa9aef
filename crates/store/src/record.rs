//! What both backends share: a run's stored record (its JSON, checked to
//! read back, and refused when a newer dyno wrote it), the sort key of its
//! start, and how an id prefix picks a run.

use dyno_model::{Run, RunId, SCHEMA_VERSION};
use jiff::Timestamp;

use crate::{Listing, MIN_PREFIX_LEN, SkipReason, Skipped, StoreError};

/// Length of a run id in characters.
const ID_LEN: usize = 26;

/// `id_or_prefix` in upper case, as ids are stored, once it is long enough
/// to pick a run and could be one's start. Ids are Crockford base32:
/// anything else matches nothing, and cannot smuggle a wildcard into a
/// pattern.
pub(crate) fn prefix(id_or_prefix: &str) -> Result<String, StoreError> {
    if id_or_prefix.chars().count() < MIN_PREFIX_LEN {
        return Err(StoreError::PrefixTooShort {
            prefix: id_or_prefix.to_owned(),
        });
    }
    if id_or_prefix.len() > ID_LEN || !id_or_prefix.bytes().all(|b| b.is_ascii_alphanumeric()) {
        return Err(StoreError::NotFound {
            id: id_or_prefix.to_owned(),
        });
    }
    Ok(id_or_prefix.to_ascii_uppercase())
}

/// The run `id_or_prefix` names, from the stored ids it matched (in
/// ascending order).
pub(crate) fn one_match(id_or_prefix: &str, matches: Vec<RunId>) -> Result<RunId, StoreError> {
    match matches.as_slice() {
        [] => Err(StoreError::NotFound {
            id: id_or_prefix.to_owned(),
        }),
        [id] => Ok(*id),
        _ => Err(StoreError::Ambiguous {
            prefix: id_or_prefix.to_owned(),
            matches,
        }),
    }
}

/// A run's JSON record, checked to read back.
pub(crate) fn encode(run: &Run) -> Result<String, StoreError> {
    let unencodable = |source| StoreError::Unencodable { id: run.id, source };
    let record = serde_json::to_string(run).map_err(unencodable)?;
    // Refuse now what could not be read later: serde_json writes a NaN or
    // infinite f64 as `null`, which no f64 field accepts back.
    serde_json::from_str::<Run>(&record).map_err(unencodable)?;
    Ok(record)
}

/// Why a stored record does not read as a run.
pub(crate) enum DecodeError {
    /// Its `schema_version` is newer than this build's.
    Newer(u32),
    /// Its JSON does not decode as a run.
    Json(serde_json::Error),
}

impl DecodeError {
    /// The error [`Store::get`] returns for run `id`.
    pub(crate) fn for_run(self, id: RunId) -> StoreError {
        match self {
            DecodeError::Newer(found) => StoreError::NewerRecord {
                id,
                found,
                supported: SCHEMA_VERSION,
            },
            DecodeError::Json(source) => StoreError::BadRecord { id, source },
        }
    }

    /// Why [`Store::list`] skipped the record.
    pub(crate) fn reason(self) -> SkipReason {
        match self {
            DecodeError::Newer(found) => SkipReason::Newer {
                found,
                supported: SCHEMA_VERSION,
            },
            DecodeError::Json(err) => SkipReason::Damaged {
                detail: shorten(&err.to_string(), MAX_DETAIL_CHARS),
            },
        }
    }
}

/// The most of a parser's message [`SkipReason::Damaged`] keeps: serde
/// quotes the offending value, which may be a whole description.
pub(crate) const MAX_DETAIL_CHARS: usize = 160;

/// `text` cut to at most `max` characters, with an ellipsis if cut.
pub(crate) fn shorten(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        None => text.to_owned(),
        Some(_) => {
            let cut = text.char_indices().nth(max - 1).map_or(0, |(i, _)| i);
            format!("{}…", &text[..cut])
        }
    }
}

/// A run from its stored record, refusing records from a newer dyno before
/// serde can fail on them with a confusing message.
///
/// The record is taken as bytes, so text that is not UTF-8 reads as a
/// damaged record rather than as a failure of the store.
pub(crate) fn decode(schema_version: i64, record: &[u8]) -> Result<Run, DecodeError> {
    if schema_version > i64::from(SCHEMA_VERSION) {
        return Err(DecodeError::Newer(
            u32::try_from(schema_version).unwrap_or(u32::MAX),
        ));
    }
    serde_json::from_slice(record).map_err(DecodeError::Json)
}

/// Adds one stored record to `listing`: its run, or, when it cannot be
/// read, its id and why (the listing goes on without it).
pub(crate) fn list_into(listing: &mut Listing, id: RunId, schema_version: i64, record: &[u8]) {
    match decode(schema_version, record) {
        Ok(run) => listing.runs.push(run),
        Err(err) => listing.skipped.push(Skipped {
            id,
            reason: err.reason(),
        }),
    }
}

/// `t` in Unix nanoseconds, saturated to `i64` (years 1677 to 2262); a run
/// outside that range still sorts before or after every other.
pub fn unix_ns(t: Timestamp) -> i64 {
    let ns = t.as_nanosecond();
    i64::try_from(ns).unwrap_or(if ns < 0 { i64::MIN } else { i64::MAX })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_parser_message_is_cut_to_a_short_reason() {
        assert_eq!(shorten("short", 10), "short");
        assert_eq!(shorten("exactly10!", 10), "exactly10!");
        assert_eq!(shorten("eleven chars", 10), "eleven ch…");
        assert_eq!(shorten("ééééééé", 4), "ééé…");
        // serde quotes a string where a run should be.
        let detail = decode(1, format!("{:?}", "x".repeat(1000)).as_bytes())
            .map(drop)
            .map_err(DecodeError::reason)
            .unwrap_err()
            .to_string();
        assert!(
            detail.chars().count() <= MAX_DETAIL_CHARS && detail.ends_with('…'),
            "{detail}"
        );
    }

    #[test]
    fn timestamps_outside_the_nanosecond_range_still_sort() {
        assert_eq!(unix_ns(Timestamp::UNIX_EPOCH), 0);
        assert_eq!(unix_ns(Timestamp::MAX), i64::MAX);
        assert_eq!(unix_ns(Timestamp::MIN), i64::MIN);
        let t = Timestamp::from_nanosecond(1_704_067_200_123_456_789).unwrap();
        assert_eq!(unix_ns(t), 1_704_067_200_123_456_789);
    }
}
