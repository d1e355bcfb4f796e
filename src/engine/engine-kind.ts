/** The engines modelswap knows. */
export const ENGINE_KINDS = ["sglang", "vllm"] as const;
export type EngineKind = (typeof ENGINE_KINDS)[number];

/** For people, by kind. */
export const ENGINE_NAMES: Readonly<Record<EngineKind, string>> = { sglang: "SGLang", vllm: "vLLM" };
