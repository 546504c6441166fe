//! One file per resource: each holds its command's arguments (clap) and
//! turns them, once parsed, into SDK calls and output.

pub mod auth;
pub mod completions;
pub mod config;
pub mod couriers;
pub mod doctor;
pub mod key_access;
pub mod keys;
pub mod listen;
pub mod local_app;
pub mod recording;
pub mod replay;
pub mod shipments;
mod values;
pub mod webhooks;

use std::io::{self, IsTerminal as _, Read as _};

use crate::error::{FAILURE, Failure};

/// Reads a secret that was not given as an argument: asked for without
/// echo on a terminal, else the first line of stdin.
pub fn read_secret(prompt: &str, what: &str) -> Result<String, Failure> {
    let value = if io::stdin().is_terminal() {
        rpassword::prompt_password(prompt)
            .map_err(|e| Failure::new(FAILURE, format!("cannot read the {what}: {e}")))?
    } else {
        read_stdin_line(what)?
    };
    if value.is_empty() {
        return Err(Failure::usage(format!("the {what} is empty")));
    }
    Ok(value)
}

/// Reads stdin to its end and returns the first line, without its line end.
pub fn read_stdin_line(what: &str) -> Result<String, Failure> {
    let mut text = String::new();
    io::stdin()
        .read_to_string(&mut text)
        .map_err(|e| Failure::new(FAILURE, format!("cannot read the {what} from stdin: {e}")))?;
    Ok(text.lines().next().unwrap_or_default().to_owned())
}
