/**
 * The console's pages: eta templates (escaped by default: `<%= %>` escapes, `<%~ %>` is used only
 * for another template's output) kept as strings in this module, so `tsc` carries them into the
 * build and nothing reads template files at run time. No page has a script; the style sheet is
 * served from /console/assets/console.css (the CSP allows nothing inline).
 */
import { Eta } from 'eta';

const LAYOUT = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title><%= it.title %> · Console · merchant-payment-flows</title>
<link rel="stylesheet" href="/console/assets/console.css"></head>
<body>
<header class="top"><a class="brand" href="/console/">Payments console</a>
<% if (it.session) { %><nav>
<% for (const [href, label] of it.nav) { %><a href="<%= href %>"<% if (href === it.active) { %> aria-current="page"<% } %>><%= label %></a> <% } %>
</nav>
<form class="who" method="post" action="/console/sign-out"><input type="hidden" name="_csrf" value="<%= it.csrf %>">
<span><%= it.session.name %> · <b class="role"><%= it.session.role %></b></span> <button type="submit" class="link">Sign out</button></form><% } %>
</header>
<main>
<% if (it.flash) { %><p class="flash <%= it.flash.ok ? 'ok' : 'bad' %>" role="status"><%= it.flash.text %></p><% } %>
<%~ it.body %>
</main></body></html>`;

const SIGN_IN = `<% layout('@layout') %>
<h1>Sign in</h1>
<% if (it.problem) { %><p class="flash bad" role="alert"><%= it.problem %></p><% } %>
<% if (it.mode === 'oidc') { %>
<p>Sign in with your organisation's account at <b><%= it.issuer %></b>.</p>
<p><a class="button" href="/console/sign-in/start">Sign in</a></p>
<% } else if (it.mode === 'local') { %>
<p>This gateway runs the demo against the embedded simulator: open one of the one-time sign-in links the demo printed
(one for support, finance and operator). Each link signs in once; restart the demo for new ones.</p>
<% } else { %>
<p>The console signs people in through the identity provider: set GATEWAY_OIDC_ISSUER and GATEWAY_OIDC_AUDIENCE (and register the client GATEWAY_CONSOLE_CLIENT_ID there).</p>
<% } %>`;

const PAGER = `<% if (it.next) { %><p class="pager"><a class="button" href="<%= it.next %>">Next page →</a></p><% } %>`;

const STATE = `<span class="state s-<%= it.state %>"><%= it.state %></span><% if (it.execution) { %> <span class="state s-outside" title="closed from outside the flow, in Temporal"><%= it.execution %> in Temporal</span><% } %>`;

const PAYMENTS = `<% layout('@layout') %>
<h1>Payments</h1>
<form class="filters" method="get" action="/console/payments">
<label>Kind <select name="kind"><% for (const [v, l] of [['swap', 'Swaps'], ['payment_link', 'Payment links']]) { %><option value="<%= v %>"<% if (it.q.kind === v) { %> selected<% } %>><%= l %></option><% } %></select></label>
<label>txn_ref <input name="txn_ref" value="<%= it.q.txn_ref %>"></label>
<label>user_ref <input name="user_ref" value="<%= it.q.user_ref %>"></label>
<label>State <select name="state"><option value="">any</option><% for (const s of it.states) { %><option<% if (it.q.state === s) { %> selected<% } %>><%= s %></option><% } %></select></label>
<label>Created from <input type="date" name="created_from" value="<%= it.q.created_from %>"></label>
<label>Created before <input type="date" name="created_to" value="<%= it.q.created_to %>"></label>
<button type="submit">Search</button>
<% if (it.csv) { %><a class="button secondary" href="<%= it.csv %>">Export CSV</a><% } %>
</form>
<% if (it.notice) { %><p class="flash note"><%= it.notice %></p><% } %>
<div class="scroll"><table>
<thead><tr><th>Payment</th><th class="num">Amount</th><th>Customer</th><th>State</th><th>Created</th></tr></thead>
<tbody>
<% for (const r of it.rows) { %><tr>
<td><a href="/console/payments/<%= encodeURIComponent(r.flow_id) %>"><%= r.reference || r.flow_id %></a><br><small><%= r.kind === 'swap' ? 'swap' : 'payment link' %></small></td>
<td class="num"><%= r.amountText %></td>
<td><%= r.customer_ref ?? '—' %></td>
<td><%~ include('@state', { state: r.state ?? r.execution_status, execution: r.outside }) %></td>
<td><%= r.createdText %></td>
</tr><% } %>
<% if (it.rows.length === 0) { %><tr><td colspan="5" class="empty">No payments match.</td></tr><% } %>
</tbody></table></div>
<%~ include('@pager', it) %>`;

const PAYMENT = `<% layout('@layout') %>
<p><a href="/console/payments?kind=<%= it.kind %>">← Payments</a></p>
<h1><%= it.amountText %> <small><%= it.kind === 'swap' ? 'swap' : 'payment link' %> <%= it.flowId %></small></h1>
<p><%~ include('@state', { state: it.view.state, execution: it.view.execution }) %></p>
<% if (it.view.reason) { %><p class="flash note"><%= it.view.reason %></p><% } %>
<dl class="facts">
<% for (const [k, v] of it.facts) { %><dt><%= k %></dt><dd><%= v %></dd><% } %>
</dl>
<% if (it.resolvable) { %>
<h2>Resolve</h2>
<%~ include('@resolve', { flowId: it.flowId, kind: it.kind, csrf: it.csrf, back: it.back }) %>
<% } %>
<h2>Timeline</h2>
<% if (it.timeline) { %><ol class="timeline"><% for (const t of it.timeline) { %>
<li class="t-<%= t.kind %>"><time><%= t.at %></time> <b><%= t.name %></b><% if (t.outcome) { %> — <%= t.outcome %><% } %><% if (t.detail) { %><br><small><%= t.detail %></small><% } %></li>
<% } %></ol><% } else { %><p class="flash note"><%= it.timelineNotice %></p><% } %>
<h2>Events</h2>
<% if (it.events.length === 0) { %><p>No events yet.</p><% } %>
<% for (const e of it.events) { %><section class="event">
<h3><code><%= e.type %></code> <small><%= e.timestamp %> · <%= e.id %></small></h3>
<div class="scroll"><table><thead><tr><th>Endpoint</th><th>State</th><th class="num">Attempts</th><th>Answer</th><th>Delivered</th></tr></thead><tbody>
<% for (const d of e.deliveries) { %><tr><td><%= d.endpoint %><% if (d.redelivery) { %> <small>(<%= d.redelivery %>)</small><% } %></td><td><span class="state s-<%= d.state %>"><%= d.state %></span></td><td class="num"><%= d.attempts %></td><td><%= d.last_status !== undefined ? 'HTTP ' + d.last_status : (d.last_error ?? '—') %></td><td><%= d.delivered_at ?? d.next_attempt_at ?? '—' %></td></tr><% } %>
<% if (e.deliveries.length === 0) { %><tr><td colspan="5" class="empty">No delivery recorded.</td></tr><% } %>
</tbody></table></div>
<% if (it.mayAct) { %><form class="inline" method="post" action="/console/events/<%= encodeURIComponent(e.id) %>/redeliver">
<input type="hidden" name="_csrf" value="<%= it.csrf %>"><input type="hidden" name="back" value="<%= it.back %>">
<label>Endpoint <select name="endpoint"><option value="">its endpoints</option><% for (const ep of it.endpoints) { %><option value="<%= ep.id %>"><%= ep.url %></option><% } %></select></label>
<button type="submit">Redeliver</button></form><% } %>
</section><% } %>`;

const RESOLVE = `<form class="stack" method="post" action="/console/reconciliations/<%= encodeURIComponent(it.flowId) %>/resolve">
<input type="hidden" name="_csrf" value="<%= it.csrf %>"><input type="hidden" name="back" value="<%= it.back %>">
<label>What the provider shows <select name="outcome" required><% for (const o of (it.kind === 'swap' ? ['confirmed', 'failed'] : ['paid', 'failed'])) { %><option><%= o %></option><% } %></select></label>
<label>Provider reference <input name="provider_reference" required maxlength="100"></label>
<label>Note (what was checked and done) <textarea name="note" required maxlength="1000"></textarea></label>
<button type="submit">Resolve as <%= it.kind === 'swap' ? 'swap' : 'payment link' %></button></form>`;

const RECONCILIATIONS = `<% layout('@layout') %>
<h1>Needs reconciliation</h1>
<p>Money may have moved and nothing settled it: check the provider, then record what it shows. The audit names you.</p>
<div class="scroll"><table><thead><tr><th>Payment</th><th class="num">Amount</th><th>Customer</th><th>Since</th><% if (it.mayAct) { %><th>Resolve</th><% } %></tr></thead><tbody>
<% for (const r of it.rows) { %><tr>
<td><a href="/console/payments/<%= encodeURIComponent(r.flow_id) %>"><%= r.reference || r.flow_id %></a><br><small><%= r.kind === 'swap' ? 'swap' : 'payment link' %></small></td>
<td class="num"><%= r.amountText %></td><td><%= r.customer_ref ?? '—' %></td><td><%= r.createdText %></td>
<% if (it.mayAct) { %><td><details><summary>Resolve…</summary><%~ include('@resolve', { flowId: r.flow_id, kind: r.kind, csrf: it.csrf, back: '/console/reconciliations' }) %></details></td><% } %>
</tr><% } %>
<% if (it.rows.length === 0) { %><tr><td colspan="5" class="empty">Nothing waits for reconciliation.</td></tr><% } %>
</tbody></table></div>
<%~ include('@pager', it) %>`;

const SECRET = `<% if (it.secret) { %><div class="secret" role="status"><p><b><%= it.secret.label %></b> — shown this once; copy it now.</p><pre><%= it.secret.value %></pre></div><% } %>`;

const ENDPOINTS = `<% layout('@layout') %>
<h1>Webhook endpoints</h1>
<%~ include('@secret', it) %>
<% if (it.notice) { %><p class="flash note"><%= it.notice %></p><% } else { %>
<div class="scroll"><table><thead><tr><th>URL</th><th>Events</th><th>Status</th><th>Created</th><% if (it.mayAct) { %><th>Actions</th><% } %></tr></thead><tbody>
<% for (const e of it.rows) { %><tr><td><%= e.url %><br><small><%= e.id %><% if (e.description) { %> · <%= e.description %><% } %></small></td><td><%= e.enabled_events.join(', ') %></td>
<td><span class="state s-<%= e.status %>"><%= e.status %></span></td><td><%= e.created_at %></td>
<% if (it.mayAct) { %><td class="actions"><% for (const a of [e.status === 'enabled' ? 'disable' : 'enable', 'roll_secret', 'delete']) { %><form class="inline" method="post" action="/console/webhooks/<%= e.id %>/<%= a %>"><input type="hidden" name="_csrf" value="<%= it.csrf %>"><button type="submit" class="<%= a === 'delete' ? 'danger' : 'secondary' %>"><%= a === 'roll_secret' ? 'Roll secret' : a[0].toUpperCase() + a.slice(1) %></button></form><% } %></td><% } %>
</tr><% } %>
<% if (it.rows.length === 0) { %><tr><td colspan="5" class="empty">No endpoints.</td></tr><% } %>
</tbody></table></div>
<% if (it.mayAct) { %><h2>Add an endpoint</h2>
<form class="stack" method="post" action="/console/webhooks"><input type="hidden" name="_csrf" value="<%= it.csrf %>">
<label>URL <input name="url" type="url" required></label>
<label>Events (comma-separated, or *) <input name="enabled_events" value="*" required></label>
<label>Description <input name="description" maxlength="200"></label>
<button type="submit">Add endpoint</button></form><% } %>
<% } %>`;

const API_KEYS = `<% layout('@layout') %>
<h1>API keys</h1>
<%~ include('@secret', it) %>
<% if (it.notice) { %><p class="flash note"><%= it.notice %></p><% } else { %>
<div class="scroll"><table><thead><tr><th>Key</th><th>Role</th><th>Created</th><th>Expires</th><th>Status</th><% if (it.mayAct) { %><th>Actions</th><% } %></tr></thead><tbody>
<% for (const k of it.rows) { %><tr><td><%= k.id %><% if (k.label) { %><br><small><%= k.label %></small><% } %></td><td><%= k.role %></td><td><%= k.created_at %><br><small><%= k.created_by %></small></td><td><%= k.expires_at ?? '—' %></td>
<td><%= k.revoked_at ? 'revoked ' + k.revoked_at : (k.rotated_to ? 'rotated to ' + k.rotated_to : 'active') %></td>
<% if (it.mayAct) { %><td class="actions"><% if (!k.revoked_at) { %>
<form class="inline" method="post" action="/console/api-keys/<%= encodeURIComponent(k.id) %>/rotate"><input type="hidden" name="_csrf" value="<%= it.csrf %>"><label>Overlap (s) <input name="overlap_seconds" type="number" min="0" value="3600" class="short"></label> <button type="submit" class="secondary">Rotate</button></form>
<form class="inline" method="post" action="/console/api-keys/<%= encodeURIComponent(k.id) %>/revoke"><input type="hidden" name="_csrf" value="<%= it.csrf %>"><button type="submit" class="danger">Revoke</button></form><% } %></td><% } %>
</tr><% } %>
<% if (it.rows.length === 0) { %><tr><td colspan="6" class="empty">No keys created here (keys from the keyring file are not listed).</td></tr><% } %>
</tbody></table></div>
<% if (it.mayAct) { %><h2>Create a key</h2>
<form class="stack" method="post" action="/console/api-keys"><input type="hidden" name="_csrf" value="<%= it.csrf %>">
<label>Role <select name="role"><option>read_only</option><option selected>backend</option><option>operator</option></select></label>
<label>Label <input name="label" maxlength="100"></label>
<label>Expires at (optional) <input name="expires_at" type="date"></label>
<button type="submit">Create key</button></form><% } %>
<% } %>`;

const PROVIDER = `<% layout('@layout') %>
<h1>Provider guard</h1>
<% if (it.guard.paused) { %><p class="flash bad"><b>Paused</b> by <%= it.guard.paused.by %> since <%= it.guard.paused.at %>: <%= it.guard.paused.reason %></p>
<% } else { %><p class="flash ok">Money-moving calls are allowed.</p><% } %>
<% if (it.mayAct) { %><% if (it.guard.paused) { %>
<form method="post" action="/console/provider/resume"><input type="hidden" name="_csrf" value="<%= it.csrf %>"><button type="submit">Resume</button></form>
<% } else { %><form class="stack" method="post" action="/console/provider/pause"><input type="hidden" name="_csrf" value="<%= it.csrf %>">
<label>Reason <input name="reason" required maxlength="500"></label><button type="submit" class="danger">Pause every money-moving call</button></form><% } %><% } %>
<h2>Breakers</h2>
<div class="scroll"><table><thead><tr><th>Endpoint class</th><th>State</th><th>Detail</th></tr></thead><tbody>
<% for (const b of it.breakers) { %><tr><td><%= b.name %></td><td><span class="state s-<%= b.state %>"><%= b.state %></span></td><td><small><%= b.detail %></small></td></tr><% } %>
</tbody></table></div>
<h2>Last actions</h2>
<ul><% for (const a of it.audit) { %><li><%= a.at %> — <%= a.action %> by <%= a.by %><% if (a.reason) { %>: <%= a.reason %><% } %></li><% } %>
<% if (it.audit.length === 0) { %><li>None.</li><% } %></ul>`;

const LIMITS = `<% layout('@layout') %>
<h1>Today's limits</h1>
<form class="filters" method="get" action="/console/limits"><label>And a customer's (user_ref) <input name="user_ref" value="<%= it.userRef %>"></label><button type="submit">Show</button></form>
<% if (it.notice) { %><p class="flash note"><%= it.notice %></p><% } else { %>
<div class="scroll"><table><thead><tr><th>Limit</th><th>Scope</th><th class="num">Used</th><th class="num">Max</th><th>Resets</th></tr></thead><tbody>
<% for (const l of it.rows) { %><tr><td><%= l.limit %></td><td><%= l.scope %><% if (l.user_ref) { %> <small><%= l.user_ref %></small><% } %></td><td class="num"><%= l.used %> <%= l.unit %></td><td class="num"><%= l.max %> <%= l.unit %></td><td><%= l.resets_at %></td></tr><% } %>
<% if (it.rows.length === 0) { %><tr><td colspan="5" class="empty">No limit is configured (LIMIT_*).</td></tr><% } %>
</tbody></table></div><% } %>`;

const ERROR = `<% layout('@layout') %>
<h1><%= it.heading %></h1><p><%= it.message %></p><p><a href="/console/">Back to the console</a></p>`;

export const CONSOLE_CSS = `:root{--fg:#1a1f36;--muted:#697386;--line:#e3e8ee;--bg:#f6f9fc;--accent:#635bff;--ok:#0e6245;--okbg:#cbf4c9;--bad:#a41c4e;--badbg:#fde2dd;--note:#5b4a00;--notebg:#fcf5d9}
*{box-sizing:border-box}body{margin:0;font:15px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:var(--fg);background:var(--bg)}
.top{display:flex;flex-wrap:wrap;gap:.5rem 1.25rem;align-items:center;padding:.75rem 1rem;background:#fff;border-bottom:1px solid var(--line)}
.brand{font-weight:700;color:var(--fg);text-decoration:none}nav{display:flex;flex-wrap:wrap;gap:.25rem .9rem}nav a{color:var(--muted);text-decoration:none}
nav a[aria-current=page]{color:var(--accent);font-weight:600}.who{margin-left:auto;color:var(--muted);font-size:.9rem}.role{color:var(--fg)}
main{max-width:72rem;margin:0 auto;padding:1rem}h1{font-size:1.5rem;margin:.5rem 0 1rem}h1 small{font-size:.9rem;color:var(--muted);font-weight:400;word-break:break-all}h2{font-size:1.1rem;margin-top:1.75rem}
a{color:var(--accent)}.scroll{overflow-x:auto;background:#fff;border:1px solid var(--line);border-radius:6px}table{border-collapse:collapse;width:100%;min-width:36rem}
th,td{text-align:left;padding:.55rem .75rem;border-bottom:1px solid var(--line);vertical-align:top}th{font-size:.78rem;text-transform:uppercase;letter-spacing:.03em;color:var(--muted)}
.num{text-align:right;white-space:nowrap}.empty{color:var(--muted);text-align:center}small{color:var(--muted)}
.state{display:inline-block;padding:.05rem .45rem;border-radius:4px;font-size:.8rem;background:#e3e8ee;white-space:nowrap}
.s-confirmed,.s-paid,.s-reconciled,.s-delivered,.s-enabled,.s-closed{background:var(--okbg);color:var(--ok)}.s-failed,.s-open,.s-outside,.s-terminated{background:var(--badbg);color:var(--bad)}
.s-needs_reconciliation,.s-half_open,.s-pending{background:var(--notebg);color:var(--note)}
.filters{display:flex;flex-wrap:wrap;gap:.5rem .75rem;align-items:flex-end;margin-bottom:1rem}label{display:flex;flex-direction:column;font-size:.8rem;color:var(--muted);gap:.2rem}
input,select,textarea{font:inherit;padding:.35rem .5rem;border:1px solid #c1c9d2;border-radius:5px;background:#fff;color:var(--fg);max-width:100%}textarea{min-height:4rem}.short{width:6rem}
button,.button{font:inherit;font-weight:600;padding:.4rem .85rem;border-radius:5px;border:1px solid var(--accent);background:var(--accent);color:#fff;cursor:pointer;text-decoration:none;display:inline-block}
.secondary{background:#fff;color:var(--accent)}.danger{background:#fff;color:var(--bad);border-color:var(--bad)}.link{background:none;border:0;color:var(--accent);padding:0;font-weight:400}
.stack{display:flex;flex-direction:column;gap:.6rem;max-width:28rem;background:#fff;padding:1rem;border:1px solid var(--line);border-radius:6px}.inline{display:inline-flex;gap:.4rem;align-items:flex-end;margin:.25rem .25rem 0 0}
.flash{padding:.6rem .8rem;border-radius:6px}.ok{background:var(--okbg);color:var(--ok)}.bad{background:var(--badbg);color:var(--bad)}.note{background:var(--notebg);color:var(--note)}
.facts{display:grid;grid-template-columns:max-content 1fr;gap:.3rem 1rem;background:#fff;padding:1rem;border:1px solid var(--line);border-radius:6px}.facts dt{color:var(--muted)}.facts dd{margin:0;word-break:break-all}
.timeline{list-style:none;padding:0;border-left:2px solid var(--line);margin-left:.4rem}.timeline li{padding:.3rem 0 .3rem 1rem}.timeline time{color:var(--muted);font-size:.85rem}
.event{margin:1rem 0}.event h3{font-size:.95rem;margin:.3rem 0}.secret{background:#fff;border:2px solid var(--accent);border-radius:6px;padding:.5rem 1rem;margin-bottom:1rem}.secret pre{white-space:pre-wrap;word-break:break-all;font-size:1rem}
.pager{margin-top:1rem}details summary{cursor:pointer;color:var(--accent)}.actions{white-space:nowrap}
@media (max-width:40rem){.who{margin-left:0}main{padding:.6rem}.facts{grid-template-columns:1fr}.facts dt{margin-top:.4rem}}`;

/** The console's template engine, with every page loaded. */
export function consoleTemplates(): Eta {
  const eta = new Eta({ autoEscape: true, autoTrim: false, cache: true });
  const templates: Record<string, string> = {
    layout: LAYOUT, 'sign-in': SIGN_IN, pager: PAGER, state: STATE, payments: PAYMENTS, payment: PAYMENT, resolve: RESOLVE,
    reconciliations: RECONCILIATIONS, secret: SECRET, endpoints: ENDPOINTS, 'api-keys': API_KEYS, provider: PROVIDER, limits: LIMITS, error: ERROR,
  };
  for (const [name, text] of Object.entries(templates)) eta.loadTemplate(`@${name}`, text);
  return eta;
}
