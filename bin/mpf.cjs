#!/usr/bin/env node
// The `mpf` CLI. Runs the compiled build when MPF_USE_DIST=1 (containers) or when the TypeScript
// sources are absent (the package installed from `npm pack`), else the sources through tsx (no
// build step needed in a checkout).
const fs = require('node:fs');
const path = require('node:path');
const sources = path.join(__dirname, '..', 'src', 'starter', 'cli', 'main.ts');
if (process.env.MPF_USE_DIST === '1' || !fs.existsSync(sources)) {
  require(path.join(__dirname, '..', 'dist', 'starter', 'cli', 'main.js')).main(process.argv);
} else {
  require('tsx/cjs');
  require(sources).main(process.argv);
}
