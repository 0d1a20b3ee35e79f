#!/bin/bash
# hook_relay.sh SPOOL: the container's half of the hook transport (bash and coreutils only).
#
# Started by the harness as the process of one `docker exec` with stdin attached. It makes
# the FIFO SPOOL/requests, says "READY <pid>" on stdout, and then
#   - for each "ID EVENT" line a hook shim writes to the FIFO, sends the payload file
#     SPOOL/ID.in up as one line:  REQ ID EVENT BASE64(payload)
#   - for each line the host sends down:  ANS ID BASE64(answer)
#     writes the answer to SPOOL/ID.out (atomically: .part, then rename), where the
#     waiting shim picks it up.
# When the host closes the stream (the attempt ends), the relay exits.
set -u
spool=$1
mkdir -p "$spool"
chmod 0733 "$spool"
rm -f "$spool/requests"
mkfifo -m 0622 "$spool/requests"
exec 3<>"$spool/requests"   # read-write: writers never block, EOF never comes
exec 4<&0
relay_pid=$$

answers() {
  local kind id data
  while IFS=' ' read -r kind id data; do
    [ "$kind" = ANS ] || continue
    case $id in '' | *[!0-9-]*) continue ;; esac
    if printf '%s' "$data" | base64 -d > "$spool/$id.part" 2>/dev/null; then
      mv -f "$spool/$id.part" "$spool/$id.out"
    else
      rm -f "$spool/$id.part"
    fi
  done
  kill -TERM "$relay_pid" 2>/dev/null
}
answers <&4 &

printf 'READY %s\n' "$$"
while IFS=' ' read -r id event <&3; do
  case $id in '' | *[!0-9-]*) continue ;; esac
  case $event in '' | *[!A-Za-z]*) continue ;; esac
  [ -f "$spool/$id.in" ] || continue
  printf 'REQ %s %s %s\n' "$id" "$event" "$(base64 -w0 < "$spool/$id.in")"
  rm -f "$spool/$id.in"
done
