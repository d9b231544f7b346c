/**
 * The provider's categories as a parent/child tree, by the document's rule: a parent's code ends
 * in ".0"; its sub-categories share the integer part. Codes are compared as strings only
 * ("13.1" and "13.10" are different codes; names may repeat).
 */
import type { Category } from './provider';

export interface CategoryNode extends Category {
  children: Category[];
}

export interface CategoryTree {
  parents: CategoryNode[];
  /** Sub-categories whose parent ("N.0") is not in the list: kept, never dropped. */
  orphans: Category[];
}

const PARENT_CODE = /^(\d+)\.0$/;
const CHILD_CODE = /^(\d+)\.(\d+)$/;

export function isParentCode(code: string): boolean {
  return PARENT_CODE.test(code);
}

/** The integer part of a code ("13" of "13.42"), or undefined for an unexpected code. */
export function groupOf(code: string): string | undefined {
  return CHILD_CODE.exec(code)?.[1];
}

export function buildCategoryTree(flat: readonly Category[]): CategoryTree {
  const parents: CategoryNode[] = [];
  const byGroup = new Map<string, CategoryNode>();
  for (const c of flat) {
    const m = PARENT_CODE.exec(c.code);
    if (m && !byGroup.has(m[1])) {
      const node: CategoryNode = { code: c.code, name: c.name, children: [] };
      byGroup.set(m[1], node);
      parents.push(node);
    }
  }
  const orphans: Category[] = [];
  for (const c of flat) {
    if (isParentCode(c.code)) continue;
    const g = groupOf(c.code);
    const parent = g === undefined ? undefined : byGroup.get(g);
    if (parent) parent.children.push({ code: c.code, name: c.name });
    else orphans.push({ code: c.code, name: c.name });
  }
  return { parents, orphans };
}
