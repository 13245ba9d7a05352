//! Building blocks a session is composed from, in the fluent style of the
//! reference API (`T::simple(..)` tools combined with `|`).

pub mod tools;
