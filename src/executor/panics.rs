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
use std::cell::RefCell;
use std::panic::PanicHookInfo;
use std::sync::Once;

use super::context;

static INSTALL: Once = Once::new();

thread_local! {
    /// Set while [`catch`] runs code on this thread: the panic it
    /// catches, once the hook has seen it.
    static CATCHING: RefCell<Option<Option<Caught>>> = const { RefCell::new(None) };
}

/// A panic [`catch`] caught: its message and where it happened.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Caught {
    pub message: String,
    /// `file:line:column`.
    pub location: Option<String>,
}

/// Runs `f`, catching a panic quietly (nothing printed) with its message
/// and location: for code livesim calls on a user's behalf outside a
/// simulation, such as an invariant, whose panic is a finding, not a
/// crash.
pub(crate) fn catch<T>(f: impl FnOnce() -> T) -> Result<T, Caught> {
    install_hook();
    let before = CATCHING.with(|c| c.borrow_mut().replace(None));
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f));
    let caught = CATCHING
        .with(|c| std::mem::replace(&mut *c.borrow_mut(), before))
        .flatten();
    result.map_err(|payload| {
        caught.unwrap_or_else(|| Caught {
            message: payload_message(payload.as_ref()),
            location: None,
        })
    })
}

/// Installs the simulation-aware panic hook (once per process).
pub(crate) fn install_hook() {
    INSTALL.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info: &PanicHookInfo<'_>| {
            let caught = CATCHING.with(|c| match c.try_borrow_mut() {
                Ok(mut slot) => match slot.as_mut() {
                    Some(first) => {
                        first.get_or_insert_with(|| Caught {
                            message: payload_message(info.payload()),
                            location: info
                                .location()
                                .map(|l| format!("{}:{}:{}", l.file(), l.line(), l.column())),
                        });
                        true
                    }
                    None => false,
                },
                Err(_) => false,
            });
            if caught {
                return;
            }
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
