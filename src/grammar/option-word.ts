/**
 * One word of `/llm` text read as an option, the way people type it. macOS and iOS autocorrect turn `--`
 * into an em dash (`—host`), some keyboards into an en dash (`–host`): a single one of either before a
 * lowercase letter reads as `--`. `--name=value` gives the value in the same word. Anything else is left
 * as it is for the sub-command to refuse; the value is never admitted here, only split off.
 */
export interface OptionWord {
  /** The word with a leading dash from autocorrect made `--`, and without its `=value`. */
  name: string;
  /** What follows the first `=` of a `--name=value` word (possibly empty); undefined without one. */
  inline: string | undefined;
}

const AUTOCORRECTED = /^[\u2013\u2014](?=[a-z])/;
const WITH_VALUE = /^(--[a-z][a-z-]*)=(.*)$/s;

export function optionWord(word: string): OptionWord {
  const name = word.replace(AUTOCORRECTED, "--");
  const split = WITH_VALUE.exec(name);
  return split === null ? { name, inline: undefined } : { name: split[1]!, inline: split[2]! };
}
