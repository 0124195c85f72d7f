// Lua scripts for the Redis adapters: each script is run by its SHA1 (EVALSHA) and sent in full
// (EVAL, which also caches it) only when the server answers NOSCRIPT — the first call, or after
// a restart or SCRIPT FLUSH. Every script receives ALL the keys it touches in KEYS, and the
// adapters only ever pass keys of one hash slot (see docs/redis-layout.md).
//
// Scripts start with a Redis 7 shebang (`#!lua`), so the server itself refuses a script that
// touches a key outside its declared keys' slot (in cluster mode), refuses a writing script up
// front under OOM instead of half-way, and read-only scripts are flagged `no-writes`.
// Requires Redis >= 7.0.
import { createHash } from 'node:crypto';
import type { RedisClient } from './keys.ts';

export type LuaArg = string | number;

/** EVALSHA / EVAL with the keys and the arguments as lists (ioredis flattens them into the command). */
interface ListArgs {
  evalsha(sha: string, numKeys: number, keys: readonly string[], args: readonly LuaArg[]): Promise<unknown>;
  eval(script: string, numKeys: number, keys: readonly string[], args: readonly LuaArg[]): Promise<unknown>;
}

export class LuaScript {
  readonly lua: string;
  readonly sha: string;

  constructor(lua: string) {
    this.lua = lua;
    this.sha = createHash('sha1').update(lua).digest('hex');
  }

  run(client: RedisClient, keys: readonly string[], args: readonly LuaArg[]): Promise<unknown> {
    // Keys and arguments as two lists: ioredis flattens a command's arguments once in any case
    // (Command's args.flat()), so a long ARGV (a chat group's admission: hundreds) is not also
    // spread into the call's rest parameters. Not an async function: a chat's groups run two
    // scripts, and a layer of promises each costs.
    const send = client as unknown as ListArgs;
    return send.evalsha(this.sha, keys.length, keys, args).then(undefined, (err: unknown) => {
      if (!(err instanceof Error) || !err.message.startsWith('NOSCRIPT')) throw err;
      return send.eval(this.lua, keys.length, keys, args);
    });
  }
}

/**
 * Lua helpers shared by the scripts.
 *  - num(x): a number as exact decimal text (Lua's tostring keeps only 14 digits). An integer
 *    (amounts, balances, seqs, ms times) goes through '%d', the same text as '%.17g' at under
 *    half its cost: glibc formats a double with 17 digits on its multi-precision path, and the
 *    chat scripts call num some 20 times per chat (docs/performance.md, Redis CPU in the chat
 *    admission and settlement scripts).
 *  - rec_decode / rec_patch / rec_encode: the "field lines" record codec of codec.ts: one line
 *    per top-level field, `name<TAB>json`; a patch line with an empty value deletes the field.
 *    Values stay JSON text, so Lua never re-encodes nested JSON (cjson would turn [] into {}).
 */
export const LUA_LIB = `
local function num(x)
  if x == math.floor(x) and x > -1e15 and x < 1e15 then return string.format('%d', x) end
  return string.format('%.17g', x)
end
local function rec_decode(s)
  local r, order = {}, {}
  for line in string.gmatch(s, '[^\\n]+') do
    local i = string.find(line, '\\t', 1, true)
    local k = string.sub(line, 1, i - 1)
    if r[k] == nil then order[#order + 1] = k end
    r[k] = string.sub(line, i + 1)
  end
  return r, order
end
local function rec_patch(r, order, patch)
  for line in string.gmatch(patch, '[^\\n]+') do
    local i = string.find(line, '\\t', 1, true)
    local k = string.sub(line, 1, i - 1)
    local v = string.sub(line, i + 1)
    if v == '' then
      r[k] = nil
    else
      local seen = false
      for _, o in ipairs(order) do if o == k then seen = true break end end
      if not seen then order[#order + 1] = k end
      r[k] = v
    end
  end
end
local function rec_encode(r, order)
  local out = {}
  for _, k in ipairs(order) do
    if r[k] ~= nil then out[#out + 1] = k .. '\\t' .. r[k] end
  end
  return table.concat(out, '\\n')
end
`;

/** A script with the shebang and the shared helpers in front. */
export const lua = (body: string, opts: { readOnly?: boolean } = {}): LuaScript =>
  new LuaScript(`#!lua${opts.readOnly ? ' flags=no-writes' : ''}\n${LUA_LIB}${body}`);
