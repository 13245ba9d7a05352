//! Resuming sessions soaked over the simulated network: about one seed in
//! ten of an agent that resumes runs on two turmoil hosts with network
//! faults on top of the conversation's, under the same invariants, and
//! replays bit for bit from its seed.

use livesim::Seed;
use livesim::session::LiveEvent;
use livesim::soak::{FaultKind, Faults, RunRecord, Soak, Weather};

use super::{agent, seeds};

/// Only sessions that resume draw `network`, about 12 % of the seeds that
/// are not calm, and drawing it leaves every other kind's draw as it was.
#[test]
fn about_one_resuming_seed_in_ten_runs_over_the_network() {
    let seeds = 0..2000u64;
    let mut over = 0;
    for s in seeds.clone() {
        let (one, resuming) = (
            Faults::draw(Seed::new(s)),
            Faults::draw_resuming(Seed::new(s)),
        );
        assert!(!one.is_on(FaultKind::Network), "seed {s}: {one}");
        for (kind, rate) in one.on() {
            assert_eq!(resuming.rate(kind), rate, "seed {s}: {kind}");
        }
        if resuming.is_on(FaultKind::Network) {
            assert_ne!(
                resuming.weather,
                Weather::Calm,
                "seed {s}: a calm seed stays calm"
            );
            over += 1;
        }
    }
    let share = over as f64 / seeds.end as f64;
    assert!(
        (0.07..0.14).contains(&share),
        "{over} of {} seeds",
        seeds.end
    );
}

/// The first seeds of the resumable agent that run over the network.
fn network_seeds(n: usize) -> Vec<Seed> {
    (0..2000)
        .map(Seed::new)
        .filter(|&s| Faults::draw_resuming(s).is_on(FaultKind::Network))
        .take(n)
        .collect()
}

fn died(record: &RunRecord) -> usize {
    record.network.as_ref().map_or(0, |n| n.died.len())
}

/// A network seed runs over turmoil (its trace starts with the network's
/// fault plan, its record says what crossed the network), passes every
/// invariant, and two runs of it leave the same trace.
#[test]
fn a_network_seed_runs_over_turmoil_and_replays_bit_for_bit() {
    let soak = Soak::agent(&agent("resumable")).check_determinism_every(1);
    for seed in network_seeds(6) {
        let run = soak.run_seed(seed);
        assert!(run.failures.is_empty(), "seed {seed}: {:?}", run.failures);
        let determinism = run.verdicts.iter().find(|(name, _)| name == "determinism");
        assert_eq!(
            determinism.map(|(_, v)| v.clone()),
            Some(Ok(())),
            "seed {seed}"
        );
        let record = run.record.expect("a record");
        assert!(record.network.is_some(), "seed {seed} ran in memory");
        assert!(
            record
                .trace
                .entries()
                .any(|e| e.to_string().contains("network")
                    && e.to_string().contains("plan: latency")),
            "seed {seed}: no network plan in the trace"
        );
    }
}

/// Over many network seeds the network does what it is there for: it
/// kills connections under sessions, which resume (or start fresh) and
/// still satisfy every invariant. Seeds scale with `LIVESIM_SEEDS`.
#[test]
fn sessions_resume_after_the_network_kills_their_connections() {
    let soak = Soak::agent(&agent("resumable")).check_determinism_every(0);
    let range = seeds(400);
    let (mut runs, mut killed, mut resumed_after) = (0, 0, 0);
    for seed in range.map(Seed::new) {
        if !Faults::draw_resuming(seed).is_on(FaultKind::Network) {
            continue;
        }
        let run = soak.run_seed(seed);
        assert!(run.failures.is_empty(), "seed {seed}: {:?}", run.failures);
        let Some(record) = run.record else { continue };
        runs += 1;
        if died(&record) > 0 {
            killed += 1;
            if record
                .delivered()
                .any(|e| matches!(e, LiveEvent::Resumed { .. }))
            {
                resumed_after += 1;
            }
        }
    }
    assert!(runs >= 20, "only {runs} network runs");
    assert!(
        killed * 3 >= runs,
        "{killed} of {runs} runs lost a connection"
    );
    assert!(
        resumed_after * 2 >= killed,
        "{resumed_after} of {killed} resumed"
    );
}

