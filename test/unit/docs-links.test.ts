/**
 * The docs are read on GitHub and in the package: every relative link in README.md,
 * CONTRIBUTING.md, CHANGELOG.md and docs/**\/*.md must point at a file or folder of the repository,
 * every repository path a page names in code (`src/…`, `test/…`, in a code span or block) must
 * exist, and no page may point outside it (issue numbers, a build machine's paths). The opening
 * comments of the files under test/ and bench/ are held to the same rules, and no file of the code,
 * tests, tools or docs names one of the project's own issues or pull requests.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { describe, test } from 'node:test';

const ROOT = path.resolve(__dirname, '..', '..');

function pages(): string[] {
  const walk = (dir: string): string[] =>
    fs.readdirSync(path.join(ROOT, dir), { withFileTypes: true }).flatMap((e) => {
      const rel = path.join(dir, e.name);
      return e.isDirectory() ? walk(rel) : e.name.endsWith('.md') ? [rel] : [];
    });
  return ['README.md', 'CONTRIBUTING.md', 'CHANGELOG.md', ...walk('docs')];
}

/** Relative link targets of a Markdown text (no URLs, no in-page anchors, code spans left out). */
export function relativeLinks(markdown: string): string[] {
  const text = markdown.replace(/```[\s\S]*?```/g, '').replace(/`[^`\n]*`/g, '');
  return [...text.matchAll(/\]\(([^)\s]+)\)/g)].map((m) => m[1]!).filter((t) => !/^(https?:|mailto:|#)/.test(t)).map((t) => t.split('#')[0]!);
}

/** The folders of the repository a path named in the docs or a header starts with. */
const TOP_FOLDERS = ['src', 'tools', 'test', 'docs', 'bench', 'scripts', 'ops', 'examples', 'bin'];
const REPO_PATH = new RegExp(`^(?:\\./)?((?:${TOP_FOLDERS.join('|')})/[\\w.@/-]*?)(?::\\d+(?:[-,]\\d+)*)?[.,;:]*$`);

/**
 * The repository paths a Markdown text names in code spans and code blocks: the words that start
 * with a top folder, without a `:line` suffix; globs and placeholders (`*`, `<label>`) left out.
 */
export function namedRepoPaths(markdown: string): string[] {
  const code = [...markdown.matchAll(/```[^\n]*\n([\s\S]*?)```|`([^`\n]+)`/g)].map((m) => m[1] ?? m[2]!);
  return code.flatMap((c) => c.split(/[\s'"()=,]+/).flatMap((word) => REPO_PATH.exec(word)?.[1] ?? []));
}

/** The comment a source file opens with (after a shebang): a block comment or a run of line comments. */
export function headerComment(source: string): string {
  const m = /^(?:#![^\n]*\n)?\s*(\/\*[\s\S]*?\*\/|(?:\/\/[^\n]*\n\s*)+)/.exec(source);
  return m?.[1] ?? '';
}

/** The repository paths a header names in prose or code, with the same exclusions. */
function headerRepoPaths(header: string): string[] {
  return header.split(/[\s`'"(),]+/).flatMap((word) => REPO_PATH.exec(word)?.[1] ?? []);
}

/** Outside the repository: issue numbers, a build machine's or another checkout's paths. */
const OUTSIDE = /\bissue[ -]\d+|\/work\/|\.\.\/shared|DESIGN\.md|design card/i;

/** The TypeScript and script files under test/ and bench/, without recorded data (replay, upgrade bundles, results). */
function testAndBenchFiles(): string[] {
  const walk = (dir: string): string[] =>
    fs.readdirSync(path.join(ROOT, dir), { withFileTypes: true }).flatMap((e) => {
      const rel = path.join(dir, e.name);
      if (e.isDirectory()) return ['replay', 'upgrade', 'results'].includes(e.name) ? [] : walk(rel);
      return /\.(ts|mjs|cjs|sh)$/.test(e.name) ? [rel] : [];
    });
  return [...walk('test'), ...walk('bench')];
}

describe('the docs', () => {
  test('link only to files that exist in the repository', () => {
    const broken: string[] = [];
    for (const page of pages()) {
      const text = fs.readFileSync(path.join(ROOT, page), 'utf8');
      for (const target of relativeLinks(text)) {
        if (!fs.existsSync(path.resolve(ROOT, path.dirname(page), target))) broken.push(`${page} -> ${target}`);
      }
    }
    assert.deepEqual(broken, []);
  });

  test('a broken link is noticed (the check can fail)', () => {
    assert.deepEqual(relativeLinks('see [x](docs/nowhere.md) and [y](https://temporal.io) and `[z](no.md)`'), ['docs/nowhere.md']);
    assert.equal(fs.existsSync(path.resolve(ROOT, 'docs/nowhere.md')), false);
  });

  test('name in code only repository paths that exist', () => {
    const stale = pages()
      .filter((p) => p !== 'CHANGELOG.md')
      .flatMap((page) => namedRepoPaths(fs.readFileSync(path.join(ROOT, page), 'utf8')).filter((p) => !fs.existsSync(path.join(ROOT, p))).map((p) => `${page} -> ${p}`));
    assert.deepEqual(stale, []);
  });

  test('a stale path in code is noticed (the check can fail)', () => {
    const named = namedRepoPaths('run `npm test -- test/nowhere.test.ts`, see `src/auth/keyring.ts:12` and `test/replay/0.1.0-*`\n```bash\nnode scripts/nowhere.ts\n```');
    assert.deepEqual(named, ['test/nowhere.test.ts', 'src/auth/keyring.ts', 'scripts/nowhere.ts']);
    assert.deepEqual(named.filter((p) => !fs.existsSync(path.join(ROOT, p))), ['test/nowhere.test.ts', 'scripts/nowhere.ts']);
  });

  test('point nowhere outside the repository (no issue numbers, no machine paths)', () => {
    const offenders = pages()
      .filter((p) => p !== path.join('docs', 'provider-api.md'))
      .flatMap((page) =>
        fs
          .readFileSync(path.join(ROOT, page), 'utf8')
          .split('\n')
          .map((line, i) => ({ line, at: `${page}:${i + 1}` }))
          .filter(({ line }) => OUTSIDE.test(line))
          .map(({ at, line }) => `${at}: ${line.trim()}`),
      );
    assert.deepEqual(offenders, []);
  });

  test('the architecture page names every folder of src/, tools/ and test/', () => {
    const page = fs.readFileSync(path.join(ROOT, 'docs', 'architecture.md'), 'utf8');
    const folders = (dir: string) =>
      fs
        .readdirSync(path.join(ROOT, dir), { withFileTypes: true })
        .filter((e) => e.isDirectory())
        .map((e) => `${dir}/${e.name}/`);
    assert.deepEqual([...folders('src'), ...folders('tools'), ...folders('test')].filter((f) => !page.includes(f)), []);
  });

  test('keep the README a user\'s page of at most about 300 lines, with both state diagrams', () => {
    const readme = fs.readFileSync(path.join(ROOT, 'README.md'), 'utf8');
    assert.ok(readme.split('\n').length <= 320, `README.md has ${readme.split('\n').length} lines`);
    assert.equal((readme.match(/```mermaid\nstateDiagram-v2/g) ?? []).length, 2);
  });
});

