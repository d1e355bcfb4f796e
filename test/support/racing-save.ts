import type { Store } from "../../src/store/store.ts";

/**
 * The store's swap records, with `meanwhile` run once just before a save reaches Redis: what another
 * process does between a check and the write it decided on (issue 27's races).
 */
export function swapsRacing(store: Store, meanwhile: () => Promise<void>): Store["swaps"] {
  const swaps = Object.create(store.swaps) as Store["swaps"];
  let ran = false;
  swaps.save = async (record, extras) => {
    if (!ran) {
      ran = true;
      await meanwhile();
    }
    return await store.swaps.save(record, extras);
  };
  return swaps;
}
