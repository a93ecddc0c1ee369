/**
 * A 100 MiB response body (issue 7): koa-buffer buffers what the action
 * hands it, so a huge page goes through squash, digest and compression in
 * a server process whose RSS the test samples. It must arrive whole, in
 * every coding asked for, without taking the process down or stalling the
 * other requests for the whole time; the cache does not keep it (larger
 * than cacheMaxSize).
 */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import http from 'node:http';
import zlib from 'node:zlib';
import test from 'ava';
import { squashHtml } from '../../src/native/exports.ts';
import { logOnFailure } from '../helpers/log-on-failure.ts';
import { fixture, spawnChild } from '../helpers/children.ts';
import { hugeBody } from '../fixtures/fault-pages.ts';
import { rawRequest } from '../helpers/serve.ts';

const mib = 100;

function rss(pid: number): number {
  const match = /^VmRSS:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return match ? Number(match[1]) * 1024 : 0;
}

/** Streams a response through its decoder into an MD5, without holding it. */
function digestOf(
  port: number,
  path: string,
  coding: string,
): Promise<{ status: number; encoding?: string; length: number; md5: string; cacheStatus?: string }> {
  return new Promise((resolve, reject) => {
    http
      .get({ host: '127.0.0.1', port, path, headers: { 'accept-encoding': coding }, agent: false }, (res) => {
        const encoding = res.headers['content-encoding'];
        const decoder =
          encoding === 'br' ? zlib.createBrotliDecompress() : encoding === 'gzip' ? zlib.createGunzip() : undefined;
        const hash = createHash('md5');
        let length = 0;
        const source = decoder ? res.pipe(decoder) : res;
        source.on('data', (chunk: Buffer) => {
          length += chunk.length;
          hash.update(chunk);
        });
        source.on('error', reject);
        source.on('end', () =>
          resolve({
            status: res.statusCode!,
            encoding,
            length,
            md5: hash.digest('hex'),
            cacheStatus: res.headers['cache-status'] as string | undefined,
          }),
        );
      })
      .on('error', reject);
  });
}

test(`a ${mib} MiB page passes whole, identity and br, squashed as any page, while the process stays up and keeps answering`, async (t) => {
  t.timeout(90_000);
  const child = spawnChild(t, fixture('fault-server.ts'), [JSON.stringify({ cache: 'memory' })]);
  const { port, pid } = await child.waitForJson<{ port: number; pid: number }>(
    (m) => typeof m.port === 'number',
    'the port',
  );
  const expected = squashHtml(hugeBody(mib), { level: 1 });
  const expectedMd5 = createHash('md5').update(expected).digest('hex');

  const idle = rss(pid);
  let peak = idle;
  const sampler = setInterval(() => (peak = Math.max(peak, rss(pid))), 20);
  t.teardown(() => clearInterval(sampler));

  for (const coding of ['identity', 'br']) {
    const started = performance.now();
    const pending = digestOf(port, `/huge?mib=${mib}`, coding);
    // Another client asks for a small page meanwhile: it is answered, the big one is not everything the process does.
    const small = await rawRequest(port, '/page/meanwhile?delay=0');
    const smallMs = performance.now() - started;
    const got = await pending;
    const ms = performance.now() - started;
    logOnFailure(
      t,
      `${coding}: ${(got.length / 2 ** 20).toFixed(1)} MiB decoded in ${Math.round(ms)} ms; a small page meanwhile after ${Math.round(smallMs)} ms`,
    );
    t.is(got.status, 200);
    t.is(got.encoding, coding === 'identity' ? undefined : coding);
    t.is(got.length, expected.length, 'every byte arrived');
    t.is(got.md5, expectedMd5, 'the squashed page, byte for byte');
    t.is(small.status, 200, 'the small page was answered');
  }
  clearInterval(sampler);
  logOnFailure(
    t,
    `RSS: ${Math.round(idle / 2 ** 20)} MiB idle, peak ${Math.round(peak / 2 ** 20)} MiB, after ${Math.round(rss(pid) / 2 ** 20)} MiB`,
  );
  // The body, its squashed entity and one compressed copy, plus what the allocator keeps: far from a runaway.
  t.true(
    peak < idle + 6 * mib * 2 ** 20,
    `peak RSS ${Math.round(peak / 2 ** 20)} MiB stays within six times the body over idle`,
  );
  t.true(child.running, 'the process is up');
  const after = await rawRequest(port, '/page/after?delay=0');
  t.is(after.status, 200, 'and answers the next request');
});

test('a 20 MiB cached page is served to everyone but not stored: it is over cacheMaxSize', async (t) => {
  const child = spawnChild(t, fixture('fault-server.ts'), [JSON.stringify({ cache: 'memory' })]);
  const { port } = await child.waitForJson<{ port: number }>((m) => typeof m.port === 'number', 'the port');
  const got = await digestOf(port, '/huge?mib=20&cached=1', 'gzip');
  t.is(got.status, 200);
  t.is(
    got.md5,
    createHash('md5')
      .update(squashHtml(hugeBody(20), { level: 1 }))
      .digest('hex'),
  );
  t.is(got.cacheStatus, 'koa-buffer; fwd=uri-miss; detail=TOO-LARGE');
});
