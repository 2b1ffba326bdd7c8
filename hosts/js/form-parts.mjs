// `multipart/form-data` decoded by the runtime's own parser (the Fetch API's
// `formData()`, in Node.js and in workerd alike) into the WIT's `form-part`s: what the
// Rust host does before the engine sees a form. Shared by hosts/js and hosts/workers.
// Every part travels whole (`staged` none): these hosts stage no file outside the
// instance, so `files.keep` never has a part to store.

/** The parts of a `multipart/form-data` body as the WIT's `form-part`s. */
export async function formParts(contentType, body) {
  const form = await new Response(body, { headers: { 'content-type': contentType } }).formData();
  const parts = [];
  for (const [name, value] of form.entries()) {
    if (typeof value === 'string') {
      parts.push({ name, filename: undefined, contentType: '', data: new TextEncoder().encode(value), staged: undefined });
    } else {
      const type = value.type.split(';')[0].trim().toLowerCase();
      parts.push({ name, filename: value.name, contentType: type, data: new Uint8Array(await value.arrayBuffer()), staged: undefined });
    }
  }
  return parts;
}

