#!/usr/bin/env node
// Writes test/support/file-seconds.json (how long each test file ran, in seconds) from a vitest JSON
// report, for the longest-first sequencer (test/support/longest-first-sequencer.ts):
//   npx vitest run --reporter=default --reporter=json --outputFile=/tmp/vitest.json
//   node scripts/file-seconds.mjs /tmp/vitest.json
import { readFileSync, writeFileSync } from "node:fs";
import { relative, resolve } from "node:path";

const report = process.argv[2];
if (report === undefined) {
  console.error("usage: node scripts/file-seconds.mjs <vitest-json-report>");
  process.exit(2);
}
const root = resolve(import.meta.dirname, "..");
const seconds = {};
for (const file of JSON.parse(readFileSync(report, "utf8")).testResults) {
  seconds[relative(root, file.name)] = Math.round((file.endTime - file.startTime) / 100) / 10;
}
const sorted = Object.fromEntries(Object.entries(seconds).sort(([a], [b]) => a.localeCompare(b)));
writeFileSync(resolve(root, "test/support/file-seconds.json"), `${JSON.stringify(sorted, null, 2)}\n`);
console.log(`test/support/file-seconds.json: ${Object.keys(sorted).length} files`);
