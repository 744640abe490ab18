//! The Open Inference Protocol (KServe V2) JSON answers: a model's metadata
//! (`GET /v2/models/NAME`) and an `infer` answer, read as fairpipe reads a server's body
//! (`parse_json`, which accepts Python's bare `NaN`, then `read_metadata` and `read_infer_answer`).
//! No network: the bytes are the body. The first byte is the batch's row count.
//!
//! The body is `fairpipe::fuzzing::v2_json`, which the test suite also replays the corpus through.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| fairpipe::fuzzing::v2_json(data));
