#!/usr/bin/env bash
# A user's crate, soaking its own agent in a debug-profile test: sessions
# per second before and after the README's profile advice, against the
# same test in release, all in one run (benches/README.md, "A user's
# debug-profile soak").
#
#   benches/user_crate/measure.sh            # three builds, a few minutes each
#
# The crate is made in a temporary folder: the racing cart of
# examples/soak_your_agent.rs (fixed), soaked over 1,000 seeds on one job
# with no determinism re-runs, livesim as a path dependency of this
# checkout.
set -euo pipefail
repo="$(cd "$(dirname "$0")/../.." && pwd)"
crate="$(mktemp -d)/cart"
mkdir -p "$crate/src" "$crate/tests"
# The example's agent, without its main.
sed -n '/^fn main() -> ExitCode {/q;p' "$repo/examples/soak_your_agent.rs" \
    | sed 's/^use std::process::ExitCode;//' > "$crate/src/lib.rs"
cat > "$crate/tests/speed.rs" <<'RS'
#[test]
fn soak_speed() {
    let summary = cart::cart_soak(true)
        .keep(false)
        .seeds(1000)
        .jobs(1)
        .check_determinism_every(0)
        .run();
    let rate = summary.sessions() as f64 / summary.wall_time.as_secs_f64();
    eprintln!("sessions/s {rate:.0}");
}
RS
manifest() {
    cat > "$crate/Cargo.toml" <<TOML
[package]
name = "cart"
version = "0.1.0"
edition = "2024"

[dependencies]
livesim = { path = "$repo" }
tokio = { version = "1", features = ["time", "sync"] }
serde = { version = "1", features = ["derive"] }
serde_json = "1"
proptest = "1"
$1
TOML
}
measure() {
    (cd "$crate" && cargo test $2 --test speed -- --nocapture 2>&1) \
        | sed -n 's/^sessions\/s /'"$1"': /p'
}
manifest ""
measure "debug, no profile settings" ""
measure "release" "--release"
manifest '[profile.dev.package."*"]
opt-level = 3'
measure "debug, dependencies at opt-level 3 (the README's advice)" ""
manifest '[profile.dev.package."*"]
opt-level = 1'
measure "debug, dependencies at opt-level 1" ""
