import { CodedError } from "../errors.ts";

/**
 * The writes that go with a swap record's save (its events, ledger entries, audit entries, the
 * tally, what the host serves, the host's release), gathered to be applied by one Lua script once the
 * save's preconditions hold (SAVE_IF_ALLOWED). A MULTI cannot do this: its commands run whatever an
 * earlier one found, and WATCH needs a connection of the save's own (ioredis shares one between every
 * caller, and on a Cluster or behind Sentinel a dedicated one would not follow a failover, nor carry the
 * WAIT that confirms the write). A script runs on the shared client, alone on the server, on one Redis,
 * Sentinel's master and the Cluster's master of modelswap's slot alike (every key has the same hash tag).
 */
export class SaveWrites {
  private readonly writeKeys: string[] = [];
  private readonly writeArgs: string[] = [];
  private count = 0;

  set(key: string, value: string): void {
    this.write("set", [key], [value]);
  }

  zadd(key: string, ...args: (string | number)[]): void {
    this.write("zadd", [key], args);
  }

  rpush(key: string, ...values: string[]): void {
    this.write("rpush", [key], values);
  }

  xadd(key: string, ...args: string[]): void {
    this.write("xadd", [key], args);
  }

  pexpire(key: string, ms: number): void {
    this.write("pexpire", [key], [ms]);
  }

  zremrangebyscore(key: string, min: string | number, max: string | number): void {
    this.write("zremrangebyscore", [key], [min, max]);
  }

  /** Deletes `key` only while it holds `value` (a lock given back by its holder only). */
  delIfHolds(key: string, value: string): void {
    this.write("@del-if-holds", [key], [value]);
  }

  /**
   * A swap's tally, once: nothing when `id` is in `tallied` already; else, per triple (op, field, value),
   * `+` adds to the field of `tally` (HINCRBYFLOAT) and `=` sets it.
   */
  tallyOnce(tally: string, tallied: string, id: string, triples: readonly string[]): void {
    this.write("@tally-once", [tally, tallied], [id, ...triples]);
  }

  /** The script's KEYS after its own three, and its ARGV after its own three. */
  scriptArgs(): { keys: string[]; args: string[] } {
    return { keys: this.writeKeys, args: [String(this.count), ...this.writeArgs] };
  }

  private write(name: string, keys: string[], args: readonly (string | number)[]): void {
    this.count++;
    this.writeKeys.push(...keys);
    this.writeArgs.push(name, String(keys.length), String(args.length), ...args.map(String));
  }
}

/**
 * KEYS[1] the swap's record, KEYS[2] its lease, KEYS[3] its host's lock, then the writes' keys in order.
 * ARGV[1] the lease: '' not looked at, '-' no run may hold it, else the token that must hold it; ARGV[2]
 * the swap the host lock must name ('' not looked at); ARGV[3] the record (JSON); ARGV[4] how many other
 * writes; then per write its name, its number of keys, its number of arguments, and the arguments.
 * Nothing is written, and the answer says why, when the stored record has ended (step done with an
 * outcome: `ended <outcome>`) or a condition does not hold (`lease`, `leased`, `host`); else the record
 * and every write are made and the answer is `ok`. An ended record saved again as it is (a save resent
 * after a lost answer: ioredis resends what had no reply when it reconnects) writes nothing and is `same`.
 */
export const SAVE_IF_ALLOWED = `
local raw = redis.call('get', KEYS[1])
if raw then
  local ok, stored = pcall(cjson.decode, raw)
  if ok and type(stored) == 'table' and stored.step == 'done' and type(stored.outcome) == 'string' then
    if raw == ARGV[3] then return 'same' end
    return 'ended ' .. stored.outcome
  end
end
local lease = redis.call('get', KEYS[2])
if ARGV[1] == '-' then
  if lease then return 'leased' end
elseif ARGV[1] ~= '' and lease ~= ARGV[1] then
  return 'lease'
end
if ARGV[2] ~= '' and redis.call('get', KEYS[3]) ~= ARGV[2] then return 'host' end
redis.call('set', KEYS[1], ARGV[3])
local k, a = 4, 5
for _ = 1, tonumber(ARGV[4]) do
  local name, nk, na = ARGV[a], tonumber(ARGV[a + 1]), tonumber(ARGV[a + 2])
  local ks, as = {}, {}
  for i = 1, nk do ks[i] = KEYS[k + i - 1] end
  for i = 1, na do as[i] = ARGV[a + 2 + i] end
  k, a = k + nk, a + 3 + na
  if name == '@del-if-holds' then
    if redis.call('get', ks[1]) == as[1] then redis.call('del', ks[1]) end
  elseif name == '@tally-once' then
    if redis.call('sadd', ks[2], as[1]) == 1 then
      for i = 2, #as, 3 do
        if as[i] == '+' then redis.call('hincrbyfloat', ks[1], as[i + 1], as[i + 2])
        else redis.call('hset', ks[1], as[i + 1], as[i + 2]) end
      end
    end
  else
    local command = {name}
    for i = 1, nk do command[#command + 1] = ks[i] end
    for i = 1, na do command[#command + 1] = as[i] end
    redis.call(unpack(command))
  end
end
return 'ok'
`;

/**
 * Who may save a swap's record, besides the rule that holds for every save (a record that has ended is
 * never saved again: SWAP_ENDED): the run holding the swap's lease (`lease`: its token), or someone
 * ending a swap no run can end any more (`stuck`: no run holds its lease, and its host lock names it).
 */
export type SaveCondition = { lease: string } | { stuck: true };

/** The coded error for a save the script refused (its answer), or undefined for `ok`. */
export function saveRefused(swapId: string, host: string, answer: string): CodedError | undefined {
  if (answer === "ok" || answer === "same") return undefined;
  if (answer.startsWith("ended ")) {
    const outcome = answer.slice("ended ".length).replace("_", " ");
    return new CodedError(
      "SWAP_ENDED",
      `swap ${swapId} has ended (${outcome}) meanwhile; this save was not made, and its record keeps that outcome`,
      "nothing to do: a swap ends once, and what ended it (its run, or a cancel of a stuck swap) said so in its thread",
    );
  }
  if (answer === "lease") return superseded(swapId);
  if (answer === "leased")
    return new CodedError(
      "SWAP_SUPERSEDED",
      `swap ${swapId} is being advanced by a run now; it was not ended from outside`,
      "nothing to do: the run that holds the swap's lease ends it",
    );
  return new CodedError(
    "SWAP_SUPERSEDED",
    `swap ${swapId} no longer holds ${host}; it was not ended from outside`,
    "nothing to do: look at the host again (`/llm status`)",
  );
}

export function superseded(swapId: string): CodedError {
  return new CodedError(
    "SWAP_SUPERSEDED",
    `swap ${swapId} is advanced by another run now; this one stops without saving or touching a host`,
    "nothing to do: the run that holds the swap's lease goes on",
  );
}
