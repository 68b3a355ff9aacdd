/**
 * The layering of docs/architecture.md, checked on the source: routes, dashboard pages and CLI
 * commands import nothing from src/store/ (not even types), SQL is built only in src/store/,
 * domain/ stays pure, services do not reach up into http/, cli/ or workers/, the two front doors
 * (src/http and src/smpp-server) import nothing of each other, and no module of src/ imports itself
 * through others (an import cycle). Reads the files; starts nothing.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';

const ROOT = resolve(import.meta.dirname, '../..');

function files(dir: string, out: string[] = []): string[] {
  for (const entry of readdirSync(join(ROOT, dir))) {
    const path = join(dir, entry);
    if (statSync(join(ROOT, path)).isDirectory()) files(path, out);
    else if (/\.(ts|mjs)$/.test(entry)) out.push(path);
  }
  return out;
}

/** Every module a file imports (static, `import type`, re-exports, dynamic), as a path from the root. */
function imports(file: string): string[] {
  const text = readFileSync(join(ROOT, file), 'utf8');
  const specifiers = [...text.matchAll(/(?:\bfrom\s+|\bimport\s*\(\s*|^\s*import\s+)['"]([^'"]+)['"]/gm)].map((m) => m[1]!);
  return specifiers.filter((s) => s.startsWith('.')).map((s) => relative(ROOT, resolve(ROOT, dirname(file), s)));
}

function offenders(dirs: string[], forbidden: (target: string) => boolean, { tests = true } = {}): string[] {
  return dirs
    .flatMap((d) => files(d))
    .filter((f) => tests || !f.endsWith('.test.ts'))
    .flatMap((f) => imports(f).filter(forbidden).map((target) => `${f} imports ${target}`));
}

test('routes, dashboard pages, CLI commands and the SMPP listener import nothing from src/store/', () => {
  assert.deepEqual(offenders(['src/http', 'src/cli', 'src/smpp-server'], (t) => t.startsWith('src/store/'), { tests: false }), []);
});

test('SQL is built only in src/store/', () => {
  const builders = /\b(selectFrom|insertInto|updateTable|deleteFrom)\b|\bsql`/;
  const found = files('src')
    .filter((f) => !f.startsWith('src/store/'))
    .flatMap((f) =>
      readFileSync(join(ROOT, f), 'utf8')
        .split('\n')
        .map((line, i) => ({ line, i }))
        .filter(({ line }) => builders.test(line))
        .map(({ line, i }) => `${f}:${i + 1}: ${line.trim()}`),
    );
  assert.deepEqual(found, []);
});

test('src/domain/ is pure: it imports only domain/ and errors/', () => {
  assert.deepEqual(offenders(['src/domain'], (t) => !t.startsWith('src/domain/') && !t.startsWith('src/errors/')), []);
});

test('services, the store and the domain never import the layers above them', () => {
  const above = (t: string) => ['src/http/', 'src/cli/', 'src/workers/', 'src/runtime.ts'].some((p) => t.startsWith(p));
  assert.deepEqual(offenders(['src/services', 'src/store', 'src/domain'], above), []);
});

test('the two front doors, src/http and src/smpp-server, import nothing of each other', () => {
  assert.deepEqual(offenders(['src/smpp-server'], (t) => t.startsWith('src/http/')), []);
  assert.deepEqual(offenders(['src/http'], (t) => t.startsWith('src/smpp-server/')), []);
});

/**
 * The import cycles of a graph (Tarjan's strongly connected components): each group of modules
 * that reach one another through their imports, `import type` included, sorted.
 */
function cycles(graph: Map<string, string[]>): string[][] {
  let next = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];
  const visit = (v: string): void => {
    index.set(v, next);
    low.set(v, next);
    next++;
    stack.push(v);
    onStack.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!graph.has(w)) continue;
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) {
        low.set(v, Math.min(low.get(v)!, index.get(w)!));
      }
    }
    if (low.get(v) !== index.get(v)) return;
    const group: string[] = [];
    let w: string;
    do {
      w = stack.pop()!;
      onStack.delete(w);
      group.push(w);
    } while (w !== v);
    if (group.length > 1 || graph.get(v)!.includes(v)) found.push(group.sort());
  };
  for (const v of graph.keys()) if (!index.has(v)) visit(v);
  return found;
}

test('no import cycles in src/', () => {
  const graph = new Map(files('src').filter((f) => !f.endsWith('.test.ts')).map((f) => [f, imports(f)]));
  assert.deepEqual(cycles(graph), []);
});

test('the cycle check finds a cycle when there is one', () => {
  const graph = new Map([
    ['a.ts', ['b.ts']],
    ['b.ts', ['c.ts', 'd.ts']],
    ['c.ts', ['a.ts']],
    ['d.ts', []],
    ['e.ts', ['e.ts']],
  ]);
  assert.deepEqual(cycles(graph), [['a.ts', 'b.ts', 'c.ts'], ['e.ts']]);
  // The SMPP session's own imports are read, type imports included.
  assert.ok(imports('src/smpp-server/session.ts').includes('src/smpp-server/session-host.ts'));
});

test('the check sees an import of the store from a route when there is one', () => {
  // The import reader itself: a file of this repository known to import the store.
  assert.ok(imports('src/services/database.ts').includes('src/store/connect.ts'));
  assert.ok(imports('src/http/dashboard/dashboard-routes.ts').includes('src/http/dashboard/owner/owner-area.ts'));
});
