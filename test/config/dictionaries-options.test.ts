/**
 * The `dictionaries` option: off by default and when false or empty; each
 * malformed rule refused at buffer() time with a message naming the rule and
 * what is wrong with it; valid rules accepted and sent as `Use-As-Dictionary`.
 */
import test from 'ava';
import { buffer } from '../../src/buffer.ts';
import { resolveOptions } from '../../src/config/options.ts';
import { optionProblem as problem } from '../helpers/caught.ts';
import { serve } from '../helpers/serve.ts';

const rows: Array<[unknown, string]> = [
  ['/articles/*', "dictionaries must be false or an array of rules such as [{ match: '/articles/*' }]"],
  [true, 'dictionaries must be false or an array of rules'],
  [['/articles/*'], "dictionaries[0] must be an object such as { match: '/articles/*' }"],
  [[{}], "dictionaries[0].match must be a path pattern starting with '/'"],
  [[{ match: 'articles/*' }], "dictionaries[0].match must be a path pattern starting with '/'"],
  [
    [{ match: '/a' }, { match: '/articles/:id' }],
    "dictionaries[1].match '/articles/:id' may hold path characters and '*' only",
  ],
  [[{ match: '/a(\\d+)' }], 'may hold path characters'],
  [[{ match: '/a?b' }], 'may hold path characters'],
  [[{ match: '/a', keep: 0 }], 'dictionaries[0].keep must be a whole number from 1 to 64'],
  [[{ match: '/a', keep: 2.5 }], 'dictionaries[0].keep must be a whole number from 1 to 64'],
  [[{ match: '/a', keep: 65 }], 'dictionaries[0].keep must be a whole number from 1 to 64'],
  [[{ match: '/a', id: 7 }], 'dictionaries[0].id must be a string of at most 1024 printable ASCII characters'],
  [[{ match: '/a', id: 'é' }], 'dictionaries[0].id must be a string of at most 1024'],
  [[{ match: '/a', id: 'x'.repeat(1025) }], 'dictionaries[0].id must be a string of at most 1024'],
  [[{ match: '/a', types: 'text/html' }], 'dictionaries[0].types must be an array of media types'],
  [[{ match: '/a', matchDest: 'document' }], 'dictionaries[0].matchDest must be an array of Sec-Fetch-Dest values'],
  [[{ match: '/a', maxSize: '5mb' }], 'dictionaries[0].maxSize must be a size from 1 byte to 4mb'],
  [[{ match: '/a', maxSize: -1 }], 'dictionaries[0].maxSize must be a size'],
  [[{ match: '/a', expires: 10 }], "dictionaries[0] has an unknown key 'expires'"],
];

for (const [value, text] of rows) {
  test(`dictionaries: ${JSON.stringify(value)} is refused: ${text}`, (t) => {
    const error = problem({ dictionaries: value });
    t.truthy(error);
    t.is(error!.key, 'option_dictionaries');
    t.true(error!.message.startsWith('koa-buffer: '));
    t.true(error!.message.includes(text), error!.message);
  });
}

test('off by default, and with false, null, undefined or []', (t) => {
  t.deepEqual(resolveOptions({}).dictionaries, []);
  for (const value of [false, null, undefined, []])
    t.deepEqual(resolveOptions({ dictionaries: value as never }).dictionaries, []);
});

test('a bad dictionaries option is reported in ASCII order of option names', (t) => {
  t.is(problem({ dictionaries: 1, encodings: 'br' })!.key, 'option_dictionaries');
  t.is(problem({ compressContent: 'x', dictionaries: 1 })!.key, 'option_flag');
});

test('every field of a rule goes into Use-As-Dictionary, quoted as RFC 8941 strings', async (t) => {
  const server = await serve(t, [
    buffer({
      dictionaries: [
        {
          match: '/a/*',
          id: 'say "hi" \\o/',
          matchDest: ['document', 'frame'],
          keep: 1,
          maxSize: '64kb',
          types: ['text/*'],
        },
      ],
    }),
    (ctx) => {
      ctx.type = 'text/plain';
      ctx.body = 'some text that is long enough to be offered as a dictionary';
    },
  ]);
  const response = await server.request('/a/b');
  t.is(
    response.headers['use-as-dictionary'],
    'match="/a/*", match-dest=("document" "frame"), id="say \\"hi\\" \\\\o/"',
  );
  t.is((await server.request('/b')).headers['use-as-dictionary'], undefined);
});

test('without the option no response carries Use-As-Dictionary or varies on Available-Dictionary', async (t) => {
  const server = await serve(t, [
    buffer(),
    (ctx) => {
      ctx.type = 'html';
      ctx.body = '<p>'.repeat(100);
    },
  ]);
  const response = await server.request('/', {
    headers: { 'accept-encoding': 'dcz, br', 'available-dictionary': ':' + 'A'.repeat(43) + '=:' },
  });
  t.is(response.headers['use-as-dictionary'], undefined);
  t.is(response.headers.vary, 'Accept-Encoding');
  t.is(response.headers['content-encoding'], 'br');
});

test('ttl goes into Use-As-Dictionary in seconds; a ttl under a second is refused', async (t) => {
  t.is(
    problem({ dictionaries: [{ match: '/a', ttl: 0 }] })!.message,
    'koa-buffer: dictionaries[0].ttl must be a duration of at least 1 second (dictionaries: [{ match: "/a", ttl: 0 }])',
  );
  t.is(problem({ dictionaries: [{ match: '/a', ttl: 'soon' }] })!.key, 'option_dictionaries');
  t.is(
    resolveOptions({ dictionaries: [{ match: '/a', ttl: '10 minutes' }] }).dictionaries[0]!.header,
    'match="/a", ttl=600',
  );
});
