/** The cores know nothing of JavaScript (docs/decisions/0006-native-cores-with-typescript-twins.md): no N-API, Node or libuv header in native/core. */
import test from 'ava';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { packageRoot } from '../../src/native/binding.ts';

test('native/core includes only std and POSIX headers', (t) => {
  const dir = join(packageRoot, 'native', 'core');
  // Recursive: the squasher's stages live in native/core/squash/.
  const files = readdirSync(dir, { recursive: true, encoding: 'utf8' }).filter((f) => /\.(h|cc)$/.test(f));
  t.true(files.length >= 3, 'the three cores are there');
  for (const file of files) {
    const includes = readFileSync(join(dir, file), 'utf8').match(/^\s*#\s*include\s*[<"][^>"]+[>"]/gm) ?? [];
    for (const line of includes) {
      t.notRegex(line, /napi|node_api|node\.h|uv\.h|v8\.h/, `${file}: ${line.trim()}`);
    }
  }
});
