#!/bin/bash
# hook_relay.sh SPOOL MAX_PAYLOAD [MODE ...]: the box's half of the hook transport (bash and
# coreutils only), run as the box's harness user (root in a container).
#
# Two ways to run it, one spool and one protocol (the host's HookServer reads the same
# lines from both):
#   - a stream (no MODE): the relay below, for a box with a stream (Docker's exec);
#   - one-shot (MODE is setup, collect, deliver or clear, then the TOKEN): one call per
#     step, for a box whose provider offers only one-shot exec (FileStream, files.py):
#       setup TOKEN            lay out the spool (no FIFO: the shim then polls), say READY
#       collect TOKEN WAIT_S   send up every request in the inbox, waiting up to WAIT_S
#                              seconds for the first; then one "HB TOKEN"
#       deliver TOKEN ID DATA  write the answer DATA (base64; "-": the file work/ID.ans)
#                              for the request ID where its shim waits
#       clear TOKEN            remove every answer and request (the attempt is over)
#     In one-shot mode the token travels in argv and guards nothing: no process of the
#     agent can write into the output of the harness's own exec.
#
# As a stream: started by the harness as the process of one `docker exec` with stdin attached. The first
# line of stdin is the attempt's secret TOKEN (never in argv, the environment or a file).
# The relay lays out the spool (below), says "READY TOKEN PID" on stdout, and then
#   - takes every request SPOOL/inbox/ID.EVENT.in a hook shim left (its first line the
#     shim's answer KEY, the rest the payload) out of the agent's reach and sends it up as
#     one line:
#       REQ TOKEN ID EVENT BASE64(payload)
#     (a payload over MAX_PAYLOAD bytes goes up as "BIG TOKEN ID EVENT SIZE"; a symlink,
#     anything but a plain file, a name or key of the wrong shape as "ODD TOKEN ID"; both
#     are answered empty). It looks whenever a line arrives on the FIFO SPOOL/requests
#     (the shim's "ID EVENT" wake-up) and every second, so a request whose line was
#     merged with garbage is still served.
#   - every second, "HB TOKEN" (the host notices a relay that is stopped or gone)
#   - for each line the host sends down:  ANS TOKEN ID BASE64(answer)
#     writes the answer to SPOOL/answers/KEY.out (atomically: .part, then rename), where
#     the waiting shim, the only one that knows KEY, picks it up; a line without the token
#     is ignored.
#   - for each "done ID KEY" line on the FIFO (the shim has read its answer), removes the
#     answer; a "done" for an answer it did not deliver (or with another key) goes up as
#     "STRAY TOKEN", any other line it cannot parse as "GARBAGE TOKEN" (both tamper).
# When the host closes the stream (the attempt ends), the relay exits.
#
# The spool, all root's: the FIFO (0622: anyone may submit), inbox/ (1733: anyone may drop
# a file, nobody else may list, rename or delete it), answers/ (0711: only the relay
# writes, nobody lists; a shim reads the answer whose name it alone knows), work/ (0700:
# payloads being sent, each request's key).
set -u
spool=$1
max_payload=$2
mode=${3:-stream}
if [ "$mode" = stream ]; then
  IFS= read -r token || exit 1
else
  token=${4:-}
fi
case $token in '' | *[!0-9a-f]*) echo "hook_relay: no token" >&2; exit 1 ;; esac
umask 022
sent=0  # requests sent up by this process

layout() {  # the spool, empty, all root's; the FIFO only for a relay that reads it
  rm -rf "$spool"
  mkdir -p "$spool/inbox" "$spool/answers" "$spool/work"
  chown root:root "$spool" "$spool/inbox" "$spool/answers" "$spool/work" 2>/dev/null
  chmod 0755 "$spool"
  chmod 0711 "$spool/answers"
  chmod 1733 "$spool/inbox"
  chmod 0700 "$spool/work"
}

valid_id() { case $1 in '' | *[!0-9-]*) return 1 ;; esac; }
valid_key() { case $1 in '' | *[!0-9a-f]*) return 1 ;; esac; [ "${#1}" -eq 32 ]; }

answer() {  # answer ID DATA-BASE64: the shim's answer file (named by its key), atomically
  local key
  IFS= read -r key < "$spool/work/$1.key" 2>/dev/null && valid_key "$key" || return 0
  if printf '%s' "$2" | base64 -d > "$spool/answers/$key.part" 2>/dev/null; then
    mv -f "$spool/answers/$key.part" "$spool/answers/$key.out"
  else
    rm -f "$spool/answers/$key.part"
  fi
}

