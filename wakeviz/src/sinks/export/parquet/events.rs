//! `events.parquet`: every event of the recording, one wide table in stream order. The columns
//! are `recording_id` and then every event field of `wakeviz_core::fields`, in its order; a
//! row's `kind` names the tracepoint and the columns of the other kinds are null (Parquet
//! stores a run of nulls in a few bytes), so one `WHERE kind = ...` selects a kind and one file
//! per recording keeps unions across recordings to one glob.
use std::sync::Arc;

use arrow_array::{
    ArrayRef,
    builder::{BooleanBuilder, Int32Builder, StringBuilder, UInt32Builder, UInt64Builder},
};
use arrow_schema::{DataType, Field, Schema};
use wakeviz_core::{
    event::{Event, TaskTable},
    fields::{F, Ty, Val, visit},
};

use super::table::Rows;

const fn data_type(t: Ty) -> DataType {
    match t {
        Ty::U32 | Ty::Pid => DataType::UInt32,
        Ty::I32 => DataType::Int32,
        Ty::U64 => DataType::UInt64,
        Ty::Bool => DataType::Boolean,
        Ty::Str => DataType::Utf8,
    }
}

pub fn schema() -> Schema {
    let fields = F::ALL
        .iter()
        .map(|f| Field::new(f.name(), data_type(f.ty()), !f.always()));
    Schema::new(
        std::iter::once(Field::new("recording_id", DataType::Utf8, false))
            .chain(fields)
            .collect::<Vec<_>>(),
    )
}

/// One column's builder, of its field's type.
enum Column {
    U32(UInt32Builder),
    I32(Int32Builder),
    U64(UInt64Builder),
    Bool(BooleanBuilder),
    Str(StringBuilder),
}

impl Column {
    fn new(t: Ty) -> Self {
        match t {
            Ty::U32 | Ty::Pid => Self::U32(UInt32Builder::new()),
            Ty::I32 => Self::I32(Int32Builder::new()),
            Ty::U64 => Self::U64(UInt64Builder::new()),
            Ty::Bool => Self::Bool(BooleanBuilder::new()),
            Ty::Str => Self::Str(StringBuilder::new()),
        }
    }

    /// Appends `v`, or null when it is `None` or (which `visit` never gives) of another type.
    fn append(&mut self, v: Option<Val<'_>>) {
        match (self, v) {
            (Self::U32(b), Some(Val::U32(x))) => b.append_value(x),
            (Self::I32(b), Some(Val::I32(x))) => b.append_value(x),
            (Self::U64(b), Some(Val::U64(x))) => b.append_value(x),
            (Self::Bool(b), Some(Val::Bool(x))) => b.append_value(x),
            (Self::Str(b), Some(Val::Str(x))) => b.append_value(x),
            (Self::U32(b), _) => b.append_null(),
            (Self::I32(b), _) => b.append_null(),
            (Self::U64(b), _) => b.append_null(),
            (Self::Bool(b), _) => b.append_null(),
            (Self::Str(b), _) => b.append_null(),
        }
    }

    fn finish(&mut self) -> ArrayRef {
        match self {
            Self::U32(b) => Arc::new(b.finish()),
            Self::I32(b) => Arc::new(b.finish()),
            Self::U64(b) => Arc::new(b.finish()),
            Self::Bool(b) => Arc::new(b.finish()),
            Self::Str(b) => Arc::new(b.finish()),
        }
    }
}

pub struct Events {
    id: String,
    n: usize,
    recording_id: StringBuilder,
    /// One per field, in [`F::ALL`] order.
    columns: Vec<Column>,
}

impl Events {
    pub fn new(id: &str) -> Self {
        Self {
            id: id.into(),
            n: 0,
            recording_id: StringBuilder::new(),
            columns: F::ALL.iter().map(|f| Column::new(f.ty())).collect(),
        }
    }

    /// Names resolve through `tasks` as known at this point of the stream.
    pub fn push(&mut self, e: &Event, tasks: &TaskTable) {
        self.n += 1;
        self.recording_id.append_value(&self.id);
        let mut row: [Option<Val<'_>>; F::ALL.len()] = std::array::from_fn(|_| None);
        visit(e, tasks, |f, v| {
            if let Some(slot) = row.get_mut(f as usize) {
                *slot = v;
            }
        });
        for (c, v) in self.columns.iter_mut().zip(row) {
            c.append(v);
        }
    }
}

impl Rows for Events {
    fn len(&self) -> usize {
        self.n
    }

    fn finish(&mut self) -> Vec<ArrayRef> {
        self.n = 0;
        let id: ArrayRef = Arc::new(self.recording_id.finish());
        std::iter::once(id)
            .chain(self.columns.iter_mut().map(Column::finish))
            .collect()
    }
}
