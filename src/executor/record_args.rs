//! How `record!` writes each value of a plain format string: the
//! cheapest way its type has, picked at compile time. The macro calls
//! `(&Arg(value)).write_trace(text)`: a type with a [`ViaPlain`] way (an
//! integer, a string) takes it, since method lookup tries `Arg` before
//! `&Arg`; any other `Display` type takes [`ViaDisplay`]. Either way the
//! text is what `Display` writes.

use std::fmt::{Display, Write as _};

/// A value of a `record!` entry.
pub struct Arg<'a, T: ?Sized>(pub &'a T);

/// A value written without the formatting machinery.
pub trait ViaPlain {
    /// Appends the value's `Display` text to `text`.
    fn write_trace(&self, text: &mut String);
}

/// Any other value: through its `Display`.
pub trait ViaDisplay {
    /// Appends the value's `Display` text to `text`.
    fn write_trace(&self, text: &mut String);
}

impl<T: Display + ?Sized> ViaDisplay for &Arg<'_, T> {
    fn write_trace(&self, text: &mut String) {
        let _ = write!(text, "{}", self.0);
    }
}

macro_rules! integers {
    ($($t:ty),*) => {$(
        impl ViaPlain for Arg<'_, $t> {
            fn write_trace(&self, text: &mut String) {
                text.push_str(itoa::Buffer::new().format(*self.0));
            }
        }
    )*};
}

integers!(
    u8, u16, u32, u64, u128, usize, i8, i16, i32, i64, i128, isize
);

impl ViaPlain for Arg<'_, str> {
    fn write_trace(&self, text: &mut String) {
        text.push_str(self.0);
    }
}

impl ViaPlain for Arg<'_, &str> {
    fn write_trace(&self, text: &mut String) {
        text.push_str(self.0);
    }
}

impl ViaPlain for Arg<'_, String> {
    fn write_trace(&self, text: &mut String) {
        text.push_str(self.0);
    }
}
