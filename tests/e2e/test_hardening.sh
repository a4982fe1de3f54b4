#!/usr/bin/env bash
# test_hardening.sh: issue 17's findings, one regression check each, against `slipway server`.
# Finding 1, secrets at rest: in a data directory the operator made 0755, under umask 022,
# every file slipway writes (store, WAL, shm, lock, tokens, kubeconfig, TLS key) is 0600 and
# no other local user can read a Secret's bytes; the start warns about the open directory; a
# directory slipway creates is 0700 with no warning; a store file an older run left 0644 is
# narrowed at the next start.
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "$0")/lib.sh"

umask 022
mkdir -m 0755 "$SW_DIR"
sw_start_server
SECRET_VALUE=hardening-secret-value-7f3a9c
B64=$(printf %s "$SECRET_VALUE" | base64 -w0)
expect_ok "create a Secret" kc create secret generic s1 --from-literal=k="$SECRET_VALUE"
expect_ok "its bytes are in the store" grep -rqF "$B64" "$SW_DIR"
expect_eq "no file in the data directory is open to others" "" \
    "$(find "$SW_DIR" -type f -perm /077 -printf '%m %p\n')"
expect_eq "no directory under it is open to others" "" \
    "$(find "$SW_DIR" -mindepth 1 -type d -perm /077 -printf '%m %p\n')"
# (the unix-excl VFS keeps the WAL index in memory: no -shm file)
expect_ok "the store and its WAL exist" test -f "$SW_DIR/state.db" -a -f "$SW_DIR/state.db-wal"
expect_eq "another user reads none of it" 0 \
    "$(runuser -u nobody -- grep -rcF "$B64" "$SW_DIR" 2>/dev/null | awk -F: '{n += $NF} END {print n + 0}')"
expect_contains "the start warns about the open data directory" "is open to other users (mode 0755)" \
    "$(cat "$SW_LOG")"

# an older run's store file, 0644: narrowed at the next start
sw_stop_server
chmod 0644 "$SW_DIR/state.db"
sw_start_server
expect_eq "state.db is 0600 again after a restart" 600 "$(stat -c %a "$SW_DIR/state.db")"
sw_stop_server

# a data directory slipway creates (sw_start_server would make it itself)
FRESH=$SW_TMP/fresh-data
PORT=$(sw_free_port)
"$SLIPWAY" server --data-dir "$FRESH" --listen "127.0.0.1:$PORT" >"$SW_TMP/fresh.log" 2>&1 </dev/null &
FPID=$!
SW_BG_PIDS+=("$FPID")
has_kubeconfig() { [ -s "$FRESH/admin.kubeconfig" ]; }
wait_for "the second server writes its kubeconfig" 20 has_kubeconfig
expect_eq "a data directory slipway creates is 0700" 700 "$(stat -c %a "$FRESH")"
expect_eq "its files are 0600 too" "" "$(find "$FRESH" -type f -perm /077 -printf '%m %p\n')"
kill -TERM "$FPID"
wait "$FPID"
expect_not_contains "and it draws no warning" "open to other users" "$(cat "$SW_TMP/fresh.log")"
