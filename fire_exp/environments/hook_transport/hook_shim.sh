#!/bin/sh
# fire-exp-hook EVENT: the hook command of a coding CLI running inside an attempt's container.
#
# It forwards one hook call (the CLI's JSON on stdin) to the policy bridge on the host and
# prints the bridge's answer. POSIX sh and coreutils only (cat, mv, rm, date, sleep,
# timeout): no Python, no socat, no network. The way out is the hook relay
# (hook_relay.sh), a process of the harness in the same container whose stdin and stdout
# are a `docker exec` stream to the host: this shim leaves the payload in the spool's inbox
# (which nobody else can list) and names it on the relay's FIFO; the relay sends it up; the
# answer comes back as a file in answers/, which only the relay (root) can write, so an
# agent that does not run as root can neither forge an answer nor rewrite this file. It
# runs as whichever user the CLI runs as. The policies, their state and the activity log
# never enter the container.
#
# Exit status: 0 with the answer (possibly empty) on stdout; 1 (a non-blocking hook
# error for both CLIs) when the relay is gone or does not answer in time. Never 2, which
# would block the agent.
set -u
spool=${FIRE_HOOK_SPOOL:-/opt/fire-exp/hooks}
event=${1:-}
case $event in
  '' | *[!A-Za-z]*) echo "fire-exp-hook: usage: fire-exp-hook EVENT" >&2; exit 1 ;;
esac
id="$$-$(date +%s%N)"
umask 077
if ! cat > "$spool/inbox/$id.part" || ! mv "$spool/inbox/$id.part" "$spool/inbox/$id.in"
then
  rm -f "$spool/inbox/$id.part"
  echo "fire-exp-hook: cannot write to $spool/inbox" >&2; exit 1
fi
# One short line (< PIPE_BUF) is written atomically, so concurrent hooks do not interleave.
# The relay keeps the FIFO open; if it is gone, opening it would block: hence the timeout.
if ! timeout 5 sh -c 'printf "%s %s\n" "$1" "$2" > "$3"' sh "$id" "$event" "$spool/requests"
then
  rm -f "$spool/inbox/$id.in"
  echo "fire-exp-hook: the hook relay is not running" >&2; exit 1
fi
waited=0
limit=$(( ${FIRE_HOOK_WAIT_S:-600} * 50 ))
while [ ! -e "$spool/answers/$id.out" ]; do
  if [ "$waited" -ge "$limit" ]; then
    echo "fire-exp-hook: no answer from the policy bridge" >&2; exit 1
  fi
  sleep 0.02
  waited=$((waited + 1))
done
cat "$spool/answers/$id.out"
# The relay removes the answer (answers/ is not ours to write).
timeout 5 sh -c 'printf "done %s\n" "$1" > "$2"' sh "$id" "$spool/requests"
exit 0
