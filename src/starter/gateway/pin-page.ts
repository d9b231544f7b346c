/**
 * The reference PIN-entry page, GET /pin/{swap_id}: one static HTML document with its style and
 * script inline (no build step, no external assets), served under a strict Content-Security-Policy
 * that allows exactly these two inline blocks (by hash) and fetches to this origin.
 *
 * In the browser it:
 *  - takes the pin_token from the URL fragment (`#token=…`, never sent to any server) and removes
 *    it from the address bar and history at once (history.replaceState); the token then lives only
 *    in a script variable;
 *  - fetches GET /v1/swaps/{swap_id}/summary with the token and shows what the user is confirming
 *    (#amount, #rate, #converted) and a live countdown (#time-left);
 *  - posts the PIN (#pin, a password field) to /v1/swaps/{swap_id}/pin with the token as Bearer,
 *    clears the field before the request leaves, and says the outcome in words (#outcome).
 * The PIN is never written to the DOM, the URL or storage; the input has no name, and
 * `form-action 'none'` stops the browser from submitting the form by itself if the script failed.
 * The page reflects nothing from the request, so it is the same bytes for every swap.
 */
import { createHash } from 'node:crypto';

const STYLE = `
:root{color-scheme:light}
body{font-family:system-ui,-apple-system,"Segoe UI",sans-serif;background:#f4f5f7;margin:0;padding:2rem 1rem;color:#1d2433}
main{max-width:28rem;margin:auto;background:#fff;border-radius:10px;padding:1.5rem 2rem;box-shadow:0 1px 4px #0002}
h1{font-size:1.3rem;margin-top:0}
dl{display:grid;grid-template-columns:auto 1fr;gap:.4rem 1rem;margin:1rem 0}
dt{color:#5b6478}dd{margin:0;font-weight:600;font-variant-numeric:tabular-nums}
label{display:block;margin:1rem 0 .3rem;font-weight:600}
input{font-size:1.3rem;padding:.5rem .6rem;width:100%;box-sizing:border-box;border:1px solid #98a0b3;border-radius:6px;letter-spacing:.2em}
button{margin-top:.8rem;font-size:1rem;padding:.6rem 1.2rem;border-radius:6px;border:1px solid #137333;background:#137333;color:#fff;cursor:pointer}
button:disabled{background:#9aa3b5;border-color:#9aa3b5;cursor:not-allowed}
#outcome{min-height:1.5em;margin:1rem 0 0;font-weight:600}
#outcome.ok{color:#137333}#outcome.bad{color:#b3261e}#outcome.info{color:#1d2433}
.note{color:#5b6478;font-size:.85rem;margin-top:1.2rem}
`;

