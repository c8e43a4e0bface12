/**
 * Values loaded once per key and shared by every caller that uses one at the same time: the copies
 * of one message composed side by side share its parsed plan and its decoded attachments (so an
 * attachment is decoded once per message in flight, not once per copy). An entry lives while someone uses it and is dropped with its last user, so what is
 * held follows the messages in flight, not the messages seen. A load that fails fails its current
 * users only; the next use loads again.
 */
export interface SharedLoads<V> {
  /** Runs `fn` with the value of `key`, loading it unless another caller holds it now. */
  use<T>(key: string, fn: (value: V) => Promise<T>): Promise<T>;
  /** Keys held now (tests). */
  held(): number;
}

export function sharedLoads<V>(load: (key: string) => Promise<V>): SharedLoads<V> {
  const entries = new Map<string, { value: Promise<V>; users: number }>();
  return {
    async use(key, fn) {
      let entry = entries.get(key);
      if (!entry) {
        entry = { value: load(key), users: 0 };
        entries.set(key, entry);
      }
      entry.users++;
      try {
        return await fn(await entry.value);
      } finally {
        if (--entry.users === 0 && entries.get(key) === entry) entries.delete(key);
      }
    },
    held: () => entries.size,
  };
}
