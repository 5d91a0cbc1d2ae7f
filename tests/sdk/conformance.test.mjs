// The conformance table (issue 12) as a test: every fault kind, streaming and non-streaming,
// through the official SDK of each wire format (conformance.mjs), must give exactly what
// conformance.expected.json records. A change of bytes that changes what a client sees fails here
// with the cells that moved. If the change is intended, regenerate the table with
//   node tests/sdk/conformance.mjs --write
// and paste the Markdown it prints into README.md ("What the official SDKs see").
import assert from 'node:assert/strict';
import { test } from 'node:test';

import { loadSdk } from './common.mjs';
import { PROVIDERS, cells, diffTables, readExpected, runTable, sdkVersions } from './conformance.mjs';

// Fail on loading (with the install log's tail) rather than record "throws …" in every cell.
for (const name of ['openai', '@anthropic-ai/sdk', '@google/genai']) loadSdk(name);
const expected = readExpected();
const regenerate = 'If the change is intended: node tests/sdk/conformance.mjs --write (and update README.md).';

test('the expected table was made with the pinned SDK versions', () => {
  assert.deepEqual(expected.sdks, sdkVersions(), `conformance.expected.json is for other SDK versions. ${regenerate}`);
});

for (const provider of PROVIDERS) {
  test(`${provider}: what the SDK yields and throws for each fault matches conformance.expected.json`, { timeout: 180_000 }, async () => {
    const observed = await runTable(cells([provider]));
    const diff = diffTables({ [provider]: expected.table[provider] ?? {} }, observed);
    assert.ok(diff.length === 0,
              `${diff.length} cell(s) of ${provider} differ from tests/sdk/conformance.expected.json:\n` +
              `${diff.join('\n')}\n${regenerate}`);
  });
}
