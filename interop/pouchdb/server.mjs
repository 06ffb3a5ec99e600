// PouchDB Server's HTTP API (express-pouchdb 4.2.0, CouchDB's API in the
// "fullCouchDB" mode, Mango _find included) over pouchdb 7.3.1 with every
// database in memory (pouchdb-adapter-memory 7.3.1, memdown): nothing is
// written to disk but the log. Started through interop/upstreams (StartPouchDB):
//
//   node pouchdb/server.mjs PORT DIR
//
// It listens on 127.0.0.1:PORT, keeps its configuration in memory and
// writes its log file in DIR. There are no admins ("admin party"): every
// request is allowed.
import http from 'node:http';
import path from 'node:path';
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
const port = Number(process.argv[2]);
const dir = process.argv[3];
if (!port || !dir) {
  process.stderr.write('usage: node pouchdb/server.mjs PORT DIR\n');
  process.exit(2);
}

const PouchDB = require('pouchdb')
  .plugin(require('pouchdb-adapter-memory'))
  .defaults({ adapter: 'memory' });

const app = require('express-pouchdb')(PouchDB, {
  mode: 'fullCouchDB',
  inMemoryConfig: true,
  logPath: path.join(dir, 'log.txt'),
});

const server = http.createServer(app);
server.on('error', (err) => {
  process.stderr.write(`pouchdb server: ${err.message}\n`);
  process.exit(1);
});
server.listen(port, '127.0.0.1', () => {
  process.stdout.write(`pouchdb server listening on http://127.0.0.1:${port}\n`);
});
