/**
 * Document uploads and reads: file types judged from the bytes, names, sizes, documents by URL, the mandatory set
 * moving a reproved person to review, and the bytes read back as uploaded.
 */
import assert from "node:assert/strict";
import { newCompany, setup } from "../support/helpers.ts";
import { newPerson } from "../support/subjects.ts";

// Minimal but complete files, built here so the bytes are real: a 1×1 grey PNG (CRCs and zlib stream computed),
// a 1×1 baseline JPEG (one-symbol Huffman tables, one block whose DC difference and AC run are both zero) and a
// one-object PDF.

const CRC_TABLE = Array.from({ length: 256 }, (_, n) => {
  let c = n;
  for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
  return c >>> 0;
});

function crc32(bytes: Uint8Array): number {
  let c = 0xffffffff;
  for (const b of bytes) c = CRC_TABLE[(c ^ b) & 0xff] ^ (c >>> 8);
  return (c ^ 0xffffffff) >>> 0;
}

const u32 = (n: number) => [(n >>> 24) & 0xff, (n >>> 16) & 0xff, (n >>> 8) & 0xff, n & 0xff];

function pngChunk(type: string, data: number[]): number[] {
  const body = new Uint8Array([...new TextEncoder().encode(type), ...data]);
  return [...u32(data.length), ...body, ...u32(crc32(body))];
}

async function zlib(bytes: number[]): Promise<number[]> {
  const stream = new Blob([new Uint8Array(bytes)]).stream().pipeThrough(new CompressionStream("deflate"));
  return [...new Uint8Array(await new Response(stream).arrayBuffer())];
}

async function png(): Promise<Uint8Array> {
  const ihdr = [...u32(1), ...u32(1), 8, 0, 0, 0, 0]; // 1×1, 8-bit greyscale
  const idat = await zlib([0, 0x80]); // filter byte, one grey pixel
  return new Uint8Array([
    0x89,
    0x50,
    0x4e,
    0x47,
    0x0d,
    0x0a,
    0x1a,
    0x0a,
    ...pngChunk("IHDR", ihdr),
    ...pngChunk("IDAT", idat),
    ...pngChunk("IEND", []),
  ]);
}

function jpeg(): Uint8Array {
  const segment = (
    marker: number,
    body: number[],
  ) => [0xff, marker, ...[(body.length + 2) >> 8, body.length + 2], ...body];
  const oneSymbolTable = (cls: number) => [cls, 1, ...new Array(15).fill(0), 0x00];
  return new Uint8Array([
    0xff,
    0xd8,
    ...segment(0xe0, [...new TextEncoder().encode("JFIF\0"), 1, 1, 0, 0, 1, 0, 1, 0, 0]),
    ...segment(0xdb, [0, ...new Array(64).fill(1)]),
    ...segment(0xc0, [8, 0, 1, 0, 1, 1, 1, 0x11, 0]),
    ...segment(0xc4, oneSymbolTable(0x00)),
    ...segment(0xc4, oneSymbolTable(0x10)),
    ...segment(0xda, [1, 1, 0x00, 0, 63, 0]),
    0x3f, // DC category 0 ("0"), end of block ("0"), padded with ones
    0xff,
    0xd9,
  ]);
}

const pdf = () =>
  new TextEncoder().encode(
    "%PDF-1.4\n1 0 obj <</Type /Catalog /Pages 2 0 R>> endobj\n2 0 obj <</Type /Pages /Kids [] /Count 0>> endobj\n" +
      "trailer <</Root 1 0 R>>\n%%EOF\n",
  );

const bytesOf = (...parts: (string | number[] | Uint8Array)[]) =>
  new Uint8Array(parts.flatMap((p) => typeof p === "string" ? [...new TextEncoder().encode(p)] : [...p]));
const le32 = (n: number) => [n & 0xff, (n >>> 8) & 0xff, (n >>> 16) & 0xff, n >>> 24];
const be32 = (n: number) => u32(n);

