/**
 * Found when the adaptive compression work was merged: every test file whose
 * server answered a repeated page failed to exit, because the upgrade thread
 * (src/encoding/upgrade-thread.ts) was unref'd before its 'message' listener
 * was added, and adding that listener refs a Worker again. A server's process
 * must end once its server has closed, whatever upgrade is pending or done.
 */
import { spawn } from 'node:child_process';
import test from 'ava';

const child = `
import http from 'node:http';
import Koa from 'koa';
import { buffer } from './src/index.ts';
const app = new Koa();
app.use(buffer());
app.use((ctx) => { ctx.type = 'html'; ctx.body = '<p>' + 'a repeated page '.repeat(4000) + '</p>'; });
const server = http.createServer(app.callback());
server.listen(0, '127.0.0.1', async () => {
  const { port } = server.address();
  for (let i = 0; i < 3; i++) {
    const response = await fetch('http://127.0.0.1:' + port + '/', { headers: { 'accept-encoding': 'br' } });
    await response.arrayBuffer();
  }
  await new Promise((resolve) => setTimeout(resolve, 300)); // let the upgrade start or finish
  server.closeAllConnections();
  server.close(() => console.log('closed'));
});
`;

test('a process whose server answered a repeated page exits once the server closes', async (t) => {
  const proc = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', child], {
    cwd: new URL('../..', import.meta.url),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  proc.stdout.on('data', (chunk) => (out += chunk));
  proc.stderr.on('data', (chunk) => (out += chunk));
  const exited = await new Promise<number | null | 'still running'>((resolve) => {
    const timer = setTimeout(() => resolve('still running'), 15_000);
    proc.on('exit', (code) => {
      clearTimeout(timer);
      resolve(code);
    });
  });
  if (exited === 'still running') proc.kill('SIGKILL');
  t.true(out.includes('closed'), `the server closed: ${out}`);
  t.is(exited, 0, `the process ended by itself: ${out}`);
});
