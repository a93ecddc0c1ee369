/** examples/cms/server.ts: an edit purges the article and the listing on every node:cluster worker sharing SQLite. */
import test from 'ava';
import { startExample, tempDir, waitGone } from '../../helpers/examples.ts';
import { decode } from '../../helpers/serve.ts';
import type { RunningExample } from '../../helpers/examples.ts';

async function text(app: RunningExample, path: string): Promise<{ body: string; worker: string }> {
  const response = await app.request(path);
  return { body: decode(response).toString('utf8'), worker: String(response.headers['x-worker']) };
}

/** Asks until both workers have answered `path`, returns their pages. */
async function fromBoth(app: RunningExample, path: string): Promise<string[]> {
  const seen = new Map<string, string>();
  for (let i = 0; i < 50 && seen.size < 2; i++) {
    const { body, worker } = await text(app, path);
    seen.set(worker, body);
  }
  return [...seen.values()];
}

test('an authorised edit purges the article and the listing on both workers; the endpoint refuses anyone else', async (t) => {
  const dataDir = tempDir(t, 'kb-cms-example-');
  const app = await startExample(t, 'cms/server.ts', { env: { DATA_DIR: dataDir, CMS_TOKEN: 'secret-token' } });
  for (const page of await fromBoth(app, '/')) t.regex(page, /<a href="\/articles\/1">Hello<\/a>/);
  for (const page of await fromBoth(app, '/articles/1')) t.regex(page, /<h1>Hello<\/h1>/);
  const hit = await app.request('/');
  t.is(hit.headers['x-cache'], 'HIT');
  t.is(hit.headers['cache-tag'], undefined, 'the tag header is not sent');

  t.is((await app.request('/admin/articles/1?title=Edited', {}, 'PUT')).status, 401, 'no token');
  t.is(
    (await app.request('/admin/articles/1?title=Edited', { Authorization: 'Bearer wrong-token!' }, 'PUT')).status,
    401,
  );
  for (const page of await fromBoth(app, '/articles/1')) t.regex(page, /<h1>Hello<\/h1>/, 'nothing was purged');

  const edit = await app.request('/admin/articles/1?title=Edited', { Authorization: 'Bearer secret-token' }, 'PUT');
  t.is(edit.status, 204);
  await new Promise((resolve) => setTimeout(resolve, 300)); // the other worker reads the purge generation every 50 ms
  for (const page of await fromBoth(app, '/articles/1'))
    t.regex(page, /<h1>Edited<\/h1>/, 'the article, on both workers');
  for (const page of await fromBoth(app, '/')) t.regex(page, />Edited<\/a>/, 'the listing, on both workers');
  for (const page of await fromBoth(app, '/articles/2')) t.regex(page, /<h1>Again<\/h1>/);
  t.is(app.child.lines.filter((l) => / builds \/articles\/2$/.test(l)).length, 1, 'another article was not purged');

  const pids = [...new Set((await Promise.all([1, 2, 3, 4].map(() => text(app, '/')))).map((r) => Number(r.worker)))];
  app.child.process.kill('SIGTERM');
  t.deepEqual(await app.child.exited, { code: 0, signal: null });
  t.deepEqual(await waitGone(pids), [], 'no worker is left running');
});
