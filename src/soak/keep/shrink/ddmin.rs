//! Delta debugging (Zeller and Hildebrandt's ddmin, the complement half):
//! the smallest sublist of a failing list that still fails, as far as
//! removing chunks of it can tell.

/// Cuts `items` down while `fails` holds: removes chunks of halving size,
/// keeping each removal after which the rest still fails. The result fails
/// (or is `items` itself) and removing any one of its items makes it pass,
/// unless `fails` gave up (a time budget ran out, say).
///
/// `fails` sees candidate lists, never the empty list's absence: the empty
/// list is tried too.
pub(crate) fn ddmin<T: Clone>(items: Vec<T>, fails: &mut dyn FnMut(&[T]) -> bool) -> Vec<T> {
    let mut items = items;
    let mut parts = 2usize;
    while !items.is_empty() {
        let chunk = items.len().div_ceil(parts.min(items.len()));
        let mut reduced = false;
        let mut start = 0;
        while start < items.len() {
            let end = (start + chunk).min(items.len());
            let candidate: Vec<T> = items[..start]
                .iter()
                .chain(&items[end..])
                .cloned()
                .collect();
            if fails(&candidate) {
                items = candidate;
                reduced = true;
                // Carry on from here: what was before `start` stays.
            } else {
                start = end;
            }
        }
        if reduced {
            parts = parts.saturating_sub(1).max(2);
        } else if chunk <= 1 {
            break;
        } else {
            parts = (parts * 2).min(items.len());
        }
    }
    items
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_the_items_a_failure_needs() {
        let items: Vec<u32> = (0..100).collect();
        let mut tries = 0;
        let kept = ddmin(items, &mut |c| {
            tries += 1;
            c.contains(&17) && c.contains(&80)
        });
        assert_eq!(kept, [17, 80]);
        assert!(tries < 100, "{tries} tries");
    }

    #[test]
    fn an_empty_list_may_be_the_answer() {
        assert_eq!(ddmin(vec![1, 2, 3], &mut |_| true), Vec::<i32>::new());
    }

    #[test]
    fn a_list_that_fails_only_whole_stays_whole() {
        let items: Vec<u32> = (0..9).collect();
        assert_eq!(ddmin(items.clone(), &mut |c| c.len() == 9), items);
    }
}
