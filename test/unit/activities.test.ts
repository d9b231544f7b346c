/**
 * The provider activities against the real provider simulator (real sockets), run in a mocked
 * activity context (MockActivityEnvironment supplies only the context and a capturing logger; no
 * Temporal server is involved at this level): sealing of the auth_token and PIN, the outcomes of a
 * confirmation, and the ApplicationFailure each provider error kind becomes.
 */
import { describe, test, before, after, beforeEach } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { ApplicationFailure, type LogLevel, type LogMetadata, type Logger } from '@temporalio/common';
import { MockActivityEnvironment } from '@temporalio/testing';
import { startSimulator, type RunningSimulator } from '../../src/simulator';
import { SimulatorControl } from '../../src/simulator/control-client';
import { createSealer, isSealed } from '../../src/codec/seal';
import {
  createActivities,
  PROVIDER_FAILURE_TYPES,
  providerFailure,
  providerRetryPolicy,
  SEALED_PAYLOAD_FAILURE_TYPE,
  type ProviderActivities,
  type ProviderFailureDetails,
} from '../../src/activities';
import {
  ProviderAmbiguousError,
  ProviderAuthError,
  type ProviderClient,
  ProviderRateLimitedError,
  ProviderRejectedError,
  ProviderRequestInvalidError,
  ProviderTransientError,
} from '../../src/provider';
import type { HostedLinkRequest, SwapInitRequest } from '../../src/contract/provider';
import { providerLinkBody, providerSwapBody, SIM_PIN, uniqueRef } from '../helpers/fixtures';
import { providerClients, SIM_ACCESS, SIM_CREDENTIALS, SIM_SECRET } from '../helpers/provider';

class CapturingLogger implements Logger {
  readonly lines: string[] = [];
  log(level: LogLevel, message: string, meta?: LogMetadata): void {
    this.lines.push(`${level} ${message} ${JSON.stringify(meta ?? {})}`);
  }
  trace(m: string, meta?: LogMetadata): void {
    this.log('TRACE', m, meta);
  }
  debug(m: string, meta?: LogMetadata): void {
    this.log('DEBUG', m, meta);
  }
  info(m: string, meta?: LogMetadata): void {
    this.log('INFO', m, meta);
  }
  warn(m: string, meta?: LogMetadata): void {
    this.log('WARN', m, meta);
  }
  error(m: string, meta?: LogMetadata): void {
    this.log('ERROR', m, meta);
  }
}

const swapReq = (): SwapInitRequest => providerSwapBody(uniqueRef('swap'));
const linkReq = (): HostedLinkRequest => providerLinkBody(uniqueRef('link'));

/** Runs `p`, asserts it throws an ApplicationFailure, returns it. */
async function failure(p: Promise<unknown>): Promise<ApplicationFailure> {
  const err = await p.then(
    () => assert.fail('expected an ApplicationFailure, but the activity succeeded'),
    (e: unknown) => e,
  );
  assert.ok(err instanceof ApplicationFailure, `expected ApplicationFailure, got ${(err as Error)?.name}: ${(err as Error)?.message}`);
  return err;
}

