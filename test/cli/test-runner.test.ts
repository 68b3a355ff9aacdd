/**
 * scripts/run-tests.mjs runs the test files bundled and without Node's source maps (parsing them
 * cost every file's process about 0.4 s of CPU), and puts the places a failure names back into the
 * sources' files and lines as the output passes through. A failure must still say where it is.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';

const FIXTURE = `import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseRecipient } from '../../src/domain/phone-number.ts';

test('fails on purpose', () => {
  assert.equal(1 + 1, 3, 'arithmetic');
});

test('throws inside src', () => {
  parseRecipient(undefined as unknown as string);
});
`;

test('a failing test names its source file and line, and those of the code it called', async () => {
  const dir = join('test', `.runner-fixture-${process.pid}`);
  mkdirSync(dir, { recursive: true });
  const file = join(dir, 'fails.test.ts');
  writeFileSync(file, FIXTURE);
  try {
    // NODE_TEST_CONTEXT, set in this file's process by the runner around it, would make the inner
    // runner's `node --test` take itself for a child of this one.
    const result = await promisify(execFile)(process.execPath, ['scripts/run-tests.mjs', file], { env: { ...process.env, CI_TEST_LOG: '', NODE_TEST_CONTEXT: undefined } }).then(
      () => ({ code: 0, out: '' }),
      (error: { code: number; stdout: string; stderr: string }) => ({ code: error.code, out: `${error.stdout}${error.stderr}` }),
    );
    assert.equal(result.code, 1, 'the run fails');
    assert.match(result.out, new RegExp(`at TestContext\\.<anonymous> \\(${file.replaceAll('.', '\\.')}:6:10\\)`), result.out);
    assert.match(result.out, /at parseRecipient \(src\/domain\/phone-number\.ts:\d+:\d+\)/);
    assert.match(result.out, new RegExp(`test at ${file.replaceAll('.', '\\.')}:5:1`));
    assert.doesNotMatch(result.out, /pigeon-tests-|\.mjs:\d+:\d+/, 'no place in the bundle is left');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
