# shellcheck shell=bash
# Shared by the curl helpers (sourced, not run): the scale, where a test keeps its server's
# state, which curl to run.

# Counts and sizes of curl's perf page are multiplied by CURL_PERF_SCALE (default 0.02, so
# 100,000 requests become 2,000 and 500 MB files 10 MB; 1 is curl's own page).
curl_perf_scale() {
    local s="${CURL_PERF_SCALE:-0.02}"
    if ! awk -v s="$s" 'BEGIN { exit !(s + 0 > 0 && s ~ /^[0-9]*\.?[0-9]+([eE][-+]?[0-9]+)?$/) }'; then
        die "CURL_PERF_SCALE must be a positive number, not '$s'"
    fi
    echo "$s"
}

# scaled N: N times the scale, rounded, at least 1.
scaled() {
    awk -v n="$1" -v s="$(curl_perf_scale)" 'BEGIN { v = int(n * s + 0.5); if (v < 1) v = 1; printf "%d\n", v }'
}

# Where the servers' folders are when CURL_PERF_STATE is not set: one per user in TMPDIR, one
# subfolder per perfbisect process (PERFBISECT_RUN), so two perfbisects at once (two caches,
# two terminals, a CI job beside a person) never stop each other's servers.
state_root() {
    echo "${TMPDIR:-/tmp}/perfbisect-curl-$(id -u)"
}

# The folder of this test's server: CURL_PERF_STATE, else the perfbisect process's folder in
# state_root; one subfolder per perfbisect test, so tests never share a server.
state_dir() {
    local base="${CURL_PERF_STATE:-$(state_root)/${PERFBISECT_RUN:-default}}"
    echo "$base/${PERFBISECT_TEST:-default}"
}

# run_alive ID: whether the perfbisect process of a PERFBISECT_RUN id (PID-TIME) still runs.
run_alive() {
    local pid=${1%%-*}
    case $pid in
    '' | *[!0-9]*) return 1 ;;
    esac
    kill -0 "$pid" 2>/dev/null
}

# The curl tool under test: CURL, else perf/curl in the artifact directory.
curl_bin() {
    echo "${CURL:-./perf/curl}"
}

die() {
    echo "$(basename "$0"): $*" >&2
    exit 1
}

# Nanoseconds since the epoch (GNU date).
now_ns() {
    date +%s%N
}
