/**
 * `/download`: a file sent as a stream. koa-buffer never reads a stream body
 * into memory: it compresses it as it is read (chunked), gives it the weak
 * ETag koa-etag gives a file (from its size and mtime) and answers a
 * matching If-None-Match with 304.
 */
import { createReadStream, existsSync, writeFileSync } from 'node:fs';
import { basename } from 'node:path';
import type { Context, Middleware } from 'koa';

/**
 * Writes the file to download (about 120 KiB of CSV) unless it is there.
 *
 * @param file - where it goes
 */
export function prepareDownload(file: string): void {
  if (existsSync(file)) return;
  const lines = ['id,sku,name,price'];
  for (let i = 1; i <= 3000; i++)
    lines.push(`${i},SKU-${String(i * 7919).padStart(8, '0')},Item number ${i},${(i % 97) + 0.99}`);
  writeFileSync(file, `${lines.join('\n')}\n`);
}

/**
 * The /download action.
 *
 * @param file - the file to stream
 */
export function downloadPage(file: string): Middleware {
  return (ctx: Context) => {
    ctx.attachment(basename(file)); // also sets Content-Type: text/csv from the name
    ctx.body = createReadStream(file);
  };
}