/**
 * A reference to one of the project's own issues or pull requests: `issue <n>`, `issue #<n>`,
 * `issues <n>-<m>`, `(#<n>)`, `fixes #<n>`, `PR #<n>`. An upstream project's, named with its
 * repository (`temporalio/ui PR #<n>`), is not one; CSS colours and counters (`entry #<n>`) are not either.
 */
const OWN_ISSUE = /(?<![\w.-]+\/[\w.-]+ )\b(?:issues?[ -]#?\d+|(?:PR|pull request|fix(?:es|ed)?|close[sd]?|resolve[sd]?)[ -]?#\d+)\b|\(#\d+\)/i;

/** The folders and top-level files whose text is the project's own (generated and recorded data left out). */
const OWN_TEXT = ['src', 'test', 'tools', 'scripts', 'bench', 'docs', 'packages', 'examples', 'docker', 'ops', 'bin', '.ci'];
const NOT_OURS = new Set(['node_modules', 'dist', '.data', '.cache', 'replay', 'upgrade']);

function ownTextFiles(): string[] {
  const walk = (dir: string): string[] =>
    fs.readdirSync(path.join(ROOT, dir), { withFileTypes: true }).flatMap((e) => {
      const rel = path.join(dir, e.name);
      if (e.isDirectory()) return NOT_OURS.has(e.name) ? [] : walk(rel);
      return /\.(ts|mjs|cjs|js|go|sh|md|json|ya?ml|sql|txt|html|css)$|^(run|Dockerfile|[\w-]+\.Dockerfile)$/.test(e.name) && !e.name.endsWith('.lock.json') ? [rel] : [];
    });
  const top = fs.readdirSync(ROOT, { withFileTypes: true }).filter((e) => e.isFile() && e.name !== 'CHANGELOG.md' && e.name !== 'package-lock.json').map((e) => e.name);
  return [...top, ...OWN_TEXT.filter((d) => fs.existsSync(path.join(ROOT, d))).flatMap(walk)];
}

describe('the code, tests, tools and docs', () => {
  test('name none of the project\'s own issues or pull requests (the reason goes in the text, the history in git)', () => {
    const files = ownTextFiles();
    assert.ok(files.includes(path.join('tools', 'cluster', 'temporal-server', 'authz.go')) && files.includes(path.join('test', 'e2e', 'compose.test.ts')), 'the scan reads Go and test files');
    const offenders = files.flatMap((file) =>
      fs
        .readFileSync(path.join(ROOT, file), 'utf8')
        .split('\n')
        .flatMap((line, i) => (OWN_ISSUE.test(line) ? [`${file}:${i + 1}: ${line.trim()}`] : [])),
    );
    assert.deepEqual(offenders, []);
  });

  test('an issue or pull request of our own is noticed, an upstream one or a colour is not (the check can fail)', () => {
    // Written with N for the number, so that the scan of this very file does not flag them.
    const n = (lines: string[]) => lines.map((l) => l.replace('N', '29'));
    const own = n(['as cluster up runs it (issue N):', '// Issue #N: retried', 'see issues N-30', 'the guard (#N)', 'Fixes #N', 'PR #N made it']);
    const not = n(['the update action (temporalio/ui PR #N)', 'border:1px solid #889', 'entry #N: id must be', 'an issued token', 'tissue N']);
    assert.deepEqual(own.filter((l) => !OWN_ISSUE.test(l)), []);
    assert.deepEqual(not.filter((l) => OWN_ISSUE.test(l)), []);
  });
});

describe('the opening comments of test and bench files', () => {
  test('point nowhere outside the repository and name only repository paths that exist', () => {
    const offenders = testAndBenchFiles().flatMap((file) => {
      const header = headerComment(fs.readFileSync(path.join(ROOT, file), 'utf8'));
      return [
        ...(OUTSIDE.test(header) || /(^|\s)\/(tmp|home|root)\//.test(header) ? [`${file}: points outside the repository`] : []),
        ...headerRepoPaths(header)
          .filter((p) => !fs.existsSync(path.join(ROOT, p)))
          .map((p) => `${file} -> ${p}`),
      ];
    });
    assert.deepEqual(offenders, []);
  });

  test('an issue number or a stale path in a header is noticed (the check can fail)', () => {
    // The issue number is spelled in two parts so that the scan of this very file does not flag it.
    const issue = ['issue', '7'].join(' ');
    const header = headerComment(`#!/usr/bin/env node\n/**\n * ${issue}: see test/nowhere.test.ts and src/auth/.\n */\nimport x from "y";\n/** not the header */\n`);
    assert.equal(header, `/**\n * ${issue}: see test/nowhere.test.ts and src/auth/.\n */`);
    assert.ok(OUTSIDE.test(header));
    assert.deepEqual(headerRepoPaths(header), ['test/nowhere.test.ts', 'src/auth/']);
    assert.equal(headerComment('// one\n// two\nconst a = 1;\n'), '// one\n// two\n');
  });
});
