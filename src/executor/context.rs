//! The simulation a thread is currently running, if any.
//!
//! A simulated run lives on one thread (a `current_thread` runtime), so its
//! state is thread-local: the seed, the swarm, the named streams, the trace,
//! the label of the lane or task being polled, and the counters that tell
//! quiescence and livelock apart. Everything in the executor asks this
//! module "am I simulated?" first; outside a simulation the answer is no and
//! every seeded behaviour falls back to its fixed, production form.
//!
//! Without the `simulation` feature no simulation is ever entered: the
//! lookups stay (they answer "no"), and what only a running simulation
//! uses is compiled but unused.

#![cfg_attr(not(feature = "simulation"), allow(dead_code))]

use std::cell::{Cell, RefCell};
use std::collections::BTreeMap;
use std::rc::Rc;
use std::sync::{Arc, Mutex};
use std::task::Waker;
use std::time::Duration;

use super::schedule::Schedule;
use super::seed::Seed;
use super::stream::Stream;
use super::swarm::Swarm;
use super::task_table::TaskTable;
use super::trace::{Label, Trace};

thread_local! {
    static CURRENT: RefCell<Option<Rc<Context>>> = const { RefCell::new(None) };
}

/// Why a run stopped early, as noticed from inside it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Abort {
    /// More polls than the limit without the run finishing.
    Livelock { polls: u64 },
}

/// The state of one simulated run.
pub(crate) struct Context {
    pub(crate) seed: Seed,
    pub(crate) swarm: Swarm,
    /// Numbers and may calm the run's decisions (shrinking); `None`: every
    /// decision as drawn, uncounted.
    schedule: Option<Schedule>,
    start: Cell<Option<tokio::time::Instant>>,
    stopped_at: Cell<Option<Duration>>,
    cached_now: Cell<Option<Duration>>,
    streams: RefCell<BTreeMap<String, Stream>>,
    yield_streams: RefCell<Vec<(&'static str, Stream)>>,
    task_stream: RefCell<Stream>,
    /// Shared, so a sentinel outside the run can read its last entries
    /// while a task holds the thread (see `watch`); only this thread writes.
    trace: Arc<Mutex<Trace>>,
    label: RefCell<Label>,
    runtime_label: Label,
    polls: Cell<u64>,
    poll_limit: u64,
    depth: Cell<u32>,
    last_activity: Cell<Duration>,
    watch_activity: Cell<bool>,
    runner_waker: RefCell<Option<Waker>>,
    abort: RefCell<Option<Abort>>,
    last_panic: RefCell<Option<String>>,
    runtime: RefCell<Option<tokio::runtime::RuntimeMetrics>>,
    warnings: RefCell<Vec<String>>,
    /// Set in enter mode: where virtual time comes from instead of the
    /// runtime's clock, and its last reading.
    external_clock: Option<ExternalClock>,
    /// Live tasks: label and the virtual time of their last poll.
    tasks: RefCell<TaskTable>,
    /// When the run started, by the real clock: only a stall report
    /// reads it, to tell the OS threads the run started from older ones.
    started: std::time::Instant,
}

/// A clock outside the runtime (e.g. turmoil's simulated time): read on
/// every call, never cached, since no runtime hook says when it moved.
pub(crate) struct ExternalClock {
    read: Box<dyn Fn() -> Option<Duration>>,
    last: Cell<Duration>,
}

impl ExternalClock {
    pub(crate) fn new(read: impl Fn() -> Option<Duration> + 'static) -> Self {
        ExternalClock {
            read: Box::new(read),
            last: Cell::new(Duration::ZERO),
        }
    }