// The other allowed formats, as small as their magic numbers allow: a lossless 1×1 WEBP, a little-endian TIFF with
// one IFD entry, and the ISO-BMFF `ftyp` box that makes a file HEIC or HEIF.
const webp = () =>
  bytesOf("RIFF", le32(26), "WEBP", "VP8L", le32(14), [
    0x2f,
    0,
    0,
    0,
    0x10,
    7,
    0x10,
    0x11,
    0x11,
    0x88,
    0x88,
    0xfe,
    7,
    0,
  ]);
const tiff = () => bytesOf("II", [42, 0], le32(8), [1, 0], [0, 1, 3, 0], le32(1), [1, 0, 0, 0], le32(0));
const heic = () => bytesOf(be32(24), "ftyp", "heic", be32(0), "mif1", "heic");

/** A Windows executable: the MZ header pointing at its PE signature. */
function exe(): Uint8Array {
  const bytes = new Uint8Array(512);
  bytes.set([0x4d, 0x5a]);
  bytes.set(new TextEncoder().encode("PE\0\0"), 128);
  new DataView(bytes.buffer).setUint32(0x3c, 128, true);
  return bytes;
}

/** A Linux executable: the ELF header of a 64-bit little-endian x86-64 program. */
function elf(): Uint8Array {
  const bytes = new Uint8Array(128);
  bytes.set([0x7f, 0x45, 0x4c, 0x46, 2, 1, 1, 0]);
  bytes.set([2, 0, 0x3e, 0, 1, 0, 0, 0], 16);
  return bytes;
}

const b64 = (bytes: Uint8Array) => bytes.toBase64();

