#!/usr/bin/env bash
# make install and its module files, loaded as a cluster user loads them
# (make test-cluster), with ./darknet_mn (make's build) installed:
#  1. make install PREFIX=P: P/bin/darknet_mn (this build's program) and
#     mn_rerun.sh, P/share/darknet-mn/darknet_mn.sbatch, and the module
#     files darknet-mn/<version>-cpu(.lua) in P/share/modulefiles, naming P; an
#     install of another build into P is refused in one line before
#     anything is built; DESTDIR stages an install whose module files name
#     PREFIX, not the stage;
#  2. Lmod (Debian's lmod, installed where missing), in a login shell of an
#     empty environment (env -i bash -l: /etc/profile.d/lmod.sh): module use
#     P/share/modulefiles, module load darknet-mn: darknet_mn on PATH is
#     P/bin/darknet_mn and runs, mn_rerun.sh is P/bin's, DARKNET_MN_ROOT=P;
#     the installed batch script, copied into a job folder whose own
#     ./darknet_mn is a stand-in that fails, run with MN unset as the quick
#     start runs it, on the Slurm testbed (scripts/slurm.sh): 2 ranks on 2
#     nodes train the installed program to its final weights, the stand-in
#     never runs; MN set beside the module wins;
#  3. Tcl environment modules: the same but MN's, with Debian's
#     environment-modules and the Tcl module file. Its package conflicts
#     with lmod's, so it is unpacked here (apt-get download, dpkg-deb -x),
#     not installed, and its `module` comes from its own modulecmd.tcl
#     (autoinit, what its init files run);
#  4. MN unset, no module loaded and no ./darknet_mn: the script run as a
#     program stops with 65 and one line naming the three ways to a
#     program, nothing queued; a module loaded and then uninstalled (make
#     uninstall, which leaves none of the install's files): one line
#     naming the module's missing program.
# Needs root (lmod's install, the testbed).
. "$(dirname "$0")/../helpers/lib.sh"
suite_folder install
S=$G
sl=scripts/slurm.sh
P=$S/prefix
MF=$P/share/modulefiles
# The module's version: darknet-mn's own, and the build's name.
VERSION=$(sed -n 's/^#define MN_VERSION "\(.*\)"$/\1/p' plugin/core/mn_status.h)
MODVER=$VERSION-cpu
trap '$sl down > /dev/null 2>&1' EXIT

# 1. The install.
if [ ! -x darknet_mn ]; then bad "no ./darknet_mn (make builds it)"; finish install; fi
make -s install PREFIX="$P" > "$S/install.out" 2>&1
rc=$?
want="$P/bin/darknet_mn $P/bin/mn_rerun.sh $P/share/darknet-mn/darknet_mn.sbatch $P/share/darknet-mn/manifest $MF/darknet-mn/$MODVER $MF/darknet-mn/$MODVER.lua"
got=$(find "$P" -type f | sort | xargs)
if [ $rc = 0 ] && [ "$got" = "$want" ] && cmp -s darknet_mn "$P/bin/darknet_mn" && cmp -s scripts/darknet_mn.sbatch "$P/share/darknet-mn/darknet_mn.sbatch" &&
   grep -qx "setenv(\"DARKNET_MN_ROOT\", \"$P\")" "$MF/darknet-mn/$MODVER.lua" && grep -qx "prepend_path(\"PATH\", \"$P/bin\")" "$MF/darknet-mn/$MODVER.lua" &&
   grep -qx "setenv DARKNET_MN_ROOT $P" "$MF/darknet-mn/$MODVER" && grep -qx "prepend-path PATH $P/bin" "$MF/darknet-mn/$MODVER" &&
   [ "$(head -1 "$P/share/darknet-mn/manifest")" = "build cpu" ]; then
    ok "make install PREFIX=P: bin/darknet_mn (./darknet_mn's copy), bin/mn_rerun.sh, share/darknet-mn/darknet_mn.sbatch, module files darknet-mn/$MODVER and $MODVER.lua naming P, the manifest"
