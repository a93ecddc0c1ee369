/**
 * Log lines that fit pino, with the real pino: fields beside the message
 * (the event, the URL beside the cache key, the error with its stack), a
 * repeated error written once a second with the count of those left out,
 * and a plain logger still given the message alone.
 */
import { Writable } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';
import test from 'ava';
import { pino } from 'pino';
import { buffer } from '../../src/buffer.ts';
import { repeatWindowMs } from '../../src/base/decision-log.ts';
import { htmlPage, serve } from '../helpers/serve.ts';

/** A pino logger at debug level writing its JSON lines into an array. */
function pinoLines(): { logger: pino.Logger; lines: Array<Record<string, unknown>> } {
  const lines: Array<Record<string, unknown>> = [];
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const line of chunk.toString().split('\n')) if (line !== '') lines.push(JSON.parse(line));
      done();
    },
  });
  return { logger: pino({ level: 'debug' }, sink), lines };
}

/** A store whose get fails while `broken` says so. */
function breakableStore(): { store: object; broken: { now: boolean } } {
  const broken = { now: false };
  const map = new Map<string, unknown>();
  return {
    broken,
    store: {
      get: (key: string) => {
        if (broken.now) throw new Error('disk on fire');
        return map.get(key);
      },
      set: (key: string, value: unknown) => void map.set(key, value),
      delete: (key: string) => map.delete(key),
    },
  };
}

const page = htmlPage(5_000);

test('a pino logger gets the fields first: the event, the URL beside the key, the error whole with its stack', async (t) => {
  const { logger, lines } = pinoLines();
  const { store, broken } = breakableStore();
  const server = await serve(t, [
    buffer({ cache: store, varyBy: [], logger }),
    async (ctx) => {
      if (await ctx.bufferIsCached()) return;
      ctx.type = 'html';
      ctx.body = page;
    },
  ]);
  await server.request('/article?id=7');
  await server.request('/article?id=7');
  await sleep(20);
  const hit = lines.find((line) => line.event === 'log_cache_hit');
  t.truthy(hit, 'the hit is a debug line');
  t.is(hit!.level, 20, 'at pino debug level');
  t.regex(String(hit!.url), /\/article\?id=7$/);
  t.regex(String(hit!.key), /^buffer:[0-9a-f]{32}$/);
  t.regex(String(hit!.msg), /^cache hit \S+\/article\?id=7 \(key buffer:[0-9a-f]{32}\)$/, 'the message names the URL');

  broken.now = true;
  await server.request('/article?id=7');
  const failed = lines.find((line) => line.event === 'log_cache_get_failed');
  t.truthy(failed);
  t.is(failed!.level, 50);
  const err = failed!.err as { message: string; stack: string; type: string };
  t.is(err.message, 'disk on fire');
  t.regex(err.stack, /disk on fire\n\s+at /, 'the stack is kept');
  t.regex(String(failed!.msg), /failed: disk on fire$/);
});

test('an error that repeats is written once a second, the next line counting those left out', async (t) => {
  const { logger, lines } = pinoLines();
  const { store, broken } = breakableStore();
  const mw = buffer({ cache: store, varyBy: [], logger });
  const server = await serve(t, [
    mw,
    async (ctx) => {
      if (await ctx.bufferIsCached()) return;
      ctx.type = 'html';
      ctx.body = page;
    },
  ]);
  broken.now = true;
  await Promise.all(Array.from({ length: 20 }, (_, i) => server.request(`/p${i}`)));
  const failures = (): Array<Record<string, unknown>> => lines.filter((line) => line.event === 'log_cache_get_failed');
  t.is(failures().length, 1, 'one line for twenty failures');
  await sleep(repeatWindowMs + 50);
  await server.request('/again');
  t.is(failures().length, 2);
  t.is(failures()[1]!.repeated, 19, 'the next line counts the nineteen left out');
  t.regex(String(failures()[1]!.msg), /\(19 more like it left out in the last 1 s\)$/);
  t.is(mw.stats().store.custom?.errors, 21, 'every failure is counted');
});

test('a logger without child() gets the message alone, as before', async (t) => {
  const seen: unknown[][] = [];
  const logger = {
    debug: (...args: unknown[]) => void seen.push(args),
    info: (...args: unknown[]) => void seen.push(args),
    warn: (...args: unknown[]) => void seen.push(args),
    error: (...args: unknown[]) => void seen.push(args),
  };
  const server = await serve(t, [
    buffer({ cache: true, logger }),
    async (ctx) => {
      if (await ctx.bufferIsCached()) return;
      ctx.body = 'x';
    },
  ]);
  await server.request('/');
  await server.request('/');
  t.true(seen.length > 0);
  t.true(
    seen.every((args) => args.length === 1 && typeof args[0] === 'string'),
    'every call is one string',
  );
});
