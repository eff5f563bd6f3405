#!/usr/bin/env bash
# memdebug-stats.sh LOG: allocation count and peak bytes of a curl memory-tracking log.
#
# A debug build of curl (configure --enable-debug, CMake ENABLE_DEBUG=ON; ENABLE_CURLDEBUG=ON
# up to curl 8.18) writes every malloc, calloc, realloc, strdup, wcsdup and free to the file
# named by the CURL_MEMDEBUG environment variable, as lines like
#     MEM url.c:123 malloc(224) = 0x55d0c3a4b2a0
#     MEM url.c:130 realloc(0x55d0c3a4b2a0, 512) = 0x55d0c3a4c000
#     MEM url.c:140 free(0x55d0c3a4c000)
# This counts them the way curl's tests/memanalyze.pl does: "allocations" is mallocs + callocs
# + reallocs + strdups + wcsdups, "maxalloc" the most bytes allocated at once.
# Prints:  allocations: N
#          maxalloc: N bytes
set -euo pipefail
[ $# -eq 1 ] || { echo "usage: $(basename "$0") LOG" >&2; exit 2; }
log=$1
[ -r "$log" ] || { echo "$(basename "$0"): cannot read '$log'" >&2; exit 1; }

awk '
function grow(n) { total += n; if (total > peak) peak = total }
function addr(s) { gsub(/[(),]/, "", s); return s }
$1 != "MEM" { next }
{
    op = $3
    if (op ~ /^free\(/) {
        a = addr(substr(op, 6))
        if (a == "nil" || !(a in size)) next
        total -= size[a]; delete size[a]
    } else if (op ~ /^malloc\(/) {
        n = op; gsub(/[^0-9]/, "", n)
        a = addr($5); size[a] = n; grow(n); allocs++
    } else if (op ~ /^calloc\(/) {
        sub(/^calloc\(/, "", op); sub(/\)$/, "", op); split(op, f, ",")
        n = f[1] * f[2]
        a = addr($5); size[a] = n; grow(n); allocs++
    } else if (op ~ /^realloc\(/) {
        old = addr(substr(op, 9)); n = $4; gsub(/[^0-9]/, "", n)
        if (old != "nil" && (old in size)) { total -= size[old]; delete size[old] }
        a = addr($6); size[a] = n; grow(n); allocs++
    } else if (op ~ /^(strdup|wcsdup)\(/) {
        n = $4; gsub(/[^0-9]/, "", n)
        a = addr($6); size[a] = n; grow(n); allocs++
    } else {
        unknown++
    }
}
END {
    if (allocs == 0) {
        print "no allocations in the log: is curl built with debug memory tracking?" > "/dev/stderr"
        exit 1
    }
    if (unknown) printf "%d MEM lines not recognised\n", unknown > "/dev/stderr"
    printf "allocations: %d\n", allocs
    printf "maxalloc: %d bytes\n", peak
}' "$log"
