/**
 * The docs are read on GitHub and in the package: every relative link in README.md,
 * CONTRIBUTING.md, CHANGELOG.md and docs/**\/*.md must point at a file or folder of the repository,
 * and no page may point outside it (issue numbers, a build machine's paths).
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

  test('point nowhere outside the repository (no issue numbers, no machine paths)', () => {
    const offenders = pages()
      .filter((p) => p !== path.join('docs', 'provider-api.md'))
      .flatMap((page) =>
        fs
          .readFileSync(path.join(ROOT, page), 'utf8')
          .split('\n')
          .map((line, i) => ({ line, at: `${page}:${i + 1}` }))
          .filter(({ line }) => /\bissue[ -]\d+|\/work\/|\.\.\/shared|DESIGN\.md|design card/i.test(line))
          .map(({ at, line }) => `${at}: ${line.trim()}`),
      );
    assert.deepEqual(offenders, []);
  });

  test('keep the README a user\'s page of at most about 300 lines, with both state diagrams', () => {
    const readme = fs.readFileSync(path.join(ROOT, 'README.md'), 'utf8');
    assert.ok(readme.split('\n').length <= 320, `README.md has ${readme.split('\n').length} lines`);
    assert.equal((readme.match(/```mermaid\nstateDiagram-v2/g) ?? []).length, 2);
  });
});
