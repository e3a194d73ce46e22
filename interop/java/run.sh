#!/usr/bin/env bash
# Runs the Java suite (real Redisson from Maven Central) once per Redisson
# version against one server binary, each run with its own server (started
# by the tests, see RlockServer.java). `make test-java` calls it for Redis
# and Valkey, every version, both modes side by side: each mode builds in
# its own target/<mode>.
#
#   interop/java/run.sh SERVER_BIN MODULE PEER VERSION...
#
# RLOCK_MODE selects how Redisson's scripts run: `lua` (the module's
# `redisson-scripts off`) or `native` (`redisson-scripts native`: its
# command filter runs the scripts it knows as native commands);
# RLOCK_MODULE_ARGS overrides the module arguments. Full logs are kept in
# interop/java/target/logs/; a failed run's log tail is printed. Exits
# non-zero when any version failed, after running them all.
set -u
here=$(cd "$(dirname "$0")" && pwd)
server_bin=$1 module=$2 peer=$3
shift 3
mode=${RLOCK_MODE:-lua}
case $mode in
    lua) module_args=${RLOCK_MODULE_ARGS:-redisson-scripts off} ;;
    native) module_args=${RLOCK_MODULE_ARGS:-redisson-scripts native} ;;
    *) echo "RLOCK_MODE must be lua or native, not $mode"; exit 2 ;;
esac
logs=$here/target/logs
mkdir -p "$logs"
server_name=$(basename "$server_bin")
failed=()
summary=()
for version in "$@"; do
    exclude=nothing-excluded
    # RFencedLock is 3.19+.
    case $version in
        3.1[0-8].*|3.[0-9].*) exclude='**/FencedLockTest.java' ;;
    esac
    log=$logs/$server_name-$mode-$version.log
    start=$(date +%s)
    echo "== Redisson $version on $server_name ($mode)"
    (cd "$here" && mvn -B -ntp test \
        -Dredisson.version="$version" -Drlock.exclude="$exclude" \
        -Drlock.server.bin="$server_bin" -Drlock.module="$module" -Drlock.peer="$peer" \
        -Drlock.mode="$mode" -Drlock.module.args="$module_args" \
        -Drlock.build.dir="$here/target/$mode") >"$log" 2>&1
    status=$?
    took=$(( $(date +%s) - start ))
    grep -E "hand-off p50|Tests run: .*, Fail|\[ERROR\] (Tests|  )|FAIL" "$log" | grep -v "^\[INFO\] Tests run: [0-9]*, Failures: 0, Errors: 0, Skipped: [0-9]*, Time" | sed 's/^/   /'
    totals=$(grep -E "^\[(INFO|ERROR|WARNING)\] Tests run:" "$log" | tail -1 | sed -E 's/^\[[A-Z]+\] //')
    if [ $status -ne 0 ]; then
        echo "-- Redisson $version on $server_name FAILED (${took}s); last lines of $log:"
        tail -n 80 "$log"
        failed+=("$version")
        summary+=("$(printf '%-8s %-14s %-4s FAILED %4ss  %s' "$version" "$server_name" "$mode" "$took" "$totals")")
    else
        summary+=("$(printf '%-8s %-14s %-4s ok     %4ss  %s' "$version" "$server_name" "$mode" "$took" "$totals")")
    fi
done
echo "== Java suite on $server_name:"
printf '   %s\n' "${summary[@]}"
if [ ${#failed[@]} -ne 0 ]; then
    echo "Java suite FAILED for Redisson ${failed[*]} on $server_name (logs in $logs)"
    exit 1
fi