send() {  # send ID EVENT: the request's payload, taken out of the inbox first
  local id=$1 event=$2 work="$spool/work/$1" size key
  # rename does not follow a symlink; in work/ the agent can no longer swap the file.
  mv -fT "$spool/inbox/$id.$event.in" "$work" 2>/dev/null || return 0
  sent=$((sent + 1))
  if [ -L "$work" ] || [ ! -f "$work" ] || [ "$(stat -c %h "$work")" != 1 ] ||
     ! IFS= read -r key < "$work" || ! valid_key "$key" || [ -e "$work.key" ]; then
    rm -rf "$work"  # a folder too
    printf 'ODD %s %s\n' "$token" "$id"
    return 0
  fi
  printf '%s\n' "$key" > "$work.key"
  size=$(( $(stat -c %s "$work") - 33 ))
  if [ "$size" -gt "$max_payload" ]; then
    printf 'BIG %s %s %s %s\n' "$token" "$id" "$event" "$size"
  else
    # Streamed, not held in a bash string (25 times faster for a large payload); one
    # writer, so a heartbeat never lands inside the line.
    printf 'REQ %s %s %s ' "$token" "$id" "$event"
    tail -c +34 "$work" | base64 -w0
    printf '\n'
  fi
  rm -f "$work"
}

sweep() {  # every request waiting in the inbox, whatever the FIFO said
  local path name id event
  for path in "$spool"/inbox/*.in; do
    [ -e "$path" ] || [ -L "$path" ] || continue
    name=${path##*/}; name=${name%.in}; id=${name%%.*}; event=${name#*.}
    if [ "$id" != "$name" ] && valid_id "$id" && [ -n "$event" ] &&
       [ "${event//[A-Za-z]/}" = "" ]; then
      send "$id" "$event"
    else
      rm -rf "$path"
      sent=$((sent + 1))
      printf 'ODD %s %s\n' "$token" "0-0"
    fi
  done
}

case $mode in
  stream) ;;
  setup)
    layout
    printf 'READY %s %s\n' "$token" "$$"
    exit 0 ;;
  collect)  # polls every 50 ms: no FIFO wakes a one-shot call
    polls=$(( ${5:-1} * 20 ))
    sweep
    while [ "$sent" -eq 0 ] && [ "$polls" -gt 0 ]; do
      sleep 0.05
      polls=$((polls - 1))
      sweep
    done
    printf 'HB %s\n' "$token"
    exit 0 ;;
  deliver)
    valid_id "${5:-}" || exit 1
    if [ "${6:-}" = - ]; then
      answer "$5" "$(cat "$spool/work/$5.ans")"
      rm -f "$spool/work/$5.ans"
    else
      answer "$5" "${6:-}"
    fi
    rm -f "$spool/work/$5.key"  # one answer a request: no shim reports "done" here
    exit 0 ;;
  clear)
    rm -rf "$spool"/answers/* "$spool"/work/* "$spool"/inbox/*
    exit 0 ;;
  *) echo "hook_relay: no mode $mode" >&2; exit 1 ;;
esac

layout
mkfifo -m 0622 "$spool/requests"
exec 3<>"$spool/requests"   # read-write: writers never block, EOF never comes
exec 4<&0
relay_pid=$$
# The host closed the stream: the attempt is over, no shim waits for an answer any more.
trap 'rm -rf "$spool"/answers/* "$spool"/work/*; exit 0' TERM

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

finish() {  # finish ID KEY: the shim read its answer
  local key
  if valid_id "$1" && valid_key "$2" && IFS= read -r key < "$spool/work/$1.key" 2>/dev/null &&
     [ "$key" = "$2" ] && [ -e "$spool/answers/$2.out" ]; then
    rm -f "$spool/answers/$2.out" "$spool/work/$1.key"
  else
    printf 'STRAY %s\n' "$token"
  fi
}

printf 'READY %s %s\n' "$token" "$$"
beat=$SECONDS
while :; do
  if IFS= read -r -t 1 line <&3; then
    read -r id event rest <<< "$line"
    if [ "$id" = done ] && [ -n "$event" ]; then
      finish "$event" "$rest"
    elif ! valid_id "$id" || [ -n "$rest" ] || [ -z "$event" ] ||
         [ "${event//[A-Za-z]/}" != "" ]; then
      printf 'GARBAGE %s\n' "$token"
    fi
    sweep
  elif [ -n "${line:-}" ]; then  # a partial line: no shim writes one (theirs are atomic)
    printf 'GARBAGE %s\n' "$token"
  fi
  line=
  if [ "$SECONDS" != "$beat" ]; then
    beat=$SECONDS
    kill -0 "$answers_pid" 2>/dev/null || exit 1  # its half was killed: the relay is lost
    sweep
    printf 'HB %s\n' "$token"
  fi
done