Deno.test("document upload", async (t) => {
  const ctx = await setup("documents");
  const company = await newCompany(ctx);
  const personId = await newPerson(company);
  const upload = (document: unknown, id = personId) => company.post(`/api/v1/subject/${id}/documents`, { document });
  const files = { png: await png(), jpeg: jpeg(), pdf: pdf() };

  await t.step("a PNG, a JPEG and a PDF are stored with their type, answering 201 and the document", async () => {
    const cases = [
      { bytes: files.png, type: "image/png", name: "selfie.png" },
      { bytes: files.jpeg, type: "image/jpeg", name: "rg.jpg" },
      { bytes: files.pdf, type: "application/pdf", name: "cpf.pdf" },
    ];
    for (const c of cases) {
      const res = await upload({
        labels: ["cpf-number"],
        file_type: c.type,
        file_name: c.name,
        file_data: b64(c.bytes),
      });
      assert.equal(res.status, 201, `${c.type}: ${JSON.stringify(res.body)}`);
      const doc = res.body.data;
      assert.deepEqual(
        Object.keys(doc).sort(),
        ["file_name", "file_type", "file_url", "id", "inserted_at", "labels", "size"],
      );
      assert.equal(doc.file_type, c.type);
      assert.equal(doc.file_name, c.name);
      assert.equal(doc.file_url, null);
      assert.equal(doc.size, c.bytes.length);
      assert.deepEqual(doc.labels, ["cpf-number"]);
      assert.match(doc.inserted_at, /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}$/);
      const [stored] = await ctx.sql`select bytes from document_blobs where document_id = ${doc.id}`;
      assert.deepEqual(new Uint8Array(stored.bytes), c.bytes);
    }
    const person = await company.get(`/api/v1/subject/people/${personId}`);
    assert.deepEqual(person.body.data.documents.map((d: { file_type: string }) => d.file_type), [
      "image/png",
      "image/jpeg",
      "application/pdf",
    ]);
  });

  await t.step("a file declared as another type is refused with 400 on file_type", async () => {
    for (
      const [bytes, declared] of [
        [files.png, "image/jpeg"],
        [files.jpeg, "application/pdf"],
        [files.pdf, "image/png"],
        [files.png, "text/plain"],
      ] as const
    ) {
      const res = await upload({
        labels: ["rg-photo"],
        file_type: declared,
        file_name: "x.bin",
        file_data: b64(bytes),
      });
      assert.equal(res.status, 400, declared);
      assert.deepEqual(res.body, { errors: { file_type: ["does not match content"] } });
    }
  });

  await t.step("WEBP, TIFF and HEIC photos are accepted like PNG and JPEG", async () => {
    for (
      const [bytes, type, name] of [
        [webp(), "image/webp", "selfie.webp"],
        [tiff(), "image/tiff", "scan.tif"],
        [heic(), "image/heic", "photo.heic"],
      ] as const
    ) {
      const res = await upload({ labels: ["rg-photo"], file_type: type, file_name: name, file_data: b64(bytes) });
      assert.equal(res.status, 201, `${type}: ${JSON.stringify(res.body)}`);
      assert.equal(res.body.data.file_type, type);
    }
  });

  await t.step("a type off the allowed list is a 422 on file_type, whatever the bytes", async () => {
    const allowed = "must be one of: application/pdf, image/jpeg, image/png, image/webp, image/heic, image/heif, " +
      "image/tiff, text/plain, text/csv";
    for (
      const document of [
        { file_type: "application/x-msdownload", file_name: "setup.exe", file_data: b64(exe()) },
        { file_type: "application/x-elf", file_name: "run.bin", file_data: b64(elf()) },
        { file_type: "image/gif", file_name: "a.gif", file_data: b64(bytesOf("GIF89a", [1, 0, 1, 0, 0, 0, 0, 0x3b])) },
        { file_type: "text/html", file_name: "a.html", file_data: b64(bytesOf("<script>alert(1)</script>")) },
        { file_type: "application/x-msdownload", file_url: "https://files.example.com/setup.exe" },
      ]
    ) {
      const res = await upload({ labels: ["rg-photo"], ...document });
      assert.equal(res.status, 422, `${document.file_type}: ${JSON.stringify(res.body)}`);
      assert.deepEqual(res.body, { errors: { file_type: [allowed] } });
    }
  });

  await t.step("an executable declared as a PDF is refused, even behind a PDF header", async () => {
    for (
      const bytes of [
        exe(),
        elf(),
        bytesOf("%PDF-1.4\n", exe()),
        bytesOf("%PDF-1.7\n%%EOF\n", exe()), // an end marker, but the file goes on
        bytesOf(files.pdf, [0x50, 0x4b, 5, 6], new Uint8Array(18)), // a ZIP directory after the PDF's end
      ]
    ) {
      const res = await upload({
        labels: ["address-proof"],
        file_type: "application/pdf",
        file_name: "invoice.pdf",
        file_data: b64(bytes),
      });
      assert.equal(res.status, 400, JSON.stringify(res.body));
      assert.deepEqual(res.body, { errors: { file_type: ["does not match content"] } });
    }
  });

  await t.step("a file name with control or bidi characters is a 422 on file_name", async () => {
    const message = "must not contain control or bidirectional formatting characters";
    for (
      const name of ["invoice\u202efdp.exe", "invoice\u202e.pdf", "a\r\nb.pdf", "bell\u0007.pdf", "\u2066x\u2069.pdf"]
    ) {
      const res = await upload({
        labels: ["address-proof"],
        file_type: "application/pdf",
        file_name: name,
        file_data: b64(files.pdf),
      });
      assert.equal(res.status, 422, JSON.stringify(name));
      assert.deepEqual(res.body, { errors: { file_name: [message] } });
    }
    // by URL too, and inside a person's documents
    const byUrl = await upload({
      labels: ["address-proof"],
      file_type: "application/pdf",
      file_name: "proof\u202e.pdf",
      file_url: "https://files.example.com/p.pdf",
    });
    assert.deepEqual(byUrl.body, { errors: { file_name: [message] } });
    const registered = await company.post("/api/v1/subject/people", {
      person: {
        document_number: "11144477735",
        document_type: "cpf",
        social_name: "Ana Souza",
        fiscal_country: "BRA",
        documents: [{
          labels: ["cpf-number"],
          file_type: "image/png",
          file_name: "a\nb.png",
          file_data: b64(files.png),
        }],
      },
    });
    assert.equal(registered.status, 422, JSON.stringify(registered.body));
    assert.deepEqual(registered.body, { errors: { documents: { 0: { file_name: [message] } } } });
    // letters of any script, accents and emoji are names like any other
    const fine = await upload({
      labels: ["address-proof"],
      file_type: "application/pdf",
      file_name: "Declaração de renda — São Paulo 🧾.pdf",
      file_data: b64(files.pdf),
    });
    assert.equal(fine.status, 201, JSON.stringify(fine.body));
    assert.equal(fine.body.data.file_name, "Declaração de renda — São Paulo 🧾.pdf");
  });

  await t.step("with an upload failure beside it, a refused name is listed in the 400", async () => {
    const res = await upload({
      labels: ["address-proof"],
      file_type: "application/pdf",
      file_name: "a\u202e.pdf",
      file_data: "@@@@",
    });
    assert.equal(res.status, 400);
    assert.deepEqual(Object.keys(res.body.errors).sort(), ["file_data", "file_name"]);
  });

  await t.step("plain text is accepted as text/plain, but not with NUL bytes in it", async () => {
    const text = new TextEncoder().encode("Declaração de renda 2026\n");
    const ok = await upload({ labels: ["note"], file_type: "text/plain", file_name: "n.txt", file_data: b64(text) });
    assert.equal(ok.status, 201);
    const binary = new Uint8Array([0x41, 0x00, 0x42]);
    const bad = await upload({ labels: ["note"], file_type: "text/plain", file_name: "n.txt", file_data: b64(binary) });
    assert.equal(bad.status, 400);
    assert.ok(bad.body.errors.file_type);
  });

  await t.step("Base64 garbage is a 400 on file_data", async () => {
    for (const data of ["%%% not base64 %%%", "@@@@"]) {
      const res = await upload({ labels: ["rg-photo"], file_type: "image/png", file_name: "a.png", file_data: data });
      assert.equal(res.status, 400);
      assert.ok(Array.isArray(res.body.errors.file_data), JSON.stringify(res.body));
    }
  });

  await t.step("file_name is required with file_data and must carry an extension", async () => {
    const data = b64(files.png);
    const missing = await upload({ labels: ["rg-photo"], file_type: "image/png", file_data: data });
    assert.equal(missing.status, 400);
    assert.deepEqual(missing.body.errors.file_name, ["can't be blank"]);
    for (const name of ["selfie", "selfie.", ".png"]) {
      const res = await upload({ labels: ["rg-photo"], file_type: "image/png", file_name: name, file_data: data });
      assert.equal(res.status, 400, name);
      assert.ok(res.body.errors.file_name, name);
    }
  });

  await t.step("a document by URL is stored as a reference; other schemes are refused", async () => {
    const res = await upload({
      labels: ["address-proof"],
      file_type: "application/pdf",
      file_url: "https://files.example.com/p.pdf",
    });
    assert.equal(res.status, 201);
    assert.equal(res.body.data.file_url, "https://files.example.com/p.pdf");
    assert.equal(res.body.data.size, null);
    const ftp = await upload({ labels: ["address-proof"], file_type: "application/pdf", file_url: "ftp://x/p.pdf" });
    assert.equal(ftp.status, 400);
    assert.ok(ftp.body.errors.file_url);
    const neither = await upload({ labels: ["address-proof"], file_type: "application/pdf" });
    assert.equal(neither.status, 400);
    assert.deepEqual(neither.body.errors, { file_data: ["can't be blank"], file_url: ["can't be blank"] });
  });

  await t.step("labels and file_type are required", async () => {
    const res = await upload({ file_name: "a.png", file_data: b64(files.png) });
    assert.equal(res.status, 400);
    assert.deepEqual(res.body.errors.labels, ["can't be blank"]);
    assert.deepEqual(res.body.errors.file_type, ["can't be blank"]);
  });

  await t.step(
    "missing labels do not hide a bad file name, Base64 garbage or a file_type of the wrong type",
    async () => {
      const res = await upload({ file_type: "image/png", file_name: "selfie", file_data: "@@@@" });
      assert.equal(res.status, 400, JSON.stringify(res.body));
      assert.deepEqual(res.body.errors, {
        labels: ["can't be blank"],
        file_name: ["must include a file extension"],
        file_data: ["is not valid Base64"],
      });
      const wrongType = await upload({
        labels: ["rg-photo"],
        file_type: 5,
        file_name: "selfie",
        file_data: b64(files.png),
      });
      assert.equal(wrongType.status, 400, JSON.stringify(wrongType.body));
      assert.deepEqual(wrongType.body.errors, {
        file_type: ["is invalid: must be a string"],
        file_name: ["must include a file extension"],
      });
    },
  );

  await t.step("a file over 15 MB is a 413; a body over 22 MB is refused before it is read", async () => {
    const big = new Uint8Array(15 * 1024 * 1024 + 1);
    big.set(files.pdf);
    const res = await upload({
      labels: ["rg-photo"],
      file_type: "application/pdf",
      file_name: "big.pdf",
      file_data: b64(big),
    });
    assert.equal(res.status, 413);
    assert.ok(res.body.errors.file_data);

    const huge = JSON.stringify({
      document: { labels: ["x"], file_type: "text/plain", file_name: "a.txt", file_data: "A".repeat(23 * 1024 * 1024) },
    });
    const tooBig = await company.post(`/api/v1/subject/${personId}/documents`, huge);
    assert.equal(tooBig.status, 413);
    assert.deepEqual(tooBig.body, { errors: { detail: "Payload Too Large: a body of this route is at most 22 MB" } });
  });

  await t.step("malformed bodies are 4xx, never 5xx", async () => {
    const path = `/api/v1/subject/${personId}/documents`;
    const badJson = await company.post(path, "{not json");
    assert.equal(badJson.status, 400);
    assert.ok(typeof badJson.body.errors.detail === "string");
    for (const body of [{}, { document: "x" }, { document: null }, []]) {
      const res = await company.post(path, body);
      assert.equal(res.status, 400, JSON.stringify(body));
      assert.ok(typeof res.body.errors.detail === "string");
    }
    for (
      const document of [{ labels: "rg-photo", file_type: "image/png", file_url: "https://x.io/a" }, {
        labels: [1],
        file_type: 5,
      }]
    ) {
      const res = await upload(document);
      assert.ok(res.status >= 400 && res.status < 500, JSON.stringify(res.body));
    }
  });

  await t.step("an unknown, foreign or malformed subject id answers 404 or 400", async () => {
    const doc = { labels: ["rg-photo"], file_type: "image/png", file_name: "a.png", file_data: b64(files.png) };
    const unknown = await upload(doc, crypto.randomUUID());
    assert.equal(unknown.status, 404);
    assert.deepEqual(unknown.body, { errors: { detail: "Not Found" } });
    const other = await newCompany(ctx);
    const foreign = await other.post(`/api/v1/subject/${personId}/documents`, { document: doc });
    assert.equal(foreign.status, 404);
    const malformed = await upload(doc, "not-a-uuid");
    assert.equal(malformed.status, 400);
    assert.deepEqual(malformed.body, { errors: { id: ["is invalid"] } });
  });

  await t.step("the upload completing the mandatory set of a reproved person sends it to review", async () => {
    const id = await newPerson(company, "12345678909");
    await ctx.sql`update people set status = 'reproved' where id = ${id}`;
    const send = (label: string) =>
      upload(
        { labels: [label], file_type: "application/pdf", file_name: `${label}.pdf`, file_data: b64(files.pdf) },
        id,
      );
    const status = async () => (await company.get(`/api/v1/subject/people/${id}`)).body.data.status;

    assert.equal((await send("rg-photo")).status, 201);
    assert.equal(await status(), "reproved");
    assert.equal((await send("address-proof")).status, 201);
    assert.equal(await status(), "reproved");
    assert.equal((await send("revenue-tax-declaration")).status, 201);
    assert.equal(await status(), "waiting_approval");
  });

  await t.step(
    "two uploads that complete the set together, at the same time, still send the person to review",
    async () => {
      const id = await newPerson(company, "98765432100");
      await ctx.sql`update people set status = 'reproved' where id = ${id}`;
      const send = (label: string) =>
        upload({ labels: [label], file_type: "application/pdf", file_name: "d.pdf", file_data: b64(files.pdf) }, id);
      assert.equal((await send("cpf-number")).status, 201);
      const both = await Promise.all([send("address-proof"), send("revenue-tax-declaration")]);
      assert.deepEqual(both.map((r) => r.status), [201, 201]);
      assert.equal((await company.get(`/api/v1/subject/people/${id}`)).body.data.status, "waiting_approval");
    },
  );

  await t.step("an approved person stays approved whatever is uploaded", async () => {
    const id = await newPerson(company, "00000000191");
    for (const label of ["rg-photo", "address-proof", "revenue-tax-declaration"]) {
      await upload(
        { labels: [label], file_type: "application/pdf", file_name: "d.pdf", file_data: b64(files.pdf) },
        id,
      );
    }
    assert.equal((await company.get(`/api/v1/subject/people/${id}`)).body.data.status, "approved");
  });

  await ctx.close();
});

