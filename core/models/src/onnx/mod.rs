//! ONNX files: what a graph declares before any executor runs it ([`facts`]), dense stacks
//! recognised for the native dense executor ([`dense`]), tract ([`tract`]), ONNX Runtime through
//! the `ort` crate ([`ort`]) and finding and starting its library ([`runtime`]); a reader that
//! decodes a graph itself reads it through [`external`], which inlines the tensors an export keeps
//! in a file beside it.

pub mod dense;
pub mod external;
pub mod facts;
pub mod ort;
pub mod runtime;
pub mod tract;
