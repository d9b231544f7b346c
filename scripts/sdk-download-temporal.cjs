// Step 5 of scripts/provision-temporal.sh: let the Temporal SDK download its dev-server CLI into the
// project cache. Prints the binary's path. Works only with access to the Temporal CDN.
const { TestWorkflowEnvironment } = require('@temporalio/testing');
const fs = require('node:fs');
const path = require('node:path');

async function main() {
  const dir = process.argv[2];
  fs.mkdirSync(dir, { recursive: true });
  const env = await TestWorkflowEnvironment.createLocal({
    server: { executable: { type: 'cached-download', downloadDir: dir }, ui: false },
  });
  await env.teardown();
  const found = fs.readdirSync(dir).find((f) => f.startsWith('temporal'));
  if (!found) throw new Error('download finished but no binary found in ' + dir);
  const target = path.join(dir, 'temporal');
  if (found !== 'temporal') fs.copyFileSync(path.join(dir, found), target);
  fs.chmodSync(target, 0o755);
  process.stdout.write(target + '\n');
}
main().catch((e) => {
  process.stderr.write(`sdk download failed: ${e.message}\n`);
  process.exit(1);
});
