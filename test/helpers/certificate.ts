/**
 * A self-signed certificate for 127.0.0.1, made with openssl into `dir`, for
 * tests that serve TLS and HTTP/2 over loopback.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';

/** The key and certificate, or undefined when openssl is missing (the caller skips, naming it). */
export function loopbackCertificate(dir: string): { key: Buffer; cert: Buffer } | undefined {
  const keyFile = path.join(dir, 'key.pem');
  const certFile = path.join(dir, 'cert.pem');
  try {
    execFileSync(
      'openssl',
      [
        'req',
        '-x509',
        '-newkey',
        'rsa:2048',
        '-nodes',
        '-days',
        '1',
        '-subj',
        '/CN=127.0.0.1',
        '-addext',
        'subjectAltName=IP:127.0.0.1',
        '-keyout',
        keyFile,
        '-out',
        certFile,
      ],
      { stdio: 'ignore' },
    );
  } catch {
    return undefined;
  }
  return { key: fs.readFileSync(keyFile), cert: fs.readFileSync(certFile) };
}