    /// The clock's reading, or the last one when it has none (outside a
    /// host), never going backwards.
    fn now(&self) -> Duration {
        let now = (self.read)().unwrap_or_default().max(self.last.get());
        self.last.set(now);
        now
    }
}

impl Context {
    pub(crate) fn new(seed: Seed, swarm: Swarm, poll_limit: u64) -> Self {
        let runtime_label: Label = Arc::from("runtime");
        Context {
            seed,
            swarm,
            schedule: None,
            start: Cell::new(None),
            stopped_at: Cell::new(None),
            cached_now: Cell::new(None),
            streams: RefCell::new(BTreeMap::new()),
            yield_streams: RefCell::new(Vec::new()),
            task_stream: RefCell::new(Stream::new(seed, "tasks")),
            trace: Arc::new(Mutex::new(Trace::with_capacity(1024))),
            label: RefCell::new(runtime_label.clone()),
            runtime_label,
            polls: Cell::new(0),
            poll_limit,
            depth: Cell::new(0),
            last_activity: Cell::new(Duration::ZERO),
            watch_activity: Cell::new(false),
            runner_waker: RefCell::new(None),
            abort: RefCell::new(None),
            last_panic: RefCell::new(None),
            external_clock: None,
            runtime: RefCell::new(None),
            warnings: RefCell::new(Vec::new()),
            tasks: RefCell::new(TaskTable::default()),
            // Diagnostics only: the reading never reaches the trace, the
            // schedule or anything the run decides.
            #[allow(clippy::disallowed_methods)]
            started: std::time::Instant::now(),
        }
    }

    /// A context whose decisions `schedule` numbers and may calm.
    pub(crate) fn with_schedule(mut self, schedule: Option<Schedule>) -> Self {
        self.schedule = schedule;
        self
    }

    /// Whether a decision of `kind` that the streams drew as `perturbed`
    /// goes ahead (see [`Schedule`]).
    #[inline]
    pub(crate) fn decide(&self, kind: &'static str, perturbed: bool) -> bool {
        match &self.schedule {
            None => perturbed,
            Some(schedule) => schedule.decide(kind, perturbed),
        }
    }

    /// A context whose virtual time is read from `clock` (enter mode).
    pub(crate) fn with_clock(mut self, clock: ExternalClock) -> Self {
        self.external_clock = Some(clock);
        self
    }

    /// Watches the runtime's task count for tasks spawned around the
    /// facade. Called once, inside the runtime.
    pub(crate) fn watch_runtime(&self, metrics: tokio::runtime::RuntimeMetrics) {
        *self.runtime.borrow_mut() = Some(metrics);
    }

    /// Warns, once per run, if the runtime holds a task the facade did
    /// not spawn (those live on the `LocalSet`, which is not counted).
    /// Checked as the poll of every outermost unit (the task tokio polls)
    /// ends.
    fn notice_escaped_tasks(&self) {
        let alive = match self.runtime.borrow().as_ref() {
            Some(metrics) => metrics.num_alive_tasks(),
            None => return,
        };
        if alive == 0 {
            return;
        }
        // Warned once: stop looking.
        self.runtime.borrow_mut().take();
        let tasks = if alive == 1 {
            "a task".to_string()
        } else {
            format!("{alive} tasks")
        };
        let warning = format!(
            "{tasks} spawned outside livesim::executor::spawn (with tokio::spawn or a \
             runtime handle) ran in this simulation: the seed cannot reorder such tasks, so \
             their races are never explored; spawn with \
             livesim::executor::spawn(label, future) instead"
        );
        tracing::warn!(target: "livesim::spawn", "{warning}");
        self.record_as(self.runtime_label.clone(), &format!("warning: {warning}"));
        self.warnings.borrow_mut().push(warning);
    }

    pub(crate) fn take_warnings(&self) -> Vec<String> {
        std::mem::take(&mut self.warnings.borrow_mut())
    }

    /// Marks virtual time zero. Called once, inside the runtime.
    pub(crate) fn start_clock(&self) {
        self.start.set(Some(tokio::time::Instant::now()));
    }

