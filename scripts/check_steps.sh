# shellcheck shell=bash
# check_steps.sh: the step machinery of Tack's device checks (scripts/gpu_check.sh,
# scripts/level_zero_check.sh), sourced by each after it sets:
#   root, OUT, PYTHON, BUILD, REUSE, BUDGET
#   CHECK_NAME   the report's name: $OUT/$CHECK_NAME.json, $CHECK_NAME.log in logs.tgz
#   CHECK_TITLE  how the last line names the check ("GPU check passed")
# It gives say, left, record, report, step, absent, not_run, python_step and finish, and
# the build (meson and ninja, the extension staged on PYTHONPATH) as the function build.
#
# $CHECK_NAME.json: {"ok", "complete", "seconds", "budget", "steps": [{"name", "status",
# "rc", "seconds", "reason"}]}, status pass, fail, timeout (cut by its limit), not-run
# (out of time, or what it needs is missing) or absent (an optional tool or peer is not
# installed). finish exits 0 only when every step passed or is absent.

# The step functions run in a child shell under `timeout` (step exports them), which
# the linter cannot follow.
# shellcheck disable=SC2317,SC2034

# Logs and scratch files live outside $OUT; logs.tgz carries them back.
work=$(mktemp -d "${TMPDIR:-/tmp}/${CHECK_NAME}.XXXXXX")
logs="$work/logs"
mkdir -p "$logs"
log="$logs/$CHECK_NAME.log"
records="$work/steps.tsv"
export work
: >"$log"
: >"$records"
start=$(date +%s)
RESERVE=15 # seconds kept for the last JSON and logs.tgz
python_steps=1 # 0 once the extension is known not to be built
python_why=""

say() {
    printf '%s\n' "$*" | tee -a "$log"
}

left() {
    echo $((BUDGET - RESERVE - ($(date +%s) - start)))
}

# record NAME STATUS RC SECONDS REASON, then rewrites $CHECK_NAME.json, so that it is
# there however the run ends.
record() {
    printf '%s\t%s\t%s\t%s\t%s\n' "$@" >>"$records"
    report false
}

# report COMPLETE: $CHECK_NAME.json from the records so far.
report() {
    "$PYTHON" - "$records" "$OUT/$CHECK_NAME.json" "$(($(date +%s) - start))" "$BUDGET" \
        "$1" <<'EOF' || say "$CHECK_NAME.json could not be written with $PYTHON"
import json, os, sys
records, path, seconds, budget, complete = sys.argv[1:]
steps = []
for line in open(records):
    name, status, rc, secs, reason = line.rstrip("\n").split("\t")
    steps.append({"name": name, "status": status, "rc": int(rc), "seconds": int(secs),
                  "reason": reason})
ok = complete == "true" and any(s["status"] == "pass" for s in steps) and all(
    s["status"] in ("pass", "absent") for s in steps)
with open(path + ".tmp", "w") as f:
    json.dump({"ok": ok, "complete": complete == "true", "seconds": int(seconds),
               "budget": int(budget), "steps": steps}, f, indent=2)
os.replace(path + ".tmp", path)
EOF
}

# step NAME ESTIMATE LIMIT COMMAND...: runs COMMAND (a program or a function of this
# script) with a time limit cut to what is left of the budget, or records it as not run
# when its estimate does not fit. Returns the command's status.
step() {
    local name=$1 estimate=$2 limit=$3
    shift 3
    local remaining t0 rc status reason=""
    remaining=$(left)
    if ((remaining < estimate)); then
        say "== $name: not run (out of time: about ${estimate}s needed, ${remaining}s left)"
        record "$name" not-run -1 0 "out of time (about ${estimate}s needed, ${remaining}s left)"
        return 1
    fi
    # timeout's --kill-after adds up to 5 s to a step that ignores SIGTERM.
    ((limit > remaining - 5)) && limit=$((remaining - 5))
    say "== $name (limit ${limit}s): $*"
    t0=$(date +%s)
    timeout --kill-after=5 "$limit" bash -c '"$@"' "$name" "$@" >"$logs/$name.log" 2>&1
    rc=$?
    tee -a "$log" <"$logs/$name.log"
    case $rc in
    0) status=pass ;;
    124 | 137) status=timeout reason="cut at its limit of ${limit}s" ;;
    *) status=fail ;;
    esac
    record "$name" "$status" "$rc" "$(($(date +%s) - t0))" "$reason"
    say "== $name: $status (exit $rc)"
    return "$rc"
}

