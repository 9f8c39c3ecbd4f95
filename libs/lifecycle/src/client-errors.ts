import type { Server, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { REQUEST_ID_HEADER, requestIdFrom } from '@linkservice/logger';

/** The answer to a request node's HTTP parser refused before any handler saw it. */
export interface ClientErrorAnswer {
  status: number;
  reason: string;
  body: { error: 'invalid_body' | 'payload_too_large'; message: string };
}

/**
 * node's own choice of status (what it sends without a `clientError` listener), with a slug of
 * the error contract. The contract has no slug for 408 or 431, so each takes the closest one:
 * an incomplete request is `invalid_body`, like a body cut short ("nothing was read"); headers
 * too large are `payload_too_large`, like a body too large (the fix is the same: send less).
 */
export function clientErrorAnswer(code: string | undefined): ClientErrorAnswer {
  switch (code) {
    case 'HPE_HEADER_OVERFLOW':
      return {
        status: 431,
        reason: 'Request Header Fields Too Large',
        body: { error: 'payload_too_large', message: 'The request headers are too large.' },
      };
    case 'HPE_CHUNK_EXTENSIONS_OVERFLOW':
      return {
        status: 413,
        reason: 'Payload Too Large',
        body: {
          error: 'payload_too_large',
          message: 'The request chunk extensions are too large.',
        },
      };
    case 'ERR_HTTP_REQUEST_TIMEOUT':
      return {
        status: 408,
        reason: 'Request Timeout',
        body: { error: 'invalid_body', message: 'The request was not received in time.' },
      };
    case undefined:
    default:
      return {
        status: 400,
        reason: 'Bad Request',
        body: { error: 'invalid_body', message: 'The request is not valid HTTP.' },
      };
  }
}

/** The complete HTTP/1.1 message for the answer, closing the connection. */
export function clientErrorResponse(answer: ClientErrorAnswer, requestId: string): string {
  const body = JSON.stringify(answer.body);
  return [
    `HTTP/1.1 ${answer.status} ${answer.reason}`,
    'Content-Type: application/json',
    `Content-Length: ${Buffer.byteLength(body)}`,
    'Cache-Control: no-store',
    `${REQUEST_ID_HEADER}: ${requestId}`,
    'Connection: close',
    '',
    body,
  ].join('\r\n');
}

/** node's in-flight response on the socket; not in its types, but what its default handler checks. */
function responseInFlight(socket: Socket): ServerResponse | null | undefined {
  return (socket as Socket & { _httpMessage?: ServerResponse | null })._httpMessage;
}

/**
 * Answers what node's HTTP parser refuses (malformed request, headers too large, request or
 * headers timeout) with the error contract's JSON body and an X-Request-Id, where node would send
 * an empty 400/408/431. Like node's default, nothing is written on a socket already gone
 * (ECONNRESET, not writable) or in the middle of another response, whose bytes it would corrupt;
 * the socket is closed either way. No request was parsed, so the id is always a fresh one.
 */
export function answerClientErrors(server: Server): void {
  server.on('clientError', (error: NodeJS.ErrnoException, socket: Socket) => {
    // A response started and not ended would be cut by ours; an ended one is all queued on the
    // socket already, and ours follows it as the next response of the connection.
    const inFlight = responseInFlight(socket);
    const cutsInFlight = inFlight?.headersSent === true && !inFlight.writableEnded;
    if (error.code === 'ECONNRESET' || !socket.writable || cutsInFlight) {
      socket.destroy();
      return;
    }
    const response = clientErrorResponse(clientErrorAnswer(error.code), requestIdFrom(undefined));
    // Closed once written: the server's sockets allow half-open, so end() alone would leave
    // this one open while the parser keeps failing on whatever the client still sends.
    socket.end(response, () => socket.destroy());
  });
}
