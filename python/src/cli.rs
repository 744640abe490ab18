//! The `fairpipe` command of the wheel: the Rust binary's command line ([`fairpipe::cli::run`]),
//! run inside the extension so that `pip install fairpipe-rs` gives the command without a Rust
//! toolchain (`fairpipe_rs._cli.main` is the console script; `python -m fairpipe_rs` too).

use std::ffi::OsString;

use pyo3::prelude::*;

/// Run the `fairpipe` command line on `argv` (the program's name first) and return its exit code
/// (the Rust binary's: 0 done, 1 failed, 2 bad arguments, 3 a gate failed, 128 + N on signal N).
/// The GIL is released while it runs; it prints to the process's standard output and error.
#[pyfunction]
pub(crate) fn cli(py: Python<'_>, argv: Vec<OsString>) -> u8 {
    py.detach(|| fairpipe::cli::run(argv))
}