    /// Freezes virtual time where it is. Called, inside the runtime, when
    /// the run ends: outside the runtime tokio's clock is the real one.
    pub(crate) fn stop_clock(&self) {
        self.stopped_at.set(Some(self.now()));
    }

    /// Virtual time since the run started, read from tokio's clock.
    #[inline(never)]
    pub(crate) fn now(&self) -> Duration {
        if let Some(stopped) = self.stopped_at.get() {
            return stopped;
        }
        if let Some(clock) = &self.external_clock {
            return clock.now();
        }
        let now = match self.start.get() {
            Some(start) => tokio::time::Instant::now().saturating_duration_since(start),
            None => Duration::ZERO,
        };
        self.cached_now.set(Some(now));
        now
    }

    /// Virtual time, without reading tokio's clock when it cannot have moved.
    ///
    /// Paused tokio time moves only while the runtime parks (or when a test
    /// calls `tokio::time::advance`), so the runtime's unpark hook clears
    /// this cache and every poll in between reuses one reading. Reading a
    /// paused clock takes a lock; a busy run polls thousands of times. (In
    /// enter mode nothing fills the cache: that clock is read every time.)
    #[inline]
    pub(crate) fn now_cached(&self) -> Duration {
        match self.cached_now.get() {
            Some(now) => now,
            None => self.now(),
        }
    }

    /// Forgets the cached time: the runtime has parked and may have moved it.
    pub(crate) fn time_may_have_moved(&self) {
        self.cached_now.set(None);
    }

    /// Draws from the stream `label`, creating it on first use.
    pub(crate) fn draw<T>(&self, label: &str, f: impl FnOnce(&mut Stream) -> T) -> T {
        let mut streams = self.streams.borrow_mut();
        if let Some(stream) = streams.get_mut(label) {
            return f(stream);
        }
        let stream = streams
            .entry(label.to_string())
            .or_insert_with(|| Stream::new(self.seed, label));
        f(stream)
    }

    /// Draws from the stream of yield point `label` (`yield/<label>`).
    ///
    /// A run has a handful of yield points, each passed thousands of times:
    /// a short list searched by address first (labels are literals) beats a
    /// map keyed by string.
    pub(crate) fn draw_yield<T>(&self, label: &'static str, f: impl FnOnce(&mut Stream) -> T) -> T {
        let mut streams = self.yield_streams.borrow_mut();
        let found = streams
            .iter()
            .position(|(l, _)| std::ptr::eq(*l, label))
            .or_else(|| streams.iter().position(|(l, _)| *l == label));
        let index = found.unwrap_or_else(|| {
            streams.push((label, Stream::joined(self.seed, "yield/", label)));
            streams.len() - 1
        });
        f(&mut streams[index].1)
    }

    /// Draws from the stream that perturbs spawned tasks (`tasks`).
    pub(crate) fn draw_task<T>(&self, f: impl FnOnce(&mut Stream) -> T) -> T {
        f(&mut self.task_stream.borrow_mut())
    }

    /// A fresh stream of this run, `prefix` followed by `name`, owned by
    /// the caller (lane sets and delivery queues keep theirs to avoid a
    /// look-up per draw).
    pub(crate) fn stream(&self, prefix: &str, name: &str) -> Stream {
        Stream::joined(self.seed, prefix, name)
    }

    /// Appends to the trace under the current label.
    pub(crate) fn record(&self, event: &str) {
        let label = self.label.borrow().clone();
        self.record_as(label, event);
    }

    /// Appends to the trace under the current label, formatting in place.
    pub(crate) fn record_fmt(&self, event: std::fmt::Arguments<'_>) {
        let label = self.label.borrow().clone();
        let at = self.now_cached();
        self.trace().push_fmt(at, label, event);
    }

    /// Appends an entry written by `event` under the current label.
    pub(crate) fn record_written(&self, event: impl FnOnce(&mut String)) {
        let label = self.label.borrow().clone();
        let at = self.now_cached();
        self.trace().push_written(at, label, event);
    }

