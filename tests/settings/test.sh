#!/usr/bin/env bash
# The Settings screen in Debian's headless Chromium (playwright-core downloads no browser)
# against a real `postwire serve` and a loopback receiver: magic links, every page and
# flow, CSRF, escaping, axe-core on every page, and screenshots (light/dark × desktop/360 px)
# kept in target/settings-screenshots/ as CI artifacts. About a minute.
#
# Needs scripts/setup.sh and `npm ci` at the root. Builds the npm package first when
# npm/dist is missing (the verify box embeds its browser build), then postwire-cli.
# POSTWIRE_SETTINGS_KEEP=1 keeps the temporary folder (database, server log).
set -euo pipefail
cd "$(dirname "$0")/../.."
export PATH="$PWD/node_modules/.bin:$HOME/.cargo/bin:$PATH"
step() { printf '\n\033[1;32m[settings] %s\033[0m\n' "$*"; }

[ -d node_modules/playwright-core ] && [ -d node_modules/axe-core ] ||
  { echo "tests/settings/test.sh: run npm ci at the repository root first" >&2; exit 1; }
[ -x /usr/bin/chromium ] || { echo "tests/settings/test.sh: Debian's chromium is missing (scripts/setup.sh)" >&2; exit 1; }
if [ ! -f npm/dist/browser/index.js ]; then
  step "building the postwire npm package (npm/build.sh)"
  bash npm/build.sh
fi

step "building postwire-cli (the workspace's test build: scripts/workspace-tests.sh)"
POSTWIRE_BIN="$(bash scripts/workspace-tests.sh exe bin postwire)"
export POSTWIRE_BIN

step "Chromium against postwire serve"
rm -rf target/settings-screenshots
node --test tests/settings/settings.test.mjs
step "screenshots: $(ls target/settings-screenshots | wc -l) files in target/settings-screenshots/"
