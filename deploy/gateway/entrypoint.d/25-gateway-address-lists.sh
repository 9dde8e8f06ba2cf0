#!/bin/sh
# Turns the gateway's two address lists into the files templates/gateway.conf.template includes,
# because nginx has no loops and envsubst cannot repeat a line per value. The official nginx image
# runs every executable /docker-entrypoint.d/*.sh before nginx (compose mounts this file there; the
# local stand-in image does the same), so the lists are rendered next to the template's output:
#   GATEWAY_NOTIFICATION_ALLOW  addresses or CIDRs that may POST /v2/notifications (default Apple's
#                               17.0.0.0/8; "0.0.0.0/0 ::/0" opens it, for demos only)
#                               -> gateway-notification-allow.inc: one `allow …;` each
#   GATEWAY_TRUSTED_PROXIES     proxies whose X-Forwarded-For names the client (default none: the
#                               peer is the client) -> gateway-trusted-proxies.inc: `set_real_ip_from …;`
# Values are separated by spaces or commas. A bad value stops the start with one line naming it:
# an allow-list that silently lost an entry, or trusted every address, would fail open.
#   NGINX_ENVSUBST_OUTPUT_DIR   where the files go (the official image's output directory, /etc/nginx/conf.d)
set -eu
set -f  # values are never globbed

out="${NGINX_ENVSUBST_OUTPUT_DIR:-/etc/nginx/conf.d}"
allow="${GATEWAY_NOTIFICATION_ALLOW-17.0.0.0/8}"
trusted="${GATEWAY_TRUSTED_PROXIES-}"
bad=0

# valid_address VALUE: an IPv4 address (four decimal octets without leading zeros) or an IPv6
# address (hex groups and colons; nginx parses the rest), each with an optional /prefix within its
# family's length.
valid_address() {
  case "$1" in */*/* | */) return 1 ;; esac
  addr="${1%/*}" prefix=""
  case "$1" in */*) prefix="${1##*/}" ;; esac
  case "$addr" in
    *:*)
      case "$addr" in *[!0-9A-Fa-f:.]*) return 1 ;; esac
      max=128
      ;;
    *)
      case "$addr" in '' | *[!0-9.]* | .* | *. | *..*) return 1 ;; esac
      old_ifs="$IFS"; IFS=.
      # shellcheck disable=SC2086  # split on IFS=. into the four octets
      set -- $addr
      IFS="$old_ifs"
      [ "$#" -eq 4 ] || return 1
      for octet in "$@"; do
        case "$octet" in 0?*) return 1 ;; esac
        [ "${#octet}" -le 3 ] && [ "$octet" -le 255 ] || return 1
      done
      max=32
      ;;
  esac
  [ -z "$prefix" ] && return 0
  case "$prefix" in *[!0-9]* | 0?*) return 1 ;; esac
  [ "${#prefix}" -le 3 ] && [ "$prefix" -le "$max" ]
}

# render VARIABLE VALUE DIRECTIVE FILE: one `DIRECTIVE value;` line per value into FILE.
render() {
  tmp="$4.tmp"
  printf '# Rendered from %s by 25-gateway-address-lists.sh at start; do not edit.\n' "$1" >"$tmp"
  for value in $(printf '%s' "$2" | tr ',' ' '); do
    if ! valid_address "$value"; then
      echo "gateway: $1: \"$value\" is not an IPv4 or IPv6 address or CIDR" >&2
      bad=1
    elif [ "$3" = set_real_ip_from ] && [ "${value##*/}" = 0 ]; then
      echo "gateway: $1: \"$value\" trusts every address as a proxy, so any client could name its own address" >&2
      bad=1
    else
      printf '%s %s;\n' "$3" "$value" >>"$tmp"
    fi
  done
  mv "$tmp" "$4"
}

if [ -z "$(printf '%s' "$allow" | tr -d ', \t\n')" ]; then
  echo "gateway: GATEWAY_NOTIFICATION_ALLOW is empty: name who may post notifications (Apple: 17.0.0.0/8; 0.0.0.0/0 ::/0 opens it)" >&2
  bad=1
fi
mkdir -p "$out"
render GATEWAY_NOTIFICATION_ALLOW "$allow" allow "$out/gateway-notification-allow.inc"
render GATEWAY_TRUSTED_PROXIES "$trusted" set_real_ip_from "$out/gateway-trusted-proxies.inc"
if [ "$bad" -ne 0 ]; then
  rm -f "$out/gateway-notification-allow.inc" "$out/gateway-trusted-proxies.inc"
  exit 1
fi
allowed="$(sed -n 's/^allow \(.*\);$/\1/p' "$out/gateway-notification-allow.inc" | tr '\n' ' ')"
proxies="$(sed -n 's/^set_real_ip_from \(.*\);$/\1/p' "$out/gateway-trusted-proxies.inc" | tr '\n' ' ')"
proxies="${proxies% }"
echo "gateway: /v2/notifications accepted from ${allowed% }; X-Forwarded-For trusted from ${proxies:-no proxy (the peer is the client)}"
