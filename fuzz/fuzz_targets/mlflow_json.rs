//! MLflow scoring-server answers (`{"predictions": …}` as a list, a list of lists, records or an
//! object of lists), read as fairpipe reads the body of `POST /invocations` (`parse_json`, then
//! `mlflow::predictions`). No network: the bytes are the body. The first byte is the batch's row
//! count.
#![no_main]

use fairpipe_core::models::remote::{mlflow, parse_json};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&rows, body)) = data.split_first() else { return };
    let text = String::from_utf8_lossy(body);
    let Ok(value) = parse_json(&text) else { return };
    let _ = mlflow::predictions(&value, usize::from(rows));
});
