/**
 * A damaged store entry is a miss that is removed and rebuilt, and a replay
 * is all or nothing. Entries are planted straight into real stores (the
 * memory store, a SQLite file written through a second handle, a real
 * Redis written through a second client), then 20 visitors arrive at once:
 * nothing of the planted entry reaches any of them, the page is built once
 * and stored again, and the damage is logged once.
 */
import { Buffer } from 'node:buffer';
import http from 'node:http';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import test, { type ExecutionContext } from 'ava';
import Koa from 'koa';
import { encodeEntry, readEntry } from '../../src/cache/entry.ts';
import { replayEntry } from '../../src/cache/hit/replay.ts';
import { MemoryStore } from '../../src/cache/stores/memory.ts';
import { SqliteStore } from '../../src/cache/stores/sqlite.ts';
import type { CacheStore } from '../../src/base/store.ts';
import { buffer } from '../../src/buffer.ts';
import { logOnFailure } from '../helpers/log-on-failure.ts';
import { redisSkipReason, useRedis } from '../helpers/redis.ts';
import { recordingLogger, serve } from '../helpers/serve.ts';
import { readyStore } from '../helpers/store-ready.ts';

const key = 'buffer:damaged-entry-test';
const realPage = '<!doctype html><p>the real page</p>';
const plantedPage = '<!doctype html><p>PLANTED</p>';

/** An encoded entry with `headersJson` as its header bytes, laid out as entry.ts documents (version 2). */
function rawEntry(headersJson: string, body = Buffer.from(plantedPage)): Buffer {
  const json = Buffer.from(headersJson, 'utf8');
  const out = Buffer.alloc(48 + json.length + body.length);
  out.writeUInt32LE(0x4543424b, 0);
  out.writeUInt8(2, 4);
  out.writeUInt8(0, 5);
  out.writeUInt16LE(200, 6);
  out.writeDoubleLE(Date.now(), 8);
  out.writeDoubleLE(Date.now() + 3_600_000, 16);
  out.writeUInt32LE(json.length, 24);
  out.writeUInt32LE(body.length, 28);
  json.copy(out, 48);
  body.copy(out, 48 + json.length);
  return out;
}

/** A sound entry except for `headers`, encoded by the codec itself (which round-trips any strings). */
function entryWith(headers: Record<string, string | string[]>): Buffer {
  const now = Date.now();
  return encodeEntry({ status: 200, headers, body: Buffer.from(plantedPage), created: now, expires: now + 3_600_000 });
}

const planted = { 'content-type': 'text/html; charset=utf-8', 'x-planted': 'yes' };

/** Each kind of damage, as the bytes planted in the store. */
const damages: Record<string, () => Buffer> = {
  'a header name Node refuses': () => entryWith({ ...planted, 'bad name': 'v' }),
  'a header value Node refuses': () => entryWith({ ...planted, 'x-split': 'a\r\nset-cookie: planted=1' }),
  'a Set-Cookie': () => entryWith({ ...planted, 'set-cookie': ['planted=1; Path=/'] }),
  'a Content-Encoding the body does not have': () => entryWith({ ...planted, 'content-encoding': 'br' }),
  'a header of the wrong type': () => rawEntry(JSON.stringify({ ...planted, 'x-count': 42 })),
  'a truncated body': () => {
    const whole = entryWith(planted);
    return whole.subarray(0, whole.length - 5);
  },
  'bad framing (header length past the end)': () => {
    const value = Buffer.from(entryWith(planted));
    value.writeUInt32LE(value.readUInt32LE(24) + 100, 24);
    return value;
  },
};

interface Stores {
  /** The store the middleware uses. */
  used: CacheStore;
  /** Another handle on the same data, the way another process would write it (the memory store has only one). */
  planter: CacheStore;
}

const storeKinds: Record<string, { skip?: string; open(t: ExecutionContext): Promise<Stores> }> = {
  memory: {
    async open() {
      const store = new MemoryStore();
      return { used: store, planter: store };
    },
  },
  SQLite: {
    async open(t) {
      const dir = mkdtempSync(join(tmpdir(), 'kb-damaged-'));
      const used = new SqliteStore({ path: join(dir, 'cache.sqlite') });
      const planter = new SqliteStore({ path: join(dir, 'cache.sqlite') });
      t.teardown(() => {
        used.close();
        planter.close();
        rmSync(dir, { recursive: true, force: true });
      });
      return { used, planter };
    },
  },
  Redis: {
    skip: redisSkipReason,
    async open(t) {
      const redis = await useRedis(t);
      // Connected first: a store still connecting fails its calls, and the visitors would each build alone.
      const used = await readyStore(t, redis.url, { namespace: redis.namespace });
      const planter = await readyStore(t, redis.url, { namespace: redis.namespace });
      return { used, planter };
    },
  },
};

