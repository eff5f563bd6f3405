#!/usr/bin/env bash
# struct-size.sh STRUCT FILE...: the size in bytes of a C struct, read with pahole (Debian
# package dwarves) from object files or static libraries built with debug info (-g).
# pahole reads object files, not .a archives: archives are unpacked into a temp folder first.
# A missing NAME.a is read as NAME-d.a when that exists (CMake's debug postfix: libcurl-d.a).
# The first object that describes the struct is used. Prints:  STRUCT: N bytes
set -euo pipefail
me=$(basename "$0")
[ $# -ge 2 ] || { echo "usage: $me STRUCT FILE.o|FILE.a..." >&2; exit 2; }
struct=$1
shift
command -v pahole >/dev/null || { echo "$me: pahole not found (Debian package dwarves)" >&2; exit 1; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
objs=()
i=0
for f in "$@"; do
    # CMake's Debug builds name the library libcurl-d.a (its debug postfix): take it for
    # libcurl.a when only that one is there.
    if [ ! -e "$f" ] && [ "${f%.a}" != "$f" ] && [ -r "${f%.a}-d.a" ]; then
        f="${f%.a}-d.a"
    fi
    [ -r "$f" ] || { echo "$me: cannot read '$f'" >&2; exit 1; }
    case $f in
    *.a)
        i=$((i + 1))
        mkdir "$tmp/$i"
        abs=$(cd "$(dirname "$f")" && pwd)/$(basename "$f")
        (cd "$tmp/$i" && ar x "$abs")
        for o in "$tmp/$i"/*; do objs+=("$o"); done
        ;;
    *) objs+=("$f") ;;
    esac
done

for o in "${objs[@]}"; do
    # The last "size:" comment is the struct's own (members' comments hold offsets only).
    size=$(pahole -C "$struct" "$o" 2>/dev/null | sed -n 's#^[[:space:]]*/\* size: \([0-9][0-9]*\),.*#\1#p' | tail -n 1) || true
    if [ -n "$size" ]; then
        echo "$struct: $size bytes"
        exit 0
    fi
done
echo "$me: no debug info for struct $struct in $* (built without -g, or no such struct)" >&2
exit 1
