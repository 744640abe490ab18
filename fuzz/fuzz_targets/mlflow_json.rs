//! MLflow scoring-server answers (`{"predictions": …}` as a list, a list of lists, records or an
//! object of lists), read as fairpipe reads the body of `POST /invocations` (`parse_json`, then
//! `mlflow::predictions`). No network: the bytes are the body. The first byte is the batch's row
//! count.
//!
//! The body is `fairpipe::fuzzing::mlflow_json`, which the test suite also replays the corpus through.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| fairpipe::fuzzing::mlflow_json(data));
