/**
 * One reading of the environment: every variable the code in src/ and bin/ reads is in the
 * configuration schema (EnvSchema, CliEnvSchema, DirectEnvSchema; NAME_FILE for a variable of the
 * first two), and so in the generated table. The sources are parsed, not grepped: `process.env.X`,
 * `process.env['X']`, destructuring of process.env, and the same through a name that holds the
 * environment (`env: NodeJS.ProcessEnv`, `const env = process.env`). Passing the environment whole
 * (to a child process, to Object.keys) names no variable and is fine.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import ts from 'typescript';
import { CliEnvSchema } from '../../src/config/cli-env';
import { DirectEnvSchema } from '../../src/config/direct-env';
import { EnvSchema } from '../../src/config/env';

const ROOT = path.join(__dirname, '..', '..');
/** The schema's own modules read variables by a name from a list. */
const SCHEMA_MODULES = new Set(['src/config/env.ts', 'src/config/cli-env.ts']);
/** The system's own variables, handed on to child processes: they configure nothing of ours. */
const SYSTEM = ['PATH', 'HOME'];

const KNOWN = new Set([
  ...Object.keys(EnvSchema.shape),
  ...Object.keys(EnvSchema.shape).map((n) => `${n}_FILE`),
  ...Object.keys(CliEnvSchema.shape),
  ...Object.keys(CliEnvSchema.shape).map((n) => `${n}_FILE`),
  ...Object.keys(DirectEnvSchema.shape),
  ...SYSTEM,
]);

interface EnvRead {
  where: string;
  /** The variable, or undefined when the code names it by an expression this check cannot follow. */
  name: string | undefined;
}

const isProcessEnv = (n: ts.Node): boolean =>
  ts.isPropertyAccessExpression(n) && ts.isIdentifier(n.expression) && n.expression.text === 'process' && n.name.text === 'env';
const unwrap = (n: ts.Expression): ts.Expression =>
  ts.isParenthesizedExpression(n) || ts.isAsExpression(n) || ts.isSatisfiesExpression(n) || ts.isNonNullExpression(n) ? unwrap(n.expression) : n;

/** The reads of environment variables in one source file. */
function envReads(file: string, text: string): EnvRead[] {
  const kind = file.endsWith('.ts') ? ts.ScriptKind.TS : ts.ScriptKind.JS;
  const src = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true, kind);
  const reads: EnvRead[] = [];
  const where = (n: ts.Node): string => `${file}:${src.getLineAndCharacterOfPosition(n.getStart()).line + 1}`;

  /** The string literals a name stands for: a const array (`as const` too) or the array a for-of walks. */
  const literalsOf = (name: string, depth = 0): string[] | undefined => {
    if (depth > 3) return undefined;
    let found: string[] | undefined;
    const fromExpression = (e: ts.Expression): string[] | undefined => {
      const x = unwrap(e);
      if (ts.isStringLiteralLike(x)) return [x.text];
      if (ts.isIdentifier(x)) return literalsOf(x.text, depth + 1);
      if (ts.isArrayLiteralExpression(x)) {
        const items = x.elements.map((el) => (ts.isStringLiteralLike(unwrap(el as ts.Expression)) ? (unwrap(el as ts.Expression) as ts.StringLiteral).text : undefined));
        return items.every((i): i is string => i !== undefined) ? items : undefined;
      }
      return undefined;
    };
    const visit = (n: ts.Node): void => {
      if (!found && ts.isVariableDeclaration(n) && ts.isIdentifier(n.name) && n.name.text === name) {
        const loop = n.parent.parent;
        if (ts.isForOfStatement(loop)) found = fromExpression(loop.expression);
        else if (n.initializer && ts.isVariableDeclarationList(n.parent) && n.parent.flags & ts.NodeFlags.Const) found = fromExpression(n.initializer);
      }
      ts.forEachChild(n, visit);
    };
    visit(src);
    return found;
  };

  /** Names that hold the environment, innermost function last. */
  const scopes: Array<Set<string>> = [new Set()];
  const isEnv = (e: ts.Expression): boolean => {
    const x = unwrap(e);
    return isProcessEnv(x) || (ts.isIdentifier(x) && scopes.some((s) => s.has(x.text)));
  };
  const holdsEnv = (d: ts.ParameterDeclaration | ts.VariableDeclaration): boolean =>
    (d.type !== undefined && /^(NodeJS\.)?ProcessEnv$/.test(d.type.getText(src))) || (d.initializer !== undefined && isEnv(d.initializer));

  const visit = (n: ts.Node): void => {
    if (ts.isFunctionLike(n)) {
      const scope = new Set(n.parameters.filter((p) => ts.isIdentifier(p.name) && holdsEnv(p)).map((p) => (p.name as ts.Identifier).text));
      scopes.push(scope);
      ts.forEachChild(n, visit);
      scopes.pop();
      return;
    }
    if (ts.isVariableDeclaration(n) && n.initializer) {
      if (ts.isIdentifier(n.name) && holdsEnv(n)) scopes[scopes.length - 1]!.add(n.name.text);
      if (ts.isObjectBindingPattern(n.name) && isEnv(n.initializer)) {
        for (const el of n.name.elements) {
          if (el.dotDotDotToken) continue; // the rest, whole
          const key = el.propertyName ?? el.name;
          reads.push({ where: where(el), name: ts.isIdentifier(key) || ts.isStringLiteralLike(key) ? key.text : undefined });
        }
      }
    }
    if (ts.isPropertyAccessExpression(n) && isEnv(n.expression)) reads.push({ where: where(n), name: n.name.text });
    if (ts.isElementAccessExpression(n) && isEnv(n.expression)) {
      const arg = unwrap(n.argumentExpression);
      const names = ts.isStringLiteralLike(arg) ? [arg.text] : ts.isIdentifier(arg) ? literalsOf(arg.text) : undefined;
      if (names) for (const name of names) reads.push({ where: where(n), name });
      else reads.push({ where: where(n), name: undefined });
    }
    ts.forEachChild(n, visit);
  };
  visit(src);
  return reads;
}

