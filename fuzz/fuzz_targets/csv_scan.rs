//! The CSV pre-scan (`fairpipe_core::csv_check::scan_bytes`) over arbitrary bytes: it must return
//! `Ok` or a located `DataError`, never panic, hang or run out of memory. The first byte picks the
//! separator among those a pipeline may name (`,` `;` tab `|`).
//!
//! The body is `fairpipe::fuzzing::csv_scan`, which the test suite also replays the corpus through.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| fairpipe::fuzzing::csv_scan(data));
