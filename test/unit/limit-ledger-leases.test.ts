/**
 * The deployment ledger's leases (src/workflows/limit-ledger.ts), its pure parts: what a lease may
 * grant, how a holder's lease grows and shrinks, and how an old lease folds into the day's totals.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { FOLD_AFTER_MS, foldOld, type LeaseRequest, leaseGrant, ledgerTotals, withLease } from '../../src/workflows/limit-ledger';

const ask = (count: number, max: number): LeaseRequest => ({ holder: 'g1', kind: 'swap', count, count_limit: { name: 'swap_count_per_deployment_day', max: String(max) } });
const used = (n: number): Map<string, bigint> => new Map([['count:swap', BigInt(n)]]);

describe('the deployment ledger leases its count in blocks', () => {
  test('a lease grants what was asked far from the limit, a quarter of what is left near it, one for the last units, and none past it', () => {
    assert.equal(leaseGrant(used(0), ask(16, 1_000_000)), 16);
    assert.equal(leaseGrant(used(0), ask(16, 20)), 5);
    assert.equal(leaseGrant(used(17), ask(16, 20)), 1);
    assert.equal(leaseGrant(used(19), ask(16, 20)), 1);
    assert.equal(leaseGrant(used(20), ask(16, 20)), 0);
    assert.equal(leaseGrant(used(25), ask(16, 20)), 0);
    assert.equal(leaseGrant(used(0), ask(16, 0)), 0);
  });

  test('the units leased count as used until returned, and a return never gives back more than the holder holds', () => {
    let leases = withLease([], 'g1', 'swap', 16, 1);
    leases = withLease(leases, 'g2', 'swap', 4, 2);
    leases = withLease(leases, 'g1', 'swap', 5, 3);
    assert.equal(ledgerTotals([], { 'count:swap': '2' }, leases).get('count:swap'), 27n);
    leases = withLease(leases, 'g1', 'swap', -30, 4);
    assert.deepEqual(leases, [{ holder: 'g2', kind: 'swap', granted: 4, at: 2 }]);
    assert.equal(ledgerTotals([], {}, leases).get('count:payment_link'), undefined);
  });

  test('a lease not touched for FOLD_AFTER_MS folds into the totals: the day counts it, a late return gives nothing back', () => {
    const leases = [
      { holder: 'old', kind: 'swap' as const, granted: 7, at: 0 },
      { holder: 'new', kind: 'swap' as const, granted: 3, at: FOLD_AFTER_MS },
    ];
    const f = foldOld([], { 'count:swap': '1' }, FOLD_AFTER_MS + 1, leases);
    assert.deepEqual(f.leases, [leases[1]]);
    assert.equal(f.folded['count:swap'], '8');
    assert.equal(ledgerTotals(f.entries, f.folded, withLease(f.leases, 'old', 'swap', -7, FOLD_AFTER_MS + 2)).get('count:swap'), 11n);
  });
});
