/**
 * Config problems are written as "what is wrong" + "how to fix it". Zod carries one message string, so
 * the two travel joined by FIX_SEPARATOR and are split again when reported.
 */
export const FIX_SEPARATOR = "\nfix: ";

export function problem(what: string, fix: string): string {
  return `${what}${FIX_SEPARATOR}${fix}`;
}

export function splitProblem(message: string): { what: string; fix: string | undefined } {
  const at = message.indexOf(FIX_SEPARATOR);
  if (at < 0) return { what: message, fix: undefined };
  return { what: message.slice(0, at), fix: message.slice(at + FIX_SEPARATOR.length) };
}
