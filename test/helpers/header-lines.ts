/**
 * A request written byte for byte on a fresh socket, for header lines Node's
 * own client would rewrite: it joins an array of Cookie values into one
 * line, so several Cookie lines (which the server joins with '; ') can only
 * be sent this way. The answer is read to the end of the connection.
 */
import net from 'node:net';
import type { RawResponse } from './serve.ts';

/**
 * Sends `GET path` with exactly these header lines (plus Host and
 * `Connection: close`) and collects the whole response.
 *
 * @param port - the server's port on 127.0.0.1
 * @param path - the request target
 * @param lines - [name, value] pairs, sent in order, values as given
 */
export function requestWithHeaderLines(
  port: number,
  path: string,
  lines: ReadonlyArray<readonly [string, string]>,
): Promise<RawResponse> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1');
    const chunks: Buffer[] = [];
    socket.on('data', (chunk: Buffer) => chunks.push(chunk));
    socket.on('error', reject);
    socket.on('end', () => {
      const all = Buffer.concat(chunks);
      const end = all.indexOf('\r\n\r\n');
      if (end < 0) return reject(new Error(`no response head in ${JSON.stringify(all.toString('latin1'))}`));
      const [statusLine = '', ...fields] = all.subarray(0, end).toString('latin1').split('\r\n');
      const rawHeaders: Array<[string, string]> = fields.map((field) => {
        const colon = field.indexOf(':');
        return [field.slice(0, colon), field.slice(colon + 1).trim()];
      });
      const headers: Record<string, string> = {};
      for (const [name, value] of rawHeaders) {
        const lower = name.toLowerCase();
        headers[lower] = lower in headers ? `${headers[lower]}, ${value}` : value;
      }
      resolve({ status: Number(statusLine.split(' ')[1]), headers, rawHeaders, body: all.subarray(end + 4) });
    });
    const head = lines.map(([name, value]) => `${name}: ${value}\r\n`).join('');
    socket.end(`GET ${path} HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\n${head}Connection: close\r\n\r\n`, 'latin1');
  });
}
