//! What a session's wrappers (of its watchers, its resolvers) note while
//! it runs: a list shared between the wrappers and the run that reads it
//! into its record once the session is over.

use std::sync::{Arc, Mutex, MutexGuard};

/// Entries pushed in order by the wrappers of one session.
#[derive(Debug)]
pub(crate) struct SharedLog<T>(Arc<Mutex<Vec<T>>>);

impl<T> Clone for SharedLog<T> {
    fn clone(&self) -> Self {
        SharedLog(self.0.clone())
    }
}

impl<T> Default for SharedLog<T> {
    fn default() -> Self {
        SharedLog(Arc::new(Mutex::new(Vec::new())))
    }
}

impl<T: Clone> SharedLog<T> {
    /// The list, locked (a wrapper that panicked mid-push leaves it usable).
    pub(crate) fn lock(&self) -> MutexGuard<'_, Vec<T>> {
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Every entry so far, in order.
    pub(crate) fn entries(&self) -> Vec<T> {
        self.lock().clone()
    }
}
