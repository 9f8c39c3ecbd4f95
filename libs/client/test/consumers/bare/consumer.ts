// A server without DOM or Node types: it passes its own fetch and its own signal.
import type { AbortSignalLike, FetchLike, LinkServiceError } from '../../../dist';
import { createClient, isCreateOutcomeUnknown } from '../../../dist';

declare const myFetch: FetchLike;
declare const mySignal: AbortSignalLike;

export async function importRows(rows: string[]): Promise<string | undefined> {
  const client = createClient({
    baseUrl: 'https://api.acme.example',
    apiKey: 'ls_sk_test_x',
    fetch: myFetch,
  });
  const report = await client.createLinksInBatches(
    rows.map((row) => ({ webFallbackUrl: row })),
    { signal: mySignal },
  );
  const error: LinkServiceError | undefined = report.interrupted?.error;
  if (error && isCreateOutcomeUnknown(error)) return report.idempotencyKey;
  return undefined;
}
