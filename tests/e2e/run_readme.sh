#!/usr/bin/env bash
# The documentation's commands run, so its instructions cannot drift from the
# code. Every line of a ```sh block in README.md and in docs/*.md is a
# command; they run in that order (README.md first, then docs/ in
# alphabetical order, each file top to bottom), word for word, in one scratch
# tree (build/ links to the test data, the cfgs are copies that train a few
# iterations), so a page's command may use what an earlier page's made. A
# command marked "# needs: hosts" or "# needs: gpu" cannot run on this
# machine and is listed, not run; a `make` line must name a target of the
# Makefiles (the targets themselves run in .ci/run). Outside sh blocks a line
# that runs ./darknet_mn must be a synopsis (holding <...>, [...] or "-n N"),
# so that no concrete command escapes the test. Messages name file:line. Run
# by tests/run.sh (T, D, BUILD, MPI set there).
. "$(dirname "$0")/../helpers/lib.sh"
R=$T/readme
W=$R/tree
rm -rf "$R" && mkdir -p "$W/build"

# The pages, in the order their commands run.
pages=(README.md $(LC_ALL=C ls docs/*.md))

# Synopses only outside sh blocks.
awk 'FNR == 1 { inb = 0 }
     /^```/ { if (inb) { inb = 0 } else { inb = 1; sh = ($0 == "```sh") } ; next }
     inb && !sh && /\.\/darknet_mn/ && !/<|\[|-n N/ { print FILENAME ":" FNR ": " $0 }' "${pages[@]}" > "$R/loose"
if [ -s "$R/loose" ]; then bad "concrete commands outside \`\`\`sh blocks (make them sh, or synopses): $(head -3 "$R/loose")"
else ok "every line outside sh blocks that runs ./darknet_mn is a synopsis (${#pages[@]} pages)"; fi

# The scratch tree: the binary, cfg/ and data/ copies with short trainings,
# the classifier subset of the tests and a small detection set.
ln -s "$(pwd)/darknet_mn" "$W/darknet_mn"
cp -r cfg data "$W/"
sed -i -e 's/^max_batches=.*/max_batches=4/' -e 's/^eval_interval=.*/eval_interval=2/' -e 's/^burn_in=.*/burn_in=1/' "$W"/cfg/*.cfg
ln -s "$D" "$W/build/fashion"
"$BUILD/tools/mn_fashion_det" /usr/share/datasets/fashion-mnist "$W/build/fashion-det" --train 48 --valid 8 --seed 1 --net 128 \
    > "$R/det-data.log" 2>&1 || bad "mn_fashion_det (see $R/det-data.log)"

# Each command line as FILE:LINE, a tab, the line.
awk 'FNR == 1 { inb = 0 }
     /^```/ { if (inb) { inb = 0 } else { inb = 1; sh = ($0 == "```sh") } ; next }
     inb && sh { print FILENAME ":" FNR "\t" $0 }' "${pages[@]}" > "$R/commands"
ran=0 skipped=0 k=0
while IFS=$'\t' read -r where line; do
    case "$line" in ""|"#"*) continue ;; esac
    k=$((k + 1))
    case "$line" in
        *"# needs: hosts"*|*"# needs: gpu"*) skipped=$((skipped + 1)); echo "     (not run here: $where: ${line%%#*})"; continue ;;
        make\ *)
            target=$(echo "$line" | awk '{print $2}')
            if grep -qE "^([^:#]* )?$target( [^:#]*)?:" Makefile tests/*.mk tests/*/*.mk tools/*.mk; then ran=$((ran + 1))
            else bad "$where: 'make $target' is no target of the Makefiles"; fi
            continue ;;
    esac
    cmd=${line%%  #*}
    if (cd "$W" && timeout 300 bash -c "$cmd") < /dev/null > "$R/cmd$k.log" 2>&1; then ran=$((ran + 1))
    else bad "$where: command exited non-zero: $cmd (see $R/cmd$k.log)"; tail -3 "$R/cmd$k.log"; fi
done < "$R/commands"
[ $fail = 0 ] && ok "${#pages[@]} pages: $ran commands ran (or name make targets), $skipped need several hosts or a GPU"
finish
