import { readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { describe, expect, it } from "vitest";

/**
 * The layer rules of DESIGN.md §3, checked over every import of the project's own files: who may import
 * ssh2, Bolt and Slack's Web API client, what a pipeline stage may reach, which way src/, jobs/ and
 * commands/ depend on each other, that product code never imports the bench or the tests (but for the
 * demo), that bench/ does not import test/, and that nothing imports itself back.
 */
const ROOT = resolve(import.meta.dirname, "../..");
const PRODUCT = ["src", "jobs", "commands"];
const ALL = [...PRODUCT, "testbench", "bench", "test"];

interface Import {
  /** The file the import names: a project path (relative to the root) or a package name. */
  target: string;
  /** `import type` / `export type`: erased at run time. */
  typeOnly: boolean;
}

const files = new Map<string, Import[]>();
for (const top of ALL) walk(join(ROOT, top));

function walk(path: string): void {
  for (const name of readdirSync(path)) {
    if (name === "node_modules") continue;
    const full = join(path, name);
    if (statSync(full).isDirectory()) walk(full);
    else if (/\.(ts|mts|mjs)$/.test(name) && !name.endsWith(".d.mts"))
      files.set(relative(ROOT, full), importsOf(full));
  }
}

function importsOf(file: string): Import[] {
  // comments name modules too (JSDoc's `import("./x.mjs").Type`): they import nothing
  const text = readFileSync(file, "utf8")
    .replace(/\/\*[\s\S]*?\*\//g, "")
    .replace(/^\s*\/\/.*$/gm, "");
  const found: Import[] = [];
  const statement = /(?:^|\n)\s*(import|export)\s+(type\s+)?(?:[^"'`;]*?\sfrom\s+)?["']([^"']+)["']/g;
  for (const m of text.matchAll(statement)) found.push(resolveImport(file, m[3]!, m[2] !== undefined));
  for (const m of text.matchAll(/\bimport\(\s*["']([^"']+)["']\s*\)/g))
    found.push(resolveImport(file, m[1]!, false));
  return found;
}

function resolveImport(file: string, spec: string, typeOnly: boolean): Import {
  if (!spec.startsWith(".")) {
    const parts = spec.split("/");
    return { target: spec.startsWith("@") ? parts.slice(0, 2).join("/") : parts[0]!, typeOnly };
  }
  return { target: relative(ROOT, resolve(dirname(file), spec)), typeOnly };
}

const inside = (path: string, ...dirs: string[]) => dirs.some((d) => path === d || path.startsWith(`${d}/`));
const isProduct = (path: string) => inside(path, ...PRODUCT);

/** Every import of `from` whose target matches, as "file → target". */
function offenders(
  from: (file: string) => boolean,
  to: (target: string) => boolean,
  runtimeOnly = false,
): string[] {
  const out: string[] = [];
  for (const [file, imports] of files) {
    if (!from(file)) continue;
    for (const i of imports)
      if (to(i.target) && !(runtimeOnly && i.typeOnly)) out.push(`${file} → ${i.target}`);
  }
  return out;
}

/** The files `file` needs at run time, transitively (type-only imports are erased, so they do not count). */
function runtimeClosure(file: string): Set<string> {
  const seen = new Set<string>();
  const stack = [file];
  while (stack.length > 0) {
    const next = stack.pop()!;
    if (seen.has(next)) continue;
    seen.add(next);
    for (const i of files.get(next) ?? []) if (!i.typeOnly) stack.push(i.target);
  }
  seen.delete(file);
  return seen;
}

describe("the layer rules", () => {
  it("finds the project's files and their imports (the rules below look at something)", () => {
    expect(files.size).toBeGreaterThan(200);
    expect(files.get("src/main.ts")?.some((i) => i.target === "src/store/store.ts")).toBe(true);
    expect(files.get("jobs/swap/stages/switch.ts")?.some((i) => i.target === "src/host/shell-quote.ts")).toBe(
      true,
    );
  });

  it("only the host layer imports ssh2", () => {
    expect(
      offenders(
        (f) => isProduct(f) && !inside(f, "src/host"),
        (t) => t === "ssh2",
      ),
    ).toEqual([]);
  });

  it("only the Slack layer imports Bolt and the Web API client", () => {
    const slack = (t: string) => t === "@slack/bolt" || t === "@slack/web-api" || t === "@slack/socket-mode";
    expect(offenders((f) => isProduct(f) && !inside(f, "src/slack"), slack)).toEqual([]);
  });

  it("a pipeline stage reaches neither Slack, the reporter, ssh2 nor Redis, not even through what it imports", () => {
    const stages = [...files.keys()].filter((f) => inside(f, "jobs/swap/stages"));
    expect(stages.length).toBeGreaterThan(8);
    const forbidden = (t: string) =>
      inside(t, "src/slack", "src/reporter") ||
      ["ssh2", "@slack/bolt", "@slack/web-api", "ioredis", "bullmq"].includes(t);
    const reached = stages.flatMap((stage) =>
      [...runtimeClosure(stage)].filter(forbidden).map((t) => `${stage} ⇒ ${t}`),
    );
    expect(reached).toEqual([]);
    // and not directly either, types included: a stage speaks in events, never in Slack messages
    expect(
      offenders(
        (f) => inside(f, "jobs/swap/stages"),
        (t) => inside(t, "src/slack", "src/reporter") || t.startsWith("@slack/"),
      ),
    ).toEqual([]);
  });

  it("the front door reaches neither Slack, ssh2 nor Redis: it runs commands through the host transport", () => {
    const frontDoor = [...files.keys()].filter((f) => inside(f, "src/front-door"));
    expect(frontDoor.length).toBeGreaterThan(3);
    const forbidden = (t: string) =>
      inside(t, "src/slack", "src/reporter", "src/store") ||
      ["ssh2", "@slack/bolt", "@slack/web-api", "@slack/socket-mode", "ioredis", "bullmq"].includes(t);
    const reached = frontDoor.flatMap((file) =>
      [...runtimeClosure(file)].filter(forbidden).map((t) => `${file} ⇒ ${t}`),
    );
    expect(reached).toEqual([]);
  });

  it("src/ never imports jobs/ or commands/ (but for the composition root)", () => {
    expect(
      offenders(
        (f) => inside(f, "src") && f !== "src/main.ts",
        (t) => inside(t, "jobs", "commands"),
      ),
    ).toEqual([]);
  });

  it("product code never imports the bench or the tests (the demo is part of the bench: testbench/demo.ts)", () => {
    expect(
      offenders(
        (f) => isProduct(f),
        (t) => inside(t, "testbench", "test"),
      ),
    ).toEqual([]);
  });

  it("bench/ does not import test/", () => {
    expect(
      offenders(
        (f) => inside(f, "bench"),
        (t) => inside(t, "test"),
      ),
    ).toEqual([]);
  });

  it("outside src/engine/, product code reaches an engine only through the Engine interface (issue #15)", () => {
    // an engine's own knowledge (its health path, journal lines, request bodies) stays behind
    // src/engine/engines.ts: a stage, the monitor or /llm status asks the host's engine, never SGLang's
    const engineOwn = [
      "src/engine/sglang/sglang-engine.ts",
      "src/engine/vllm/vllm-engine.ts",
      "src/engine/sglang/serving-health.ts",
      "src/engine/sglang/generate-judge.ts",
      "src/engine/sglang/bench-command.ts",
      "src/engine/vllm/completions-judge.ts",
      "src/engine/vllm/bench-command.ts",
      "src/engine/fatal-lines.ts",
    ];
    expect(
      offenders(
        (f) => isProduct(f) && !inside(f, "src/engine"),
        (t) => engineOwn.includes(t),
      ),
    ).toEqual([]);
    // …and it does look: the stages and the monitor do reach the engine through it
    expect(
      files.get("jobs/swap/create-stage-context.ts")?.some((i) => i.target === "src/engine/engines.ts"),
    ).toBe(true);
  });

  it('outside src/engine/, product code never asks which engine it is (no `kind === "vllm"`)', () => {
    // engine-shaped behaviour is the Engine interface's; a stage that branched on the kind would grow
    // a branch per engine (issue #15: "without a single if (engine === 'vllm') outside the engine layer")
    const branches = [...files.keys()]
      .filter((f) => isProduct(f) && !inside(f, "src/engine"))
      .flatMap((f) =>
        readFileSync(join(ROOT, f), "utf8")
          .split("\n")
          .filter((line) => /[!=]==\s*["'](?:sglang|vllm)["']|["'](?:sglang|vllm)["']\s*[!=]==/.test(line))
          .map((line) => `${f}: ${line.trim()}`),
      );
    expect(branches).toEqual([]);
  });

  it("has no import cycles", () => {
    const graph = new Map([...files].map(([file, imports]) => [file, imports.map((i) => i.target)]));
    expect(cyclesOf(graph)).toEqual([]);
  });

  it("has no cycles between src/'s folders: each folder's imports, types included, go one way", () => {
    // a folder of src/ is a node; a file at src/'s root (main.ts, errors.ts, …) is a node of its own
    const node = (path: string) => {
      const rest = path.slice("src/".length);
      return rest.includes("/") ? rest.slice(0, rest.indexOf("/")) : rest;
    };
    // folder → folder it imports → one import that does it
    const edges = new Map<string, Map<string, string>>();
    for (const [file, imports] of files) {
      if (!inside(file, "src")) continue;
      for (const { target } of imports) {
        if (!inside(target, "src") || node(target) === node(file)) continue;
        const from = edges.get(node(file)) ?? new Map<string, string>();
        if (!from.has(node(target))) from.set(node(target), `${file} → ${target}`);
        edges.set(node(file), from);
      }
    }
    // a cycle of any length (issue #29 broke the last: config → engine → host → config through the host
    // registry's config type, and approval → reporter → slack → approval through the decision's words),
    // each shown with one import per edge that closes it
    const graph = new Map([...edges].map(([from, to]) => [from, [...to.keys()]]));
    const cycles = cyclesOf(graph).map((folders) =>
      folders.flatMap((a) => folders.flatMap((b) => edges.get(a)?.get(b) ?? [])),
    );
    expect(cycles).toEqual([]);
  });

  it("no product file is over 350 lines: a file that long holds several things (issue #29)", () => {
    const long = [...files.keys()]
      .filter(isProduct)
      .map((file) => [file, readFileSync(join(ROOT, file), "utf8").split("\n").length - 1] as const)
      .filter(([, lines]) => lines > MAX_FILE_LINES)
      .map(([file, lines]) => `${file}: ${lines} lines`);
    expect(long).toEqual([]);
  });
});

/** The most lines a product file may have (issue #29's rule). */
const MAX_FILE_LINES = 350;

/** Tarjan's strongly connected components of a graph, those with more than one node: each a cycle. */
function cyclesOf(graph: ReadonlyMap<string, readonly string[]>): string[][] {
  let index = 0;
  const order = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const cycles: string[][] = [];
  const visit = (node: string) => {
    order.set(node, index);
    low.set(node, index);
    index += 1;
    stack.push(node);
    onStack.add(node);
    for (const target of graph.get(node) ?? []) {
      if (!graph.has(target)) continue; // it imports nothing: on no cycle
      if (!order.has(target)) {
        visit(target);
        low.set(node, Math.min(low.get(node)!, low.get(target)!));
      } else if (onStack.has(target)) low.set(node, Math.min(low.get(node)!, order.get(target)!));
    }
    if (low.get(node) === order.get(node)) {
      const component: string[] = [];
      let member: string;
      do {
        member = stack.pop()!;
        onStack.delete(member);
        component.push(member);
      } while (member !== node);
      if (component.length > 1) cycles.push(component.sort());
    }
  };
  for (const node of graph.keys()) if (!order.has(node)) visit(node);
  return cycles;
}
