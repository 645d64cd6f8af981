//! The terminal dashboard: `app` is its model (the fold it owns, the keys, the replay pacing,
//! what is selected), `ui` draws that model and runs it as a sink of the one driver. The views
//! import the model, never the other way, and neither reaches past the analyses' snapshot
//! (`tests/boundaries.rs`).
pub mod app;
pub mod ui;
