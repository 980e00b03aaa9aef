//! How the database's records look on disk.
//!
//! A record is a serde value written by postcard (varints, no schema),
//! framed as `[length: u32 LE][CRC-32 of length and payload: u32 LE]
//! [payload]`. The framing is our own because it is what recovery reads
//! byte by byte: a checksum per record tells a torn last write (dropped)
//! from damage in the middle (refused), which a general-purpose container
//! format would not let us decide.
//!
//! A node is written flattened, in pre-order, as `(attributes, number of
//! children)` entries, and read back with an explicit stack: a deep tree
//! costs no recursion on either side.

use std::fmt;
use std::sync::Arc;

use serde::de::{self, SeqAccess, Visitor};
use serde::ser::{SerializeSeq, SerializeTuple};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::{Attribute, Edit, Node};

/// Bytes before a record's payload: its length and its checksum.
pub(crate) const FRAME_HEADER: usize = 8;

/// The largest payload a record may have (a tree image in a snapshot is one
/// record).
pub(crate) const MAX_RECORD: usize = (BATCH - 1) as usize;

/// Set in a frame's length when the frame is a batch: the records one
/// fsync of the log made durable, framed together, so that a batch torn by
/// a crash (its pages written in any order, some not at all) is dropped
/// whole and cannot pass for damage in the middle.
pub(crate) const BATCH: u32 = 1 << 31;

/// What the log holds, one per acknowledged change.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) enum Record {
    /// A tree was made, `root` its version 0.
    Create { tree: u64, name: String, root: Node },
    /// `edits`, applied to version `version - 1` of `tree`, made `version`.
    Commit {
        tree: u64,
        version: u64,
        edits: Vec<Edit>,
    },
}

/// [`Record`] by reference, to write without copying the edits; it must
/// stay field for field what `Record` is.
#[derive(Debug, Serialize)]
pub(crate) enum RecordRef<'a> {
    Create {
        tree: u64,
        name: &'a str,
        root: &'a Node,
    },
    Commit {
        tree: u64,
        version: u64,
        edits: &'a [Edit],
    },
}

/// One tree as a snapshot holds it: its current version, whole.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct Image {
    pub tree: u64,
    pub name: String,
    pub version: u64,
    pub root: Node,
}

/// Payloads at least this long are compressed.
const COMPRESS_FROM: usize = 2048;
/// The first byte of a payload: how the rest is stored.
const PLAIN: u8 = 0;
const LZ4: u8 = 1;

/// Appends `value` to `out` as one framed record.
pub(crate) fn frame<T: Serialize>(value: &T, out: &mut Vec<u8>) -> Result<(), postcard::Error> {
    let start = out.len();
    out.extend_from_slice(&[0; FRAME_HEADER]);
    let mut plain = std::mem::take(out);
    plain.push(PLAIN);
    plain = postcard::to_extend(value, plain)?;
    let body = start + FRAME_HEADER + 1;
    if plain.len() - body >= COMPRESS_FROM {
        let packed = lz4_flex::compress_prepend_size(&plain[body..]);
        if packed.len() < plain.len() - body {
            plain.truncate(body);
            plain[body - 1] = LZ4;
            plain.extend_from_slice(&packed);
        }
    }
    *out = plain;
    let len = out.len() - start - FRAME_HEADER;
    if len > MAX_RECORD {
        out.truncate(start);
        return Err(postcard::Error::SerializeBufferFull);
    }
    let len = (len as u32).to_le_bytes();
    out[start..start + 4].copy_from_slice(&len);
    let crc = checksum(&len, &out[start + FRAME_HEADER..]);
    out[start + 4..start + FRAME_HEADER].copy_from_slice(&crc.to_le_bytes());
    Ok(())
}

fn checksum(len: &[u8; 4], payload: &[u8]) -> u32 {
    let mut h = crc32fast::Hasher::new();
    h.update(len);
    h.update(payload);
    h.finalize()
}

/// Appends `records` (framed records) to `out` as one batch frame.
pub(crate) fn frame_batch(records: &[u8], out: &mut Vec<u8>) {
    let len = (records.len() as u32 | BATCH).to_le_bytes();
    out.extend_from_slice(&len);
    out.extend_from_slice(&checksum(&len, records).to_le_bytes());
    out.extend_from_slice(records);
}

