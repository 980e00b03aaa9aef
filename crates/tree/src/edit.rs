//! Edits of a tree, applied by copying the path from the edited node to
//! the root: the result is a new root that shares every untouched node
//! with the old one, which stays as it was.

use crate::Node;

/// Where a node is: child indices from the root down (`[]` is the root,
/// `[2, 0]` the first child of the root's third child).
pub type Path = Vec<usize>;

/// One change to a tree.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum Edit {
    /// Inserts `node` (with its subtree) as child number `at` of the node
    /// at `path`; `at` may be the number of children, to append.
    AddChild { path: Path, at: usize, node: Node },
    /// Removes child number `at` of the node at `path`, with its subtree.
    DeleteChild { path: Path, at: usize },
    /// Sets attribute `name` of the node at `path`.
    PutAttribute {
        path: Path,
        name: String,
        value: Vec<u8>,
    },
    /// Removes attribute `name` of the node at `path`.
    DeleteAttribute { path: Path, name: String },
    /// Moves child number `from` of the node at `path` to position `to`
    /// among its siblings. A move to another parent is a `DeleteChild` and
    /// an `AddChild` in one transaction, which commits both or neither.
    MoveChild { path: Path, from: usize, to: usize },
}

/// Why an edit does not apply to a tree.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EditError {
    #[error("no node at {path:?}")]
    NoNode { path: Path },
    #[error("the node at {path:?} has {children} children: there is no position {at}")]
    NoChild {
        path: Path,
        at: usize,
        children: usize,
    },
    #[error("the node at {path:?} has no attribute '{name}'")]
    NoAttribute { path: Path, name: String },
}

impl Edit {
    /// The path of the node the edit changes.
    pub fn path(&self) -> &[usize] {
        match self {
            Edit::AddChild { path, .. }
            | Edit::DeleteChild { path, .. }
            | Edit::PutAttribute { path, .. }
            | Edit::DeleteAttribute { path, .. }
            | Edit::MoveChild { path, .. } => path,
        }
    }

    /// The new root after this edit of `root`; `root` itself is unchanged.
    pub fn apply(&self, root: &Node) -> Result<Node, EditError> {
        let path = self.path();
        update(root, path, path, |node| self.change(node))
    }

    /// The edited node, given the node at the edit's path.
    fn change(&self, node: &Node) -> Result<Node, EditError> {
        let no_child = |at: usize| EditError::NoChild {
            path: self.path().to_vec(),
            at,
            children: node.children().len(),
        };
        match self {
            Edit::AddChild { at, node: new, .. } => node.map_children(|c| {
                if *at > c.len() {
                    return Err(no_child(*at));
                }
                c.insert(*at, new.clone());
                Ok(())
            }),
            Edit::DeleteChild { at, .. } => node.map_children(|c| {
                if *at >= c.len() {
                    return Err(no_child(*at));
                }
                c.remove(*at);
                Ok(())
            }),
            Edit::PutAttribute { name, value, .. } => Ok(node.put_attribute(name, value)),
            Edit::DeleteAttribute { path, name } => {
                node.delete_attribute(name)
                    .ok_or_else(|| EditError::NoAttribute {
                        path: path.clone(),
                        name: name.clone(),
                    })
            }
            Edit::MoveChild { from, to, .. } => node.map_children(|c| {
                for i in [*from, *to] {
                    if i >= c.len() {
                        return Err(no_child(i));
                    }
                }
                let moved = c.remove(*from);
                c.insert(*to, moved);
                Ok(())
            }),
        }
    }
}

/// `node` with the node at `rest` (below it) replaced by `f` of it, copying
/// only the nodes on the way down; `full` is the whole path, for errors.
fn update(
    node: &Node,
    rest: &[usize],
    full: &[usize],
    f: impl FnOnce(&Node) -> Result<Node, EditError>,
) -> Result<Node, EditError> {
    let Some((&i, below)) = rest.split_first() else {
        return f(node);
    };
    let no_node = || EditError::NoNode {
        path: full.to_vec(),
    };
    let child = node.children().get(i).ok_or_else(no_node)?;
    let changed = update(child, below, full, f)?;
    node.map_children(|c| {
        c[i] = changed;
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn leaf(v: &str) -> Node {
        Node::with_attributes([("v", v.as_bytes())])
    }

    fn values(node: &Node) -> Vec<String> {
        node.children()
            .iter()
            .map(|c| String::from_utf8(c.attribute("v").unwrap().to_vec()).unwrap())
            .collect()
    }

    #[test]
    fn an_edit_copies_the_path_and_shares_the_rest() {
        let root = Node::new().with_children(vec![
            Node::new().with_children(vec![leaf("a"), leaf("b")]),
            Node::new().with_children(vec![leaf("c")]),
        ]);
        let edited = Edit::PutAttribute {
            path: vec![0, 1],
            name: "v".into(),
            value: b"B".to_vec(),
        }
        .apply(&root)
        .unwrap();
        assert_eq!(values(&edited.children()[0]), ["a", "B"]);
        assert_eq!(
            values(&root.children()[0]),
            ["a", "b"],
            "the old root is unchanged"
        );
        assert!(
            edited.children()[1].shares(&root.children()[1]),
            "the other subtree is shared"
        );
        assert!(edited.children()[0].children()[0].shares(&root.children()[0].children()[0]));
        assert!(!edited.children()[0].shares(&root.children()[0]));
    }

    #[test]
    fn children_are_added_deleted_and_moved() {
        let mut root = Node::new();
        for (at, v) in [(0, "b"), (0, "a"), (2, "d"), (2, "c")] {
            root = Edit::AddChild {
                path: vec![],
                at,
                node: leaf(v),
            }
            .apply(&root)
            .unwrap();
        }
        assert_eq!(values(&root), ["a", "b", "c", "d"]);
        root = Edit::MoveChild {
            path: vec![],
            from: 0,
            to: 3,
        }
        .apply(&root)
        .unwrap();
        assert_eq!(values(&root), ["b", "c", "d", "a"]);
        root = Edit::DeleteChild {
            path: vec![],
            at: 1,
        }
        .apply(&root)
        .unwrap();
        assert_eq!(values(&root), ["b", "d", "a"]);
    }

    #[test]
    fn edits_that_do_not_fit_the_tree_say_why() {
        let root = Node::new().with_children(vec![leaf("a")]);
        let err = Edit::DeleteChild {
            path: vec![0],
            at: 0,
        }
        .apply(&root)
        .unwrap_err();
        assert_eq!(
            err,
            EditError::NoChild {
                path: vec![0],
                at: 0,
                children: 0
            }
        );
        let err = Edit::AddChild {
            path: vec![3],
            at: 0,
            node: Node::new(),
        }
        .apply(&root)
        .unwrap_err();
        assert_eq!(err, EditError::NoNode { path: vec![3] });
        let err = Edit::DeleteAttribute {
            path: vec![0],
            name: "x".into(),
        }
        .apply(&root)
        .unwrap_err();
        assert!(err.to_string().contains("no attribute 'x'"), "{err}");
        let err = Edit::MoveChild {
            path: vec![],
            from: 0,
            to: 1,
        }
        .apply(&root)
        .unwrap_err();
        assert!(matches!(err, EditError::NoChild { at: 1, .. }));
    }
}