Deno.test("documents read back: list, metadata, the bytes as uploaded; another company's ids are not found", async (t) => {
  const ctx = await setup("documents_read_back");
  try {
    const company = await newCompany(ctx);
    const other = await newCompany(ctx);
    const person = await newPerson(company);
    const bytes = await png();
    const stored = await company.post(`/api/v1/subject/${person}/documents`, {
      document: { labels: ["rg-photo"], file_type: "image/png", file_name: "Foto do RG.png", file_data: b64(bytes) },
    });
    assert.equal(stored.status, 201, JSON.stringify(stored.body));
    const byUrl = await company.post(`/api/v1/subject/${person}/documents`, {
      document: {
        labels: ["proof_of_address"],
        file_type: "application/pdf",
        file_url: "https://files.example.com/a.pdf",
      },
    });
    assert.equal(byUrl.status, 201, JSON.stringify(byUrl.body));
    const base = `/api/v1/subject/${person}/documents`;

    await t.step("the list shows both, oldest first, as the upload answered them", async () => {
      const res = await company.get(base);
      assert.equal(res.status, 200);
      assert.deepEqual(res.body.data, [stored.body.data, byUrl.body.data]);
    });

    await t.step("one document's metadata", async () => {
      const res = await company.get(`${base}/${stored.body.data.id}`);
      assert.deepEqual(res.body.data, stored.body.data);
    });

    await t.step("the file: the same bytes, its type, a download that is never sniffed", async () => {
      const res = await ctx.app.request(`${base}/${stored.body.data.id}/file`, {
        headers: { authorization: `Bearer ${company.token}` },
      });
      assert.equal(res.status, 200);
      assert.equal(res.headers.get("content-type"), "image/png");
      assert.equal(res.headers.get("x-content-type-options"), "nosniff");
      assert.equal(res.headers.get("content-disposition"), 'attachment; filename="Foto do RG.png"');
      assert.deepEqual(new Uint8Array(await res.arrayBuffer()), bytes);
    });

    await t.step("a document given by URL has no bytes here: 404 naming file_url", async () => {
      const res = await company.get(`${base}/${byUrl.body.data.id}/file`);
      assert.equal(res.status, 404);
      assert.match(res.body.errors.detail, /file_url/);
    });

    await t.step("another company: 404 for the subject, the document and the file", async () => {
      for (const path of [base, `${base}/${stored.body.data.id}`, `${base}/${stored.body.data.id}/file`]) {
        assert.equal((await other.get(path)).status, 404, path);
      }
      const mine = await newPerson(company, "11144477735");
      assert.equal((await company.get(`/api/v1/subject/${mine}/documents/${stored.body.data.id}`)).status, 404);
    });
  } finally {
    await ctx.close();
  }
});
