//! Rebuilds the server when a migration is added or changed: `sqlx::migrate!`
//! embeds the files at compile time, and cargo does not otherwise notice a
//! new file in a directory no source file names (sqlx's documented fix).

fn main() {
    println!("cargo:rerun-if-changed=migrations");
}