else bad "make install: status $rc; files |$got|, want |$want|; $(tail -3 "$S/install.out" | tr '\n' '|')"; fi
make --no-print-directory install PREFIX="$P" BLAS=0 > "$S/other.out" 2>&1
rc=$?
if [ $rc != 0 ] && [ "$(wc -l < "$S/other.out")" = 1 ] &&
   grep -q "^Makefile:[0-9]*: \*\*\* darknet-mn: $P holds darknet-mn's cpu build (one PREFIX, one build): install the cpu-noblas build into a PREFIX of its own, or make uninstall PREFIX=$P first.  Stop.$" "$S/other.out"; then
    ok "make install BLAS=0 into P, which holds the cpu build: refused in one line before any build: $(grep -o "holds.*build)" "$S/other.out")"
else bad "another build into P: status $rc, $(head -3 "$S/other.out" | tr '\n' '|')"; fi
make -s install PREFIX=/opt/darknet-mn DESTDIR="$S/stage" > "$S/stage.out" 2>&1
rc=$?
if [ $rc = 0 ] && [ -x "$S/stage/opt/darknet-mn/bin/darknet_mn" ] &&
   grep -qx 'setenv("DARKNET_MN_ROOT", "/opt/darknet-mn")' "$S/stage/opt/darknet-mn/share/modulefiles/darknet-mn/$MODVER.lua" &&
   grep -qx 'setenv DARKNET_MN_ROOT /opt/darknet-mn' "$S/stage/opt/darknet-mn/share/modulefiles/darknet-mn/$MODVER"; then
    ok "make install PREFIX=/opt/darknet-mn DESTDIR=D: the files under D/opt/darknet-mn, the module files naming /opt/darknet-mn"
else bad "DESTDIR: status $rc; $(tail -3 "$S/stage.out" | tr '\n' '|')"; fi

# The module systems. Lmod installed (make test-cluster's scripts/deps.sh
# test installs it); environment modules unpacked from Debian's package,
# kept in third_party/dl.
if ! dpkg-query -W -f='${Status}' lmod 2> /dev/null | grep -q "install ok installed"; then
    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq lmod; } > "$S/lmod-install.log" 2>&1 ||
        { bad "apt-get install lmod: $(tail -3 "$S/lmod-install.log")"; finish install; }
fi
deb=$(ls third_party/dl/environment-modules_*.deb 2> /dev/null | head -1)
if [ -z "$deb" ]; then
    mkdir -p third_party/dl
    (cd third_party/dl && { apt-get download environment-modules || { apt-get update -qq && apt-get download environment-modules; }; }) > "$S/em-download.log" 2>&1
    deb=$(ls third_party/dl/environment-modules_*.deb 2> /dev/null | head -1)
