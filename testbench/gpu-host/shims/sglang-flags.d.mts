/** Types for sglang-flags.mjs (the simulated SGLang command line). */

export interface FlagSpec {
  flags: string[];
  dest: string;
  type: "str" | "int" | "float" | "hint" | "bool" | "list" | "unknown";
  choices?: (string | number)[];
  required?: boolean;
  help?: string;
  default?: unknown;
}

export declare const BUILTIN_FLAGS: FlagSpec[];
export declare class ArgError extends Error {}
/** Flags of the engine whose project directory (holding `sglang/`) is `projectDir`; built-in when null. */
export declare function loadFlagSpecs(projectDir: string | null): { specs: FlagSpec[]; source: string };
export declare function parseArgs(
  specs: FlagSpec[],
  argv: string[],
): { values: Record<string, unknown>; given: Set<string>; help: boolean };
export declare function formatUsage(prog: string, specs: FlagSpec[]): string;
export declare function formatHelp(prog: string, specs: FlagSpec[]): string;
export declare function setting(values: Record<string, unknown>, dest: string): unknown;
export declare function pyValue(v: unknown): string;
/** A classic argparse-style server_args.py declaring the built-in flags (minus `omit`, plus `add`). */
export declare function renderServerArgsPy(options?: { omit?: string[]; add?: string[] }): string;
