#!/bin/bash
# hook_relay.sh SPOOL MAX_PAYLOAD: the container's half of the hook transport (bash and
# coreutils only), run as root.
#
# Started by the harness as the process of one `docker exec` with stdin attached. The first
# line of stdin is the attempt's secret TOKEN (never in argv, the environment or a file).
# The relay lays out the spool (below), says "READY TOKEN PID" on stdout, and then
#   - for each "ID EVENT" line a hook shim writes to the FIFO SPOOL/requests, takes the
#     payload SPOOL/inbox/ID.in out of the agent's reach and sends it up as one line:
#       REQ TOKEN ID EVENT BASE64(payload)
#     (a payload over MAX_PAYLOAD bytes goes up as "BIG TOKEN ID EVENT SIZE"; a symlink or
#     anything but a plain file as "ODD TOKEN ID"; both are answered empty)
#   - every second, "HB TOKEN" (the host notices a relay that is stopped or gone)
#   - for each line the host sends down:  ANS TOKEN ID BASE64(answer)
#     writes the answer to SPOOL/answers/ID.out (atomically: .part, then rename), where the
#     waiting shim picks it up; a line without the token is ignored.
#   - for each "done ID" line on the FIFO (the shim has read its answer), removes the answer.
# When the host closes the stream (the attempt ends), the relay exits.
#
# The spool, all root's: the FIFO (0622: anyone may submit), inbox/ (1733: anyone may drop
# a file, nobody else may list, rename or delete it), answers/ (0755: only the relay
# writes; a shim of any user reads its answer), work/ (0700: payloads being sent).
set -u
spool=$1
max_payload=$2
IFS= read -r token || exit 1
case $token in '' | *[!0-9a-f]*) echo "hook_relay: no token on stdin" >&2; exit 1 ;; esac
umask 022
rm -rf "$spool"
mkdir -p "$spool/inbox" "$spool/answers" "$spool/work"
chown root:root "$spool" "$spool/inbox" "$spool/answers" "$spool/work" 2>/dev/null
chmod 0755 "$spool" "$spool/answers"
chmod 1733 "$spool/inbox"
chmod 0700 "$spool/work"
mkfifo -m 0622 "$spool/requests"
exec 3<>"$spool/requests"   # read-write: writers never block, EOF never comes
exec 4<&0
relay_pid=$$
# The host closed the stream: the attempt is over, no shim waits for an answer any more.
trap 'rm -rf "$spool"/answers/* "$spool"/work/*; exit 0' TERM

valid_id() { case $1 in '' | *[!0-9-]*) return 1 ;; esac; }

answer() {  # answer ID DATA-BASE64: the shim's answer file, written atomically
  if printf '%s' "$2" | base64 -d > "$spool/answers/$1.part" 2>/dev/null; then
    mv -f "$spool/answers/$1.part" "$spool/answers/$1.out"
  else
    rm -f "$spool/answers/$1.part"
  fi
}

answers() {
  local kind tok id data
  while IFS=' ' read -r kind tok id data; do
    [ "$kind" = ANS ] && [ "$tok" = "$token" ] && valid_id "$id" || continue
    answer "$id" "$data"
  done
  kill -TERM "$relay_pid" 2>/dev/null
}
# Not on stdout: when the relay is killed, its stream must end with it.
answers <&4 >/dev/null &
answers_pid=$!

send() {  # send ID EVENT: the request's payload, taken out of the inbox first
  local id=$1 event=$2 work="$spool/work/$1" size
  # rename does not follow a symlink; in work/ the agent can no longer swap the file.
  mv -fT "$spool/inbox/$id.in" "$work" 2>/dev/null || return 0
  if [ -L "$work" ] || [ ! -f "$work" ] || [ "$(stat -c %h "$work")" != 1 ]; then
    rm -rf "$work"  # a folder too
    printf 'ODD %s %s\n' "$token" "$id"
    return 0
  fi
  size=$(stat -c %s "$work")
  if [ "$size" -gt "$max_payload" ]; then
    printf 'BIG %s %s %s %s\n' "$token" "$id" "$event" "$size"
  else
    # Streamed, not held in a bash string (25 times faster for a large payload); one
    # writer, so a heartbeat never lands inside the line.
    printf 'REQ %s %s %s ' "$token" "$id" "$event"
    base64 -w0 < "$work"
    printf '\n'
  fi
  rm -f "$work"
}

printf 'READY %s %s\n' "$token" "$$"
beat=$SECONDS
while :; do
  if IFS=' ' read -r -t 1 id event <&3; then
    if [ "$id" = done ]; then
      valid_id "$event" && rm -f "$spool/answers/$event.out"
    elif valid_id "$id"; then
      case $event in '' | *[!A-Za-z]*) ;; *) send "$id" "$event" ;; esac
    fi
  fi
  if [ "$SECONDS" != "$beat" ]; then
    beat=$SECONDS
    kill -0 "$answers_pid" 2>/dev/null || exit 1  # its half was killed: the relay is lost
    printf 'HB %s\n' "$token"
  fi
done
