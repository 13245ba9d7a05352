//! Slips in a Rust soak's settings are refused before anything runs, at
//! the test's own line, naming the slip and the nearest name that would
//! do: a tool the agent does not declare (a latency or a budget for it
//! would never apply), an invariant named as one of livesim's checks
//! (its failures would read as livesim's), a name no corpus folder can
//! have, a liveness bound no session could settle in.

use std::process::Command;
use std::time::Duration;

use livesim::soak::{Budget, Soak};

use super::rust_corpus::library;

/// What `soak`'s run panics with, before any seed runs.
fn refusal(soak: impl FnOnce() -> Soak + std::panic::UnwindSafe) -> String {
    let panic = std::panic::catch_unwind(|| {
        let _ = soak().keep(false).try_run();
    })
    .expect_err("the soak is refused");
    panic.downcast_ref::<String>().cloned().unwrap_or_default()
}

#[test]
fn a_tool_the_agent_does_not_declare_is_refused() {
    let message = refusal(|| {
        Soak::new("library", library)
            .tool_latency("lend_bok", Duration::ZERO..=Duration::from_millis(20))
    });
    assert_eq!(
        message,
        "livesim: soak `library`: .tool_latency(\"lend_bok\", …) names a tool the agent does \
         not declare; did you mean `lend_book`? (its tools: lend_book); name one of its tools, \
         or declare `lend_bok` in the agent's builder"
    );
    let message = refusal(|| {
        Soak::new("library", library).budget(Budget::tool_round_trip_of(
            "lend_bok",
            Duration::from_secs(1),
        ))
    });
    assert!(
        message.contains(
            "Budget::tool_round_trip_of(\"lend_bok\", …) names a tool the agent does not \
             declare; did you mean `lend_book`?"
        ),
        "{message}"
    );
    let message = refusal(|| Soak::new("library", library).allow_panic("return_book"));
    assert!(
        message.contains(".allow_panic(\"return_book\") names a tool"),
        "{message}"
    );
    // So do a property test's runs and one seed's.
    for run in [
        (|soak: Soak| {
            soak.run_steps(livesim::Seed::new(1), &[]);
        }) as fn(Soak),
        |soak: Soak| {
            soak.run_seed(livesim::Seed::new(1));
        },
    ] {
        let panic = std::panic::catch_unwind(|| {
            run(Soak::new("library", library)
                .tool_latency("lend_bok", Duration::ZERO..=Duration::ZERO))
        })
        .expect_err("refused");
        let message = panic.downcast_ref::<String>().cloned().unwrap_or_default();
        assert!(message.contains("did you mean `lend_book`?"), "{message}");
    }
    // The replay of a corpus refuses it too.
    let panic = std::panic::catch_unwind(|| {
        Soak::new("library", library)
            .tool_latency("lend_bok", Duration::ZERO..=Duration::ZERO)
            .try_replay_corpus("no-such-corpus")
    })
    .expect_err("refused");
    let message = panic.downcast_ref::<String>().cloned().unwrap_or_default();
    assert!(message.contains("did you mean `lend_book`?"), "{message}");
}

#[test]
fn an_invariant_named_as_livesim_s_own_is_refused() {
    let message =
        refusal(|| Soak::new("library", library).invariant("protocol", |_| Err("mine".into())));
    assert!(
        message.starts_with(
            "livesim: soak `library`: an invariant of its own is named `protocol`, as one of \
             livesim's checks is, so its failures would read as that check's; give it a name of \
             its own (livesim's: "
        ),
        "{message}"
    );
    let message = refusal(|| Soak::new("library", library).invariant("panic", |_| Ok(())));
    assert!(message.contains("named `panic`"), "{message}");
}

/// A liveness bound shorter than the settle window would fail runs for
/// want of time (over 200 seeds of the library: 0 s failed every run,
/// 50 ms more than half), so it is refused; the window itself runs.
#[test]
fn a_liveness_bound_shorter_than_the_settle_window_is_refused() {
    for bound in [Duration::ZERO, Duration::from_millis(199)] {
        let message = refusal(move || Soak::new("library", library).liveness_bound(bound));
        assert!(
            message.starts_with(&format!(
                "livesim: soak `library`: .liveness_bound({bound:?}) is shorter than the 200ms \
                 of quiet a session needs to count as settled"
            )),
            "{message}"
        );
    }
    Soak::new("library", library)
        .liveness_bound(livesim::soak::SETTLE_WINDOW)
        .seed_range(0..50)
        .keep(false)
        .try_run()
        .expect("a bound of the settle window leaves the time to settle");
}

/// Run by [`a_refusal_points_at_the_test_s_line`] in a child process:
/// a soak whose name no corpus folder can have.
#[test]
#[ignore = "run by a_refusal_points_at_the_test_s_line, in a child process"]
fn child_with_a_bad_name() {
    Soak::new("my agent", library).seeds(3).run();
}

/// The panic is reported at the test's line, not inside livesim.
#[test]
fn a_refusal_points_at_the_test_s_line() {
    let out = Command::new(std::env::current_exe().unwrap())
        .args(["mistakes::child_with_a_bad_name", "--exact", "--ignored"])
        .env_remove("LIVESIM_REGRESSIONS")
        .output()
        .unwrap();
    let text =
        String::from_utf8_lossy(&out.stderr).into_owned() + &String::from_utf8_lossy(&out.stdout);
    assert!(!out.status.success(), "{text}");
    let line = include_str!("mistakes.rs")
        .lines()
        .position(|l| l.contains("Soak::new(\"my agent\", library).seeds(3).run();"))
        .unwrap()
        + 1;
    assert!(
        text.contains(&format!("panicked at tests/soak/mistakes.rs:{line}:")),
        "{text}"
    );
    assert!(text.contains("rename the soak"), "{text}");
}
