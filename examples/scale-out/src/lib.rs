//! The pieces of the scale-out example, shared with `examples/faults-under-load`: the
//! processes of a deployment ([`cluster`]), the bounded load generator and its ledger
//! ([`load`]), what a run prints ([`report`]) and the checks after a run ([`verify`]).

pub mod cluster;
pub mod load;
pub mod report;
pub mod verify;
