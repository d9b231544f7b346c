/**
 * `mpf webhooks` through the gateway with an operator key (no Temporal address, no payload keys):
 * create prints the secret once, list and get never do, disable/enable/update/roll-secret/delete
 * change the endpoint; a backend key is refused with the gateway's 403, and nothing is created.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { KeyringSource, newKey } from '../../src/auth/keyring';
import { type GatewayHarness, startGatewayStack } from '../helpers/gateway';
import { runMpf } from '../helpers/processes';

const operator = newKey({ id: 'hooks-cli-operator', role: 'operator' });
const backend = newKey({ id: 'hooks-cli-backend', role: 'backend' });

describe('mpf webhooks through the gateway', () => {
  let h: GatewayHarness;
  before(async () => {
    h = await startGatewayStack({ gateway: { keyring: new KeyringSource({ json: JSON.stringify([operator.entry, backend.entry]) }) } });
  });
  after(async () => {
    await h?.stop();
  });

  const env = (key: string): NodeJS.ProcessEnv => ({ PATH: process.env.PATH, HOME: process.env.HOME, MPF_GATEWAY_URL: h.gw.url, MPF_API_KEY: key });
  const mpf = async (args: string[], key = operator.key) => {
    const r = await runMpf(['webhooks', ...args], env(key));
    assert.equal(r.code, 0, `mpf webhooks ${args.join(' ')}: ${r.stderr}`);
    return r.stdout;
  };

  test('an operator creates, reads, disables, updates, rolls and deletes an endpoint; its secret is printed by create and roll-secret only', async () => {
    const created = JSON.parse(await mpf(['create', '--url', 'https://hooks.example.com/mpf', '--events', 'swap.confirmed,payment_link.paid', '--description', 'orders', '--json'])) as {
      id: string;
      secret: string;
    };
    assert.match(created.secret, /^whsec_/);
    const list = await mpf(['list']);
    assert.match(list, new RegExp(`^${created.id}  enabled   https://hooks\\.example\\.com/mpf  events: swap\\.confirmed,payment_link\\.paid  \\(orders\\)$`, 'm'));
    assert.ok(!list.includes('whsec_'));
    assert.ok(!(await mpf(['get', created.id, '--json'])).includes('whsec_'));
    assert.match(await mpf(['disable', created.id]), new RegExp(`^${created.id}  disabled`));
    assert.match(await mpf(['enable', created.id]), new RegExp(`^${created.id}  enabled`));
    assert.match(await mpf(['update', created.id, '--events', '*']), /events: \*/);
    const rolled = await mpf(['roll-secret', created.id, '--expires-in', '60']);
    assert.match(rolled, /previous secret signs until \S+/);
    assert.match(rolled, /^secret: whsec_/m);
    assert.ok(!rolled.includes(created.secret));
    assert.match(await mpf(['delete', created.id]), new RegExp(`^${created.id}  deleted`));
    assert.match(await mpf(['list']), /^no webhook endpoints/);
  });

  test('a backend key is refused with the 403 and nothing is created', async () => {
    const r = await runMpf(['webhooks', 'create', '--url', 'https://hooks.example.com/x', '--events', '*'], env(backend.key));
    assert.notEqual(r.code, 0);
    assert.match(r.stderr, /answered 403 forbidden/);
    assert.match(await mpf(['list']), /^no webhook endpoints/);
  });
});
