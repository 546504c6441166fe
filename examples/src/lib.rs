//! This package hosts the workspace's runnable examples (`cargo run -p examples --example NAME`).
