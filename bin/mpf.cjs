#!/usr/bin/env node
// The `mpf` CLI. Runs the compiled build when MPF_USE_DIST=1 (containers), else the TypeScript
// sources through tsx (no build step needed in a checkout).
const path = require('node:path');
if (process.env.MPF_USE_DIST === '1') {
  require(path.join(__dirname, '..', 'dist', 'starter', 'cli', 'main.js')).main(process.argv);
} else {
  require('tsx/cjs');
  require(path.join(__dirname, '..', 'src', 'starter', 'cli', 'main.ts')).main(process.argv);
}
