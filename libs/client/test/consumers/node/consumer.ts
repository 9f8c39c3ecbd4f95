// A Node project (@types/node, no DOM lib): Node's global fetch and AbortSignal fit as they are.
import { createClient } from '../../../dist';

export async function firstLink(): Promise<string> {
  const client = createClient({
    baseUrl: 'https://api.acme.example',
    apiKey: 'ls_sk_test_x',
    fetch,
  });
  const { link } = await client.createLink(
    { webFallbackUrl: 'https://acme.example' },
    { signal: AbortSignal.timeout(5_000) },
  );
  return link.url;
}
