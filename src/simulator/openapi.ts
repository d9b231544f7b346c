/**
 * OpenAPI 3.1 description of the simulated provider endpoints and the /_sim control API.
 * Request schemas come from the contract's zod schemas (z.toJSONSchema), so they cannot drift.
 */
import { z } from 'zod';
import { CategoriesData, HostedLinkData, PROVIDER_PATHS, SwapConfirmRequest, SwapInitData, SwapInitRequest } from '../contract/provider';
import { FaultSet, ScopedFaultSet } from './faults';
import { SIMULATOR_ANSWER_HEADER, SIMULATOR_ANSWER_VALUE } from './identity';
import { ConfigPatch } from './options';
import { StrictHostedLinkRequest } from './server';

const schema = (s: z.ZodType, io: 'input' | 'output' = 'input'): Record<string, unknown> => {
  const { $schema: _ignored, ...rest } = z.toJSONSchema(s, { io, unrepresentable: 'any' }) as Record<string, unknown>;
  return rest;
};
const json = (s: Record<string, unknown>) => ({ content: { 'application/json': { schema: s } } });
const ref = (name: string) => ({ $ref: `#/components/schemas/${name}` });
const envelope = (data?: Record<string, unknown>) => ({
  type: 'object',
  required: ['status', 'message'],
  properties: { status: { type: 'string', const: 'success' }, message: { type: 'string' }, ...(data ? { data } : {}) },
});
const error = (description: string) => ({ description, ...json(ref('Error')) });
const ok = (description: string, body: Record<string, unknown>) => ({ description, ...json(body) });

const bearer = [{ bearer: [] }];
const merchant = { name: 'x-merchant-ref', in: 'header', required: true, schema: { type: 'string' } };
const paymentRefParam = { name: 'payment_ref', in: 'path', required: true, schema: { type: 'string' } };
const refParam = { name: 'ref', in: 'path', required: true, description: 'txn_ref or txn_merchant_ref', schema: { type: 'string' } };
const authErrors = { '401': error('Missing or wrong Bearer token') };
const faultErrors = {
  '429': error('Injected rate limit (Retry-After header)'),
  '5XX': { description: 'Injected server error (JSON or HTML body)' },
};

export function buildOpenApi(): Record<string, unknown> {
  return {
    openapi: '3.1.0',
    info: {
      title: 'Merchant Payments Service simulator',
      version: '1.0.0',
      description:
        'Local simulator of the provider API (the sandbox the provider lacks), its hosted checkout and a control API under /_sim. ' +
        'Error responses use {status:"error", message}. Faults can be injected with PUT /_sim/faults. ' +
        `Every answer of this port carries the header ${SIMULATOR_ANSWER_HEADER}: ${SIMULATOR_ANSWER_VALUE}, which the live provider never sends: ` +
        'the forwarder passes on only answers with it, and `mpf live check` refuses an answer with it as the simulator.',
    },
    components: {
      securitySchemes: { bearer: { type: 'http', scheme: 'bearer' } },
      schemas: {
        Error: { type: 'object', required: ['status', 'message'], properties: { status: { const: 'error' }, message: { type: 'string' } } },
        SwapInitRequest: schema(SwapInitRequest),
        SwapInitData: schema(SwapInitData, 'output'),
        SwapConfirmRequest: schema(SwapConfirmRequest),
        HostedLinkRequest: schema(StrictHostedLinkRequest),
        HostedLinkData: schema(HostedLinkData, 'output'),
        CategoriesData: schema(CategoriesData, 'output'),
        FaultSet: schema(FaultSet),
        ScopedFaultSet: schema(ScopedFaultSet),
        ConfigPatch: schema(ConfigPatch),
        Ledger: ledgerSchema(),
      },
    },
    paths: { ...providerPaths(), ...controlPaths() },
  };
}

/** The ledger of GET /_sim/ledger: the requests received (masked) and the effects committed. */
function ledgerSchema(): Record<string, unknown> {
  return {
    type: 'object',
    required: ['requests', 'effects'],
    properties: {
      requests: {
        type: 'array',
        items: {
          type: 'object',
          required: ['seq', 'at', 'endpoint', 'method', 'path', 'status', 'headers', 'body'],
          properties: {
            seq: { type: 'integer' },
            at: { type: 'string', format: 'date-time' },
            endpoint: { enum: ['swap.init', 'swap.confirm', 'link.create', 'categories'] },
            method: { type: 'string' },
            path: { type: 'string' },
            status: { oneOf: [{ type: 'integer' }, { enum: ['reset', 'hang', 'pending'] }] },
            fault: { type: 'string' },
            latency_ms: { type: 'integer' },
            ref: { type: 'string' },
            payment_ref: { type: 'string' },
            headers: { type: 'object', additionalProperties: { type: 'string' }, description: "authorization shown as 'Bearer ***'" },
            body: { description: "wallet_pin and auth_token shown as '***'" },
          },
        },
      },
      effects: {
        type: 'array',
        items: {
          type: 'object',
          required: ['seq', 'at', 'kind', 'ref'],
          properties: {
            seq: { type: 'integer' },
            at: { type: 'string', format: 'date-time' },
            kind: {
              enum: [
                'swap.initialized', 'swap.confirmed', 'swap.pin_rejected', 'link.created', 'link.paid', 'link.failed',
                'link.abandoned', 'notification.delivered', 'notification.failed_attempt', 'notification.refused',
              ],
            },
            ref: { type: 'string' },
            payment_ref: { type: 'string' },
            details: { type: 'object' },
          },
        },
      },
    },
  };
}

