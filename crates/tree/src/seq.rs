//! A long list of nodes under one node, laid out so that appending stays
//! cheap however long the list grows.
//!
//! A node's children sit in one shared slice, so an edit that adds a
//! child copies the slice: a node with a million children would copy a
//! million entries per append. A list therefore keeps its items
//! [`LEVELS`] levels below the list node, in groups of at most [`FANOUT`]:
//! item `i` is at the path of `i`'s digits in base `FANOUT`. Appending
//! copies at most `LEVELS` groups of `FANOUT` entries, reading item `i`
//! takes `LEVELS` steps, and the list's length is an attribute of the
//! list node.

use crate::{Edit, EditError, Node, Transaction};

/// Items per group.
pub const FANOUT: usize = 64;
/// Levels of groups between the list node and its items.
pub const LEVELS: u32 = 4;
/// The most items a list holds: `FANOUT ^ LEVELS` (16,777,216).
pub const CAPACITY: u64 = (FANOUT as u64).pow(LEVELS);

/// The attribute of the list node that holds its length (u64, little
/// endian).
pub const LEN: &str = "seq.len";

/// How many items the list `list` holds.
pub fn len(list: &Node) -> u64 {
    list.attribute(LEN)
        .and_then(|v| v.try_into().ok())
        .map_or(0, u64::from_le_bytes)
}

/// The path from the list node to item `i`.
fn digits(i: u64) -> [usize; LEVELS as usize] {
    let mut out = [0; LEVELS as usize];
    let mut rest = i;
    for d in out.iter_mut().rev() {
        *d = (rest % FANOUT as u64) as usize;
        rest /= FANOUT as u64;
    }
    out
}

/// The path of item `i` of the list at `list` (a path from the tree's
/// root), to edit it.
pub fn path(list: &[usize], i: u64) -> Vec<usize> {
    let mut p = list.to_vec();
    p.extend(digits(i));
    p
}

/// Item `i` of the list `list`.
pub fn get(list: &Node, i: u64) -> Option<&Node> {
    if i >= len(list) {
        return None;
    }
    list.at(&digits(i))
}

/// Items `from..to` of the list, from the last down (newest first for a
/// list that is appended to), with their numbers.
pub fn rev(list: &Node, from: u64, to: u64) -> impl Iterator<Item = (u64, &Node)> {
    let to = to.min(len(list));
    (from.min(to)..to)
        .rev()
        .filter_map(move |i| Some((i, list.at(&digits(i))?)))
}

/// Appends `item` to the list at path `list` in the transaction; returns
/// its number.
pub fn push(t: &mut Transaction<'_>, list: &[usize], item: Node) -> Result<u64, EditError> {
    let node = t.root().at(list).ok_or_else(|| EditError::NoNode {
        path: list.to_vec(),
    })?;
    let i = len(node);
    if i >= CAPACITY {
        return Err(EditError::Full {
            path: list.to_vec(),
            capacity: CAPACITY,
        });
    }
    let d = digits(i);
    // The groups on the way down that do not exist yet start empty.
    let mut at = list.to_vec();
    for &digit in &d[..d.len() - 1] {
        let group = t.root().at(&at).map_or(0, |n| n.children().len());
        if digit == group {
            t.edit(Edit::AddChild {
                path: at.clone(),
                at: digit,
                node: Node::new(),
            })?;
        }
        at.push(digit);
    }
    t.edit(Edit::AddChild {
        path: at,
        at: d[d.len() - 1],
        node: item,
    })?;
    t.edit(Edit::PutAttribute {
        path: list.to_vec(),
        name: LEN.into(),
        value: (i + 1).to_le_bytes().to_vec(),
    })?;
    Ok(i)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Database;

    fn item(i: u64) -> Node {
        Node::with_attributes([("i", i.to_string().as_bytes())])
    }

    fn number(node: &Node) -> u64 {
        std::str::from_utf8(node.attribute("i").unwrap())
            .unwrap()
            .parse()
            .unwrap()
    }

    #[test]
    fn items_are_found_by_number_in_order_past_several_groups() {
        let db = Database::new();
        let tree = db.create_tree("list").unwrap();
        let n = (FANOUT * FANOUT + 70) as u64;
        for i in 0..n {
            let (_, got) = tree.update(|t| push(t, &[], item(i))).unwrap();
            assert_eq!(got, i);
        }
        let v = tree.snapshot();
        let list = v.root();
        assert_eq!(len(list), n);
        for i in [0, 1, 63, 64, 4095, 4096, n - 1] {
            assert_eq!(number(get(list, i).unwrap()), i);
        }
        assert!(get(list, n).is_none());
        let newest: Vec<u64> = rev(list, n - 3, u64::MAX)
            .map(|(i, node)| {
                assert_eq!(number(node), i);
                i
            })
            .collect();
        assert_eq!(newest, [n - 1, n - 2, n - 3]);
        // The list node's own children stay few: appending copies small
        // groups, never the whole list.
        assert_eq!(list.children().len(), 1);
        // Groups: one at the top, two below it, 66 of items.
        assert_eq!(list.count() - 1 - n, 1 + 2 + 66);
    }

    #[test]
    fn a_list_can_live_below_the_root_and_items_are_edited_by_path() {
        let db = Database::new();
        let tree = db.create_tree("t").unwrap();
        tree.update(|t| {
            t.edit(Edit::AddChild {
                path: vec![],
                at: 0,
                node: Node::new(),
            })
            .map(drop)
        })
        .unwrap();
        for i in 0..5 {
            tree.update(|t| push(t, &[0], item(i))).unwrap();
        }
        tree.update(|t| {
            t.edit(Edit::PutAttribute {
                path: path(&[0], 3),
                name: "i".into(),
                value: b"33".to_vec(),
            })
            .map(drop)
        })
        .unwrap();
        let v = tree.snapshot();
        let list = v.root().at(&[0]).unwrap();
        assert_eq!(number(get(list, 3).unwrap()), 33);
        assert!(matches!(
            tree.update(|t| push(t, &[7], item(0))),
            Err(crate::TreeError::Conflict { .. })
        ));
    }
}
