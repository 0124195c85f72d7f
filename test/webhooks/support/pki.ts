// A throw-away PKI for the HTTPS receivers: a test CA and a server certificate for
// localhost / 127.0.0.1 signed by it, made with the openssl CLI once per test process.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export interface TestPki {
  caPem: string;
  serverKey: string;
  serverCert: string;
  /** A certificate for localhost from an unrelated CA (not trusted by anyone). */
  strayKey: string;
  strayCert: string;
  /** That unrelated CA, for tests that do trust it. */
  strayCaPem: string;
}

let cached: TestPki | undefined;

export function testPki(): TestPki {
  if (cached) return cached;
  const dir = mkdtempSync(join(tmpdir(), 'webhook-pki-'));
  const ssl = (...args: string[]) => execFileSync('openssl', args, { cwd: dir, stdio: 'pipe' });
  try {
    const makeCa = (name: string) => {
      ssl('ecparam', '-name', 'prime256v1', '-genkey', '-noout', '-out', `${name}.key`);
      ssl('req', '-x509', '-new', '-key', `${name}.key`, '-sha256', '-days', '2', '-subj', `/CN=${name} Webhook Test CA`,
        '-addext', 'basicConstraints=critical,CA:TRUE', '-addext', 'keyUsage=critical,keyCertSign,cRLSign', '-out', `${name}.pem`);
    };
    const makeLeaf = (name: string, ca: string) => {
      ssl('ecparam', '-name', 'prime256v1', '-genkey', '-noout', '-out', `${name}.key`);
      ssl('req', '-new', '-key', `${name}.key`, '-subj', '/CN=localhost', '-out', `${name}.csr`);
      ssl('x509', '-req', '-in', `${name}.csr`, '-CA', `${ca}.pem`, '-CAkey', `${ca}.key`, '-CAcreateserial', '-days', '2',
        '-sha256', '-extfile', 'leaf.cnf', '-out', `${name}.pem`);
    };
    writeFileSync(join(dir, 'leaf.cnf'),
      'subjectAltName=DNS:localhost,IP:127.0.0.1\nbasicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature\nextendedKeyUsage=serverAuth\n');
    makeCa('ca');
    makeCa('stray-ca');
    makeLeaf('server', 'ca');
    makeLeaf('stray', 'stray-ca');
    const read = (f: string) => readFileSync(join(dir, f), 'utf8');
    cached = {
      caPem: read('ca.pem'),
      serverKey: read('server.key'),
      serverCert: read('server.pem'),
      strayKey: read('stray.key'),
      strayCert: read('stray.pem'),
      strayCaPem: read('stray-ca.pem'),
    };
    return cached;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
