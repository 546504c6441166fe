//! `shipctl completions SHELL`: a completion script on stdout.

use std::io::Write;

use clap::Args;

use crate::error::Failure;

/// `shipctl completions`.
#[derive(Debug, Clone, Copy, Args)]
pub struct CompletionsArgs {
    /// The shell to complete for.
    pub shell: clap_complete::Shell,
}

/// Prints the completion script for the shell `args` names.
pub fn exec(out: &mut dyn Write, args: CompletionsArgs) -> Result<(), Failure> {
    let CompletionsArgs { shell } = args;
    let mut command = crate::cli::command();
    let mut buffer = Vec::new();
    clap_complete::generate(shell, &mut command, "shipctl", &mut buffer);
    out.write_all(&buffer)?;
    Ok(())
}
