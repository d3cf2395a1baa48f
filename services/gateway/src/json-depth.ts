/**
 * How deep a request body may nest. The deepest body the API takes is three levels (a bulk
 * registration: object, array, entry); 32 leaves room for any client's envelope while keeping
 * recursive work on a body (validation, the refund fingerprint) far from the stack's limit. A
 * 1 MiB body could otherwise nest half a million arrays.
 */
export const maxBodyDepth = 32;

/** Whether `value` nests objects and arrays deeper than `maxDepth`; iterative, so any depth is safe to ask about. */
export function nestsDeeperThan(value: unknown, maxDepth: number): boolean {
  const pending: { value: unknown; depth: number }[] = [{ value, depth: 0 }];
  for (let next = pending.pop(); next !== undefined; next = pending.pop()) {
    if (typeof next.value !== "object" || next.value === null) continue;
    const depth = next.depth + 1;
    if (depth > maxDepth) return true;
    for (const child of Object.values(next.value)) pending.push({ value: child, depth });
  }
  return false;
}