/// The intact frame at the start of `bytes`: its payload, its whole length
/// and whether it is a batch; `None` when there is no intact frame there
/// (too short, or the checksum does not match).
pub(crate) fn unframe(bytes: &[u8]) -> Option<(&[u8], usize, bool)> {
    let header = bytes.get(..FRAME_HEADER)?;
    let len: [u8; 4] = header[..4].try_into().ok()?;
    let crc = u32::from_le_bytes(header[4..].try_into().ok()?);
    let raw = u32::from_le_bytes(len);
    let end = FRAME_HEADER.checked_add((raw & !BATCH) as usize)?;
    let payload = bytes.get(FRAME_HEADER..end)?;
    (checksum(&len, payload) == crc).then_some((payload, end, raw & BATCH != 0))
}

/// How a run of framed records ends.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Tail {
    /// Every byte belongs to an intact record.
    Clean,
    /// From `at` on, every byte is zero: space the log laid down for
    /// records not yet written.
    Unused { at: usize },
    /// From `at` on, the bytes are one record cut short, possibly with
    /// holes of zeros (a write that was torn by a crash): nothing intact
    /// follows.
    Torn { at: usize },
    /// The record at `at` is damaged and an intact one follows it: the
    /// middle of the file was changed.
    Damaged { at: usize },
}

/// The intact frames at the start of `bytes`, in order, and how the rest
/// ends: records, or with `batches` the batch frames of a log.
pub(crate) fn records(bytes: &[u8], batches: bool) -> (Vec<&[u8]>, Tail) {
    fn intact(at: &[u8], batches: bool) -> Option<(&[u8], usize, bool)> {
        unframe(at).filter(|f| f.2 == batches)
    }
    let mut found = Vec::new();
    let mut at = 0;
    while at < bytes.len() {
        match intact(&bytes[at..], batches) {
            Some((payload, len, _)) => {
                found.push(payload);
                at += len;
            }
            None => {
                let rest = &bytes[at..];
                if rest.iter().all(|&b| b == 0) {
                    return (found, Tail::Unused { at });
                }
                // A torn write leaves nothing intact behind it; any intact
                // frame further on means the damage is in the middle.
                let intact_later = (1..rest.len()).any(|i| {
                    rest[i..].len() > FRAME_HEADER
                        && rest[i..FRAME_HEADER + i].iter().any(|&b| b != 0)
                        && intact(&rest[i..], batches).is_some()
                });
                let tail = if intact_later {
                    Tail::Damaged { at }
                } else {
                    Tail::Torn { at }
                };
                return (found, tail);
            }
        }
    }
    (found, Tail::Clean)
}

/// Decodes one record's payload.
pub(crate) fn decode<T: for<'a> Deserialize<'a>>(payload: &[u8]) -> Result<T, String> {
    match payload.split_first() {
        Some((&PLAIN, rest)) => postcard::from_bytes(rest).map_err(|e| e.to_string()),
        Some((&LZ4, rest)) => {
            let plain = lz4_flex::decompress_size_prepended(rest).map_err(|e| e.to_string())?;
            postcard::from_bytes(&plain).map_err(|e| e.to_string())
        }
        Some((other, _)) => Err(format!("unknown payload encoding {other}")),
        None => Err("an empty record".into()),
    }
}

impl Serialize for Node {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut seq = s.serialize_seq(Some(self.count() as usize))?;
        let mut stack: Vec<&Node> = vec![self];
        while let Some(node) = stack.pop() {
            seq.serialize_element(&Entry(node))?;
            stack.extend(node.children().iter().rev());
        }
        seq.end()
    }
}

/// One node of a flattened tree: its attributes and how many children
/// follow it.
struct Entry<'a>(&'a Node);

impl Serialize for Entry<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut t = s.serialize_tuple(2)?;
        t.serialize_element(&Attributes(self.0.attributes()))?;
        t.serialize_element(&self.0.children().len())?;
        t.end()
    }
}

struct Attributes<'a>(&'a [Attribute]);

impl Serialize for Attributes<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut seq = s.serialize_seq(Some(self.0.len()))?;
        for (name, value) in self.0 {
            seq.serialize_element(&(&**name, Bytes(value)))?;
        }
        seq.end()
    }
}

/// Bytes written as one byte string rather than a sequence of numbers.
struct Bytes<'a>(&'a [u8]);

impl Serialize for Bytes<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_bytes(self.0)
    }
}