/// An agent's tuning turns the network on for every seed that is not
/// calm (or off for all).
#[test]
fn tuning_turns_the_network_on_or_off() {
    let resumable = agent("resumable");
    let on = Soak::agent(&resumable).faults(&[(FaultKind::Network, 1.0)]);
    let off = Soak::agent(&resumable).faults(&[(FaultKind::Network, 0.0)]);
    for seed in (0..40).map(Seed::new) {
        let calm = Faults::draw_resuming(seed).weather == Weather::Calm;
        assert_eq!(
            on.case(seed).faults.is_on(FaultKind::Network),
            !calm,
            "seed {seed}"
        );
        assert!(
            !off.case(seed).faults.is_on(FaultKind::Network),
            "seed {seed}"
        );
    }
}

/// A connection the network kills may take with it the end of what the
/// session replays on it (written, never delivered): the next connection
/// owes the rest, and `client-messages-once` lets it. Among `sim/support`'s
/// seeds over the network there is a run where a connection got only part
/// of its replay; it passes, and the same record read as if in memory
/// (where nothing written is lost) fails, naming the message.
#[test]
fn a_replay_cut_short_by_the_network_is_owed_by_the_next_connection() {
    let soak = Soak::agent(&agent("support")).fault(FaultKind::Network, 0.1);
    let cut_short = (0x4264..0x4264 + 400).find_map(|s| {
        let run = soak.run_seed(Seed::new(s));
        let record = run.record.as_ref()?;
        record.network.as_ref()?;
        assert_eq!(
            super::verdict("client-messages-once", record),
            Ok(()),
            "seed {s:#x}"
        );
        let mut in_memory = record.clone();
        in_memory.network = None;
        let err = super::verdict("client-messages-once", &in_memory).err()?;
        err.contains("never replayed").then_some((s, err))
    });
    let (seed, err) = cut_short.expect("a support seed whose replay the network cut short");
    assert!(
        err.starts_with("connection #") && err.contains("a client message lost across a reconnect"),
        "seed {seed:#x}: {err}"
    );
}

/// A `goAway`, and the session moves: the server sets the new connection
/// up, but a one-way outage drops its `setupComplete`, so the session gives
/// the new connection up and stays on the old one. The server must go back
/// to the old connection too, and still end it at the deadline its own
/// `goAway` named (the session then resumes), rather than wait forever
/// for a connection the session will only open once the old one ends.
/// `sim/pharmacy` seed `0x1cc035` (found by `sim soak --seeds
/// 1860000..1900000`: `liveness` and `reconnect-ends`, the simulated
/// server had forgotten the old connection's deadline) plays this, shrunk
/// to nine actions; its case is kept in `tests/fixtures/cases/`, and the
/// test first asserts it still plays that.
#[test]
fn a_move_that_never_completed_leaves_the_old_connection_its_deadline() {
    let entry = livesim::soak::CorpusEntry::load("tests/fixtures/cases/pharmacy-0x1cc035.json")
        .unwrap_or_else(|e| panic!("{e}"));
    let soak = Soak::agent(&agent("pharmacy")).check_determinism_every(0);
    let run = soak.run_case(&entry.case);
    assert!(run.failures.is_empty(), "{:?}", run.failures);
    let record = run.record.expect("a record");
    let at = |wanted: &dyn Fn(&LiveEvent) -> bool| {
        record
            .events
            .iter()
            .find(|e| wanted(&e.event))
            .map(|e| e.at)
    };
    let go_away = at(&|e| matches!(e, LiveEvent::GoAway { .. })).expect("a goAway");
    let failed = at(
        &|e| matches!(e, LiveEvent::Warning { message } if message.contains("moving to a new connection after goAway failed")),
    );
    assert!(failed.is_some(), "seed 0x1cc035 no longer loses the move");
    let ended = at(&|e| {
        matches!(e, LiveEvent::Reconnecting { cause, .. } if cause.contains("The goAway deadline has passed"))
    })
    .expect("the server ends the old connection at its deadline");
    // The goAway gave 20.928 s from when the server sent it; it and the
    // close each cross the network (2 to 40 ms here).
    let left = ended - go_away;
    assert!(
        (20.888..20.968).contains(&left.as_secs_f64()),
        "ended {left:?} after the goAway"
    );
    assert!(
        record
            .events
            .iter()
            .any(|e| e.at > ended && matches!(e.event, LiveEvent::Resumed { fresh: false, .. })),
        "the session resumes after"
    );
}
