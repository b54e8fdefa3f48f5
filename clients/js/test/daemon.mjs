// A banditd for the JS client's tests: a throwaway database, a fixed
// loopback port (a restart keeps the address a client holds), SIGTERM and a
// clean exit at the end. BANDITD_BIN, else build/asan/banditd.
import { spawn, execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { once } from 'node:events';
import { createInterface } from 'node:readline';

export const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../../..');
export const BIN = process.env.BANDITD_BIN || join(ROOT, 'build/asan/banditd');

export async function freePort() {
  const s = createServer();
  s.listen(0, '127.0.0.1');
  await once(s, 'listening');
  const { port } = s.address();
  s.close();
  await once(s, 'close');
  return port;
}

export class Daemon {
  constructor(...flags) {
    this.dir = mkdtempSync(join(tmpdir(), 'banditd-js.'));
    this.db = join(this.dir, 'test.db');
    this.flags = flags;
    this.proc = null;
    this.stderr = '';
  }

  get url() { return `http://127.0.0.1:${this.port}`; }

  key(scope, ...extra) {
    return execFileSync(BIN, ['keys', 'create', '--db', this.db, '--scope', scope, ...extra],
      { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
  }

  async start() {
    if (this.port === undefined) this.port = await freePort();
    this.proc = spawn(BIN, ['--listen', `127.0.0.1:${this.port}`, '--db', this.db, '--sync', 'normal',
      ...this.flags], { stdio: ['ignore', 'pipe', 'pipe'] });
    this.proc.stderr.on('data', (b) => { this.stderr += b; });
    const lines = createInterface({ input: this.proc.stdout });
    const [line] = await once(lines, 'line');
    if (!line.startsWith('listening on ')) throw new Error('banditd did not start: ' + line + this.stderr);
    return this;
  }

  async kill() {
    const exited = once(this.proc, 'exit');
    this.proc.kill('SIGKILL');
    await exited;
  }

  /** SIGTERM; the exit code (0: clean). */
  async stop() {
    const exited = once(this.proc, 'exit');
    this.proc.kill('SIGTERM');
    const [code, signal] = await exited;
    return signal ? 128 : code;
  }

  cleanup() {
    if (this.proc && this.proc.exitCode === null && this.proc.signalCode === null) this.proc.kill('SIGKILL');
    if (!process.env.BANDITD_TEST_KEEP) rmSync(this.dir, { recursive: true, force: true });
  }
}
