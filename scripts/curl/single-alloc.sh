#!/usr/bin/env bash
# single-alloc.sh: one download of a 512 KB file over clear-text HTTP/1.1 from the httpd that
# httpd.sh started for this test, with the curl tool under test (CURL, default perf/curl)
# writing its memory-tracking log (CURL_MEMDEBUG; a debug build of curl). Prints the
# allocation count and the peak bytes allocated at once (memdebug-stats.sh):
#     allocations: N
#     maxalloc: N bytes
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=SCRIPTDIR/common.sh
. "$here/common.sh"

dir=$(state_dir)
curl=$(curl_bin)
[ -f "$dir/ports" ] || die "no server for test '${PERFBISECT_TEST:-default}' (run httpd.sh start as its setup)"
# shellcheck source=/dev/null
. "$dir/ports"
[ -x "$curl" ] || die "no curl tool at '$curl' (set CURL)"

# The count must not depend on who runs it, so curl gets an empty environment (it reads
# variables such as CURL_CA_BUNDLE, HOME and proxies, and copies what it finds) and -q (no
# .curlrc). 127.0.0.1, not localhost: curl would race ::1 against 127.0.0.1 (happy eyeballs)
# and the loser's allocations would make the count vary from run to run. No -w either: the
# write-out costs allocations of its own; --fail makes an HTTP error a failed run.
log=$(mktemp)
trap 'rm -f "$log"' EXIT
if ! env -i CURL_MEMDEBUG="$log" "$curl" -q -s -S -f -o /dev/null "http://127.0.0.1:$HTTP_PORT/512k"; then
    die "the download failed"
fi
[ -s "$log" ] || die "curl wrote no memory-tracking log: build it with debug memory tracking (--enable-debug)"
"$here/memdebug-stats.sh" "$log"
