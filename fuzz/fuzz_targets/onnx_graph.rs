//! The ONNX graph reader (`fairpipe_core::models::onnx_graph::graph_facts_from_bytes`, what
//! `load_model` reads of an export before any executor runs it) over arbitrary bytes: `Ok` or a
//! `ModelError`, never a panic, hang or memory blow-up.
#![no_main]

use std::path::Path;

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    match fairpipe_core::models::onnx_graph::graph_facts_from_bytes(Path::new("fuzz.onnx"), data) {
        Ok(facts) => {
            let _ = format!("{facts:?}");
        }
        Err(e) => {
            let _ = e.to_string();
        }
    }
});
