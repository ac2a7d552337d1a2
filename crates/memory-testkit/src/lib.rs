//! # memory-testkit
//!
//! Everything needed to test against the ports of `memory-core`:
//! - [`in_memory`]: an in-memory adapter for every port (they pass the contract suite too);
//! - [`mocks`]: mockall mocks of every port, for narrow interaction tests of engine logic;
//! - [`contract`]: the **port contract suite**, plain `pub async fn`s every adapter crate
//!   calls on its own instance (the pattern of `object_store`'s integration tests);
//! - [`model`]: a simple reference model of the history tree and a proptest driver that
//!   checks any [`memory_core::ports::MessageStore`] against it.
//!
//! The contract functions create their own uniquely named sessions and keys, so they can run
//! against a store that already holds data, but they do write to it.

pub mod contract;
pub mod corpus;
pub mod faults;
pub mod files;
pub mod in_memory;
pub mod mocks;
pub mod model;
pub mod python;
pub mod samples;
pub mod tiny_onnx;
