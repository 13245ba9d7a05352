//! A case: everything one run of an agent is a function of.
//!
//! A seed alone names a case (its swarm, its faults, its generated
//! script, every decision as its streams draw it). A shrunk failure is a
//! case too, with a shorter script, calmer swarm and faults, and perhaps
//! only a few of its decisions left perturbing the run; the seeds corpus
//! keeps such cases.

use std::fmt;

use crate::executor::{Decision, Schedule, Seed, Swarm};
use crate::soak::check::report::Failure;
use crate::soak::generate::faults::Faults;
use crate::testing::ScriptedServer;

/// One run's inputs: the seed and everything drawn from it, each of which
/// a shrinker may replace by something simpler.
#[derive(Clone, Debug, PartialEq)]
pub struct Case {
    /// The seed: the streams every draw comes from.
    pub seed: Seed,
    /// The executor's perturbations.
    pub swarm: Swarm,
    /// The conversation's faults (simulated tools read them).
    pub faults: Faults,
    /// What the scripted server says.
    pub script: ScriptedServer,
    /// Only these decisions may perturb the run, every other one is calm
    /// (see [`Schedule`]); `None`: every decision as drawn.
    pub decisions: Option<Vec<Decision>>,
}

impl Case {
    /// `script` played calm: no swarm, no fault, no decision perturbing the
    /// run. How an imported recording, or a script a test wrote, is
    /// replayed as it was recorded or written.
    ///
    /// ```
    /// use livesim::Seed;
    /// use livesim::soak::Case;
    /// use livesim::testing::ScriptedServer;
    ///
    /// let case = Case::calm(Seed::new(1), ScriptedServer::new().says("Hi."));
    /// assert_eq!(case.decisions, Some(Vec::new()));
    /// assert!(case.faults.on().is_empty());
    /// ```
    pub fn calm(seed: Seed, script: ScriptedServer) -> Case {
        Case {
            seed,
            swarm: Swarm::calm(),
            faults: Faults::calm(),
            script,
            decisions: Some(Vec::new()),
        }
    }

    /// The schedule this case runs under, if it restricts decisions.
    pub fn schedule(&self) -> Option<Schedule> {
        self.decisions
            .as_ref()
            .map(|only| Schedule::only(only.iter().cloned()))
    }

    /// How many actions its script has.
    pub fn actions(&self) -> usize {
        self.script.actions().len()
    }
}

/// `n actions`, in the singular for one: how every report counts a
/// script.
pub(crate) fn actions_said(n: usize) -> String {
    if n == 1 {
        "1 action".to_string()
    } else {
        format!("{n} actions")
    }
}

impl fmt::Display for Case {
    /// `seed 0x1f, 3 actions | swarm: … | faults: … | decisions: lane#2`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "seed {}, {} | swarm: {} | faults: {}",
            self.seed,
            actions_said(self.actions()),
            self.swarm,
            self.faults
        )?;
        match &self.decisions {
            None => Ok(()),
            Some(only) if only.is_empty() => write!(f, " | decisions: all calm"),
            Some(only) => {
                let names: Vec<String> = only.iter().map(ToString::to_string).collect();
                write!(f, " | decisions: only {}", names.join(" "))
            }
        }
    }
}

impl From<&Failure> for Case {
    /// The case a soak's failure ran: its seed, swarm, faults and script,
    /// every decision as drawn.
    fn from(failure: &Failure) -> Case {
        Case {
            seed: failure.seed,
            swarm: failure.swarm.clone(),
            faults: failure.faults.clone(),
            script: failure.script.clone(),
            decisions: None,
        }
    }
}
