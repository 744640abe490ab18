//! The Open Inference Protocol over gRPC: a framed `ModelInfer` answer (typed or raw output
//! contents) and a framed `ModelMetadata` answer, decoded as fairpipe decodes a response body
//! (`grpc::read_infer_body`, `grpc::read_metadata_body`), and a `grpc-message` header
//! (`grpc::percent_decode`). No network: the bytes are the body. The first byte is the batch's row
//! count.
//!
//! The body is `fairpipe::fuzzing::grpc_v2`, which the test suite also replays the corpus through.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| fairpipe::fuzzing::grpc_v2(data));
