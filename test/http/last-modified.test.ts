/**
 * Last-Modified in every form of the lastModified option, the recursive scan
 * of the app script and templatePaths, and templateMtimeCache with its
 * duration, over real HTTP and on real files with set mtimes.
 */
import { mkdirSync, mkdtempSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import test from 'ava';
import { buffer } from '../../src/buffer.ts';
import { setTimeout as sleep } from 'node:timers/promises';
import { mtimeTrustMs, newestMtime, recentNewestMtimeMs } from '../../src/http/last-modified.ts';
import { builtinMessages } from '../../src/base/messages.ts';
import { recordingLogger, serve } from '../helpers/serve.ts';
import type { BufferOptions } from '../../src/config/options.ts';

const page = '<!doctype html><p>last modified</p>';
const epoch = 1_600_000_000;
const httpDate = (seconds: number): string => new Date(seconds * 1000).toUTCString();

async function lastModifiedOf(t: Parameters<typeof serve>[0], options: BufferOptions): Promise<string | undefined> {
  const server = await serve(t, [
    buffer(options),
    (ctx) => {
      ctx.body = page;
    },
  ]);
  return (await server.request('/')).headers['last-modified'];
}

function templateTree(t: Parameters<typeof serve>[0]): string {
  const dir = mkdtempSync(join(tmpdir(), 'kb-templates-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  mkdirSync(join(dir, 'layouts', 'partials'), { recursive: true });
  for (const [file, seconds] of [
    ['index.html', epoch],
    ['layouts/main.html', epoch + 100],
    ['layouts/partials/nav.html', epoch + 500],
  ] as const) {
    writeFileSync(join(dir, file), '<p>x</p>');
    utimesSync(join(dir, file), seconds, seconds);
  }
  for (const sub of ['layouts/partials', 'layouts', '.']) utimesSync(join(dir, sub), epoch, epoch);
  return dir;
}

test('lastModified false, 0 and undefined give no Last-Modified', async (t) => {
  for (const value of [false, 0, undefined])
    t.is(await lastModifiedOf(t, { lastModified: value }), undefined, `${value}`);
});

test('an epoch, a date string and a Date give that time', async (t) => {
  t.is(await lastModifiedOf(t, { lastModified: epoch }), httpDate(epoch));
  t.is(await lastModifiedOf(t, { lastModified: epoch + 0.9 }), httpDate(epoch), 'whole seconds');
  t.is(await lastModifiedOf(t, { lastModified: 'Sun, 06 Nov 1994 08:49:37 GMT' }), 'Sun, 06 Nov 1994 08:49:37 GMT');
  t.is(await lastModifiedOf(t, { lastModified: '2024-02-29T12:00:00Z' }), 'Thu, 29 Feb 2024 12:00:00 GMT');
  t.is(await lastModifiedOf(t, { lastModified: new Date(epoch * 1000) }), httpDate(epoch));
});

test('a function is called with the context and may return any form, or a Promise of one', async (t) => {
  const seen: string[] = [];
  t.is(
    await lastModifiedOf(t, {
      lastModified: (ctx) => {
        seen.push(ctx.path);
        return epoch;
      },
    }),
    httpDate(epoch),
  );
  t.deepEqual(seen, ['/'], 'called with the context');
  t.is(
    await lastModifiedOf(t, { lastModified: async () => 'Sun, 06 Nov 1994 08:49:37 GMT' }),
    'Sun, 06 Nov 1994 08:49:37 GMT',
  );
  t.is(await lastModifiedOf(t, { lastModified: () => false }), undefined);
  t.is(
    await lastModifiedOf(t, { lastModified: (() => () => epoch) as never }),
    undefined,
    'a function returning a function counts as none',
  );
  t.is(
    await lastModifiedOf(t, {
      lastModified: () => {
        throw new Error('no date');
      },
    }),
    undefined,
    'a function that throws counts as none',
  );
  t.is(await lastModifiedOf(t, { lastModified: () => 'garbage' }), undefined, 'an unparsable result counts as none');
});

test('true scans templatePaths recursively and takes the newest mtime', async (t) => {
  const dir = templateTree(t);
  t.is(
    await newestMtime(
      {
        templatePaths: [dir],
        templateMtimeCache: undefined,
        templateMtimeCacheDuration: 10,
        logger: recordingLogger(),
        messages: builtinMessages,
      },
      null,
    ),
    epoch + 500,
    'the nested partial is the newest',
  );
  t.is(
    await newestMtime(
      {
        templatePaths: [join(dir, 'index.html'), join(dir, 'layouts', 'main.html')],
        templateMtimeCache: undefined,
        templateMtimeCacheDuration: 10,
        logger: recordingLogger(),
        messages: builtinMessages,
      },
      null,
    ),
    epoch + 100,
    'files named one by one',
  );
  // Over HTTP the app script (process.argv[1]) counts too: it is newer than this tree, so give the tree a future date.
  const future = Math.floor(Date.now() / 1000) + 86_400;
  utimesSync(join(dir, 'layouts', 'partials', 'nav.html'), future, future);
  t.is(await lastModifiedOf(t, { templatePaths: [dir] }), httpDate(future));
  t.is(await lastModifiedOf(t, { lastModified: 1, templatePaths: [dir] }), httpDate(future), '1 is the same as true');
});

test('the app script counts beside the templates', async (t) => {
  const dir = templateTree(t);
  const scriptDir = mkdtempSync(join(tmpdir(), 'kb-app-'));
  t.teardown(() => rmSync(scriptDir, { recursive: true, force: true }));
  const script = join(scriptDir, 'app.js');
  writeFileSync(script, '');
  utimesSync(script, epoch + 900, epoch + 900);
  t.is(
    await newestMtime(
      {
        templatePaths: [dir],
        templateMtimeCache: undefined,
        templateMtimeCacheDuration: 10,
        logger: recordingLogger(),
        messages: builtinMessages,
      },
      script,
    ),
    epoch + 900,
  );
});

test('a missing template path is logged and skipped', async (t) => {
  const logger = recordingLogger();
  const dir = templateTree(t);
  t.is(
    await newestMtime(
      {
        templatePaths: [join(dir, 'gone'), dir],
        templateMtimeCache: undefined,
        templateMtimeCacheDuration: 10,
        logger,
        messages: builtinMessages,
      },
      null,
    ),
    epoch + 500,
  );
  t.is(logger.count(/scanning .*gone for modification times failed/), 1);
});

test('templateMtimeCache remembers the scan for templateMtimeCacheDuration, passed as milliseconds', async (t) => {
  const dir = templateTree(t);
  const future = Math.floor(Date.now() / 1000) + 86_400;
  utimesSync(join(dir, 'index.html'), future, future);
  const store = new Map<string, unknown>();
  const calls: string[] = [];
  const cache = {
    get: async (key: string) => {
      calls.push('get');
      return store.get(key);
    },
    set: async (key: string, value: number, ttl?: number) => {
      calls.push(`set ${ttl}`);
      store.set(key, value);
    },
  };
  const server = await serve(t, [
    buffer({ templatePaths: [dir], templateMtimeCache: cache, templateMtimeCacheDuration: '2 minutes' }),
    (ctx) => {
      ctx.body = page;
    },
  ]);
  t.is((await server.request('/')).headers['last-modified'], httpDate(future));
  t.deepEqual(calls, ['get', 'set 120000']);
  // A template edited now is not seen until the cached value expires: the documented trade.
  utimesSync(join(dir, 'index.html'), future + 3600, future + 3600);
  t.is(
    (await server.request('/')).headers['last-modified'],
    httpDate(future),
    'within mtimeTrustMs the last answer is used',
  );
  t.deepEqual(calls, ['get', 'set 120000'], 'not even the templateMtimeCache is asked');
  await sleep(mtimeTrustMs + 50);
  t.is((await server.request('/')).headers['last-modified'], httpDate(future), 'the cached scan is used');
  t.deepEqual(calls, ['get', 'set 120000', 'get']);
  store.clear();
  await sleep(mtimeTrustMs + 50);
  t.is(
    (await server.request('/')).headers['last-modified'],
    httpDate(future + 3600),
    'after expiry the scan runs again',
  );
});

test('a failing templateMtimeCache is logged at debug level and the scan runs', async (t) => {
  const dir = templateTree(t);
  const logger = recordingLogger();
  const cache = {
    get: () => {
      throw new Error('cache down');
    },
    set: () => Promise.reject(new Error('still down')),
  };
  const seconds = await newestMtime(
    {
      templatePaths: [dir],
      templateMtimeCache: cache,
      templateMtimeCacheDuration: 10,
      logger,
      messages: builtinMessages,
    },
    null,
  );
  t.is(seconds, epoch + 500);
  t.is(
    logger.lines.filter((l) => l.level === 'debug' && /templateMtimeCache get failed: cache down/.test(l.message))
      .length,
    1,
  );
  t.is(logger.count(/templateMtimeCache set failed: still down/), 1);
});

test('Last-Modified is only added to 200 responses to GET and HEAD', async (t) => {
  const server = await serve(t, [
    buffer({ lastModified: epoch }),
    (ctx) => {
      if (ctx.path === '/404') ctx.status = 404;
      ctx.body = page;
    },
  ]);
  t.is((await server.request('/')).headers['last-modified'], httpDate(epoch));
  t.is((await server.request('/', { method: 'HEAD' })).headers['last-modified'], httpDate(epoch));
  t.is((await server.request('/404')).headers['last-modified'], undefined);
  t.is((await server.request('/', { method: 'POST' })).headers['last-modified'], undefined);
});

test('the newest mtime is trusted for mtimeTrustMs, and scanned again at once when the clock goes back', async (t) => {
  const dir = templateTree(t);
  const sources = {
    templatePaths: [dir],
    templateMtimeCache: undefined,
    templateMtimeCacheDuration: 10,
    logger: recordingLogger(),
    messages: builtinMessages,
  };
  const start = Date.now() + 1e9;
  t.is(await recentNewestMtimeMs(sources, null, start), (epoch + 500) * 1000);
  utimesSync(join(dir, 'index.html'), epoch + 900, epoch + 900);
  t.is(
    recentNewestMtimeMs(sources, null, start + mtimeTrustMs - 1),
    (epoch + 500) * 1000,
    'trusted, and answered without a Promise',
  );
  t.is(
    await recentNewestMtimeMs(sources, null, start - 60_000),
    (epoch + 900) * 1000,
    'a clock set back a minute scans again',
  );
});
