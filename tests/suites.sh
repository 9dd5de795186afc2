#!/usr/bin/env bash
# tests/suites.sh TAG: the suites tests/suites.txt tags TAG, in its order
# (make test-cluster, test-zoo, test-hankai ...), then the tally; non-zero
# when any fails.
. "$(dirname "$0")/helpers/lib.sh"
run_suites "${1:?usage: tests/suites.sh TAG (a tag of tests/suites.txt)}"
finish "$1"
