//! `record!` writes the text `format!` makes of the same arguments,
//! whichever way it writes each piece (plain placeholders piece by piece,
//! anything else through `format_args!`). `format!` is the oracle: the
//! standard library's formatting, which the macro's fast path skips.

use std::fmt;

use livesim::Seed;
use livesim::executor::Simulation;
use proptest::prelude::*;

/// The text of the one entry `body` records in a simulated run.
fn recorded(body: impl FnOnce() + 'static) -> String {
    let out = Simulation::new(Seed::new(1))
        .run(move || async move { body() })
        .unwrap();
    out.trace.last().unwrap().event.to_string()
}

/// A type with its own `Display`, which takes the formatting machinery.
struct Celsius(i32);

impl fmt::Display for Celsius {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}°C", self.0)
    }
}

#[test]
fn every_kind_of_value_reads_as_format_writes_it() {
    let (n, m, s) = (42_u8, -7_i128, String::from("rain"));
    let word: &str = "wind";
    let expected = format!("{n} {m} {s} {word} {}", Celsius(-3));
    assert_eq!(
        recorded(move || livesim::record!("{n} {m} {s} {word} {}", Celsius(-3))),
        expected
    );
    assert_eq!(
        recorded(|| livesim::record!("{1}{0}{1} {{braces}} {}", 'x', true)),
        format!("{1}{0}{1} {{braces}} {}", 'x', true)
    );
    assert_eq!(
        recorded(|| livesim::record!("{:?} {:>5} {x:.2}", "q", 7, x = 0.5)),
        format!("{:?} {:>5} {x:.2}", "q", 7, x = 0.5)
    );
    assert_eq!(recorded(|| livesim::record!("plain")), "plain");
    assert_eq!(
        recorded(|| livesim::record!("{} {}", usize::MAX, i64::MIN,)),
        format!("{} {}", usize::MAX, i64::MIN)
    );
}

#[test]
fn arguments_are_evaluated_once_each_and_in_order() {
    let calls = std::rc::Rc::new(std::cell::RefCell::new(Vec::new()));
    let log = calls.clone();
    let text = recorded(move || {
        let next = |k: u32| {
            log.borrow_mut().push(k);
            k
        };
        livesim::record!("{1} {0} {1}", next(1), next(2));
    });
    assert_eq!(text, "2 1 2");
    assert_eq!(*calls.borrow(), [1, 2]);
}

proptest! {
    /// For any integers and text, a plain format string records exactly
    /// what `format!` makes of it.
    #[test]
    fn plain_placeholders_record_what_format_makes(
        a in any::<i64>(),
        b in any::<u32>(),
        text in "\\PC{0,12}",
    ) {
        let expected = format!("turn {a} of {b}: {text} ({0})", a.wrapping_neg());
        let moved = text.clone();
        let got = recorded(move || {
            let text = moved;
            livesim::record!("turn {a} of {b}: {text} ({0})", a.wrapping_neg());
        });
        prop_assert_eq!(got, expected);
    }
}
