/** The simulated Hugging Face Hub: see README.md in this directory. */

export { checkpointModel } from "./checkpoint-model.ts";
export { ContentReader, computeDigests, type FileDigests, generatedBlock, lfsPointer } from "./content.ts";
export { type MakeModelOptions, type ModelPreset, makeModel, presetInfo } from "./make-model.ts";
export { defaultSha, parseRange, SIM_HUB_TOKEN, SimHub, type SimHubOptions, startSimHub } from "./sim-hub.ts";
export type { GatedMode, HubFault, HubRequest, SimModel, SimModelFile } from "./types.ts";