const SCRIPT = `
(function () {
  'use strict';
  var $ = function (id) { return document.getElementById(id); };
  var form = $('pin-form'), pinEl = $('pin'), submitEl = $('submit'), outcomeEl = $('outcome'), timeEl = $('time-left');
  var parts = location.pathname.split('/');
  var swapId = decodeURIComponent(parts[parts.length - 1] || '');
  var m = /(?:^#|&)token=([^&]*)/.exec(location.hash);
  var token = m ? decodeURIComponent(m[1]) : '';
  if (location.hash) history.replaceState(null, '', location.pathname + location.search);
  var api = '/v1/swaps/' + encodeURIComponent(swapId);
  var deadline = null, timer = null, closed = false;

  function say(text, kind) { outcomeEl.textContent = text; outcomeEl.className = kind || 'info'; }
  function setBusy(b) { submitEl.disabled = b || closed; pinEl.disabled = b || closed; }
  function close(text, kind) {
    closed = true; setBusy(true);
    if (timer) { clearInterval(timer); timer = null; }
    timeEl.textContent = '\\u2014';
    say(text, kind);
  }
  function money(n, cur) {
    if (typeof n !== 'number') return '\\u2014';
    return cur + ' ' + n.toLocaleString('en-US', { minimumFractionDigits: 2, maximumFractionDigits: 2 });
  }
  function plural(n, word) { return n + ' ' + word + (n === 1 ? '' : 's'); }
  function tick() {
    var left = Math.max(0, Math.round((deadline - Date.now()) / 1000));
    timeEl.textContent = Math.floor(left / 60) + ':' + String(left % 60).padStart(2, '0');
    if (left <= 0 && !closed) close('This swap has expired', 'bad');
  }
  var FINAL = {
    confirmed: ['Swap confirmed', 'ok'],
    expired: ['This swap has expired', 'bad'],
    cancelled: ['This swap was cancelled', 'bad'],
    failed: ['This swap could not be completed', 'bad'],
    needs_reconciliation: ['We could not confirm the result yet. Please check with the merchant before trying again.', 'bad'],
    reconciled: ['The merchant has settled this swap. Please check with the merchant for its result.', 'bad']
  };
  function showState(s) {
    if (FINAL[s.state]) { close(FINAL[s.state][0], FINAL[s.state][1]); return; }
    if (s.state === 'confirming') say('Your PIN is being checked\\u2026');
    else if (s.state === 'initializing') say('This swap is being prepared\\u2026');
  }
  function authProblem(status) {
    // A wrong token and an unknown swap get the same 404 (no probing for swaps), so one message.
    if (status === 401 || status === 403 || status === 404) close('This PIN link is not valid. Ask for a new link.', 'bad');
    else if (status === 429) say('Too many attempts. Wait a minute and try again.', 'bad');
    else say('Something went wrong. Try again in a moment.', 'bad');
  }
  function headers(json) {
    var h = { authorization: 'Bearer ' + token };
    if (json) h['content-type'] = 'application/json';
    return h;
  }
  function fetchSummary() {
    return fetch(api + '/summary', { headers: headers(false), cache: 'no-store', credentials: 'omit' });
  }
  // The PIN was sent but the swap has not answered in time (no worker polling): the server keeps
  // the PIN and the swap applies it once a worker is back, so watch the state rather than asking
  // for the PIN again; after a minute, let the user try again.
  function awaitAnswer(until) {
    say('Your PIN was sent; the swap has not answered yet. Please wait \u2014 do not type it again.');
    fetchSummary()
      .then(function (res) { return res.ok ? res.json() : null; })
      .catch(function () { return null; })
      .then(function (s) {
        if (closed) return;
        if (s && s.state !== 'awaiting_pin' && s.state !== 'confirming') { load(); return; }
        if (Date.now() < until) { setTimeout(function () { awaitAnswer(until); }, 3000); return; }
        load().then(function () { if (!closed) say('The swap has still not answered. If nothing changes, type your PIN again.', 'bad'); });
      });
  }
  function load() {
    return fetchSummary()
      .then(function (res) {
        if (res.status === 503) { say('The swap service is busy. Checking again\u2026'); setTimeout(load, 5000); return; }
        if (!res.ok) { authProblem(res.status); return; }
        return res.json().then(function (s) {
          $('amount').textContent = money(s.amount, s.from_currency);
          $('converted').textContent = money(s.converted_amount, s.to_currency);
          $('rate').textContent = typeof s.rate_used === 'number'
            ? '1 ' + s.from_currency + ' = ' + s.rate_used.toLocaleString('en-US', { maximumFractionDigits: 6 }) + ' ' + s.to_currency : '\\u2014';
          $('attempts').textContent = String(s.pin_attempts_left);
          if (typeof s.seconds_left === 'number' && !closed) {
            deadline = Date.now() + s.seconds_left * 1000;
            if (!timer) timer = setInterval(tick, 250);
            tick();
          }
          showState(s);
          if (!closed && s.state === 'awaiting_pin') { setBusy(false); pinEl.focus(); }
        });
      })
      .catch(function () { say('We could not reach the server. Check your connection and reload.', 'bad'); });
  }
  form.addEventListener('submit', function (ev) {
    ev.preventDefault();
    if (closed) return;
    var body = JSON.stringify({ wallet_pin: pinEl.value });
    var empty = pinEl.value.trim() === '';
    pinEl.value = '';
    if (empty) { say('Please type your wallet PIN.', 'bad'); return; }
    setBusy(true);
    say('Checking your PIN\\u2026');
    fetch(api + '/pin', { method: 'POST', headers: headers(true), body: body, cache: 'no-store', credentials: 'omit' })
      .then(function (res) {
        body = null;
        if (res.status === 200) {
          return res.json().then(function (o) {
            $('attempts').textContent = typeof o.attempts_left === 'number' ? String(o.attempts_left) : $('attempts').textContent;
            if (o.outcome === 'pin_rejected') {
              if (o.state === 'awaiting_pin') { say('Wrong PIN \\u2014 ' + plural(o.attempts_left, 'attempt') + ' left', 'bad'); setBusy(false); pinEl.focus(); }
              else if (o.state === 'expired') close('Wrong PIN, and this swap has expired', 'bad');
              else close('Wrong PIN \\u2014 no attempts left. This swap has been stopped.', 'bad');
              return;
            }
            var f = FINAL[o.outcome];
            if (f) close(f[0], f[1]); else { say('Something went wrong. Try again.', 'bad'); setBusy(false); }
          });
        }
        if (res.status === 409) { say('This swap is not waiting for a PIN right now. Try again in a moment.', 'bad'); setBusy(false); return; }
        if (res.status === 410) { closed = true; return load(); }
        if (res.status === 504) { awaitAnswer(Date.now() + 60000); return; }
        // Refused before it reached the swap (its wrong-PIN budget could not be checked): nothing was spent.
        if (res.status === 503) { say('Your PIN was not sent: the service is busy. Type it again in a moment.', 'bad'); setBusy(false); pinEl.focus(); return; }
        if (res.status === 400) { say('That PIN could not be read. Please type it again.', 'bad'); setBusy(false); return; }
        authProblem(res.status);
        if (!closed) setBusy(false);
      })
      .catch(function () { body = null; say('We could not reach the server. Check your connection and try again.', 'bad'); setBusy(false); });
  });
  if (!token) { close('This PIN link is incomplete. Open the link you were given again.', 'bad'); return; }
  setBusy(true);
  load();
})();
`;

