//! `shipctl couriers list`.

use std::io::Write;

use clap::Subcommand;

use crate::Ctx;
use crate::error::{Failure, Surface};
use crate::output;

/// `shipctl couriers ...`.
#[derive(Debug, Subcommand)]
pub enum CouriersCommand {
    /// List the linked courier companies and their prices.
    List,
}

/// Runs a `couriers` command.
pub async fn exec(ctx: &Ctx, out: &mut dyn Write, command: CouriersCommand) -> Result<(), Failure> {
    match command {
        CouriersCommand::List => {
            let couriers = ctx
                .client()?
                .couriers()
                .list()
                .await
                .map_err(|e| Failure::sdk(e, Surface::Couriers))?;
            output::list(out, ctx.format(), &couriers)?;
            if couriers.is_empty() {
                crate::note("no courier company is linked to this account yet");
            }
            Ok(())
        }
    }
}