/// A byte string read back.
struct ByteBuf(Arc<[u8]>);

impl<'de> Deserialize<'de> for ByteBuf {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = ByteBuf;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a byte string")
            }
            fn visit_bytes<E: de::Error>(self, v: &[u8]) -> Result<ByteBuf, E> {
                Ok(ByteBuf(v.into()))
            }
        }
        d.deserialize_bytes(V)
    }
}

/// An entry read back: attributes and the number of children to come.
struct EntryOwned(Vec<Attribute>, usize);

impl<'de> Deserialize<'de> for EntryOwned {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let (attributes, children): (Vec<(String, ByteBuf)>, usize) = Deserialize::deserialize(d)?;
        let attributes: Vec<Attribute> = attributes
            .into_iter()
            .map(|(name, value)| (Arc::from(name), value.0))
            .collect();
        Ok(EntryOwned(attributes, children))
    }
}

impl<'de> Deserialize<'de> for Node {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Node;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a flattened tree")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Node, A::Error> {
                // Nodes whose children are still being read: attributes,
                // children expected, children read so far.
                type Open = (Vec<Attribute>, usize, Vec<Node>);
                let mut open: Vec<Open> = Vec::new();
                while let Some(EntryOwned(attributes, children)) = seq.next_element()? {
                    // The count comes from the file: never trust it with a
                    // large allocation.
                    open.push((attributes, children, Vec::with_capacity(children.min(1024))));
                    while let Some((_, expected, got)) = open.last() {
                        if got.len() < *expected {
                            break;
                        }
                        let (attributes, _, children) = open.pop().expect("just looked");
                        let node = Node::from_parts(attributes, children);
                        match open.last_mut() {
                            Some(parent) => parent.2.push(node),
                            None => {
                                return match seq.next_element::<de::IgnoredAny>()? {
                                    None => Ok(node),
                                    Some(_) => Err(de::Error::custom("entries after the root")),
                                };
                            }
                        }
                    }
                }
                Err(de::Error::custom("the tree ends before its last node"))
            }
        }
        d.deserialize_seq(V)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Node {
        let leaf = |v: &str| Node::with_attributes([("v", v.as_bytes()), ("x", &[0u8, 255][..])]);
        Node::with_attributes([("root", &b"r"[..])]).with_children(vec![
            Node::new().with_children(vec![leaf("a"), leaf("b"), Node::new()]),
            leaf("c"),
        ])
    }

    #[test]
    fn a_node_round_trips_with_its_shape_and_attributes() {
        let node = sample();
        let bytes = postcard::to_stdvec(&node).unwrap();
        let back: Node = postcard::from_bytes(&bytes).unwrap();
        assert_eq!(back, node);
        let empty: Node =
            postcard::from_bytes(&postcard::to_stdvec(&Node::new()).unwrap()).unwrap();
        assert_eq!(empty, Node::new());
    }

    #[test]
    fn a_deep_tree_is_written_and_read_without_recursion() {
        // Built bottom-up, written, read back; dropped by taking it apart
        // level by level, since dropping a chain this long recursively
        // is what the test must not need either.
        let mut node = Node::new();
        for _ in 0..200_000 {
            node = Node::new().with_children(vec![node]);
        }
        let bytes = postcard::to_stdvec(&node).unwrap();
        let back: Node = postcard::from_bytes(&bytes).unwrap();
        assert_eq!(back.count(), 200_001);
        for mut n in [node, back] {
            while let Some(child) = n.children().first().cloned() {
                n = child;
            }
        }
    }

    #[test]
    fn a_record_reads_back_as_its_owned_twin() {
        let edits = vec![
            Edit::AddChild {
                path: vec![0, 1],
                at: 2,
                node: sample(),
            },
            Edit::PutAttribute {
                path: vec![],
                name: "n".into(),
                value: b"v".to_vec(),
            },
        ];
        let mut out = Vec::new();
        frame(
            &RecordRef::Commit {
                tree: 3,
                version: 9,
                edits: &edits,
            },
            &mut out,
        )
        .unwrap();
        let (payload, len, _) = unframe(&out).unwrap();
        assert_eq!(len, out.len());
        match decode::<Record>(payload).unwrap() {
            Record::Commit {
                tree,
                version,
                edits: back,
            } => assert_eq!((tree, version, back), (3, 9, edits)),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_large_record_is_compressed_and_reads_back() {
        let edits: Vec<Edit> = (0..2_000)
            .map(|i| Edit::AddChild {
                path: vec![0, i % 7],
                at: 0,
                node: Node::with_attributes([("leaf", &b"1"[..])]),
            })
            .collect();
        let record = RecordRef::Commit {
            tree: 1,
            version: 2,
            edits: &edits,
        };
        let mut out = Vec::new();
        frame(&record, &mut out).unwrap();
        let plain = postcard::to_stdvec(&record).unwrap();
        assert!(
            out.len() * 3 < plain.len(),
            "{} of {}",
            out.len(),
            plain.len()
        );
        let (payload, _, _) = unframe(&out).unwrap();
        match decode::<Record>(payload).unwrap() {
            Record::Commit { edits: back, .. } => assert_eq!(back, edits),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_cut_tail_is_torn_zeros_are_unused_and_damage_before_an_intact_record_is_not() {
        let mut log = Vec::new();
        for i in 0..3 {
            frame(
                &RecordRef::Create {
                    tree: i,
                    name: "t",
                    root: &Node::new(),
                },
                &mut log,
            )
            .unwrap();
        }
        let one = log.len() / 3;
        assert_eq!(records(&log, false).1, Tail::Clean);
        assert_eq!(records(&log, false).0.len(), 3);
        for cut in 1..one {
            let (found, tail) = records(&log[..log.len() - cut], false);
            assert_eq!((found.len(), tail), (2, Tail::Torn { at: 2 * one }));
        }
        let mut zeroed = log.clone();
        zeroed.extend_from_slice(&[0; 4096]);
        assert_eq!(records(&zeroed, false).1, Tail::Unused { at: 3 * one });
        // A record torn in space laid down with zeros.
        let mut torn = log[..log.len() - 3].to_vec();
        torn.extend_from_slice(&[0; 4096]);
        assert_eq!(records(&torn, false).1, Tail::Torn { at: 2 * one });
        let mut damaged = log.clone();
        damaged[one + FRAME_HEADER] ^= 1;
        assert_eq!(records(&damaged, false).1, Tail::Damaged { at: one });
        // A flipped bit in the last record is indistinguishable from a
        // torn write of it: dropped, like one.
        let mut last = log.clone();
        let n = last.len();
        last[n - 1] ^= 1;
        assert_eq!(records(&last, false).1, Tail::Torn { at: 2 * one });
    }

    #[test]
    fn a_torn_batch_with_holes_is_torn_and_a_damaged_one_before_another_is_not() {
        let record = |i| {
            let mut r = Vec::new();
            frame(
                &RecordRef::Create {
                    tree: i,
                    name: "t",
                    root: &Node::new(),
                },
                &mut r,
            )
            .unwrap();
            r
        };
        let mut log = Vec::new();
        frame_batch(&[record(0), record(1)].concat(), &mut log);
        let first = log.len();
        frame_batch(&[record(2), record(3), record(4)].concat(), &mut log);
        let (found, tail) = records(&log, true);
        assert_eq!((found.len(), &tail), (2, &Tail::Clean));
        assert_eq!(records(found[1], false).0.len(), 3);
        // The last batch's middle never reached the disk; its last record
        // did: the batch is torn, not damage.
        let mut holed = log.clone();
        let hole = first + FRAME_HEADER + record(2).len();
        holed[hole..hole + 10].fill(0);
        assert_eq!(
            records(&holed, true),
            (vec![found[0]], Tail::Torn { at: first })
        );
        // Damage in the first batch, with an intact batch after it.
        let mut damaged = log.clone();
        damaged[FRAME_HEADER + 3] ^= 1;
        assert_eq!(records(&damaged, true).1, Tail::Damaged { at: 0 });
    }

    #[test]
    fn malformed_trees_are_errors() {
        // A root that promises two children and has one.
        let bytes = postcard::to_stdvec(&vec![
            (Vec::<(String, Vec<u8>)>::new(), 2usize),
            (vec![], 0),
        ])
        .unwrap();
        assert!(postcard::from_bytes::<Node>(&bytes).is_err());
        // Two roots.
        let bytes = postcard::to_stdvec(&vec![
            (Vec::<(String, Vec<u8>)>::new(), 0usize),
            (vec![], 0),
        ])
        .unwrap();
        assert!(postcard::from_bytes::<Node>(&bytes).is_err());
    }
}
