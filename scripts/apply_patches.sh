#!/usr/bin/env bash
# scripts/apply_patches.sh TREE SOURCE UPSTREAM PATCH...: darknet-mn's patches
# in order onto a Darknet tree the Makefile unpacked or copied from SOURCE
# (Debian's source package, a snapshot, or the user's DARKNET_SRC clone).
# UPSTREAM is the repository and commit they were made for; a patch that
# does not apply (a clone at another commit) stops the build naming both,
# and the tree is removed so that no half-patched Darknet is built.
set -u
tree=$1 source=$2 upstream=$3
shift 3
for p in "$@"; do
    if ! out=$(patch -s -p1 -d "$tree" < "$p" 2>&1); then
        rm -rf "$tree"
        {
            echo "darknet-mn: $p does not apply to $source."
            echo "  darknet-mn's patches for this base were made for $upstream;"
            echo "  check out that commit in your clone (git -C <clone> checkout <commit>), or port the patch."
            printf '%s\n' "$out" | head -5 | sed 's/^/  patch: /'
        } >&2
        exit 1
    fi
done
touch "$tree/.patched"
