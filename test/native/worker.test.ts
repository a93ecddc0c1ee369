/**
 * The addon keeps its state per environment, so it loads and
 * works in worker threads, several at once, and still works on the main
 * thread after they are gone.
 */
import test from 'ava';
import { Worker } from 'node:worker_threads';
import { addon, addonUnavailableReason, packageRoot } from '../../src/native/binding.ts';

const withAddon = addon ? test : test.skip;
if (!addon)
  console.log(
    `# worker tests skipped: the native addon is unavailable (${addonUnavailableReason}); build it with npx node-gyp rebuild`,
  );

// CommonJS, so the worker needs no TypeScript loader: it loads the addon the
// way the package does, through node-gyp-build.
const workerSource = `
const { parentPort, workerData } = require('node:worker_threads');
const addon = require(require.resolve('node-gyp-build', { paths: [workerData.root] }))(workerData.root);
const streamed = new addon.Md5().update('ab').update(Buffer.from('c')).digest('hex');
let borrowed = 'no error';
try { addon.Md5.prototype.digest.call({}); } catch (error) { borrowed = error.code; }
parentPort.postMessage({ oneShot: addon.md5('abc'), streamed, borrowed, stamp: addon.sourceStamp });
`;

function runWorker(): Promise<Record<string, string>> {
  return new Promise((resolve, reject) => {
    const worker = new Worker(workerSource, { eval: true, workerData: { root: packageRoot } });
    worker.once('message', (message: Record<string, string>) => {
      void worker.terminate().then(() => resolve(message));
    });
    worker.once('error', reject);
  });
}

withAddon('the addon loads and hashes in several worker threads at once', async (t) => {
  const results = await Promise.all([runWorker(), runWorker(), runWorker()]);
  for (const result of results) {
    t.is(result.oneShot, '900150983cd24fb0d6963f7d28e17f72', 'md5 works in a worker');
    t.is(result.streamed, '900150983cd24fb0d6963f7d28e17f72', 'Md5 works in a worker');
    t.is(result.borrowed, 'ERR_INVALID_THIS', "the type tag holds in a worker's environment");
    t.is(result.stamp, addon!.sourceStamp, 'the worker loaded the same binary');
  }
});

withAddon('the main thread still hashes after its workers are gone', async (t) => {
  await runWorker();
  await runWorker();
  t.is(new addon!.Md5().update('abc').digest('hex'), '900150983cd24fb0d6963f7d28e17f72');
  t.is(addon!.md5('abc'), '900150983cd24fb0d6963f7d28e17f72');
});
