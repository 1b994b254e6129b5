#!/bin/sh
# Fetches the charting library the dashboard embeds (uPlot, MIT) from the
# npm registry at the pinned version, checks it against the pinned digests
# and puts it in internal/dashboard/web/vendor/uplot. The files are
# committed: the binary serves them, so the dashboard works offline.
set -eu
VERSION=1.6.32
JS_SHA256=19c8d4c6ad88929a79f4ae49d6f7161566dfd0ba3d15cc495e974f787eb78f1f
CSS_SHA256=df630c6a8d6f8eeaff264b50f73ce5b114f646ffd9a0bb74f049b0a00135fa04
dest=$(cd "$(dirname "$0")/.." && pwd)/internal/dashboard/web/vendor/uplot
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
(cd "$tmp" && npm pack --silent "uplot@$VERSION" >/dev/null && tar xzf "uplot-$VERSION.tgz")
echo "$JS_SHA256  $tmp/package/dist/uPlot.iife.min.js" | sha256sum -c -
echo "$CSS_SHA256  $tmp/package/dist/uPlot.min.css" | sha256sum -c -
cp "$tmp/package/dist/uPlot.iife.min.js" "$tmp/package/dist/uPlot.min.css" "$tmp/package/LICENSE" "$dest/"
echo "uPlot $VERSION in $dest"
