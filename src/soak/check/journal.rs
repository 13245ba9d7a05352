//! `journal-replays-clean` and `journal-ordered`: the state journal read
//! back as a scenario, and its order.

use crate::simulation::Scenario;
use crate::soak::check::wire_order;
use crate::soak::run::record::RunRecord;

/// `journal-replays-clean`.
pub(crate) fn journal_replays_clean(run: &RunRecord) -> Result<(), String> {
    let Some(governance) = &run.governance else {
        return Ok(());
    };
    // The journal holds every interruption the session was told of: one
    // `flow:interrupted` per frame the reference model reads as
    // interrupted (a replay of a journal without them would never
    // escalate on interruptions).
    let told: usize = wire_order::connections(run)
        .iter()
        .flat_map(|c| &c.frames)
        .filter(|f| f.interrupted)
        .count();
    let journaled = run
        .journal
        .iter()
        .filter(|e| e.key == crate::flow::keys::INTERRUPTED)
        .count();
    if journaled != told {
        return Err(format!(
            "the server interrupted the model {told} time(s), but the journal records {journaled} \
             `{}` entries",
            crate::flow::keys::INTERRUPTED
        ));
    }
    let name = format!("{}-{}", run.agent, run.seed);
    let scenario = Scenario::try_from_journal(&name, &run.journal).map_err(|e| e.to_string())?;
    scenario
        .run_now(&governance.spec, governance.enforcement)
        .map(|_| ())
        .map_err(|failure| {
            format!(
                "the journal's scenario does not replay against the spec that governed the run: \
                 {failure}"
            )
        })
}

/// `journal-ordered`.
pub(crate) fn journal_ordered(run: &RunRecord) -> Result<(), String> {
    for pair in run.journal.windows(2) {
        let (a, b) = (&pair[0], &pair[1]);
        if b.seq <= a.seq {
            return Err(format!(
                "journal entry {} ({}) follows entry {} ({}): sequence numbers must increase",
                b.seq, b.key, a.seq, a.key
            ));
        }
        if b.timestamp < a.timestamp {
            return Err(format!(
                "journal entry {} ({}) is stamped {}, before entry {} ({}) at {}",
                b.seq, b.key, b.timestamp, a.seq, a.key, a.timestamp
            ));
        }
    }
    Ok(())
}
