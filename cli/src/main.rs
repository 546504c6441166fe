//! The `shipctl` binary: parse, run, map the result to an exit code.

fn main() -> std::process::ExitCode {
    shipctl::main()
}
