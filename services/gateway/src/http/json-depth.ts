/**
 * Whether a parsed JSON value nests objects and arrays more than `maxDepth` levels deep (the
 * value itself being level 1). Walked with a stack of its own, not by recursion: the value may
 * be nested far deeper than the call stack goes, which is exactly what this looks for.
 */
export function nestsDeeperThan(value: unknown, maxDepth: number): boolean {
  const pending: { node: unknown; depth: number }[] = [{ node: value, depth: 1 }];
  for (let next = pending.pop(); next !== undefined; next = pending.pop()) {
    const { node, depth } = next;
    if (typeof node !== 'object' || node === null) continue;
    if (depth > maxDepth) return true;
    // Object.values keeps a member named `__proto__`: JSON.parse makes it an own property.
    for (const child of Array.isArray(node) ? node : Object.values(node)) {
      pending.push({ node: child, depth: depth + 1 });
    }
  }
  return false;
}
