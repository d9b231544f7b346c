/**
 * The shell blocks of the documentation, as a reader runs them (test/e2e/runbooks.test.ts).
 *
 * A page is a list of steps in document order: each shell block (a fence tagged bash, sh, shell,
 * console or zsh), and each `<!-- runbook-setup … -->` comment (what the test prepares before the
 * blocks that follow it: flows a page names, a process a page stops; it is not shown to a reader).
 * A block right after `<!-- illustrative: why -->` is not run.
 *
 * A block's commands: in a console block, the lines after `$ ` (continued by a trailing `\`), and
 * the lines up to the next `$ ` are that command's expected output; in a bash block every line
 * that is not a comment is a command, and it shows no output. A command must exit 0, unless its
 * line or its output says `# exit N`.
 */
import fs from 'node:fs';

export const SHELL_LANGS = new Set(['bash', 'sh', 'shell', 'console', 'zsh']);

export interface Command {
  text: string;
  /** The output lines the page shows (annotations after two spaces and `#` removed). */
  expected: string[];
  exitCode: number;
  background: boolean;
}

export interface Block {
  kind: 'block';
  page: string;
  /** 1-based line of the opening fence. */
  line: number;
  lang: string;
  illustrative?: string;
  commands: Command[];
}

/** A fence with no language whose lines look like a shell session (`$ …`): it must say what it is. */
export interface Untagged {
  kind: 'untagged';
  page: string;
  line: number;
}

export interface Setup {
  kind: 'setup';
  page: string;
  line: number;
  script: string;
}

export type Step = Block | Setup | Untagged;

