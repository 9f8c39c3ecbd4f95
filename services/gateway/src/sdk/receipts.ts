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

/** An Ed25519 public key as a JWK, named by its RFC 7638 thumbprint. */
function publicJwkOf(key: KeyObject): PublicJwk {
  const { crv, kty, x } = (key.type === 'private' ? createPublicKey(key) : key).export({
    format: 'jwk',
  });
  if (kty !== 'OKP' || crv !== 'Ed25519' || x === undefined) {
    throw new Error('a receipt key must be an Ed25519 key');
  }
  // RFC 7638: the required members in lexicographic order, no whitespace.
  const kid = hash('sha256', JSON.stringify({ crv, kty, x }), 'base64url');
  return { kty, crv, x, kid, alg: 'EdDSA', use: 'sig' };
}

/**
 * Signs erasure receipts: compact JWS (RFC 7515) with EdDSA over Ed25519 (RFC 8037), by Node's
 * own crypto. The header names the key by its RFC 7638 thumbprint (`kid`), so a verifier picks
 * it from the JWKS. After a rotation, the keys rotated out are served beside the current one
 * (`previousKeys`): the receipts they signed, which apps keep as proof, still verify.
 */
export class ReceiptSigner {
  readonly jwk: PublicJwk;
  private readonly keySet: { keys: PublicJwk[] };
  private readonly encodedHeader: string;

  constructor(
    private readonly privateKey: KeyObject,
    previousKeys: readonly KeyObject[] = [],
  ) {
    this.jwk = publicJwkOf(privateKey);
    const keys = new Map([this.jwk, ...previousKeys.map(publicJwkOf)].map((k) => [k.kid, k]));
    this.keySet = { keys: [...keys.values()] };
    this.encodedHeader = base64url(JSON.stringify({ alg: 'EdDSA', kid: this.jwk.kid }));
  }

  /** The JSON Web Key Set of every key whose receipts verify: the current one first. */
  jwks(): { keys: PublicJwk[] } {
    return this.keySet;
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
