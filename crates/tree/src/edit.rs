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
        update(root, path, path, |node| {
            // The clone shares `node`'s groups, so the change copies them.
            let mut changed = node.clone();
            self.change(&mut changed)?;
            Ok(changed)
        })
    }

    /// Applies the edit to `root` itself, copying only the nodes on the
    /// path that `root` shares with others (another version, a reader) and
    /// changing those it alone holds in place: what a transaction does to
    /// the tree only it can see, so that its second edit on a path copies
    /// nothing. Nobody else can tell the difference from [`Edit::apply`].
    /// On an error `root` reads as before.
    pub fn apply_in_place(&self, root: &mut Node) -> Result<(), EditError> {
        let path = self.path();
        in_place(root, path, &mut |node| self.change(node)).unwrap_or_else(|| {
            Err(EditError::NoNode {
                path: path.to_vec(),
            })
        })
    }

    /// Changes `node`, the node at the edit's path, into the edited node;
    /// on an error it is left as it was. Its groups that nothing else
    /// shares are changed in place (an added child's siblings move to the
    /// new group rather than being copied); shared ones are copied.
    fn change(&self, node: &mut Node) -> Result<(), EditError> {
        let children = node.children().len();
        let no_child = |at: usize| EditError::NoChild {
            path: self.path().to_vec(),
            at,
            children,
        };
        match self {
            Edit::AddChild { at, node: new, .. } => {
                if *at > children {
                    return Err(no_child(*at));
                }
                node.insert_child(*at, new.clone());
            }
            Edit::DeleteChild { at, .. } => {
                *node = node.map_children(|c| {
                    if *at >= c.len() {
                        return Err(no_child(*at));
                    }
                    c.remove(*at);
                    Ok(())
                })?;
            }
            Edit::PutAttribute { name, value, .. } => *node = node.put_attribute(name, value),
            Edit::DeleteAttribute { path, name } => {
                *node = node
                    .delete_attribute(name)
                    .ok_or_else(|| EditError::NoAttribute {
                        path: path.clone(),
                        name: name.clone(),
                    })?;
            }
            Edit::MoveChild { from, to, .. } => {
                *node = node.map_children(|c| {
                    for i in [*from, *to] {
                        if i >= c.len() {
                            return Err(no_child(i));
                        }
                    }
                    let moved = c.remove(*from);
                    c.insert(*to, moved);
                    Ok(())
                })?;
            }
        }
        Ok(())
    }
}

/// Calls `f` on the node at `rest` below `node`, changing in place the
/// sibling groups on the way that only `node` holds and copying the others;
/// `None` when there is no node at `rest`.
fn in_place(
    node: &mut Node,
    rest: &[usize],
    f: &mut dyn FnMut(&mut Node) -> Result<(), EditError>,
) -> Option<Result<(), EditError>> {
    match rest.split_first() {
        None => Some(f(node)),
        Some((&i, below)) => node.with_child_mut(i, |child| in_place(child, below, f))?,
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
    fn an_edit_in_place_changes_only_what_nothing_else_holds() {
        let root = Node::new().with_children(vec![
            Node::new().with_children(vec![leaf("a"), leaf("b")]),
            Node::new().with_children(vec![leaf("c")]),
        ]);
        let before = root.clone();
        let mut mine = root.clone();
        let edit = Edit::PutAttribute {
            path: vec![0, 1],
            name: "v".into(),
            value: b"B".to_vec(),
        };
        edit.apply_in_place(&mut mine).unwrap();
        assert_eq!(mine, edit.apply(&root).unwrap());
        assert_eq!(root, before, "the shared original is unchanged");
        assert_eq!(values(&root.children()[0]), ["a", "b"]);
        assert!(mine.children()[1].shares(&root.children()[1]));
        // A second edit on the same path finds it unshared and copies
        // nothing on the way down.
        let first_level = mine.children()[0].clone();
        drop(first_level);
        Edit::AddChild {
            path: vec![0],
            at: 0,
            node: leaf("z"),
        }
        .apply_in_place(&mut mine)
        .unwrap();
        assert_eq!(values(&mine.children()[0]), ["z", "a", "B"]);
        // A path that is not there is an error and leaves the tree as it
        // read.
        let copy = mine.clone();
        let err = Edit::DeleteChild {
            path: vec![0, 5],
            at: 0,
        }
        .apply_in_place(&mut mine)
        .unwrap_err();
        assert!(matches!(err, EditError::NoNode { .. }));
        assert_eq!(mine, copy);
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
