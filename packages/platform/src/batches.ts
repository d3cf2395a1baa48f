/**
 * `items` cut into consecutive batches of at most `size`, in order: the calls whose requests are
 * capped (BatchGetPartnerships and BatchGetCommissions take 100 ids, a payout generation's claims
 * a batch each) make one call per batch, never one per item.
 */
export function inBatches<T>(items: readonly T[], size: number): T[][] {
  const batches: T[][] = [];
  for (let start = 0; start < items.length; start += size) batches.push(items.slice(start, start + size));
  return batches;
}
