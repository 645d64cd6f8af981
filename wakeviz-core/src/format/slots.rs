//! Storing decoded events over a recycled chunk (see [`super::Reader::recycle`]), shared by
//! both layouts' decoders: a slot's old select box is kept for the next select record instead
//! of being freed and another allocated.
use crate::event::{Event, Select};

/// Stores `e` as event `i`: over a recycled event (keeping a select box it held) or appended.
#[inline(always)]
#[expect(
    clippy::vec_box,
    reason = "the boxes move into `Event::Select` as they are"
)]
pub(super) fn put(out: &mut Vec<Event>, i: usize, e: Event, spare: &mut Vec<Box<Select>>) {
    match out.get_mut(i) {
        Some(slot @ Event::Select(_)) => {
            if let Event::Select(b) = std::mem::replace(slot, e) {
                spare.push(b);
            }
        }
        Some(slot) => *slot = e,
        None => out.push(e),
    }
}

/// Stores select record `sel` as event `i`: in the box of a select record it overwrites, else
/// in a spare box, else a new one.
#[inline(always)]
#[expect(
    clippy::vec_box,
    reason = "the boxes move into `Event::Select` as they are"
)]
pub(super) fn put_select(
    out: &mut Vec<Event>,
    i: usize,
    sel: Select,
    spare: &mut Vec<Box<Select>>,
) {
    put_select_with(out, i, spare, || sel);
}

/// [`put_select`] of the record `make` builds, called once its box is known: the record is then
/// built in the box (built first and copied in, it cost 60 more instructions per select).
#[inline(always)]
#[expect(
    clippy::vec_box,
    reason = "the boxes move into `Event::Select` as they are"
)]
pub(super) fn put_select_with(
    out: &mut Vec<Event>,
    i: usize,
    spare: &mut Vec<Box<Select>>,
    make: impl FnOnce() -> Select,
) {
    if let Some(Event::Select(b)) = out.get_mut(i) {
        **b = make();
    } else {
        let b = boxed(spare, make);
        put(out, i, Event::Select(b), spare);
    }
}

/// The record `make` builds, in a spare box if there is one (built in place), else a new one.
#[inline(always)]
#[expect(
    clippy::vec_box,
    reason = "the boxes move into `Event::Select` as they are"
)]
pub(super) fn boxed(spare: &mut Vec<Box<Select>>, make: impl FnOnce() -> Select) -> Box<Select> {
    match spare.pop() {
        Some(mut b) => {
            *b = make();
            b
        }
        None => Box::new(make()),
    }
}
