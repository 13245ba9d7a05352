//! `session:remaining_budget_ms` counts the session's one budget down:
//! at every tick it is the budget less `session:elapsed_ms` (written just
//! before it in the same tick), and zero once the budget is spent. The
//! budget is not read from the session's settings: it is the sum of the
//! first tick's pair, and every later tick must give the same sum. Part
//! of the `telemetry` invariant.

use std::time::Duration;

use crate::soak::run::record::RunRecord;

/// Checks every tick's remaining budget against its elapsed time.
pub(crate) fn check(run: &RunRecord) -> Result<(), String> {
    let millis = |v: &serde_json::Value| v.as_u64().map(Duration::from_millis);
    let mut elapsed = None;
    let mut budget: Option<Duration> = None;
    for entry in &run.journal {
        match entry.key.as_str() {
            "session:elapsed_ms" => elapsed = millis(&entry.value),
            "session:remaining_budget_ms" => {
                let (Some(elapsed), Some(remaining)) = (elapsed.take(), millis(&entry.value))
                else {
                    continue;
                };
                if remaining.is_zero() {
                    // Spent: the elapsed time has reached the budget.
                    if let Some(budget) = budget.filter(|b| elapsed < *b) {
                        return Err(format!(
                            "session:remaining_budget_ms is 0 at elapsed {} ms (journal #{}), \
                             but the budget the first tick gave is {} ms",
                            elapsed.as_millis(),
                            entry.seq,
                            budget.as_millis()
                        ));
                    }
                    continue;
                }
                let sum = remaining + elapsed;
                match budget {
                    None => budget = Some(sum),
                    Some(budget) if budget != sum => {
                        return Err(format!(
                            "session:remaining_budget_ms is {} ms at elapsed {} ms (journal #{}): \
                             the budget the first tick gave ({} ms) less the elapsed time is {} \
                             ms; the session's budget counts from its start, whatever its \
                             connections",
                            remaining.as_millis(),
                            elapsed.as_millis(),
                            entry.seq,
                            budget.as_millis(),
                            budget.saturating_sub(elapsed).as_millis()
                        ));
                    }
                    Some(_) => {}
                }
            }
            _ => {}
        }
    }
    Ok(())
}
