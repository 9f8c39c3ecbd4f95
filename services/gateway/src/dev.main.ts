import { generateReceiptSigningKey } from '@linkservice/keys';

/**
 * The gateway as `pnpm start` runs it: main.ts, with a development RECEIPT_SIGNING_KEY made for
 * this process when none is set. Its receipts stop verifying once the process ends (the next
 * start serves another key). Deployments set the key (the chart requires it) and run main.js.
 */
if (!process.env.RECEIPT_SIGNING_KEY) {
  process.env.RECEIPT_SIGNING_KEY = generateReceiptSigningKey();
  process.stderr.write(
    'WARNING: RECEIPT_SIGNING_KEY is unset: erasure receipts are signed with a development key ' +
      'made for this process, and stop verifying when it exits. Set RECEIPT_SIGNING_KEY (an ' +
      'Ed25519 private key, PKCS#8 PEM: openssl genpkey -algorithm ed25519) to keep one.\n',
  );
}

// After the key is in place: main.ts loads the config, and telemetry first of all.
// eslint-disable-next-line @typescript-eslint/no-require-imports
require('./main');