    /// Appends `head` and its `detail` as one entry under the current label.
    pub(crate) fn record_detailed(&self, head: &str, detail: &str) {
        let label = self.label.borrow().clone();
        let at = self.now_cached();
        self.trace().push_detailed(at, label, head, detail);
    }

    /// Appends `head` and its `detail` as one entry under the current
    /// label, each written in place by its function.
    pub(crate) fn record_detailed_with(
        &self,
        head: impl FnOnce(&mut String),
        detail: impl FnOnce(&mut String),
    ) {
        let label = self.label.borrow().clone();
        let at = self.now_cached();
        self.trace().push_detailed_with(at, label, head, detail);
    }

    /// Appends a scheduling entry (a lane pick, a delivery) under `label`.
    pub(crate) fn record_scheduling(&self, label: Label, event: impl FnOnce(&mut String)) {
        let at = self.now_cached();
        self.trace().push_scheduling_with(at, label, event);
    }

    /// Appends to the trace under an explicit label.
    pub(crate) fn record_as(&self, label: Label, event: &str) {
        let at = self.now_cached();
        self.trace().push(at, label, event);
    }

    pub(crate) fn runtime_label(&self) -> Label {
        self.runtime_label.clone()
    }

    pub(crate) fn label(&self) -> Label {
        self.label.borrow().clone()
    }

    /// The trace, to write to (only this thread does).
    fn trace(&self) -> std::sync::MutexGuard<'_, Trace> {
        self.trace.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Shows the trace to the watch of the thread, if it is watched.
    #[cfg(feature = "simulation")]
    pub(crate) fn share_trace(&self) {
        super::watch::share_trace(&self.trace);
    }

    pub(crate) fn take_trace(&self) -> Trace {
        std::mem::take(&mut *self.trace())
    }

    pub(crate) fn trace_len(&self) -> usize {
        self.trace().len()
    }

    pub(crate) fn polls(&self) -> u64 {
        self.polls.get()
    }

    pub(crate) fn depth(&self) -> u32 {
        self.depth.get()
    }

    pub(crate) fn last_activity(&self) -> Duration {
        self.last_activity.get()
    }

    /// Registers the waker of the future that waits for the run to end,
    /// woken on an abort or, when asked for, on any activity.
    pub(crate) fn set_runner_waker(&self, waker: &Waker) {
        let mut slot = self.runner_waker.borrow_mut();
        if !slot.as_ref().is_some_and(|w| w.will_wake(waker)) {
            *slot = Some(waker.clone());
        }
    }

    /// Asks for the runner to be woken at the next poll of any counted unit.
    pub(crate) fn watch_activity(&self) {
        self.watch_activity.set(true);
    }

    pub(crate) fn abort(&self) -> Option<Abort> {
        self.abort.borrow().clone()
    }

    /// Remembers a panic and appends it to the trace. Called from the panic
    /// hook, which may run while any of our cells is borrowed, so it gives
    /// up on a busy cell rather than panic inside a panic.
    pub(crate) fn note_panic(&self, describe: impl FnOnce(&str) -> String) {
        let label = match self.label.try_borrow() {
            Ok(label) => label.clone(),
            Err(_) => self.runtime_label.clone(),
        };
        let message = describe(&label);
        let at = self.now_cached();
        if let Ok(mut trace) = self.trace.try_lock() {
            trace.push_fmt(at, label, format_args!("panic: {message}"));
        }
        if let Ok(mut last) = self.last_panic.try_borrow_mut() {
            *last = Some(message);
        }
    }

    /// Notes a poll of task `id` (0: not yet registered), registering it
    /// under `label` on its first poll. Returns its id.
    #[inline]
    pub(crate) fn task_polled(&self, id: u64, label: &Label) -> u64 {
        let now = self.now_cached();
        self.tasks.borrow_mut().polled(id, label, now)
    }

