/**
 * `npm run bundle-workflows -- --out DIR [--from COMMIT]`: builds the workflow bundle a worker runs
 * (`WORKER_WORKFLOW_BUNDLE=DIR/workflow-bundle.js mpf worker`): the workflows, their interceptor
 * modules and the failure converter, as `mpf worker` bundles them at start-up.
 *
 * `--from COMMIT` bundles the workflows of another commit (a release): its tree is checked out in a
 * temporary git worktree, the bundle built from there with this checkout's node_modules (refused
 * when the two lock other @temporalio versions), and the worktree removed. test/upgrade/ keeps the
 * previous release's bundle this way, so the upgrade test needs no git history at run time.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { bundleWorkflowCode } from '@temporalio/worker';
import { preloadWorkflowModules } from '../src/worker';

const ROOT = path.resolve(__dirname, '..');
const git = (args: string[], cwd = ROOT): string => execFileSync('git', args, { cwd, encoding: 'utf8' }).trim();

/**
 * The SDK requires an inline source map in a bundle (for stack traces); a kept release's bundle
 * gets an empty one instead of its 1.3 MB map of the sources: it is run, not debugged.
 */
function withEmptySourceMap(code: string): string {
  const at = code.lastIndexOf('//# sourceMappingURL=');
  if (at < 0) return code;
  const map = Buffer.from(JSON.stringify({ version: 3, file: 'workflow-bundle.js', sources: [], names: [], mappings: '' })).toString('base64');
  return `${code.slice(0, at)}//# sourceMappingURL=data:application/json;base64,${map}\n`;
}

async function bundleFrom(src: string, out: string, emptyMap: boolean): Promise<void> {
  const workflowsPath = path.join(src, 'workflows', 'index.ts');
  const { code } = await bundleWorkflowCode({
    workflowsPath,
    // This checkout's workflows are preloaded as `mpf worker` preloads them (src/worker.ts); an
    // older release's are bundled as that release bundled them.
    ...(emptyMap ? {} : { preloadModules: preloadWorkflowModules(workflowsPath) }),
    workflowInterceptorModules: [path.join(src, 'workflows', 'log-interceptors.ts')],
    failureConverterPath: path.join(src, 'codec', 'failure-converter.ts'),
    logger: { log: () => undefined, trace: () => undefined, debug: () => undefined, info: () => undefined, warn: (m: string) => console.warn(m), error: (m: string) => console.error(m) },
  });
  fs.mkdirSync(out, { recursive: true });
  fs.writeFileSync(path.join(out, 'workflow-bundle.js'), emptyMap ? withEmptySourceMap(code) : code);
}

async function main(): Promise<void> {
  const { values } = parseArgs({ options: { out: { type: 'string' }, from: { type: 'string' } } });
  if (!values.out) throw new Error('--out: the directory to write workflow-bundle.js and release.json to');
  const out = path.resolve(values.out);
  const version = (JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { version: string }).version;
  if (!values.from) {
    await bundleFrom(path.join(ROOT, 'src'), out, false);
    const commit = git(['rev-parse', '--short', 'HEAD']);
    fs.writeFileSync(path.join(out, 'release.json'), `${JSON.stringify({ release: `${version}-${commit}`, commit }, null, 2)}\n`);
    console.log(`bundled this checkout's workflows into ${path.relative(ROOT, out)}`);
    return;
  }
  const commit = git(['rev-parse', '--short', values.from]);
  // The bundle holds the workflows and the SDK's workflow runtime: that release's @temporalio/*
  // versions must be the ones installed here (a release on other SDK versions is bundled in its own clone).
  const sdk = (lock: string): Record<string, string> => {
    const pkgs = (JSON.parse(lock) as { packages: Record<string, { version?: string }> }).packages;
    return Object.fromEntries(Object.entries(pkgs).filter(([k]) => k.startsWith('node_modules/@temporalio/')).map(([k, v]) => [k, v.version ?? '']));
  };
  const theirs = sdk(git(['show', `${commit}:package-lock.json`]));
  const ours = sdk(fs.readFileSync(path.join(ROOT, 'package-lock.json'), 'utf8'));
  const differ = Object.keys({ ...theirs, ...ours }).filter((k) => theirs[k] !== ours[k]);
  if (differ.length) throw new Error(`${commit} locks other @temporalio versions (${differ.join(', ')}): bundle it in its own clone`);
  const wt = fs.mkdtempSync(path.join(os.tmpdir(), 'mpf-release-'));
  try {
    git(['worktree', 'add', '--detach', wt, commit]);
    fs.symlinkSync(path.join(ROOT, 'node_modules'), path.join(wt, 'node_modules'));
    const oldVersion = (JSON.parse(fs.readFileSync(path.join(wt, 'package.json'), 'utf8')) as { version: string }).version;
    await bundleFrom(path.join(wt, 'src'), out, true);
    fs.writeFileSync(path.join(out, 'release.json'), `${JSON.stringify({ release: `${oldVersion}-${commit}`, commit, bundled_at: new Date().toISOString() }, null, 2)}\n`);
    console.log(`bundled the workflows of ${oldVersion}-${commit} into ${path.relative(ROOT, out)}`);
  } finally {
    git(['worktree', 'remove', '--force', wt]);
  }
}

if (require.main === module) {
  main().then(
    () => process.exit(0),
    (e) => {
      console.error(e instanceof Error ? e.message : e);
      process.exit(1);
    },
  );
}