fi
EM=$S/environment-modules
[ -n "$deb" ] && dpkg-deb -x "$deb" "$EM"
MODULECMD=$(ls "$EM"/usr/lib/*/modulecmd.tcl 2> /dev/null | head -1)
[ -n "$MODULECMD" ] || bad "environment-modules: no modulecmd.tcl from apt-get download: $(tail -2 "$S/em-download.log" | tr '\n' '|')"

if ! $sl up > "$S/up.log" 2>&1; then bad "slurm up: $(tail -3 "$S/up.log")"; finish install; fi
eval "$($sl env)"
ok "$(grep -m1 'up in' "$S/up.log" | sed 's/^slurm.sh: //')"

# A user's job folder: the data and cfg of a 2-rank classifier training,
# the settings without MN, and a ./darknet_mn that is not the module's.
# folder NAME: S/NAME, made so.
folder() {
    local j=$S/$1
    mkdir -p "$j/backup"
    mn_cfg "$j/tiny.cfg" batch=16 max_batches=4 burn_in=0 -policy -steps -scales
    printf 'classes=10\ntrain=%s/train.list\nlabels=%s/labels.txt\nbackup=%s/backup\n' "$D" "$D" "$j" > "$j/tiny.data"
    printf '%s\n' TASK=classifier DATA=tiny.data CFG=tiny.cfg MAX_RESTARTS=0 > "$j/darknet_mn.env"
    printf '#!/bin/sh\necho "the job folder'\''s ./darknet_mn ran"\nexit 1\n' > "$j/darknet_mn"
    chmod +x "$j/darknet_mn"
}
# session NAME SETUP BODY: BODY in the job folder S/NAME, in a shell of an
# empty environment but for the testbed's client settings, after SETUP
# (which makes `module`); its output in S/NAME.log.
session() {
    printf '%s\n' "$2" "cd $S/$1 || exit 1" "$3" > "$S/$1.sh"
    env -i HOME="$S/$1" USER=root LOGNAME=root TERM=dumb PATH=/usr/local/bin:/usr/bin:/bin \
        SLURM_CONF="$SLURM_CONF" OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 \
        timeout 300 bash ${4:---noprofile --norc} "$S/$1.sh" > "$S/$1.log" 2>&1
}
# What a session prints of its module and program, then the installed
# batch script run as the quick start runs it.
LOAD="module use $MF
module load darknet-mn
echo \"module: \$(module -t list 2>&1 | grep darknet-mn)\"
echo \"on PATH: \$(command -v darknet_mn) \$(command -v mn_rerun.sh)\"
echo \"DARKNET_MN_ROOT=\$DARKNET_MN_ROOT\"
echo \"runs: \$(darknet_mn version 2>&1)\""
TRAIN="cp \"\$DARKNET_MN_ROOT/share/darknet-mn/darknet_mn.sbatch\" train.sbatch
./train.sbatch --nodes=2 --ntasks-per-node=1 --wait
echo \"status \$?\""
# MN, where set, wins over the module.
MN_WINS="MN=$S/nowhere/darknet_mn ./train.sbatch
echo \"status with MN \$?\""
# loaded_job NAME SYSTEM: session NAME's module, program and job.
loaded_job() {
    local log=$S/$1.log id out
    id=$(sed -n 's/^Submitted batch job \([0-9]*\)$/\1/p' "$log")
    out=$S/$1/darknet-mn-$id.out
    if grep -qx "module: darknet-mn/$MODVER" "$log" && grep -qx "on PATH: $P/bin/darknet_mn $P/bin/mn_rerun.sh" "$log" &&
       grep -qx "DARKNET_MN_ROOT=$P" "$log" && grep -qx "runs: darknet-mn $VERSION" "$log"; then
        ok "$2: module load darknet-mn: darknet-mn/$MODVER, darknet_mn on PATH is P/bin/darknet_mn and runs, mn_rerun.sh P/bin's, DARKNET_MN_ROOT=P"
    else bad "$2: module load: $(grep -v '^darknet-mn: \|^Submitted\|^status' "$log" | head -6 | tr '\n' '|')"; fi
    if grep -qx "status 0" "$log" && [ -n "$id" ] && grep -q '^darknet-mn: job [0-9]*, run 1, on 2 node(s) (mns1,mns2), 2 ranks' "$out" &&
       grep -q '^darknet-mn: tiny on 2 ranks (2 nodes)' "$out" && grep -q '^darknet-mn: job [0-9]*, run 1 ended with status 0' "$out" &&
       [ -s "$S/$1/backup/tiny_final.weights" ] && ! grep -q "job folder's ./darknet_mn ran" "$out"; then
        ok "$2: the installed batch script, MN unset, in a folder with a ./darknet_mn of its own: job $id trained 2 ranks on 2 nodes with the module's program ($(grep -o 'tiny on 2 ranks (2 nodes)' "$out")), final weights written, ./darknet_mn never run"
    else bad "$2: the batch script with the module: $(grep '^status [0-9]' "$log") job ${id:-none}; $(grep -a "^darknet-mn: \(job\|tiny\)\|ran\|rror" "$out" "$log" 2> /dev/null | head -6 | tr '\n' '|')"; fi
}

# 2. Lmod, from the login shell's /etc/profile.d/lmod.sh.
folder lmod
session lmod "" "$LOAD
$TRAIN
$MN_WINS" -l
loaded_job lmod Lmod
if grep -qx "status with MN $EX_USER" "$S/lmod.log" &&
   grep -q "^darknet-mn: job not yet submitted, the program $S/nowhere/darknet_mn is not there or not executable (MN=), " "$S/lmod.log"; then
    ok "Lmod: MN set beside the module wins: MN=<missing> stops with 65 naming it (MN=)"
else bad "MN beside the module: $(grep 'status with MN\|nowhere' "$S/lmod.log" | tr '\n' '|')"; fi

# 3. Tcl environment modules, its module command from its modulecmd.tcl.
if [ -n "$MODULECMD" ]; then
    folder tcl
    session tcl "eval \"\$(tclsh $MODULECMD bash autoinit)\"
echo \"module: \$(module --version 2>&1)\"" "$LOAD
$TRAIN"
    grep -q '^module: Modules Release [0-9]' "$S/tcl.log" || bad "environment modules: $(head -3 "$S/tcl.log" | tr '\n' '|')"
    loaded_job tcl "Tcl environment modules ($(sed -n 's/^module: Modules Release \([^ ]*\).*/\1/p' "$S/tcl.log"))"
fi

# 4. Nothing to run: no module and no ./darknet_mn; then a module whose
# program make uninstall removed. refused NAME WANT: the session's
# script stopped with 65 in one line matching WANT (beside the settings'
# line and "not submitted"), nothing queued.
refused() {
    local log=$S/$1.log
    if grep -qx "status $EX_USER" "$log" && [ "$(grep '^darknet-mn: ' "$log" | grep -v 'settings from \|, not submitted, ' | wc -l)" = 1 ] &&
       grep -q "$2" "$log" && ! grep -q '^Submitted' "$log" && [ -z "$(squeue -h)" ]; then
        ok "$3: status 65 before the queue, one line: $(grep -o "$2.*" "$log" | sed 's/, [0-9T:Z-]*$//')"
    else bad "$3: $(grep '^darknet-mn: \|^status' "$log" | grep -v 'settings from' | head -4 | tr '\n' '|')"; fi
}
folder none && rm "$S/none/darknet_mn"
session none "" "cp $(pwd)/scripts/darknet_mn.sbatch train.sbatch
$(tail -2 <<< "$TRAIN")" -l
refused none "^darknet-mn: job not yet submitted, no program to run: MN is unset, no darknet-mn module is loaded (DARKNET_MN_ROOT) and there is no ./darknet_mn in $S/none: set MN= in the settings file, module load darknet-mn, or build darknet-mn here (make)" \
    "MN unset, no module, no ./darknet_mn"
folder gone
session gone "" "$LOAD
$(head -1 <<< "$TRAIN")
make -s -C $(pwd) uninstall PREFIX=$P > $S/uninstall.out 2>&1
echo \"uninstalled: \$?, left: \$(find $P -type f | wc -l)\"
$(tail -2 <<< "$TRAIN")" -l
if grep -qx 'uninstalled: 0, left: 0' "$S/gone.log"; then ok "make uninstall PREFIX=P: no file of the install left"
else bad "make uninstall: $(grep -i 'uninstall\|darknet-mn: no' "$S/gone.log" | head -3 | tr '\n' '|')"; fi
refused gone "^darknet-mn: job not yet submitted, the program $P/bin/darknet_mn of the loaded darknet-mn module is not there or not executable (DARKNET_MN_ROOT=$P)" \
    "a darknet-mn module loaded, then uninstalled"
finish install
