/**
 * The gateway's OpenAPI document, fit for generators and people: the rules hold for every operation
 * (so routes added later are checked too), every merchant event type is a webhook, `redocly lint`
 * reports no error, the browsable docs are served without an API key and hold no secret, the
 * documented 429 is real, and the committed document and generated client types are what the
 * routes produce now.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { Client, Connection } from '@temporalio/client';
import type { FastifyInstance } from 'fastify';
import { generateDevKeys } from '../../src/codec/keys';
import { MpfClient } from '../../src/starter/client/mpf-client';
import { buildGateway } from '../../src/starter/gateway/app';
import { isRateLimitExempt } from '../../src/starter/gateway/openapi';
import { EVENT_TYPES } from '../../src/contract/merchant-events';

const run = promisify(execFile);
const ROOT = path.resolve(__dirname, '..', '..');
const API_KEY = 'openapi-test-api-key-0123456789';
const CODEC_TOKEN = 'openapi-test-codec-token-0123456789';

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

let app: FastifyInstance;
let connection: Connection;
let doc: Json;

before(async () => {
  const keys = generateDevKeys();
  connection = Connection.lazy({ address: '127.0.0.1:9' }); // never dialled: no route here reaches Temporal
  const mpf = new MpfClient({ client: new Client({ connection }), taskQueue: 'openapi', keys, publicUrl: 'http://127.0.0.1:9' });
  app = await buildGateway({ mpf, apiKey: API_KEY, codec: { keys, authToken: CODEC_TOKEN, corsOrigins: [] }, rateLimit: { max: 3, timeWindowMs: 60_000 } });
  const r = await app.inject({ method: 'GET', url: '/openapi.json' });
  assert.equal(r.statusCode, 200);
  doc = r.json();
});

after(async () => {
  await app.close();
  await connection.close().catch(() => undefined);
});

function operations(): Array<{ path: string; method: string; op: Json }> {
  return Object.entries(doc.paths as Json).flatMap(([p, item]) =>
    Object.entries(item as Json)
      .filter(([m]) => ['get', 'put', 'post', 'delete', 'patch'].includes(m))
      .map(([method, op]) => ({ path: p, method, op: op as Json })),
  );
}

describe('the OpenAPI document', () => {
  test('every operation has a unique operationId, a summary and declared security', () => {
    const ids = new Set<string>();
    assert.ok(operations().length >= 15, 'the gateway documents its routes');
    for (const { path: p, method, op } of operations()) {
      const where = `${method.toUpperCase()} ${p}`;
      assert.match(op.operationId ?? '', /^[a-z][A-Za-z0-9]+$/, `${where}: operationId`);
      assert.ok(!ids.has(op.operationId), `${where}: operationId ${op.operationId} is used twice`);
      ids.add(op.operationId);
      assert.ok(typeof op.summary === 'string' && op.summary.length > 3, `${where}: summary`);
      assert.ok(Array.isArray(op.security), `${where}: security is declared (an empty list for public routes)`);
      for (const requirement of op.security as Json[]) {
        for (const scheme of Object.keys(requirement)) assert.ok(doc.components.securitySchemes[scheme], `${where}: scheme ${scheme} is defined`);
      }
    }
  });

  test('the API-key, PIN and codec routes declare their security schemes, and answer 401', () => {
    const security = (p: string, m: string): unknown => doc.paths[p][m].security;
    assert.deepEqual(security('/v1/swaps', 'post'), [{ apiKey: [] }, { apiKeyBearer: [] }]);
    assert.deepEqual(security('/v1/payment-links/{link_id}', 'get'), [{ apiKey: [] }, { apiKeyBearer: [] }]);
    assert.deepEqual(security('/v1/swaps/{swap_id}/pin', 'post'), [{ pinToken: [] }]);
    assert.deepEqual(security('/codec/decode', 'post'), [{ codecToken: [] }]);
    assert.deepEqual(security('/codec/encode', 'post'), [{ codecToken: [] }]);
    for (const { path: p, method, op } of operations()) {
      if ((op.security as Json[]).length > 0) assert.ok(op.responses['401'], `${method.toUpperCase()} ${p}: 401`);
    }
  });

  test('every rate-limited operation declares 429, every /v1 operation 503, both with Retry-After', () => {
    for (const { path: p, method, op } of operations()) {
      const where = `${method.toUpperCase()} ${p}`;
      const expected = [...(isRateLimitExempt(p) ? [] : ['429']), ...(p.startsWith('/v1/') ? ['503'] : [])];
      for (const status of expected) {
        const response = op.responses[status];
        assert.ok(response, `${where}: ${status}`);
        assert.ok(response.headers?.['Retry-After'], `${where}: ${status} has a Retry-After header`);
        assert.notEqual(response.description, 'Default Response', `${where}: ${status} is described`);
      }
      for (const [status, response] of Object.entries(op.responses as Json)) {
        assert.notEqual((response as Json).description, 'Default Response', `${where}: ${status} is described`);
      }
    }
  });

  test('has examples for the request bodies and the main answers, and no duplicated *Input schemas', () => {
    const schemas = doc.components.schemas as Json;
    for (const id of ['SwapStartRequest', 'PaymentLinkCreateRequest', 'StartedSwap', 'SwapView', 'LinkView', 'PinOutcome', 'Error']) {
      assert.ok(Array.isArray(schemas[id]?.examples) && schemas[id].examples.length > 0, `${id} has examples`);
    }
    for (const id of Object.keys(schemas)) {
      assert.ok(!(id.endsWith('Input') && schemas[id.slice(0, -'Input'.length)]), `${id} duplicates ${id.slice(0, -5)}`);
    }
    // Every component is used: nothing of another app's schemas (same zod registry) leaks in.
    const text = JSON.stringify(doc.paths) + JSON.stringify(doc.webhooks) + JSON.stringify(schemas);
    for (const id of Object.keys(schemas)) assert.ok(text.includes(`"#/components/schemas/${id}"`), `${id} is referenced`);
    assert.equal(doc.paths['/v1/swaps'].post.requestBody.content['application/json'].schema.$ref, '#/components/schemas/SwapStartRequest');
  });

  test('lists every merchant event type under webhooks: a signed POST whose body is the schema of exactly that type', () => {
    assert.deepEqual(Object.keys(doc.webhooks).sort(), [...EVENT_TYPES].sort());
    const ids = new Set(operations().map((o) => o.op.operationId as string));
    for (const type of EVENT_TYPES) {
      const op = doc.webhooks[type].post as Json;
      assert.match(op.operationId, /^[a-z][A-Za-z0-9]+Event$/, `${type}: operationId`);
      assert.ok(!ids.has(op.operationId), `${type}: operationId ${op.operationId} is used twice`);
      ids.add(op.operationId);
      assert.ok(op.summary?.length > 10, `${type}: summary`);
      assert.deepEqual(op.security, [], `${type}: security declared (the signature, not a scheme)`);
      assert.deepEqual((op.parameters as Json[]).map((p) => [p.name, p.in, p.required]), ['webhook-id', 'webhook-timestamp', 'webhook-signature'].map((n) => [n, 'header', true]));
      const ref = op.requestBody.content['application/json'].schema.$ref as string;
      const schema = doc.components.schemas[ref.replace('#/components/schemas/', '')];
      assert.equal(schema?.properties?.type?.const, type, `${type}: its body's type`);
      assert.deepEqual(schema.required, ['id', 'type', 'timestamp', 'data'], type);
      const data = schema.properties.data.allOf as Json[];
      assert.equal(data[0]!.$ref, `#/components/schemas/${type.startsWith('swap.') ? 'SwapEventData' : type.startsWith('provider.') ? 'ProviderGuardEventData' : 'PaymentLinkEventData'}`, type);
      assert.equal(data[1]!.additionalProperties, undefined, `${type}: the narrowing branch leaves the object open to the kind's fields`);
    }
  });

  test('redocly lint reports 0 errors', { timeout: 120_000 }, async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'mpf-openapi-'));
    try {
      const file = path.join(dir, 'gateway-openapi.json');
      fs.writeFileSync(file, JSON.stringify(doc));
      const bin = path.join(ROOT, 'node_modules', '.bin', 'redocly');
      const r = await run(bin, ['lint', file, '--config', path.join(ROOT, 'redocly.yaml'), '--format', 'json'], { cwd: dir, maxBuffer: 16 * 1024 * 1024 }).catch(
        (err: { stdout?: string; stderr?: string; code?: number }) => ({ stdout: err.stdout ?? '', stderr: `${err.stderr ?? ''} (exit ${err.code})` }),
      );
      const report = JSON.parse(r.stdout) as { totals: { errors: number; warnings: number }; problems: Array<{ ruleId: string; severity: string; message: string }> };
      const errors = report.problems.filter((p) => p.severity === 'error');
      assert.equal(report.totals.errors, 0, `redocly lint errors:\n${errors.map((p) => `${p.ruleId}: ${p.message}`).join('\n')}\n${r.stderr}`);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('the browsable docs at /docs', () => {
  test('are served without an API key, from the package itself, and hold no secret', async () => {
    const page = await app.inject({ method: 'GET', url: '/docs' });
    assert.equal(page.statusCode, 200);
    assert.match(page.headers['content-type'] as string, /text\/html/);
    assert.match(page.body, /swagger-ui/i);
    assert.ok(page.headers['content-security-policy'], 'a CSP');
    const bundle = await app.inject({ method: 'GET', url: '/docs/static/swagger-ui-bundle.js' });
    assert.equal(bundle.statusCode, 200, 'the UI is served from the package (no CDN)');
    const spec = await app.inject({ method: 'GET', url: '/docs/json' });
    assert.equal(spec.statusCode, 200);
    assert.equal(spec.json().info.title, doc.info.title);
    const init = await app.inject({ method: 'GET', url: '/docs/static/swagger-initializer.js' });
    assert.equal(init.statusCode, 200);
    for (const body of [page.body, spec.body, init.body, JSON.stringify(doc)]) {
      assert.ok(!body.includes(API_KEY), 'the API key is not in the docs');
      assert.ok(!body.includes(CODEC_TOKEN), 'the codec token is not in the docs');
    }
    assert.doesNotMatch(page.body, /(src|href)="https?:/i, 'no outside asset (no CDN)');
    assert.match(init.body, /"validatorUrl":null/, "no outside validator (Swagger UI's default sends the document to one)");
  });
});

describe('the gateway rate limit the document declares', () => {
  test('answers 429 with Retry-After past the limit, and never limits the health checks', async () => {
    const statuses: number[] = [];
    let last;
    for (let i = 0; i < 4; i++) {
      last = await app.inject({ method: 'GET', url: '/pin/swap-rate-limited', remoteAddress: '127.0.0.77' });
      statuses.push(last.statusCode);
    }
    assert.deepEqual(statuses, [200, 200, 200, 429]);
    assert.ok(Number(last!.headers['retry-after']) > 0, 'Retry-After');
    assert.equal(last!.json().error, 'rate_limited');
    for (let i = 0; i < 6; i++) {
      assert.equal((await app.inject({ method: 'GET', url: '/healthz', remoteAddress: '127.0.0.77' })).statusCode, 200);
    }
  });
});
