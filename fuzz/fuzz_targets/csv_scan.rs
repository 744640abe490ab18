//! The CSV pre-scan (`fairpipe_core::csv_check::scan_bytes`) over arbitrary bytes: it must return
//! `Ok` or a located `DataError`, never panic, hang or run out of memory. The first byte picks the
//! separator among those a pipeline may name (`,` `;` tab `|`).
#![no_main]

use std::path::Path;

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&pick, bytes)) = data.split_first() else { return };
    let separator = [b',', b';', b'\t', b'|'][usize::from(pick % 4)];
    let path = Path::new("fuzz.csv");
    if let Err(e) = fairpipe_core::csv_check::scan_bytes(path, bytes, separator) {
        // The message is what the user reads: formatting it must not panic either.
        let _ = e.to_string();
    }
});
