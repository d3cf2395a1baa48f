/**
 * Keeps a transaction open with its locks held, as a long transaction elsewhere would, until the
 * returned function is called. `run` opens the transaction, takes its locks, then awaits
 * `held()`, which resolves on release:
 *
 *     const release = await holdLocks((held) =>
 *       sql.begin(async (tx) => {
 *         await tx`select 1 from balances where id = 'a' for update`;
 *         await held();
 *       }),
 *     );
 */
export async function holdLocks(run: (held: () => Promise<void>) => Promise<unknown>): Promise<() => Promise<void>> {
  let release: () => void = () => {};
  const released = new Promise<void>((resolve) => {
    release = resolve;
  });
  let locked: () => void = () => {};
  const isLocked = new Promise<void>((resolve) => {
    locked = resolve;
  });
  const transaction = run(() => {
    locked();
    return released;
  });
  await isLocked;
  return async () => {
    release();
    await transaction;
  };
}
