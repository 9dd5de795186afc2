#!/usr/bin/env bash
# make install and make uninstall (the Makefile hands over what its
# variables chose):
#   scripts/install.sh check BUILD          # why an install of BUILD would be refused, or nothing
#   scripts/install.sh install PROG BUILD   # PROG: the build's program; BUILD: its name (cpu, gpu, alexeyab-cpu ...)
#   scripts/install.sh uninstall
# with PREFIX, DESTDIR, MODULEFILES and MODULE_VERSION in the environment.
#
# install writes, under DESTDIR (empty but for a staged install):
#   PREFIX/bin/darknet_mn              PROG
#   PREFIX/bin/mn_rerun.sh             reruns under mpiexec without Slurm
#   PREFIX/share/darknet-mn/darknet_mn.sbatch
#   MODULEFILES/darknet-mn/MODULE_VERSION.lua   Lmod's module file
#   MODULEFILES/darknet-mn/MODULE_VERSION       Tcl environment modules'
# The module files come from scripts/modulefile.lua.in and .tcl.in with
# the real PREFIX: they put PREFIX/bin on PATH and set DARKNET_MN_ROOT,
# from which the batch script runs PREFIX/bin/darknet_mn when MN is
# unset. Both in one folder serve either system: Lmod takes the .lua file
# where both are there, and environment modules read only files that
# begin with their #%Module cookie.
# PREFIX/share/darknet-mn/manifest names the build and every file written:
# uninstall removes those, and an install of the same build replaces them.
# PREFIX holds one build (one bin/darknet_mn): an install of another
# build there is refused (check, which the Makefile runs before it builds).
set -u
PREFIX=${PREFIX:-/usr/local}
DESTDIR=${DESTDIR:-}
MODULEFILES=${MODULEFILES:-$PREFIX/share/modulefiles}
MODULE_VERSION=${MODULE_VERSION:-}
top=$(cd "$(dirname "$0")/.." && pwd)
share=$PREFIX/share/darknet-mn
manifest=$share/manifest

die() { echo "darknet-mn: $*" >&2; exit 2; }

# The module files name these paths in Lua strings, Tcl words and PATH:
# no character that any of them would read otherwise (a space, a quote,
# $, [, \, :).
safe_path() {
    [[ $2 =~ ^/[A-Za-z0-9._+,@=~/-]*$ ]] ||
        die "$1=$2: an absolute path of letters, digits and . _ + , @ = ~ - / is needed (the module files and PATH name it)"
}

# check BUILD: nothing where an install of BUILD may go ahead, else why not.
check() {
    local had
    safe_path PREFIX "$PREFIX"
    safe_path MODULEFILES "$MODULEFILES"
    [[ $MODULE_VERSION =~ ^[A-Za-z0-9._+-]+$ ]] ||
        die "MODULE_VERSION=$MODULE_VERSION: a module version of letters, digits and . _ + - is needed"
    had=$(sed -n 's/^build //p' "$DESTDIR$manifest" 2> /dev/null)
    [ -z "$had" ] || [ "$had" = "$1" ] ||
        die "$PREFIX holds darknet-mn's $had build (one PREFIX, one build): install the $1 build into a PREFIX of its own, or make uninstall PREFIX=$PREFIX first"
}

# remove_listed: the files of the manifest there (an earlier install of this build).
remove_listed() {
    local f
    [ -f "$DESTDIR$manifest" ] || return 0
    while read -r f; do rm -f "$DESTDIR$f"; done < <(grep '^/' "$DESTDIR$manifest")
    rm -f "$DESTDIR$manifest"
}

# put SRC DEST MODE: SRC copied to DESTDIR/DEST, its folder made; one
# line naming the folder where it cannot be written.
put() {
    local dir=$DESTDIR${2%/*}
    mkdir -p "$dir" 2> /dev/null && [ -w "$dir" ] ||
        die "cannot create or write $dir: install as its owner, or into a folder of your own (make install PREFIX=\$HOME/.local)"
    install -m "$3" "$1" "$DESTDIR$2" || exit 2
    written+=("$2")
}

# module TEMPLATE DEST: the module file, the template's @PREFIX@, @VERSION@ and @BUILD@ filled in.
module_file() {
    local tmp
    tmp=$(mktemp) || exit 2
    sed -e "s|@PREFIX@|$PREFIX|g" -e "s|@VERSION@|$MODULE_VERSION|g" -e "s|@BUILD@|$build|g" "$1" > "$tmp"
    put "$tmp" "$2" 644
    rm -f "$tmp"
}

case ${1:-} in
check)
    [ $# = 2 ] || die "usage: $0 check BUILD"
    check "$2" ;;
install)
    [ $# = 3 ] || die "usage: $0 install PROG BUILD"
    prog=$2 build=$3 written=()
    check "$build"
    [ -x "$prog" ] || die "no program $prog to install (make builds it)"
    remove_listed
    put "$prog" "$PREFIX/bin/darknet_mn" 755
    put "$top/scripts/mn_rerun.sh" "$PREFIX/bin/mn_rerun.sh" 755
    put "$top/scripts/darknet_mn.sbatch" "$share/darknet_mn.sbatch" 755
    module_file "$top/scripts/modulefile.lua.in" "$MODULEFILES/darknet-mn/$MODULE_VERSION.lua"
    module_file "$top/scripts/modulefile.tcl.in" "$MODULEFILES/darknet-mn/$MODULE_VERSION"
    { echo "build $build"; printf '%s\n' "${written[@]}"; } > "$DESTDIR$manifest"
    echo "darknet-mn: the $build build installed in $DESTDIR$PREFIX; module files darknet-mn/$MODULE_VERSION in $DESTDIR$MODULEFILES:"
    echo "  module use $MODULEFILES; module load darknet-mn/$MODULE_VERSION" ;;
uninstall)
    [ $# = 1 ] || die "usage: $0 uninstall"
    [ -f "$DESTDIR$manifest" ] || die "no darknet-mn installed in $DESTDIR$PREFIX (no $DESTDIR$manifest): give the PREFIX (and DESTDIR) it was installed with"
    # The module files' folder, from the manifest: MODULEFILES may have been another.
    mdir=$(grep -m1 '/darknet-mn/[^/]*\.lua$' "$DESTDIR$manifest")
    remove_listed
    rmdir "$DESTDIR$share" 2> /dev/null
    [ -z "$mdir" ] || rmdir "$DESTDIR${mdir%/*}" 2> /dev/null
    echo "darknet-mn: uninstalled from $DESTDIR$PREFIX" ;;
*) die "usage: $0 check BUILD | install PROG BUILD | uninstall" ;;
esac
exit 0
