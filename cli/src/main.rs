//! The `shipctl` binary: parse, run, map the result to an exit code.
#![warn(missing_docs)]

fn main() -> std::process::ExitCode {
    shipctl::main()
}
