//! The Open Inference Protocol over gRPC: a framed `ModelInfer` answer (typed or raw output
//! contents) and a framed `ModelMetadata` answer, decoded as fairpipe decodes a response body
//! (`grpc::read_infer_body`, `grpc::read_metadata_body`), and a `grpc-message` header
//! (`grpc::percent_decode`). No network: the bytes are the body. The first byte is the batch's row
//! count.
#![no_main]

use fairpipe_core::models::remote::grpc;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&rows, body)) = data.split_first() else { return };
    let _ = grpc::read_infer_body(body, usize::from(rows));
    let _ = grpc::read_metadata_body(body);
    let _ = grpc::percent_decode(&String::from_utf8_lossy(body));
});
