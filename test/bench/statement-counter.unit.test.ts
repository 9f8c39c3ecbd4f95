import { FrontendReader } from './statement-counter';

function message(type: string, payload: string): Buffer {
  const body = Buffer.from(payload);
  const header = Buffer.alloc(5);
  header.write(type, 0);
  header.writeInt32BE(4 + body.length, 1);
  return Buffer.concat([header, body]);
}

function untyped(code: number, rest = Buffer.alloc(0)): Buffer {
  const header = Buffer.alloc(8);
  header.writeInt32BE(8 + rest.length, 0);
  header.writeInt32BE(code, 4);
  return Buffer.concat([header, rest]);
}

describe('FrontendReader', () => {
  it('skips SSLRequest and the startup message, then reads typed messages across chunks', () => {
    const seen: string[] = [];
    const reader = new FrontendReader((type) => seen.push(type));
    const stream = Buffer.concat([
      untyped(80877103),
      untyped(196608, Buffer.from('user\0postgres\0\0')),
      message('p', 'password'),
      message('Q', 'BEGIN\0'),
      message('P', '\0SELECT 1\0\0\0'),
      message('B', '\0\0\0\0\0\0\0'),
      message('E', '\0\0\0\0\0'),
      message('S', ''),
    ]);
    // Byte by byte: every message boundary falls inside some chunk.
    for (let i = 0; i < stream.length; i += 3) reader.push(stream.subarray(i, i + 3));
    expect(seen).toEqual(['p', 'Q', 'P', 'B', 'E', 'S']);
  });
});
