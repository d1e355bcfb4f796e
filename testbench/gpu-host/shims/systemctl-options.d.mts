/** Types for systemctl-options.mjs (systemctl's command line). */

export interface SystemctlOptions {
  now: boolean;
  value: boolean;
  properties: string[];
  all: boolean;
  types: string[];
  legend: boolean;
  plain: boolean;
  quiet: boolean;
  lines: number;
  signal: string;
  noReload: boolean;
  states: string[];
}

export declare function parseSystemctlArgs(argv: string[]): {
  opts: SystemctlOptions;
  positional: string[];
  badOption: string | null;
};
