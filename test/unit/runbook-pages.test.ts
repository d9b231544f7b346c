/**
 * How test/e2e/runbooks.test.ts reads a page: which blocks it runs, which it leaves (marked
 * illustrative), what each command must print and exit with, and that a shell session hidden in
 * an untagged fence is caught. The runbook pages themselves are parsed too, so a page whose marker
 * is malformed fails here in seconds rather than in the e2e run.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, test } from 'node:test';
import { type Block, linePattern, missingLine, parsePage } from '../helpers/runbooks';

function parse(markdown: string) {
  const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'mpf-runbook-page-')), 'page.md');
  fs.writeFileSync(file, markdown);
  try {
    return parsePage(file, 'page.md');
  } finally {
    fs.rmSync(path.dirname(file), { recursive: true, force: true });
  }
}

const PAGE = [
  '# A page',
  '<!-- runbook-setup',
  'mpf swap start --txn-ref rb-1 > /dev/null',
  '-->',
  '```console',
  '$ mpf swap status swap-rb-1',
  'swap swap-rb-1: awaiting_pin',
  '  …',
  '$ mpf reconcile resolve swap-rb-1 --outcome paid \\',
  '    --note x',
  'mpf: invalid --outcome (outcome: must be one of confirmed, failed)   # exit 1',
  '$ mpf worker &     # in the background',
  '```',
  '',
  '<!-- illustrative: needs the cluster -->',
  '',
  '```bash',
  'set -a; . .data/cluster/cluster.env; set +a',
  '```',
  '1. In a list:',
  '   ```sh',
  '   # a comment',
  '   curl -s $GW/readyz',
  '   ```',
  '```ts',
  'const x = 1;',
  '```',
  '```',
  '$ temporal workflow list',
  '```',
].join('\n');

describe('a runbook page as the runbook test reads it', () => {
  const steps = parse(PAGE);
  const blocks = steps.filter((s): s is Block => s.kind === 'block');

  test('finds every shell block with its line, the setup comment, and the untagged shell session; other languages are not shell', () => {
    assert.deepEqual(
      steps.map((s) => `${s.kind}:${s.line}`),
      ['setup:2', 'block:5', 'block:17', 'block:21', 'untagged:28'],
    );
    assert.equal(steps[0]!.kind === 'setup' && steps[0]!.script, 'mpf swap start --txn-ref rb-1 > /dev/null');
  });

  test('splits a console block into commands, continuation lines included, with the output each shows and the exit it says', () => {
    const [status, resolve, worker] = blocks[0]!.commands;
    assert.equal(status!.text, 'mpf swap status swap-rb-1');
    assert.deepEqual(status!.expected, ['swap swap-rb-1: awaiting_pin']);
    assert.equal(status!.exitCode, 0);
    assert.equal(resolve!.text, 'mpf reconcile resolve swap-rb-1 --outcome paid \\\n    --note x');
    assert.deepEqual(resolve!.expected, ['mpf: invalid --outcome (outcome: must be one of confirmed, failed)']);
    assert.equal(resolve!.exitCode, 1);
    assert.equal(worker!.background, true);
    assert.equal(status!.background, false);
  });

  test('leaves a block marked illustrative with its reason, and runs an indented bash block line by line without its comments', () => {
    assert.equal(blocks[0]!.illustrative, undefined);
    assert.equal(blocks[1]!.illustrative, 'needs the cluster');
    assert.deepEqual(blocks[2]!.commands.map((c) => c.text), ['curl -s $GW/readyz']);
  });

  test('matches shown output in order, with … for anything and times, references, ports and ages of any value', () => {
    assert.ok(linePattern('resolved_at  2026-11-24T21:51:40.120Z').test('resolved_at  2026-11-28T09:00:01.002Z'));
    assert.ok(linePattern('payment_ref   SIMSWP-000008-73930905').test('payment_ref SIMSWP-000123-0a1b2c3d'));
    assert.ok(linePattern('30617@vm  1 minute ago  100000').test('812@vm   14 seconds ago         100000'));
    assert.ok(linePattern('{"error":"worker_unavailable",…,"flow_id":"swap-1"}').test('{"error":"worker_unavailable","message":"m","flow_id":"swap-1"}'));
    assert.ok(linePattern('to 127.0.0.1:43309').test('to 127.0.0.1:36279'));
    assert.ok(!linePattern('swap swap-rb-1: awaiting_pin').test('swap swap-rb-1: confirmed'));
    assert.equal(missingLine(['a', 'b'], 'x\na\ny\nb\n'), undefined);
    assert.equal(missingLine(['b', 'a'], 'a\nb\n'), 'a', 'in order');
  });
});

describe('the runbook pages', () => {
  const root = path.resolve(__dirname, '..', '..');
  const pages = [...fs.readdirSync(path.join(root, 'docs', 'operations')).map((f) => `docs/operations/${f}`), 'docs/integrating.md'].filter((p) => p.endsWith('.md'));

  test('hold no untagged shell session and no shell block without a command to run, unless marked illustrative', () => {
    for (const page of pages) {
      for (const s of parsePage(path.join(root, page), page)) {
        assert.notEqual(s.kind, 'untagged', `${page}:${s.line}: tag the block console or bash`);
        if (s.kind === 'block' && !s.illustrative) assert.ok(s.commands.length > 0, `${page}:${s.line}: no command to run`);
      }
    }
  });
});
