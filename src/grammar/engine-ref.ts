/** A git ref of the engine upstream as `--engine-ref` names it: a branch, tag or commit. No `..`, no shell characters. */
export const ENGINE_REF = /^[A-Za-z0-9_][A-Za-z0-9._/-]{0,127}$/;

export const ENGINE_REF_RULE = "a git branch, tag or commit (letters, digits, . _ / -)";

export function isEngineRef(text: string): boolean {
  return ENGINE_REF.test(text) && !text.includes("..") && !text.endsWith("/") && !text.endsWith(".lock");
}
