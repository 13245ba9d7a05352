//! Exploration: variants of the runs that found something new, each a
//! seed of its own that replays like any other.

use livesim::Seed;
use livesim::soak::{FaultKind, Soak, variant};

use super::agent;

/// A variant changes one or two of its parent's fault kinds, no more,
/// and a fresh seed is its own parent.
#[test]
fn a_variant_changes_one_or_two_of_its_parents_faults() {
    let resumable = agent("resumable");
    let soak = Soak::agent(&resumable);
    // The agent's tuning holds in every seed that is not calm: a variant
    // that turns a calm seed stormy turns those kinds on too.
    let tuned: Vec<FaultKind> = resumable.faults.iter().map(|(kind, _)| *kind).collect();
    let mut changed_any = false;
    for parent in 0..40 {
        let parent = Seed::new(parent);
        assert_eq!(variant::split(parent), (parent, 0));
        let (_, before) = soak.script_for(parent);
        for number in 1..=4 {
            let seed = variant::of(parent, number);
            assert_eq!(variant::split(seed), (parent, number));
            let (_, after) = soak.script_for(seed);
            let changed = FaultKind::ALL
                .into_iter()
                .filter(|kind| !tuned.contains(kind))
                .filter(|&kind| {
                    before.rate(kind) != after.rate(kind)
                        || (kind == FaultKind::Close && before.close() != after.close())
                })
                .count();
            assert!(
                changed <= 2,
                "{seed}: {changed} kinds changed\n{before}\n{after}"
            );
            changed_any |= changed > 0;
        }
    }
    assert!(changed_any, "no variant changed a fault");
}

/// A failure found in a variant names the variant's seed, and that seed
/// alone plays the same run again: same trace, same verdict.
#[test]
fn a_failure_in_a_variant_replays_from_its_seed() {
    let soak = || {
        Soak::agent(&agent("booking"))
            .invariant("no-variants", |run| {
                if variant::split(run.seed).1 > 0 {
                    Err(format!("{} is a variant", run.seed))
                } else {
                    Ok(())
                }
            })
            .seed_range(0..16)
            .jobs(2)
            .keep(false)
    };
    let summary = soak().try_run().expect_err("variants were explored");
    let failure = summary
        .failures()
        .find(|f| f.invariant == "no-variants")
        .expect("a variant failed");
    let (parent, number) = variant::split(failure.seed);
    assert!(number > 0 && parent.value() < 16, "{}", failure.seed);
    assert!(
        failure.replay.contains(&failure.seed.to_string()),
        "{}",
        failure.replay
    );
    let again = soak().run_seed(failure.seed);
    assert!(again.verdict_of("no-variants").is_err());
    assert_eq!(soak().trace(failure.seed), soak().trace(failure.seed));
    assert_eq!(
        again.record.as_ref().map(|r| r.events.len()),
        soak().run_seed(failure.seed).record.map(|r| r.events.len())
    );
    // A soak of that one seed runs it alone, without exploring.
    let alone = soak()
        .seed_range(failure.seed.value()..failure.seed.value() + 1)
        .try_run()
        .expect_err("the variant fails again");
    assert_eq!((alone.sessions(), alone.explored()), (1, 0));
}

/// With exploration off, a soak runs its fresh seeds and nothing else;
/// with it on, at most one variant per four fresh seeds.
#[test]
fn exploration_stays_within_its_share() {
    let soak = || Soak::agent(&agent("weather")).seed_range(0..64).jobs(2);
    let fresh = soak().explore(false).run();
    assert_eq!((fresh.sessions(), fresh.explored()), (64, 0));
    let exploring = soak().run();
    assert!(
        exploring.explored() > 0 && exploring.explored() <= 16,
        "{exploring}"
    );
    assert_eq!(exploring.sessions(), 64 + exploring.explored());
    // Coverage only grows with more runs of the same seeds.
    assert!(exploring.agents[0].orders >= fresh.agents[0].orders);
}