# absent NAME WHY: an optional step whose tools are not installed; recorded, not failed.
absent() {
    say "== $1: absent ($2)"
    record "$1" absent -1 0 "$2"
}

# not_run NAME WHY: a step that cannot run here for a reason other than time.
not_run() {
    say "== $1: not run ($2)"
    record "$1" not-run -1 0 "$2"
}

# python_step NAME ESTIMATE LIMIT COMMAND...: a step that needs the extension.
python_step() {
    if ((!python_steps)); then
        not_run "$1" "$python_why"
        return 1
    fi
    step "$@"
}

finish() {
    report true
    local verdict
    verdict=$("$PYTHON" -c 'import json, sys; print(json.load(open(sys.argv[1]))["ok"])' \
        "$OUT/$CHECK_NAME.json" 2>/dev/null)
    if [[ $verdict == True ]]; then
        say "$CHECK_TITLE passed"
    else
        say "$CHECK_TITLE FAILED (details in $OUT/$CHECK_NAME.json and logs.tgz)"
    fi
    tar -czf "$OUT/logs.tgz" -C "$work" logs
    rm -rf "$work"
    [[ $verdict == True ]]
    exit
}

# ---- probe: what this machine has -----------------------------------------------
has_python_headers() {
    "$PYTHON" -c 'import os, sys, sysconfig
sys.exit(not os.path.exists(os.path.join(sysconfig.get_paths()["include"], "Python.h")))'
}
# ---- build --------------------------------------------------------------------------
build() {
    if [[ $REUSE == 1 && -f $BUILD/build.ninja ]]; then
        echo "reusing the build in $BUILD"
    else
        # The extension is built for $PYTHON, whichever Python runs meson. The file
        # stays beside the build: meson reads it again when it regenerates.
        local native="$BUILD.native.ini"
        mkdir -p "$(dirname "$BUILD")" &&
            printf "[binaries]\npython = '%s'\n" "$(command -v "$PYTHON")" >"$native"
        local options=(-Dpython="$WITH_PYTHON" -Dtests=true -Dbuildtype=release
            -Dwerror=false --native-file "$native")
        meson setup --wipe "$BUILD" "${options[@]}" >/dev/null 2>&1 ||
            meson setup "$BUILD" "${options[@]}" || return 1
    fi
    ninja -C "$BUILD" || return 1
    rm -rf "$BUILD/stage" && mkdir -p "$BUILD/stage" || return 1
    if [[ $WITH_PYTHON == true ]]; then
        # Staged as the package installs: the extension beside lib/libtack.so and
        # include/ (the C host tests link that library).
        cp -r src/tack "$BUILD/stage/" && cp "$BUILD"/_tack*.so "$BUILD/stage/tack/" &&
            mkdir -p "$BUILD/stage/tack/lib/pkgconfig" &&
            cp "$BUILD/libtack.so" "$BUILD/stage/tack/lib/" &&
            cp "$BUILD/tack.pc" "$BUILD/stage/tack/lib/pkgconfig/" &&
            cp -r "$BUILD/include" "$BUILD/stage/tack/" &&
            PYTHONPATH="$BUILD/stage" "$PYTHON" -c "import tack; print('tack', tack.__file__)"
    fi
}
# probe_build_tools: the interpreter, and the tools the build needs (fails when one is
# missing). probe_optional TOOL...: where each tool is, or that it is not installed.
# probe_modules MODULE...: whether $PYTHON imports each.
probe_build_tools() {
    local rc=0 tool
    "$PYTHON" -c 'import sys; print("python", sys.version.split()[0], sys.executable)'
    for tool in meson ninja cc; do
        if command -v "$tool" >/dev/null 2>&1; then
            echo "$tool: $("$tool" --version 2>&1 | head -n 1)"
        else
            echo "$tool: missing (the build needs it)"
            rc=1
        fi
    done
    return "$rc"
}
probe_optional() {
    local tool
    for tool in "$@"; do
        echo "$tool: $(command -v "$tool" || echo "not installed")"
    done
}
probe_modules() {
    local module
    for module in "$@"; do
        if "$PYTHON" -c "import $module" >/dev/null 2>&1; then
            echo "python module $module: yes"
        else
            echo "python module $module: no"
        fi
    done
}
export -f build has_python_headers probe_build_tools probe_optional probe_modules
export PYTHON BUILD REUSE
