/**
 * The attack a `cookie:NAME` key must not let through: a Cookie header that
 * names the session cookie twice, so that one reading finds no session and
 * Koa's `ctx.cookies.get` finds the attacker's. Had the key taken the first
 * reading, the attacker's logged-in page would be stored as the page of
 * every visitor without a session. Over loopback, with a plain session
 * cookie and with a real koa-session (signed `koa.sess` + `koa.sess.sig`)
 * mounted the ordinary way, outside buffer().
 */
import test from 'ava';
import Koa from 'koa';
import session from 'koa-session';
import { buffer } from '../../src/buffer.ts';
import { requestWithHeaderLines } from '../helpers/header-lines.ts';
import { recordingLogger, serve } from '../helpers/serve.ts';

/** Cookie header lines that name the session twice, the second time with the attacker's value (`%s`). */
const attacks = [
  ['session =; session=%s'],
  ['a=1;\tsession=; session=%s'],
  ['session\t=; session=%s'],
  ['"session"=; session=%s'],
  ['session\t=', 'session=%s'],
  ['a=1', 'session =', 'session=%s'],
];

const visitors = [[], ['_ga=GA1.1.1'], ['session='], ['a=1; theme=dark']];

test("cookie:session: a header naming the session twice bypasses the cache, and the attacker's page never becomes another visitor's hit", async (t) => {
  const accounts = new Map([['ATTACKER', 'attacker-secret-4711']]);
  const server = await serve(t, [
    buffer({ cache: true, varyBy: ['cookie:session'], logger: recordingLogger() }),
    async (ctx) => {
      if (await ctx.bufferIsCached()) return;
      const user = ctx.cookies.get('session');
      ctx.type = 'html';
      ctx.body = accounts.has(user ?? '')
        ? `<!doctype html><p>account of ${user}: ${accounts.get(user!)}</p>`
        : '<!doctype html><p>welcome, guest</p>';
    },
  ]);
  for (const [i, attack] of attacks.entries()) {
    const path = `/account/${i}`;
    const lines = attack.map((line) => ['Cookie', line.replace('%s', 'ATTACKER')] as const);
    for (let round = 0; round < 2; round++) {
      const attacker = await requestWithHeaderLines(server.port, path, lines);
      t.regex(attacker.body.toString(), /attacker-secret/, `${JSON.stringify(attack)}: the app reads the attacker`);
      t.is(attacker.headers['cache-status'], 'koa-buffer; fwd=bypass; detail=COOKIE', JSON.stringify(attack));
    }
    for (const visitor of visitors) {
      const answer = await requestWithHeaderLines(
        server.port,
        path,
        visitor.map((line) => ['Cookie', line] as const),
      );
      t.is(
        answer.body.toString(),
        '<!doctype html><p>welcome, guest</p>',
        `after ${JSON.stringify(attack)}, a visitor with ${JSON.stringify(visitor)} gets the guest page`,
      );
    }
  }
});

test("cookie:koa.sess with koa-session: a header naming the signed session twice bypasses the cache, and the attacker's page never becomes another visitor's hit", async (t) => {
  const app = new Koa();
  app.keys = ['session signing key'];
  app.use(session({ signed: true }, app));
  app.use(buffer({ cache: true, varyBy: ['cookie:koa.sess'], logger: recordingLogger() }));
  app.use(async (ctx) => {
    if (ctx.path === '/login') {
      ctx.session!.user = 'ATTACKER';
      ctx.body = 'logged in';
      return;
    }
    if (await ctx.bufferIsCached()) return;
    const user = ctx.session?.user as string | undefined;
    ctx.type = 'html';
    ctx.body = user ? `<!doctype html><p>account of ${user}: secret</p>` : '<!doctype html><p>welcome, guest</p>';
  });
  const server = await serve(t, app);
  const login = await server.request('/login');
  const jar = login.rawHeaders
    .filter(([name]) => name.toLowerCase() === 'set-cookie')
    .map(([, value]) => value.split(';')[0]!);
  const sess = jar.find((c) => c.startsWith('koa.sess='))!;
  const sig = jar.find((c) => c.startsWith('koa.sess.sig='))!;
  t.truthy(sess && sig, 'koa-session signed the session');
  const honest = await requestWithHeaderLines(server.port, '/honest', [['Cookie', `${sess}; ${sig}`]]);
  t.regex(honest.body.toString(), /account of ATTACKER/, 'the signed session is read');
  const signedAttacks = [
    [`koa.sess =; ${sess}; ${sig}`],
    [`a=1;\tkoa.sess=; ${sess}; ${sig}`],
    ['koa.sess =', `${sess}; ${sig}`],
  ];
  for (const [i, attack] of signedAttacks.entries()) {
    const path = `/account/${i}`;
    const attacker = await requestWithHeaderLines(
      server.port,
      path,
      attack.map((line) => ['Cookie', line] as const),
    );
    t.regex(
      attacker.body.toString(),
      /account of ATTACKER/,
      `${JSON.stringify(attack)}: koa-session reads the attacker`,
    );
    t.is(attacker.headers['cache-status'], 'koa-buffer; fwd=bypass; detail=COOKIE', JSON.stringify(attack));
    for (const visitor of [[], ['koa.sess='], ['_ga=1']]) {
      const answer = await requestWithHeaderLines(
        server.port,
        path,
        visitor.map((line) => ['Cookie', line] as const),
      );
      t.is(
        answer.body.toString(),
        '<!doctype html><p>welcome, guest</p>',
        `after ${JSON.stringify(attack)}, a visitor with ${JSON.stringify(visitor)} gets the guest page`,
      );
    }
  }
});
