#!/usr/bin/env bash
# transfer.sh KIND [h1|h2]: one run of a curl transfer test against the httpd that httpd.sh
# started for this test (PERFBISECT_TEST), with the curl tool under test (CURL, default
# perf/curl in the artifact directory). Every transfer must answer 2xx, or the run fails.
#
#   requests h1|h2   curl's page: 100,000 x 10 KB over HTTPS, 40 in parallel.
#                    Prints "requests/s: N"
#   sequential h1    100,000 x 10 KB over clear-text HTTP/1.1, one after the other (no
#                    --parallel): curl's transfer loop without TLS.  Prints "requests/s: N"
#   parallel h1|h2   100 x 500 MB over HTTPS, 100 in parallel.  Prints "bytes/s: N"
#   upload h1|h2     100 x 500 MB PUT over HTTPS (to mod_dav), 50 in parallel.  "bytes/s: N"
#   single           one 100 GB download over clear-text HTTP/1.1; the speed curl reports
#                    (%{speed_download}).  Prints "bytes/s: N"
# Request counts and file sizes are curl's times CURL_PERF_SCALE (see common.sh); the files
# themselves were made by httpd.sh. Every kind also prints "max-rss: N bytes", the peak resident
# memory of the curl process alone, measured by GNU time (Debian package time) around curl:
# the memory tests read that line: curl alone, not this shell or awk, whichever way the perfbisect
# at hand measures a run's process tree.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=SCRIPTDIR/common.sh
. "$here/common.sh"

kind=${1:-}
proto=${2:-}
dir=$(state_dir)
curl=$(curl_bin)
[ -f "$dir/ports" ] || die "no server for test '${PERFBISECT_TEST:-default}' (run httpd.sh start as its setup)"
# shellcheck source=/dev/null
. "$dir/ports"
[ -x "$curl" ] || die "no curl tool at '$curl' (set CURL)"

case $proto in
h1) popt=--http1.1 ;;
h2) popt=--http2 ;;
"") [ "$kind" = single ] || die "say h1 or h2" ;;
*) die "unknown protocol '$proto' (h1 or h2)" ;;
esac

gnu_time=${GNU_TIME:-/usr/bin/time}
[ -x "$gnu_time" ] || die "GNU time not found at '$gnu_time' (Debian package time; or set GNU_TIME)"

cfg="$dir/transfers-$$.cfg"
out="$dir/transfers-$$.out"
rss="$dir/transfers-$$.rss"
trap 'rm -f "$cfg" "$out" "$rss"' EXIT

# Runs curl with its arguments under GNU time, which writes curl's peak RSS in KB to $rss.
timed_curl() {
    "$gnu_time" -f '%M' -o "$rss" "$curl" "$@"
}

print_rss() {
    awk 'END { if ($1 + 0 <= 0) exit 1; printf "max-rss: %d bytes\n", $1 * 1024 }' "$rss" ||
        die "GNU time reported no peak RSS"
}
base="https://localhost:$HTTPS_PORT"

# urls COUNT PATH: a curl config of COUNT downloads of PATH to /dev/null.
urls() {
    awk -v n="$1" -v u="$base$2" 'BEGIN { for (i = 1; i <= n; i++) printf "url = \"%s?%d\"\noutput = \"/dev/null\"\n", u, i }' >"$cfg"
}

# run_curl PARALLEL EXTRA...: runs curl on the config; leaves one "code bytes" line per
# transfer in $out and the elapsed nanoseconds in $elapsed.
run_curl() {
    local par=$1 t0 t1
    shift
    t0=$(now_ns)
    timed_curl -s -S --no-progress-meter --cacert "$dir/cert.pem" "$popt" --parallel --parallel-max "$par" "$@" -K "$cfg" >"$out"
    t1=$(now_ns)
    elapsed=$((t1 - t0))
}

# check COUNT: every transfer answered 2xx; prints the bytes moved.
check() {
    awk -v want="$1" '
        $1 ~ /^2/ { ok++; bytes += $2; next }
        { bad++; if (!first) first = $0 }
        END {
            if (bad || ok != want) {
                printf "%d of %d transfers failed (first: %s)\n", want - ok, want, first > "/dev/stderr"
                exit 1
            }
            printf "%.0f\n", bytes
        }' "$out"
}

case $kind in
requests)
    n=$(scaled 100000)
    urls "$n" /10k
    run_curl 40 -w '%{http_code} %{size_download}\n'
    check "$n" >/dev/null
    awk -v n="$n" -v ns="$elapsed" 'BEGIN { printf "requests/s: %.1f\n", n * 1e9 / ns }'
    print_rss
    ;;
sequential)
    [ "$proto" = h1 ] || die "sequential is HTTP/1.1 over clear text: say h1"
    n=$(scaled 100000)
    base="http://127.0.0.1:$HTTP_PORT"
    urls "$n" /10k
    t0=$(now_ns)
    timed_curl -s -S --no-progress-meter --http1.1 -w '%{http_code} %{size_download}\n' -K "$cfg" >"$out"
    t1=$(now_ns)
    elapsed=$((t1 - t0))
    check "$n" >/dev/null
    awk -v n="$n" -v ns="$elapsed" 'BEGIN { printf "requests/s: %.1f\n", n * 1e9 / ns }'
    print_rss
    ;;
parallel)
    urls 100 /big
    run_curl 100 -w '%{http_code} %{size_download}\n'
    bytes=$(check 100)
    awk -v b="$bytes" -v ns="$elapsed" 'BEGIN { printf "bytes/s: %.0f\n", b * 1e9 / ns }'
    print_rss
    ;;
upload)
    awk -v src="$dir/upload-source" -v u="$base/upload/f" 'BEGIN {
        for (i = 1; i <= 100; i++) printf "upload-file = \"%s\"\nurl = \"%s%d\"\noutput = \"/dev/null\"\n", src, u, i }' >"$cfg"
    run_curl 50 -w '%{http_code} %{size_upload}\n'
    bytes=$(check 100)
    awk -v b="$bytes" -v ns="$elapsed" 'BEGIN { printf "bytes/s: %.0f\n", b * 1e9 / ns }'
    print_rss
    ;;
single)
    timed_curl -s -S -o /dev/null -w '%{http_code} %{size_download} %{speed_download}\n' \
        "http://localhost:$HTTP_PORT/huge" >"$out"
    read -r code bytes speed <"$out"
    want=$(scaled 100000000000)
    if [ "$code" != 200 ] || [ "$bytes" != "$want" ]; then
        die "download failed: HTTP $code, $bytes of $want bytes"
    fi
    echo "bytes/s: $speed"
    print_rss
    ;;
*)
    echo "usage: $(basename "$0") requests|parallel|upload h1|h2, sequential h1, or single" >&2
    exit 2
    ;;
esac
