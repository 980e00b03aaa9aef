//! Immutable nodes: attributes and ordered children, shared between
//! versions.
//!
//! A node is two shared slices: its attributes and its children. The
//! children of a node are stored side by side in one allocation, so a
//! traversal walks contiguous memory one sibling group at a time instead of
//! chasing one pointer per node (one heap allocation per node costs tens of
//! nanoseconds a visit once the tree outgrows the caches). Each slice is a
//! thin pointer (triomphe's `ThinArc`, the length kept in the allocation
//! beside the reference count), so a node is 16 bytes rather than the 32 of
//! two `Arc<[T]>`: a traversal moves half the memory, which is what bounds
//! it once two readers share the memory channel. Nothing in a node ever
//! changes: an edit builds new nodes on the path from the edited node to
//! the root ([`crate::Edit`]) and shares every other node with the version
//! it came from.

use std::fmt;
use std::sync::Arc;

use triomphe::ThinArc;

/// One attribute: a name and its value.
pub type Attribute = (Arc<str>, Arc<[u8]>);

/// A shared, immutable, non-empty slice behind one thin pointer.
type Group<T> = ThinArc<(), T>;

/// A group of the items `items` yields, or none when it yields nothing.
fn group<T>(items: impl ExactSizeIterator<Item = T>) -> Option<Group<T>> {
    (items.len() > 0).then(|| ThinArc::from_header_and_iter((), items))
}

/// A group of the `len` items `items` yields (a chain of slices, which
/// does not say its length itself).
fn group_of<T>(len: usize, items: impl Iterator<Item = T>) -> Option<Group<T>> {
    group(Exactly { items, left: len })
}

/// The slice a group holds; empty for none.
fn slice<T>(group: &Option<Group<T>>) -> &[T] {
    group.as_ref().map_or(&[], |g| &g.slice)
}

/// Whether two groups are the very same allocation (or both none).
fn same<T>(a: &Option<Group<T>>, b: &Option<Group<T>>) -> bool {
    match (a, b) {
        (Some(a), Some(b)) => a.ptr() == b.ptr(),
        (None, None) => true,
        _ => false,
    }
}

/// An iterator that knows its length: what a group is built from when the
/// pieces (a chain of slices) do not say it themselves.
struct Exactly<I> {
    items: I,
    left: usize,
}

impl<I: Iterator> Iterator for Exactly<I> {
    type Item = I::Item;
    fn next(&mut self) -> Option<I::Item> {
        let item = self.items.next()?;
        self.left -= 1;
        Some(item)
    }
    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.left, Some(self.left))
    }
}

impl<I: Iterator> ExactSizeIterator for Exactly<I> {}

/// A node of a tree: named byte-string attributes and ordered children.
/// Cloning a node is two reference-count increments.
#[derive(Clone, Default)]
pub struct Node {
    attributes: Option<Group<Attribute>>,
    children: Option<Group<Node>>,
}

impl fmt::Debug for Node {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Node")
            .field("attributes", &self.attributes())
            .field("children", &self.children())
            .finish()
    }
}

impl PartialEq for Node {
    fn eq(&self, other: &Node) -> bool {
        self.attributes() == other.attributes() && self.children() == other.children()
    }
}

impl Eq for Node {}

impl Node {
    /// A node with no attributes and no children.
    pub fn new() -> Node {
        Node::default()
    }

