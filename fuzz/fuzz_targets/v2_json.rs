//! The Open Inference Protocol (KServe V2) JSON answers: a model's metadata
//! (`GET /v2/models/NAME`) and an `infer` answer, read as fairpipe reads a server's body
//! (`parse_json`, which accepts Python's bare `NaN`, then `read_metadata` and `read_infer_answer`).
//! No network: the bytes are the body. The first byte is the batch's row count.
#![no_main]

use fairpipe_core::models::remote::{parse_json, v2};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&rows, body)) = data.split_first() else { return };
    let text = String::from_utf8_lossy(body);
    let Ok(value) = parse_json(&text) else { return };
    let _ = v2::read_metadata(&value);
    let _ = v2::read_infer_answer(&value, usize::from(rows));
});
