/** `mpf categories [--tree]`: the provider's categories through the worker (a short workflow). */
import type { CategoriesResult } from '../client';
import { answerWithin, DEFAULT_WAIT_SECONDS, printJson, printLines, withClient } from './context';

export function categoryLines(r: CategoriesResult, tree: boolean): string[] {
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

export async function listCategories(opts: { tree?: boolean; json?: boolean; wait?: number }): Promise<void> {
  await withClient(async (c) => {
    const r = await answerWithin(c.mpf.listCategories(), opts.wait ?? DEFAULT_WAIT_SECONDS, c);
    if (opts.json) printJson(opts.tree ? { tree: r.tree } : { categories: r.categories });
    else printLines(categoryLines(r, Boolean(opts.tree)));
  });
}
