/**
 * Large dcz bodies are made in a worker thread (dictionaries/dcz.ts,
 * upgrade-thread.ts): byte for byte what the one-call dczEncode makes, they
 * decode with the dictionary to the exact body, and while a 4 MiB page is
 * coded against a 4 MiB dictionary the event loop keeps turning (a
 * setImmediate counter advances; the one-call form lets none run). Over
 * HTTP, a 1 MiB page in a rule's scope goes out as dcz made in the thread.
 */
import test from 'ava';
import { createHash } from 'node:crypto';
import { htmlPage } from '../../support/pages.ts';
import { buffer } from '../../src/buffer.ts';
import { dczEncode, dczEncodeOffLoop, dczThreadMin } from '../../src/encoding/dictionaries/dcz.ts';
import { availableHeader, decodeDcz } from '../helpers/dcz.ts';
import { serve } from '../helpers/serve.ts';
import { loopTurns } from '../helpers/loop-turns.ts';

const MiB = 1024 * 1024;
const sha = (bytes: Buffer): string => createHash('sha256').update(bytes).digest('hex');

/** A dictionary of `size` bytes and its next version, changed in one place. */
function versions(size: number, seed: number): { dictionary: Buffer; body: Buffer } {
  const dictionary = Buffer.from(htmlPage(size, seed));
  const half = dictionary.length >> 1;
  return {
    dictionary,
    body: Buffer.concat([dictionary.subarray(0, half), Buffer.from('<p>changed</p>'), dictionary.subarray(half)]),
  };
}

test.serial('above the threshold dcz is made off the loop, byte for byte as dczEncode makes it', async (t) => {
  const { dictionary, body } = versions(4 * MiB, 5);
  t.true(body.length + dictionary.length > dczThreadMin);
  const hash = sha(dictionary);
  for (const level of [1, 3, 9]) {
    const loop = loopTurns();
    const made = await dczEncodeOffLoop(body, dictionary, hash, level);
    const seen = loop.count();
    loop.stop();
    t.true(seen > 0, `level ${level}: no turn of the event loop while coding`);
    t.true(made.equals(dczEncode(body, dictionary, hash, level)), `level ${level}`);
    t.true(decodeDcz(made, dictionary).equals(body));
  }
  // Unrelated bytes too (a page against another page's dictionary), and two at once.
  const other = versions(2 * MiB, 8);
  const [a, b] = await Promise.all([
    dczEncodeOffLoop(other.body, dictionary, hash, 3),
    dczEncodeOffLoop(body, other.dictionary, sha(other.dictionary), 3),
  ]);
  t.true(a.equals(dczEncode(other.body, dictionary, hash, 3)));
  t.true(b.equals(dczEncode(body, other.dictionary, sha(other.dictionary), 3)));
});

test.serial('below the threshold dcz is made in the same turn', async (t) => {
  const { dictionary, body } = versions(64 * 1024, 6);
  const hash = sha(dictionary);
  const loop = loopTurns();
  const made = await dczEncodeOffLoop(body, dictionary, hash, 3);
  t.is(loop.count(), 0);
  loop.stop();
  t.true(made.equals(dczEncode(body, dictionary, hash, 3)));
});

test('over HTTP: a 1 MiB page against its 1 MiB previous version goes out as dcz that decodes to it', async (t) => {
  const { dictionary, body } = versions(MiB - 4096, 7);
  const state = { body: dictionary };
  const server = await serve(t, [
    buffer({ dictionaries: [{ match: '/page' }], lastModified: false }),
    (ctx) => {
      ctx.type = 'html';
      ctx.body = state.body;
    },
  ]);
  const first = await server.request('/page', { headers: { 'accept-encoding': 'identity' } });
  t.truthy(first.headers['use-as-dictionary']);
  const held = first.body; // the dictionary as the client holds it (squashed)
  state.body = body;
  const second = await server.request('/page', {
    headers: { 'accept-encoding': 'dcz, gzip', 'available-dictionary': availableHeader(held) },
  });
  t.is(second.headers['content-encoding'], 'dcz');
  const identity = await server.request('/page', { headers: { 'accept-encoding': 'identity' } });
  t.true(decodeDcz(second.body, held).equals(identity.body));
  t.true(second.body.length < 2000, `${second.body.length} bytes for a change in one place`);
});
