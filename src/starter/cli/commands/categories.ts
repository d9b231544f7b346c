/** `mpf categories [--tree]`: the provider's categories through the worker (a short workflow). */
import { Command } from 'commander';
import type { CategoriesResult } from '../../client/mpf-client';
import type * as Face from '../face';
import { DEFAULT_WAIT_SECONDS, JSON_HELP, parsePositive, WAIT_HELP } from '../options';
import { printJson, printLines } from '../output';

interface CategoriesOptions {
  tree?: boolean;
  wait?: number;
  json?: boolean;
}

export function categoriesCommand(): Command {
  return new Command('categories')
    .description("list the provider's product categories (through the worker)")
    .option('--tree', 'group sub-categories under their parents')
    .option('--wait <seconds>', WAIT_HELP, parsePositive)
    .option('--json', JSON_HELP)
    .action(listCategories);
}

function categoryLines(r: CategoriesResult, tree: boolean): string[] {
  const width = Math.max(...r.categories.map((c) => c.code.length));
  if (!tree) return r.categories.map((c) => `${c.code.padEnd(width)}  ${c.name}`);
  const lines: string[] = [];
  for (const node of r.tree.parents) {
    lines.push(`${node.code.padEnd(width)}  ${node.name}`);
    for (const child of node.children) {
      const short = child.name.startsWith(`${node.name} > `) ? child.name.slice(node.name.length + 3) : child.name;
      lines.push(`  ${child.code.padEnd(width)}  ${short}`);
    }
  }
  if (r.tree.orphans.length > 0) {
    lines.push('(sub-categories without a parent in the list)');
    for (const c of r.tree.orphans) lines.push(`  ${c.code.padEnd(width)}  ${c.name}`);
  }
  return lines;
}

async function listCategories(opts: CategoriesOptions): Promise<void> {
  // The client library loads when the command runs, not when the program is built.
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const { withFace } = require('../face') as typeof Face;
  await withFace(opts.wait ?? DEFAULT_WAIT_SECONDS, async (f) => {
    const r = await f.listCategories();
    if (opts.json) printJson(opts.tree ? { tree: r.tree } : { categories: r.categories });
    else printLines(categoryLines(r, Boolean(opts.tree)));
  });
}
