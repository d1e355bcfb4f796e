/** Types for venv.mjs (the simulated host's Python venv: editable installs, packages, CUDA stack). */

export interface EditableInstall {
  name: string;
  version: string;
  marker: string;
  projectDir: string;
  mtimeMs: number;
}

export interface PackageChange {
  name: string;
  from: string | null;
  to: string | null;
}

export interface StackState {
  /** true once pip installed or removed a package of the CUDA stack. */
  replaced: boolean;
  /** The pip command line that did it. */
  by?: string;
  at?: string;
  changes: PackageChange[];
  /** Packages pip changed: name → version (null: removed). */
  packages: Record<string, string | null>;
}

export declare const BASE_PACKAGES: Record<string, string>;
export declare const MODULE_DISTRIBUTIONS: Record<string, string>;
export declare function normalizeName(name: string): string;
export declare function isCudaStack(name: string): boolean;
export declare function editableInstalls(root?: string): EditableInstall[];
export declare function editableInstall(name: string, root?: string): EditableInstall | null;
export declare function importableSglang(
  root?: string,
): { projectDir: string; packageDir: string; version: string | null; installedVersion: string } | null;
export declare function readStackState(root?: string): StackState;
export declare function recordPackageChanges(changes: PackageChange[], by: string, root?: string): void;
export declare function installedPackages(root?: string): Map<string, string>;
export declare function installedVersion(name: string, root?: string): string | null;
export declare function moduleVersion(module: string, root?: string): string | null;
export declare function writeEditableInstall(
  dist: {
    name: string;
    version: string;
    projectDir: string;
    summary?: string;
    requires?: string[];
    license?: string;
  },
  root?: string,
): string | null;
export declare function removeEditableInstall(name: string, root?: string): string | null;
export declare function editableMetadata(install: EditableInstall): {
  summary: string;
  license: string;
  requires: string[];
};
