//! Network faults, drawn from the seed: what can go wrong between the
//! session's host and the server's, when, and for how long.
//!
//! A [`Faults`] says which kinds a run may draw and how many; the plan a
//! seed draws ([`FaultPlan`]) is a list of faults one after another, each
//! started and ended between two steps of the simulated network and
//! recorded in the trace. Every draw comes from its own stream
//! (`network/faults`, `network/latency`), so adding a kind never changes
//! the latency a seed draws.

use std::fmt;
use std::ops::RangeInclusive;
use std::time::Duration;

use crate::executor::Seed;
use crate::executor::Stream;

/// One kind of network fault.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum FaultKind {
    /// Messages both ways are held, then delivered as one burst.
    Hold,
    /// Messages both ways are dropped. TCP over turmoil does not
    /// retransmit: a connection that lost a segment is dead (only a
    /// keepalive notices), and new connections are refused until repair.
    Partition,
    /// Messages from the server to the session are dropped (a link that
    /// fails one way).
    LinkDown,
    /// The server host crashes (its connections die at once, seen as
    /// 1006) and restarts later with no memory: every resumption handle
    /// it issued is stale (`1008 session not found`).
    Restart,
    /// A partition that waits for the session to open a new connection
    /// and begins as the server accepts it: the upgrade or the setup is
    /// lost in flight, and the attempt fails (or times out).
    Handshake,
    /// Delivery held from the moment the session opens a new connection:
    /// the old connection's last frames and the new one's first arrive
    /// together, in a burst, in any order the latency draws.
    Move,
}

impl FaultKind {
    /// Every kind.
    pub const ALL: [FaultKind; 6] = [
        FaultKind::Hold,
        FaultKind::Partition,
        FaultKind::LinkDown,
        FaultKind::Restart,
        FaultKind::Handshake,
        FaultKind::Move,
    ];

    /// Whether the fault waits, once due, for the session's next
    /// connection before it begins.
    pub fn waits_for_a_connection(self) -> bool {
        matches!(self, FaultKind::Handshake | FaultKind::Move)
    }

    /// The kind's name, as the trace shows it.
    pub fn name(self) -> &'static str {
        match self {
            FaultKind::Hold => "hold",
            FaultKind::Partition => "partition",
            FaultKind::LinkDown => "link-down",
            FaultKind::Restart => "restart",
            FaultKind::Handshake => "handshake",
            FaultKind::Move => "move",
        }
    }
}

/// Which faults a run may draw, and how many.
///
/// ```
/// use std::time::Duration;
/// use livesim::network::{FaultKind, Faults};
///
/// let faults = Faults::drawn().only(&[FaultKind::Hold, FaultKind::Partition]).count(1..=2);
/// let plan = faults.plan(livesim::Seed::new(7));
/// assert!((1..=2).contains(&plan.faults().len()));
/// assert_eq!(plan, faults.plan(livesim::Seed::new(7))); // a function of the seed
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct Faults {
    kinds: Vec<FaultKind>,
    count: RangeInclusive<u32>,
    gap: RangeInclusive<Duration>,
    length: RangeInclusive<Duration>,
    latency: RangeInclusive<Duration>,
}

impl Faults {
    /// No fault, and a fixed 1 ms latency.
    pub fn none() -> Self {
        Faults {
            kinds: Vec::new(),
            count: 0..=0,
            gap: Duration::ZERO..=Duration::ZERO,
            length: Duration::ZERO..=Duration::ZERO,
            latency: Duration::from_millis(1)..=Duration::from_millis(1),
        }
    }

    /// Faults of the four timed kinds (hold, partition, link-down,
    /// restart), 0 to 3 a run, each 20–800 ms long, 0–1.5 s apart; link
    /// latency drawn per run (a floor of 1–5 ms, a ceiling up to 40 ms
    /// above it; each message draws its delay in between). The kinds that
    /// wait for a connection came later and are left out, so a seed's
    /// plan stays what it was; [`Faults::storm`] draws every kind.
    pub fn drawn() -> Self {
        Faults {
            kinds: FaultKind::ALL[..4].to_vec(),
            count: 0..=3,
            gap: Duration::ZERO..=Duration::from_millis(1500),
            length: Duration::from_millis(20)..=Duration::from_millis(800),
            latency: Duration::from_millis(1)..=Duration::from_millis(45),
        }
    }

