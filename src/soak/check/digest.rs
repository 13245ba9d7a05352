//! The summary's digest: one hash of everything a soak's summary says
//! that does not depend on the machine (every count, every goal, every
//! failure's seed and invariant, the virtual time), so that two soaks of
//! the same seeds can be compared in one line, before and after a change.

use crate::executor::Fnv64;
use crate::soak::check::report::Summary;

impl Summary {
    /// A hash of what the summary says about the runs, as sixteen hex
    /// digits: per agent its sessions, variants explored, event orders
    /// and signatures, virtual time, reconnects, each invariant's held and
    /// broken counts, each goal's count and each failure's seed and
    /// invariant; and the seeds and the kept cases run. Wall time, jobs
    /// and throughput are left out: the same seeds give the same digest
    /// on any machine, with any number of jobs.
    ///
    /// ```
    /// use livesim::prelude::*;
    /// use livesim::soak::Soak;
    ///
    /// let soak = |jobs| {
    ///     Soak::new("echo", || {
    ///         Live::builder().tools(T::simple("echo", "Says it back", |args| async move { Ok(args) }))
    ///     })
    ///     .seeds(40)
    ///     .jobs(jobs)
    ///     .keep(false)
    ///     .run()
    /// };
    /// assert_eq!(soak(1).digest(), soak(2).digest());
    /// ```
    pub fn digest(&self) -> String {
        let mut h = Fnv64::new();
        let mut text = |s: &str| {
            h.write(s.as_bytes());
            h.write(&[0]);
        };
        text(&format!(
            "seeds {}..{} kept {}",
            self.seeds.start, self.seeds.end, self.kept_cases_run
        ));
        for agent in &self.agents {
            text(&format!(
                "{} sessions {} explored {} orders {} signatures {} virtual {} reconnects {} \
                 network {} {}",
                agent.name,
                agent.sessions,
                agent.explored,
                agent.orders,
                agent.signatures,
                agent.virtual_time.as_nanos(),
                agent.reconnects,
                agent.networked.0,
                agent.networked.1
            ));
            for (name, held, broke) in &agent.checks {
                text(&format!("check {name} {held} {broke}"));
            }
            for (goal, reached) in &agent.goals {
                text(&format!("goal {goal} {reached}"));
            }
            for d in agent.latencies.iter().filter(|d| d.count() > 0) {
                text(&format!(
                    "latency {} {} {:?} {:?} {:?} {:?} {:?}",
                    d.measure(),
                    d.count(),
                    d.p50(),
                    d.p90(),
                    d.p99(),
                    d.max(),
                    d.worst_seed()
                ));
            }
            for failure in &agent.failures {
                text(&format!("failure {} {}", failure.seed, failure.invariant));
            }
            text(&format!("not kept {}", agent.failures_not_kept));
        }
        format!("{:016x}", h.finish())
    }
}
