#!/usr/bin/env bash
# Fuzz the parsers that read untrusted bytes: the config (`config::parse`), the
# `detect --input` CSV reader (`stats::read_series_csv`), the result store decoder
# (`store::decode_file`) and the build manifests `merge` takes from other caches
# (`build::carry::parse_foreign`). Each target runs for a bounded time; a crash stops the script
# with the input saved under scripts/fuzz/artifacts/TARGET/.
#
# Usage: scripts/fuzz.sh [SECONDS_PER_TARGET (default 60)] [TARGET...]   (targets: config csv store manifest)
#
# Needs cargo-fuzz (installed here with `cargo install cargo-fuzz` if missing, from crates.io)
# and a nightly toolchain for -Zsanitizer=address. If `rustup toolchain list` shows no nightly
# and rustup cannot download one (no network beyond package registries), the script falls
# back to the stable toolchain with RUSTC_BOOTSTRAP=1, which lets stable rustc accept the
# nightly flags cargo-fuzz passes (FUZZ_STABLE=1 forces that). Both were checked on this
# machine: nightly 1.97 (2026-05) and stable 1.95 + RUSTC_BOOTSTRAP=1 build and run all three
# targets with AddressSanitizer. The first build takes a few minutes (release, instrumented).
#
# Seeds: scripts/fuzz/seeds/TARGET (checked in); the growing corpus goes to
# scripts/fuzz/corpus/TARGET and crashes to scripts/fuzz/artifacts/TARGET (both git-ignored). Keep every crash as a file under
# tests/fuzz-regressions/TARGET/: tests/suite/fuzz_regressions.rs replays them on every `cargo test`.
set -euo pipefail
cd "$(dirname "$0")/.."
fuzz=scripts/fuzz

secs=${1:-60}
shift || true
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(config csv store manifest)

command -v cargo-fuzz >/dev/null || cargo install cargo-fuzz --locked

toolchain=()
if [ "${FUZZ_STABLE:-0}" != 1 ] && rustup toolchain list 2>/dev/null | grep -q '^nightly'; then
    toolchain=(+nightly)
elif [ "${FUZZ_STABLE:-0}" != 1 ] &&
    timeout 300 rustup toolchain install nightly --profile minimal >/dev/null 2>&1; then
    toolchain=(+nightly)
else
    echo "no nightly toolchain (or FUZZ_STABLE=1): using stable with RUSTC_BOOTSTRAP=1" >&2
    toolchain=()   # the default toolchain
    export RUSTC_BOOTSTRAP=1
fi

status=0
for t in "${targets[@]}"; do
    mkdir -p "$fuzz/corpus/$t"
    echo "== $t: ${secs}s"
    log=$(mktemp)
    set +e
    # -O: release build with debug assertions (overflow checks find bugs too).
    cargo "${toolchain[@]}" fuzz run --fuzz-dir "$fuzz" -O "$t" "$fuzz/corpus/$t" "$fuzz/seeds/$t" -- \
        -max_total_time="$secs" -rss_limit_mb=2048 -max_len=8192 -print_final_stats=1 >"$log" 2>&1
    rc=$?
    set -e
    grep -E '^(Done [0-9]+ runs|stat::number_of_executed_units|stat::peak_rss_mb)' "$log" || true
    if [ $rc -ne 0 ]; then
        tail -n 40 "$log" >&2
        echo "!! $t: exit $rc (a crash is saved under $fuzz/artifacts/$t/)" >&2
        status=1
    fi
    rm -f "$log"
done
exit $status
