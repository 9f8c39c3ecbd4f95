import type { JsonWebKey, KeyObject } from 'node:crypto';
import { createPublicKey, hash, sign } from 'node:crypto';

/** What an erasure receipt states (app-interface.md), exactly these members. */
export interface ErasureClaims {
  installId: string;
  appId: string;
  environment: string;
  /** ISO 8601, milliseconds. */
  erasedAt: string;
  /** Rows deleted. */
  records: number;
}

/** A public key as GET /.well-known/jwks.json serves it (RFC 7517, RFC 8037 for OKP). */
export interface PublicJwk extends JsonWebKey {
  kty: 'OKP';
  crv: 'Ed25519';
  x: string;
  kid: string;
  alg: 'EdDSA';
  use: 'sig';
}

function base64url(text: string): string {
  return Buffer.from(text, 'utf8').toString('base64url');
}

/**
 * Signs erasure receipts: compact JWS (RFC 7515) with EdDSA over Ed25519 (RFC 8037), by Node's
 * own crypto. The header names the key by its RFC 7638 thumbprint (`kid`), so a verifier picks
 * it from the JWKS, and a rotated key's receipts stay verifiable while its public half is served.
 */
export class ReceiptSigner {
  readonly jwk: PublicJwk;
  private readonly encodedHeader: string;

  constructor(private readonly privateKey: KeyObject) {
    const { crv, kty, x } = createPublicKey(privateKey).export({ format: 'jwk' });
    if (kty !== 'OKP' || crv !== 'Ed25519' || x === undefined) {
      throw new Error('the receipt signing key must be an Ed25519 key');
    }
    // RFC 7638: the required members in lexicographic order, no whitespace.
    const kid = hash('sha256', JSON.stringify({ crv, kty, x }), 'base64url');
    this.jwk = { kty, crv, x, kid, alg: 'EdDSA', use: 'sig' };
    this.encodedHeader = base64url(JSON.stringify({ alg: 'EdDSA', kid }));
  }

  /** The JSON Web Key Set of every key whose receipts verify: this one. */
  jwks(): { keys: PublicJwk[] } {
    return { keys: [this.jwk] };
  }

  /** The compact JWS of the claims, members in the order the spec lists them. */
  sign(claims: ErasureClaims): string {
    const { installId, appId, environment, erasedAt, records } = claims;
    const payload = base64url(JSON.stringify({ installId, appId, environment, erasedAt, records }));
    const signingInput = `${this.encodedHeader}.${payload}`;
    const signature = sign(null, Buffer.from(signingInput, 'ascii'), this.privateKey);
    return `${signingInput}.${signature.toString('base64url')}`;
  }
}
