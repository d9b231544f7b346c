/**
 * `npm run demo -- --once` as a user runs it: `node bin/mpf.cjs demo --once` as a real process
 * against the test's Temporal server (TEMPORAL_ADDRESS), both flows end to end over the gateway,
 * then a clean exit 0. The workflows it names are then checked on the server itself. The
 * interactive demo's console sign-in links are followed as a browser does.
 */
import { describe, test, after } from 'node:test';
import assert from 'node:assert/strict';
import { Client, Connection } from '@temporalio/client';
import { clientDataConverter } from '../../src/codec/data-converter';
import { generateDevKeys } from '../../src/codec/keys';
import { FLOW_STATE } from '../../src/workflows/search-attributes';
import { ConsoleBrowser, textOf } from '../helpers/console';
import { runMpf, spawnMpf } from '../helpers/processes';
import { eventually } from '../helpers/stack';
import { getTestTemporal } from '../helpers/temporal';

after(async () => {
  await (await getTestTemporal()).shutdown();
});

describe('mpf demo --once', () => {
  test('runs the swap to confirmed and the payment link to paid, then exits 0', { timeout: 200_000 }, async () => {
    const temporal = await getTestTemporal();
    const keys = generateDevKeys();
    const keep = ['PATH', 'HOME', 'TMPDIR', 'LANG', 'CHROMIUM_PATH', 'TEMPORAL_CLI_PATH'];
    const env: NodeJS.ProcessEnv = {
      ...Object.fromEntries(keep.filter((k) => process.env[k]).map((k) => [k, process.env[k]])),
      TEMPORAL_ADDRESS: temporal.address,
      TEMPORAL_NAMESPACE: temporal.namespace,
      PAYLOAD_ENCRYPTION_KEYS: keys,
    };
    const r = await runMpf(['demo', '--once'], env, { timeoutMs: 180_000 });
    const out = r.stdout;
    assert.equal(r.code, 0, `exit ${r.code} ${r.signal ?? ''}\nstdout:\n${out}\nstderr:\n${r.stderr}`);

    const lines = out.trimEnd().split('\n');
    assert.ok(lines.every((l) => l.startsWith('[demo] ')), out);
    assert.match(out, new RegExp(`using the Temporal server at ${temporal.address.replace(/\./g, '\\.')} \\(TEMPORAL_ADDRESS\\)`));
    const swapId = /swap (swap-demo-swap-\S+): confirmed/.exec(out)?.[1];
    const linkId = /payment link (paylink-demo-order-\S+): paid/.exec(out)?.[1];
    assert.ok(swapId, out);
    assert.ok(linkId, out);
    assert.match(out, /rate 1 USD = 1500\.25 NGN; 100 USD -> 150,025 NGN; confirm before \d{4}-/);
    assert.match(out, /pay_link: http:\/\/127\.0\.0\.1:\d+\/pay\?/);
    assert.match(out, /paying (in headless Chromium|through the simulator's control API)/);
    assert.match(out, /(landed on|is sent to) http:\/\/127\.0\.0\.1:\d+\/return\?/);
    assert.match(out, /notification received \S+: outcome paid, applied/);
    assert.match(out, /swap confirmed, payment link paid: OK/);
    assert.match(lines.at(-1) ?? '', /^\[demo\] stopped$/);
    // The wallet PIN never shows.
    assert.doesNotMatch(`${out}\n${r.stderr}`, /\b1234\b/, 'the PIN was printed');

    // The flows really ran on the server: their state search attribute and result say so.
    const connection = await Connection.connect({ address: temporal.address });
    try {
      // The demo was given our keys, so its encrypted payloads (memo, result) decode here.
      const client = new Client({ connection, namespace: temporal.namespace, dataConverter: clientDataConverter(keys) });
      for (const [id, state] of [
        [swapId, 'confirmed'],
        [linkId, 'paid'],
      ] as const) {
        const d = await client.workflow.getHandle(id).describe();
        assert.equal(d.status.name, 'COMPLETED', id);
        assert.equal(d.typedSearchAttributes.get(FLOW_STATE), state, id);
        // The result (the final view) is encrypted with the keys the demo was given.
        const view = (await client.workflow.getHandle(id).result()) as { state: string };
        assert.equal(view.state, state, id);
      }
    } finally {
      await connection.close();
    }
  });

  test("the interactive demo prints one-time console links that sign in as their role, and stopped with Ctrl-C leaves no flow waiting: its PIN-page swap ends cancelled", { timeout: 200_000 }, async () => {
    const temporal = await getTestTemporal();
    const keys = generateDevKeys();
    const demo = spawnMpf(['demo'], { TEMPORAL_ADDRESS: temporal.address, TEMPORAL_NAMESPACE: temporal.namespace, PAYLOAD_ENCRYPTION_KEYS: keys });
    try {
      const [, swapId] = await demo.waitFor(/PIN page: +http:\/\/[^ ]+\/pin\/(swap-[^#\s]+)#/, 180_000);
      const [, link] = await demo.waitFor(/as operator (http:\/\/127\.0\.0\.1:\d+\/console\/local-sign-in\?code=[\w-]+)/, 30_000);
      const origin = new URL(link!).origin;
      const b = new ConsoleBrowser(origin);
      const page = await b.get(link!);
      assert.equal(page.path, '/console/payments', page.html.slice(0, 300));
      assert.match(textOf(page.html), /Omar Operator · operator/);
      await eventually(async () => (await b.get('/console/payments')).html.includes(`/console/payments/${swapId}"`), 20_000, "the demo's swap listed");
      assert.equal((await new ConsoleBrowser(origin).get(link!)).status, 403, 'the link signs in once');
      await demo.kill('SIGINT');
      assert.match(demo.output(), new RegExp(`cancelled ${swapId} \\(the demo stopped\\)`));
      const connection = await Connection.connect({ address: temporal.address });
      try {
        const client = new Client({ connection, namespace: temporal.namespace, dataConverter: clientDataConverter(keys) });
        const view = (await client.workflow.getHandle(swapId!).result()) as { state: string };
        assert.equal(view.state, 'cancelled');
      } finally {
        await connection.close();
      }
    } finally {
      await demo.kill('SIGKILL');
    }
  });
});
