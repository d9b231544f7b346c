/**
 * The pure rules of registered webhook endpoints (contract/webhook-endpoints.ts): which secrets
 * sign now, which endpoint takes an event, and that what is shown never holds a secret.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { endpointTakes, endpointView, liveSecrets, type WebhookEndpointRecord } from '../../src/contract/webhook-endpoints';

const NOW = Date.parse('2026-11-28T12:00:00Z');
const record = (over: Partial<WebhookEndpointRecord> = {}): WebhookEndpointRecord => ({
  id: `we_${'a'.repeat(24)}`,
  url: 'https://hooks.example.com/mpf',
  enabled_events: ['swap.confirmed'],
  status: 'enabled',
  created_at: '2026-11-28T10:00:00Z',
  updated_at: '2026-11-28T10:00:00Z',
  secrets: [{ secret: 'whsec_new' }, { secret: 'whsec_old', expires_at: '2026-11-28T13:00:00Z' }, { secret: 'whsec_older', expires_at: '2026-11-28T11:00:00Z' }],
  ...over,
});

describe('webhook endpoint rules', () => {
  test('the current secret and those whose overlap is not over sign, newest first; an expired one does not', () => {
    assert.deepEqual(liveSecrets(record(), NOW), ['whsec_new', 'whsec_old']);
    assert.deepEqual(liveSecrets(record(), Date.parse('2026-11-28T13:00:00Z')), ['whsec_new']);
  });

  test('an endpoint takes an event when enabled and its type, or *, is enabled', () => {
    assert.equal(endpointTakes(record(), 'swap.confirmed'), true);
    assert.equal(endpointTakes(record(), 'swap.cancelled'), false);
    assert.equal(endpointTakes(record({ enabled_events: ['*'] }), 'payment_link.paid'), true);
    assert.equal(endpointTakes(record({ status: 'disabled', enabled_events: ['*'] }), 'swap.confirmed'), false);
  });

  test('what is shown holds no secret, only when the previous one stops signing', () => {
    const view = endpointView(record(), NOW);
    assert.ok(!JSON.stringify(view).includes('whsec_'));
    assert.equal(view.previous_secret_expires_at, '2026-11-28T13:00:00Z');
    assert.equal(endpointView(record({ secrets: [{ secret: 'whsec_only' }] }), NOW).previous_secret_expires_at, undefined);
  });
});
