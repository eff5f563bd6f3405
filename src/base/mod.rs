//! The floor everything stands on: Ctrl-C and signals, progress bars and heartbeats, colour
//! and inert text, paths as printed, and the numbers, counts and dates every message is
//! written with. Nothing here names anything above it.

pub mod interrupt;
pub mod paths;
pub mod progress;
pub mod style;
pub mod text;
