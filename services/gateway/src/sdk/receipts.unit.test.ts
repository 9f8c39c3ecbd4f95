import { createPublicKey, verify } from 'node:crypto';
import { generateReceiptSigningKey, readReceiptSigningKey } from '@linkservice/keys';
import { ReceiptSigner } from './receipts';

const CLAIMS = {
  installId: 'ins_01JD3Q0000000000000000000',
  appId: 'app_01JD3Q0000000000000000000',
  environment: 'live',
  erasedAt: '2026-11-25T00:00:00.000Z',
  records: 2,
};

function decode(part: string): unknown {
  return JSON.parse(Buffer.from(part, 'base64url').toString('utf8'));
}

describe('ReceiptSigner', () => {
  const signer = new ReceiptSigner(readReceiptSigningKey(generateReceiptSigningKey()));

  it('signs a compact JWS whose header names the key and whose payload is the claims', () => {
    const [header, payload, signature, ...rest] = signer.sign(CLAIMS).split('.');
    expect(rest).toEqual([]);
    expect(decode(header)).toEqual({ alg: 'EdDSA', kid: signer.jwk.kid });
    expect(decode(payload)).toEqual(CLAIMS);
    const key = createPublicKey({ key: signer.jwks().keys[0], format: 'jwk' });
    const input = Buffer.from(`${header}.${payload}`);
    expect(verify(null, input, key, Buffer.from(signature, 'base64url'))).toBe(true);
    // Any change to the claims breaks the signature.
    const forged = Buffer.from(JSON.stringify({ ...CLAIMS, records: 3 })).toString('base64url');
    expect(
      verify(null, Buffer.from(`${header}.${forged}`), key, Buffer.from(signature, 'base64url')),
    ).toBe(false);
  });

  it('keeps only the claims the receipt states', () => {
    const [, payload] = signer.sign({ ...CLAIMS, extra: 'no' } as typeof CLAIMS).split('.');
    expect(Object.keys(decode(payload) as object)).toEqual([
      'installId',
      'appId',
      'environment',
      'erasedAt',
      'records',
    ]);
  });

  it('publishes the public half only, named by its RFC 7638 thumbprint', () => {
    const { keys } = signer.jwks();
    expect(keys).toHaveLength(1);
    expect(Object.keys(keys[0]).sort()).toEqual(['alg', 'crv', 'kid', 'kty', 'use', 'x']);
    // RFC 8037 appendix A.3: the thumbprint of its example key.
    const rfcKey = readReceiptSigningKey(
      '-----BEGIN PRIVATE KEY-----\nMC4CAQAwBQYDK2VwBCIEIJ1hsZ3v/VpguoRK9JLsLMREScVpezJpGXA7rAMcrn9g\n-----END PRIVATE KEY-----\n',
    );
    expect(new ReceiptSigner(rfcKey).jwk).toMatchObject({
      x: '11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo',
      kid: 'kPrK_qmxVWaYVA9wwBF6Iuo3vVzz7TxHCTwXBygrS4k',
    });
  });

  it('serves the keys rotated out beside the current one, so their receipts still verify', () => {
    const retired = readReceiptSigningKey(generateReceiptSigningKey());
    const oldReceipt = new ReceiptSigner(retired).sign(CLAIMS);
    const current = new ReceiptSigner(readReceiptSigningKey(generateReceiptSigningKey()), [
      createPublicKey(retired),
      createPublicKey(retired),
    ]);
    const { keys } = current.jwks();
    // The current key first; a key given twice is served once.
    expect(keys.map((k) => k.kid)).toEqual([current.jwk.kid, new ReceiptSigner(retired).jwk.kid]);
    const [header, payload, signature] = oldReceipt.split('.');
    const { kid } = decode(header) as { kid: string };
    const key = createPublicKey({ key: keys.find((k) => k.kid === kid)!, format: 'jwk' });
    expect(
      verify(null, Buffer.from(`${header}.${payload}`), key, Buffer.from(signature, 'base64url')),
    ).toBe(true);
  });
});
