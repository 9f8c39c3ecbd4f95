// A browser-typed project (DOM lib): the global fetch and AbortController fit as they are.
import { createClient } from '../../../dist';

export async function firstLink(): Promise<string> {
  const client = createClient({
    baseUrl: 'https://api.acme.example',
    apiKey: 'ls_sk_test_x',
    fetch,
  });
  const aborter = new AbortController();
  const { link } = await client.createLink(
    { webFallbackUrl: 'https://acme.example' },
    { signal: aborter.signal },
  );
  return link.url;
}