function sourceFiles(dir: string, suffixes: string[]): string[] {
  return fs.readdirSync(path.join(ROOT, dir), { withFileTypes: true }).flatMap((e) => {
    const rel = path.posix.join(dir, e.name);
    if (e.isDirectory()) return sourceFiles(rel, suffixes);
    return suffixes.some((s) => e.name.endsWith(s)) ? [rel] : [];
  });
}

describe('the environment, read in one schema', () => {
  test('every variable src/ and bin/ read is in the configuration schema', (t) => {
    const files = [...sourceFiles('src', ['.ts']), ...sourceFiles('bin', ['.cjs', '.js'])].filter((f) => !SCHEMA_MODULES.has(f));
    const reads = files.flatMap((f) => envReads(f, fs.readFileSync(path.join(ROOT, f), 'utf8')));
    const names = new Set(reads.map((r) => r.name));
    t.diagnostic(`${files.length} files, ${reads.length} reads of ${names.size} variables`);
    // The scan sees the reads it must (else the check below would pass on nothing).
    for (const name of ['MPF_USE_DIST', 'OTEL_SERVICE_NAME', 'TEMPORAL_TLS_CLIENT_CERT_PATH', 'OTEL_EXPORTER_OTLP_ENDPOINT']) assert.ok(names.has(name), `${name} was not seen`);
    const outside = reads.filter((r) => r.name === undefined || !KNOWN.has(r.name)).map((r) => `${r.where}: ${r.name ?? 'a name this check cannot follow'}`);
    assert.deepEqual(outside, [], 'add each variable to the schema (src/config/env.ts, cli-env.ts or direct-env.ts) with a doc comment, then `npm run docs:config`');
  });

  test('the check sees a variable read in each way, and passing the environment whole is no read', () => {
    const code = `
      const a = process.env.ONE;
      const b = process.env['TWO'];
      const { THREE, FOUR: four, ...rest } = process.env;
      function f(env: NodeJS.ProcessEnv = process.env) { return env.FIVE; }
      const e = process.env; e.SIX;
      for (const n of ['SEVEN', 'EIGHT'] as const) process.env[n];
      process.env[String(a)];
      spawn('x', { env: process.env }); Object.keys(process.env); const other = { NINE: 1 }; other.NINE;
      function g(env: { TEN?: string }) { return env.TEN; }`;
    const reads = envReads('probe.ts', code).map((r) => r.name ?? '?');
    assert.deepEqual(reads, ['ONE', 'TWO', 'THREE', 'FOUR', 'FIVE', 'SIX', 'SEVEN', 'EIGHT', '?']);
    assert.ok(!KNOWN.has('ONE') && KNOWN.has('MPF_API_KEY_FILE') && KNOWN.has('OTEL_SERVICE_NAME') && !KNOWN.has('OTEL_SERVICE_NAME_FILE'));
  });
});