describe('provider activities', () => {
  let sim: RunningSimulator;
  let control: SimulatorControl;
  let client: ProviderClient;
  const sealer = createSealer(`k1:${randomBytes(32).toString('base64')}`);
  let logger: CapturingLogger;
  let env: MockActivityEnvironment;
  let acts: ProviderActivities;
  /** Every plaintext secret seen in this file; none may reach a log line. */
  const secretsSeen = new Set<string>([SIM_SECRET, SIM_ACCESS]);
  const { clientFor, withClient } = providerClients(() => ({ baseUrl: sim.baseUrl, ...SIM_CREDENTIALS }));

  before(async () => {
    sim = await startSimulator({ seed: 11, defaultPin: SIM_PIN });
    control = new SimulatorControl(sim.baseUrl);
    client = clientFor();
    acts = createActivities({ client, sealer });
  });
  after(async () => {
    await client.close();
    await sim.close();
  });
  beforeEach(async () => {
    logger = new CapturingLogger();
    env = new MockActivityEnvironment(undefined, { logger });
    await control.reset();
    await control.clearFaults();
  });

  /** env.run with the activity's own argument and result types. */
  const run = <A extends unknown[], R>(fn: (...args: A) => Promise<R>, ...args: A): Promise<R> =>
    env.run(fn as (...a: unknown[]) => Promise<R>, ...args) as Promise<R>;

  const assertLogsClean = (): void => {
    for (const line of logger.lines) {
      for (const s of secretsSeen) assert.ok(!line.includes(s), `log line leaks a secret: ${line}`);
    }
  };

  /** initSwap in the activity context; remembers the plaintext token for the leak checks. */
  async function initSwap(req = swapReq()) {
    const res = await run(acts.initSwap, req);
    secretsSeen.add(sealer.unseal(res.sealed_auth_token));
    return { req, res };
  }

  describe('swap', () => {
    test('initSwap returns the rates with the auth_token sealed and the arrival time', async () => {
      const before = Date.now();
      const { req, res } = await initSwap();
      const after = Date.now();
      assert.equal(res.txn_ref, req.txn_ref);
      assert.ok(res.expires_in_seconds > 0);
      assert.ok(!('auth_token' in res), 'no plaintext auth_token in the result');
      assert.ok(isSealed(res.sealed_auth_token));
      assert.ok(res.initialized_at_ms >= before && res.initialized_at_ms <= after);
      assert.ok(logger.lines.some((l) => l.includes(req.txn_ref)), 'logs the swap reference');
      assertLogsClean();
    });

    test('confirmSwap unseals token and PIN and reports a confirmed swap', async () => {
      const { req, res } = await initSwap();
      secretsSeen.add(SIM_PIN);
      const outcome = await run(acts.confirmSwap, {
        user_ref: req.user_ref,
        sealed_auth_token: res.sealed_auth_token,
        sealed_pin: sealer.seal(SIM_PIN),
      });
      assert.equal(outcome.outcome, 'confirmed');
      assert.match(outcome.message, /confirmed/i);
      const { effects } = await control.ledger({ ref: req.txn_ref });
      assert.ok(effects.some((e) => e.kind === 'swap.confirmed'));
      assertLogsClean();
    });

    test('a wrong PIN comes back as a wrong_pin outcome, not a failure', async () => {
      const { req, res } = await initSwap();
      secretsSeen.add('9876');
      const outcome = await run(acts.confirmSwap, {
        user_ref: req.user_ref,
        sealed_auth_token: res.sealed_auth_token,
        sealed_pin: sealer.seal('9876'),
      });
      assert.deepEqual(outcome, { outcome: 'wrong_pin', message: 'Incorrect wallet PIN' });
      assertLogsClean();
    });

    test('a used token comes back as a token_invalid outcome', async () => {
      const { req, res } = await initSwap();
      const input = { user_ref: req.user_ref, sealed_auth_token: res.sealed_auth_token, sealed_pin: sealer.seal(SIM_PIN) };
      assert.equal((await run(acts.confirmSwap, input)).outcome, 'confirmed');
      const again = await run(acts.confirmSwap, input);
      assert.equal(again.outcome, 'token_invalid');
      assertLogsClean();
    });

    test('any other refusal of a confirmation comes back as rejected with the provider message', async () => {
      const { req, res } = await initSwap();
      await control.setFaults({
        rules: [{ endpoint: 'swap.confirm', kind: 'garbage', body: '{"status":"failed","message":"Insufficient balance"}', times: 1 }],
      });
      const outcome = await run(acts.confirmSwap, {
        user_ref: req.user_ref,
        sealed_auth_token: res.sealed_auth_token,
        sealed_pin: sealer.seal(SIM_PIN),
      });
      assert.deepEqual(outcome, { outcome: 'rejected', message: 'Insufficient balance' });
    });

    test('a tampered sealed PIN fails without retry and never reaches the provider', async () => {
      const { req, res } = await initSwap();
      const sealed = sealer.seal(SIM_PIN);
      const tampered = `${sealed.slice(0, -2)}${sealed.endsWith('AA') ? 'BB' : 'AA'}`;
      const f = await failure(
        run(acts.confirmSwap, { user_ref: req.user_ref, sealed_auth_token: res.sealed_auth_token, sealed_pin: tampered }),
      );
      assert.equal(f.type, SEALED_PAYLOAD_FAILURE_TYPE);
      assert.equal(f.nonRetryable, true);
      assert.match(f.message, /sealed_pin/);
      assert.equal((await control.ledger({ endpoint: 'swap.confirm' })).requests.length, 0);
    });

    test('a confirmation that hangs becomes a retryable ProviderAmbiguousError failure', async () => {
      await withClient({ timeouts: { headersMs: 300 } }, async (impatient) => {
        const { req, res } = await initSwap();
        await control.setFaults({ rules: [{ endpoint: 'swap.confirm', kind: 'hang', maxMs: 10_000, times: 1 }] });
        const f = await failure(
          run(createActivities({ client: impatient, sealer }).confirmSwap, {
            user_ref: req.user_ref,
            sealed_auth_token: res.sealed_auth_token,
            sealed_pin: sealer.seal(SIM_PIN),
          }),
        );
        assert.equal(f.type, 'ProviderAmbiguousError');
        assert.equal(f.nonRetryable, false, 'retried: the single-use auth_token makes a repeat harmless');
        assert.equal((f.details?.[0] as ProviderFailureDetails).kind, 'ambiguous');
        assertLogsClean();
      });
    });

    test('a retried confirmation told the token was already used answers token_used_on_retry (evidence), a first attempt token_invalid', async () => {
      const { req, res } = await initSwap();
      const input = { user_ref: req.user_ref, sealed_auth_token: res.sealed_auth_token, sealed_pin: sealer.seal(SIM_PIN) };
      assert.equal((await run(acts.confirmSwap, input)).outcome, 'confirmed');
      assert.equal((await run(acts.confirmSwap, input)).outcome, 'token_invalid');
      const retry = new MockActivityEnvironment({ attempt: 2 }, { logger });
      const again = await retry.run(acts.confirmSwap, input);
      assert.equal((again as { outcome: string }).outcome, 'token_used_on_retry');
    });

    test('a rate-limited confirmation is retryable after the provider Retry-After', async () => {
      const { req, res } = await initSwap();
      await control.setFaults({ rules: [{ endpoint: 'swap.confirm', kind: 'rate_limit', retryAfterSeconds: 2, times: 1 }] });
      const f = await failure(
        run(acts.confirmSwap, { user_ref: req.user_ref, sealed_auth_token: res.sealed_auth_token, sealed_pin: sealer.seal(SIM_PIN) }),
      );
      assert.equal(f.type, 'ProviderRateLimitedError');
      assert.equal(f.nonRetryable, false);
      assert.equal(f.nextRetryDelay, 2000);
      assert.deepEqual(f.details?.[0], { kind: 'rate_limited', endpoint: 'swapConfirm', httpStatus: 429 });
    });
  });

  describe('payment link and categories', () => {
    test('createPaymentLink returns the hosted link', async () => {
      const req = linkReq();
      const link = await run(acts.createPaymentLink, req);
      assert.equal(link.txn_merchant_ref, req.txn_merchant_ref);
      assert.ok(link.pay_link.startsWith('http://127.0.0.1'));
      assertLogsClean();
    });

    test('a link created but unanswered is a retryable ProviderAmbiguousError failure (the duplicate check makes a retry safe)', async () => {
      await control.setFaults({ rules: [{ endpoint: 'link.create', kind: 'apply_then_fail', times: 1 }] });
      const f = await failure(run(acts.createPaymentLink, linkReq()));
      assert.equal(f.type, 'ProviderAmbiguousError');
      assert.equal(f.nonRetryable, false);
    });

    test('a reused txn_merchant_ref is a non-retryable ProviderRejectedError failure with its HTTP status', async () => {
      const req = linkReq();
      await run(acts.createPaymentLink, req);
      const f = await failure(run(acts.createPaymentLink, req));
      assert.equal(f.type, 'ProviderRejectedError');
      assert.equal(f.nonRetryable, true);
      assert.equal((f.details?.[0] as ProviderFailureDetails).httpStatus, 409);
    });

    test('on a retried attempt, the provider\'s duplicate answer becomes EarlierAttemptAppliedError (proof the first was applied), non-retryable', async () => {
      const req = linkReq();
      await run(acts.createPaymentLink, req); // the first attempt, applied (its answer "lost")
      const retry = new MockActivityEnvironment({ attempt: 2 }, { logger });
      const f = await failure(retry.run(acts.createPaymentLink, req));
      assert.equal(f.type, 'EarlierAttemptAppliedError');
      assert.equal(f.nonRetryable, true);
      assert.match(f.message, /already holds txn_merchant_ref .* from an earlier attempt whose answer was lost/);
    });

    test('listCategories returns the flat list', async () => {
      const list = await run(acts.listCategories);
      assert.equal(list.length, 77);
    });

    test('a 5xx on the category read is a retryable ProviderTransientError failure', async () => {
      await control.setFaults({ rules: [{ endpoint: 'categories', kind: 'status5xx', times: 1 }] });
      const f = await failure(run(acts.listCategories));
      assert.equal(f.type, 'ProviderTransientError');
      assert.equal(f.nonRetryable, false);
      assert.equal(f.nextRetryDelay, undefined);
    });

    test('wrong credentials are a non-retryable ProviderAuthError failure that names no credential', async () => {
      secretsSeen.add('wrong-token-xyz');
      await withClient({ accessToken: 'wrong-token-xyz' }, async (wrong) => {
        const f = await failure(run(createActivities({ client: wrong, sealer }).createPaymentLink, linkReq()));
        assert.equal(f.type, 'ProviderAuthError');
        assert.equal(f.nonRetryable, true);
        for (const s of secretsSeen) assert.ok(!`${f.message}${JSON.stringify(f.details)}`.includes(s));
        assertLogsClean();
      });
    });
  });
});

