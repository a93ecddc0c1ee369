/**
 * Clients that stop reading and go away in the middle of a big body
 * (issue 7), against a server process whose descriptors, connections and
 * RSS the test reads: the server keeps serving everyone else meanwhile,
 * and after each wave of aborted downloads nothing is left behind.
 */
import { connect, type Socket } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import zlib from 'node:zlib';
import test from 'ava';
import { logOnFailure } from '../helpers/log-on-failure.ts';
import { fixture, spawnChild } from '../helpers/children.ts';
import { rawRequest } from '../helpers/serve.ts';

interface Stats {
  rss: number;
  fds: number;
  connections: number;
}

/**
 * Asks for `path`, reads until `bytes` body-and-header bytes have arrived,
 * then stops reading (the server's writes back up in the socket buffers).
 */
function slowReader(port: number, path: string, headers: string, bytes: number): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1', () => {
      socket.write(`GET ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\n${headers}\r\n`);
    });
    let seen = 0;
    socket.on('error', reject);
    socket.on('data', (chunk: Buffer) => {
      seen += chunk.length;
      if (seen >= bytes) {
        socket.pause();
        socket.removeAllListeners('data');
        resolve(socket);
      }
    });
  });
}

test('twenty clients reading a few KiB of an 8 MiB page, stalling, then destroying their sockets: the server keeps serving meanwhile and nothing leaks', async (t) => {
  // --expose-gc: /stats collects first, so each RSS reading is what the process still holds,
  // not how recently its collector happened to run (without it, RSS swung 213–498 MiB between waves).
  const child = spawnChild(t, fixture('fault-server.ts'), [JSON.stringify({ cache: 'memory' })], {
    nodeArgs: ['--expose-gc'],
  });
  const { port } = await child.waitForJson<{ port: number }>((m) => typeof m.port === 'number', 'the port');
  const stats = async (): Promise<Stats> => JSON.parse((await rawRequest(port, '/stats')).body.toString()) as Stats;
  /** Waits for the connections of aborted clients to be closed on the server's side too. */
  const settled = async (): Promise<Stats> => {
    const deadline = Date.now() + 3000;
    for (;;) {
      const now = await stats();
      // The /stats request itself is the one connection left.
      if (now.connections <= 1 || Date.now() > deadline) return now;
      await sleep(50);
    }
  };

  const full = await rawRequest(port, '/huge?mib=8', { headers: { 'accept-encoding': 'identity' } });
  t.is(full.status, 200);
  t.true(full.body.length > 4 * 1024 * 1024, `a whole download works (${full.body.length} bytes)`);
  const baseline = await settled();

  const waves = 4;
  const after: Stats[] = [];
  for (let wave = 0; wave < waves; wave++) {
    // Half take the page identity, half gzip (compressed in the threadpool): both sent into a stalled socket.
    const sockets = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        slowReader(port, '/huge?mib=8', `Accept-Encoding: ${i % 2 ? 'gzip' : 'identity'}\r\n`, 16 * 1024),
      ),
    );
    // While they stall, others are served promptly.
    const started = performance.now();
    const page = await rawRequest(port, '/page/during?delay=0', { headers: { 'accept-encoding': 'gzip' } });
    const took = performance.now() - started;
    t.is(page.status, 200);
    t.regex(zlib.gunzipSync(page.body).toString(), /\/page\/during built by run/);
    t.true(took < 2000, `a page was served in ${Math.round(took)} ms while twenty downloads stalled`);
    await sleep(100);
    for (const socket of sockets) socket.destroy();
    after.push(await settled());
  }
  logOnFailure(
    t,
    `baseline: ${JSON.stringify(baseline)}; after each wave: ${after.map((s) => JSON.stringify(s)).join(' ')}`,
  );
  const last = after.at(-1)!;
  t.true(child.running, 'the server lives');
  t.is(last.connections, 1, 'every aborted connection is closed on the server side');
  // Once the page is hot, the upgrade thread (adaptive compression) holds a few descriptors of its own,
  // once: a leak grows with every wave of twenty sockets, so the last wave ends where the second did.
  const steady = after[1]!.fds;
  t.true(steady <= baseline.fds + 6, `descriptors: ${baseline.fds} before, ${steady} after the second wave`);
  t.true(last.fds <= steady, `descriptors: ${steady} after the second wave, ${last.fds} after ${waves} waves`);
  // Memory goes back to the allocator rather than piling up per wave. A leak raises every reading after
  // it; one reading may still hold a wave's buffers the allocator has not handed back yet (seen once in
  // .ci/run: 196 MiB, then 347 MiB), so the lower of the last two readings is the one held to the first.
  const lastTwo = Math.min(after.at(-2)!.rss, last.rss);
  t.true(
    lastTwo - after[0]!.rss < 96 * 1024 * 1024,
    `RSS ${Math.round(after[0]!.rss / 2 ** 20)} MiB after the first wave, ${after.map((s) => Math.round(s.rss / 2 ** 20)).join(', ')} MiB after each`,
  );
  const next = await rawRequest(port, '/huge?mib=8', { headers: { 'accept-encoding': 'identity' } });
  t.true(next.body.equals(full.body), 'a whole download afterwards gets the whole page');
});
