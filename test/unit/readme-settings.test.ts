import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { envFields } from "../../src/config/env-schema.ts";
import { fileSchema } from "../../src/config/file-schema.ts";

/** README's settings tables against the schemas that read them, both ways: none missing, none gone. */
const ROOT = new URL("../../", import.meta.url).pathname;
const readme = readFileSync(join(ROOT, "README.md"), "utf8");

/** The first cell's `names` of each row of the table that follows `heading`. */
function documented(heading: string): string[] {
  const start = readme.indexOf(`\n${heading}\n`);
  expect(start, heading).toBeGreaterThan(0);
  const rows = readme.slice(start).split("\n").slice(1);
  const table = rows.slice(rows.findIndex((l) => l.startsWith("|")));
  const body = table
    .slice(
      0,
      table.findIndex((l) => !l.startsWith("|")),
    )
    .slice(2);
  return body.flatMap((row) => [...row.split(/(?<!\\)\|/)[1]!.matchAll(/`([^`]+)`/g)].map((m) => m[1]!));
}

type Zod = { _zod: { def: Record<string, unknown> & { type: string } } };

/** Every setting path of a zod schema: `a.b`, `list[].field`; records and scalars are leaves. */
function settingPaths(schema: Zod, path = "", out: string[] = []): string[] {
  const def = schema._zod.def;
  switch (def.type) {
    case "optional":
    case "default":
    case "nullable":
    case "prefault":
    case "readonly":
      return settingPaths(def.innerType as Zod, path, out);
    case "pipe":
      return settingPaths(def.in as Zod, path, out);
    case "object":
      for (const [key, value] of Object.entries(def.shape as Record<string, Zod>))
        settingPaths(value, path === "" ? key : `${path}.${key}`, out);
      return out;
    case "array": {
      const element = (def.element as Zod)._zod.def.type;
      if (element === "object" || element === "pipe")
        return settingPaths(def.element as Zod, `${path}[]`, out);
      out.push(path);
      return out;
    }
    default:
      out.push(path);
      return out;
  }
}

/** `hosts[].engines.<sglang\|vllm>` names both; a trailing `[]` names the list. */
function expand(name: string): string[] {
  const alt = /<([^>]+)>/.exec(name);
  if (alt === null) return [name.replace(/\[\]$/, "")];
  return alt[1]!.split(/\\?\|/).flatMap((choice) => expand(name.replace(alt[0], choice)));
}

const covers = (doc: string, setting: string) =>
  setting === doc || setting.startsWith(`${doc}.`) || setting.startsWith(`${doc}[]`);

describe("README's settings tables", () => {
  it("document every setting of the config file, and no setting it does not have", () => {
    const settings = settingPaths(fileSchema as unknown as Zod);
    const docs = documented("### Config file").flatMap(expand);
    expect(
      settings.filter((s) => !docs.some((d) => covers(d, s))),
      "settings with no row",
    ).toEqual([]);
    expect(
      docs.filter((d) => !settings.some((s) => covers(d, s))),
      "rows of no setting",
    ).toEqual([]);
  });

  it("document every environment variable the bot reads, and no other", () => {
    const variables = settingPaths(envFields as unknown as Zod);
    const docs = documented("### Environment");
    expect(
      variables.filter((v) => !docs.includes(v)),
      "variables with no row",
    ).toEqual([]);
    expect(
      docs.filter((d) => !variables.includes(d)),
      "rows of no variable",
    ).toEqual([]);
  });
});
