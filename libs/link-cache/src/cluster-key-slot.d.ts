/** The Redis Cluster key slot (CRC16 of the key's hash tag, mod 16384), as ioredis computes it. */
declare module 'cluster-key-slot' {
  function calculateSlot(key: string | Buffer): number;
  export = calculateSlot;
}