const FENCE = /^(\s*)(`{3,}|~{3,})\s*([\w-]*)(.*)$/;
const EXIT = /#\s*exit (\d+)\b/;
/** An annotation after an output line: two or more spaces, then `#`. */
const ANNOTATION = /\s{2,}#\s.*$/;

export function parsePage(file: string, page: string): Step[] {
  const lines = fs.readFileSync(file, 'utf8').split('\n');
  const steps: Step[] = [];
  let i = 0;
  while (i < lines.length) {
    const line = lines[i]!;
    const setup = /^\s*<!--\s*runbook-setup\b(.*)$/.exec(line);
    if (setup) {
      const body: string[] = [];
      let rest = setup[1]!;
      let j = i;
      while (!rest.includes('-->')) {
        body.push(rest);
        j++;
        if (j >= lines.length) throw new Error(`${page}:${i + 1}: runbook-setup comment never closed`);
        rest = lines[j]!;
      }
      body.push(rest.slice(0, rest.indexOf('-->')));
      steps.push({ kind: 'setup', page, line: i + 1, script: body.join('\n').trim() });
      i = j + 1;
      continue;
    }
    const fence = FENCE.exec(line);
    if (!fence) {
      i++;
      continue;
    }
    const [, indent, marks, lang] = fence;
    const body: string[] = [];
    let j = i + 1;
    while (j < lines.length && !new RegExp(`^\\s*${marks![0] === '`' ? '`' : '~'}{${marks!.length},}\\s*$`).test(lines[j]!)) {
      body.push(lines[j]!.startsWith(indent!) ? lines[j]!.slice(indent!.length) : lines[j]!.trimStart());
      j++;
    }
    if (!lang && body.some((l) => l.startsWith('$ '))) steps.push({ kind: 'untagged', page, line: i + 1 });
    if (SHELL_LANGS.has(lang!)) {
      let k = i - 1;
      while (k >= 0 && lines[k]!.trim() === '') k--;
      const marker = k >= 0 ? /^\s*<!--\s*illustrative:\s*(.*?)\s*-->\s*$/.exec(lines[k]!) : null;
      steps.push({
        kind: 'block',
        page,
        line: i + 1,
        lang: lang!,
        ...(marker ? { illustrative: marker[1] || '(no reason given)' } : {}),
        commands: lang === 'console' ? consoleCommands(body) : scriptCommands(body),
      });
    }
    i = j + 1;
  }
  return steps;
}

function command(text: string, expected: string[]): Command {
  const exit = [text, ...expected].map((l) => EXIT.exec(l)).find(Boolean);
  const bare = text.replace(/\s#[^'"]*$/, '').trimEnd();
  return {
    text,
    expected: expected.map((l) => l.replace(ANNOTATION, '').trimEnd()).filter((l) => l.trim() !== '' && l.trim() !== '…'),
    exitCode: exit ? Number(exit[1]) : 0,
    background: /(^|[^&])&$/.test(bare),
  };
}

function consoleCommands(body: string[]): Command[] {
  const out: Command[] = [];
  let i = 0;
  while (i < body.length) {
    if (!body[i]!.startsWith('$ ')) {
      i++; // output before any command: nothing to run
      continue;
    }
    const text = [body[i]!.slice(2)];
    while (/\\\s*$/.test(text[text.length - 1]!) && i + 1 < body.length) text.push(body[++i]!);
    const expected: string[] = [];
    while (i + 1 < body.length && !body[i + 1]!.startsWith('$ ')) expected.push(body[++i]!);
    i++;
    out.push(command(text.join('\n'), expected));
  }
  return out;
}

function scriptCommands(body: string[]): Command[] {
  const out: Command[] = [];
  for (let i = 0; i < body.length; i++) {
    if (body[i]!.trim() === '' || body[i]!.trim().startsWith('#')) continue;
    const text = [body[i]!];
    while (/\\\s*$/.test(text[text.length - 1]!) && i + 1 < body.length) text.push(body[++i]!);
    out.push(command(text.join('\n'), []));
  }
  return out;
}

/**
 * An expected output line as a pattern: `…` is anything, runs of spaces are any spacing, and what
 * differs on every run (times, the provider's references, ids of requests, process identities,
 * ages, loopback ports) is any value of its kind.
 */
export function linePattern(expected: string): RegExp {
  const VARIABLE: Array<[RegExp, string]> = [
    [/\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?Z/g, '\\d{4}-\\d\\d-\\d\\dT\\d\\d:\\d\\d:\\d\\d(?:\\.\\d+)?Z'],
    [/\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC/g, '\\d{4}-\\d\\d-\\d\\d \\d\\d:\\d\\d:\\d\\d UTC'],
    [/SIM(SWP|PL)-\d{6}-[0-9a-f]{8}/g, 'SIM$1-\\d{6}-[0-9a-f]{8}'],
    [/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/g, '[0-9a-f-]{36}'],
    [/\b\d+ (?:seconds?|minutes?) ago\b/g, '(?:\\d+ \\w+ ago|now)'],
    [/\b\d+@vm\b/g, '\\S+'],
    [/127\.0\.0\.1:\d+/g, '127\\.0\\.0\\.1:\\d+'], // loopback ports differ on every run
  ];
  const placeholders: string[] = [];
  let text = expected.trim();
  for (const [re, pattern] of VARIABLE) {
    text = text.replace(re, (...m: string[]) => {
      placeholders.push(pattern.replace('$1', m[1] ?? ''));
      return `\uE000${placeholders.length - 1}\uE000`;
    });
  }
  const escaped = text
    .split('…')
    .map((part) => part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&').replace(/\s+/g, '\\s*'))
    .join('.*?');
  return new RegExp(`^${escaped.replace(/\uE000(\d+)\uE000/g, (_, n: string) => placeholders[Number(n)]!)}$`);
}

/** The expected lines in order, each matching one line of the output after the previous one's; the first missing line, or undefined. */
export function missingLine(expected: string[], output: string): string | undefined {
  const lines = output.split('\n').map((l) => l.trim()); // no terminal: no colours to strip
  let at = 0;
  for (const e of expected) {
    const re = linePattern(e);
    const found = lines.findIndex((l, idx) => idx >= at && re.test(l));
    if (found < 0) return e;
    at = found + 1;
  }
  return undefined;
}
