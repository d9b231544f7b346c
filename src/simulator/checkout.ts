/**
 * The hosted checkout host (its own server and port): GET /pay?payment_ref=... renders a plain
 * HTML page with a fake bank-transfer instruction and three form buttons; POST /pay applies the
 * customer's choice. complete / fail -> the link is paid / failed, a notification goes to its
 * notification_url and the browser is redirected (303) to redirect_url with payment_ref and
 * status; abandon -> no notification, the page says the payment was abandoned (the link stays
 * payable). A paid or failed link cannot be paid again.
 */
import formbody from '@fastify/formbody';
import fastify, { type FastifyInstance, type FastifyReply } from 'fastify';
import type { SimContext } from './context';
import { hashString } from './prng';
import { loggerOption } from './server';
import type { Link } from './state';

const esc = (s: string): string =>
  s.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c] as string);

const money = (amount: number, currency: string): string =>
  `${currency} ${amount.toLocaleString('en-US', { minimumFractionDigits: 2, maximumFractionDigits: 2 })}`;

const STYLE = `body{font-family:system-ui,sans-serif;background:#f4f5f7;margin:0;padding:2rem;color:#1d2433}
main{max-width:32rem;margin:auto;background:#fff;border-radius:8px;padding:1.5rem 2rem;box-shadow:0 1px 4px #0002}
h1{font-size:1.3rem}dl{display:grid;grid-template-columns:auto 1fr;gap:.3rem 1rem}dt{color:#667}dd{margin:0;font-weight:600}
.bank{background:#eef6ff;border:1px solid #b6d4fe;border-radius:6px;padding:.8rem 1rem;margin:1rem 0}
button{font-size:1rem;padding:.6rem 1rem;margin:.3rem .3rem 0 0;border-radius:6px;border:1px solid #889;cursor:pointer}
#complete{background:#137333;color:#fff;border-color:#137333}#fail{background:#b3261e;color:#fff;border-color:#b3261e}
.note{color:#667;font-size:.85rem}`;

export function page(title: string, body: string): string {
  return `<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>${esc(title)}</title><style>${STYLE}</style></head>
<body><main>${body}
<p class="note">Merchant Payments Service simulator: no money moves.</p></main></body></html>`;
}

/** A fake, stable account number derived from the payment reference. */
const accountNumber = (paymentRef: string): string => `99${String(hashString(paymentRef) % 100_000_000).padStart(8, '0')}`;

function payPage(link: Link, merchantRef: string): string {
  const amount = money(link.amount, link.currency);
  const details = `<dl>
<dt>Merchant</dt><dd id="merchant">${esc(merchantRef)}</dd>
<dt>Amount</dt><dd id="amount">${esc(amount)}</dd>
<dt>Reference</dt><dd id="txn-merchant-ref">${esc(link.txn_merchant_ref)}</dd>
<dt>Payment</dt><dd id="payment-ref">${esc(link.payment_ref)}</dd>
</dl>`;
  if (link.state !== 'open') {
    const word = link.state === 'paid' ? 'has already been paid' : 'has already failed';
    return page('Payment link closed', `<h1 id="closed">This payment link ${word}</h1>${details}<p>It cannot be paid again.</p>`);
  }
  return page(
    `Pay ${amount}`,
    `<h1>Pay ${esc(amount)} by bank transfer</h1>${details}
<div class="bank" id="instructions"><p>Transfer exactly <strong>${esc(amount)}</strong> to:</p>
<p>Bank: <strong>Simulator Bank PLC</strong><br>Account number: <strong>${accountNumber(link.payment_ref)}</strong><br>
Account name: <strong>MPS Checkout / ${esc(merchantRef)}</strong><br>Narration: <strong>${esc(link.payment_ref)}</strong></p></div>
<form method="post" action="/pay">
<input type="hidden" name="payment_ref" value="${esc(link.payment_ref)}">
<button type="submit" id="complete" name="action" value="complete">I have completed the bank transfer</button>
<button type="submit" id="fail" name="action" value="fail">Payment failed</button>
<button type="submit" id="abandon" name="action" value="abandon">Cancel</button>
</form>`,
  );
}

function html(reply: FastifyReply, status: number, body: string): FastifyReply {
  return reply.code(status).type('text/html; charset=utf-8').send(body);
}

const unknownLink = (): string => page('Unknown payment link', '<h1 id="unknown">Unknown payment link</h1><p>Check the link you were given.</p>');

export function buildCheckoutApp(ctx: SimContext, logger: boolean | object): FastifyInstance {
  const app = fastify({ logger: loggerOption(logger), forceCloseConnections: true });
  app.register(formbody);

  app.get('/pay', async (request, reply) => {
    const { payment_ref } = request.query as { payment_ref?: string };
    const link = payment_ref ? ctx.state.getLink(payment_ref) : undefined;
    if (!link) return html(reply, 404, unknownLink());
    return html(reply, 200, payPage(link, ctx.config.merchantRef));
  });

  app.post('/pay', async (request, reply) => {
    const form = (request.body ?? {}) as { payment_ref?: string; action?: string };
    const paymentRef = form.payment_ref ?? '';
    if (form.action === 'abandon') {
      const r = ctx.state.abandonLink(paymentRef, 'checkout');
      if (!r.ok && r.error === 'unknown') return html(reply, 404, unknownLink());
      if (!r.ok) return html(reply, 409, payPage(r.link, ctx.config.merchantRef));
      const back = `/pay?payment_ref=${encodeURIComponent(paymentRef)}`;
      return html(reply, 200, page('Payment abandoned', `<h1 id="abandoned">Payment abandoned</h1><p>Nothing was charged. <a href="${esc(back)}">Return to the payment</a></p>`));
    }
    if (form.action !== 'complete' && form.action !== 'fail') {
      return html(reply, 400, page('Bad request', '<h1>Unknown action</h1>'));
    }
    const r = ctx.state.settleLink(paymentRef, form.action === 'complete' ? 'paid' : 'failed', 'checkout');
    if (!r.ok && r.error === 'unknown') return html(reply, 404, unknownLink());
    if (!r.ok) return html(reply, 409, payPage(r.link, ctx.config.merchantRef));
    return reply.redirect(r.redirectTo as string, 303);
  });

  app.get('/', async (_request, reply) => html(reply, 200, page('Checkout', '<h1>Simulator checkout</h1><p>Open a pay_link to pay.</p>')));
  return app;
}
