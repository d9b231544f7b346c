/**
 * Records workflow histories for the replay tests (test/unit/replay.test.ts): runs representative swap
 * and payment-link flows on a real dev server + simulator, then writes each encrypted history to
 * test/replay/<name>.json. Run after a deliberate workflow change (`npx tsx scripts/record-histories.ts`)
 * and commit the files: replaying old histories is how an incompatible change is caught.
 * The key in test/replay/test-key.txt is a test-only key that protects nothing.
 */
import fs from 'node:fs';
import path from 'node:path';
import { historyToJSON } from '@temporalio/common/lib/proto-utils';
import { startStack } from '../test/helpers/stack';

const dir = path.resolve(__dirname, '..', 'test', 'replay');

async function main(): Promise<void> {
  const keys = fs.readFileSync(path.join(dir, 'test-key.txt'), 'utf8').trim();
  const stack = await startStack({ keys, simulator: { pins: { 'user-r': '2468' } }, client: { linkLifetimeSeconds: 2, linkLateNotificationGraceSeconds: 1 } });
  const stamp = Date.now().toString(36);
  const save = async (name: string, id: string) => {
    const h = stack.client.workflow.getHandle(id);
    await h.result();
    fs.writeFileSync(path.join(dir, `${name}.json`), historyToJSON(await h.fetchHistory()) + '\n');
    console.log(`recorded ${name} (${id})`);
  };
  try {
    const swap = (txn: string) => ({ user_ref: 'user-r', from_currency: 'USD', to_currency: 'NGN', amount: 12.5, txn_ref: txn });
    const a = await stack.mpf.startSwap(swap(`rec-ok-${stamp}`));
    await stack.mpf.submitPin(a.swap.swap_id, { wallet_pin: '0000' });
    await stack.mpf.submitPin(a.swap.swap_id, { wallet_pin: '2468' });
    await save('swap-wrong-pin-then-confirmed', a.swap.swap_id);

    const b = await stack.mpf.startSwap(swap(`rec-cancel-${stamp}`));
    await stack.mpf.cancelSwap(b.swap.swap_id, 'recorded cancel');
    await save('swap-cancelled', b.swap.swap_id);

    const link = (txn: string) => ({
      user_ref: 'cust-r', txn_merchant_ref: txn, amount: 3000, full_name: 'Ada Obi', email: 'ada@example.com',
      phone: '+2348012345678', redirect_url: 'http://127.0.0.1:9/thanks',
    });
    const c = await stack.mpf.createLink(link(`rec-paid-${stamp}`));
    const note = (id: string, status: string) => ({ event: `collection.${status}`, data: { payment_ref: c.link.payment_ref, status, notification_id: id } });
    for (const n of [note('n1', 'pending'), note('n2', 'successful'), note('n2', 'successful'), note('n3', 'failed')]) {
      await stack.mpf.deliverNotification(c.link.link_id, n, JSON.stringify(n));
    }
    await save('paylink-paid-with-duplicates', c.link.link_id);

    const d = await stack.mpf.createLink(link(`rec-expired-${stamp}`));
    await save('paylink-expired', d.link.link_id);
  } finally {
    await stack.stop();
  }
}

main().then(
  () => process.exit(0),
  (e) => {
    console.error(e);
    process.exit(1);
  },
);
