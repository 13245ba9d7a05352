//! Panics inside a simulation: caught, remembered, reported once.
//!
//! The default panic hook prints every panic as it happens. Inside a
//! simulation that would interleave raw panic text from a thousand seeds
//! with the runner's reports, so a hook installed on first use records the
//! message, its location and the lane or task it happened in, appends it to
//! the run's trace, and stays quiet; the failure report prints it with the
//! seed and the replay command. Outside a simulation the previous hook runs
//! as before.

use std::any::Any;
use std::panic::PanicHookInfo;
use std::sync::Once;

use super::context;

static INSTALL: Once = Once::new();

/// Installs the simulation-aware panic hook (once per process).
pub(crate) fn install_hook() {
    INSTALL.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info: &PanicHookInfo<'_>| {
            let recorded = context::with(|ctx| {
                ctx.note_panic(|label| {
                    let location = info
                        .location()
                        .map(|l| format!(" at {}:{}:{}", l.file(), l.line(), l.column()))
                        .unwrap_or_default();
                    format!(
                        "'{label}' panicked{location}: {}",
                        payload_message(info.payload())
                    )
                })
            });
            if recorded.is_none() {
                previous(info);
            }
        }));
    });
}

/// The text of a panic payload, when it is a string.
pub(crate) fn payload_message(payload: &(dyn Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "(a panic payload that is not a string)".to_string()
    }
}
