import type { EngineSetup } from "../engine/engine-setup.ts";
import type { ModelFile } from "../hub/types.ts";
import { formatGiB } from "./byte-units.ts";
import { inPlaceFit } from "./in-place-fit.ts";
import type { ClientPlan, SwapPlan } from "./types.ts";

/*
 * Whether a swap loads its weights into the engine that serves now (issue #31's fast path), and the unit
 * it leaves behind. Two steps: `inPlaceCandidate` decides from the two models (the same repository at
 * another commit, the same checkpoint shapes and quantization, the same tokenizer files, an engine that can
 * do it); the planner then plans that swap as a cold one at the served tp without parking or blue/green,
 * and `inPlaceUnit` (on every render of the unit) checks that the unit it would write differs from the
 * running one only in the model path. Anything else, and the swap is planned the usual way, with the
 * reason in the plan.
 */

/** The served model as its own swap planned it, and the directory its unit loads. */
export interface ServedModel {
  plan: SwapPlan;
  modelDir: string;
}

export type InPlaceCandidate = { ok: true; served: ServedModel } | { ok: false; why: string };

/**
 * Files the engine reads beside the weights that an in-place update does not reload: the tokenizer, its
 * chat template and the generation defaults stay the running revision's (SGLang's update_weights_from_disk
 * swaps the parameters only: model_runner.py). A new revision that changes one is not loaded in place.
 */
const KEPT_FILES =
  /(^|\/)(tokenizer[^/]*|vocab\.[^/]+|merges\.txt|special_tokens_map\.json|chat_template[^/]*|generation_config\.json|added_tokens\.json|preprocessor_config\.json|processor_config\.json)$/;

/**
 * Whether the new model could be loaded into the engine serving now. Undefined when the question does not
 * arise: the engine has no in-place load, nothing modelswap swapped in serves, or it serves another
 * repository (a new model, not a new revision).
 */
export function inPlaceCandidate(
  next: Pick<SwapPlan, "model" | "facts" | "engineKind">,
  served: ServedModel | undefined,
  setup: Pick<EngineSetup, "inPlace">,
  current: { exists: boolean; active: boolean },
): InPlaceCandidate | undefined {
  if (setup.inPlace === undefined || served === undefined || !current.exists) return undefined;
  const old = served.plan;
  if (old.model.repo !== next.model.repo || old.model.sha === next.model.sha) return undefined;
  const no = (why: string): InPlaceCandidate => ({ ok: false, why: `not loaded in place: ${why}` });
  if (!current.active) return no("the unit serving it is not running");
  if (old.engineKind !== next.engineKind)
    return no(`it is served by ${old.engineKind}, and this swap runs ${next.engineKind}`);
  const fit = inPlaceFit(old.facts, next.facts);
  if (!fit.fits) return no(fit.why);
  const changed = keptFilesChanged(old.model.files, next.model.files);
  if (changed !== undefined) return no(changed);
  return { ok: true, served };
}

/** The tokenizer-side files that differ between the two revisions (by their git blob ids). */
function keptFilesChanged(served: readonly ModelFile[], next: readonly ModelFile[]): string | undefined {
  const kept = (files: readonly ModelFile[]) =>
    new Map(files.filter((f) => KEPT_FILES.test(f.path)).map((f) => [f.path, f]));
  const [a, b] = [kept(served), kept(next)];
  const paths = [...new Set([...a.keys(), ...b.keys()])].sort();
  const differ = paths.filter((p) => {
    const [x, y] = [a.get(p), b.get(p)];
    if (x === undefined || y === undefined) return true;
    if (x.oid === undefined || y.oid === undefined) return true;
    return x.oid !== y.oid || x.size !== y.size;
  });
  if (differ.length === 0) return undefined;
  const unknown = differ.every((p) => a.get(p)?.oid === undefined && b.get(p) !== undefined);
  return unknown
    ? `the served revision's tokenizer files were recorded without their ids (planned before they were kept), so they cannot be compared: ${differ.slice(0, 3).join(", ")}`
    : `the new revision changes ${differ.slice(0, 3).join(", ")}${differ.length > 3 ? ` and ${differ.length - 3} more` : ""}, which an in-place load keeps from the running revision`;
}

