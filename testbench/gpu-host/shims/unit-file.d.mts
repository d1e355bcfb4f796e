/** Types for unit-file.mjs (systemd unit file parsing). */

export interface ParsedCommand {
  path: string;
  argv: string[];
  ignoreErrors: boolean;
  raw: string;
}

export interface ServiceUnit {
  name: string;
  path: string;
  text: string;
  mtimeMs: number;
  sections: Record<string, Record<string, string[]>>;
  description: string;
  type: string;
  execStart: ParsedCommand | null;
  execStartRaw: string | undefined;
  execStartPre: ParsedCommand[];
  parseError: string | null;
  environment: Record<string, string>;
  environmentFiles: { path: string; optional: boolean }[];
  fullEnvironment: Record<string, string>;
  workingDirectory: string | undefined;
  user: string | undefined;
  restart: string;
  restartMs: number;
  timeoutStartMs: number;
  timeoutStopMs: number;
  wantedBy: string[];
  requiredBy: string[];
  hasInstall: boolean;
}

export declare function parseUnitText(text: string): { sections: Record<string, Record<string, string[]>> };
export declare function splitWords(value: string): { text: string; quoted: boolean }[];
export declare function parseEnvironment(values: string[]): Record<string, string>;
export declare function parseEnvironmentFileText(text: string): Record<string, string>;
export declare function expandSpecifiers(text: string, unitName: string): string;
export declare function parseCommandLine(
  value: string,
  env?: Record<string, string>,
  unitName?: string,
): ParsedCommand;
export declare function parseTimeSpanMs(text: string | undefined): number | undefined;
export declare function formatTimeSpan(ms: number | undefined): string;
export declare function loadUnitFile(path: string, name: string): ServiceUnit | null;
export declare function interpretUnit(
  text: string,
  path: string,
  name: string,
  mtimeMs?: number,
): ServiceUnit;
