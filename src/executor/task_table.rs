//! The table of a run's live tasks that stall reports read: each task's
//! label and when it was last polled.

#![cfg_attr(not(feature = "simulation"), allow(dead_code))]

use std::collections::VecDeque;
use std::time::Duration;

use super::trace::Label;

/// The run's live tasks, by id, for stall reports.
///
/// Ids count up from 1 in the order tasks are first polled, and tasks
/// mostly end in about that order, so the table is a window of ids: slot
/// `i` holds task `first + i`, or `None` once it ended; ended tasks at the
/// front leave the window. A poll finds its task by subtraction instead of
/// a search. An ended task behind a live one keeps its empty slot until
/// every task before it has ended too.
pub(crate) struct TaskTable {
    /// The id of the window's first slot.
    first: u64,
    slots: VecDeque<Option<(Label, Duration)>>,
}

impl Default for TaskTable {
    fn default() -> Self {
        // Ids start at 1: 0 is a task's "not registered yet".
        TaskTable {
            first: 1,
            slots: VecDeque::new(),
        }
    }
}

impl TaskTable {
    /// Notes that task `id` was polled at `now`, registering it under
    /// `label` if it is not live (0: its first poll). Returns its id.
    #[inline]
    pub(crate) fn polled(&mut self, id: u64, label: &Label, now: Duration) -> u64 {
        if let Some(Some(entry)) = self.slot(id) {
            entry.1 = now;
            return id;
        }
        self.slots.push_back(Some((label.clone(), now)));
        self.first + self.slots.len() as u64 - 1
    }

    /// Forgets task `id` (it finished or was dropped).
    pub(crate) fn gone(&mut self, id: u64) {
        if let Some(slot) = self.slot(id) {
            *slot = None;
        }
        while let Some(None) = self.slots.front() {
            self.slots.pop_front();
            self.first += 1;
        }
    }

    fn slot(&mut self, id: u64) -> Option<&mut Option<(Label, Duration)>> {
        let index = id.checked_sub(self.first)?;
        self.slots.get_mut(usize::try_from(index).ok()?)
    }

    /// The live tasks' labels and last polls, in id order.
    pub(crate) fn live(&self) -> impl Iterator<Item = &(Label, Duration)> {
        self.slots.iter().flatten()
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use proptest::prelude::*;

    use super::*;

    /// What the table must behave like: a map from ids handed out by a
    /// counter, in id order.
    #[derive(Default)]
    struct Model {
        next: u64,
        live: BTreeMap<u64, (String, Duration)>,
    }

    #[derive(Clone, Debug)]
    enum Step {
        /// A new task is polled for the first time.
        Spawn,
        /// The `n`-th live task (modulo their count) is polled again.
        Poll(usize),
        /// The `n`-th live task (modulo their count) ends.
        End(usize),
    }

    fn step() -> impl Strategy<Value = Step> {
        prop_oneof![
            Just(Step::Spawn),
            any::<usize>().prop_map(Step::Poll),
            any::<usize>().prop_map(Step::End),
        ]
    }

    proptest! {
        /// Whatever order tasks start, are polled and end in, the table
        /// hands out the ids a counter would and lists the live tasks, with
        /// their last polls, as a map keyed by those ids does.
        #[test]
        fn the_table_keeps_what_a_map_of_ids_keeps(steps in prop::collection::vec(step(), 0..200)) {
            let mut table = TaskTable::default();
            let mut model = Model::default();
            for (at, step) in steps.into_iter().enumerate() {
                let now = Duration::from_millis(at as u64);
                match step {
                    Step::Spawn => {
                        model.next += 1;
                        let label = format!("task {}", model.next);
                        model.live.insert(model.next, (label.clone(), now));
                        let id = table.polled(0, &Label::from(label.as_str()), now);
                        prop_assert_eq!(id, model.next);
                    }
                    Step::Poll(n) | Step::End(n) if model.live.is_empty() => {
                        let _ = n;
                    }
                    Step::Poll(n) => {
                        let id = *model.live.keys().nth(n % model.live.len()).unwrap();
                        model.live.get_mut(&id).unwrap().1 = now;
                        let label = Label::from("ignored once registered");
                        prop_assert_eq!(table.polled(id, &label, now), id);
                    }
                    Step::End(n) => {
                        let id = *model.live.keys().nth(n % model.live.len()).unwrap();
                        model.live.remove(&id);
                        table.gone(id);
                    }
                }
                let listed: Vec<(String, Duration)> = table
                    .live()
                    .map(|(label, at)| (label.to_string(), *at))
                    .collect();
                let expected: Vec<(String, Duration)> = model.live.values().cloned().collect();
                prop_assert_eq!(listed, expected);
            }
        }
    }

    #[test]
    fn an_ended_task_polled_again_or_ended_twice_changes_nothing() {
        let mut table = TaskTable::default();
        let label = Label::from("t");
        let a = table.polled(0, &label, Duration::ZERO);
        let b = table.polled(0, &label, Duration::ZERO);
        table.gone(a);
        table.gone(a);
        table.gone(99);
        assert_eq!(table.live().count(), 1);
        // Not registered any more: polled as new, under a new id.
        assert_eq!(table.polled(a, &label, Duration::ZERO), b + 1);
    }
}
