//! # fairpipe-abi
//!
//! The stable C ABI between the fairpipe host and its method plugins ([`ffi`]), and the safe SDK a
//! plugin author writes against ([`sdk`]): a `Generator` trait, one export macro, and the helpers
//! every method needs — the input [`domain`], protected [`variants`] and the batched discrimination
//! check, clipping, a seeded RNG and budget accounting.
#![deny(missing_docs)]

pub mod domain;
pub mod ffi;
pub mod sdk;
pub mod variants;
