#!/usr/bin/env bash
# bench.sh [ROUNDS]: our client mirror through the Kotlin binding versus the official ACP Kotlin
# SDK's models (com.agentclientprotocol:acp-model 0.10.5, Maven Central) on the same
# 100,000-line stream (src/test/kotlin/dev/acpinject/bench/BenchVsOfficial.kt).
#
# Builds the release cdylib (`cargo build --release -p acp-inject-ffi`, in the target directory
# `cargo metadata` reports), runs the bench through Maven with that library, prints the human
# figures and then, as the LAST line, one JSON object
# `{"summary": "...", "rows": [{"what": "...", "lines_per_s": N}, ...], ...}`
# (what `cargo xtask bench` reads into BENCHMARKS.md). Build chatter goes to stderr.
set -euo pipefail

rounds=${1:-7}
case "$rounds" in '' | *[!0-9]* | 0) echo "bench.sh: ROUNDS must be a positive integer" >&2; exit 2 ;; esac

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)
repo=$(cd "$here/../.." && pwd -P)

(cd "$repo" && cargo build --quiet --release -p acp-inject-ffi) >&2
target=$(cd "$repo" && cargo metadata --format-version 1 --no-deps |
    grep -o '"target_directory":"[^"]*"' | head -n1 | cut -d'"' -f4)
[ -n "$target" ] || { echo "bench.sh: cargo metadata gave no target_directory" >&2; exit 1; }
lib="$target/release"
[ -e "$lib/libacp_inject_ffi.so" ] || { echo "bench.sh: no libacp_inject_ffi.so in $lib" >&2; exit 1; }

result=$(mktemp)
trap 'rm -f "$result"' EXIT
# The bench prints its human lines and the JSON; the JSON is also written to $result and
# printed again below, so it is the last line whatever Maven prints after the program.
set +e
(cd "$here" && mvn -B -ntp -q test-compile exec:exec@bench-official \
    -Dacp.skipCargo=true "-Dacp.lib.dir=$lib" "-Dacp.bench.rounds=$rounds" "-Dacp.bench.json=$result") |
    sed -e 's/\x1b\[[0-9;]*m//g' | grep -v -e '^{"summary"' -e '^[[:space:]]*$'
status=${PIPESTATUS[0]}
set -e
[ "$status" = 0 ] || { echo "bench.sh: the Maven bench failed (exit $status; its output is above)" >&2; exit 1; }
[ -s "$result" ] || { echo "bench.sh: the bench wrote no result" >&2; exit 1; }
tail -n 1 "$result"
