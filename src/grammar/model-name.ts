/**
 * A served model's name as people read it, the same in every message: the served name when it is one
 * (a Hub id), else the meaningful end of its path. Units written by hand often serve a path: the Hub
 * cache's `…/models--Qwen--Qwen3-8B/snapshots/<sha>` reads "Qwen/Qwen3-8B", modelswap's own
 * `<modelsDir>/Qwen--Qwen3-8B--<sha12>` reads the same, any other path its last two parts.
 */
export function modelName(servedOrPath: string): string {
  const text = servedOrPath.trim().replace(/\/+$/, "");
  if (!text.startsWith("/") && !text.startsWith("./") && !text.startsWith("~")) return text;
  const parts = text.split("/").filter((p) => p !== "" && p !== "." && p !== "~");
  const cache = parts.findIndex((p) => /^models--[^/]+--[^/]+$/.test(p));
  if (cache >= 0) {
    const [, org, ...name] = parts[cache]!.split("--");
    return `${org}/${name.join("--")}`;
  }
  const own = /^(.+?)--(.+)--[0-9a-f]{12}$/.exec(parts.at(-1) ?? "");
  if (own !== null) return `${own[1]}/${own[2]}`;
  return parts.slice(-2).join("/") || text;
}

/** A name cut to `max` characters from the left, so its end (the model's own name) stays: "…/Qwen3-8B". */
export function keepEnd(name: string, max: number): string {
  const chars = [...name];
  return chars.length <= max ? name : `…${chars.slice(-(max - 1)).join("")}`;
}
