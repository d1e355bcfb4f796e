import { ENGINE_KINDS, ENGINE_NAMES, type EngineKind } from "../engine/engine-kind.ts";
import type { HostConfig } from "./file-schema.ts";

/** Each engine's upstream, where a host's config names none. */
export const DEFAULT_UPSTREAMS: Readonly<Record<EngineKind, string>> = {
  sglang: "https://github.com/sgl-project/sglang.git",
  vllm: "https://github.com/vllm-project/vllm.git",
};

/** One engine a host has, as a swap builds and runs it. */
export interface HostEngine {
  kind: EngineKind;
  venv: string;
  upstream: string;
  patches: readonly string[];
  compileKernels: boolean;
}

type EngineFields = Pick<HostConfig, "engine" | "venv" | "engineUpstream" | "enginePatches" | "engines">;

/** The host's own engine: its `engine`, SGLang where the config names none (the one place that default lives). */
export function hostEngineKind(host: { engine?: EngineKind | undefined }): EngineKind {
  return host.engine ?? "sglang";
}

/** Each configured host's own engine, by name (a host no longer configured: SGLang). */
export function engineOfHost(hosts: readonly { name: string; engine?: EngineKind | undefined }[]) {
  return (name: string): EngineKind => hostEngineKind(hosts.find((h) => h.name === name) ?? {});
}

/** Every engine the host has: its `engine` (venv, engineUpstream, enginePatches) first, then `engines`. */
export function hostEngines(host: EngineFields): HostEngine[] {
  const main = hostEngineKind(host);
  const own = host.engines?.[main];
  const first: HostEngine = {
    kind: main,
    venv: host.venv,
    upstream: host.engineUpstream ?? DEFAULT_UPSTREAMS[main],
    patches: host.enginePatches ?? [],
    compileKernels: own?.compileKernels ?? false,
  };
  const others = ENGINE_KINDS.filter((k) => k !== main).flatMap((kind): HostEngine[] => {
    const e = host.engines?.[kind];
    return e === undefined
      ? []
      : [
          {
            kind,
            venv: e.venv,
            upstream: e.upstream ?? DEFAULT_UPSTREAMS[kind],
            patches: e.patches,
            compileKernels: e.compileKernels,
          },
        ];
  });
  return [first, ...others];
}

/**
 * The engine a swap uses: the one it names, or the host's `engine`; or why the host cannot, in a line
 * that says what it has.
 */
export function hostEngine(
  host: EngineFields & { name: string },
  kind?: EngineKind,
): { ok: true; engine: HostEngine } | { ok: false; problem: string; fix: string } {
  const all = hostEngines(host);
  const found = kind === undefined ? all[0]! : all.find((e) => e.kind === kind);
  if (found !== undefined) return { ok: true, engine: found };
  const has = all.map((e) => e.kind).join(", ");
  return {
    ok: false,
    problem: `${host.name} has no ${ENGINE_NAMES[kind!]} (it has ${has})`,
    fix: `swap with --engine ${has.split(", ")[0]}, or an admin adds hosts[${host.name}].engines.${kind} (its venv) to the config`,
  };
}