const HTML = `<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<title>Confirm your swap</title><style>${STYLE}</style></head>
<body><main>
<h1>Confirm your swap</h1>
<dl>
<dt>You convert</dt><dd id="amount">\u2026</dd>
<dt>Rate</dt><dd id="rate">\u2026</dd>
<dt>You receive</dt><dd id="converted">\u2026</dd>
<dt>Time left</dt><dd id="time-left">\u2026</dd>
<dt>PIN attempts left</dt><dd id="attempts">\u2026</dd>
</dl>
<form id="pin-form" method="post" autocomplete="off" novalidate>
<label for="pin">Wallet PIN</label>
<input id="pin" type="password" autocomplete="off" inputmode="numeric" maxlength="32" spellcheck="false" disabled>
<button id="submit" type="submit" disabled>Confirm swap</button>
</form>
<p id="outcome" class="info" role="status" aria-live="polite"></p>
<p class="note">Your PIN goes only to this swap's confirmation. Never share it with anyone.</p>
</main><script>${SCRIPT}</script></body></html>`;

const sha256b64 = (s: string): string => createHash('sha256').update(s, 'utf8').digest('base64');

export const PIN_PAGE_HTML = HTML;

/** Only the page's own inline style and script run; it may only talk to this origin. */
const PIN_PAGE_CSP = [
  "default-src 'none'",
  `script-src 'sha256-${sha256b64(SCRIPT)}'`,
  `style-src 'sha256-${sha256b64(STYLE)}'`,
  "connect-src 'self'",
  "img-src 'none'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ');

export const PIN_PAGE_HEADERS: Record<string, string> = {
  'content-type': 'text/html; charset=utf-8',
  'content-security-policy': PIN_PAGE_CSP,
  'cache-control': 'no-store',
  'referrer-policy': 'no-referrer',
  'x-content-type-options': 'nosniff',
  'x-frame-options': 'DENY',
  'cross-origin-opener-policy': 'same-origin',
};
