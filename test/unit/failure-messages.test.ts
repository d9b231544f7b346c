/**
 * Between our workflows and our client, a failure says what it is by its type and details
 * (src/workflows/record-failures.ts; the SDK's own error classes), never by text another module
 * parses: no regex and no string search over an error's message in src/workflows, src/starter/client
 * or src/starter/cli. Checked on the source text, so it is cheap; the few reads of text the
 * Temporal server or the network give with nothing else to go on are listed below, each with why.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { describe, test } from 'node:test';

const ROOT = path.resolve(__dirname, '..', '..');
const SCANNED = ['src/workflows', 'src/starter/client', 'src/starter/cli'];

/** What reads an error's text: a regex tested on it, or a string search in it. */
const READS_ERROR_TEXT: readonly RegExp[] = [
  // /…/.test(err.message), re.exec(String(cause)), new RegExp(…).exec(message)
  /\.(?:test|exec)\(\s*[^)]*\b(?:message|err|error|cause|e|text)\b/,
  // err.message.match(…), (err as Error).message.startsWith(…), String(err).includes(…)
  /\b(?:message|String\((?:err|error|e|cause)\b[^)]*\))\)?\s*(?:\?\?\s*'')?\)?\s*\.(?:match|matchAll|search|startsWith|endsWith|includes)\(/,
];

interface Allowed {
  file: string;
  /** A fragment of the line. */
  fragment: string;
  why: string;
}

const ALLOWED: readonly Allowed[] = [
  {
    file: 'src/starter/client/temporal-errors.ts',
    fragment: '/deadline exceeded/i.test',
    why: "the Temporal client's own deadline, which reaches us as a gRPC status or a plain Error with no type of its own",
  },
  {
    file: 'src/starter/client/temporal-errors.ts',
    fragment: '/no poller seen/i.test',
    why: 'the Temporal server says "no worker" only as FAILED_PRECONDITION with this text (no failure type)',
  },
  {
    file: 'src/starter/client/temporal-errors.ts',
    fragment: '/database|persistence|operation failed/i.test',
    why: 'the Temporal server says its database is down only as UNAVAILABLE with this text (no failure type)',
  },
  {
    file: 'src/starter/client/temporal-errors.ts',
    fragment: '/channel has been shut down/i.test',
    why: 'grpc-js refuses a call on a connection this process closed with a plain Error and this text (no gRPC code)',
  },
  {
    file: 'src/starter/client/deployment-quota.ts',
    fragment: "startsWith('No registered handler for update')",
    why: "a worker of an older release rejects an update it has no handler for with the SDK's plain ReferenceError and this text (no failure type of its own)",
  },
  {
    file: 'src/starter/client/lists.ts',
    fragment: '/search attribute/i.test(e.message)',
    why: 'the Temporal server refuses a start naming a search attribute the namespace lacks only as INVALID_ARGUMENT with this text',
  },
];

/** The lines of `source` that read an error's text ("file:line: code"). */
export function errorTextReads(file: string, source: string): string[] {
  const out: string[] = [];
  source.split('\n').forEach((line, i) => {
    const code = line.replace(/\/\/.*$/, '').trim();
    if (code.startsWith('*') || code.startsWith('/*')) return;
    if (READS_ERROR_TEXT.some((re) => re.test(code))) out.push(`${file}:${i + 1}: ${line.trim()}`);
  });
  return out;
}

function sources(dir: string): string[] {
  return fs.readdirSync(path.join(ROOT, dir), { recursive: true, encoding: 'utf8' }).filter((f) => f.endsWith('.ts')).map((f) => path.join(dir, f));
}

describe('failures between our workflows and our client', () => {
  test('no module of src/workflows, src/starter/client or src/starter/cli reads an error by its message, but the listed reads of the server\'s text', () => {
    const hits = SCANNED.flatMap(sources).flatMap((f) => errorTextReads(f, fs.readFileSync(path.join(ROOT, f), 'utf8')));
    const allowed = (hit: string): boolean => ALLOWED.some((a) => hit.startsWith(`${a.file}:`) && hit.includes(a.fragment));
    assert.deepEqual(hits.filter((h) => !allowed(h)), [], 'read the failure\'s type and details (src/workflows/record-failures.ts, the SDK\'s error classes) instead');
    const stale = ALLOWED.filter((a) => !hits.some((h) => h.startsWith(`${a.file}:`) && h.includes(a.fragment)));
    assert.deepEqual(stale, [], 'an allowed read is gone: take it off the list');
  });

  test('the check finds the reads of text that travelled between the limit ledger, the PIN budget, the outbox, event delivery and their readers before', () => {
    const before = [
      "      const m = new RegExp(`^${LIMIT_EXCEEDED}:([a-z_]+)$`).exec(message);",
      "      if (message.startsWith(`${LEDGER_CLOSED}:`)) throw new LedgerClosedError(day);",
      '      const m = err instanceof WorkflowUpdateFailedError ? new RegExp(`${BUDGET_EXHAUSTED}:(\\\\d+)`).exec(String((err.cause as Error | undefined)?.message)) : null;',
      '      if (err instanceof Error && /query.*(not (found|registered)|unknown)|did not register/i.test(err.message)) {',
      "      if (!(err instanceof Error) || !/already (started|running)|AlreadyStarted/i.test(`${err.name} ${err.message}`)) throw err;",
      "      const closed = d.kind === 'payment_link' && /not_resolvable.*closed/.test((err as Error).message);",
      "      return { status: details?.status, error: /^[a-z0-9_]{1,40}$/.test(cause.message) ? cause.message : 'delivery_failed' };",
    ];
    assert.equal(errorTextReads('before.ts', before.join('\n')).length, before.length);
    // …and not what reads a failure by its type.
    const now = ['      const exceeded = refusalOf(err, RECORD_FAILURE.limitExceeded);', '      if (!(err instanceof WorkflowExecutionAlreadyStartedError)) throw err;'];
    assert.deepEqual(errorTextReads('now.ts', now.join('\n')), []);
  });
});
