/**
 * An own redis-server for tests and benches: a free loopback port, no
 * persistence, stopped (SIGKILL, nothing to save) and restartable on the same
 * port. No ava import, so the benches can use it too.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { connect, createServer } from 'node:net';

/** An own redis-server on a free port; `start` after `stop` reuses the port. */
export async function startServer(): Promise<{ port: number; stop(): Promise<void>; start(): Promise<void> }> {
  let port = 0;
  let child: ChildProcess | undefined;
  const start = async (): Promise<void> => {
    if (child) return;
    child = spawn(
      'redis-server',
      [
        '--port',
        String(port),
        '--bind',
        '127.0.0.1',
        '--save',
        '',
        '--appendonly',
        'no',
        '--protected-mode',
        'no',
        '--loglevel',
        'warning',
      ],
      { stdio: ['ignore', 'ignore', 'pipe'] },
    );
    const started = child;
    let stderr = '';
    started.stderr!.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
    const exited = new Promise<void>((resolve) => started.once('exit', () => resolve()));
    const deadline = Date.now() + 10_000;
    while (!(await pingPort(port))) {
      if (started.exitCode !== null || started.signalCode !== null || Date.now() > deadline) {
        started.kill('SIGKILL');
        await exited;
        child = undefined;
        throw new Error(`redis-server did not start on port ${port}: ${stderr}`);
      }
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
  };
  const stop = async (): Promise<void> => {
    const running = child;
    if (!running) return;
    child = undefined;
    if (running.exitCode !== null || running.signalCode !== null) return;
    const exited = new Promise<void>((resolve) => running.once('exit', () => resolve()));
    running.kill('SIGKILL');
    await exited;
  };
  // A free port can be taken between the probe and redis-server's bind: try a few.
  for (let attempt = 0; ; attempt++) {
    port = await freePort();
    try {
      await start();
      return { port, stop, start };
    } catch (error) {
      if (attempt >= 4) throw error;
    }
  }
}

/** A TCP port nothing listens on right now. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() =>
        typeof address === 'object' && address ? resolve(address.port) : reject(new Error('no port')),
      );
    });
  });
}

/** True when a Redis on 127.0.0.1:port answers PING. */
export function pingPort(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host: '127.0.0.1', port });
    let answer = '';
    const done = (ok: boolean): void => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(500, () => done(false));
    socket.on('error', () => done(false));
    socket.on('connect', () => socket.write('PING\r\n'));
    socket.on('data', (chunk) => {
      answer += chunk.toString('latin1');
      if (answer.includes('\r\n')) done(answer.startsWith('+PONG'));
    });
  });
}
