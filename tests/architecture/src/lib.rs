//! Workspace-wide architecture checks live in `tests/`; this crate has no library code.
