#!/usr/bin/env bash
# both.sh CMD1... -- CMD2...: run two commands at once; fails when either does.
set -u
a=()
while [ $# -gt 0 ] && [ "$1" != -- ]; do a+=("$1"); shift; done
[ $# -gt 1 ] || { echo "usage: both.sh CMD1... -- CMD2..." >&2; exit 2; }
shift
"${a[@]}" & p=$!
"$@" & q=$!
wait $p; r=$?
wait $q || exit
exit $r
