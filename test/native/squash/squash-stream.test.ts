/**
 * SquashStream's edges, native and twin alike: the chunks it takes, how it
 * refuses bad arguments and misuse (the same coded errors, word for word),
 * what it holds back and when it lets go, level 0, and the bound on what it
 * holds.
 */
import test from 'ava';
import { impls } from '../../helpers/impls.ts';
import { caught } from '../../helpers/caught.ts';

for (const [name, impl] of impls) {
  const { SquashStream } = impl;

  test(`${name}: the options are checked as squashHtml checks them`, (t) => {
    for (const options of [null, 'fast', { level: 3 }, { rewriteLinks: 1 }, { host: 80 }, { scheme: 'ftp' }]) {
      const fromSquash = caught(() => impl.squashHtml('', options as never));
      const fromStream = caught(() => new SquashStream(options as never));
      t.is(fromStream.constructor, fromSquash.constructor);
      t.is(fromStream.code, fromSquash.code);
      t.is(fromStream.message, fromSquash.message);
    }
  });

  test(`${name}: a chunk is bytes or a string; anything else is refused by name`, (t) => {
    const stream = new SquashStream();
    const error = caught(() => stream.feed(42 as never));
    t.true(error instanceof TypeError);
    t.is(error.code, 'ERR_INVALID_ARG_TYPE');
    t.is(
      error.message,
      'The "chunk" argument must be a string, Buffer, TypedArray or DataView (received the number 42)',
    );
    const parts = [
      stream.feed('<p>  é '),
      stream.feed(new Uint16Array(new Uint8Array(Buffer.from(' \n<b>x</b>')).buffer)),
      stream.feed(new DataView(new Uint8Array(Buffer.from('  </p>')).buffer)),
      stream.finish(),
    ];
    t.true(Buffer.concat(parts).equals(impl.squashHtml('<p>  é  \n<b>x</b>  </p>')));
  });

  test(`${name}: what a chunk decides comes back at once; what the next ones decide waits`, (t) => {
    const stream = new SquashStream({ rewriteLinks: true, host: 'h', scheme: 'https' });
    const chunks = ['<div>\n  <span>Hello', '   ', '<a href="https://h/x', '?q">link</a> <!-- c', ' -->', '</p>'];
    const out = chunks.map((chunk) => stream.feed(chunk).toString());
    out.push(stream.finish().toString());
    t.deepEqual(out, [
      '<div>\n<span>Hello', // text is decided as it comes
      '', // a run waits for its right-hand neighbour
      ' <a href=', // the run before an inline tag stays; the link may be shortened: it waits for its quote
      '"/x?q">link</a>', // and a comment waits for its end …
      '', // … and for what follows it
      ' </p>',
      '',
    ]);
    t.is(out.join(''), impl.squashHtml(chunks.join(''), { rewriteLinks: true, host: 'h', scheme: 'https' }).toString());
  });

  test(`${name}: held counts the bytes held back, not a pending run`, (t) => {
    const stream = new SquashStream({ rewriteLinks: true, host: 'h' });
    const held = ['<p>a   ', '<a href="//h/x', '">b</a><!-- c', ' -->', 'd'].map((chunk) => {
      stream.feed(chunk);
      return stream.held;
    });
    t.deepEqual(held, [0, 6, 6, 10, 0]);
  });

  test(`${name}: feed and finish after finish, and finish twice, are refused`, (t) => {
    const stream = new SquashStream();
    stream.finish();
    for (const [method, call] of [
      ['feed', () => stream.feed('x')],
      ['finish', () => stream.finish()],
    ] as const) {
      const error = caught(call);
      t.is(error.code, 'KB_SQUASH_STREAM_FINISHED');
      t.is(
        error.message,
        `SquashStream.${method}() called after finish(): a SquashStream squashes one body; create a new one`,
      );
    }
    t.is(stream.held, 0);
  });

  test(`${name}: a method borrowed onto another object is refused`, (t) => {
    const { feed, finish } = SquashStream.prototype;
    const held = Object.getOwnPropertyDescriptor(SquashStream.prototype, 'held')!.get!;
    for (const self of [{}, Object.create(SquashStream.prototype), undefined, 5, new impl.Md5()]) {
      for (const [method, call] of [
        ['feed', () => feed.call(self, 'x')],
        ['finish', () => finish.call(self)],
        ['held', () => held.call(self)],
      ] as const) {
        const error = caught(call);
        t.true(error instanceof TypeError);
        t.is(error.code, 'ERR_INVALID_THIS');
        t.is(error.message, `SquashStream.prototype.${method} called on an object that is not a SquashStream`);
      }
    }
  });

  test(`${name}: level 0 copies each chunk as it comes`, (t) => {
    const stream = new SquashStream({ level: 0 });
    const chunk = Buffer.from('  <div>  <!-- c');
    const out = stream.feed(chunk);
    t.true(out.equals(chunk));
    chunk[0] = 0x78;
    t.is(out[0], 0x20, 'a copy, not a view of the chunk');
    t.is(stream.finish().length, 0);
  });

  test(`${name}: at most maxHeld bytes are held, however long a comment goes on`, (t) => {
    t.is(SquashStream.maxHeld, 32 * 1024 + 4);
    const stream = new SquashStream();
    const out = [stream.feed('<p>a <!--')];
    let most = 0;
    for (let i = 0; i < 100; i++) {
      out.push(stream.feed('x'.repeat(1000)));
      most = Math.max(most, stream.held);
    }
    out.push(stream.feed('--> b'), stream.finish());
    t.true(most <= SquashStream.maxHeld, `held ${most}`);
    t.true(most >= 32 * 1024 - 1000, 'a comment is held up to the look-ahead');
    t.true(Buffer.concat(out).equals(impl.squashHtml(`<p>a <!--${'x'.repeat(100000)}--> b`)));
  });
}
