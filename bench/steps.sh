# Sourced by bench/llm_peers.sh and bench/llm_tune_ab.sh: the steps of one
# device call under a deadline. Needs START (date +%s at the start),
# DEADLINE_S (seconds from START) and LOG (the file the steps append to).
left() { echo $(( DEADLINE_S - ($(date +%s) - START) )); }
step() { # step NAME SECONDS CMD...: runs CMD with a timeout, if the deadline allows
  local name=$1 need=$2; shift 2
  if [ "$(left)" -lt "$need" ]; then echo "== $name: skipped ($(left) s left)" >>"$LOG"; return 1; fi
  echo "== $name" >>"$LOG"
  timeout "$(left)" "$@" >>"$LOG" 2>&1 || echo "== $name: failed or timed out (rc $?)" >>"$LOG"
}
