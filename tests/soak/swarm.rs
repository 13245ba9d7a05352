//! Each seed's swarm of conversation faults.

use std::collections::BTreeSet;

use livesim::Seed;
use livesim::soak::{CloseKind, FaultKind, Faults, Weather};

/// Over 400 seeds some are calm (no fault), some are storms (every kind
/// on) and most are mixed; every kind is on in some seeds and off in
/// others, at more than one rate; every close class is drawn.
#[test]
fn swarms_vary_from_calm_to_storm() {
    let swarms: Vec<Faults> = (0..400).map(|s| Faults::draw(Seed::new(s))).collect();
    let count = |w: Weather| swarms.iter().filter(|f| f.weather == w).count();
    assert!(count(Weather::Calm) >= 30, "calm: {}", count(Weather::Calm));
    assert!(
        count(Weather::Storm) >= 30,
        "storm: {}",
        count(Weather::Storm)
    );
    assert!(
        count(Weather::Mixed) >= 200,
        "mixed: {}",
        count(Weather::Mixed)
    );
    for calm in swarms.iter().filter(|f| f.weather == Weather::Calm) {
        assert_eq!(calm.on(), [], "{calm}");
        assert_eq!(calm.to_string(), "calm");
    }
    // Kinds that need a resuming session are never drawn for the others.
    let kinds: Vec<FaultKind> = FaultKind::ALL
        .into_iter()
        .filter(|k| !k.needs_resumption())
        .collect();
    for storm in swarms.iter().filter(|f| f.weather == Weather::Storm) {
        assert_eq!(storm.on().len(), kinds.len(), "{storm}");
    }
    for kind in kinds {
        let rates: BTreeSet<u64> = swarms
            .iter()
            .filter(|f| f.weather == Weather::Mixed)
            .map(|f| (f.rate(kind) * 100.0) as u64)
            .collect();
        assert!(rates.contains(&0), "{kind} is never off in a mixed seed");
        assert!(rates.len() >= 2, "{kind} has one rate: {rates:?}");
    }
    let closes: BTreeSet<String> = swarms
        .iter()
        .filter_map(|f| f.close().map(|c| c.to_string()))
        .collect();
    assert_eq!(closes.len(), CloseKind::ALL.len(), "{closes:?}");
}

/// A seed's swarm is a function of the seed, printed on one line that
/// names every kind that is on.
#[test]
fn a_swarm_is_a_function_of_its_seed_and_prints_on_one_line() {
    for s in 0..100 {
        let faults = Faults::draw(Seed::new(s));
        assert_eq!(faults, Faults::draw(Seed::new(s)));
        let line = faults.to_string();
        assert!(!line.contains('\n'));
        for (kind, _) in faults.on() {
            assert!(line.contains(kind.name()), "{line} lacks {kind}");
        }
    }
}

/// An agent's tuning turns kinds on in every seed but the calm ones.
#[test]
fn tuning_applies_to_every_seed_but_calm_ones() {
    for s in 0..200 {
        let drawn = Faults::draw(Seed::new(s));
        let tuned = drawn
            .clone()
            .tuned(&[(FaultKind::ParallelCalls, 0.5), (FaultKind::Close, 0.0)]);
        if drawn.weather == Weather::Calm {
            assert_eq!(tuned, drawn);
        } else {
            assert_eq!(tuned.rate(FaultKind::ParallelCalls), 0.5);
            assert_eq!(tuned.close(), None);
        }
    }
}

/// A resuming session's swarm is another session's swarm for the same
/// seed, kind for kind, plus the kinds only resumption has (on in storms
/// and in some mixed seeds, never in calm ones); other sessions never draw
/// those.
#[test]
fn a_resuming_swarm_adds_its_kinds_and_keeps_every_other_draw() {
    let mut mixed_on = 0;
    for s in 0..400 {
        let seed = Seed::new(s);
        let (one, resuming) = (Faults::draw(seed), Faults::draw_resuming(seed));
        assert!(!one.is_on(FaultKind::Reconnect), "seed {s}: {one}");
        assert_eq!(resuming.weather, one.weather);
        assert_eq!(resuming.close(), one.close());
        for kind in FaultKind::ALL.into_iter().filter(|k| !k.needs_resumption()) {
            assert_eq!(resuming.rate(kind), one.rate(kind), "seed {s}: {kind}");
        }
        let on = resuming.is_on(FaultKind::Reconnect);
        match resuming.weather {
            Weather::Calm => assert!(!on, "seed {s}: {resuming}"),
            Weather::Storm => assert!(on, "seed {s}: {resuming}"),
            Weather::Mixed => mixed_on += usize::from(on),
        }
        if on {
            assert!(resuming.to_string().contains("reconnect="), "{resuming}");
        }
    }
    assert!(
        mixed_on > 50,
        "reconnect is on in {mixed_on} mixed seeds of 400"
    );
}
