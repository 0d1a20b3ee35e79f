#!/bin/sh
# fire-exp-hook EVENT [SPOOL]: the hook command of a coding CLI running inside an attempt's box.
#
# It forwards one hook call (the CLI's JSON on stdin) to the policy bridge on the host and
# prints the bridge's answer. POSIX sh and coreutils only (cat, mv, rm, date, sleep,
# timeout, od, tr): no Python, no socat, no network. The way out is the hook relay
# (hook_relay.sh), a process of the harness in the same container whose stdin and stdout
# are a `docker exec` stream to the host: this shim leaves the payload, after a random
# KEY line, in the spool's inbox (which nobody else can list) and wakes the relay on its
# FIFO; the relay sends it up; the answer comes back as answers/KEY.out, which only the
# relay (root) can write and nobody can list, so an agent that does not run as root can
# neither forge an answer, nor read or remove one before the shim did, nor rewrite this
# file. KEY never appears in a command line before the answer is read. A box with no
# stream has no relay: its spool has no FIFO, and the harness's one-shot execs collect the
# request and write the answer in the same places (hook_relay.sh's one-shot modes). It runs as
# whichever user the CLI runs as. The policies, their state and the activity log never
# enter the container.
#
# Exit status: 0 with the answer (possibly empty) on stdout; 1 (a non-blocking hook
# error for both CLIs) when the relay is gone or does not answer in time, or the box has
# no process left to fork (the trap: the shell's own fatal errors exit 2); 0 once the
# answer is out, whatever happens to the "done" line after it. Never 2, which would block
# the agent.
trap 'st=$?; [ "${answered:-}" = 1 ] && exit 0; [ "$st" -eq 0 ] || exit 1' EXIT
set -u
spool=${2:-${FIRE_HOOK_SPOOL:-/opt/fire-exp/hooks}}
event=${1:-}
case $event in
  '' | *[!A-Za-z]*) echo "fire-exp-hook: usage: fire-exp-hook EVENT [SPOOL]" >&2; exit 1 ;;
esac
id="$$-$(date +%s%N)"
key=$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')
case $key in
  '' | *[!0-9a-f]*) echo "fire-exp-hook: no random key" >&2; exit 1 ;;
esac
umask 077
if ! { printf '%s\n' "$key" && cat; } > "$spool/inbox/$id.part" ||
   ! mv "$spool/inbox/$id.part" "$spool/inbox/$id.$event.in"
then
  rm -f "$spool/inbox/$id.part"
  echo "fire-exp-hook: cannot write to $spool/inbox" >&2; exit 1
fi
# One short line (< PIPE_BUF) is written atomically, so concurrent hooks do not interleave.
# The relay keeps the FIFO open; if it is gone, opening it would block: hence the timeout.
# No FIFO: no relay to wake (the harness polls the inbox); the spool is not the agent's to
# change, so only the harness's set-up decides which.
[ -p "$spool/requests" ] && wake=1 || wake=0
if [ "$wake" = 1 ] && ! timeout 5 sh -c 'printf "%s %s\n" "$1" "$2" > "$3"' sh "$id" "$event" "$spool/requests"
then
  rm -f "$spool/inbox/$id.$event.in"
  echo "fire-exp-hook: the hook relay is not running" >&2; exit 1
fi
waited=0
limit=$(( ${FIRE_HOOK_WAIT_S:-600} * 50 ))
while [ ! -e "$spool/answers/$key.out" ]; do
  if [ "$waited" -ge "$limit" ]; then
    echo "fire-exp-hook: no answer from the policy bridge" >&2; exit 1
  fi
  sleep 0.02
  waited=$((waited + 1))
done
cat < "$spool/answers/$key.out" && answered=1
# The relay removes the answer (answers/ is not ours to write).
[ "$wake" = 1 ] && timeout 5 sh -c 'printf "done %s %s\n" "$1" "$2" > "$3"' sh "$id" "$key" "$spool/requests"
exit 0
