/**
 * PIX "copia e cola" payloads (BR Code, EMV QR Code Merchant Presented Mode), so a sandbox QR code looks and
 * parses like a real one. The payload ends with its CRC16-CCITT (poly 0x1021, init 0xFFFF) as 4 hex digits.
 */
const field = (id: string, value: string) => `${id}${String(value.length).padStart(2, "0")}${value}`;

export function crc16(text: string): string {
  let crc = 0xffff;
  for (const byte of new TextEncoder().encode(text)) {
    crc ^= byte << 8;
    for (let i = 0; i < 8; i++) crc = crc & 0x8000 ? ((crc << 1) ^ 0x1021) & 0xffff : (crc << 1) & 0xffff;
  }
  return crc.toString(16).toUpperCase().padStart(4, "0");
}

/** A dynamic BR Code pointing at `url` (the charge location); `amount` as a decimal string when fixed. */
export function brCode(opts: { url: string; txid: string; amount?: string; recurring?: boolean }): string {
  const account = field("00", opts.recurring ? "br.gov.bcb.pix" : "BR.GOV.BCB.PIX") + field("25", opts.url);
  const body = field("00", "01") +
    field("01", "12") +
    field("26", account) +
    field("52", "0000") +
    field("53", "986") +
    (opts.amount ? field("54", opts.amount) : "") +
    field("58", "BR") +
    field("59", "PAYMENTS SANDBOX") +
    field("60", "SAO PAULO") +
    field("62", field("05", opts.txid.replace(/[^A-Za-z0-9]/g, "").slice(0, 25)));
  const withCrcHeader = `${body}6304`;
  return withCrcHeader + crc16(withCrcHeader);
}
