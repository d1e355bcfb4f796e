import { HOST_NAME } from "./host-name.ts";

/** What `--hosts` and a group's `hosts` accept, for messages that refuse one. */
export const HOST_SET_RULE =
  "host names separated by commas, each may hold one range in brackets: gpu-[1-8], gpu-1,gpu-3, h200-[01-12]";

/** At most this many hosts in one set: a rollout of more is a config group's business, split in rollouts. */
export const MAX_HOST_SET = 256;

/**
 * Expands a host set: `gpu-[1-8]` → gpu-1 … gpu-8; `h200-[01-03]` keeps the width (h200-01 …); names
 * separated by commas. Every name must be a host name (src/grammar/host-name.ts); a name given twice,
 * an empty or backwards range, or more than MAX_HOST_SET hosts is refused, with why.
 */
export function expandHostSet(text: string): { ok: true; hosts: string[] } | { ok: false; reason: string } {
  const hosts: string[] = [];
  for (const part of text.split(",")) {
    const word = part.trim();
    if (word === "") return { ok: false, reason: `an empty name in ${JSON.stringify(text.slice(0, 80))}` };
    const range = /^([a-z0-9-]*)\[(\d{1,4})-(\d{1,4})\]([a-z0-9-]*)$/.exec(word);
    if (range === null) {
      if (!HOST_NAME.test(word))
        return { ok: false, reason: `${JSON.stringify(word.slice(0, 60))} is not a host name` };
      hosts.push(word);
    } else {
      const [, before, from, to, after] = range as unknown as [string, string, string, string, string];
      const first = Number(from);
      const last = Number(to);
      if (last < first) return { ok: false, reason: `the range [${from}-${to}] runs backwards` };
      if (last - first + 1 > MAX_HOST_SET)
        return { ok: false, reason: `[${from}-${to}] names more than ${MAX_HOST_SET} hosts` };
      const width = from.length === to.length && from.startsWith("0") ? from.length : 0;
      for (let n = first; n <= last; n++) {
        const name = `${before}${String(n).padStart(width, "0")}${after}`;
        if (!HOST_NAME.test(name)) return { ok: false, reason: `${JSON.stringify(name)} is not a host name` };
        hosts.push(name);
      }
    }
    if (hosts.length > MAX_HOST_SET) return { ok: false, reason: `more than ${MAX_HOST_SET} hosts` };
  }
  const twice = hosts.find((h, i) => hosts.indexOf(h) !== i);
  if (twice !== undefined) return { ok: false, reason: `${twice} is named twice` };
  return { ok: true, hosts };
}
