#!/bin/sh
# Makes docs/timeline.png, docs/guide/soaking.md's picture of a failing seed: the
# planted bug (a refused call that runs anyway, built only with the
# `planted-bug` feature) caught by `payment` seed 0xf, drawn as a timeline.
# Needs Chromium (Debian: apt-get install chromium). Run from anywhere:
#   sh docs/timeline.sh
set -eu
cd "$(dirname "$0")/.."
out=target/timeline-demo
rm -rf "$out"
mkdir -p "$out"
cp -r sim/payment "$out/payment"
sed -i 's/^  "v": 1,$/  "v": 1, "planted_bug": true,/' "$out/payment/agent.json"
status=0
cargo run --release --features planted-bug -- \
    sim run "$out/payment" --seed 0xf --html "$out/payment-0xf.html" >/dev/null || status=$?
if [ "$status" -ne 1 ]; then
    echo "expected seed 0xf to fail (exit 1), got exit $status" >&2
    exit 1
fi
chromium --headless --no-sandbox --disable-gpu --hide-scrollbars \
    --window-size=1400,900 --screenshot="$PWD/docs/timeline.png" \
    "file://$PWD/$out/payment-0xf.html"
echo "docs/timeline.png from $out/payment-0xf.html"