    /// Forgets a task that finished or was dropped.
    pub(crate) fn task_gone(&self, id: u64) {
        if let Ok(mut tasks) = self.tasks.try_borrow_mut() {
            tasks.gone(id);
        }
    }

    /// Live tasks not polled for at least `quiet`: (label, last poll), in
    /// the order they were first polled.
    pub(crate) fn stalled_tasks(&self, now: Duration, quiet: Duration) -> Vec<(String, Duration)> {
        self.tasks
            .borrow()
            .live()
            .filter(|(_, at)| now.saturating_sub(*at) >= quiet)
            .map(|(label, at)| (label.to_string(), *at))
            .collect()
    }

    /// When the run started, by the real clock (for stall reports).
    pub(crate) fn started(&self) -> std::time::Instant {
        self.started
    }

    pub(crate) fn take_last_panic(&self) -> Option<String> {
        self.last_panic.borrow_mut().take()
    }

    /// Bookkeeping before a lane, task or the main future is polled: the
    /// label switches to `label`, and the poll counts towards quiescence
    /// and the livelock limit. Undone when the guard drops.
    #[inline]
    pub(crate) fn enter_unit(&self, label: &Label) -> UnitGuard<'_> {
        let polls = self.polls.get() + 1;
        self.polls.set(polls);
        self.depth.set(self.depth.get() + 1);
        let now = self.now_cached();
        let before = self.last_activity.replace(now);
        if now > before {
            tracing::debug!(target: "livesim::executor", jump_ms = (now - before).as_millis() as u64, "virtual time advanced");
        }
        if polls > self.poll_limit && self.abort.borrow().is_none() {
            *self.abort.borrow_mut() = Some(Abort::Livelock { polls });
            self.wake_runner();
        }
        if self.watch_activity.replace(false) {
            self.wake_runner();
        }
        let previous = self.label.replace(label.clone());
        UnitGuard {
            ctx: self,
            previous,
        }
    }

    fn wake_runner(&self) {
        if let Some(waker) = self.runner_waker.borrow().as_ref() {
            waker.wake_by_ref();
        }
    }
}

/// Restores the label of the enclosing unit when a poll ends.
pub(crate) struct UnitGuard<'a> {
    ctx: &'a Context,
    previous: Label,
}

impl Drop for UnitGuard<'_> {
    #[inline]
    fn drop(&mut self) {
        let ctx = self.ctx;
        let depth = ctx.depth.get().saturating_sub(1);
        ctx.depth.set(depth);
        // A task spawned during this poll is alive until the outermost
        // unit (the task tokio polls) yields, however short its life: look
        // as that one ends.
        if depth == 0 {
            ctx.notice_escaped_tasks();
        }
        std::mem::swap(&mut *ctx.label.borrow_mut(), &mut self.previous);
    }
}

/// Runs `f` with the current simulation, or returns `None` outside one.
pub(crate) fn with<T>(f: impl FnOnce(&Context) -> T) -> Option<T> {
    CURRENT.with(|current| current.borrow().as_ref().map(|ctx| f(ctx)))
}

/// Whether this thread is running a simulation.
pub(crate) fn is_active() -> bool {
    CURRENT.with(|current| current.borrow().is_some())
}

/// Makes `ctx` this thread's simulation until the guard drops.
pub(crate) fn enter(ctx: Rc<Context>) -> EnterGuard {
    #[cfg(feature = "simulation")]
    ctx.share_trace();
    CURRENT.with(|current| {
        let mut current = current.borrow_mut();
        assert!(
            current.is_none(),
            "a livesim simulation cannot start inside another one on the same thread"
        );
        *current = Some(ctx);
    });
    EnterGuard(())
}

/// Clears the thread's simulation when dropped.
pub(crate) struct EnterGuard(());

impl Drop for EnterGuard {
    fn drop(&mut self) {
        CURRENT.with(|current| current.borrow_mut().take());
    }
}
