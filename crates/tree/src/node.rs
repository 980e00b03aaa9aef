//! Immutable nodes: attributes and ordered children, shared between
//! versions.
//!
//! A node is two shared slices: its attributes and its children. The
//! children of a node are stored side by side in one allocation, so a
//! traversal walks contiguous memory one sibling group at a time instead of
//! chasing one pointer per node (one heap allocation per node costs tens of
//! nanoseconds a visit once the tree outgrows the caches). Nothing in a node
//! ever changes: an edit builds new nodes on the path from the edited node
//! to the root ([`crate::Edit`]) and shares every other node with the
//! version it came from.

use std::sync::Arc;

/// One attribute: a name and its value.
pub type Attribute = (Arc<str>, Arc<[u8]>);

/// A node of a tree: named byte-string attributes and ordered children.
/// Cloning a node is two reference-count increments.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Node {
    attributes: Option<Arc<[Attribute]>>,
    children: Option<Arc<[Node]>>,
}

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
        self.children = (!children.is_empty()).then(|| children.into());
        self
    }

    /// A node from what a record holds.
    pub(crate) fn from_parts(attributes: Option<Arc<[Attribute]>>, children: Vec<Node>) -> Node {
        Node {
            attributes,
            children: (!children.is_empty()).then(|| children.into()),
        }
    }

    /// The node with the children `children` yields (at least one), in one
    /// allocation when the iterator knows its length.
    pub(crate) fn with_children_from(&self, children: impl Iterator<Item = Node>) -> Node {
        Node {
            attributes: self.attributes.clone(),
            children: Some(children.collect()),
        }
    }

    /// The children to change in place: copied first if anything else
    /// shares them, so no one else sees the change.
    pub(crate) fn children_mut(&mut self) -> Option<&mut [Node]> {
        self.children.as_mut().map(Arc::make_mut)
    }

    /// The children, in order.
    pub fn children(&self) -> &[Node] {
        self.children.as_deref().unwrap_or(&[])
    }

    /// The attributes, in the order they were first put.
    pub fn attributes(&self) -> &[Attribute] {
        self.attributes.as_deref().unwrap_or(&[])
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
                if let Some(grandchildren) = child.children.as_deref() {
                    stack.push(grandchildren);
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
            attributes: Some(attributes.into()),
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
            attributes: (!kept.is_empty()).then(|| kept.into()),
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
            children: (!children.is_empty()).then(|| children.into()),
        })
    }

    /// Whether `self` and `other` are the very same shared node (not merely
    /// equal): what an unchanged subtree of two versions is.
    pub fn shares(&self, other: &Node) -> bool {
        let same = |a: &Option<Arc<[Node]>>, b: &Option<Arc<[Node]>>| match (a, b) {
            (Some(a), Some(b)) => Arc::ptr_eq(a, b),
            (None, None) => true,
            _ => false,
        };
        let same_attributes = match (&self.attributes, &other.attributes) {
            (Some(a), Some(b)) => Arc::ptr_eq(a, b),
            (None, None) => true,
            _ => false,
        };
        same(&self.children, &other.children) && same_attributes
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
