//! The result store: every Run saved, listed, exported and compared
