#!/usr/bin/env bash
# Google's own SDKs against `livesim serve`: the weather agent of
# examples/serve on google-genai (Python, over wss:// with the printed
# certificate) and on @google/genai (JavaScript, over plain ws://), each
# against its own `livesim serve examples/serve/weather-first.json`. Both
# must print "It is sunny in Paris." and the server must exit 0 (the script
# played to its end). Installs the SDKs into a scratch folder (PyPI and the
# npm registry must be reachable); run from the repository:
#
#     examples/serve/check_sdks.sh
#
# SDK versions can be pinned: GOOGLE_GENAI_PY=3.6.1 GOOGLE_GENAI_JS=2.32.0.
set -euo pipefail

repo=$(cd "$(dirname "$0")/../.." && pwd)
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT

cargo build --quiet --release --manifest-path "$repo/Cargo.toml"
livesim="$repo/target/release/livesim"

echo "check_sdks: installing google-genai and @google/genai into $scratch"
python3 -m venv "$scratch/venv"
"$scratch/venv/bin/pip" install --quiet "google-genai${GOOGLE_GENAI_PY:+==$GOOGLE_GENAI_PY}"
(cd "$scratch" && npm install --silent --no-audit --no-fund \
    "@google/genai${GOOGLE_GENAI_JS:+@$GOOGLE_GENAI_JS}" > /dev/null)
cp "$repo/examples/serve/client.mjs" "$scratch/client.mjs"

# Serves the script once on a free port, in the background; its exit
# status goes to $name.rc when it ends.
serve() {
    local name=$1
    shift
    ("$livesim" serve "$repo/examples/serve/weather-first.json" "$@" \
        > "$scratch/$name.out" 2> "$scratch/$name.err"
     echo $? > "$scratch/$name.rc") &
}

# The port the server `name` listens on, once it does.
port_of() {
    local name=$1 port
    for _ in $(seq 100); do
        port=$(sed -n 's/^livesim serve: listening on wss*:\/\/127.0.0.1:\([0-9]*\)\/.*/\1/p' "$scratch/$name.out")
        if [ -n "$port" ]; then
            echo "$port"
            return
        fi
        sleep 0.1
    done
    echo "check_sdks: livesim serve did not start" >&2
    cat "$scratch/$name.err" >&2
    exit 1
}

# Checks what client `name` printed and how its server ended.
check() {
    local name=$1 answer=$2
    if ! grep -qx "It is sunny in Paris." <<< "$answer"; then
        echo "check_sdks: $name printed: $answer" >&2
        cat "$scratch/$name.err" >&2
        exit 1
    fi
    for _ in $(seq 100); do
        [ -s "$scratch/$name.rc" ] && break
        sleep 0.1
    done
    local code
    code=$(cat "$scratch/$name.rc" 2> /dev/null || echo "none (still running)")
    if [ "$code" != 0 ]; then
        echo "check_sdks: livesim serve exited $code after $name" >&2
        cat "$scratch/$name.err" >&2
        exit 1
    fi
    echo "check_sdks: $name: It is sunny in Paris. (the script played to its end)"
}

serve python --tls --cert-out "$scratch/cert.pem"
port=$(port_of python)
answer=$(SSL_CERT_FILE="$scratch/cert.pem" timeout 60 \
    "$scratch/venv/bin/python" "$repo/examples/serve/client.py" "https://127.0.0.1:$port")
check python "$answer"

serve javascript
port=$(port_of javascript)
answer=$(cd "$scratch" && timeout 60 node client.mjs "http://127.0.0.1:$port")
check javascript "$answer"