describe('failure conversion and retry policy', () => {
  test('maps each provider error class to its ApplicationFailure type and retryability', () => {
    const cases = [
      [new ProviderRejectedError('m', { endpoint: 'swapInit', httpStatus: 400 }), true],
      [new ProviderAuthError('m', { endpoint: 'swapInit', httpStatus: 401 }), true],
      [new ProviderAmbiguousError('m', { endpoint: 'swapInit' }), false],
      [new ProviderRequestInvalidError('m', { endpoint: 'swapInit' }), true],
      [new ProviderTransientError('m', { endpoint: 'categories', httpStatus: 503 }), false],
      [new ProviderRateLimitedError('m', { endpoint: 'categories', httpStatus: 429, retryAfterMs: 1500 }), false],
    ] as const;
    for (const [err, nonRetryable] of cases) {
      const f = providerFailure(err);
      assert.equal(f.type, err.name);
      assert.equal(f.type, PROVIDER_FAILURE_TYPES[err.kind]);
      assert.equal(f.nonRetryable, nonRetryable, err.name);
      assert.equal(f.nextRetryDelay, err.kind === 'rate_limited' ? 1500 : undefined);
      assert.equal(
        providerRetryPolicy.nonRetryableErrorTypes?.includes(err.name),
        nonRetryable,
        `${err.name} in nonRetryableErrorTypes`,
      );
    }
  });

  test('the provider retry policy backs off from 1 s doubling up to 10 s', () => {
    assert.equal(providerRetryPolicy.initialInterval, '1s');
    assert.equal(providerRetryPolicy.backoffCoefficient, 2);
    assert.equal(providerRetryPolicy.maximumInterval, '10s');
    for (const t of ['ProviderRejectedError', 'ProviderAuthError', 'ProviderRequestInvalidError', 'SealedPayloadError', 'EarlierAttemptAppliedError']) {
      assert.ok(providerRetryPolicy.nonRetryableErrorTypes?.includes(t), t);
    }
    assert.ok(!providerRetryPolicy.nonRetryableErrorTypes?.includes('ProviderAmbiguousError'), 'ambiguous POSTs are retried');
  });
});
