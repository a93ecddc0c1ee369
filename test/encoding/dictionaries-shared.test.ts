/**
 * Dictionaries shared through the cache store: offered by one middleware
 * (a host), used by another that never saw the page, over a real Redis;
 * and a store that holds a wrong value, or fails, costs only the normal
 * coding.
 */
import test from 'ava';
import type Koa from 'koa';
import { buffer, type BufferMiddleware } from '../../src/buffer.ts';
import type { BufferOptions } from '../../src/config/options.ts';
import { sharedDictionaryKey } from '../../src/encoding/dictionaries/keeper.ts';
import { resolveDictionaries } from '../../src/config/dictionaries.ts';
import { availableHeader, decodeDcz, sha256 } from '../helpers/dcz.ts';
import { redisTest, useRedis } from '../helpers/redis.ts';
import { readyStore } from '../helpers/store-ready.ts';
import { decode, recordingLogger, serve } from '../helpers/serve.ts';

const page = (stamp: string): string =>
  `<!doctype html><title>t</title><p>${stamp}</p>${'<p>the same news paragraph on every version</p>'.repeat(400)}`;
const dcz = 'br, zstd, dcz';
/** The tag binding a dictionary to the `/news` rule in the store. */
const newsTag = resolveDictionaries([{ match: '/news' }])[0]!.tag;

function host(
  options: BufferOptions,
  stamp: () => string,
): { middleware: Koa.Middleware[]; buffered: BufferMiddleware } {
  const buffered = buffer({ dictionaries: [{ match: '/news', ttl: '1 hour' }], varyBy: [], ...options });
  return {
    buffered,
    middleware: [
      buffered,
      (ctx) => {
        ctx.type = 'html';
        ctx.body = page(stamp());
      },
    ],
  };
}

redisTest('a dictionary offered by one host is used by another through Redis', async (t) => {
  const redis = await useRedis(t);
  // Each host's store is connected before its first request, or nothing would reach Redis to be shared.
  const one = host({ cache: await readyStore(t, redis.url) }, () => 'one');
  const two = host({ cache: await readyStore(t, redis.url) }, () => 'two');
  t.teardown(async () => {
    await one.buffered.close();
    await two.buffered.close();
  });
  const first = await serve(t, one.middleware);
  const second = await serve(t, two.middleware);
  const dictionary = decode(await first.request('/news', { headers: { 'accept-encoding': dcz } }));
  let response = await second.request('/news', {
    headers: { 'accept-encoding': dcz, 'available-dictionary': availableHeader(dictionary) },
  });
  // The write is made off the first host's request path: give it a moment if it has not landed.
  for (let i = 0; i < 20 && response.headers['content-encoding'] !== 'dcz'; i++) {
    await new Promise((resolve) => setTimeout(resolve, 50));
    response = await second.request('/news', {
      headers: { 'accept-encoding': dcz, 'available-dictionary': availableHeader(dictionary) },
    });
  }
  t.is(response.headers['content-encoding'], 'dcz');
  t.is(decodeDcz(response.body, dictionary).toString(), page('two'));
});

test('a store value that is not the dictionary it is filed under is refused: the normal coding', async (t) => {
  const wanted = Buffer.from(page('one'));
  const store = new Map<string, unknown>([
    [sharedDictionaryKey(newsTag, sha256(wanted).toString('hex')), Buffer.from(page('forged'))],
  ]);
  const server = await serve(t, host({ cache: store }, () => 'two').middleware);
  const response = await server.request('/news', {
    headers: { 'accept-encoding': dcz, 'available-dictionary': availableHeader(wanted) },
  });
  t.is(response.status, 200);
  t.is(response.headers['content-encoding'], 'zstd');
  t.is(decode(response).toString(), page('two'));
});

test('a store that fails on get and set costs a log line and the normal coding, never the response', async (t) => {
  const logger = recordingLogger();
  const broken = {
    get: () => Promise.reject(new Error('store down')),
    set: () => Promise.reject(new Error('store down')),
    delete: () => Promise.reject(new Error('store down')),
  };
  const server = await serve(t, host({ cache: broken, logger }, () => 'one').middleware);
  const offered = await server.request('/news', { headers: { 'accept-encoding': dcz } });
  t.is(offered.status, 200);
  t.is(offered.headers['use-as-dictionary'], 'match="/news", ttl=3600');
  const unknown = Buffer.from('a dictionary this host never offered');
  const response = await server.request('/news', {
    headers: { 'accept-encoding': dcz, 'available-dictionary': availableHeader(unknown) },
  });
  t.is(response.status, 200);
  t.is(response.headers['content-encoding'], 'zstd');
  t.true(
    logger.lines.some((line) => line.level === 'error' && line.message.includes('buffer:dictionary:')),
    JSON.stringify(logger.lines),
  );
});
