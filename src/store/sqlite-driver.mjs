// The SQLite driver for this Node. better-sqlite3 12 is the last line that runs on Node 20, but
// from Node 24.19 it aborts the process when a statement is garbage-collected outside JavaScript
// (a RemoveEnvironmentCleanupHook assertion). better-sqlite3 13 fixes that and ships N-API
// binaries that need no compiler, but it needs Node 22 (on Node 20 its binary crashes). Both are
// installed where they can be: 13 as the optional `better-sqlite3-napi`, which npm skips on Node
// 20 because of its `engines`. Node 22 and later take 13; Node 20 takes 12.
// Plain JavaScript because the reader and checkpoint threads load it without the TypeScript loader.
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
const major = Number(process.versions.node.split('.')[0]);

function load() {
  if (major >= 22) {
    try {
      return require('better-sqlite3-napi');
    } catch (error) {
      if (error?.code !== 'MODULE_NOT_FOUND') throw error;
      if (major >= 24) {
        throw new Error(
          'better-sqlite3-napi (better-sqlite3 13) is not installed, and better-sqlite3 12 aborts on ' +
            'Node 24.19 and later: run `npm ci` again with this Node, without --omit=optional.',
        );
      }
    }
  }
  return require('better-sqlite3');
}

const Database = load();
export default Database;
