//! One Parquet file written as a stream: rows go into Arrow builders, every [`BATCH_ROWS`] they
//! become a record batch for the writer, which cuts row groups at [`ROW_GROUP_ROWS`] rows or
//! [`ROW_GROUP_BYTES`] encoded bytes, whichever comes first. Memory is one batch plus one row
//! group in progress, whatever the recording's length.
use std::{fs::File, path::PathBuf, sync::Arc};

use anyhow::Context as _;
use arrow_array::{ArrayRef, RecordBatch};
use arrow_schema::{Schema, SchemaRef};
use parquet::{
    arrow::ArrowWriter,
    basic::{Compression, ZstdLevel},
    file::{metadata::KeyValue, properties::WriterProperties},
};

pub const BATCH_ROWS: usize = 65_536;
pub const ROW_GROUP_ROWS: usize = 1 << 20;
pub const ROW_GROUP_BYTES: usize = 64 << 20;

/// The builders of one table's columns.
pub trait Rows {
    /// Rows pushed since the last [`Rows::finish`].
    fn len(&self) -> usize;
    /// The columns so far, in schema order; the builders start empty again.
    fn finish(&mut self) -> Vec<ArrayRef>;
}

pub struct Table<R: Rows> {
    writer: ArrowWriter<File>,
    schema: SchemaRef,
    pub rows: R,
    path: PathBuf,
    written: u64,
}

impl<R: Rows> Table<R> {
    /// Writes into `file` (already created safely at `path`), with the schema version and the
    /// recording id in the file's key-value metadata too.
    pub fn new(
        file: File,
        path: PathBuf,
        schema: Schema,
        rows: R,
        meta: &[(&str, String)],
    ) -> anyhow::Result<Self> {
        let schema = Arc::new(schema);
        let kv = meta
            .iter()
            .map(|(k, v)| KeyValue::new(format!("wakeviz.{k}"), v.clone()))
            .collect();
        let props = WriterProperties::builder()
            .set_compression(Compression::ZSTD(ZstdLevel::default()))
            .set_max_row_group_row_count(Some(ROW_GROUP_ROWS))
            .set_max_row_group_bytes(Some(ROW_GROUP_BYTES))
            .set_created_by(format!("wakeviz {}", env!("CARGO_PKG_VERSION")))
            .set_key_value_metadata(Some(kv))
            .build();
        let writer = ArrowWriter::try_new(file, schema.clone(), Some(props))
            .with_context(|| format!("cannot start {}", path.display()))?;
        Ok(Self {
            writer,
            schema,
            rows,
            path,
            written: 0,
        })
    }

    /// Hands the rows to the writer once a batch is full; call after each push.
    pub fn flush_if_full(&mut self) -> anyhow::Result<()> {
        if self.rows.len() >= BATCH_ROWS {
            self.flush()?;
        }
        Ok(())
    }

    fn flush(&mut self) -> anyhow::Result<()> {
        let n = self.rows.len();
        if n == 0 {
            return Ok(());
        }
        let batch = RecordBatch::try_new(self.schema.clone(), self.rows.finish())
            .with_context(|| format!("{}: building a batch", self.path.display()))?;
        self.writer
            .write(&batch)
            .with_context(|| format!("cannot write {}", self.path.display()))?;
        self.written += n as u64;
        Ok(())
    }

    /// Writes what is left and the footer; returns the rows written.
    pub fn close(mut self) -> anyhow::Result<u64> {
        self.flush()?;
        let f = self
            .writer
            .into_inner()
            .with_context(|| format!("cannot finish {}", self.path.display()))?;
        f.sync_all()
            .with_context(|| format!("cannot write {}", self.path.display()))?;
        Ok(self.written)
    }
}
