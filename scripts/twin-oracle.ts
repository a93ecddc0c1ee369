/**
 * The TypeScript twins as a long-lived oracle for the libFuzzer targets
 * (test/fuzz/twin_oracle.cc spawns `node --import tsx scripts/twin-oracle.ts`
 * once and talks to it over stdin/stdout), so that a target can check
 * "native = twin" on the inputs it generates without leaving C++.
 *
 * Frames, little-endian, both ways: `u32 length` then `length` bytes.
 * A request's first byte says what to do:
 *  - `S` squash: `u8 level, u8 rewriteLinks, u8 flags (1 host, 2 path, 4 scheme http, 8 scheme https),
 *    u32 hostLength, host, u32 pathLength, path, input…` → the twin's output.
 *    host and path are passed as strings decoded from UTF-8 (the target sends
 *    ASCII, so the twin sees the same bytes the core saw).
 *  - `C` squash whole and cut: as `S`, with `u32 count, count × u32 piece sizes` before the input → `u32 n`,
 *    the n bytes of the twin's squashHtml, then the bytes of the twin's SquashStream fed the input in those
 *    pieces (then the rest) and finished.
 *  - `M` md5: `u32 count, count × u32 split lengths, data…` → 48 bytes: the
 *    twin's one-shot digest, the twin's streaming digest fed in those pieces
 *    (then the rest), and node:crypto's createHash over the whole data.
 *  - `P` ping → empty reply (the target waits for it before fuzzing starts).
 * A failure (an exception from the twin) is answered with length 0xFFFFFFFF
 * and the error text, so the target can abort with a message that says why.
 *
 * Plain synchronous reads and writes on fds 0 and 1: one request at a time,
 * and no event-loop turn between them, which is what keeps the round trip
 * short. Nothing else may write to stdout, so console.log goes to stderr.
 */
import { createHash } from 'node:crypto';
import { readSync, writeSync } from 'node:fs';
import { twins } from '../src/native/twins/index.ts';
import type { SquashOptions } from '../src/native/types.ts';

console.log = console.error;

const FAILURE = 0xffffffff;
let buffer = Buffer.alloc(1 << 20);
let start = 0;
let end = 0;

/** Reads until `n` bytes are buffered from `start`; false at end of input. */
function fill(n: number): boolean {
  if (start + n > buffer.length) {
    const bigger = Buffer.alloc(Math.max(buffer.length * 2, n + 4096));
    buffer.copy(bigger, 0, start, end);
    buffer = bigger;
    end -= start;
    start = 0;
  }
  while (end - start < n) {
    let got: number;
    try {
      got = readSync(0, buffer, end, buffer.length - end, null);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'EAGAIN') continue;
      throw error;
    }
    if (got === 0) return false;
    end += got;
  }
  return true;
}

function writeAll(bytes: Buffer): void {
  let at = 0;
  while (at < bytes.length) {
    try {
      at += writeSync(1, bytes, at, bytes.length - at);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EAGAIN') throw error;
    }
  }
}

/** Answers one request; a failure's text travels as `0xFFFFFFFF, u32 length, text`. */
function reply(body: Buffer, failed = false): void {
  const head = Buffer.alloc(failed ? 8 : 4);
  head.writeUInt32LE(failed ? FAILURE : body.length);
  if (failed) head.writeUInt32LE(body.length, 4);
  writeAll(Buffer.concat([head, body]));
}

/** The options of an `S` or `C` request, and where the rest of it starts. */
function squashRequest(req: Buffer): { options: SquashOptions; at: number } {
  const level = req[1]!;
  const rewriteLinks = req[2] !== 0;
  const flags = req[3]!;
  let at = 4;
  const hostLength = req.readUInt32LE(at);
  const host = req.subarray(at + 4, at + 4 + hostLength).toString('utf8');
  at += 4 + hostLength;
  const pathLength = req.readUInt32LE(at);
  const path = req.subarray(at + 4, at + 4 + pathLength).toString('utf8');
  at += 4 + pathLength;
  const options: SquashOptions = { level, rewriteLinks };
  if (flags & 1) options.host = host;
  if (flags & 2) options.path = path;
  if (flags & 4) options.scheme = 'http';
  if (flags & 8) options.scheme = 'https';
  return { options, at };
}

function squash(req: Buffer): Buffer {
  const { options, at } = squashRequest(req);
  return twins.squashHtml(req.subarray(at), options);
}

function squashCut(req: Buffer): Buffer {
  const { options, at: sizesAt } = squashRequest(req);
  const count = req.readUInt32LE(sizesAt);
  const input = req.subarray(sizesAt + 4 + 4 * count);
  const whole = twins.squashHtml(input, options);
  const stream = new twins.SquashStream(options);
  const pieces: Buffer[] = [];
  let at = 0;
  for (let i = 0; i < count; i++) {
    const n = Math.min(req.readUInt32LE(sizesAt + 4 + 4 * i), input.length - at);
    pieces.push(stream.feed(input.subarray(at, at + n)));
    at += n;
  }
  pieces.push(stream.feed(input.subarray(at)), stream.finish());
  const head = Buffer.alloc(4);
  head.writeUInt32LE(whole.length);
  return Buffer.concat([head, whole, ...pieces]);
}

function md5(req: Buffer): Buffer {
  const count = req.readUInt32LE(1);
  let at = 5 + 4 * count;
  const data = req.subarray(at);
  const stream = new twins.Md5();
  at = 0;
  for (let i = 0; i < count; i++) {
    const n = Math.min(req.readUInt32LE(5 + 4 * i), data.length - at);
    stream.update(data.subarray(at, at + n));
    at += n;
  }
  stream.update(data.subarray(at));
  return Buffer.concat([Buffer.from(twins.md5(data), 'hex'), stream.digest(), createHash('md5').update(data).digest()]);
}

for (;;) {
  if (start === end) start = end = 0;
  if (!fill(4)) break;
  const n = buffer.readUInt32LE(start);
  if (!fill(4 + n)) break;
  const req = buffer.subarray(start + 4, start + 4 + n);
  start += 4 + n;
  try {
    const op = req[0];
    if (op === 0x53) reply(squash(req));
    else if (op === 0x43) reply(squashCut(req));
    else if (op === 0x4d) reply(md5(req));
    else if (op === 0x50) reply(Buffer.alloc(0));
    else throw new Error(`unknown request ${String(op)}`);
  } catch (error) {
    reply(Buffer.from(String((error as Error).stack ?? error)), true);
  }
}
