/**
 * A reader of `text/event-stream` (Server-Sent Events) for `deno task listen`: the fields of each event, one event at a
 * time, as the body arrives. Its own file because the command reads a fetch body, not an EventSource (which would not
 * send the bearer token), and the format's line rules (CRLF, CR or LF; comments; multi-line data) are their own.
 */

export type ServerEvent = { event: string; data: string; id?: string };

/**
 * The events of `body`, each as soon as its blank line arrives; comments (`: ping`) are not events but still call
 * `onActivity`, so a caller can tell an idle connection from a dead one. Ends when the body does.
 */
export async function* serverEvents(
  body: ReadableStream<Uint8Array>,
  onActivity: () => void = () => {},
): AsyncGenerator<ServerEvent> {
  let buffer = "";
  let event = "";
  let data: string[] = [];
  let id: string | undefined;
  let pendingCr = false;
  const decoder = new TextDecoder();
  for await (const bytes of body) {
    onActivity();
    buffer += decoder.decode(bytes, { stream: true });
    // a CR at the end of a chunk may be the first half of a CRLF: the LF that follows is not another line
    if (pendingCr && buffer.startsWith("\n")) buffer = buffer.slice(1);
    pendingCr = false;
    for (;;) {
      const end = buffer.search(/\r\n|\r|\n/);
      if (end < 0) break;
      if (buffer[end] === "\r" && end === buffer.length - 1) pendingCr = true;
      const line = buffer.slice(0, end);
      buffer = buffer.slice(end + (buffer.startsWith("\r\n", end) ? 2 : 1));
      if (line === "") {
        if (data.length || event) yield { event: event || "message", data: data.join("\n"), id };
        event = "";
        data = [];
        id = undefined;
        continue;
      }
      if (line.startsWith(":")) continue;
      const colon = line.indexOf(":");
      const field = colon < 0 ? line : line.slice(0, colon);
      let value = colon < 0 ? "" : line.slice(colon + 1);
      if (value.startsWith(" ")) value = value.slice(1);
      if (field === "event") event = value;
      else if (field === "data") data.push(value);
      else if (field === "id" && !value.includes("\0")) id = value;
    }
  }
}
