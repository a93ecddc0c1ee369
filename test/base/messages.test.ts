import test from 'ava';
import { Messages, builtinMessages, defaultMessages, isMessageOverrides } from '../../src/base/messages.ts';

test('placeholders are filled from the arguments', (t) => {
  t.is(builtinMessages.text('lock_failed', { path: '/x.lock', error: 'EIO' }), 'cannot lock /x.lock: EIO');
});

test('an unknown key yields the key itself', (t) => {
  t.is(builtinMessages.text('no_such_key'), 'no_such_key');
});

test('a placeholder without an argument stays as written', (t) => {
  t.is(builtinMessages.text('unknown_option'), 'unknown option %{name}%{hint}');
});

test('an override replaces the built-in text and may hold any character', (t) => {
  const m = new Messages({ retry_later: 'Bitte gleich noch einmal 🙏 %{who}' });
  t.is(m.text('retry_later', { who: 'Ärzte' }), 'Bitte gleich noch einmal 🙏 Ärzte');
  t.is(m.text('lock_failed', { path: 'p', error: 'e' }), 'cannot lock p: e', 'other keys keep their text');
});

test('an override of undefined shows the key, as the Perl original documents', (t) => {
  t.is(new Messages({ retry_later: undefined }).text('retry_later'), 'retry_later');
});

test('a plural override is chosen by count through Intl.PluralRules', (t) => {
  const m = new Messages({
    waiting: { zero: 'nobody waits', one: '%{count} request waits', other: '%{count} requests wait' },
  });
  t.is(m.text('waiting', { count: 0 }), 'nobody waits');
  t.is(m.text('waiting', { count: 1 }), '1 request waits');
  t.is(m.text('waiting', { count: 7 }), '7 requests wait');
  t.is(m.text('waiting'), '%{count} requests wait', 'no count: the other variant');
});

test('plural categories follow the locale', (t) => {
  const m = new Messages(
    { files: { one: '%{count} plik', few: '%{count} pliki', many: '%{count} plików', other: '%{count} pliku' } },
    'pl',
  );
  t.is(m.text('files', { count: 1 }), '1 plik');
  t.is(m.text('files', { count: 3 }), '3 pliki');
  t.is(m.text('files', { count: 5 }), '5 plików');
});

test('a gender override is chosen by gender, other when none fits', (t) => {
  const m = new Messages({ owner: { female: 'she holds it', male: 'he holds it', other: 'they hold it' } });
  t.is(m.text('owner', { gender: 'female' }), 'she holds it');
  t.is(m.text('owner', { gender: 'male' }), 'he holds it');
  t.is(m.text('owner', { gender: 'x' }), 'they hold it');
});

test('isMessageOverrides accepts strings and variant objects only', (t) => {
  t.true(isMessageOverrides({ a: 'x', b: { one: 'y', other: 'z' }, c: undefined }));
  t.false(isMessageOverrides('x'));
  t.false(isMessageOverrides([]));
  t.false(isMessageOverrides({ a: 1 }));
  t.false(isMessageOverrides({ a: { other: 2 } }));
});

test('every option error names the option and the value it got', (t) => {
  const keys = Object.keys(defaultMessages).filter((key) => key.startsWith('option_'));
  t.true(keys.length > 30);
  for (const key of keys) {
    const text = defaultMessages[key as keyof typeof defaultMessages];
    t.true(text.includes('%{name}') && text.includes('%{value}'), `${key}: ${text}`);
  }
});
