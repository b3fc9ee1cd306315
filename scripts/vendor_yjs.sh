#!/usr/bin/env bash
# Build js/vendor/yjs.mjs: Yjs (the CRDT the shared editor keeps its replica in) and lib0, which
# it imports, bundled into one ES module for the browser, with the licence of every package in
# the bundle at its top. The panel loads it at run time (see loadYjs in js/session_panel.js).
#
# Run it once when Yjs is to be updated, and commit its output: nothing builds it on install.
#   bash scripts/vendor_yjs.sh            # the versions pinned below
#   YJS_VERSION=13.6.34 LIB0_VERSION=0.2.121 bash scripts/vendor_yjs.sh
# It needs node and npm; npm installs Yjs and esbuild into a temporary folder, removed after.
set -euo pipefail

YJS_VERSION="${YJS_VERSION:-13.6.33}"
LIB0_VERSION="${LIB0_VERSION:-0.2.120}"  # what Yjs imports; pinned too, so a rerun is the same
ESBUILD_VERSION="${ESBUILD_VERSION:-0.28.2}"

repo="$(cd "$(dirname "$0")/.." && pwd)"
out="$repo/js/vendor/yjs.mjs"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

cd "$work"
npm init -y >/dev/null
npm install --silent --no-audit --no-fund --save-exact \
  "yjs@$YJS_VERSION" "lib0@$LIB0_VERSION" "esbuild@$ESBUILD_VERSION"

# The bundle re-exports all of Yjs, so the panel may use any of its functions.
echo 'export * from "yjs";' > entry.mjs
npx --no-install esbuild entry.mjs --bundle --format=esm --platform=browser --target=es2020 \
  --minify --legal-comments=none --metafile=meta.json --outfile=bundle.mjs --log-level=warning

# The header: what this is, how it was made, and each bundled package's licence in full.
node --input-type=module - "$work" > header.txt <<'NODE'
import { readFileSync, readdirSync, existsSync } from "node:fs";
import { join, dirname } from "node:path";
const work = process.argv[2];
const meta = JSON.parse(readFileSync(join(work, "meta.json"), "utf8"));
// Every package one of the bundle's inputs came from, found by its package.json.
const packages = new Map();
for (const input of Object.keys(meta.inputs)) {
  if (!input.startsWith("node_modules/")) continue; // the entry file itself
  let dir = dirname(join(work, input));
  while (dir.startsWith(join(work, "node_modules")) && !existsSync(join(dir, "package.json"))) {
    dir = dirname(dir);
  }
  if (!existsSync(join(dir, "package.json"))) continue;
  const pkg = JSON.parse(readFileSync(join(dir, "package.json"), "utf8"));
  if (pkg.name && !packages.has(pkg.name)) packages.set(pkg.name, { dir, pkg });
}
const lines = [
  "// Yjs for the cogym_lab session panel: one ES module, made by scripts/vendor_yjs.sh (do not",
  "// edit it; run the script again). It bundles these packages, minified, under the licences",
  "// below:",
];
for (const [name, { pkg }] of [...packages].sort()) {
  lines.push(`//   ${name} ${pkg.version} (${pkg.license || "see below"})`);
}
lines.push("/*");
for (const [name, { dir, pkg }] of [...packages].sort()) {
  const file = readdirSync(dir).find((f) => /^licen[cs]e(\.(md|txt))?$/i.test(f));
  if (!file) throw new Error(`${name} has no licence file`);
  const text = readFileSync(join(dir, file), "utf8").replaceAll("*/", "* /").trimEnd();
  lines.push("", `${name} ${pkg.version}: ${file}`, "", text);
}
lines.push("*/");
console.log(lines.join("\n"));
NODE

mkdir -p "$(dirname "$out")"
cat header.txt bundle.mjs > "$out"
echo "wrote $out ($(wc -c < "$out") bytes)"