    /// Every kind, [`Faults::drawn`]'s timing, and at least one fault a
    /// run: what a soaked seed that runs over the network draws.
    ///
    /// ```
    /// use livesim::network::Faults;
    ///
    /// let plan = Faults::storm().plan(livesim::Seed::new(3));
    /// assert!((1..=3).contains(&plan.faults().len()));
    /// ```
    pub fn storm() -> Self {
        Faults {
            kinds: FaultKind::ALL.to_vec(),
            count: 1..=3,
            ..Faults::drawn()
        }
    }

    /// Only these kinds.
    pub fn only(mut self, kinds: &[FaultKind]) -> Self {
        self.kinds = kinds.to_vec();
        self
    }

    /// How many faults a run draws.
    pub fn count(mut self, count: RangeInclusive<u32>) -> Self {
        self.count = count;
        self
    }

    /// How long each fault lasts.
    pub fn lasting(mut self, length: RangeInclusive<Duration>) -> Self {
        self.length = length;
        self
    }

    /// The time between one fault's end and the next one's start (the
    /// first counts from when the first session is set up).
    pub fn apart(mut self, gap: RangeInclusive<Duration>) -> Self {
        self.gap = gap;
        self
    }

    /// The range link latency is drawn from.
    pub fn latency(mut self, latency: RangeInclusive<Duration>) -> Self {
        self.latency = latency;
        self
    }

    /// The plan seed `seed` draws.
    pub fn plan(&self, seed: Seed) -> FaultPlan {
        let mut latency = Stream::new(seed, "network/latency");
        let (lo, hi) = (*self.latency.start(), *self.latency.end());
        let floor = latency.millis(lo..=lo.max(hi.min(lo + Duration::from_millis(4))));
        let ceiling = latency.millis(floor..=hi.max(floor));
        let mut s = Stream::new(seed, "network/faults");
        let mut faults = Vec::new();
        let mut at = Duration::ZERO;
        if !self.kinds.is_empty() {
            let count = s.range(u64::from(*self.count.start())..=u64::from(*self.count.end()));
            for _ in 0..count {
                let kind = *s.pick(&self.kinds).unwrap_or(&FaultKind::Hold);
                at += s.millis(self.gap.clone());
                let lasts = s.millis(self.length.clone());
                faults.push(Fault { kind, at, lasts });
                at += lasts;
            }
        }
        FaultPlan {
            latency: floor..=ceiling,
            faults,
        }
    }
}

impl Default for Faults {
    fn default() -> Self {
        Self::drawn()
    }
}

/// One fault of a plan.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Fault {
    /// What goes wrong.
    pub kind: FaultKind,
    /// When, counted from the first session's setup.
    pub at: Duration,
    /// For how long.
    pub lasts: Duration,
}

impl fmt::Display for Fault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} at +{}ms for {}ms",
            self.kind.name(),
            self.at.as_millis(),
            self.lasts.as_millis()
        )
    }
}

/// The faults and latency one seed draws.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FaultPlan {
    latency: RangeInclusive<Duration>,
    faults: Vec<Fault>,
}

impl FaultPlan {
    /// The faults, in time order, none overlapping.
    pub fn faults(&self) -> &[Fault] {
        &self.faults
    }

    /// The range each message's delay is drawn from.
    pub fn latency(&self) -> RangeInclusive<Duration> {
        self.latency.clone()
    }
}

impl fmt::Display for FaultPlan {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "latency {}..={}ms",
            self.latency.start().as_millis(),
            self.latency.end().as_millis()
        )?;
        for fault in &self.faults {
            write!(f, "; {fault}")?;
        }
        Ok(())
    }
}
