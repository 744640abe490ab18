//! The `fairpipe` command line: run, validate and list audit pipelines (the program is
//! [`fairpipe::cli::run`], which the Python package's `fairpipe` command runs too).

use std::process::ExitCode;

fn main() -> ExitCode {
    ExitCode::from(fairpipe::cli::run(std::env::args_os()))
}
