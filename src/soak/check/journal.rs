//! `journal-replays-clean`, `journal-ordered` and `journal-rebuilds-state`:
//! the state journal read back as a scenario, its order, and whether it
//! tells the state's whole story.

use std::collections::BTreeMap;

use serde_json::Value;

use crate::simulation::Scenario;
use crate::soak::check::wire_order;
use crate::soak::run::record::RunRecord;
use crate::state::Brief;

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

/// `journal-rebuilds-state`: the store as it was when the journal began,
/// with every entry applied in order (a removal removes, any other entry
/// sets its value, `null` included), is the store the run ended with.
pub(crate) fn journal_rebuilds_state(run: &RunRecord) -> Result<(), String> {
    let mut rebuilt: BTreeMap<&str, (&Value, Option<u64>)> = run
        .state_before
        .iter()
        .map(|(key, value)| (key.as_str(), (value, None)))
        .collect();
    for entry in &run.journal {
        if entry.removed {
            rebuilt.remove(entry.key.as_str());
        } else {
            rebuilt.insert(&entry.key, (&entry.value, Some(entry.seq)));
        }
    }
    let said = |seq: Option<u64>| match seq {
        Some(seq) => format!("entry {seq}"),
        None => "the state before the journal began".to_string(),
    };
    for (key, held) in &run.state_after {
        match rebuilt.remove(key.as_str()) {
            Some((value, _)) if value == held => {}
            Some((value, seq)) => {
                return Err(format!(
                    "the state holds {key} = {}, but the journal's last word on it ({}) is {}: \
                     a write the journal does not tell",
                    Brief(held),
                    said(seq),
                    Brief(value)
                ));
            }
            None => {
                return Err(format!(
                    "the state holds {key} = {}, but the journal never wrote it, or removed it \
                     last: a write the journal does not tell",
                    Brief(held)
                ));
            }
        }
    }
    if let Some((key, (value, seq))) = rebuilt.into_iter().next() {
        return Err(format!(
            "the journal leaves {key} = {} ({}), but the state no longer holds it: a removal \
             the journal does not tell",
            Brief(value),
            said(seq)
        ));
    }
    Ok(())
}
