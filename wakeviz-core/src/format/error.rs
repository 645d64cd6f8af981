use std::path::PathBuf;

/// Why a recording could not be read (or written). Callers branch on these: a damaged chunk
/// after good ones is a warning, a bad preamble is fatal.
#[derive(Debug, thiserror::Error)]
pub enum FormatError {
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path}: not a wakeviz recording (bad magic at offset 0)")]
    NotWakeviz { path: PathBuf },
    #[error(
        "{path}: written by a newer wakeviz (format version {found}, this build reads up to {supported})"
    )]
    NewerVersion {
        path: PathBuf,
        found: u32,
        supported: u32,
    },
    #[error("{path}: truncated {what} at offset {offset}")]
    Truncated {
        path: PathBuf,
        what: &'static str,
        offset: u64,
    },
    #[error("{path}: corrupt header at offset {offset}: {msg}")]
    BadHeader {
        path: PathBuf,
        offset: u64,
        msg: String,
    },
    #[error("{path}: chunk {index} at offset {offset} is damaged: {msg}")]
    BadChunk {
        path: PathBuf,
        index: u64,
        offset: u64,
        msg: String,
    },
    #[error("write failed: {0}")]
    Write(std::io::Error),
}
