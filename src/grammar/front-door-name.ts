/**
 * A front door's backend or server name as it reaches HAProxy's Runtime API (`set server <b>/<s> …`):
 * letters, digits and `_.:-`, starting with a letter or digit, at most 64. HAProxy itself admits the
 * same characters in proxy and server names; this grammar also keeps out what the Runtime API reads as
 * syntax (a space separates words, `;` and a newline separate commands, `/` separates backend and server)
 * and what a shell or socat could read (quoting is still done by shell-quote.ts).
 */
export const FRONT_DOOR_NAME = /^[A-Za-z0-9][A-Za-z0-9_.:-]{0,63}$/;

/** What a front door name may be, for messages that refuse one. */
export const FRONT_DOOR_NAME_RULE =
  "letters, digits and _ . : -, starting with a letter or digit, at most 64";

export function isFrontDoorName(text: string): boolean {
  return FRONT_DOOR_NAME.test(text);
}

/**
 * The Runtime API socket's path on the host: absolute, letters, digits and `_.-/` only. socat reads its
 * address spec (`unix-connect:<path>`) with `,` `:` `!` and spaces as syntax, so those are kept out.
 */
export const SOCKET_PATH = /^\/(?:[A-Za-z0-9_.-]+\/)*[A-Za-z0-9_.-]+$/;

export function isSocketPath(text: string): boolean {
  return SOCKET_PATH.test(text) && !text.split("/").includes("..");
}