/** The provider's endpoints, as the simulator serves them. */
function providerPaths(): Record<string, unknown> {
  return {
    [PROVIDER_PATHS.swapInit]: {
      post: {
        summary: 'Initialize an internal wallet swap (returns the auth_token)',
        security: bearer,
        requestBody: { required: true, ...json(ref('SwapInitRequest')) },
        responses: {
          '200': ok('Swap initialized', envelope(ref('SwapInitData'))),
          '400': error('Validation failure naming the field'),
          ...authErrors,
          '409': error('Duplicate transaction reference (txn_ref reused); nothing changed'),
          ...faultErrors,
        },
      },
    },
    [PROVIDER_PATHS.swapConfirm]: {
      post: {
        summary: 'Confirm a swap with its auth_token and the wallet PIN (a token is accepted once, before it expires)',
        security: bearer,
        requestBody: { required: true, ...json(ref('SwapConfirmRequest')) },
        responses: {
          '200': ok('Swap confirmed and initiated', envelope()),
          '400': error("'Incorrect wallet PIN', 'auth_token is invalid, expired or already used', or a validation failure"),
          ...authErrors,
          ...faultErrors,
        },
      },
    },
    [PROVIDER_PATHS.hostedLink]: {
      post: {
        summary: 'Create a hosted bank-transfer payment link (NGN)',
        security: bearer,
        parameters: [merchant],
        requestBody: { required: true, ...json(ref('HostedLinkRequest')) },
        responses: {
          '200': ok('Link created', envelope(ref('HostedLinkData'))),
          '400': error('Validation failure naming the field, or x-merchant-ref missing'),
          ...authErrors,
          '403': error('Unknown merchant reference'),
          '409': error('Duplicate transaction reference (txn_merchant_ref reused); nothing changed'),
          ...faultErrors,
        },
      },
    },
    [PROVIDER_PATHS.categories]: {
      get: {
        summary: 'List the 77 utility product categories (Bearer only when the simulator is configured to require it)',
        parameters: [merchant],
        responses: {
          '200': ok('Categories at data.data', envelope(ref('CategoriesData'))),
          '400': error('x-merchant-ref missing'),
          ...authErrors,
          '403': error('Unknown merchant reference'),
          ...faultErrors,
        },
      },
    },
  };
}

/** The control API under /_sim: the ledger, reset, faults, configuration and the customer's actions. */
function controlPaths(): Record<string, unknown> {
  return {
    '/_sim/ledger': {
      get: {
        summary: 'Requests received (masked) and effects committed; endpoint filters requests, ref matches ref or payment_ref',
        parameters: [
          { name: 'endpoint', in: 'query', required: false, schema: { enum: ['swap.init', 'swap.confirm', 'link.create', 'categories'] } },
          { name: 'ref', in: 'query', required: false, schema: { type: 'string' } },
        ],
        responses: { '200': ok('The ledger', ref('Ledger')) },
      },
    },
    '/_sim/reset': {
      post: { summary: 'Clear records, ledger, faults and pending notifications (configuration stays)', responses: { '200': { description: 'Reset' } } },
    },
    '/_sim/faults': {
      get: { summary: 'Current fault rules and how often each fired', responses: { '200': { description: 'Faults' } } },
      put: {
        summary: 'Replace every fault (re-seeds the fault stream)',
        requestBody: { required: true, ...json(ref('FaultSet')) },
        responses: { '200': { description: 'Faults replaced' }, '400': error('Invalid rule') },
      },
      delete: { summary: 'Clear every fault', responses: { '200': { description: 'Faults cleared' } } },
    },
    '/_sim/faults/refs/{ref}': {
      put: {
        summary: "Replace the rules of one transaction (txn_ref or txn_merchant_ref; a swap's confirmation counts as its txn_ref): every other rule stays as it is",
        parameters: [refParam],
        requestBody: { required: true, ...json(ref('ScopedFaultSet')) },
        responses: { '200': { description: 'Faults of the transaction replaced' }, '400': error('Invalid rule') },
      },
      delete: { summary: 'Remove the rules of one transaction', parameters: [refParam], responses: { '200': { description: 'Faults of the transaction cleared' } } },
    },
    '/_sim/config': {
      get: { summary: 'Configuration without secrets', responses: { '200': { description: 'Configuration' } } },
      put: {
        summary: 'Change part of the configuration (pins replaces the whole map; swapExpiresInSecondsFor is merged per txn_ref, null removes one)',
        requestBody: { required: true, ...json(ref('ConfigPatch')) },
        responses: { '200': { description: 'Configuration updated' }, '400': error('Invalid value') },
      },
    },
    '/_sim/links/{payment_ref}/complete': {
      post: {
        summary: 'The customer paid (same effect as the checkout button): link paid, notification sent',
        parameters: [paymentRefParam],
        responses: { '200': { description: 'Link paid' }, '404': error('Unknown payment_ref'), '409': error('Link already paid or failed') },
      },
    },
    '/_sim/links/{payment_ref}/fail': {
      post: {
        summary: 'The payment failed (same effect as the checkout button): link failed, notification sent',
        parameters: [paymentRefParam],
        responses: { '200': { description: 'Link failed' }, '404': error('Unknown payment_ref'), '409': error('Link already paid or failed') },
      },
    },
    '/_sim/notify/{payment_ref}': {
      post: {
        summary: "Send the link's or swap's notification again (new notification_id), state unchanged: status from the body, else the one its state implies",
        parameters: [paymentRefParam],
        requestBody: {
          required: false,
          content: { 'application/json': { schema: { type: 'object', properties: { status: { type: 'string', enum: ['successful', 'failed', 'pending'] } } } } },
        },
        responses: { '200': { description: 'Notification sent (delivered in the background)' }, '400': error('Invalid status'), '404': error('Unknown payment_ref') },
      },
    },
    '/_sim/openapi.json': { get: { summary: 'This document', responses: { '200': { description: 'OpenAPI 3.1 document' } } } },
  };
}
