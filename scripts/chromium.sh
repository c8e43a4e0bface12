#!/usr/bin/env bash
# Prints the path of a Chromium for the browser tests, installing Debian's package if needed
# (test tools cannot download their own browser here). Exits non-zero with a clear message if it cannot.
set -euo pipefail
for candidate in "${CHROMIUM_PATH:-}" /usr/bin/chromium /usr/bin/chromium-browser; do
  if [ -n "$candidate" ] && [ -x "$candidate" ]; then echo "$candidate"; exit 0; fi
done
if [ "$(id -u)" -ne 0 ] && ! command -v sudo >/dev/null; then
  echo "chromium.sh: Chromium is missing and cannot be installed without root (apt-get install chromium)" >&2
  exit 1
fi
as_root() { if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi; }
echo "chromium.sh: installing Debian's chromium package" >&2
export DEBIAN_FRONTEND=noninteractive
as_root apt-get update -qq >&2
as_root apt-get install -y -qq --no-install-recommends chromium fonts-dejavu-core >&2
[ -x /usr/bin/chromium ] || { echo "chromium.sh: /usr/bin/chromium missing after install" >&2; exit 1; }
echo /usr/bin/chromium
