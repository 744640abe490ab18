//! The ONNX graph reader (`fairpipe_core::models::onnx::facts::graph_facts_from_bytes`, what
//! `load_model` reads of an export before any executor runs it) over arbitrary bytes: `Ok` or a
//! `ModelError`, never a panic, hang or memory blow-up.
//!
//! The body is `fairpipe::fuzzing::onnx_graph`, which the test suite also replays the corpus through.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| fairpipe::fuzzing::onnx_graph(data));