    /// A node with these attributes and no children.
    pub fn with_attributes<'a>(attributes: impl IntoIterator<Item = (&'a str, &'a [u8])>) -> Node {
        let mut node = Node::new();
        for (name, value) in attributes {
            node = node.put_attribute(name, value);
        }
        node
    }

    /// The node with `children` as its children (replacing any it had).
    pub fn with_children(mut self, children: Vec<Node>) -> Node {
        self.children = group(children.into_iter());
        self
    }

    /// A node from what a record holds.
    pub(crate) fn from_parts(attributes: Vec<Attribute>, children: Vec<Node>) -> Node {
        Node {
            attributes: group(attributes.into_iter()),
            children: group(children.into_iter()),
        }
    }

    /// Calls `f` with child `i` to change in place, the children copied
    /// first if anything else shares them, so no one else sees the change;
    /// `None` when there is no child `i`.
    pub(crate) fn with_child_mut<R>(
        &mut self,
        i: usize,
        f: impl FnOnce(&mut Node) -> R,
    ) -> Option<R> {
        let children = self.children.as_mut()?;
        if i >= children.slice.len() {
            return None;
        }
        if ThinArc::strong_count(children) != 1 {
            *children = ThinArc::from_header_and_iter((), children.slice.iter().cloned());
        }
        children.with_arc_mut(|arc| {
            let unique = triomphe::Arc::get_mut(arc).expect("copied above unless unique");
            Some(f(&mut unique.slice_mut()[i]))
        })
    }

    /// Inserts `child` at position `at` (at most the number of children)
    /// of this node itself. The new sibling group is one allocation, as
    /// always; when nothing else shares the old one its children are moved
    /// into the new group, not copied, so the grandchildren's counts are
    /// not touched (a copy adds one to each and the old group's drop takes
    /// it away again).
    pub(crate) fn insert_child(&mut self, at: usize, child: Node) {
        let len = self.children().len();
        assert!(at <= len, "insert_child past the end");
        let once = std::iter::once(child);
        let new = match self.children.as_mut() {
            Some(group) if ThinArc::strong_count(group) == 1 => group.with_arc_mut(|arc| {
                let old = triomphe::Arc::get_mut(arc)
                    .expect("unique, as just seen")
                    .slice_mut();
                let (before, after) = old.split_at_mut(at);
                let take = |n: &mut Node| std::mem::take(n);
                let items = before
                    .iter_mut()
                    .map(take)
                    .chain(once)
                    .chain(after.iter_mut().map(take));
                group_of(len + 1, items)
            }),
            _ => {
                let old = self.children();
                let items = old[..at]
                    .iter()
                    .cloned()
                    .chain(once)
                    .chain(old[at..].iter().cloned());
                group_of(len + 1, items)
            }
        };
        self.children = new;
    }

    /// The children, in order.
    pub fn children(&self) -> &[Node] {
        slice(&self.children)
    }

    /// The attributes, in the order they were first put.
    pub fn attributes(&self) -> &[Attribute] {
        slice(&self.attributes)
    }

    /// The value of attribute `name`.
    pub fn attribute(&self, name: &str) -> Option<&[u8]> {
        self.attributes()
            .iter()
            .find(|(n, _)| &**n == name)
            .map(|(_, v)| &**v)
    }

    /// The child at `path` (indices from this node down), if there is one.
    pub fn at(&self, path: &[usize]) -> Option<&Node> {
        path.iter()
            .try_fold(self, |node, &i| node.children().get(i))
    }

    /// How many nodes this subtree holds, itself included, found by visiting
    /// every one of them (nothing is cached: this is the read workload).
    pub fn count(&self) -> u64 {
        // An explicit stack of sibling groups: no recursion depth limit and
        // one slice per group rather than one entry per node.
        let mut total = 1u64;
        let mut stack: Vec<&[Node]> = vec![self.children()];
        while let Some(group) = stack.pop() {
            total += group.len() as u64;
            for child in group {
                if let Some(grandchildren) = &child.children {
                    stack.push(&grandchildren.slice);
                }
            }
        }
        total
    }

    /// The node with attribute `name` set to `value` (added last when new).
    pub fn put_attribute(&self, name: &str, value: &[u8]) -> Node {
        let mut attributes: Vec<Attribute> = self.attributes().to_vec();
        match attributes.iter_mut().find(|(n, _)| &**n == name) {
            Some(slot) => slot.1 = value.into(),
            None => attributes.push((name.into(), value.into())),
        }
        Node {
            attributes: group(attributes.into_iter()),
            children: self.children.clone(),
        }
    }

    /// The node without attribute `name`; `None` when it has none.
    pub fn delete_attribute(&self, name: &str) -> Option<Node> {
        let attributes = self.attributes();
        let at = attributes.iter().position(|(n, _)| &**n == name)?;
        let mut kept = attributes.to_vec();
        kept.remove(at);
        Some(Node {
            attributes: group(kept.into_iter()),
            children: self.children.clone(),
        })
    }

    /// The node with its children replaced by `f` of a copy of them.
    pub(crate) fn map_children<E>(
        &self,
        f: impl FnOnce(&mut Vec<Node>) -> Result<(), E>,
    ) -> Result<Node, E> {
        let mut children = self.children().to_vec();
        f(&mut children)?;
        Ok(Node {
            attributes: self.attributes.clone(),
            children: group(children.into_iter()),
        })
    }

    /// Whether `self` and `other` are the very same shared node (not merely
    /// equal): what an unchanged subtree of two versions is.
    pub fn shares(&self, other: &Node) -> bool {
        same(&self.children, &other.children) && same(&self.attributes, &other.attributes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A complete tree of `depth` levels below the root, `fanout` children
    /// each.
    pub(crate) fn complete(depth: u32, fanout: usize) -> Node {
        if depth == 0 {
            return Node::with_attributes([("leaf", &b"1"[..])]);
        }
        let child = complete(depth - 1, fanout);
        Node::new().with_children(vec![child; fanout])
    }

    #[test]
    fn a_node_is_two_thin_pointers() {
        // The read workload's speed rests on this: half the bytes of two
        // fat `Arc<[T]>` per node moved on every traversal.
        assert_eq!(std::mem::size_of::<Node>(), 16);
    }

    #[test]
    fn insert_child_moves_what_it_alone_holds_and_copies_what_it_shares() {
        let leaf = |v: &str| Node::with_attributes([("v", v.as_bytes())]);
        let mut alone = Node::new().with_children(vec![leaf("a"), leaf("c")]);
        let grandchild = alone.children()[1].clone();
        alone.insert_child(1, leaf("b"));
        alone.insert_child(3, leaf("d"));
        let values: Vec<_> = alone
            .children()
            .iter()
            .map(|c| c.attribute("v").unwrap())
            .collect();
        assert_eq!(values, [b"a", b"b", b"c", b"d"]);
        assert!(
            alone.children()[2].shares(&grandchild),
            "moved, not rebuilt"
        );

        let shared = alone.clone();
        let mut mine = alone;
        mine.insert_child(0, leaf("z"));
        assert_eq!(shared.children().len(), 4, "the other holder is unchanged");
        assert_eq!(mine.children().len(), 5);
        assert!(mine.children()[1].shares(&shared.children()[0]));
    }

    #[test]
    fn count_visits_every_node() {
        assert_eq!(Node::new().count(), 1);
        // 1 + 3 + 9 + 27
        assert_eq!(complete(3, 3).count(), 40);
        let lopsided = Node::new().with_children(vec![Node::new(), complete(2, 2)]);
        assert_eq!(lopsided.count(), 1 + 1 + 7);
    }

    #[test]
    fn attributes_put_replace_and_delete() {
        let n = Node::with_attributes([("a", &b"1"[..]), ("b", &b"2"[..])]);
        assert_eq!(n.attribute("a"), Some(&b"1"[..]));
        let m = n.put_attribute("a", b"3");
        assert_eq!(m.attribute("a"), Some(&b"3"[..]));
        assert_eq!(
            n.attribute("a"),
            Some(&b"1"[..]),
            "the original is unchanged"
        );
        assert_eq!(m.attributes().len(), 2);
        let d = m.delete_attribute("b").unwrap();
        assert_eq!(d.attribute("b"), None);
        assert!(d.delete_attribute("zz").is_none());
    }

    #[test]
    fn paths_address_children() {
        let t = complete(2, 2).put_attribute("root", b"r");
        assert_eq!(t.at(&[]).unwrap().attribute("root"), Some(&b"r"[..]));
        assert_eq!(t.at(&[1, 0]).unwrap().attribute("leaf"), Some(&b"1"[..]));
        assert!(t.at(&[2]).is_none());
        assert!(t.at(&[0, 0, 0]).is_none());
    }
}
