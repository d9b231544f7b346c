/**
 * The configuration reference in docs/configuration.md is generated from the zod environment
 * schemas (scripts/config-docs.ts): these tests fail when the two drift apart.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { describe, test } from 'node:test';
import { CONFIG_DOC, configTable, environmentVariables, renderConfigDoc } from '../../scripts/config-docs';

describe('the configuration reference (docs/configuration.md)', () => {
  const doc = fs.readFileSync(CONFIG_DOC, 'utf8');

  test('is what `npm run docs:config` generates from the schema now', () => {
    assert.equal(doc, renderConfigDoc(doc), 'docs/configuration.md is stale: run `npm run docs:config` and commit it');
  });

  test('lists every variable of the schemas (processes, CLI, read directly), each with a description', () => {
    const { markdown, undocumented } = configTable();
    assert.deepEqual(undocumented, [], 'give each variable a doc comment in src/config');
    const names = environmentVariables();
    for (const name of ['PAYLOAD_ENCRYPTION_KEYS', 'MERCHANT_WEBHOOK_SECRET', 'MPF_API_KEY', 'TEMPORAL_WEB_URL', 'OTEL_SERVICE_NAME']) assert.ok(names.includes(name), name);
    for (const name of names) assert.match(markdown, new RegExp(`^\\| \`${name}\` \\|`, 'm'), name);
  });

  test('would notice a variable missing from the page (the check can fail)', () => {
    const withoutOne = doc.replace(/^\| `LOG_LEVEL` .*\n/m, '');
    assert.notEqual(withoutOne, doc);
    assert.notEqual(renderConfigDoc(withoutOne), withoutOne);
  });

  test('marks secrets, and gives defaults as the schema yields them', () => {
    const { markdown } = configTable();
    assert.match(markdown, /^\| `GATEWAY_API_KEY` \| {2}\| secret \|/m);
    assert.match(markdown, /^\| `TEMPORAL_TASK_QUEUE` \| `merchant-payment-flows` \| {2}\|/m);
    assert.match(markdown, /^\| `SWAP_PIN_MAX_ATTEMPTS` \| `3` \|/m);
  });
});