for (const [storeName, kind] of Object.entries(storeKinds)) {
  for (const [damage, bytes] of Object.entries(damages)) {
    const title = `${storeName} store, an entry with ${damage}: 20 visitors get the real page, built once, stored again`;
    if (kind.skip !== undefined) {
      test.skip(`${title} (skipped: ${kind.skip})`, () => undefined);
      continue;
    }
    test(title, async (t) => {
      const { used, planter } = await kind.open(t);
      await planter.set(key, bytes(), 3_600_000);
      const log = recordingLogger();
      logOnFailure(t, () => log.lines.map((l) => `${l.level} ${l.message}`).join('\n'));
      let builds = 0;
      const server = await serve(t, [
        buffer({ cache: used, cacheKey: key, logger: log }),
        async (ctx) => {
          if (await ctx.bufferIsCached()) return;
          builds += 1;
          await sleep(50); // long enough for the other visitors to arrive and wait
          ctx.type = 'html';
          ctx.body = realPage;
        },
      ]);

      const answers = await Promise.all(Array.from({ length: 20 }, () => server.request('/page')));
      for (const answer of answers) {
        t.is(answer.status, 200);
        t.is(answer.body.toString(), realPage, 'the real page, never the planted one');
        t.is(answer.headers['x-planted'], undefined, 'no header of the planted entry');
        t.is(answer.headers['set-cookie'], undefined, 'no planted cookie');
        t.is(answer.headers['content-encoding'], undefined, 'no planted coding');
      }
      t.is(builds, 1, 'the key was built once: the visitors collapsed onto one build');
      t.is(log.count(/is damaged/), 1, 'the damage is logged once');

      const again = await server.request('/page');
      t.is(again.headers['x-cache'], 'HIT', 'the key is cached again');
      t.is(again.body.toString(), realPage);
      const stored = readEntry(await planter.get(key));
      t.true('entry' in stored && stored.entry.body.toString() === realPage, 'the store holds the rebuilt entry');
      t.is(builds, 1);
    });
  }
}

test('a replay is all or nothing: an entry that cannot be replayed leaves the response untouched', (t) => {
  const app = new Koa();
  const request = new http.IncomingMessage(null as never);
  const ctx = app.createContext(request, new http.ServerResponse(request));
  const visit = { replayed: false };
  const status = ctx.status;
  const now = Date.now();
  const entry = {
    status: 200,
    headers: { 'x-first': 'set before the bad one', 'set-cookie': 'planted=1', 'bad name': 'v' },
    body: Buffer.from(plantedPage),
    created: now,
    expires: now + 60_000,
  };
  t.throws(() => replayEntry(ctx, visit, entry), { instanceOf: TypeError, message: /set-cookie/ });
  t.deepEqual(ctx.res.getHeaderNames(), [], 'no header was set');
  t.is(ctx.status, status, 'the status is as it was');
  t.is(ctx.body, undefined, 'no body');
  t.false(visit.replayed, 'the request is not marked replayed, so its own build is stored');
});

test('readEntry: absent and newer-format values are not damage; everything a response cannot carry is', (t) => {
  t.deepEqual(readEntry(undefined), { absent: true });
  t.deepEqual(readEntry(null), { absent: true });
  const newer = Buffer.from(entryWith({}));
  newer.writeUInt8(3, 4);
  t.deepEqual(readEntry(newer), { absent: true }, 'a newer release sharing the store may still use it');
  t.true('entry' in readEntry(entryWith({ 'content-type': 'text/html', link: ['<a>', '<b>'] })));
  for (const [damage, bytes] of Object.entries(damages)) t.true('damaged' in readEntry(bytes()), damage);
  const unreplayable: Array<Record<string, string | string[]>> = [
    { 'X-Upper': 'v' },
    { 'content-length': '5' },
    { 'transfer-encoding': 'chunked' },
    { 'x-nul': 'a\u0000b' },
    { ':status': '200' },
    { 'x-list': ['ok', 'bad\n'] },
  ];
  for (const headers of unreplayable) t.true('damaged' in readEntry(entryWith(headers)), JSON.stringify(headers));
  t.true('damaged' in readEntry('some other application wrote this'));
  t.true('damaged' in readEntry({ an: 'object' }));
});