/**
 * How fast new weights go from the page cache into the GPUs: a third party measured a 3.44 s engine pause
 * for GLM-5.2 FP8 at tp 4 with the weights staged in host RAM, 240 s from disk (modal-projects/stitch#168);
 * about 10 GB/s a GPU, the pace SGLang's resume from its CPU backup is measured at (client-plan.ts).
 */
const UPDATE_BYTES_PER_SECOND_PER_GPU = 10e9;

/** The plan's in-place part for a candidate that fits. */
export function inPlaceClients(
  served: ServedModel,
  setup: Pick<EngineSetup, "inPlace">,
  weightBytes: number,
  tp: number,
): NonNullable<ClientPlan["inPlace"]> {
  const seconds = Math.max(1, Math.ceil(weightBytes / tp / UPDATE_BYTES_PER_SECOND_PER_GPU));
  const name = setup.inPlace!.name;
  return {
    will: true,
    mechanism: name,
    fromModelDir: served.modelDir,
    fromSha: served.plan.model.sha,
    seconds,
    why: `a new revision of the model serving now (${served.plan.model.sha.slice(0, 7)} → new), with the same architecture, shapes, quantization, tokenizer files and tp: its weights are read into the page cache while the old ones serve, then loaded into the running engine (${name}: ${formatGiB(weightBytes / tp)} a GPU, about ${seconds} s); no restart, no graph capture or JIT, and the engine's caches stay warm`,
  };
}

/** The unit an in-place swap leaves: the running one's, or why the new flags rule it out. */
export type InPlaceUnit = { ok: true; name: string; text: string } | { ok: false; why: string };

/**
 * The running unit with the new model: its name kept (its process goes on serving), the new unit's text
 * with the running one's compile-cache directories (those its process uses). The rest of the two texts
 * must be the same once the model path is (comments and Description aside): the running engine keeps its
 * flags, environment and build, so a plan that changes any of them cannot be loaded in place.
 */
export function inPlaceUnit(
  current: { name: string; text: string },
  rendered: { text: string },
  paths: { newModelDir: string; oldModelDir: string },
  cacheVariables: readonly { name: string }[],
  note: string,
): InPlaceUnit {
  const isCache = (line: string) => cacheVariables.some((v) => line.startsWith(`Environment=${v.name}=`));
  const compared = (text: string) =>
    text
      .split("\n")
      .map((l) => l.trimEnd())
      .filter((l) => l !== "" && !l.startsWith("#") && !l.startsWith("Description=") && !isCache(l));
  const now = compared(current.text);
  const next = compared(rendered.text.split(paths.newModelDir).join(paths.oldModelDir));
  for (let i = 0; i < Math.max(now.length, next.length); i++) {
    if (now[i] === next[i]) continue;
    const [a, b] = [now[i], next[i]].map((l) => (l === undefined ? "nothing" : `\`${l.slice(0, 160)}\``));
    return {
      ok: false,
      why: `not loaded in place: its unit would change beyond the model path (${a} now, ${b} new), and the running engine keeps its flags`,
    };
  }
  const caches = current.text.split("\n").filter(isCache);
  const out: string[] = [];
  let cachesPut = false;
  for (const line of rendered.text.split("\n")) {
    if (isCache(line)) {
      if (!cachesPut) out.push(...caches);
      cachesPut = true;
      continue;
    }
    out.push(line);
  }
  const header = out.indexOf("[Unit]");
  out.splice(Math.max(0, header), 0, `# ${note}`);
  return { ok: true, name: current.name, text: out.join("\n") };
}

/** The plan's downtime basis for a load in place: the engine's pause, and what it does not do. */
export function inPlaceBasis(
  weightBytes: number,
  tp: number,
  inPlace: NonNullable<ClientPlan["inPlace"]>,
  preloaded: boolean,
): string {
  const from = preloaded
    ? "from the page cache (preloaded)"
    : "from disk (they do not fit in the RAM available)";
  return `${formatGiB(weightBytes / tp)} a GPU of new weights loaded into the running engine ${from} by ${inPlace.mechanism ?? "the engine"}; no process start, graph capture or JIT`;
}
