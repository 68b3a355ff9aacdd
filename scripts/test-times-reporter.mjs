// A node:test reporter for scripts/run-tests.mjs: one JSON line per test file with its wall time
// (the runner's own event for the file, whose name is the file's path, from its process's start to
// its end), and one per test with its result, so that a run can print its slowest files and CI
// its totals across runs. Suites are not counted as tests, as the runner's own summary does not;
// a file that fails without a failing test of its own (it did not load, or it exited early) counts
// as one failed test.
export default async function* timesReporter(source) {
  const failedIn = new Set();
  for await (const event of source) {
    const { type, data } = event;
    const fileItself = data?.name !== undefined && data.name === data.file;
    if (type === 'test:complete' && data.nesting === 0 && fileItself) {
      yield `${JSON.stringify({ file: data.file, ms: data.details.duration_ms })}\n`;
    } else if (type === 'test:fail' && fileItself) {
      if (!failedIn.has(data.file)) yield `${JSON.stringify({ result: 'failed' })}\n`;
    } else if ((type === 'test:pass' || type === 'test:fail') && data.details?.type !== 'suite') {
      const result = data.skip !== undefined ? 'skipped' : data.todo !== undefined ? 'todo' : type === 'test:pass' ? 'passed' : 'failed';
      if (result === 'failed') failedIn.add(data.file);
      yield `${JSON.stringify({ result })}\n`;
    }
  }
}
