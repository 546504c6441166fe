//! `shipctl completions SHELL`: a completion script on stdout.

use std::io::Write;

use crate::error::Failure;

/// Prints the completion script for `shell`.
pub fn exec(out: &mut dyn Write, shell: clap_complete::Shell) -> Result<(), Failure> {
    let mut command = crate::cli::command();
    let mut buffer = Vec::new();
    clap_complete::generate(shell, &mut command, "shipctl", &mut buffer);
    out.write_all(&buffer)?;
    Ok(())
}
