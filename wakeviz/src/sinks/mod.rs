//! Where the stream goes besides the dashboard: the recording, the replay's dump and counts,
//! the exports and the `/metrics` endpoint. Each is a driver sink.
pub(crate) mod dump;
#[cfg(feature = "export")]
pub(crate) mod export;
pub(crate) mod record;
pub mod serve;
