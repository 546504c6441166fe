// Verifies recorded webhook deliveries with the official Standard Webhooks
// library for TypeScript/JavaScript (`standardwebhooks` on npm, the version
// pinned in package.json and package-lock.json), as a receiver written for
// Node.js would: the `whsec_` key exactly as the service showed it, the raw
// body bytes, the request headers.
//
// Run by server/tests/api/standard_libraries.rs, with the library installed
// under PREFIX (`npm ci --prefix PREFIX` with this folder's package.json and
// package-lock.json; .ci/run does it):
//
//     node verify.mjs --prefix PREFIX --version
//     node verify.mjs --prefix PREFIX [--clock-offset SECONDS] DELIVERIES
//
// DELIVERIES holds one JSON object per line: {"key": "whsec_...", "headers":
// {name: value}, "body_hex": "<the body, hex>"}. For each, one line is
// printed: {"verified": true} or {"verified": false, "error": "<the
// library's message>"}.
//
// --clock-offset moves the library's clock that many seconds ahead, to show
// what a receiver does with a delivery replayed that much later. The
// headers and body are never changed: the library reads the time with
// `Date.now()` (in `Webhook.verifyTimestamp`), and that function alone is
// replaced, by one that is ahead.

import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { join } from "node:path";
import { parseArgs } from "node:util";

const { values, positionals } = parseArgs({
  options: {
    prefix: { type: "string" },
    version: { type: "boolean", default: false },
    "clock-offset": { type: "string", default: "0" },
  },
  allowPositionals: true,
});
if (!values.prefix) {
  console.error("--prefix PREFIX is required: where the library is installed");
  process.exit(2);
}
const require = createRequire(join(values.prefix, "package.json"));
const { Webhook, WebhookVerificationError } = require("standardwebhooks");

if (values.version) {
  const manifest = require("standardwebhooks/package.json");
  console.log(`standardwebhooks ${manifest.version}`);
  process.exit(0);
}
if (positionals.length !== 1) {
  console.error("DELIVERIES is required");
  process.exit(2);
}
const offset = Number(values["clock-offset"]);
if (!Number.isFinite(offset)) {
  console.error(`--clock-offset ${values["clock-offset"]} is not a number`);
  process.exit(2);
}
if (offset !== 0) {
  const realNow = Date.now;
  Date.now = () => realNow() + offset * 1000;
}

for (const line of readFileSync(positionals[0], "utf8").split("\n")) {
  if (line.trim() === "") {
    continue;
  }
  const delivery = JSON.parse(line);
  const webhook = new Webhook(delivery.key);
  const body = Buffer.from(delivery.body_hex, "hex");
  let result;
  try {
    webhook.verify(body, delivery.headers);
    result = { verified: true };
  } catch (e) {
    if (!(e instanceof WebhookVerificationError)) {
      throw e;
    }
    result = { verified: false, error: e.message };
  }
  console.log(JSON.stringify(result));
}
